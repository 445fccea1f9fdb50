// PushQueue: the writes the bridge still owes the metrics API server, keeping only the
// newest per object, so an outage of any length costs at most one pending item per object.
//
// Keys are (resource, namespace, name) (ObjectKey). A Put or Delete replaces what is
// pending for its key: a put by a newer put or by a delete, a delete by a put. A replaced
// item keeps its place in the queue (the order is that of each key's oldest pending
// write), so a key that changes every round is not starved.
//
// Pushers Take a batch: up to `max_items` items whose rendered sizes add up to at
// most `max_bytes` (one item larger than that alone is still taken, alone). Keys in a taken
// batch are "in flight" until the batch is settled, and a newer write for an in-flight key
// waits in the queue meanwhile, so two pushers never race two versions of one object. Every
// taken item must be settled once: Complete (acknowledged, or refused for good) or Return
// (a retryable failure: it goes back to the front of the queue, unless a newer write for its
// key arrived meanwhile, which then stands for both).
//
// Sequence numbers: every Put and Delete gets the next one (from 1). CompletedThrough(s)
// tells whether every write numbered <= s has been settled by Complete, either itself or by
// a newer write for its key: what "the first snapshot is pushed" means.
//
// Metrics (when a registry is given): kubestat_bridge_queue_depth (items waiting, in flight
// ones not counted), kubestat_bridge_queue_in_flight (items taken and not yet settled).
//
// Ownership: borrows the registry. Thread-safety: every method may be called from any
// thread; Take blocks its caller.
#ifndef KUBESTAT_BRIDGE_PUSH_QUEUE_H_
#define KUBESTAT_BRIDGE_PUSH_QUEUE_H_

#include <compare>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/base/attributes.h"
#include "kubestat/core/clock.h"
#include "kubestat/metrics_api/objects.h"
#include "kubestat/metrics_api/write_batch.h"

namespace prometheus {
class Gauge;
class Registry;
}  // namespace prometheus

namespace kubestat::bridge {

// The identity of one metrics object in the API server.
struct ObjectKey {
  metrics_api::Resource resource = metrics_api::Resource::kNodes;
  std::string namespace_name;  // pods only
  std::string name;

  auto operator<=>(const ObjectKey&) const = default;
};

// "node node-1", "pod shop/web-1", for logs.
std::string DescribeKey(const ObjectKey& key);
// The key a write is for.
ObjectKey KeyOf(const metrics_api::WriteItem& item);
// The newest window endtime of the object (machine or pod windows and every container's);
// the epoch when it has no windows.
Timestamp NewestEndtime(const metrics_api::NodeMetrics& node);
Timestamp NewestEndtime(const metrics_api::PodMetrics& pod);

// One pending or taken write. Only its rendered form is kept: an outage that leaves one
// item per object pending costs one rendering per object, not the object too.
struct PushItem {
  ObjectKey key;
  metrics_api::WriteItem::Op op = metrics_api::WriteItem::Op::kPut;
  // The write item as a bulk body carries it (RenderWriteItem), made once when the write is
  // queued: a bulk body joins these (JoinWriteBatch), so no object is rendered twice.
  std::string rendered;
  // Puts: where the object's own JSON starts in `rendered` (RenderPutItem), and its length:
  // the body of a put mode PUT.
  size_t object_at = 0;
  size_t object_bytes = 0;
  // rendered.size(): what the item adds to a bulk body (without the comma).
  size_t bytes = 0;
  // Puts: NewestEndtime of the object (the start of the end-to-end lag). Deletes: epoch.
  Timestamp newest_endtime;
  // The write's sequence number.
  uint64_t sequence = 0;

  // The object's metrics/v1alpha1 JSON (puts; empty for deletes).
  std::string_view object_json() const ABSL_ATTRIBUTE_LIFETIME_BOUND {
    return std::string_view(rendered).substr(object_at, object_bytes);
  }
};

class PushQueue {
 public:
  // `registry` may be null (no metrics).
  explicit PushQueue(prometheus::Registry* registry = nullptr);
  PushQueue(const PushQueue&) = delete;
  PushQueue& operator=(const PushQueue&) = delete;

  // Enqueue a put of the object, or a delete of `key`; return the write's sequence number.
  uint64_t Put(metrics_api::NodeMetrics node);
  uint64_t Put(metrics_api::PodMetrics pod);
  uint64_t Delete(ObjectKey key);

  // A batch (see the file comment), waiting until one can be taken. Empty only when `stop`
  // was requested. max_items >= 1.
  std::vector<PushItem> Take(size_t max_items, size_t max_bytes, const std::stop_token& stop);
  // The same without waiting: empty when nothing can be taken now.
  std::vector<PushItem> TryTake(size_t max_items, size_t max_bytes);

  // Settles taken items (see the file comment).
  void Complete(const std::vector<PushItem>& items);
  void Return(std::vector<PushItem> items);

  // Items waiting (not in flight).
  size_t depth() const;
  // Items taken and not settled.
  size_t in_flight() const;
  // The sequence number of the latest Put or Delete; 0 before the first.
  uint64_t last_sequence() const;
  // Whether every write numbered <= `sequence` is settled by Complete (see the file comment).
  bool CompletedThrough(uint64_t sequence) const;

 private:
  struct Pending {
    PushItem item;
    uint64_t oldest = 0;  // the oldest write this entry stands for
  };
  struct InFlight {
    uint64_t sequence = 0;
    uint64_t oldest = 0;
  };

  // Takes the rendered item and its key; `write` is not kept.
  uint64_t Enqueue(PushItem item, const metrics_api::WriteItem& write);
  std::vector<PushItem> TakeLocked(size_t max_items, size_t max_bytes);
  bool CanTakeLocked() const;
  void ForgetOutstandingLocked(uint64_t oldest);
  void UpdateGaugesLocked();

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::list<ObjectKey> order_;
  std::map<ObjectKey, Pending> pending_;
  std::map<ObjectKey, InFlight> in_flight_;
  std::multiset<uint64_t> outstanding_;  // `oldest` of every pending and in-flight entry
  uint64_t last_sequence_ = 0;
  prometheus::Gauge* depth_gauge_ = nullptr;
  prometheus::Gauge* in_flight_gauge_ = nullptr;
};

}  // namespace kubestat::bridge

#endif  // KUBESTAT_BRIDGE_PUSH_QUEUE_H_
