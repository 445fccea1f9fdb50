// Retry pacing of the bridge: exponential backoff with full jitter, and waits on the
// injected clock that Stop interrupts.
//
// FullJitterDelay(attempt) is a uniform draw from [0, min(max, base * 2^(attempt-1))]
// (AWS's "full jitter"): the ceiling doubles with each consecutive failure from `base` up to
// `max`, and the draw spreads retries of many clients over the whole interval. The draw
// comes from a RandomSource, so tests fix it.
//
// WaitUntil waits for the injected Clock's MonotonicNow to reach a deadline. It reads the
// clock at least every 10 ms of real time, so a FakeClock moved past the deadline ends the
// wait within that, and a stop request ends it at once.
//
// Thread-safety: the functions are thread-safe; a RandomSource from MakeRandomSource() is
// thread-safe.
#ifndef KUBESTAT_BRIDGE_BACKOFF_H_
#define KUBESTAT_BRIDGE_BACKOFF_H_

#include <cstdint>
#include <functional>
#include <stop_token>

#include "kubestat/core/clock.h"

namespace kubestat::bridge {

// Returns a number in [0, 1). Called from several threads at once: must be thread-safe.
using RandomSource = std::function<double()>;

// A thread-safe RandomSource seeded from std::random_device.
RandomSource MakeRandomSource();

// The delay before retry number `attempt` (1 after the first failure): uniform in
// [0, min(max, base * 2^(attempt-1))], drawn as ceiling * random() (a random() outside
// [0, 1) is clamped into it). attempt 0 is treated as 1; base and max must be positive
// with base <= max.
Duration FullJitterDelay(uint32_t attempt, Duration base, Duration max, double random);

// Waits until clock.MonotonicNow() >= deadline. True when the deadline was reached, false
// when `stop` was requested first (also when it already was).
bool WaitUntil(const Clock& clock, Timestamp deadline, const std::stop_token& stop);

}  // namespace kubestat::bridge

#endif  // KUBESTAT_BRIDGE_BACKOFF_H_
