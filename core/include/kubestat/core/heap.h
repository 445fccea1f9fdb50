// The C library allocator's own figures for the whole process, so a server's memory can be
// told apart: what its data structures hold against what the allocator keeps free for later
// (fragmentation, arenas of idle threads); and the release of those free pages.
#ifndef KUBESTAT_CORE_HEAP_H_
#define KUBESTAT_CORE_HEAP_H_

#include <cstdint>
#include <optional>

namespace kubestat {

struct HeapFigures {
  uint64_t in_use = 0;  // bytes of blocks allocated and not yet freed
  uint64_t free = 0;    // bytes the allocator holds from the system but does not hand out
};

// Reads them now (every arena; glibc's mallinfo2). It takes each arena's lock in turn, so
// call it now and then (once a minute), not per request. nullopt in a build whose sanitizer
// replaces the C library's allocator (its figures would describe an unused heap).
std::optional<HeapFigures> ReadHeapFigures();

// The process's resident set size now (/proc/self/statm), or nullopt where it cannot be read.
std::optional<uint64_t> ReadResidentBytes();

// Hands the pages the allocator holds free back to the system: glibc's malloc_trim(0),
// which releases the whole free pages inside every arena, not only an arena's top. After a
// peak (a round whose views are all replaced at once, the first rounds after a restart) the
// resident set then follows what is in use instead of keeping the peak. Takes each arena's
// lock while it walks that arena's free blocks: call it now and then (once a minute). A page
// given back costs a fault when it is used again. Returns the resident bytes it gave back
// (0 when it gave none back, or the resident set could not be read); nullopt in a build whose
// sanitizer replaces the C library's allocator.
std::optional<uint64_t> ReleaseFreeHeap();

}  // namespace kubestat

#endif  // KUBESTAT_CORE_HEAP_H_
