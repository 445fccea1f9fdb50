// What a benchmark reads of its own process: CPU time, a monotonic wall clock, resident
// memory. Linux only (/proc/self/status).
#ifndef KUBESTAT_BENCH_PROCESS_FIGURES_H_
#define KUBESTAT_BENCH_PROCESS_FIGURES_H_

#include <time.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>

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

// Resident set size, KiB (VmRSS); 0 when unreadable.
inline long RssKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

}  // namespace kubestat::bench

#endif  // KUBESTAT_BENCH_PROCESS_FIGURES_H_
