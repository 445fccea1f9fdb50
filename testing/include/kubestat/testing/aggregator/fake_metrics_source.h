// The MetricsSource of the aggregator's front-end tests (REST, gRPC, snapshot): objects the
// test puts, replaces and removes between rounds, readiness, and reads that fail on demand.
// Views with known statistics come from kubestat/testing/metrics_objects.h.
#ifndef KUBESTAT_TESTING_AGGREGATOR_FAKE_METRICS_SOURCE_H_
#define KUBESTAT_TESTING_AGGREGATOR_FAKE_METRICS_SOURCE_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kubestat/aggregator/query/metrics_source.h"
#include "kubestat/core/clock.h"
#include "kubestat/testing/metrics_objects.h"

namespace kubestat::aggregator::testing {

using kubestat::testing::BaseTime;
using kubestat::testing::DefaultWindows;
using kubestat::testing::MakeNode;
using kubestat::testing::MakePod;
using kubestat::testing::MakeSeries;
using kubestat::testing::MakeWindows;

class FakeMetricsSource final : public MetricsSource {
 public:
  void SetReady(bool ready) {
    std::lock_guard lock(mu_);
    ready_ = ready;
  }
  // Every read throws (as a failing store would) while set.
  void SetThrowOnRead(bool fail) {
    std::lock_guard lock(mu_);
    throw_on_read_ = fail;
  }
  // Replaces every object.
  void Set(std::vector<metrics_api::NodeMetrics> nodes, std::vector<metrics_api::PodMetrics> pods) {
    std::lock_guard lock(mu_);
    nodes_.clear();
    pods_.clear();
    for (metrics_api::NodeMetrics& node : nodes) nodes_[node.name] = std::move(node);
    for (metrics_api::PodMetrics& pod : pods)
      pods_[{pod.namespace_name, pod.name}] = std::move(pod);
  }
  void PutNode(metrics_api::NodeMetrics node) {
    std::lock_guard lock(mu_);
    std::string name = node.name;
    nodes_[name] = std::move(node);
  }
  void RemoveNode(const std::string& name) {
    std::lock_guard lock(mu_);
    nodes_.erase(name);
  }
  void PutPod(metrics_api::PodMetrics pod) {
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
  std::vector<metrics_api::NodeMetrics> ListNodes() const override {
    std::lock_guard lock(mu_);
    if (throw_on_read_) throw std::runtime_error("store read failed");
    std::vector<metrics_api::NodeMetrics> out;
    for (const auto& [name, node] : nodes_) out.push_back(node);
    return out;
  }
  std::optional<metrics_api::NodeMetrics> GetNode(std::string_view name) const override {
    std::lock_guard lock(mu_);
    if (throw_on_read_) throw std::runtime_error("store read failed");
    auto it = nodes_.find(std::string(name));
    if (it == nodes_.end()) return std::nullopt;
    return it->second;
  }
  std::vector<metrics_api::PodMetrics> ListPods(std::string_view namespace_name) const override {
    std::lock_guard lock(mu_);
    if (throw_on_read_) throw std::runtime_error("store read failed");
    std::vector<metrics_api::PodMetrics> out;
    for (const auto& [key, pod] : pods_) {
      if (namespace_name.empty() || key.first == namespace_name) out.push_back(pod);
    }
    return out;
  }
  std::optional<metrics_api::PodMetrics> GetPod(std::string_view namespace_name,
                                                std::string_view name) const override {
    std::lock_guard lock(mu_);
    if (throw_on_read_) throw std::runtime_error("store read failed");
    auto it = pods_.find({std::string(namespace_name), std::string(name)});
    if (it == pods_.end()) return std::nullopt;
    return it->second;
  }

 private:
  mutable std::mutex mu_;
  bool ready_ = true;
  bool throw_on_read_ = false;
  std::map<std::string, metrics_api::NodeMetrics> nodes_;
  std::map<std::pair<std::string, std::string>, metrics_api::PodMetrics> pods_;
};

}  // namespace kubestat::aggregator::testing

#endif  // KUBESTAT_TESTING_AGGREGATOR_FAKE_METRICS_SOURCE_H_
