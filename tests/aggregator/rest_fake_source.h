// A MetricsSource with fixed windows for the REST tests, and a REST server over it on a
// loopback port.
#ifndef KUBESTAT_TESTS_AGGREGATOR_REST_FAKE_SOURCE_H_
#define KUBESTAT_TESTS_AGGREGATOR_REST_FAKE_SOURCE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kubestat/aggregator/metrics_source.h"
#include "kubestat/core/clock.h"
#include "support/metrics_objects.h"

namespace kubestat::aggregator::rest_testing {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

using kubestat::testing::EndTime;
using kubestat::testing::Node;
using kubestat::testing::Pod;
using kubestat::testing::Series;
using kubestat::testing::Usage;
using kubestat::testing::Window;

class FakeMetricsSource final : public MetricsSource {
 public:
  bool Ready() const override { return ready.load(); }
  std::vector<NodeView> ListNodes() const override {
    if (throw_on_read.load()) throw std::runtime_error("store read failed");
    return nodes;
  }
  std::optional<NodeView> GetNode(std::string_view name) const override {
    if (throw_on_read.load()) throw std::runtime_error("store read failed");
    for (const NodeView& node : nodes) {
      if (node.name == name) return node;
    }
    return std::nullopt;
  }
  std::vector<PodView> ListPods(std::string_view namespace_name) const override {
    if (throw_on_read.load()) throw std::runtime_error("store read failed");
    std::vector<PodView> out;
    for (const PodView& pod : pods) {
      if (namespace_name.empty() || pod.namespace_name == namespace_name) out.push_back(pod);
    }
    return out;
  }
  std::optional<PodView> GetPod(std::string_view namespace_name,
                                std::string_view name) const override {
    if (throw_on_read.load()) throw std::runtime_error("store read failed");
    for (const PodView& pod : pods) {
      if (pod.namespace_name == namespace_name && pod.name == name) return pod;
    }
    return std::nullopt;
  }

  std::atomic<bool> ready{true};
  std::atomic<bool> throw_on_read{false};
  // Sorted as the MetricsSource contract says; set before serving.
  std::vector<NodeView> nodes;
  std::vector<PodView> pods;
};

// The cluster every REST test serves (testing::MakeStandardCluster).
inline void FillStandardCluster(FakeMetricsSource& source) {
  testing::StandardCluster cluster = testing::MakeStandardCluster();
  source.nodes = std::move(cluster.nodes);
  source.pods = std::move(cluster.pods);
}

}  // namespace kubestat::aggregator::rest_testing

#endif  // KUBESTAT_TESTS_AGGREGATOR_REST_FAKE_SOURCE_H_
