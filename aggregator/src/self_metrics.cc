#include "kubestat/aggregator/self_metrics.h"

#include <algorithm>
#include <mutex>
#include <string>

#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace kubestat::aggregator {

namespace {

prometheus::Counter& Counter(prometheus::Registry& r, const std::string& name,
                             const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
}
prometheus::Gauge& Gauge(prometheus::Registry& r, const std::string& name,
                         const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}
// Adds to `counter` the growth of a monotonic figure since `last`.
void Advance(prometheus::Counter& counter, uint64_t now, uint64_t& last) {
  if (now > last) counter.Increment(static_cast<double>(now - last));
  last = std::max(last, now);
}

}  // namespace

class StoreSelfMetrics::Impl {
 public:
  explicit Impl(prometheus::Registry& registry)
      : scrapes_(Counter(registry, "kubestat_ingested_scrapes_total",
                         "Node scrapes whose samples were stored and added to the windows")),
        rejected_(Counter(registry, "kubestat_ingest_rejected_scrapes_total",
                          "Node scrapes refused by the ingest pipeline (no node, no time, not "
                          "newer than the previous scrape of the node)")),
        store_errors_(Counter(registry, "kubestat_ingest_store_errors_total",
                              "Failed store reads or writes during ingest")),
        samples_(Counter(registry, "kubestat_ingested_samples_total", "Samples stored")),
        series_created_(Counter(registry, "kubestat_series_created_total", "Series created")),
        series_retired_(
            Counter(registry, "kubestat_series_retired_total", "Series of objects that left")),
        counter_resets_(Counter(registry, "kubestat_cpu_segment_restarts_total",
                                "Cumulative cpu counters that went backwards or restarted")),
        layout_reuses_(Counter(registry, "kubestat_ingest_layout_reuses_total",
                               "Scrapes ingested through the shape of the node's previous "
                               "scrape (same objects in the same order)")),
        batches_(Counter(registry, "kubestat_store_batches_total", "RocksDB write batches")),
        batch_errors_(
            Counter(registry, "kubestat_store_batch_errors_total", "Failed RocksDB write batches")),
        written_bytes_(
            Counter(registry, "kubestat_store_written_bytes_total", "Bytes of write batches")),
        write_seconds_(Counter(registry, "kubestat_store_write_seconds_total",
                               "Time spent writing batches; divide by "
                               "kubestat_store_batches_total for the mean write latency")),
        read_errors_(Counter(registry, "kubestat_store_read_errors_total",
                             "Failed reads and undecodable records")),
        low_space_refusals_(Counter(registry, "kubestat_store_low_space_refusals_total",
                                    "Write batches refused while the volume had less free space "
                                    "than --storage-min-free")),
        low_space_pauses_(Counter(registry, "kubestat_store_low_space_pauses_total",
                                  "Times store writes paused for lack of free space")),
        background_errors_(Counter(registry, "kubestat_store_background_errors_total",
                                   "RocksDB background errors (flush, compaction, WAL sync)")),
        recoveries_(Counter(registry, "kubestat_store_recoveries_total",
                            "RocksDB recoveries from a background error")),
        deferred_batches_(Counter(registry, "kubestat_store_deferred_batches_total",
                                  "Write batches kept in memory because the disk could not "
                                  "take them at once (written later unless lost)")),
        reopens_(Counter(registry, "kubestat_store_reopens_total",
                         "RocksDB reopened after a write it failed (a full disk)")),
        salvages_(Counter(registry, "kubestat_store_salvages_total",
                          "Times the store was rebuilt from what could be read after a read "
                          "found damage (the damaged files kept in a quarantine folder)")),
        salvage_lost_ranges_(Counter(registry, "kubestat_store_salvage_lost_ranges_total",
                                     "Unreadable key ranges the salvages left out (named in "
                                     "the log with their nodes and hours)")),
        damage_found_(Counter(registry, "kubestat_store_damage_found_total",
                              "Times a read or a compaction found damage in the store while "
                              "running (salvaged in the background)")),
        salvage_errors_(Counter(registry, "kubestat_store_salvage_errors_total",
                                "Salvages made while running that failed (retried later)")),
        orphaned_scrapes_(Counter(registry, "kubestat_store_orphaned_scrapes_total",
                                  "Stored scrapes that reads skipped because the scrape their "
                                  "blob builds on was lost (each read counts what it skipped)")),
        salvaging_(Gauge(registry, "kubestat_store_salvaging",
                         "1 while the store is being salvaged (writes wait in memory)")),
        backlog_written_(Counter(registry, "kubestat_store_backlog_written_batches_total",
                                 "Write batches kept in memory that were written later")),
        lost_batches_(Counter(registry, "kubestat_store_lost_batches_total",
                              "Write batches kept in memory that were dropped, never written, "
                              "because the backlog outgrew --storage-backlog")),
        lost_scrapes_(Counter(registry, "kubestat_store_lost_scrapes_total",
                              "Node scrapes in the dropped batches: history the store lacks")),
        backlog_batches_(Gauge(registry, "kubestat_store_backlog_batches",
                               "Write batches waiting in memory for the disk")),
        backlog_bytes_(Gauge(registry, "kubestat_store_backlog_bytes",
                             "Memory held by the writes waiting for the disk")),
        durable_(Gauge(registry, "kubestat_store_durable",
                       "1 while every accepted scrape is on disk (in RocksDB's log), 0 while "
                       "writes wait in memory")),
        wal_bytes_dropped_(Gauge(registry, "kubestat_store_wal_dropped_bytes",
                                 "Write-ahead log bytes RocksDB dropped when it replayed the log "
                                 "at open (writes lost in a crash)")),
        recovery_lost_scrapes_(
            Gauge(registry, "kubestat_store_recovery_lost_scrapes",
                  "Node scrapes acknowledged before the last stop that the store did not get "
                  "back at start (a cut or corrupt write-ahead log; nodes and times in the log)")),
        recovery_lost_samples_(
            Gauge(registry, "kubestat_store_recovery_lost_samples", "Samples of those scrapes")),
        recovery_lost_nodes_(
            Gauge(registry, "kubestat_store_recovery_lost_nodes", "Nodes those scrapes were of")),
        ack_marker_errors_(Counter(registry, "kubestat_store_ack_marker_errors_total",
                                   "Rewrites of the store's marker of acknowledged scrapes that "
                                   "failed (a loss in a crash meanwhile would go unseen)")),
        size_bytes_(Gauge(registry, "kubestat_store_size_bytes", "Bytes of the RocksDB directory")),
        max_write_seconds_(
            Gauge(registry, "kubestat_store_max_write_seconds", "Slowest write batch since start")),
        series_(Gauge(registry, "kubestat_series", "Series held in the windows")),
        window_bytes_(
            Gauge(registry, "kubestat_window_memory_bytes",
                  "Memory held by the windows and the ingest pipeline (recounted once a minute)")),
        store_memory_bytes_(Gauge(registry, "kubestat_store_memory_bytes",
                                  "Memory RocksDB holds: memtables, block cache, table indexes "
                                  "and filters (recounted once a minute)")),
        heap_in_use_bytes_(Gauge(registry, "kubestat_heap_in_use_bytes",
                                 "Bytes of the C library allocator's blocks in use, all data of "
                                 "the process (recounted once a minute)")),
        heap_free_bytes_(Gauge(registry, "kubestat_heap_free_bytes",
                               "Bytes the C library allocator holds free, resident or given "
                               "back to the system (recounted once a minute)")),
        heap_released_bytes_(Counter(registry, "kubestat_heap_released_bytes_total",
                                     "Resident bytes of the allocator's free pages given back "
                                     "to the system before each memory count")),
        heap_release_seconds_(Gauge(registry, "kubestat_heap_release_seconds",
                                    "Time the last release of the allocator's free pages took")),
        resident_bytes_(Gauge(registry, "kubestat_resident_memory_bytes",
                              "The process's resident set size, read with the memory figures "
                              "(recounted once a minute)")),
        rebuild_seconds_(Gauge(registry, "kubestat_rebuild_duration_seconds",
                               "Duration of the rebuild of the windows from the store at start")),
        unrestored_series_(Gauge(registry, "kubestat_rebuild_unrestored_series",
                                 "Series the rebuild at start could not restore from the store "
                                 "(each named in the log)")),
        rebuilt_series_(
            Gauge(registry, "kubestat_rebuilt_series", "Series restored from the store at start")),
        restores_after_loss_(Counter(registry, "kubestat_node_restores_after_store_loss_total",
                                     "Nodes whose windows were restored again from the store "
                                     "after it dropped writes it kept in memory")),
        snapshot_seconds_(Gauge(registry, "kubestat_query_snapshot_refresh_seconds",
                                "Time the last publish of the query snapshot took (assembling "
                                "the nodes read after their scrapes; at start, reading all)")),
        snapshot_objects_(prometheus::BuildGauge()
                              .Name("kubestat_query_snapshot_objects")
                              .Help("Objects in the query snapshot, by kind")
                              .Register(registry)),
        snapshot_nodes_(snapshot_objects_.Add({{"kind", "node"}})),
        snapshot_pods_(snapshot_objects_.Add({{"kind", "pod"}})),
        publishes_(prometheus::BuildCounter()
                       .Name("kubestat_query_snapshot_publishes_total")
                       .Help("Publications of the query snapshot and watch changes, by trigger: "
                             "a round's end (round), paced while a round scrapes (paced), the "
                             "rebuild at start (start)")
                       .Register(registry)),
        publishes_round_(publishes_.Add({{"trigger", "round"}})),
        publishes_paced_(publishes_.Add({{"trigger", "paced"}})),
        publishes_start_(publishes_.Add({{"trigger", "start"}})),
        publish_lag_(
            prometheus::BuildHistogram()
                .Name("kubestat_publish_lag_seconds")
                .Help("Time from a node's scrape being stored to the publication that "
                      "serves it to queries and gRPC watchers, per node scrape")
                .Register(registry)
                .Add({}, prometheus::Histogram::BucketBoundaries{0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5,
                                                                 2, 3, 5, 10, 30})),
        publish_duration_(
            prometheus::BuildHistogram()
                .Name("kubestat_publish_duration_seconds")
                .Help("Time a publication takes: the query snapshot, the watch changes and the "
                      "answers prepared for recent clients")
                .Register(registry)
                .Add({}, prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1,
                                                                 0.25, 0.5, 1, 2.5, 5})) {}

  void CountPublish(PublishTrigger trigger) {
    switch (trigger) {
      case PublishTrigger::kRound:
        publishes_round_.Increment();
        break;
      case PublishTrigger::kPaced:
        publishes_paced_.Increment();
        break;
      case PublishTrigger::kStart:
        publishes_start_.Increment();
        break;
    }
  }

  void ObserveSnapshot(Duration refresh, const SnapshotStats& stats) {
    snapshot_seconds_.Set(std::chrono::duration<double>(refresh).count());
    snapshot_nodes_.Set(static_cast<double>(stats.nodes));
    snapshot_pods_.Set(static_cast<double>(stats.pods));
  }

  void ObservePublishLag(Duration lag) { publish_lag_.Observe(Seconds(lag)); }
  void ObservePublishDuration(Duration took) { publish_duration_.Observe(Seconds(took)); }

  void Update(const IngestStats& ingest, const storage::StoreStats& store, uint64_t disk_bytes,
              const std::optional<MemoryFigures>& memory) {
    std::lock_guard<std::mutex> lock(mu_);
    Advance(scrapes_, ingest.scrapes, last_.scrapes);
    Advance(rejected_, ingest.scrapes_rejected, last_.scrapes_rejected);
    Advance(store_errors_, ingest.store_errors, last_.store_errors);
    Advance(samples_, ingest.samples, last_.samples);
    Advance(series_created_, ingest.series_created, last_.series_created);
    Advance(series_retired_, ingest.series_retired, last_.series_retired);
    Advance(counter_resets_, ingest.counter_resets, last_.counter_resets);
    Advance(layout_reuses_, ingest.layout_reuses, last_.layout_reuses);
    Advance(batches_, store.batches, last_store_.batches);
    Advance(batch_errors_, store.batch_errors, last_store_.batch_errors);
    Advance(written_bytes_, store.bytes_written, last_store_.bytes_written);
    Advance(read_errors_, store.read_errors, last_store_.read_errors);
    Advance(low_space_refusals_, store.low_space_refusals, last_store_.low_space_refusals);
    Advance(low_space_pauses_, store.low_space_pauses, last_store_.low_space_pauses);
    Advance(background_errors_, store.background_errors, last_store_.background_errors);
    Advance(recoveries_, store.recoveries, last_store_.recoveries);
    Advance(deferred_batches_, store.batches_deferred, last_store_.batches_deferred);
    Advance(backlog_written_, store.backlog_written, last_store_.backlog_written);
    Advance(reopens_, store.reopens, last_store_.reopens);
    Advance(salvages_, store.salvages, last_store_.salvages);
    Advance(salvage_lost_ranges_, store.salvage_lost_ranges, last_store_.salvage_lost_ranges);
    Advance(damage_found_, store.damage_found, last_store_.damage_found);
    Advance(salvage_errors_, store.salvage_errors, last_store_.salvage_errors);
    Advance(orphaned_scrapes_, store.orphaned_scrapes, last_store_.orphaned_scrapes);
    salvaging_.Set(store.salvaging ? 1 : 0);
    Advance(lost_batches_, store.batches_lost, last_store_.batches_lost);
    Advance(lost_scrapes_, store.scrapes_lost, last_store_.scrapes_lost);
    backlog_batches_.Set(static_cast<double>(store.backlog_batches));
    backlog_bytes_.Set(static_cast<double>(store.backlog_bytes));
    durable_.Set(store.backlog_batches == 0 ? 1 : 0);
    wal_bytes_dropped_.Set(static_cast<double>(store.wal_bytes_dropped));
    recovery_lost_scrapes_.Set(static_cast<double>(store.recovery_lost_scrapes));
    recovery_lost_samples_.Set(static_cast<double>(store.recovery_lost_samples));
    recovery_lost_nodes_.Set(static_cast<double>(store.recovery_lost_nodes));
    Advance(ack_marker_errors_, store.ack_marker_errors, last_store_.ack_marker_errors);
    if (store.write_nanos > last_store_.write_nanos) {
      write_seconds_.Increment(static_cast<double>(store.write_nanos - last_store_.write_nanos) /
                               1e9);
      last_store_.write_nanos = store.write_nanos;
    }
    size_bytes_.Set(static_cast<double>(disk_bytes));
    max_write_seconds_.Set(static_cast<double>(store.max_write_nanos) / 1e9);
    series_.Set(static_cast<double>(ingest.series_created - ingest.series_retired));
    if (memory) {
      window_bytes_.Set(static_cast<double>(memory->windows));
      store_memory_bytes_.Set(static_cast<double>(memory->store));
      if (memory->heap) {
        heap_in_use_bytes_.Set(static_cast<double>(memory->heap->in_use));
        heap_free_bytes_.Set(static_cast<double>(memory->heap->free));
      }
      heap_released_bytes_.Increment(static_cast<double>(memory->released));
      heap_release_seconds_.Set(Seconds(memory->release_took));
      if (memory->resident) resident_bytes_.Set(static_cast<double>(*memory->resident));
    }
    rebuild_seconds_.Set(ingest.rebuild_seconds);
    unrestored_series_.Set(static_cast<double>(ingest.rebuild_errors));
    rebuilt_series_.Set(static_cast<double>(ingest.rebuilt_series));
    Advance(restores_after_loss_, ingest.restores_after_loss, last_.restores_after_loss);
  }

 private:
  std::mutex mu_;
  IngestStats last_;
  storage::StoreStats last_store_;
  prometheus::Counter& scrapes_;
  prometheus::Counter& rejected_;
  prometheus::Counter& store_errors_;
  prometheus::Counter& samples_;
  prometheus::Counter& series_created_;
  prometheus::Counter& series_retired_;
  prometheus::Counter& counter_resets_;
  prometheus::Counter& layout_reuses_;
  prometheus::Counter& batches_;
  prometheus::Counter& batch_errors_;
  prometheus::Counter& written_bytes_;
  prometheus::Counter& write_seconds_;
  prometheus::Counter& read_errors_;
  prometheus::Counter& low_space_refusals_;
  prometheus::Counter& low_space_pauses_;
  prometheus::Counter& background_errors_;
  prometheus::Counter& recoveries_;
  prometheus::Counter& deferred_batches_;
  prometheus::Counter& reopens_;
  prometheus::Counter& salvages_;
  prometheus::Counter& salvage_lost_ranges_;
  prometheus::Counter& damage_found_;
  prometheus::Counter& salvage_errors_;
  prometheus::Counter& orphaned_scrapes_;
  prometheus::Gauge& salvaging_;
  prometheus::Counter& backlog_written_;
  prometheus::Counter& lost_batches_;
  prometheus::Counter& lost_scrapes_;
  prometheus::Gauge& backlog_batches_;
  prometheus::Gauge& backlog_bytes_;
  prometheus::Gauge& durable_;
  prometheus::Gauge& wal_bytes_dropped_;
  prometheus::Gauge& recovery_lost_scrapes_;
  prometheus::Gauge& recovery_lost_samples_;
  prometheus::Gauge& recovery_lost_nodes_;
  prometheus::Counter& ack_marker_errors_;
  prometheus::Gauge& size_bytes_;
  prometheus::Gauge& max_write_seconds_;
  prometheus::Gauge& series_;
  prometheus::Gauge& window_bytes_;
  prometheus::Gauge& store_memory_bytes_;
  prometheus::Gauge& heap_in_use_bytes_;
  prometheus::Gauge& heap_free_bytes_;
  prometheus::Counter& heap_released_bytes_;
  prometheus::Gauge& heap_release_seconds_;
  prometheus::Gauge& resident_bytes_;
  prometheus::Gauge& rebuild_seconds_;
  prometheus::Gauge& unrestored_series_;
  prometheus::Gauge& rebuilt_series_;
  prometheus::Counter& restores_after_loss_;
  prometheus::Gauge& snapshot_seconds_;
  prometheus::Family<prometheus::Gauge>& snapshot_objects_;
  prometheus::Gauge& snapshot_nodes_;
  prometheus::Gauge& snapshot_pods_;
  prometheus::Family<prometheus::Counter>& publishes_;
  prometheus::Counter& publishes_round_;
  prometheus::Counter& publishes_paced_;
  prometheus::Counter& publishes_start_;
  prometheus::Histogram& publish_lag_;
  prometheus::Histogram& publish_duration_;

  static double Seconds(Duration d) {
    return std::chrono::duration<double>(std::max(Duration::zero(), d)).count();
  }
};

