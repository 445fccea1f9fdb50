// WatchHub: the change feed behind the gRPC Watch stream.
//
// After every publication (each round's end, and while a round scrapes as the publisher's
// pacer allows; "round" below means one such publication) the aggregator calls OnRound(tick). The
// hub reads every node and pod from its MetricsSource's Snapshot() (shared views, not copies),
// compares each object with the one it held after the previous round and computes one diff for the
// round: an upsert for every new object and for every object whose windows (endtimes, statistics),
// labels or node changed, and a removal for every object that disappeared. Both lists are sorted,
// so the diff is one merge pass; an object whose view is the very one held (its node was not read
// again) costs a pointer comparison. The diff is built once and shared, read-only, by every
// watcher, so a round costs one comparison pass plus one queue push per watcher; a round that
// nobody watches only counts its changes (they take their revisions all the same). An object's
// proto form is built (serialized) when a watcher first sends it, once, so a round that nobody
// watches builds none.
//
// Revisions: one counter per hub, starting at 0. Each change of a round takes the next
// value (nodes by name first, then pods by namespace and name), so the changes a watcher
// sees carry strictly increasing revisions. Subscribe() reserves one revision per object of
// the snapshot plus one for its end, so a snapshot is ordered before every later change.
//
// Watchers: Subscribe() returns a subscription whose first batch is the snapshot of the
// hub's current state (that of the last round; empty before the first). Each subscription
// queues at most `max_pending_rounds` batches; a round that finds the queue full drops the
// subscription's queue and ends it as overflowed (Next() reports kOverflow) instead of
// waiting, so a slow reader never blocks the ingest or the other watchers. Shutdown() ends
// every subscription (Next() reports kClosed once the queue is drained) and refuses new
// ones.
//
// Selection (which of the changes a watcher wants, and whether an upsert is ADDED or
// MODIFIED for it) is the reader's business: see ListQuery in metrics_api/query.h and the
// Watch handler of AggregatorService.
//
// Ownership: borrows the MetricsSource, which must outlive the hub. Subscriptions may
// outlive the hub's Shutdown() but not the hub itself.
// Thread-safety: every method is safe to call from any thread. OnRound calls are
// serialized internally; the source is read outside the subscribers' locks.
#ifndef KUBESTAT_AGGREGATOR_QUERY_WATCH_HUB_H_
#define KUBESTAT_AGGREGATOR_QUERY_WATCH_HUB_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/aggregator/query/metrics_source.h"
#include "kubestat/core/clock.h"
#include "kubestat/v1/metrics.pb.h"

namespace kubestat::aggregator {

struct WatchHubOptions {
  // Batches (the snapshot, then one per publication: a few per scrape round) a subscription
  // may hold before its reader takes them; one more ends the subscription as overflowed.
  // At least 1. Default: 64
  size_t max_pending_rounds = 64;

  // InvalidArgument naming the field.
  [[nodiscard]] absl::Status Validate() const;
};

// An object as the hub holds it: the source's view (for selectors and comparison, shared
// with the source's snapshot) and its proto form with every window, serialized, built when
// a watcher first asks for it (a round with no watcher builds none) and then shared by every
// batch and watcher that refers to it. The serialized form, rather than the message, is what
// is kept: a pod's message is some sixty small allocations (about 7 KB), its wire form about
// one, and every object of the current round and of the batches not yet sent holds one.
// Thread-safe.
template <typename View, typename Proto>
class Watched {
 public:
  explicit Watched(std::shared_ptr<const View> view) : view_(std::move(view)) {}
  const View& view() const ABSL_ATTRIBUTE_LIFETIME_BOUND { return *view_; }
  const std::shared_ptr<const View>& shared_view() const ABSL_ATTRIBUTE_LIFETIME_BOUND {
    return view_;
  }
  // The proto form with every window, serialized; built once.
  const std::string& wire() const ABSL_ATTRIBUTE_LIFETIME_BOUND;
  // The proto form with every window, built anew at each call.
  Proto proto() const;

