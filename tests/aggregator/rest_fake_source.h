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

namespace kubestat::aggregator::rest_testing {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

// 2026-11-21T10:00:10Z, the end of every fake window.
inline Timestamp EndTime() { return Timestamp(seconds(1795255210)); }

// One window with explicit statistics.
inline WindowStats Window(Duration length, uint64_t count, uint64_t mean, uint64_t max,
                          uint64_t p95, uint64_t min, uint64_t p50, uint64_t p99,
                          Timestamp endtime = EndTime()) {
  WindowStats w;
  w.window = length;
  w.endtime = endtime;
  w.count = count;
  w.mean = mean;
  w.max = max;
  w.p95 = p95;
  w.min = min;
  w.p50 = p50;
  w.p99 = p99;
  w.exact_percentiles = length <= minutes(1);
  return w;
}

// The four default windows (10s, 1m, 1h, 1d) of one series: window i has count 2+i,
// mean v, max 2v, p95 3v/2, min v/2, p50 v, p99 2v (so the newest window's mean is v).
inline SeriesWindows Series(uint64_t v, Timestamp endtime = EndTime()) {
  SeriesWindows series;
  series.endtime = endtime;
  const Duration lengths[] = {seconds(10), minutes(1), hours(1), hours(24)};
  uint64_t count = 2;
  for (Duration length : lengths) {
    series.windows.push_back(
        Window(length, count++, v, 2 * v, 3 * v / 2, v / 2, v, 2 * v, endtime));
  }
  return series;
}

inline ResourceWindows Usage(uint64_t nanocores, uint64_t bytes) {
  return ResourceWindows{Series(nanocores), Series(bytes)};
}

inline NodeView Node(std::string name, Labels labels, uint64_t nanocores, uint64_t bytes) {
  NodeView node;
  node.name = std::move(name);
  node.labels = std::move(labels);
  node.machine = Usage(nanocores, bytes);
  node.system_containers.push_back(ContainerView{"kubelet", Usage(nanocores / 10, bytes / 10)});
  return node;
}

inline PodView Pod(std::string namespace_name, std::string name, std::string node_name,
                   Labels labels, uint64_t nanocores, uint64_t bytes) {
  PodView pod;
  pod.namespace_name = std::move(namespace_name);
  pod.name = std::move(name);
  pod.node_name = std::move(node_name);
  pod.labels = std::move(labels);
  pod.pod = Usage(nanocores, bytes);
  pod.containers.push_back(ContainerView{"app", Usage(nanocores, bytes)});
  return pod;
}

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

// The cluster every REST test serves:
//   nodes: node-1 {role=worker, zone=a}, node-2 {role=control-plane, zone=b},
//          node-3 {role=worker} with cpu only (not served by v1beta1)
//   pods:  kube-system/coredns-1 on node-2 {k8s-app=kube-dns}
//          shop/db-0 on node-1 {app=db, tier=backend}
//          shop/web-1 on node-1 {app=web, tier=frontend}
//          shop/web-2 on node-2 {app=web}
inline void FillStandardCluster(FakeMetricsSource& source) {
  source.nodes = {
      Node("node-1", {{"role", "worker"}, {"zone", "a"}}, 120000000, 316669952),
      Node("node-2", {{"role", "control-plane"}, {"zone", "b"}}, 1500000000, 2147483648),
      Node("node-3", {{"role", "worker"}}, 5000000, 0),
  };
  source.nodes[2].machine.memory.reset();
  source.pods = {
      Pod("kube-system", "coredns-1", "node-2", {{"k8s-app", "kube-dns"}}, 3000000, 15728640),
      Pod("shop", "db-0", "node-1", {{"app", "db"}, {"tier", "backend"}}, 250000000, 536870912),
      Pod("shop", "web-1", "node-1", {{"app", "web"}, {"tier", "frontend"}}, 120000000, 316669952),
      Pod("shop", "web-2", "node-2", {{"app", "web"}}, 80000000, 104857600),
  };
}

}  // namespace kubestat::aggregator::rest_testing

#endif  // KUBESTAT_TESTS_AGGREGATOR_REST_FAKE_SOURCE_H_
