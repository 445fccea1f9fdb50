#include "kubestat/aggregator/query/watch_hub.h"

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <tuple>
#include <utility>

#include "kubestat/metrics_api/proto.h"

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
    : source_(source), options_(options), state_(std::make_shared<State>()) {}

WatchHub::~WatchHub() { Shutdown(); }

namespace {

void Build(const metrics_api::NodeMetrics& view, v1::NodeMetrics* proto) {
  *proto = metrics_api::ToProto(view);
}
void Build(const metrics_api::PodMetrics& view, v1::PodMetrics* proto) {
  *proto = metrics_api::ToProto(view);
}

// Sort keys: a node's name; a pod's (namespace, name).
std::tuple<std::string_view, std::string_view> KeyOf(const metrics_api::NodeMetrics& node) {
  return {std::string_view(), node.name};
}
std::tuple<std::string_view, std::string_view> KeyOf(const metrics_api::PodMetrics& pod) {
  return {pod.namespace_name, pod.name};
}

void SetKey(const metrics_api::NodeMetrics& node, WatchChange* change) { change->name = node.name; }
void SetKey(const metrics_api::PodMetrics& pod, WatchChange* change) {
  change->is_pod = true;
  change->namespace_name = pod.namespace_name;
  change->name = pod.name;
}
void SetObject(std::shared_ptr<const WatchedNode> node, WatchChange* change) {
  change->node = std::move(node);
}
void SetObject(std::shared_ptr<const WatchedPod> pod, WatchChange* change) {
  change->pod = std::move(pod);
}

// Whether two views of one object are equal, their usage compared first: a view read after a
// newer scrape differs there (its endtimes), so it is told apart without comparing labels.
bool SameView(const metrics_api::NodeMetrics& a, const metrics_api::NodeMetrics& b) {
  return a.machine == b.machine && a == b;
}
bool SameView(const metrics_api::PodMetrics& a, const metrics_api::PodMetrics& b) {
  return a.pod == b.pod && a == b;
}

// One kind's diff: `held` (the previous round's objects) against `views` (this round's), both
// sorted by key. Appends the objects now held to `next`, the changes, in key order, to
// `changes` (with `changes` null, only counts them in `*changed`), and the held objects no
// longer held to `retired`. An object whose view is the one held (its node was not read
// again) costs a pointer comparison: the two lists are walked side by side, so its key is not
// even read. One whose view is equal to the one held keeps its watched form, and so its proto
// if a watcher already built it.
// A snapshot's node is a shared_ptr, its pod a reference to the shared_ptr its part holds.
template <typename View>
const std::shared_ptr<const View>& Owner(const std::shared_ptr<const View>& view) {
  return view;
}
template <typename View>
const std::shared_ptr<const View>& Owner(const metrics_api::SharedRef<View>& view) {
  return view.shared();
}

template <typename View, typename Proto, typename ViewRef>
void Diff(const std::vector<std::shared_ptr<const Watched<View, Proto>>>& held,
          const std::vector<ViewRef>& views,
          std::vector<std::shared_ptr<const Watched<View, Proto>>>* next,
          std::vector<WatchChange>* changes, size_t* changed,
          std::vector<std::shared_ptr<const void>>* retired) {
  next->reserve(views.size());
  auto old = held.begin();
  auto remove = [&](const std::shared_ptr<const Watched<View, Proto>>& gone) {
    ++*changed;
    if (changes != nullptr) {
      WatchChange& change = changes->emplace_back();
      change.kind = WatchChange::Kind::kRemove;
      SetKey(gone->view(), &change);
    }
    retired->push_back(gone);
  };
  for (const ViewRef& view : views) {
    // The held objects before this one are gone or matched already, so the very view held
    // can only be the next one.
    if (old != held.end() && (*old)->shared_view().get() == view.get()) {
      next->push_back(*old++);
      continue;
    }
    const auto key = KeyOf(*view);
    while (old != held.end() && KeyOf((*old)->view()) < key) remove(*old++);
    if (old != held.end() && KeyOf((*old)->view()) == key) {
      const auto& watched = *old++;
      if (SameView(watched->view(), *view)) {
        next->push_back(watched);
        continue;
      }
      retired->push_back(watched);
    }
    auto watched = std::make_shared<const Watched<View, Proto>>(Owner(view));
    ++*changed;
    if (changes != nullptr) {
      WatchChange& change = changes->emplace_back();
      SetKey(*view, &change);
      SetObject(watched, &change);
    }
    next->push_back(std::move(watched));
  }
  while (old != held.end()) remove(*old++);
}

template <typename View, typename Proto>
void AppendUpserts(const std::vector<std::shared_ptr<const Watched<View, Proto>>>& objects,
                   std::vector<WatchChange>* changes) {
  for (const auto& watched : objects) {
    WatchChange& change = changes->emplace_back();
    SetKey(watched->view(), &change);
    SetObject(watched, &change);
  }
}

}  // namespace

