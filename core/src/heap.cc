#include "kubestat/core/heap.h"

#include <malloc.h>
#include <unistd.h>

#include <fstream>

namespace kubestat {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerAllocator = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizerAllocator = true;
#else
constexpr bool kSanitizerAllocator = false;
#endif
#else
constexpr bool kSanitizerAllocator = false;
#endif

}  // namespace

std::optional<HeapFigures> ReadHeapFigures() {
  if (kSanitizerAllocator) return std::nullopt;
  const struct mallinfo2 info = mallinfo2();
  HeapFigures figures;
  // uordblks: in use in the arenas; hblkhd: large blocks mapped on their own (in use while
  // mapped). fordblks: free in the arenas.
  figures.in_use = info.uordblks + info.hblkhd;
  figures.free = info.fordblks;
  return figures;
}

std::optional<uint64_t> ReadResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size_pages = 0;
  uint64_t resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return std::nullopt;
  const long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) return std::nullopt;
  return resident_pages * static_cast<uint64_t>(page);
}

std::optional<uint64_t> ReleaseFreeHeap() {
  if (kSanitizerAllocator) return std::nullopt;
  const std::optional<uint64_t> before = ReadResidentBytes();
  malloc_trim(0);
  const std::optional<uint64_t> after = ReadResidentBytes();
  if (!before || !after || *after >= *before) return 0;
  return *before - *after;
}

}  // namespace kubestat
