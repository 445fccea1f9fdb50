#include "kubestat/core/heap.h"

#include <malloc.h>

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

}  // namespace kubestat
