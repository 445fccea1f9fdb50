#include "kubestat/aggregator/watch_hub.h"

#include <algorithm>
#include <cstddef>
#include <tuple>
#include <utility>

#include "kubestat/aggregator/grpc_convert.h"

namespace kubestat::aggregator {

absl::Status WatchHubOptions::Validate() const {
  if (max_pending_rounds < 1) {
    return absl::InvalidArgumentError("max_pending_rounds must be at least 1");
  }
  return absl::OkStatus();
}

WatchSubscription::~WatchSubscription() { hub_->Unsubscribe(this); }

WatchSubscription::Result WatchSubscription::Next(std::shared_ptr<const WatchBatch>* batch,
                                                  Duration timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [this] { return overflowed_ || closed_ || !queue_.empty(); });
  // Overflow wins over queued batches: the reader would only fall further behind.
  if (overflowed_) return Result::kOverflow;
  if (!queue_.empty()) {
    *batch = std::move(queue_.front());
    queue_.pop_front();
    return Result::kBatch;
  }
  return closed_ ? Result::kClosed : Result::kTimeout;
}

bool WatchSubscription::Push(std::shared_ptr<const WatchBatch> batch, size_t limit) {
  bool overflowed = false;
  {
    std::lock_guard lock(mu_);
    if (overflowed_ || closed_) return true;
    if (queue_.size() >= limit) {
      overflowed_ = overflowed = true;
      queue_.clear();  // frees the batches now rather than when the reader wakes
    } else {
      queue_.push_back(std::move(batch));
    }
  }
  cv_.notify_all();
  return !overflowed;
}

void WatchSubscription::Close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

WatchHub::WatchHub(const MetricsSource* source, WatchHubOptions options)
    : source_(source), options_(options), state_(std::make_shared<WatchBatch>()) {}

WatchHub::~WatchHub() { Shutdown(); }

