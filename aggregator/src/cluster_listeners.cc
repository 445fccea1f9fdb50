#include "kubestat/aggregator/cluster_listeners.h"

#include <utility>

#include "kubestat/core/log.h"

namespace kubestat::aggregator {

std::optional<SharedLabels> DiscoveryLabels::NodeLabels(std::string_view name) const {
  return discovery_->NodeLabelsOf(name);
}

std::optional<PodLabels> DiscoveryLabels::PodInfo(std::string_view namespace_name,
                                                  std::string_view name) const {
  std::optional<discovery::PodInfo> pod = discovery_->Pod(namespace_name, name);
  if (!pod) return std::nullopt;
  return PodLabels{std::move(pod->labels), pod->node_name, std::move(pod->containers)};
}

std::vector<std::optional<PodLabels>> DiscoveryLabels::PodInfos(
    std::span<const PodNameRef> pods) const {
  return discovery_->PodLabelsOf(pods);
}

std::vector<discovery::PodInfo> DiscoveryWorkloads::Pods(std::string_view namespace_name) const {
  std::vector<discovery::PodInfo> pods = discovery_->Pods();
  if (!namespace_name.empty()) {
    std::erase_if(pods,
                  [&](const discovery::PodInfo& p) { return p.namespace_name != namespace_name; });
  }
  return pods;
}

std::optional<limits::Workload> DiscoveryWorkloads::WorkloadOfPod(std::string_view namespace_name,
                                                                  std::string_view name) const {
  std::optional<discovery::PodInfo> pod = discovery_->Pod(namespace_name, name);
  if (!pod) return std::nullopt;
  return limits::WorkloadOf(pod->name, pod->owner_kind, pod->owner_name, pod->labels);
}

std::vector<limits::LimitRange> DiscoveryWorkloads::LimitRanges(
    std::string_view namespace_name) const {
  std::vector<limits::LimitRange> out;
  for (discovery::LimitRangeInfo& lr : discovery_->LimitRanges(namespace_name)) {
    out.push_back(std::move(lr.limit_range));
  }
  return out;
}

void DeletionListener::OnNodeChange(discovery::ChangeType type, const discovery::NodeInfo& node) {
  if (type != discovery::ChangeType::kDeleted) return;
  if (node_resources_ != nullptr) node_resources_->Remove(node.name);
  if (Defer({node.name, {}, {}, true})) return;
  RemoveNode(node.name);
}

void DeletionListener::OnPodChange(discovery::ChangeType type, const discovery::PodInfo& pod) {
  if (type != discovery::ChangeType::kDeleted) return;
  if (Defer({pod.name, pod.namespace_name, pod.node_name, false})) return;
  RemovePod(pod.namespace_name, pod.name, pod.node_name);
}

void DeletionListener::Rebuilt() {
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

bool DeletionListener::Defer(Deletion d) {
  std::lock_guard<std::mutex> lock(mu_);
  if (rebuilt_) return false;
  deferred_.push_back(std::move(d));
  return true;
}

void DeletionListener::RemoveNode(const std::string& name) {
  if (absl::StatusOr<bool> s = ingestor_->DeleteNode(name); !s.ok()) {
    KLOG(WARNING) << "removing deleted node " << name << ": " << s.status();
  }
  snapshot_->RemoveNode(name);
}

void DeletionListener::RemovePod(const std::string& namespace_name, const std::string& name,
                                 const std::string& node_name) {
  // Only the pod's node reports it: the removal looks there alone, not through every node.
  if (absl::StatusOr<bool> s = ingestor_->DeletePod(namespace_name, name, node_name); !s.ok()) {
    KLOG(WARNING) << "removing deleted pod " << namespace_name << "/" << name << ": " << s.status();
  }
  snapshot_->RemovePod(namespace_name, name, node_name);
}

}  // namespace kubestat::aggregator
