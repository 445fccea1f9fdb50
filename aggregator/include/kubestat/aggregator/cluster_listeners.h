// What the aggregator takes from discovery: labels for the query APIs (DiscoveryLabels)
// and deletions (DeletionListener: a node or pod deleted in the kube API leaves the windows
// and the query answers at once, without waiting for the next round).
//
// Ownership: both borrow what they are given, which must outlive them.
// Thread-safety: called from discovery's threads and the query threads; safe as the
// borrowed parts are.
#ifndef KUBESTAT_AGGREGATOR_CLUSTER_LISTENERS_H_
#define KUBESTAT_AGGREGATOR_CLUSTER_LISTENERS_H_

#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/aggregator/query/aggregator_state.h"
#include "kubestat/aggregator/query/node_agent.h"
#include "kubestat/aggregator/query/recommender.h"
#include "kubestat/aggregator/query/snapshot_source.h"
#include "kubestat/discovery/discovery.h"
#include "kubestat/limits/workload.h"

namespace kubestat::aggregator {

// Labels for the query APIs, from discovery.
class DiscoveryLabels final : public LabelProvider {
 public:
  explicit DiscoveryLabels(const discovery::Discovery* discovery) : discovery_(discovery) {}
  bool HasSynced() const override { return discovery_->synced(); }
  std::optional<SharedLabels> NodeLabels(std::string_view name) const override;
  std::optional<PodLabels> PodInfo(std::string_view namespace_name,
                                   std::string_view name) const override;
  // Discovery's lock once for the batch, and only the fields the views use copied.
  std::vector<std::optional<PodLabels>> PodInfos(std::span<const PodNameRef> pods) const override;

 private:
  const discovery::Discovery* discovery_;
};

// Pods and LimitRanges for the recommendations, from discovery.
class DiscoveryWorkloads final : public WorkloadSource {
 public:
  explicit DiscoveryWorkloads(const discovery::Discovery* discovery) : discovery_(discovery) {}
  std::vector<discovery::PodInfo> Pods(std::string_view namespace_name) const override;
  std::optional<limits::Workload> WorkloadOfPod(std::string_view namespace_name,
                                                std::string_view name) const override;
  std::vector<limits::LimitRange> LimitRanges(std::string_view namespace_name) const override;

 private:
  const discovery::Discovery* discovery_;
};

// A pod or node deleted in the kube API leaves the query results at once (and a node, what
// its agent told, when agents are scraped). Discovery runs while the windows are rebuilt:
// a deletion seen then waits for Rebuilt(), so the rebuild cannot restore what it removed.
class DeletionListener final : public discovery::ClusterListener {
 public:
  DeletionListener(Ingestor* ingestor, SnapshotSource* snapshot,
                   NodeResourcesStore* node_resources = nullptr)
      : ingestor_(ingestor), snapshot_(snapshot), node_resources_(node_resources) {}
  void OnNodeChange(discovery::ChangeType type, const discovery::NodeInfo& node) override;
  void OnPodChange(discovery::ChangeType type, const discovery::PodInfo& pod) override;
  // The rebuild is over: the deletions seen during it are carried out, and later ones at once.
  void Rebuilt();

 private:
  struct Deletion {
    std::string name;
    std::string namespace_name;  // a pod's
    std::string node_name;       // a pod's
    bool node = false;
  };
  // Keeps `d` for Rebuilt() if the rebuild is not over; false if it is.
  bool Defer(Deletion d);
  void RemoveNode(const std::string& name);
  void RemovePod(const std::string& namespace_name, const std::string& name,
                 const std::string& node_name);

  Ingestor* ingestor_;
  SnapshotSource* snapshot_;
  NodeResourcesStore* node_resources_;
  std::mutex mu_;
  bool rebuilt_ = false;            // guarded by mu_
  std::vector<Deletion> deferred_;  // guarded by mu_; seen before rebuilt_
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_CLUSTER_LISTENERS_H_
