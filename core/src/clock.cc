#include "kubestat/core/clock.h"

#include <time.h>

namespace kubestat {
namespace {

// 2026-11-21T10:00:00Z: a fixed, readable start for fake time.
constexpr std::chrono::seconds kFakeStart{1795255200};

}  // namespace

RealClock& RealClock::Get() {
  static RealClock clock;
  return clock;
}

Timestamp RealClock::Now() const {
  return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
}

Timestamp RealClock::MonotonicNow() const {
  // steady_clock has no relation to the epoch; only differences of readings mean anything.
  return Timestamp(
      std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now().time_since_epoch()));
}

FakeClock::FakeClock() : FakeClock(Timestamp(kFakeStart)) {}

FakeClock::FakeClock(Timestamp start) : now_(start), monotonic_(start) {}

Timestamp FakeClock::Now() const {
  std::lock_guard lock(mu_);
  return now_;
}

Timestamp FakeClock::MonotonicNow() const {
  std::lock_guard lock(mu_);
  return monotonic_;
}

void FakeClock::Advance(Duration d) {
  std::lock_guard lock(mu_);
  now_ += d;
  if (d > Duration::zero()) monotonic_ += d;
}

void FakeClock::Set(Timestamp t) {
  std::lock_guard lock(mu_);
  if (t > now_) monotonic_ += t - now_;
  now_ = t;
}

Duration ThreadCpuTime() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return Duration::zero();
  return std::chrono::duration_cast<Duration>(std::chrono::seconds(ts.tv_sec) +
                                              std::chrono::nanoseconds(ts.tv_nsec));
}

}  // namespace kubestat