StoreSelfMetrics::StoreSelfMetrics(prometheus::Registry& registry)
    : impl_(std::make_unique<Impl>(registry)) {}
StoreSelfMetrics::~StoreSelfMetrics() = default;

void StoreSelfMetrics::ObserveSnapshot(Duration refresh, const SnapshotStats& stats) {
  impl_->ObserveSnapshot(refresh, stats);
}

void StoreSelfMetrics::CountPublish(PublishTrigger trigger) { impl_->CountPublish(trigger); }

void StoreSelfMetrics::ObservePublishLag(Duration lag) { impl_->ObservePublishLag(lag); }

void StoreSelfMetrics::ObservePublishDuration(Duration took) {
  impl_->ObservePublishDuration(took);
}

MemoryFigures CountMemory(const Ingestor& ingestor, const storage::Store& store,
                          const Clock& clock) {
  MemoryFigures figures;
  const Timestamp start = clock.MonotonicNow();
  figures.released = ReleaseFreeHeap().value_or(0);
  figures.release_took = clock.MonotonicNow() - start;
  figures.windows = ingestor.MemoryBytes();
  figures.store = store.MemoryBytes();
  figures.heap = ReadHeapFigures();
  figures.resident = ReadResidentBytes();
  return figures;
}

void StoreSelfMetrics::Update(const IngestStats& ingest, const storage::StoreStats& store,
                              uint64_t disk_bytes, const std::optional<MemoryFigures>& memory) {
  impl_->Update(ingest, store, disk_bytes, memory);
}

