// MemoryStore: the ObjectStore (object_store.h) kept in this process's memory, for a single
// kubestat-apiserver replica and for tests. Nothing survives a restart.
//
// Objects: a map sorted by ObjectKey. The metrics objects are held as shared_ptr<const ...>:
// Apply stores a copy of a written object whose metadata.resourceVersion is its revision
// (one copy per write), and Get, List, WriteResult and events then share that object.
//
// Apply: the ops are checked first, then applied in order against the store as the earlier
// ops of the same batch left it (a kCreate then a kDelete of one key in one batch is fine).
//   - InvalidArgument "op <i>: <key>: <why>": the key has no name, a node key has a
//     namespace or a pod key has none, or a kPut/kCreate does not carry exactly the object
//     its key's kind needs, with the key's name (and namespace).
//   - AlreadyExists "op <i>: <key> already exists" (kCreate of a present key).
//   - NotFound "op <i>: <key> not found" (kDelete of an absent key).
// On any error nothing of the batch is stored, the revision stays and no event is sent.
// A batch that changes nothing (no ops, or only kDeleteIfPresent of absent keys) keeps the
// revision and sends no event; its WriteResult::revision is the current revision.
// Events: kPut of an absent key and kCreate are ADDED, kPut of a present key MODIFIED,
// deletes DELETED. A deleted object (in its event and in WriteResult) is the object as it
// was, with resource_version and written set to the deleting batch's revision and time.
// The WriteResult entry of a kDeleteIfPresent of an absent key has the op's key,
// resource_version 0 and neither node nor pod.
//
// History and 410: the store keeps the newest events of every kind, at most
// MemoryStoreOptions::history_events of them, dropping the oldest whole batches first (so a
// batch is never kept in part; a single batch larger than the limit is not kept at all).
// The oldest revision it remembers, `oldest`, is the revision of the newest batch it has
// dropped (0 while none has been dropped): every event above `oldest` is still kept, and
// while any is kept the oldest kept event's revision is oldest + 1 (every revision is a
// batch with at least one event), as in Kubernetes' watch cache. Watch(kind, after):
//   - after < oldest: OutOfRange "too old resource version: <after> (<oldest>)";
//   - oldest <= after <= Revision(): the kept events above `after`, then the live ones; a
//     client that holds any revision it has seen resumes without missing an event as long
//     as that revision is still >= oldest, and after == Revision() is always accepted;
//   - after > Revision() (a revision from the future, as etcd accepts one): nothing until
//     the store's revision passes `after`, then the events above `after`.
// With history_events = 0 no event is kept, so `oldest` is always the current revision.
//
// Watch delivery: the replay of history runs on the thread calling Watch, with the store's
// write lock held, and the subscription is registered before that lock is released, so no
// batch can commit between the replay and the first live event (no gap, no duplicate).
// Live events are delivered on the committing thread while it still holds the write lock:
// deliveries of all subscriptions are serialized, in revision order. Callbacks must not
// block, throw, or call Apply, ExpireOlderThan or Watch (that would deadlock); Get, List,
// Revision and OldestRevision take only the read lock and may be called from a callback.
//
// Subscription::Cancel() (and its destructor) waits for a callback of that subscription in
// progress on another thread; once it returns, the callback is not running and will not run
// again. Cancel may also be called from inside a callback of any subscription of this store
// (on the delivering thread): it then only marks the subscription, and the callback is not
// called again. Cancel is idempotent. Every Subscription must be destroyed before its store.
//
// Mirroring another store (watch_cache.h): Reset replaces every object and the history as of a
// revision of the other store and ends every subscription (WatchWithEnd's on_end learns why);
// Replicate applies one event the other store committed, at that store's revision and with
// its written time, keeps it as history and delivers it as a batch of this store would be.
// A mirror's revisions are the other store's: increasing, not consecutive. A mirror is
// written only through these two (Apply and ExpireOlderThan would number batches of their
// own).
//
// Thread-safety: every method is safe from any thread. Readers (Get, List, Revision) share
// a read lock and are not held up by slow callbacks; writers (Apply, ExpireOlderThan) and
// Watch take the write lock, which serializes them and the deliveries.
// Ownership: borrows the clock, which must outlive the store.
#ifndef KUBESTAT_APISERVER_MEMORY_STORE_H_
#define KUBESTAT_APISERVER_MEMORY_STORE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/apiserver/object_store.h"
#include "kubestat/core/clock.h"

