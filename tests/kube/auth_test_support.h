// Test support for the authentication and authorization tests: a review transport that
// records what it was sent and answers from a script, and a reader of counter values.
#ifndef KUBESTAT_TESTS_KUBE_AUTH_TEST_SUPPORT_H_
#define KUBESTAT_TESTS_KUBE_AUTH_TEST_SUPPORT_H_

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/kube/review_transport.h"

namespace kubestat::kube::testing {

class FakeReviewTransport final : public KubeReviewTransport {
 public:
  struct Call {
    std::string path;
    std::string body;
  };
  using Responder =
      std::function<absl::StatusOr<std::string>(std::string_view path, const std::string& body)>;

  // Answers the next call with `response` (queued answers are used before the responder).
  void Push(absl::StatusOr<std::string> response) {
    std::lock_guard<std::mutex> lock(mu_);
    queued_.push_back(std::move(response));
  }
  // Answers calls when nothing is queued.
  void SetResponder(Responder responder) {
    std::lock_guard<std::mutex> lock(mu_);
    responder_ = std::move(responder);
  }

  absl::StatusOr<std::string> Create(std::string_view path, std::string body) override {
    Responder responder;
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back(Call{std::string(path), body});
      if (!queued_.empty()) {
        absl::StatusOr<std::string> response = std::move(queued_.front());
        queued_.pop_front();
        return response;
      }
      responder = responder_;
    }
    if (responder) return responder(path, body);
    ADD_FAILURE() << "unexpected review request to " << path;
    return absl::InternalError("no response scripted");
  }

  std::vector<Call> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  size_t call_count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_.size();
  }

 private:
  mutable std::mutex mu_;
  std::deque<absl::StatusOr<std::string>> queued_;
  Responder responder_;
  std::vector<Call> calls_;
};

// The value of the counter `name` with exactly `labels`; -1 when there is none.
inline double CounterValue(prometheus::Registry& registry, std::string_view name,
                           const std::map<std::string, std::string>& labels) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      std::map<std::string, std::string> got;
      for (const prometheus::ClientMetric::Label& label : metric.label) {
        got[label.name] = label.value;
      }
      if (got == labels) return metric.counter.value;
    }
  }
  return -1;
}

}  // namespace kubestat::kube::testing

#endif  // KUBESTAT_TESTS_KUBE_AUTH_TEST_SUPPORT_H_
