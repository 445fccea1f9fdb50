// The C library allocator's own figures for the whole process, so a server's memory can be
// told apart: what its data structures hold against what the allocator keeps free for later
// (fragmentation, arenas of idle threads).
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

}  // namespace kubestat

#endif  // KUBESTAT_CORE_HEAP_H_
