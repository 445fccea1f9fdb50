// Time as an injected dependency.
//
// Everything that needs "now" takes a Clock&, so tests use FakeClock and never sleep to
// wait for time to pass. Times are std::chrono::system_clock time points (wall time, as
// the kubelet and the Kubernetes API report them) at nanosecond resolution.
#ifndef KUBESTAT_CORE_CLOCK_H_
#define KUBESTAT_CORE_CLOCK_H_

#include <chrono>
#include <cstdint>
#include <mutex>

namespace kubestat {

using Timestamp = std::chrono::time_point<std::chrono::system_clock, std::chrono::nanoseconds>;
using Duration = std::chrono::nanoseconds;

// A time as nanoseconds since the epoch, the form windows, rings and store keys compute with,
// and back.
inline int64_t Nanos(Timestamp t) { return t.time_since_epoch().count(); }
inline Timestamp AtNanos(int64_t ns) { return Timestamp(Duration(ns)); }

// floor(t / width) for every t, before the epoch too (width > 0): the index of the
// partition of `width` nanoseconds that holds t. Buckets of a window and hours of the store
// are counted this way.
inline int64_t PartitionOf(int64_t t, int64_t width) {
  return t >= 0 ? t / width : -((-(t + 1)) / width) - 1;
}
inline constexpr int64_t kNanosPerHour = int64_t{3600} * 1000 * 1000 * 1000;
// PartitionOf(t, 1h): the hour since the epoch that holds t.
inline int64_t HourOf(int64_t t) { return PartitionOf(t, kNanosPerHour); }

// Thread-safe in every implementation.
class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time.
  virtual Timestamp Now() const = 0;
  // A monotonic reading for measuring durations (never goes backwards).
  virtual Timestamp MonotonicNow() const = 0;
};

// The process's real clock. Stateless; RealClock::Get() is a shared instance.
class RealClock final : public Clock {
 public:
  static RealClock& Get();
  Timestamp Now() const override;
  Timestamp MonotonicNow() const override;
};

// A clock that moves only when told. Starts at `start` (default: 2026-11-21T10:00:00Z).
class FakeClock final : public Clock {
 public:
  FakeClock();
  explicit FakeClock(Timestamp start);
  Timestamp Now() const override;
  Timestamp MonotonicNow() const override;
  void Advance(Duration d);
  void Set(Timestamp t);

 private:
  mutable std::mutex mu_;
  Timestamp now_;
  Timestamp monotonic_;
};

// The CPU time the calling thread has used so far (CLOCK_THREAD_CPUTIME_ID). For what a piece of
// work costs in CPU, as opposed to how long it took while other threads held the cores.
Duration ThreadCpuTime();

}  // namespace kubestat

#endif  // KUBESTAT_CORE_CLOCK_H_