namespace kubestat::apiserver {

struct MemoryStoreOptions {
  // Events kept for watches to resume from (all kinds together); an `after` older than the
  // kept history is answered 410. 0 keeps none: watches start at the current revision or
  // later. Default: 100000
  size_t history_events = 100000;
};

class MemoryStore final : public ObjectStore {
 public:
  MemoryStore(MemoryStoreOptions options, const Clock& clock);
  ~MemoryStore() override;

  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  [[nodiscard]] absl::StatusOr<WriteResult> Apply(const std::vector<WriteOp>& ops) override;
  [[nodiscard]] absl::StatusOr<std::optional<StoredObject>> Get(
      const ObjectKey& key) const override;
  [[nodiscard]] absl::StatusOr<ListResult> List(ObjectKind kind,
                                                std::string_view namespace_name) const override;
  [[nodiscard]] absl::StatusOr<size_t> Count(ObjectKind kind) const override;
  [[nodiscard]] absl::StatusOr<std::unique_ptr<Subscription>> Watch(
      ObjectKind kind, uint64_t after, WatchCallback callback) override;
  // As Watch; `on_end` is told when Reset or EndWatches ends the subscription.
  [[nodiscard]] absl::StatusOr<std::unique_ptr<Subscription>> WatchWithEnd(
      ObjectKind kind, uint64_t after, WatchCallback callback,
      const WatchEndCallback& on_end) override;
  [[nodiscard]] absl::StatusOr<size_t> ExpireOlderThan(Timestamp cutoff) override;
  uint64_t Revision() const override;
  // Always true: memory is always reachable.
  bool Ready() const override;

  // The oldest revision a watch may start after (see the file comment). For tests and
  // metrics.
  uint64_t OldestRevision() const;

  // Mirroring (see the file comment). Reset: the store holds `objects` (any kinds, each
  // with its resource_version and written time) as of `revision`, keeps no history (a
  // watch may start after `revision` or later) and every subscription ends with `why`.
  void Reset(uint64_t revision, std::vector<StoredObject> objects, const absl::Status& why);
  // Ends every subscription with `why` (their on_end is called; nothing more is delivered).
  void EndWatches(const absl::Status& why);
  // Applies `event` at event.object.resource_version, which must be at least Revision()
  // (events of one batch share it): FailedPrecondition, and nothing changes, otherwise.
  // The object is stored, kept and delivered at once; Revision() (and the revision lists
  // report) becomes the event's with the last event of its batch (last_of_batch), so a
  // client that lists in the middle of a batch and watches from the list's revision gets
  // the whole batch (some of it perhaps again), never a part of it.
  [[nodiscard]] absl::Status Replicate(const StoreEvent& event);

 private:
  class WatchHandle;
  struct Watcher {
    ObjectKind kind = ObjectKind::kNode;
    uint64_t after = 0;
    WatchCallback callback;
    WatchEndCallback on_end;  // may be empty
    bool active = true;       // false once cancelled from inside a delivery or ended
  };

  class DeliveryScope;

  // Stores `events` as one batch at the next revision (setting each object's
  // resource_version and written), keeps them as history and delivers them. Needs write_mu_
  // held; `events` is not empty. Returns the batch's revision.
  uint64_t CommitLocked(std::vector<StoreEvent>& events);
  // Drops the inactive watchers (cancelled from inside a callback). Needs write_mu_ held.
  void PruneWatchersLocked();
  // Keeps `events` (one batch, already stored) as history, drops the oldest whole batches
  // past the limit and delivers them. Needs write_mu_ and not mu_.
  void KeepAndDeliverLocked(const std::vector<StoreEvent>& events);
  // Ends every active watcher with `why`. Needs write_mu_ held.
  void EndWatchersLocked(const absl::Status& why);
  void Cancel(uint64_t id);

  const MemoryStoreOptions options_;
  const Clock& clock_;

  // Serializes writers, Watch, Cancel and every delivery. Taken before mu_.
  std::mutex write_mu_;
  // The thread delivering events (holding write_mu_), or none; lets Cancel from inside a
  // callback know that it already holds write_mu_.
  std::atomic<std::thread::id> delivering_thread_;
  // Guarded by write_mu_.
  std::deque<StoreEvent> history_;  // ascending by revision
  uint64_t next_watcher_id_ = 1;
  std::map<uint64_t, Watcher> watchers_;

  // Guards objects_, revision_ and oldest_ for readers; they are written only with
  // write_mu_ held too, so a writer may read them with write_mu_ alone.
  mutable std::shared_mutex mu_;
  std::map<ObjectKey, StoredObject> objects_;
  uint64_t revision_ = 0;
  uint64_t oldest_ = 0;
};

}  // namespace kubestat::apiserver

#endif  // KUBESTAT_APISERVER_MEMORY_STORE_H_
