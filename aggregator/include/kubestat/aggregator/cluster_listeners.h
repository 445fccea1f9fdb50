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
#include <utility>
#include <vector>

#include "kubestat/aggregator/aggregator_state.h"
#include "kubestat/aggregator/ingest.h"
#include "kubestat/aggregator/node_agent.h"
#include "kubestat/aggregator/recommender.h"
#include "kubestat/aggregator/snapshot_source.h"
#include "kubestat/core/log.h"
#include "kubestat/discovery/discovery.h"
#include "kubestat/limits/workload.h"

namespace kubestat::aggregator {

// Labels for the query APIs, from discovery.
class DiscoveryLabels final : public LabelProvider {
 public:
  explicit DiscoveryLabels(const discovery::Discovery* discovery) : discovery_(discovery) {}
  bool HasSynced() const override { return discovery_->synced(); }
  std::optional<SharedLabels> NodeLabels(std::string_view name) const override {
    return discovery_->NodeLabelsOf(name);
  }
  std::optional<PodLabels> PodInfo(std::string_view namespace_name,
                                   std::string_view name) const override {
    std::optional<discovery::PodInfo> pod = discovery_->Pod(namespace_name, name);
    if (!pod) return std::nullopt;
    return PodLabels{std::move(pod->labels), pod->node_name, std::move(pod->containers)};
  }
  // Discovery's lock once for the batch, and only the fields the views use copied.
  std::vector<std::optional<PodLabels>> PodInfos(std::span<const PodNameRef> pods) const override {
    return discovery_->PodLabelsOf(pods);
  }

 private:
  const discovery::Discovery* discovery_;
};

// Pods and LimitRanges for the recommendations, from discovery.
class DiscoveryWorkloads final : public WorkloadSource {
 public:
  explicit DiscoveryWorkloads(const discovery::Discovery* discovery) : discovery_(discovery) {}
  std::vector<discovery::PodInfo> Pods(std::string_view namespace_name) const override {
    std::vector<discovery::PodInfo> pods = discovery_->Pods();
    if (!namespace_name.empty()) {
      std::erase_if(
          pods, [&](const discovery::PodInfo& p) { return p.namespace_name != namespace_name; });
    }
    return pods;
  }
  std::optional<limits::Workload> WorkloadOfPod(std::string_view namespace_name,
                                                std::string_view name) const override {
    std::optional<discovery::PodInfo> pod = discovery_->Pod(namespace_name, name);
    if (!pod) return std::nullopt;
    return limits::WorkloadOf(pod->name, pod->owner_kind, pod->owner_name, pod->labels);
  }
  std::vector<limits::LimitRange> LimitRanges(std::string_view namespace_name) const override {
    std::vector<limits::LimitRange> out;
    for (discovery::LimitRangeInfo& lr : discovery_->LimitRanges(namespace_name)) {
      out.push_back(std::move(lr.limit_range));
    }
    return out;
  }

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
  void OnNodeChange(discovery::ChangeType type, const discovery::NodeInfo& node) override {
    if (type != discovery::ChangeType::kDeleted) return;
    if (node_resources_ != nullptr) node_resources_->Remove(node.name);
    if (Defer({node.name, {}, {}, true})) return;
    RemoveNode(node.name);
  }
  void OnPodChange(discovery::ChangeType type, const discovery::PodInfo& pod) override {
    if (type != discovery::ChangeType::kDeleted) return;
    if (Defer({pod.name, pod.namespace_name, pod.node_name, false})) return;
    RemovePod(pod.namespace_name, pod.name, pod.node_name);
  }
  // The rebuild is over: the deletions seen during it are carried out, and later ones at once.
  void Rebuilt() {
    std::vector<Deletion> deferred;
    {
      std::lock_guard<std::mutex> lock(mu_);
      rebuilt_ = true;
      deferred.swap(deferred_);
    }
    if (!deferred.empty()) {
      KLOG(INFO) << deferred.size() << " nodes and pods deleted during the rebuild removed";
    }
    for (const Deletion& d : deferred) {
      if (d.node) {
        RemoveNode(d.name);
      } else {
        RemovePod(d.namespace_name, d.name, d.node_name);
      }
    }
  }

 private:
  struct Deletion {
    std::string name;
    std::string namespace_name;  // a pod's
    std::string node_name;       // a pod's
    bool node = false;
  };
  // Keeps `d` for Rebuilt() if the rebuild is not over; false if it is.
  bool Defer(Deletion d) {
    std::lock_guard<std::mutex> lock(mu_);
    if (rebuilt_) return false;
    deferred_.push_back(std::move(d));
    return true;
  }
  void RemoveNode(const std::string& name) {
    if (absl::StatusOr<bool> s = ingestor_->DeleteNode(name); !s.ok()) {
      KLOG(WARNING) << "removing deleted node " << name << ": " << s.status();
    }
    snapshot_->RemoveNode(name);
  }
  void RemovePod(const std::string& namespace_name, const std::string& name,
                 const std::string& node_name) {
    // Only the pod's node reports it: the removal looks there alone, not through every node.
    if (absl::StatusOr<bool> s = ingestor_->DeletePod(namespace_name, name, node_name); !s.ok()) {
      KLOG(WARNING) << "removing deleted pod " << namespace_name << "/" << name << ": "
                    << s.status();
    }
    snapshot_->RemovePod(namespace_name, name, node_name);
  }

  Ingestor* ingestor_;
  SnapshotSource* snapshot_;
  NodeResourcesStore* node_resources_;
  std::mutex mu_;
  bool rebuilt_ = false;            // guarded by mu_
  std::vector<Deletion> deferred_;  // guarded by mu_; seen before rebuilt_
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_CLUSTER_LISTENERS_H_
