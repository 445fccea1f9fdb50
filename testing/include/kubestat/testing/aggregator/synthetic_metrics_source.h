// A synthetic MetricsSource for the REST benchmarks and the load-test server: `nodes` nodes
// with one system container each, `pods_per_node` pods per node of two containers each,
// every object with the four default windows (10s, 1m, 1h, 1d) of cpu and memory.
// Pod i (counting over the whole cluster) is in namespace "ns-<i % namespaces>", so with
// namespaces == nodes every namespace holds pods_per_node pods. Values come from a seeded
// generator, so runs are comparable. Immutable after construction (its Snapshot() is taken
// once, at the end of it); thread-safe.
#ifndef KUBESTAT_TESTING_AGGREGATOR_SYNTHETIC_METRICS_SOURCE_H_
#define KUBESTAT_TESTING_AGGREGATOR_SYNTHETIC_METRICS_SOURCE_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "kubestat/aggregator/query/metrics_source.h"
#include "kubestat/core/clock.h"

namespace kubestat::aggregator::bench {

class SyntheticMetricsSource final : public MetricsSource {
 public:
  SyntheticMetricsSource(int nodes, int pods_per_node, int namespaces, uint32_t seed = 42) {
    std::mt19937_64 rng(seed);
    const Timestamp end = Timestamp(std::chrono::seconds(1795255210));
    auto series = [&](uint64_t base) {
      metrics_api::StatisticsList s;
      const Duration lengths[] = {std::chrono::seconds(10), std::chrono::minutes(1),
                                  std::chrono::hours(1), std::chrono::hours(24)};
      uint64_t count = 2;
      for (Duration length : lengths) {
        const uint64_t v = base + rng() % (base / 4 + 1);
        metrics_api::Statistics w;
        w.window = length;
        w.endtime = end;
        w.count = count;
        count = count * 6;
        w.mean = v;
        w.min = v / 2;
        w.max = 2 * v + 17;
        w.p50 = v - v / 10;
        w.p95 = v + v / 2 + 3;
        w.p99 = v + v / 2 + v / 3 + 7;
        s.push_back(w);
      }
      return s;
    };
    auto usage = [&]() {
      return metrics_api::ResourceWindows{series(1000000 + rng() % 900000000),
                                          series(1048576 + rng() % 4294967296ULL)};
    };
    int pod_index = 0;
    for (int n = 0; n < nodes; ++n) {
      metrics_api::NodeMetrics node;
      node.name = "node-" + Padded(n, 5);
      node.labels = {{"kubernetes.io/hostname", node.name},
                     {"node-role.kubernetes.io/worker", ""},
                     {"topology.kubernetes.io/zone", "zone-" + std::to_string(n % 3)}};
      node.machine = usage();
      node.system_containers.push_back(metrics_api::ContainerMetrics{"kubelet", usage()});
      nodes_.push_back(node);
      for (int p = 0; p < pods_per_node; ++p, ++pod_index) {
        metrics_api::PodMetrics pod;
        pod.namespace_name = "ns-" + Padded(pod_index % namespaces, 4);
        pod.name = "app-" + Padded(pod_index, 6) + "-7d9f8c6b5-x2x9z";
        pod.node_name = node.name;
        pod.labels = {{"app", "app-" + std::to_string(pod_index % 50)},
                      {"pod-template-hash", "7d9f8c6b5"},
                      {"tier", pod_index % 2 == 0 ? "frontend" : "backend"}};
        pod.pod = usage();
        pod.containers.push_back(metrics_api::ContainerMetrics{"app", usage()});
        pod.containers.push_back(metrics_api::ContainerMetrics{"istio-proxy", usage()});
        pods_[pod.namespace_name].push_back(pod);
      }
    }
    for (const auto& [ns, list] : pods_) {
      for (const metrics_api::PodMetrics& pod : list) all_pods_.push_back(pod);
    }
    // Built once, as the aggregator's SnapshotSource does once per round.
    snapshot_ = MetricsSource::Snapshot();
  }

  std::shared_ptr<const MetricsSnapshot> Snapshot() const override { return snapshot_; }

  bool Ready() const override { return true; }
  std::vector<metrics_api::NodeMetrics> ListNodes() const override { return nodes_; }
  std::optional<metrics_api::NodeMetrics> GetNode(std::string_view name) const override {
    for (const metrics_api::NodeMetrics& node : nodes_) {
      if (node.name == name) return node;
    }
    return std::nullopt;
  }
  std::vector<metrics_api::PodMetrics> ListPods(std::string_view namespace_name) const override {
    if (namespace_name.empty()) return all_pods_;
    auto it = pods_.find(namespace_name);
    return it == pods_.end() ? std::vector<metrics_api::PodMetrics>{} : it->second;
  }
  std::optional<metrics_api::PodMetrics> GetPod(std::string_view namespace_name,
                                                std::string_view name) const override {
    auto it = pods_.find(namespace_name);
    if (it == pods_.end()) return std::nullopt;
    for (const metrics_api::PodMetrics& pod : it->second) {
      if (pod.name == name) return pod;
    }
    return std::nullopt;
  }

  const std::vector<metrics_api::NodeMetrics>& nodes() const { return nodes_; }
  const std::vector<metrics_api::PodMetrics>& pods_of(const std::string& namespace_name) const {
    return pods_.at(namespace_name);
  }

 private:
  static std::string Padded(int value, size_t width) {
    std::string digits = std::to_string(value);
    return std::string(digits.size() < width ? width - digits.size() : 0, '0') + digits;
  }

  std::vector<metrics_api::NodeMetrics> nodes_;
  std::map<std::string, std::vector<metrics_api::PodMetrics>, std::less<>> pods_;
  std::shared_ptr<const MetricsSnapshot> snapshot_;
  std::vector<metrics_api::PodMetrics> all_pods_;
};

}  // namespace kubestat::aggregator::bench

#endif  // KUBESTAT_TESTING_AGGREGATOR_SYNTHETIC_METRICS_SOURCE_H_