class RecommenderSelfMetrics::Impl {
 public:
  explicit Impl(prometheus::Registry& registry)
      : hits_(Counter(registry, "kubestat_recommendation_cache_hits_total",
                      "Containers and resources of recommendation requests whose closed "
                      "history came from the cache")),
        misses_(Counter(registry, "kubestat_recommendation_cache_misses_total",
                        "Containers and resources of recommendation requests whose closed "
                        "history was read whole from the store")),
        evictions_(Counter(registry, "kubestat_recommendation_cache_evictions_total",
                           "Cache entries evicted to stay within --recommendation-cache-mib")),
        entries_(Gauge(registry, "kubestat_recommendation_cache_entries",
                       "Containers and resources whose closed history is cached")),
        bytes_(Gauge(registry, "kubestat_recommendation_cache_bytes",
                     "Memory held by the recommendation cache (approximate)")) {}

  void Update(const RecommenderCacheStats& stats) {
    std::lock_guard<std::mutex> lock(mu_);
    Advance(hits_, stats.hits, last_.hits);
    Advance(misses_, stats.misses, last_.misses);
    Advance(evictions_, stats.evictions, last_.evictions);
    entries_.Set(static_cast<double>(stats.entries));
    bytes_.Set(static_cast<double>(stats.bytes));
  }

