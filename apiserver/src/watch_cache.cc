#include "kubestat/apiserver/watch_cache.h"

#include <algorithm>
#include <string>
#include <utility>

#include "kubestat/core/log.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/registry.h"

namespace kubestat::apiserver {
namespace {

size_t IndexOf(ObjectKind kind) { return kind == ObjectKind::kNode ? 0 : 1; }

}  // namespace

// The cache's counters, one per kind and label value, looked up once; all null without a
// registry (Increment then does nothing).
struct WatchCache::Metrics {
  struct PerKind {
    prometheus::Counter* loads_ok = nullptr;
    prometheus::Counter* loads_failed = nullptr;
    prometheus::Counter* events = nullptr;
    prometheus::Counter* reads_loading = nullptr;
    prometheus::Counter* reads_behind = nullptr;
  };
  PerKind kinds[2];

  explicit Metrics(prometheus::Registry* registry) {
    if (registry == nullptr) return;
    auto& loads = prometheus::BuildCounter()
                      .Name("kubestat_apiserver_watch_cache_loads_total")
                      .Help("Attempts of the watch cache to list and watch a kind, by result.")
                      .Register(*registry);
    auto& events = prometheus::BuildCounter()
                       .Name("kubestat_apiserver_watch_cache_events_total")
                       .Help("Events of the backing store replicated into the watch cache.")
                       .Register(*registry);
    auto& reads = prometheus::BuildCounter()
                      .Name("kubestat_apiserver_watch_cache_backing_reads_total")
                      .Help(
                          "Reads the watch cache passed to the backing store, by reason "
                          "(loading: the kind is not loaded; behind: the cache did not hold "
                          "this server's own latest write in time).")
                      .Register(*registry);
    for (ObjectKind kind : {ObjectKind::kNode, ObjectKind::kPod}) {
      const std::string resource(ObjectKindName(kind));
      PerKind& k = kinds[IndexOf(kind)];
      k.loads_ok = &loads.Add({{"resource", resource}, {"result", "ok"}});
      k.loads_failed = &loads.Add({{"resource", resource}, {"result", "failed"}});
      k.events = &events.Add({{"resource", resource}});
      k.reads_loading = &reads.Add({{"resource", resource}, {"reason", "loading"}});
      k.reads_behind = &reads.Add({{"resource", resource}, {"reason", "behind"}});
    }
  }
};

namespace {

void Increment(prometheus::Counter* counter) {
  if (counter != nullptr) counter->Increment();
}

}  // namespace

WatchCache::WatchCache(ObjectStore& backing, WatchCacheOptions options, const Clock& clock,
                       prometheus::Registry* registry)
    : backing_(backing), options_(options), clock_(clock) {
  metrics_ = std::make_unique<Metrics>(registry);
  for (ObjectKind kind : {ObjectKind::kNode, ObjectKind::kPod}) {
    Cache& cache = caches_[IndexOf(kind)];
    cache.kind = kind;
    cache.mirror =
        std::make_unique<MemoryStore>(MemoryStoreOptions{options_.history_events}, clock_);
  }
  loader_ = std::thread([this] { LoaderLoop(); });
}

WatchCache::~WatchCache() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  loader_cv_.notify_all();
  loader_.join();
  // The feeds go first (each waits for a delivery in progress), then the mirrors.
  for (Cache& cache : caches_) cache.feed.reset();
}

WatchCache::Cache& WatchCache::CacheOf(ObjectKind kind) const { return caches_[IndexOf(kind)]; }

absl::StatusOr<WriteResult> WatchCache::Apply(const std::vector<WriteOp>& ops) {
  absl::StatusOr<WriteResult> result = backing_.Apply(ops);
  if (!result.ok()) return result;
  // A written or deleted object carries the batch's revision; a kDeleteIfPresent of an
  // absent key carries 0 and makes no event to wait for.
  std::lock_guard lock(mu_);
  for (const StoredObject& object : result->objects) {
    if (object.resource_version == 0) continue;
    Cache& cache = CacheOf(object.key.kind);
    cache.written_through = std::max(cache.written_through, object.resource_version);
  }
  return result;
}