template <typename View, typename Proto>
const std::string& Watched<View, Proto>::wire() const {
  std::call_once(built_, [this] {
    Proto proto;
    Build(*view_, &proto);
    wire_ = proto.SerializeAsString();
  });
  return wire_;
}

template <typename View, typename Proto>
Proto Watched<View, Proto>::proto() const {
  Proto proto;
  Build(*view_, &proto);
  return proto;
}

template class Watched<metrics_api::NodeMetrics, v1::NodeMetrics>;
template class Watched<metrics_api::PodMetrics, v1::PodMetrics>;

std::vector<std::shared_ptr<const void>> WatchHub::OnRound(Timestamp tick) {
  std::lock_guard round_lock(round_mu_);
  // Read the source without holding mu_, so Subscribe and the readers never wait for it.
  const std::shared_ptr<const MetricsSnapshot> cut = source_->Snapshot();
  std::shared_ptr<const State> held;
  bool watched = false;
  {
    std::lock_guard lock(mu_);
    held = state_;
    watched = !subscriptions_.empty();
  }
  // With nobody watching, the changes are only counted (they take revisions all the same),
  // not built: at 150,000 pods that is most of a round's work here. A watcher that subscribes
  // meanwhile gets them: the diff is made again, with the changes, below.
  std::shared_ptr<State> next;
  std::vector<WatchChange> changes;
  std::vector<std::shared_ptr<const void>> retired;
  size_t changed = 0;
  auto diff = [&](bool build) {
    next = std::make_shared<State>();
    changes.clear();
    retired.clear();
    changed = 0;
    std::vector<WatchChange>* out = build ? &changes : nullptr;
    Diff(held->nodes, cut->nodes, &next->nodes, out, &changed, &retired);
    Diff(held->pods, cut->pods, &next->pods, out, &changed, &retired);
  };
  diff(watched);

  std::unique_lock lock(mu_);
  if (!watched && !subscriptions_.empty()) {
    lock.unlock();
    diff(true);
    lock.lock();
  }
  if (changes.empty()) {
    revision_ += changed;
  } else {
    for (WatchChange& change : changes) change.revision = ++revision_;
  }
  last_tick_ = tick;
  state_ = std::move(next);
  ++stats_.rounds;
  stats_.changes += changed;
  stats_.nodes = state_->nodes.size();
  stats_.pods = state_->pods.size();
  if (changes.empty() || shut_down_) return retired;
  auto batch = std::make_shared<WatchBatch>();
  batch->tick = tick;
  batch->changes = std::move(changes);
  std::shared_ptr<const WatchBatch> shared = std::move(batch);
  for (WatchSubscription* subscription : subscriptions_) {
    if (!subscription->Push(shared, options_.max_pending_rounds)) ++stats_.watchers_overflowed;
  }
  return retired;
}

absl::StatusOr<std::unique_ptr<WatchSubscription>> WatchHub::Subscribe() {
  std::lock_guard lock(mu_);
  if (shut_down_) return absl::UnavailableError("the watch feed is shutting down");
  auto snapshot = std::make_shared<WatchBatch>();
  snapshot->snapshot = true;
  snapshot->tick = last_tick_;
  snapshot->changes.reserve(state_->nodes.size() + state_->pods.size());
  AppendUpserts(state_->nodes, &snapshot->changes);
  AppendUpserts(state_->pods, &snapshot->changes);
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