 private:
  std::mutex mu_;
  RecommenderCacheStats last_;
  prometheus::Counter& hits_;
  prometheus::Counter& misses_;
  prometheus::Counter& evictions_;
  prometheus::Gauge& entries_;
  prometheus::Gauge& bytes_;
};

RecommenderSelfMetrics::RecommenderSelfMetrics(prometheus::Registry& registry)
    : impl_(std::make_unique<Impl>(registry)) {}
RecommenderSelfMetrics::~RecommenderSelfMetrics() = default;
void RecommenderSelfMetrics::Update(const RecommenderCacheStats& stats) { impl_->Update(stats); }

class DiscoverySelfMetrics::Impl {
 public:
  explicit Impl(prometheus::Registry& registry)
      : lists_(Counter(registry, "kubestat_discovery_lists_total",
                       "Full lists of nodes, pods and LimitRanges from the kube API (the first "
                       "list of each and every relist)")),
        relists_after_gone_(Counter(registry, "kubestat_discovery_relists_after_gone_total",
                                    "Watches the kube API could not resume (410 Gone: the "
                                    "resume point was compacted or the API server restarted), "
                                    "each followed by a relist")),
        watches_(Counter(registry, "kubestat_discovery_watches_total",
                         "Watch requests started on the kube API")),
        events_(Counter(registry, "kubestat_discovery_events_total",
                        "Watch events applied to the cluster view")),
        errors_(Counter(registry, "kubestat_discovery_errors_total",
                        "Failed list or watch requests and undecodable events")),
        bad_quantities_(Counter(registry, "kubestat_discovery_bad_quantities_total",
                                "Requests, limits or LimitRange values that are no quantity")) {}

  void Update(const discovery::DiscoveryStats& stats) {
    std::lock_guard<std::mutex> lock(mu_);
    Advance(lists_, stats.lists, last_.lists);
    Advance(relists_after_gone_, stats.relists_after_gone, last_.relists_after_gone);
    Advance(watches_, stats.watches, last_.watches);
    Advance(events_, stats.events, last_.events);
    Advance(errors_, stats.errors, last_.errors);
    Advance(bad_quantities_, stats.bad_quantities, last_.bad_quantities);
  }

 private:
  std::mutex mu_;
  discovery::DiscoveryStats last_;
  prometheus::Counter& lists_;
  prometheus::Counter& relists_after_gone_;
  prometheus::Counter& watches_;
  prometheus::Counter& events_;
  prometheus::Counter& errors_;
  prometheus::Counter& bad_quantities_;
};

DiscoverySelfMetrics::DiscoverySelfMetrics(prometheus::Registry& registry)
    : impl_(std::make_unique<Impl>(registry)) {}
DiscoverySelfMetrics::~DiscoverySelfMetrics() = default;
void DiscoverySelfMetrics::Update(const discovery::DiscoveryStats& stats) { impl_->Update(stats); }

}  // namespace kubestat::aggregator