bool WatchCache::Fresh(Cache& cache, const ReadVersion& version) const {
  const Metrics::PerKind& counters = metrics_->kinds[IndexOf(cache.kind)];
  std::unique_lock lock(mu_);
  const bool any = version.match == ReadVersion::Match::kAny;
  const bool own_writes = version.match == ReadVersion::Match::kLatest;
  // The predicate is checked before any wait: a kind not loaded, or a read of any state,
  // returns at once.
  const bool caught_up = caught_up_.wait_for(lock, any ? Duration(0) : options_.read_wait, [&] {
    const uint64_t wanted = own_writes ? cache.written_through : version.revision;
    return !cache.loaded || any || cache.mirror->Revision() >= wanted;
  });
  if (!cache.loaded) {
    Increment(counters.reads_loading);
    return false;
  }
  if (!caught_up) Increment(counters.reads_behind);
  return caught_up;
}

absl::StatusOr<std::optional<StoredObject>> WatchCache::Get(const ObjectKey& key) const {
  return GetAt(key, ReadVersion{});
}

absl::StatusOr<ListResult> WatchCache::List(ObjectKind kind,
                                            std::string_view namespace_name) const {
  return ListAt(kind, namespace_name, ReadVersion{});
}

absl::StatusOr<std::optional<StoredObject>> WatchCache::GetAt(const ObjectKey& key,
                                                              const ReadVersion& version) const {
  // A GET reads kExact as kNotOlderThan (object_store.h).
  ReadVersion at_least = version;
  if (at_least.match == ReadVersion::Match::kExact) {
    at_least.match = ReadVersion::Match::kNotOlderThan;
  }
  Cache& cache = CacheOf(key.kind);
  if (Fresh(cache, at_least)) return cache.mirror->Get(key);
  return backing_.GetAt(key, at_least);
}

absl::StatusOr<ListResult> WatchCache::ListAt(ObjectKind kind, std::string_view namespace_name,
                                              const ReadVersion& version) const {
  Cache& cache = CacheOf(kind);
  if (version.match == ReadVersion::Match::kExact) {
    if (Loaded(kind)) {
      // The mirror's list is at its own revision: it answers only when that is the one asked.
      absl::StatusOr<ListResult> list = cache.mirror->ListAt(kind, namespace_name, version);
      if (list.ok()) return list;
    }
    return backing_.ListAt(kind, namespace_name, version);
  }
  if (Fresh(cache, version)) return cache.mirror->List(kind, namespace_name);
  return backing_.ListAt(kind, namespace_name, version);
}

absl::StatusOr<size_t> WatchCache::Count(ObjectKind kind) const {
  Cache& cache = CacheOf(kind);
  if (Fresh(cache, ReadVersion{})) return cache.mirror->Count(kind);
  return backing_.Count(kind);
}

absl::StatusOr<std::unique_ptr<Subscription>> WatchCache::Watch(ObjectKind kind, uint64_t after,
                                                                WatchCallback callback) {
  return WatchWithEnd(kind, after, std::move(callback), nullptr);
}

absl::StatusOr<std::unique_ptr<Subscription>> WatchCache::WatchWithEnd(
    ObjectKind kind, uint64_t after, WatchCallback callback, const WatchEndCallback& on_end) {
  Cache& cache = CacheOf(kind);
  bool loaded = false;
  {
    std::lock_guard lock(mu_);
    loaded = cache.loaded;
  }
  // A feed that ends between this check and the mirror's Watch ends this watch too: the
  // mirror ends its watches whenever its feed ends (FeedEnded) or it is loaded again.
  if (loaded) return cache.mirror->WatchWithEnd(kind, after, std::move(callback), on_end);
  return backing_.WatchWithEnd(kind, after, std::move(callback), on_end);
}

