#include "kubestat/aggregator/snapshot_source.h"

#include <algorithm>
#include <utility>

namespace kubestat::aggregator {
namespace {

bool PodBefore(const std::shared_ptr<const PodView>& pod, std::string_view namespace_name,
               std::string_view name) {
  const std::string_view pod_namespace = pod->namespace_name;
  if (pod_namespace != namespace_name) return pod_namespace < namespace_name;
  return std::string_view(pod->name) < name;
}

// Index of the node or pod with this key in the sorted vectors; std::nullopt when absent.
std::optional<size_t> FindNode(const MetricsSnapshot& snapshot, std::string_view name) {
  auto it = std::lower_bound(snapshot.nodes.begin(), snapshot.nodes.end(), name,
                             [](const std::shared_ptr<const NodeView>& node, std::string_view n) {
                               return node->name < n;
                             });
  if (it == snapshot.nodes.end() || (*it)->name != name) return std::nullopt;
  return static_cast<size_t>(it - snapshot.nodes.begin());
}

std::optional<size_t> FindPod(const MetricsSnapshot& snapshot, std::string_view namespace_name,
                              std::string_view name) {
  auto it = std::lower_bound(snapshot.pods.begin(), snapshot.pods.end(), 0,
                             [&](const std::shared_ptr<const PodView>& pod, int) {
                               return PodBefore(pod, namespace_name, name);
                             });
  if (it == snapshot.pods.end() || (*it)->namespace_name != namespace_name || (*it)->name != name) {
    return std::nullopt;
  }
  return static_cast<size_t>(it - snapshot.pods.begin());
}

// Drop one object from the snapshot (and a pod from its node's index entry); false when it
// is absent.
bool EraseNode(MetricsSnapshot* snapshot, std::string_view name) {
  std::optional<size_t> index = FindNode(*snapshot, name);
  if (!index) return false;
  snapshot->nodes.erase(snapshot->nodes.begin() + static_cast<ptrdiff_t>(*index));
  return true;
}

bool ErasePod(MetricsSnapshot* snapshot, std::string_view namespace_name, std::string_view name) {
  std::optional<size_t> index = FindPod(*snapshot, namespace_name, name);
  if (!index) return false;
  const std::shared_ptr<const PodView> pod = snapshot->pods[*index];
  snapshot->pods.erase(snapshot->pods.begin() + static_cast<ptrdiff_t>(*index));
  auto entry = snapshot->pods_by_node.find(pod->node_name);
  if (entry == snapshot->pods_by_node.end()) return true;
  std::erase(entry->second, pod);
  if (entry->second.empty()) snapshot->pods_by_node.erase(entry);
  return true;
}

}  // namespace

SnapshotSource::SnapshotSource(const MetricsSource* live)
    : live_(live), current_(std::make_shared<MetricsSnapshot>()) {}

void SnapshotSource::Refresh() {
  std::lock_guard refresh_lock(refresh_mu_);
  {
    std::lock_guard lock(mu_);
    refreshing_ = true;
    pending_ = {};
  }
  std::shared_ptr<const MetricsSnapshot> taken = live_->Snapshot();

  std::lock_guard lock(mu_);
  refreshing_ = false;
  if (!pending_.nodes.empty() || !pending_.pods.empty()) {
    // Removals that raced with the read: the live source may still have listed them.
    auto snapshot = std::make_shared<MetricsSnapshot>(*taken);
    for (const std::string& name : pending_.nodes) EraseNode(snapshot.get(), name);
    for (const auto& [namespace_name, name] : pending_.pods) {
      ErasePod(snapshot.get(), namespace_name, name);
    }
    taken = std::move(snapshot);
    pending_ = {};
  }
  ++stats_.refreshes;
  current_ = std::move(taken);
}

void SnapshotSource::RemoveNode(std::string_view name) {
  std::lock_guard lock(mu_);
  if (refreshing_) pending_.nodes.emplace_back(name);
  if (!FindNode(*current_, name)) return;
  auto snapshot = std::make_shared<MetricsSnapshot>(*current_);
  EraseNode(snapshot.get(), name);
  ++stats_.removals;
  current_ = std::move(snapshot);
}

void SnapshotSource::RemovePod(std::string_view namespace_name, std::string_view name) {
  std::lock_guard lock(mu_);
  if (refreshing_) pending_.pods.emplace_back(namespace_name, name);
  if (!FindPod(*current_, namespace_name, name)) return;
  auto snapshot = std::make_shared<MetricsSnapshot>(*current_);
  ErasePod(snapshot.get(), namespace_name, name);
  ++stats_.removals;
  current_ = std::move(snapshot);
}

std::shared_ptr<const MetricsSnapshot> SnapshotSource::Snapshot() const {
  std::lock_guard lock(mu_);
  return current_;
}

SnapshotStats SnapshotSource::Stats() const {
  std::lock_guard lock(mu_);
  SnapshotStats stats = stats_;
  stats.nodes = current_->nodes.size();
  stats.pods = current_->pods.size();
  return stats;
}

bool SnapshotSource::Ready() const { return Snapshot()->complete; }

std::vector<NodeView> SnapshotSource::ListNodes() const {
  std::shared_ptr<const MetricsSnapshot> snapshot = Snapshot();
  std::vector<NodeView> nodes;
  nodes.reserve(snapshot->nodes.size());
  for (const auto& node : snapshot->nodes) nodes.push_back(*node);
  return nodes;
}

std::optional<NodeView> SnapshotSource::GetNode(std::string_view name) const {
  std::shared_ptr<const MetricsSnapshot> snapshot = Snapshot();
  std::optional<size_t> index = FindNode(*snapshot, name);
  if (!index) return std::nullopt;
  return *snapshot->nodes[*index];
}

std::vector<PodView> SnapshotSource::ListPods(std::string_view namespace_name) const {
  std::shared_ptr<const MetricsSnapshot> snapshot = Snapshot();
  const auto [first, last] = snapshot->NamespaceRange(namespace_name);
  std::vector<PodView> pods;
  pods.reserve(last - first);
  for (size_t i = first; i < last; ++i) pods.push_back(*snapshot->pods[i]);
  return pods;
}

std::optional<PodView> SnapshotSource::GetPod(std::string_view namespace_name,
                                              std::string_view name) const {
  std::shared_ptr<const MetricsSnapshot> snapshot = Snapshot();
  std::optional<size_t> index = FindPod(*snapshot, namespace_name, name);
  if (!index) return std::nullopt;
  return *snapshot->pods[*index];
}

}  // namespace kubestat::aggregator
