// What a benchmark reads of its own process: CPU time, a monotonic wall clock, resident
// memory. Linux only (/proc/self/statm).
#ifndef KUBESTAT_BENCH_PROCESS_FIGURES_H_
#define KUBESTAT_BENCH_PROCESS_FIGURES_H_

#include <time.h>

#include <chrono>

#include "kubestat/core/heap.h"

namespace kubestat::bench {

// CPU seconds of every thread of the process so far.
inline double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// CPU seconds of the calling thread so far.
inline double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Seconds on a monotonic clock (differences only).
inline double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Resident set size, KiB (as VmRSS); 0 when unreadable.
inline long RssKiB() { return static_cast<long>(ReadResidentBytes().value_or(0) / 1024); }

}  // namespace kubestat::bench

#endif  // KUBESTAT_BENCH_PROCESS_FIGURES_H_
