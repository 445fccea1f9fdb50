#include "kubestat/testing/poll.h"

#include <thread>

namespace kubestat::testing {

bool PollUntil(const std::function<bool()>& done, std::chrono::milliseconds deadline,
               std::chrono::milliseconds period) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(period);
  }
  return true;
}

}  // namespace kubestat::testing
