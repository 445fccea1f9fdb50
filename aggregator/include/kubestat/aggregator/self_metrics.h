// StoreSelfMetrics: the ingest pipeline's, the store's and the query snapshot's figures as
// Prometheus metrics (kubestat_ingested_*, kubestat_store_*, kubestat_series,
// kubestat_window_memory_bytes, kubestat_store_memory_bytes, kubestat_heap_*_bytes,
// kubestat_rebuild_*, kubestat_query_snapshot_*, kubestat_publish_*).
//
// The pipeline and the store keep plain monotonic counters; Update() turns their growth
// since the previous call into counter increments and sets the gauges, so it may be called
// as often as wanted (the publisher calls it once per round).
//
// Ownership: registers its families in the registry, which must outlive it.
// Thread-safety: every method may be called from any thread.
#ifndef KUBESTAT_AGGREGATOR_SELF_METRICS_H_
#define KUBESTAT_AGGREGATOR_SELF_METRICS_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/aggregator/query/recommender.h"
#include "kubestat/aggregator/query/snapshot_source.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/heap.h"
#include "kubestat/core/time.h"
#include "kubestat/discovery/discovery.h"
#include "kubestat/storage/store.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::aggregator {

// Where the process's memory is, recounted now and then (each figure is a pass or a lock
// round over what it counts): the windows and the ingest pipeline's state, RocksDB's
// memtables, block cache and table indexes, and the C library allocator's blocks in use
// (all of the above and everything else: the query snapshot, watchers, discovery) and free.
// The allocator's figures are absent in a sanitizer's build. Before counting, the
// allocator's free pages are given back to the system (ReleaseFreeHeap), so the resident set
// read with the figures follows what is in use rather than the last peak.
struct MemoryFigures {
  size_t windows = 0;
  uint64_t store = 0;
  std::optional<HeapFigures> heap;
  uint64_t released = 0;             // resident bytes given back before counting
  Duration release_took{0};          // how long giving them back took
  std::optional<uint64_t> resident;  // the process's resident set, read after counting
};

// Gives the free pages back, then counts them now.
// `clock` times the release.
MemoryFigures CountMemory(const Ingestor& ingestor, const storage::Store& store,
                          const Clock& clock);

// What made the publisher publish.
enum class PublishTrigger { kRound, kPaced, kStart };

class StoreSelfMetrics {
 public:
  explicit StoreSelfMetrics(prometheus::Registry& registry);
  ~StoreSelfMetrics();
  StoreSelfMetrics(const StoreSelfMetrics&) = delete;
  StoreSelfMetrics& operator=(const StoreSelfMetrics&) = delete;

  // A publication starts (counted before the snapshot changes).
  void CountPublish(PublishTrigger trigger);
  // The last publish took `refresh` and holds `stats`.
  void ObserveSnapshot(Duration refresh, const SnapshotStats& stats);
  // A publication made a node's scrape visible `lag` after it was stored.
  void ObservePublishLag(Duration lag);
  // A whole publication (snapshot, watch changes, prepared answers) took `took`.
  void ObservePublishDuration(Duration took);
  // The pipeline's and store's counters now; `memory` when it was recounted.
  void Update(const IngestStats& ingest, const storage::StoreStats& store, uint64_t disk_bytes,
              const std::optional<MemoryFigures>& memory);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// RecommenderSelfMetrics: the recommender's cache (recommender.h) as Prometheus metrics:
// kubestat_recommendation_cache_hits_total, _misses_total (per container and resource of a
// request), _evictions_total, and the gauges kubestat_recommendation_cache_entries and
// _bytes. Update() takes the figures since start and may be called as often as wanted.
// Thread-safety: Update() may be called from any thread.
class RecommenderSelfMetrics {
 public:
  explicit RecommenderSelfMetrics(prometheus::Registry& registry);
  ~RecommenderSelfMetrics();
  RecommenderSelfMetrics(const RecommenderSelfMetrics&) = delete;
  RecommenderSelfMetrics& operator=(const RecommenderSelfMetrics&) = delete;

  void Update(const RecommenderCacheStats& stats);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// DiscoverySelfMetrics: the list+watch of the kube API (discovery.h, DiscoveryStats) as
// Prometheus metrics: kubestat_discovery_lists_total (first lists and relists),
// _relists_after_gone_total (a watch answered 410 Gone or "too large resource version": the
// API server no longer holds the resume point, as after an etcd compaction or its restart),
// _watches_total, _events_total, _errors_total and _bad_quantities_total. Update() takes the
// figures since start and may be called as often as wanted (the aggregator calls it once per
// round). Thread-safety: Update() may be called from any thread.
class DiscoverySelfMetrics {
 public:
  explicit DiscoverySelfMetrics(prometheus::Registry& registry);
  ~DiscoverySelfMetrics();
  DiscoverySelfMetrics(const DiscoverySelfMetrics&) = delete;
  DiscoverySelfMetrics& operator=(const DiscoverySelfMetrics&) = delete;

  void Update(const discovery::DiscoveryStats& stats);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_SELF_METRICS_H_