 private:
  std::shared_ptr<const View> view_;
  mutable std::once_flag built_;
  mutable std::string wire_;
};

using WatchedNode = Watched<metrics_api::NodeMetrics, v1::NodeMetrics>;
using WatchedPod = Watched<metrics_api::PodMetrics, v1::PodMetrics>;

// One change of a round. Exactly one of node / pod is set for an upsert; for a removal
// only the key (name, and namespace_name for pods) is set.
struct WatchChange {
  enum class Kind { kUpsert, kRemove };
  Kind kind = Kind::kUpsert;
  bool is_pod = false;
  uint64_t revision = 0;
  std::string namespace_name;  // pods only
  std::string name;
  std::shared_ptr<const WatchedNode> node;  // upserts of nodes
  std::shared_ptr<const WatchedPod> pod;    // upserts of pods
};

// What a subscription's reader receives: the snapshot (every object as an upsert, then the
// end at `snapshot_end_revision`) or the changes of one round.
struct WatchBatch {
  bool snapshot = false;
  Timestamp tick;  // the round's tick (for a snapshot: the last round's; epoch before any)
  std::vector<WatchChange> changes;
  uint64_t snapshot_end_revision = 0;  // snapshots only
};

// Counters for /metrics and tests.
struct WatchHubStats {
  uint64_t rounds = 0;               // OnRound calls
  uint64_t changes = 0;              // changes computed over all rounds
  uint64_t revision = 0;             // the newest revision handed out
  uint64_t watchers = 0;             // live subscriptions
  uint64_t watchers_overflowed = 0;  // subscriptions ended because their queue was full
  size_t nodes = 0;                  // objects held after the last round
  size_t pods = 0;
};

class WatchHub;

// One watcher's queue. Destroying it unsubscribes.
class WatchSubscription {
 public:
  enum class Result {
    kBatch,     // *batch holds the next batch
    kTimeout,   // nothing arrived within the timeout
    kOverflow,  // the reader fell too far behind; the subscription is over
    kClosed,    // the hub shut down and every queued batch was taken
  };

  ~WatchSubscription();
  WatchSubscription(const WatchSubscription&) = delete;
  WatchSubscription& operator=(const WatchSubscription&) = delete;

  // Takes the next batch, waiting up to `timeout` (the reader polls its own cancellation
  // between calls). Once kOverflow or kClosed is returned, every later call returns it too.
  Result Next(std::shared_ptr<const WatchBatch>* batch, Duration timeout);

 private:
  friend class WatchHub;
  explicit WatchSubscription(WatchHub* hub) : hub_(hub) {}
  // Called by the hub under its subscriber lock. False when the push overflowed.
  bool Push(std::shared_ptr<const WatchBatch> batch, size_t limit);
  void Close();

  WatchHub* hub_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<const WatchBatch>> queue_;
  bool overflowed_ = false;
  bool closed_ = false;
};

class WatchHub {
 public:
  // `options` must pass Validate().
  explicit WatchHub(const MetricsSource* source, WatchHubOptions options = {});
  ~WatchHub();
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  // Computes the diff against the previous round and queues it to every subscription. An
  // empty diff is still counted as a round but queues nothing. Never blocks on a reader.
  // Returns the objects the round replaced or removed: dropping the vector frees them (with
  // the views only they still hold) at once; a caller that wants to spread that cost keeps
  // them and drops them a few at a time.
  std::vector<std::shared_ptr<const void>> OnRound(Timestamp tick);

  // A new subscription whose first batch is the snapshot; Unavailable after Shutdown().
  [[nodiscard]] absl::StatusOr<std::unique_ptr<WatchSubscription>> Subscribe();

  // Ends every subscription and refuses new ones. Idempotent.
  void Shutdown();

  // The newest revision handed out and the tick of the last round (for list responses).
  uint64_t revision() const;
  Timestamp last_tick() const;
  WatchHubStats Stats() const;

 private:
  friend class WatchSubscription;
  void Unsubscribe(WatchSubscription* subscription);

  const MetricsSource* source_;
  const WatchHubOptions options_;

  // Every object held after a round: nodes by name, pods by (namespace, name).
  struct State {
    std::vector<std::shared_ptr<const WatchedNode>> nodes;
    std::vector<std::shared_ptr<const WatchedPod>> pods;
  };

  std::mutex round_mu_;  // serializes OnRound

  mutable std::mutex mu_;  // guards everything below; never held while reading the source
  uint64_t revision_ = 0;
  Timestamp last_tick_{};
  bool shut_down_ = false;
  std::vector<WatchSubscription*> subscriptions_;
  // The state as of the last round; Subscribe() turns it into a snapshot batch.
  std::shared_ptr<const State> state_;
  WatchHubStats stats_;
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_QUERY_WATCH_HUB_H_
