// ObjectStore: where kubestat-apiserver keeps the newest NodeMetrics and PodMetrics, behind
// one interface with two implementations (in memory: memory_store.h; etcd v3: etcd_store.h).
//
// Revisions: the store keeps one revision counter for all objects. Every successful Apply()
// (a batch of writes, applied all or nothing) moves it up by exactly one, and every object
// that batch wrote or deleted carries that revision as its resource_version, as etcd's
// mod_revision does. (EtcdStore commits a batch of puts and deletes-if-present larger than
// etcd's --max-txn-ops in several steps, each its own revision: etcd_store.h.) resourceVersion in
// the API is this number in decimal.
//
// Watches: Watch(kind, after, callback) delivers every event of that kind with a revision
// above `after`, in revision order (events of one batch in the batch's order): first the
// kept history, then each new event as its batch commits. An `after` older than the oldest
// revision the store still remembers is OutOfRange, "too old resource version: <after>
// (<oldest>)", which the API answers 410 Expired; the client then lists again.
//
// Reads at a resource version: GetAt and ListAt take kube-apiserver's resourceVersion and
// resourceVersionMatch (ReadVersion): the newest state (a consistent read, as Get and List),
// any state the store holds at once, a state not older than a revision, or a list at exactly
// a revision. A revision the store has not reached is DeadlineExceeded carrying a 504 Timeout
// ApiError "Too large resource version: <wanted>, current: <current>" (TooLargeResourceVersion);
// an exact revision the store no longer holds is OutOfRange (410 Expired).
//
// TTL: ExpireOlderThan(cutoff) deletes (in one batch, one revision) every object whose last
// write was before `cutoff`, so watchers see DELETED for objects nobody refreshes.
//
// Errors: Apply is all or nothing: the first op that cannot be applied fails the batch with
// AlreadyExists (kCreate of a present key) or NotFound (kDelete of an absent key), naming
// the op's index and key; nothing of the batch is stored. A store that cannot reach its
// back end answers Unavailable.
//
// Thread-safety: every method is safe from any thread. Watch callbacks run on the thread that
// committed the batch (or, for history, on the thread calling Watch), or on a delivery thread
// of the store's own (EtcdStore), while the store serializes deliveries, so each
// subscription sees its events one at a time and in order; a callback must not block and
// must not call back into the store.
#ifndef KUBESTAT_APISERVER_OBJECT_STORE_H_
#define KUBESTAT_APISERVER_OBJECT_STORE_H_

#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/metrics_api/objects.h"

namespace kubestat::apiserver {

enum class ObjectKind { kNode, kPod };

// "nodes" / "pods".
std::string_view ObjectKindName(ObjectKind kind);

struct ObjectKey {
  ObjectKind kind = ObjectKind::kNode;
  std::string namespace_name;  // pods only; "" for nodes
  std::string name;

