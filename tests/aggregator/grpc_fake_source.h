// A MetricsSource the gRPC tests mutate between rounds, and builders of views with known
// statistics.
#ifndef KUBESTAT_TESTS_AGGREGATOR_GRPC_FAKE_SOURCE_H_
#define KUBESTAT_TESTS_AGGREGATOR_GRPC_FAKE_SOURCE_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kubestat/aggregator/metrics_source.h"
#include "kubestat/core/clock.h"

namespace kubestat::aggregator::testing {

// 2026-11-21T10:00:00Z.
inline Timestamp BaseTime() { return Timestamp(std::chrono::seconds(1795255200)); }

inline const std::vector<Duration>& DefaultWindows() {
  static const std::vector<Duration> windows = {std::chrono::seconds(10), std::chrono::minutes(1),
                                                std::chrono::hours(1), std::chrono::hours(24)};
  return windows;
}

// One series' windows: for window i, count 1+i, min v, mean v+i, p50 v+1, p95 v+5,
// p99 v+9, max v+10+i, all ending at `endtime`.
inline SeriesWindows MakeSeries(Timestamp endtime, uint64_t v) {
  SeriesWindows series;
  series.endtime = endtime;
  const std::vector<Duration>& windows = DefaultWindows();
  for (size_t i = 0; i < windows.size(); ++i) {
    WindowStats w;
    w.window = windows[i];
    w.endtime = endtime;
    w.count = 1 + i;
    w.min = v;
    w.mean = v + i;
    w.p50 = v + 1;
    w.p95 = v + 5;
    w.p99 = v + 9;
    w.max = v + 10 + i;
    w.exact_percentiles = windows[i] <= std::chrono::minutes(1);
    series.windows.push_back(w);
  }
  return series;
}

// cpu = cpu_value nanocores, memory = cpu_value * 1000 bytes.
inline ResourceWindows MakeWindows(Timestamp endtime, uint64_t cpu_value) {
  return ResourceWindows{MakeSeries(endtime, cpu_value), MakeSeries(endtime, cpu_value * 1000)};
}

inline NodeView MakeNode(std::string name, Labels labels, Timestamp endtime, uint64_t v) {
  NodeView node;
  node.name = std::move(name);
  node.labels = std::move(labels);
  node.machine = MakeWindows(endtime, v);
  node.system_containers.push_back(ContainerView{"kubelet", MakeWindows(endtime, v / 10)});
  return node;
}

inline PodView MakePod(std::string namespace_name, std::string name, std::string node_name,
                       Labels labels, Timestamp endtime, uint64_t v, int containers = 1) {
  PodView pod;
  pod.namespace_name = std::move(namespace_name);
  pod.name = std::move(name);
  pod.node_name = std::move(node_name);
  pod.labels = std::move(labels);
  pod.pod = MakeWindows(endtime, v);
  for (int i = 0; i < containers; ++i) {
    pod.containers.push_back(
        ContainerView{"c" + std::to_string(i), MakeWindows(endtime, v + static_cast<uint64_t>(i))});
  }
  return pod;
}

class FakeMetricsSource final : public MetricsSource {
 public:
  void SetReady(bool ready) {
    std::lock_guard lock(mu_);
    ready_ = ready;
  }
  void PutNode(NodeView node) {
    std::lock_guard lock(mu_);
    std::string name = node.name;
    nodes_[name] = std::move(node);
  }
  void RemoveNode(const std::string& name) {
    std::lock_guard lock(mu_);
    nodes_.erase(name);
  }
  void PutPod(PodView pod) {
    std::lock_guard lock(mu_);
    std::pair<std::string, std::string> key(pod.namespace_name, pod.name);
    pods_[key] = std::move(pod);
  }
  void RemovePod(const std::string& namespace_name, const std::string& name) {
    std::lock_guard lock(mu_);
    pods_.erase({namespace_name, name});
  }

  bool Ready() const override {
    std::lock_guard lock(mu_);
    return ready_;
  }
  std::vector<NodeView> ListNodes() const override {
    std::lock_guard lock(mu_);
    std::vector<NodeView> out;
    for (const auto& [name, node] : nodes_) out.push_back(node);
    return out;
  }
  std::optional<NodeView> GetNode(std::string_view name) const override {
    std::lock_guard lock(mu_);
    auto it = nodes_.find(std::string(name));
    if (it == nodes_.end()) return std::nullopt;
    return it->second;
  }
  std::vector<PodView> ListPods(std::string_view namespace_name) const override {
    std::lock_guard lock(mu_);
    std::vector<PodView> out;
    for (const auto& [key, pod] : pods_) {
      if (namespace_name.empty() || key.first == namespace_name) out.push_back(pod);
    }
    return out;
  }
  std::optional<PodView> GetPod(std::string_view namespace_name,
                                std::string_view name) const override {
    std::lock_guard lock(mu_);
    auto it = pods_.find({std::string(namespace_name), std::string(name)});
    if (it == pods_.end()) return std::nullopt;
    return it->second;
  }

 private:
  mutable std::mutex mu_;
  bool ready_ = true;
  std::map<std::string, NodeView> nodes_;
  std::map<std::pair<std::string, std::string>, PodView> pods_;
};

}  // namespace kubestat::aggregator::testing

#endif  // KUBESTAT_TESTS_AGGREGATOR_GRPC_FAKE_SOURCE_H_
