// Names for the process's own threads, as `top -H`, `ps -L`, perf and /proc/PID/task/*/comm
// show them, so an operator can tell which part of a server uses the CPU.
#ifndef KUBESTAT_CORE_THREAD_H_
#define KUBESTAT_CORE_THREAD_H_

#include <string>
#include <string_view>

namespace kubestat {

// Names the calling thread: the first 15 bytes of `name` (the kernel's limit). Best effort:
// a failure changes nothing else.
void NameThisThread(std::string_view name);

// The calling thread's name ("" when it cannot be read).
std::string CurrentThreadName();

}  // namespace kubestat

#endif  // KUBESTAT_CORE_THREAD_H_
