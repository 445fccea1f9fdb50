#include "kubestat/aggregator/query/snapshot_source.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <utility>

#include "kubestat/metrics_api/query.h"

namespace kubestat::aggregator {
namespace {

// Index of the node with this name in the sorted vector; std::nullopt when absent.
std::optional<size_t> FindNode(const MetricsSnapshot& snapshot, std::string_view name) {
  auto it = std::lower_bound(snapshot.nodes.begin(), snapshot.nodes.end(), name,
                             [](const std::shared_ptr<const metrics_api::NodeMetrics>& node,
                                std::string_view n) { return node->name < n; });
  if (it == snapshot.nodes.end() || (*it)->name != name) return std::nullopt;
  return static_cast<size_t>(it - snapshot.nodes.begin());
}

// Drop one object from the snapshot; false when it is absent.
bool EraseNode(MetricsSnapshot* snapshot, std::string_view name) {
  std::optional<size_t> index = FindNode(*snapshot, name);
  if (!index) return false;
  snapshot->nodes.erase(snapshot->nodes.begin() + static_cast<ptrdiff_t>(*index));
  return true;
}

// A pod removed with its node named is erased only when that node reported it. Its part
// still holds it (PodsOfNode leaves out what `pods` does not list).
bool ErasePod(MetricsSnapshot* snapshot, std::string_view namespace_name, std::string_view name,
              std::string_view node) {
  std::optional<size_t> index = snapshot->FindPod(namespace_name, name);
  if (!index) return false;
  if (!node.empty() && snapshot->pods[*index]->node_name != node) return false;
  snapshot->pods.erase(snapshot->pods.begin() + static_cast<ptrdiff_t>(*index));
  return true;
}

bool SamePod(const metrics_api::PodMetrics& a, const metrics_api::PodMetrics& b) {
  return a.namespace_name == b.namespace_name && a.name == b.name;
}

bool PodKeyLess(const metrics_api::PodMetrics& a, const metrics_api::PodMetrics& b) {
  if (a.namespace_name != b.namespace_name) return a.namespace_name < b.namespace_name;
  return a.name < b.name;
}

// Whether `now` holds pods of the keys `before` held, in the same order, each key greater
// than the one before it (so the keys are sorted and unique in both).
bool SameSortedKeys(const std::vector<std::shared_ptr<const metrics_api::PodMetrics>>& before,
                    const std::vector<std::shared_ptr<const metrics_api::PodMetrics>>& now) {
  if (before.size() != now.size()) return false;
  for (size_t i = 0; i < now.size(); ++i) {
    if (!SamePod(*before[i], *now[i])) return false;
    if (i > 0 && !PodKeyLess(*now[i - 1], *now[i])) return false;
  }
  return true;
}

}  // namespace

// One snapshot from every node's part (parts in node-name order). A pod reported by two
// parts is taken from the first part by node name. With `base` (the previous assembly) and
// no pod dropped as a duplicate then, the pods of the parts that did not change stay as they
// were, in order, those of parts read again with the same pods take their places, and only
// the other changed parts' pods are sorted and merged in: the cost follows what came and
// went, plus a pass of pointer work over the rest.
std::shared_ptr<MetricsSnapshot> SnapshotSource::Assemble(
    bool complete, std::vector<std::shared_ptr<const NodeObjects>> parts) {
  auto snapshot = std::make_shared<MetricsSnapshot>();
  snapshot->complete = complete;
  size_t pods = 0;
  for (const auto& part : parts) pods += part->pods.size();
  snapshot->nodes.reserve(parts.size());
  for (const auto& part : parts) {
    if (part->node) snapshot->nodes.push_back(part->node);
  }
  // (pod, its part's index), sorted by (namespace, name), each pod once. The references
  // point into the parts, which the snapshot and the next assembly's base keep.
  struct Sourced {
    metrics_api::PodRef pod;
    uint32_t part;
  };
  std::vector<Sourced> kept;
  std::vector<Sourced> fresh;
  const bool incremental = incremental_ && assembled_.valid && !assembled_.dropped_duplicates;
  assembled_.last_incremental = incremental;
  if (incremental) {
    // Pair each part of the previous assembly with this one's part of the same node (both
    // lists are in node-name order). A part that is the very one assembled before keeps its
    // pods where they were. A part read again whose pods have the keys its predecessor's had,
    // in the same order (a node scraped again with the same pods: the common case), puts its
    // pods in its predecessor's pods' places, since a part's pods are sorted and unique and
    // so appear in the assembly in the part's order. Any other part's pods are sorted and
    // merged in below.
    enum class Fate : uint8_t { kFresh, kSame, kInPlace };
    const size_t before_count = assembled_.parts.size();
    std::vector<int64_t> now_index(before_count, -1);
    std::vector<Fate> fate(before_count, Fate::kFresh);
    std::vector<bool> placed(parts.size(), false);
    size_t j = 0;
    for (uint32_t i = 0; i < parts.size(); ++i) {
      const NodeObjects& part = *parts[i];
      while (j < before_count && assembled_.parts[j]->node_name < part.node_name) ++j;
      if (j == before_count || assembled_.parts[j]->node_name != part.node_name) continue;
      now_index[j] = i;
      if (assembled_.parts[j].get() == &part) {
        fate[j] = Fate::kSame;
        placed[i] = true;
      } else if (SameSortedKeys(assembled_.parts[j]->pods, part.pods)) {
        fate[j] = Fate::kInPlace;
        placed[i] = true;
        ++assembled_.parts_in_place;
      }
      ++j;
    }
    std::vector<uint32_t> next_pod(before_count, 0);  // a kInPlace part's next pod
    kept.reserve(pods);
    for (size_t k = 0; k < assembled_.pods.size(); ++k) {
      const uint32_t source = assembled_.sources[k];
      const int64_t part = now_index[source];
      switch (fate[source]) {
        case Fate::kSame:  // the very part: its pods are where they were
          kept.push_back({assembled_.pods[k], static_cast<uint32_t>(part)});
          break;
        case Fate::kInPlace:
          kept.push_back(
              {metrics_api::PodRef(parts[static_cast<size_t>(part)]->pods[next_pod[source]++]),
               static_cast<uint32_t>(part)});
          break;
        case Fate::kFresh:  // the node is gone, or its pods are merged in as fresh ones
          break;
      }
    }
    for (uint32_t i = 0; i < parts.size(); ++i) {
      if (placed[i]) continue;
      for (const auto& pod : parts[i]->pods) fresh.push_back({metrics_api::PodRef(pod), i});
    }
  } else {
    fresh.reserve(pods);
    for (uint32_t i = 0; i < parts.size(); ++i) {
      for (const auto& pod : parts[i]->pods) fresh.push_back({metrics_api::PodRef(pod), i});
    }
  }
  // Stable: of a pod reported by two parts, the first part's (by node name) comes first.
  std::stable_sort(fresh.begin(), fresh.end(),
                   [](const Sourced& a, const Sourced& b) { return PodKeyLess(*a.pod, *b.pod); });
  bool dropped = false;
  std::vector<Sourced> merged;
  merged.reserve(kept.size() + fresh.size());
  auto take = [&](const Sourced& s) {
    if (!merged.empty() && SamePod(*merged.back().pod, *s.pod)) {
      dropped = true;
      if (s.part < merged.back().part) merged.back() = s;  // the first node by name wins
      return;
    }
    merged.push_back(s);
  };
  // The kept pods are unique and sorted: between two fresh ones they are copied as a run, and
  // only a run's first pod is compared with the pod before it. The run's end is found by
  // exponential search, so a few changed nodes cost a few compares each, not a pass of
  // compares over every pod.
  auto take_kept = [&](size_t first, size_t last) {
    if (first == last) return;
    take(kept[first]);
    merged.insert(merged.end(), kept.begin() + static_cast<ptrdiff_t>(first + 1),
                  kept.begin() + static_cast<ptrdiff_t>(last));
  };
  auto kept_less = [](const Sourced& a, const Sourced& b) { return PodKeyLess(*a.pod, *b.pod); };
  size_t k = 0;
  for (const Sourced& next : fresh) {
    size_t lo = k, hi = k, step = 1;
    while (hi < kept.size() && kept_less(kept[hi], next)) {
      lo = hi + 1;
      hi = std::min(kept.size(), hi + step);
      step *= 2;
    }
    const size_t end = static_cast<size_t>(
        std::lower_bound(kept.begin() + static_cast<ptrdiff_t>(lo),
                         kept.begin() + static_cast<ptrdiff_t>(hi), next, kept_less) -
        kept.begin());
    take_kept(k, end);
    k = end;
    take(next);
  }
  take_kept(k, kept.size());
  assembled_.pods.resize(merged.size());
  assembled_.sources.resize(merged.size());
  for (size_t i = 0; i < merged.size(); ++i) {
    assembled_.pods[i] = merged[i].pod;
    assembled_.sources[i] = merged[i].part;
  }
  snapshot->pods = assembled_.pods;
  // The base of the next assembly; the snapshot holds the same parts.
  assembled_.valid = true;
  assembled_.dropped_duplicates = dropped;
  assembled_.parts = parts;
  snapshot->parts = std::move(parts);
  return snapshot;
}

SnapshotSource::SnapshotSource(const MetricsSource* live, bool incremental)
    : live_(live), incremental_(incremental), current_(std::make_shared<MetricsSnapshot>()) {}

SnapshotSource::Read SnapshotSource::BeginRead() {
  const Read read{++reads_, removal_seq_};
  reads_in_flight_.insert(read.removals);
  return read;
}

void SnapshotSource::EndRead(const Read& read) {
  reads_in_flight_.erase(reads_in_flight_.find(read.removals));
  if (reads_in_flight_.empty()) {
    removals_.clear();
    return;
  }
  const uint64_t oldest = *reads_in_flight_.begin();
  std::erase_if(removals_, [oldest](const Removal& r) { return r.seq <= oldest; });
}

bool SnapshotSource::ApplyRemovals(const Read& read, NodeObjects* objects) const {
  for (const Removal& removal : removals_) {
    if (removal.seq <= read.removals) continue;
    if (removal.node) {
      if (removal.name == objects->node_name) return false;
      continue;
    }
    if (!removal.pod_node.empty() && removal.pod_node != objects->node_name) continue;
    std::erase_if(objects->pods, [&](const std::shared_ptr<const metrics_api::PodMetrics>& pod) {
      return pod->namespace_name == removal.namespace_name && pod->name == removal.name;
    });
  }
  return true;
}

std::shared_ptr<const NodeObjects> SnapshotSource::Store(const Read& read, std::string_view node,
                                                         std::optional<NodeObjects> objects) {
  auto it = parts_.find(node);
  if (it != parts_.end() && it->second.read > read.order) return nullptr;  // a later read's
  std::shared_ptr<const NodeObjects> replaced;
  if (it != parts_.end()) replaced = std::move(it->second.objects);
  if (!objects || !ApplyRemovals(read, &*objects)) {
    if (it != parts_.end()) parts_.erase(it);
    return replaced;
  }
  Part part{read.order, std::make_shared<const NodeObjects>(std::move(*objects))};
  if (it == parts_.end()) {
    parts_.emplace(std::string(node), std::move(part));
  } else {
    it->second = std::move(part);
  }
  return replaced;
}

void SnapshotSource::Refresh() {
  Read read;
  {
    std::lock_guard lock(mu_);
    read = BeginRead();
  }
  NodeObjectsList list = live_->AllNodeObjects();
  std::vector<std::shared_ptr<const NodeObjects>> replaced;  // freed after the lock
  {
    std::lock_guard lock(mu_);
    // A node the read did not see is gone, unless a later read found it.
    std::set<std::string_view> seen;
    for (const NodeObjects& objects : list.nodes) seen.insert(objects.node_name);
    for (auto it = parts_.begin(); it != parts_.end();) {
      if (it->second.read < read.order && !seen.contains(it->first)) {
        replaced.push_back(std::move(it->second.objects));
        it = parts_.erase(it);
      } else {
        ++it;
      }
    }
    for (NodeObjects& objects : list.nodes) {
      const std::string name = objects.node_name;
      replaced.push_back(Store(read, name, std::move(objects)));
    }
    EndRead(read);
    ++stats_.refreshes;
  }
  PublishParts(list.complete);
}

void SnapshotSource::RefreshNode(std::string_view node) {
  Read read;
  {
    std::lock_guard lock(mu_);
    read = BeginRead();
  }
  std::optional<NodeObjects> objects = live_->ObjectsOfNode(node);
  std::shared_ptr<const NodeObjects> replaced;  // freed after the lock
  std::lock_guard lock(mu_);
  replaced = Store(read, node, std::move(objects));
  EndRead(read);
  ++stats_.node_refreshes;
}

void SnapshotSource::Publish() { PublishParts(live_->Ready()); }

void SnapshotSource::PublishParts(bool complete) {
  std::lock_guard publish_lock(publish_mu_);
  Read read;
  std::vector<std::shared_ptr<const NodeObjects>> parts;
  {
    std::lock_guard lock(mu_);
    read = BeginRead();
    parts.reserve(parts_.size());
    for (const auto& [name, part] : parts_) parts.push_back(part.objects);
  }
  std::shared_ptr<MetricsSnapshot> snapshot = Assemble(complete, std::move(parts));
  std::shared_ptr<const MetricsSnapshot> replaced;  // freed after the lock
  std::lock_guard lock(mu_);
  // Removals made while assembling: their objects may be in the parts that were copied.
  for (const Removal& removal : removals_) {
    if (removal.seq <= read.removals) continue;
    if (removal.node) {
      EraseNode(snapshot.get(), removal.name);
    } else {
      ErasePod(snapshot.get(), removal.namespace_name, removal.name, removal.pod_node);
    }
  }
  EndRead(read);
  snapshot->newest_usage = metrics_api::NewestUsage(snapshot->nodes);
  ++stats_.publishes;
  if (assembled_.last_incremental) ++stats_.incremental_publishes;
  stats_.parts_in_place = assembled_.parts_in_place;
  removals_unpublished_ = false;
  replaced = std::move(current_);
  current_ = std::move(snapshot);
}

void SnapshotSource::RemoveNode(std::string_view name) {
  std::shared_ptr<const NodeObjects> part;  // freed after the lock
  std::lock_guard lock(mu_);
  ++removal_seq_;
  ++stats_.removals;
  removals_unpublished_ = true;
  if (!reads_in_flight_.empty())
    removals_.push_back({removal_seq_, true, {}, std::string(name), {}});
  if (auto it = parts_.find(name); it != parts_.end()) {
    part = std::move(it->second.objects);
    parts_.erase(it);
  }
}

void SnapshotSource::RemovePod(std::string_view namespace_name, std::string_view name,
                               std::string_view node) {
  std::shared_ptr<const NodeObjects> replaced;  // freed after the lock
  std::lock_guard lock(mu_);
  ++removal_seq_;
  ++stats_.removals;
  removals_unpublished_ = true;
  if (!reads_in_flight_.empty()) {
    removals_.push_back(
        {removal_seq_, false, std::string(namespace_name), std::string(name), std::string(node)});
  }
  auto drop_from = [&](Part& part) {
    std::optional<size_t> index = FindPodIn(part.objects->pods, namespace_name, name);
    if (!index) return;
    auto objects = std::make_shared<NodeObjects>(*part.objects);
    objects->pods.erase(objects->pods.begin() + static_cast<ptrdiff_t>(*index));
    replaced = std::exchange(part.objects, std::move(objects));
  };
  if (!node.empty()) {
    if (auto it = parts_.find(node); it != parts_.end()) drop_from(it->second);
    return;
  }
  for (auto& [part_node, part] : parts_) {
    drop_from(part);
    replaced.reset();
  }
}

std::shared_ptr<const MetricsSnapshot> SnapshotSource::Snapshot() const {
  std::lock_guard lock(mu_);
  return current_;
}

SnapshotStats SnapshotSource::Stats() const {
  std::lock_guard lock(mu_);
  SnapshotStats stats = stats_;
  stats.removals_unpublished = removals_unpublished_;
  stats.nodes = current_->nodes.size();
  stats.pods = current_->pods.size();
  return stats;
}

bool SnapshotSource::Ready() const { return Snapshot()->complete; }

std::vector<metrics_api::NodeMetrics> SnapshotSource::ListNodes() const {
  std::shared_ptr<const MetricsSnapshot> snapshot = Snapshot();
  std::vector<metrics_api::NodeMetrics> nodes;
  nodes.reserve(snapshot->nodes.size());
  for (const auto& node : snapshot->nodes) nodes.push_back(*node);
  return nodes;
}

std::optional<metrics_api::NodeMetrics> SnapshotSource::GetNode(std::string_view name) const {
  std::shared_ptr<const MetricsSnapshot> snapshot = Snapshot();
  std::optional<size_t> index = FindNode(*snapshot, name);
  if (!index) return std::nullopt;
  return *snapshot->nodes[*index];
}

std::vector<metrics_api::PodMetrics> SnapshotSource::ListPods(
    std::string_view namespace_name) const {
  std::shared_ptr<const MetricsSnapshot> snapshot = Snapshot();
  const auto [first, last] = snapshot->NamespaceRange(namespace_name);
  std::vector<metrics_api::PodMetrics> pods;
  pods.reserve(last - first);
  for (size_t i = first; i < last; ++i) pods.push_back(*snapshot->pods[i]);
  return pods;
}

std::optional<metrics_api::PodMetrics> SnapshotSource::GetPod(std::string_view namespace_name,
                                                              std::string_view name) const {
  std::shared_ptr<const MetricsSnapshot> snapshot = Snapshot();
  std::optional<size_t> index = snapshot->FindPod(namespace_name, name);
  if (!index) return std::nullopt;
  return *snapshot->pods[*index];
}

}  // namespace kubestat::aggregator