void WatchHub::OnRound(Timestamp tick) {
  std::lock_guard round_lock(round_mu_);
  // Read the source without holding mu_, so Subscribe and the readers never wait for it.
  const std::shared_ptr<const MetricsSnapshot> cut = source_->Snapshot();

  std::vector<WatchChange> changes;
  std::map<std::string, std::shared_ptr<const WatchedNode>> next_nodes;
  for (const std::shared_ptr<const NodeView>& view : cut->nodes) {
    std::string name = view->name;
    auto it = nodes_.find(name);
    if (it != nodes_.end() && (it->second->view == view || SameNode(*it->second->view, *view))) {
      next_nodes.emplace(std::move(name), it->second);
      continue;
    }
    auto node = std::make_shared<WatchedNode>();
    node->proto = NodeToProto(*view);
    node->view = view;
    WatchChange& change = changes.emplace_back();
    change.name = name;
    change.node = node;
    next_nodes.emplace(std::move(name), std::move(node));
  }
  for (const auto& [name, node] : nodes_) {
    if (next_nodes.count(name) > 0) continue;
    WatchChange& change = changes.emplace_back();
    change.kind = WatchChange::Kind::kRemove;
    change.name = name;
  }

  std::map<std::pair<std::string, std::string>, std::shared_ptr<const WatchedPod>> next_pods;
  size_t first_pod_change = changes.size();
  for (const std::shared_ptr<const PodView>& view : cut->pods) {
    std::pair<std::string, std::string> key(view->namespace_name, view->name);
    auto it = pods_.find(key);
    if (it != pods_.end() && (it->second->view == view || SamePod(*it->second->view, *view))) {
      next_pods.emplace(std::move(key), it->second);
      continue;
    }
    auto pod = std::make_shared<WatchedPod>();
    pod->proto = PodToProto(*view);
    pod->view = view;
    WatchChange& change = changes.emplace_back();
    change.is_pod = true;
    change.namespace_name = key.first;
    change.name = key.second;
    change.pod = pod;
    next_pods.emplace(std::move(key), std::move(pod));
  }
  for (const auto& [key, pod] : pods_) {
    if (next_pods.count(key) > 0) continue;
    WatchChange& change = changes.emplace_back();
    change.kind = WatchChange::Kind::kRemove;
    change.is_pod = true;
    change.namespace_name = key.first;
    change.name = key.second;
  }
  // Changes in key order within each kind, so a stream reads like a sorted list.
  auto by_key = [](const WatchChange& a, const WatchChange& b) {
    return std::tie(a.namespace_name, a.name) < std::tie(b.namespace_name, b.name);
  };
  std::sort(changes.begin(), changes.begin() + static_cast<ptrdiff_t>(first_pod_change), by_key);
  std::sort(changes.begin() + static_cast<ptrdiff_t>(first_pod_change), changes.end(), by_key);

  nodes_ = std::move(next_nodes);
  pods_ = std::move(next_pods);

  // The published state: every object as an upsert, for snapshots.
  auto state = std::make_shared<WatchBatch>();
  state->snapshot = true;
  state->tick = tick;
  state->changes.reserve(nodes_.size() + pods_.size());
  for (const auto& [name, node] : nodes_) {
    WatchChange& c = state->changes.emplace_back();
    c.name = name;
    c.node = node;
  }
  for (const auto& [key, pod] : pods_) {
    WatchChange& c = state->changes.emplace_back();
    c.is_pod = true;
    c.namespace_name = key.first;
    c.name = key.second;
    c.pod = pod;
  }

  std::lock_guard lock(mu_);
  for (WatchChange& change : changes) change.revision = ++revision_;
  last_tick_ = tick;
  state_ = std::move(state);
  ++stats_.rounds;
  stats_.changes += changes.size();
  stats_.nodes = nodes_.size();
  stats_.pods = pods_.size();
  if (changes.empty() || shut_down_) return;
  auto batch = std::make_shared<WatchBatch>();
  batch->tick = tick;
  batch->changes = std::move(changes);
  std::shared_ptr<const WatchBatch> shared = std::move(batch);
  for (WatchSubscription* subscription : subscriptions_) {
    if (!subscription->Push(shared, options_.max_pending_rounds)) ++stats_.watchers_overflowed;
  }
}

absl::StatusOr<std::unique_ptr<WatchSubscription>> WatchHub::Subscribe() {
  std::lock_guard lock(mu_);
  if (shut_down_) return absl::UnavailableError("the watch feed is shutting down");
  auto snapshot = std::make_shared<WatchBatch>(*state_);
  snapshot->snapshot = true;
  for (WatchChange& change : snapshot->changes) change.revision = ++revision_;
  snapshot->snapshot_end_revision = ++revision_;
  std::unique_ptr<WatchSubscription> subscription(new WatchSubscription(this));
  subscription->queue_.push_back(std::move(snapshot));
  subscriptions_.push_back(subscription.get());
  return subscription;
}

void WatchHub::Unsubscribe(WatchSubscription* subscription) {
  std::lock_guard lock(mu_);
  auto it = std::find(subscriptions_.begin(), subscriptions_.end(), subscription);
  if (it != subscriptions_.end()) subscriptions_.erase(it);
}

void WatchHub::Shutdown() {
  std::lock_guard lock(mu_);
  shut_down_ = true;
  for (WatchSubscription* subscription : subscriptions_) subscription->Close();
}

uint64_t WatchHub::revision() const {
  std::lock_guard lock(mu_);
  return revision_;
}

Timestamp WatchHub::last_tick() const {
  std::lock_guard lock(mu_);
  return last_tick_;
}

WatchHubStats WatchHub::Stats() const {
  std::lock_guard lock(mu_);
  WatchHubStats stats = stats_;
  stats.revision = revision_;
  stats.watchers = subscriptions_.size();
  return stats;
}

}  // namespace kubestat::aggregator
