#include "kubestat/testing/allocation_counter.h"

#include <cstdlib>
#include <new>

// The replacement operator new/delete pair malloc with free, which GCC cannot tell apart from
// a mismatched pair once they are inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace {

thread_local bool g_counting = false;
thread_local int g_allocations = 0;

void* CountedAlloc(std::size_t size) noexcept {
  if (g_counting) ++g_allocations;
  return std::malloc(size == 0 ? 1 : size);
}

void* CountedAllocOrThrow(std::size_t size) {
  if (void* p = CountedAlloc(size)) return p;
  throw std::bad_alloc();
}

}  // namespace

namespace kubestat::testing {

CountedAllocations::CountedAllocations() {
  g_allocations = 0;
  g_counting = true;
}

CountedAllocations::~CountedAllocations() { g_counting = false; }

int CountedAllocations::count() const { return g_allocations; }

}  // namespace kubestat::testing

// Every replaceable non-aligned form is replaced, so that allocation and release always pair
// malloc with free.
void* operator new(std::size_t size) { return CountedAllocOrThrow(size); }
void* operator new[](std::size_t size) { return CountedAllocOrThrow(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return CountedAlloc(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return CountedAlloc(size);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
