// The LabelProvider of the aggregator tests: what discovery would know (node labels, pod
// labels and nodes) and whether it has synced, as the test sets them. Set them before any
// thread reads them; reads are then safe from any thread.
#ifndef KUBESTAT_TESTING_AGGREGATOR_FAKE_LABEL_PROVIDER_H_
#define KUBESTAT_TESTING_AGGREGATOR_FAKE_LABEL_PROVIDER_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "kubestat/aggregator/query/aggregator_state.h"

namespace kubestat::aggregator::testing {

class FakeLabels : public LabelProvider {
 public:
  bool HasSynced() const override { return synced; }
  std::optional<SharedLabels> NodeLabels(std::string_view name) const override {
    auto it = nodes.find(std::string(name));
    if (it == nodes.end()) return std::nullopt;
    return it->second;
  }
  std::optional<PodLabels> PodInfo(std::string_view ns, std::string_view name) const override {
    auto it = pods.find(std::string(ns) + "/" + std::string(name));
    if (it == pods.end()) return std::nullopt;
    return it->second;
  }
  bool synced = false;
  std::map<std::string, SharedLabels> nodes;  // by node name
  std::map<std::string, PodLabels> pods;      // by "namespace/name"
};

}  // namespace kubestat::aggregator::testing

#endif  // KUBESTAT_TESTING_AGGREGATOR_FAKE_LABEL_PROVIDER_H_
