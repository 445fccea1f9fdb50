// Waiting for a condition that another thread or process makes true, with a deadline.
//
// For readiness of real threads, sockets and child processes only: a test whose outcome
// depends on time passing drives a FakeClock instead of waiting.
#ifndef KUBESTAT_TESTING_POLL_H_
#define KUBESTAT_TESTING_POLL_H_

#include <chrono>
#include <functional>

namespace kubestat::testing {

// Calls `done` until it returns true, sleeping `period` between calls, for at most
// `deadline` from now on the steady clock. Returns whether `done` held; `done` is called
// once more after the deadline has passed before giving up. `done` runs on the calling
// thread.
bool PollUntil(const std::function<bool()>& done, std::chrono::milliseconds deadline,
               std::chrono::milliseconds period = std::chrono::milliseconds(20));

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTING_POLL_H_
