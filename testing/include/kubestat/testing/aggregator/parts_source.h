// PartsSource: a MetricsSource that serves given per-node parts (NodeObjects), its pods
// grouped by the node that reported them whatever their node_name, for the snapshot's tests
// and its benchmark. Reads only through ObjectsOfNode; the lists are empty.
#ifndef KUBESTAT_TESTING_AGGREGATOR_PARTS_SOURCE_H_
#define KUBESTAT_TESTING_AGGREGATOR_PARTS_SOURCE_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kubestat/aggregator/query/metrics_source.h"

namespace kubestat::aggregator::testing {

class PartsSource final : public MetricsSource {
 public:
  std::map<std::string, NodeObjects> parts;
  // A read returns new views of the pods (as a read after a scrape does) instead of the
  // stored ones.
  bool fresh_views = false;

  bool Ready() const override { return true; }
  std::vector<metrics_api::NodeMetrics> ListNodes() const override { return {}; }
  std::optional<metrics_api::NodeMetrics> GetNode(std::string_view) const override {
    return std::nullopt;
  }
  std::vector<metrics_api::PodMetrics> ListPods(std::string_view) const override { return {}; }
  std::optional<metrics_api::PodMetrics> GetPod(std::string_view, std::string_view) const override {
    return std::nullopt;
  }
  std::optional<NodeObjects> ObjectsOfNode(std::string_view node) const override {
    auto it = parts.find(std::string(node));
    if (it == parts.end()) return std::nullopt;
    NodeObjects objects = it->second;
    if (fresh_views) {
      for (auto& pod : objects.pods) pod = std::make_shared<const metrics_api::PodMetrics>(*pod);
    }
    return objects;
  }
};

}  // namespace kubestat::aggregator::testing

#endif  // KUBESTAT_TESTING_AGGREGATOR_PARTS_SOURCE_H_
