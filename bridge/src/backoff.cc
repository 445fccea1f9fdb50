#include "kubestat/bridge/backoff.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>

namespace kubestat::bridge {

RandomSource MakeRandomSource() {
  struct State {
    std::mutex mu;
    std::mt19937_64 engine{std::random_device{}()};
    std::uniform_real_distribution<double> uniform{0.0, 1.0};
  };
  auto state = std::make_shared<State>();
  return [state] {
    std::lock_guard<std::mutex> lock(state->mu);
    return state->uniform(state->engine);
  };
}

Duration FullJitterDelay(uint32_t attempt, Duration base, Duration max, double random) {
  attempt = std::max<uint32_t>(attempt, 1);
  // Doubling stops at max; 62 doublings would overflow any base of a nanosecond or more.
  Duration ceiling = base;
  for (uint32_t i = 1; i < attempt && ceiling < max; ++i) {
    ceiling = ceiling > max / 2 ? max : ceiling * 2;
  }
  ceiling = std::min(ceiling, max);
  random = std::clamp(random, 0.0, 1.0);
  return std::chrono::duration_cast<Duration>(
      std::chrono::duration<double, std::nano>(static_cast<double>(ceiling.count()) * random));
}

bool WaitUntil(const Clock& clock, Timestamp deadline, const std::stop_token& stop) {
  // The clock may be a FakeClock that only a test moves, so it is re-read every 10 ms
  // rather than trusted to tell real time.
  constexpr Duration kRecheck = std::chrono::milliseconds(10);
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock<std::mutex> lock(mu);
  while (!stop.stop_requested()) {
    const Timestamp now = clock.MonotonicNow();
    if (now >= deadline) return true;
    cv.wait_for(lock, stop, std::min<Duration>(deadline - now, kRecheck), [] { return false; });
  }
  return false;
}

}  // namespace kubestat::bridge