absl::StatusOr<size_t> WatchCache::ExpireOlderThan(Timestamp cutoff) {
  return backing_.ExpireOlderThan(cutoff);
}

uint64_t WatchCache::Revision() const { return backing_.Revision(); }

bool WatchCache::Ready() const { return backing_.Ready(); }

bool WatchCache::Loaded(ObjectKind kind) const {
  std::lock_guard lock(mu_);
  return CacheOf(kind).loaded;
}

void WatchCache::LoaderLoop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    bool failed = false;
    for (Cache& cache : caches_) {
      if (cache.loaded || stopping_) continue;
      lock.unlock();
      // The ended feed (if any) goes before the kind is listed again; its watch is over.
      cache.feed.reset();
      absl::Status status = Load(cache);
      const Metrics::PerKind& counters = metrics_->kinds[IndexOf(cache.kind)];
      if (status.ok()) {
        Increment(counters.loads_ok);
      } else {
        Increment(counters.loads_failed);
        KLOG(WARNING) << "watch cache: loading " << ObjectKindName(cache.kind) << ": "
                      << status.message();
        failed = true;
      }
      lock.lock();
    }
    if (failed) {
      loader_cv_.wait_for(lock, options_.retry_interval, [&] { return stopping_; });
    } else {
      loader_cv_.wait(lock, [&] { return stopping_ || !caches_[0].loaded || !caches_[1].loaded; });
    }
  }
}

absl::Status WatchCache::Load(Cache& cache) {
  absl::StatusOr<ListResult> list = backing_.List(cache.kind, "");
  if (!list.ok()) return list.status();
  uint64_t generation = 0;
  {
    std::lock_guard lock(mu_);
    generation = ++cache.generation;
  }
  const uint64_t revision = list->revision;
  cache.mirror->Reset(revision, std::move(list->items),
                      absl::UnavailableError("the watch cache is loading again"));
  absl::StatusOr<std::unique_ptr<Subscription>> feed = backing_.WatchWithEnd(
      cache.kind, revision,
      [this, &cache, generation](const StoreEvent& event) { Feed(cache, generation, event); },
      [this, &cache, generation](const absl::Status& why) { FeedEnded(cache, generation, why); });
  if (!feed.ok()) return feed.status();
  cache.feed = *std::move(feed);
  std::lock_guard lock(mu_);
  // A feed that ended before this point bumped the generation: the kind stays unloaded.
  if (cache.generation != generation) {
    return absl::UnavailableError("the backing store ended the watch as it began");
  }
  cache.loaded = true;
  KLOG(INFO) << "watch cache: " << ObjectKindName(cache.kind) << " loaded at revision " << revision;
  caught_up_.notify_all();
  return absl::OkStatus();
}

void WatchCache::Feed(Cache& cache, uint64_t generation, const StoreEvent& event) {
  {
    std::lock_guard lock(mu_);
    if (cache.generation != generation) return;
  }
  if (absl::Status status = cache.mirror->Replicate(event); !status.ok()) {
    KLOG(WARNING) << "watch cache: " << status.message();
    return;
  }
  Increment(metrics_->kinds[IndexOf(cache.kind)].events);
  if (event.last_of_batch) {
    // Taking the lock orders this notification after a reader's check of the revision.
    std::lock_guard lock(mu_);
    caught_up_.notify_all();
  }
}

void WatchCache::FeedEnded(Cache& cache, uint64_t generation, const absl::Status& why) {
  {
    std::lock_guard lock(mu_);
    if (cache.generation != generation) return;
    ++cache.generation;
    cache.loaded = false;
  }
  KLOG(WARNING) << "watch cache: the watch of " << ObjectKindName(cache.kind) << " ended ("
                << why.message() << "); loading it again";
  cache.mirror->EndWatches(why);
  caught_up_.notify_all();
  loader_cv_.notify_all();
}

}  // namespace kubestat::apiserver
