// WatchCache: an ObjectStore (object_store.h) that serves reads and watches from memory in
// front of another store (the backing store: EtcdStore), as kube-apiserver's watch cache
// does, so that N watchers and every list cost one watch of the backing store per kind
// instead of N watches and a full read each.
//
// Per kind (nodes, pods), a MemoryStore mirror (memory_store.h) is loaded with one List of
// the backing store and then follows one WatchWithEnd of the backing store from that list's
// revision: each event is replicated into the mirror (stored, kept as history, delivered to
// the mirror's watchers) on the backing store's delivering thread. Revisions are the backing
// store's, so a resourceVersion means the same in the cache, in the backing store and on
// every replica that shares it.
//
// Reads:
//   - Apply, ExpireOlderThan, Revision and Ready go to the backing store.
//   - Get, List and Count of a loaded kind are answered by its mirror, once the mirror holds every
//     batch of that kind this cache has written (read your own writes); a mirror that has
//     not caught up within `read_wait` (or a kind not loaded) is read from the backing store
//     instead, and counted. Writes of other replicas show up as fast as the backing store's
//     watch brings them (on loopback etcd, milliseconds).
//   - GetAt and ListAt (object_store.h's ReadVersion, kube-apiserver's resourceVersion):
//     kLatest reads as Get and List do; kAny (resourceVersion=0) is the mirror's at once,
//     without waiting, whatever it holds (the backing store's while the kind is not loaded);
//     kNotOlderThan N is the mirror's once it reached revision N (waiting up to `read_wait`),
//     else the backing store's at N or newer (504 Too large resource version when even the
//     backing store has not reached N); kExact N is the mirror's when it holds revision N,
//     else the backing store's (etcd reads a past revision until it is compacted).
//   - Watch and WatchWithEnd of a loaded kind are the mirror's: the history it kept since it
//     was loaded (`history_events` per kind; an older `after` is OutOfRange, which the API
//     answers 410 Expired, and the client lists again), then live events. A kind not loaded
//     is watched on the backing store directly.
// When the backing store ends the cache's watch of a kind (it compacted past it, or stayed
// unreachable), every watch on that mirror ends with the same status (their on_end), the
// kind counts as not loaded, and a loader thread lists and watches it again, every
// `retry_interval` until it succeeds.
//
// Metrics (when a registry is given):
//   kubestat_apiserver_watch_cache_loads_total{resource,result}  list+watch attempts
//   kubestat_apiserver_watch_cache_events_total{resource}        events replicated
//   kubestat_apiserver_watch_cache_backing_reads_total{resource,reason}  reads the cache
//       passed to the backing store: "loading" (kind not loaded), "behind" (read_wait ran
//       out before the mirror held this cache's own latest write, or the revision a read
//       asked for)
//
// Ownership: borrows the backing store, the clock and the registry, which must outlive it;
// every Subscription it returned must be destroyed before it. Thread-safety: every method
// is safe from any thread; callbacks run as the mirror's (memory_store.h) do, on the
// backing store's delivering thread, and must not block.
#ifndef KUBESTAT_APISERVER_WATCH_CACHE_H_
#define KUBESTAT_APISERVER_WATCH_CACHE_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/apiserver/memory_store.h"
#include "kubestat/apiserver/object_store.h"
#include "kubestat/core/clock.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::apiserver {

struct WatchCacheOptions {
  // Events kept per kind for watches to resume from. Default: 100000
  size_t history_events = 100000;
  // How long a read waits for the mirror to hold this cache's own latest write of its kind
  // (or the revision a read asked for) before it reads the backing store. Default: 2s
  Duration read_wait = std::chrono::seconds(2);
  // Wait between attempts to load a kind that could not be listed or watched. Default: 1s
  Duration retry_interval = std::chrono::seconds(1);
};

class WatchCache final : public ObjectStore {
 public:
  // Starts the loader thread, which loads both kinds at once. `registry` may be null.
  WatchCache(ObjectStore& backing, WatchCacheOptions options, const Clock& clock,
             prometheus::Registry* registry);
  // Stops the loader and the watches of the backing store.
  ~WatchCache() override;

  WatchCache(const WatchCache&) = delete;
  WatchCache& operator=(const WatchCache&) = delete;

  [[nodiscard]] absl::StatusOr<WriteResult> Apply(const std::vector<WriteOp>& ops) override;
  [[nodiscard]] absl::StatusOr<std::optional<StoredObject>> Get(
      const ObjectKey& key) const override;
  [[nodiscard]] absl::StatusOr<ListResult> List(ObjectKind kind,
                                                std::string_view namespace_name) const override;
  [[nodiscard]] absl::StatusOr<std::optional<StoredObject>> GetAt(
      const ObjectKey& key, const ReadVersion& version) const override;
  [[nodiscard]] absl::StatusOr<ListResult> ListAt(ObjectKind kind, std::string_view namespace_name,
                                                  const ReadVersion& version) const override;
  [[nodiscard]] absl::StatusOr<size_t> Count(ObjectKind kind) const override;
  [[nodiscard]] absl::StatusOr<std::unique_ptr<Subscription>> Watch(
      ObjectKind kind, uint64_t after, WatchCallback callback) override;
  [[nodiscard]] absl::StatusOr<std::unique_ptr<Subscription>> WatchWithEnd(
      ObjectKind kind, uint64_t after, WatchCallback callback,
      const WatchEndCallback& on_end) override;
  [[nodiscard]] absl::StatusOr<size_t> ExpireOlderThan(Timestamp cutoff) override;
  uint64_t Revision() const override;
  bool Ready() const override;

  // Whether `kind` is loaded and following the backing store. For tests and health.
  bool Loaded(ObjectKind kind) const;

 private:
  struct Metrics;
  // One kind's mirror and its feed from the backing store.
  struct Cache {
    ObjectKind kind = ObjectKind::kNode;
    std::unique_ptr<MemoryStore> mirror;
    std::unique_ptr<Subscription> feed;  // the backing store's watch; loader thread only
    // Guarded by mu_.
    bool loaded = false;
    uint64_t generation = 0;       // of the current feed; an ended feed's events are ignored
    uint64_t written_through = 0;  // the newest batch of this kind this cache wrote
  };

  Cache& CacheOf(ObjectKind kind) const;
  // Whether reads of `cache` at `version` may be the mirror's: loaded, and (waiting up to
  // read_wait) caught up with this cache's own writes (kLatest) or with the revision asked
  // (kNotOlderThan); kAny does not wait. Counts a read passed to the backing store.
  bool Fresh(Cache& cache, const ReadVersion& version) const;
  void LoaderLoop();
  // Lists and watches `cache`'s kind; the error of the first step that failed.
  absl::Status Load(Cache& cache);
  void Feed(Cache& cache, uint64_t generation, const StoreEvent& event);
  void FeedEnded(Cache& cache, uint64_t generation, const absl::Status& why);

  ObjectStore& backing_;
  const WatchCacheOptions options_;
  const Clock& clock_;
  std::unique_ptr<Metrics> metrics_;  // never null
  mutable Cache caches_[2];

  mutable std::mutex mu_;
  mutable std::condition_variable caught_up_;  // a mirror moved, or a kind was unloaded
  std::condition_variable loader_cv_;          // a kind needs loading, or stopping
  bool stopping_ = false;                      // guarded by mu_
  std::thread loader_;
};

}  // namespace kubestat::apiserver

#endif  // KUBESTAT_APISERVER_WATCH_CACHE_H_