  // Ordered by kind, then namespace, then name (the order of lists).
  friend auto operator<=>(const ObjectKey&, const ObjectKey&) = default;
  friend bool operator==(const ObjectKey&, const ObjectKey&) = default;
};

// "nodes/<name>" or "pods/<namespace>/<name>", for messages.
std::string ObjectKeyString(const ObjectKey& key);

// One stored object. Exactly one of node and pod is set, as key.kind says, and its name
// (and namespace) equal the key's.
struct StoredObject {
  ObjectKey key;
  uint64_t resource_version = 0;  // the revision of the batch that wrote (or deleted) it
  Timestamp written;              // when that batch was applied (the store's clock)
  std::shared_ptr<const metrics_api::NodeMetrics> node;
  std::shared_ptr<const metrics_api::PodMetrics> pod;
};

struct WriteOp {
  enum class Type {
    kPut,              // create or replace
    kCreate,           // create; AlreadyExists when the key is present
    kDelete,           // delete; NotFound when the key is absent
    kDeleteIfPresent,  // delete; nothing when absent (no event)
  };
  Type type = Type::kPut;
  ObjectKey key;
  // kPut and kCreate: the object (node for kNode keys, pod for kPod keys).
  std::shared_ptr<const metrics_api::NodeMetrics> node;
  std::shared_ptr<const metrics_api::PodMetrics> pod;
};

enum class EventType { kAdded, kModified, kDeleted };

// "ADDED" / "MODIFIED" / "DELETED".
std::string_view EventTypeName(EventType type);

struct StoreEvent {
  EventType type = EventType::kAdded;
  // The object as stored (kAdded, kModified) or as it was when deleted (kDeleted), with
  // resource_version set to the event's revision.
  StoredObject object;
  // Whether this is the last event of its batch among the events of its kind: a watcher
  // of one kind that has seen it has seen the whole batch (watch_cache.h reads this).
  bool last_of_batch = true;
};

struct WriteResult {
  uint64_t revision = 0;  // the batch's revision (unchanged when it changed nothing)
  // One per op, in order: the object as stored, or as deleted; empty (no node, no pod) for
  // a kDeleteIfPresent of an absent key.
  std::vector<StoredObject> objects;
  // One per op, in order: whether a kPut or kCreate made its key (absent before the op, as
  // the earlier ops of the batch left it), so a create-or-replace answers 201 or 200 without
  // a read first; false for deletes.
  std::vector<bool> created;
};

// Which state a read may answer with: kube-apiserver's resourceVersion and
// resourceVersionMatch of a GET or LIST.
struct ReadVersion {
  enum class Match {
    kLatest,        // resourceVersion unset: the newest state (a consistent read)
    kAny,           // resourceVersion=0: any state the store holds, without waiting
    kNotOlderThan,  // resourceVersion=N: a state at revision N or newer
    kExact,         // resourceVersion=N&resourceVersionMatch=Exact: the state at N (lists)
  };
  Match match = Match::kLatest;
  uint64_t revision = 0;  // kNotOlderThan and kExact
};

// DeadlineExceeded carrying kube-apiserver's 504 Timeout "Too large resource version: <wanted>,
// current: <current>" (cause ResourceVersionTooLarge, retry after 1 s).
absl::Status TooLargeResourceVersion(uint64_t wanted, uint64_t current);

// Whether a read taken at `revision` satisfies `version`: OK, TooLargeResourceVersion when it is
// older than asked, OutOfRange when an exact read is newer than asked (the store holds no older
// state).
absl::Status CheckReadRevision(const ReadVersion& version, uint64_t revision);

struct ListResult {
  uint64_t revision = 0;            // the store's revision when the list was taken
  std::vector<StoredObject> items;  // sorted by key
};

// A live watch; destroying it (or Cancel()) stops deliveries: once it returns, the callback
// is not running and will not run again.
class Subscription {
 public:
  virtual ~Subscription() = default;
  virtual void Cancel() = 0;
};

using WatchCallback = std::function<void(const StoreEvent& event)>;
// Told, at most once and on the delivering thread, that a subscription ended on its own: no
// event follows. OutOfRange when the store lost the history it needed to go on (its back end
// compacted while unreachable), Unavailable when the back end stayed unreachable; the watcher
// lists and watches again.
using WatchEndCallback = std::function<void(const absl::Status& why)>;

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // Applies `ops` in one step (see the file comment).
  [[nodiscard]] virtual absl::StatusOr<WriteResult> Apply(const std::vector<WriteOp>& ops) = 0;

  // The object at `key`; std::nullopt when absent.
  [[nodiscard]] virtual absl::StatusOr<std::optional<StoredObject>> Get(
      const ObjectKey& key) const = 0;

  // Every object of `kind` (of `namespace_name` only, for pods, when it is not empty), at
  // one revision.
  [[nodiscard]] virtual absl::StatusOr<ListResult> List(ObjectKind kind,
                                                        std::string_view namespace_name) const = 0;

  // Get at `version` (ReadVersion; kExact is read as kNotOlderThan, as kube-apiserver reads a
  // GET). The default, for a store that holds only its newest state, reads Revision() and then
  // Get, and answers TooLargeResourceVersion when that revision is below the one asked.
  [[nodiscard]] virtual absl::StatusOr<std::optional<StoredObject>> GetAt(
      const ObjectKey& key, const ReadVersion& version) const;

  // List at `version` (ReadVersion). The default, for a store that holds only its newest state,
  // lists and checks the list's revision (CheckReadRevision).
  [[nodiscard]] virtual absl::StatusOr<ListResult> ListAt(ObjectKind kind,
                                                          std::string_view namespace_name,
                                                          const ReadVersion& version) const;

  // How many objects of `kind` are stored (for gauges). The default lists them; stores
  // override it with a count that reads no object.
  [[nodiscard]] virtual absl::StatusOr<size_t> Count(ObjectKind kind) const {
    absl::StatusOr<ListResult> list = List(kind, "");
    if (!list.ok()) return list.status();
    return list->items.size();
  }

  // Delivers every event of `kind` with a revision above `after` (see the file comment).
  [[nodiscard]] virtual absl::StatusOr<std::unique_ptr<Subscription>> Watch(
      ObjectKind kind, uint64_t after, WatchCallback callback) = 0;

  // As Watch, and `on_end` (may be empty) learns when the subscription ends without a
  // Cancel. A store whose subscriptions end only when cancelled (MemoryStore) keeps this
  // default.
  [[nodiscard]] virtual absl::StatusOr<std::unique_ptr<Subscription>> WatchWithEnd(
      ObjectKind kind, uint64_t after, WatchCallback callback, const WatchEndCallback& /*on_end*/) {
    return Watch(kind, after, std::move(callback));
  }

  // Deletes every object last written before `cutoff`; the number deleted.
  [[nodiscard]] virtual absl::StatusOr<size_t> ExpireOlderThan(Timestamp cutoff) = 0;

  // The current revision (0 before any write).
  virtual uint64_t Revision() const = 0;
  // Whether the store answers (the back end is reachable); /readyz.
  virtual bool Ready() const = 0;
};

}  // namespace kubestat::apiserver

#endif  // KUBESTAT_APISERVER_OBJECT_STORE_H_
