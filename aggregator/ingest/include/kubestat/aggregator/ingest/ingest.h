// Ingestor: turns decoded node scrapes into samples, stores them, and keeps the window
// engine up to date; rebuilds the windows from the store at start.
//
// Samples of one scrape of a node (all at one time, the scrape's time; see Ingest):
// - the node's machine, each system container, each pod container: memory = working set
//   bytes; cpu = nanocores, the rate of the cumulative counter between this scrape and the
//   previous one of the same object, rounded to the nearest integer, computed with the
//   counter's own timestamps. No cpu sample is produced for the first reading of an object,
//   after a counter that went backwards, after a start time that changed (a restart), or
//   when the reading is not newer than the previous one (the kubelet repeated a cached
//   value). Each of those starts a new counter segment. After a restart of kubestat the
//   first scrape of every object gives no cpu sample (counters are not persisted).
// - each pod: its own series, the sum of its containers' values at this scrape, per
//   resource. When any container of the pod present in the scrape has no value for that
//   resource in this step (no rate yet, memory missing), the pod gets no sample for that
//   resource in this step: a partial sum would be a false dip.
// Objects that leave the node's scrape (a pod, a container of a pod, a system container)
// leave the engine at once; their store entries are retired and their data ages out. A pod
// that comes back gets new series (new ids) that start empty. DeletePod / DeleteNode do the
// same on discovery's word; a pod deleted that way is ignored in later scrapes of that
// node until it has disappeared from one of them.
//
// Order of work per scrape: compute samples, write one store batch (blob, dictionary
// additions, retirements, rollups of the buckets this scrape closes), then update the
// engine, feeding it the expiring samples it asks for from the store. A failed write
// leaves the ingestor and the engine unchanged (the scrape is lost and counted).
//
// Concurrency: nodes are sharded by a hash of their name; each shard has its own lock and
// window engine, so scrapes of different nodes ingest in parallel. Queries lock one shard
// at a time: each returned object is consistent; a list is not one atomic cut.
//
// Start: Create() opens nothing itself; Rebuild() restores every series from the store's
// rollups and newest samples (not a replay of the day) and then sets ready(). Ingest
// before Rebuild() finishes returns FailedPrecondition.
//
// Errors: absl::Status; every rejected scrape is counted in IngestStats.
#ifndef KUBESTAT_AGGREGATOR_INGEST_INGEST_H_
#define KUBESTAT_AGGREGATOR_INGEST_INGEST_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/aggregator/ingest/workload_history.h"
#include "kubestat/core/clock.h"
#include "kubestat/scrapers/node_scrape.h"
#include "kubestat/storage/store.h"
#include "kubestat/windows/series_key.h"
#include "kubestat/windows/window_engine.h"
#include "kubestat/windows/window_stats.h"

namespace kubestat::aggregator {

struct IngestOptions {
  // The window engine's options (windows, exact limit, rollup width, accuracy).
  // Default: WindowEngineOptions{} (10s, 1m, 1h, 1d)
  windows::WindowEngineOptions engine;
  // Independent shards (lock + engine each); scrapes of nodes in different shards ingest
  // in parallel. In [1, 1024]. Default: 16
  size_t shards = 16;
  // Threads used by Rebuild(). In [1, 64]. Default: 2
  size_t rebuild_threads = 2;
  // Apply the store's retention when a scrape enters a new hour. Default: true
  bool apply_retention = true;
  // Ingest a scrape whose objects (system containers, pods, containers, in order) are
  // those of the node's previous scrape through the shape kept from that one, without
  // building, sorting or looking up series keys. The result is the same either way (false:
  // every scrape takes the general path; tests compare the two). Default: true
  bool reuse_layout = true;

  // InvalidArgument naming the field.
  [[nodiscard]] absl::Status Validate() const;
};

// Counters for /metrics. Read with Ingestor::Stats().
struct IngestStats {
  uint64_t scrapes = 0;           // scrapes ingested (batch committed)
  uint64_t scrapes_rejected = 0;  // invalid (no node name, no time) or not newer
  uint64_t store_errors = 0;      // failed store writes or reads
  uint64_t engine_errors = 0;     // samples the engine refused (counted per sample)
  uint64_t samples = 0;           // samples stored
  uint64_t series_created = 0;
  uint64_t series_retired = 0;
  uint64_t rollups_written = 0;
  uint64_t counter_resets = 0;         // cpu counters that went backwards or restarted
  uint64_t layout_reuses = 0;          // scrapes ingested through the previous scrape's shape
  uint64_t rebuilt_series = 0;         // series restored by Rebuild()
  uint64_t rebuild_errors = 0;         // series that could not be restored
  uint64_t rebuild_damaged_reads = 0;  // of those, series whose stored samples read as damaged
  double rebuild_seconds = 0;          // duration of the last Rebuild()
  // Nodes restored again from the store after it dropped writes kept in memory
  // (storage::Store::LossGeneration).
  uint64_t restores_after_loss = 0;
};

// A pod or node as the engine knows it.
struct PodRef {
  std::string namespace_name;
  std::string name;
  std::string node;
  friend bool operator==(const PodRef&, const PodRef&) = default;
};

// Every series of one object set, read under one lock.
struct NodeSnapshot {
  std::string name;
  std::vector<windows::SeriesWindows> series;  // machine and system containers, in key order
};
struct PodSnapshot {
  PodRef pod;
  std::vector<windows::SeriesWindows>
      series;  // the pod's own series, then its containers', key order
};

// One node's own series and the series of every pod it reported, read under one lock.
struct NodeObjectsSnapshot {
  NodeSnapshot node;
  std::vector<PodSnapshot> pods;  // by (namespace, name)
};

// What Ingestor::VisitNodeObjects passes one node's objects to, in this order: NodeSeries
// for each of the node's own series (its machine, then its system containers, in key
// order); then, for each pod the node reported in its last scrape, by (namespace, name),
// BeginPod, and PodSeries for each of that pod's series (its own, then its containers', in
// key order; a pod without series yet gets BeginPod alone). Those are the objects and
// series QueryNodeObjects returns. Every argument is valid only during the call that
// passes it (`windows` as WindowEngine::VisitNode gives them). The calls are made under the
// node's shard lock: they must not call the Ingestor, and the shard's scrapes wait for them.
class NodeObjectsVisitor {
 public:
  virtual ~NodeObjectsVisitor() = default;
  virtual void NodeSeries(const windows::SeriesKey& key, Timestamp endtime,
                          std::span<const windows::WindowStats> windows) = 0;
  virtual void BeginPod(std::string_view namespace_name, std::string_view name) = 0;
  // A series of the pod of the latest BeginPod.
  virtual void PodSeries(const windows::SeriesKey& key, Timestamp endtime,
                         std::span<const windows::WindowStats> windows) = 0;
};

// A live container series and the store's names for it (to read its history).
struct StoredSeries {
  windows::SeriesKey key;
  storage::NodeId node = 0;
  storage::SeriesId id = 0;
};

namespace internal {
class IngestSampleCache;  // ingest/src/ingest_sample_cache.h
}  // namespace internal
struct NodeState;   // one node's windows and chain, in ingest.cc
struct IngestStep;  // one scrape on its way in, in ingest.cc

class Ingestor {
 public:
  // `store` must outlive the ingestor. `clock` measures the rebuild duration. `workloads`
  // (optional, must outlive the ingestor) names the workload a container's usage history is
  // written under (workload_history.h); without it every pod is a workload of its own.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Ingestor>> Create(
      IngestOptions options, storage::Store* store, Clock* clock,
      const PodWorkloads* workloads = nullptr);
  ~Ingestor();
  Ingestor(const Ingestor&) = delete;
  Ingestor& operator=(const Ingestor&) = delete;

  // Restores the windows from the store; then ready() is true. Series that cannot be
  // restored are counted and skipped; an unreadable dictionary fails the call.
  [[nodiscard]] absl::Status Rebuild();
  bool ready() const { return ready_.load(std::memory_order_acquire); }

  // Ingests one scrape at `time`: the node's own cpu time when present, else its memory
  // time, else the newest time in the scrape. InvalidArgument when the scrape has no node
  // name or no time; FailedPrecondition when `time` is not after the node's previous
  // scrape or before Rebuild(); the store's error when the write fails (a store with a
  // backlog keeps a write it cannot make in memory instead: storage::Store::Write). After
  // the store dropped writes it kept (storage::Store::LossGeneration advanced), the node's
  // windows are first restored from what the store holds (IngestStats::restores_after_loss).
  [[nodiscard]] absl::Status Ingest(const scrapers::NodeScrape& scrape);
  // Same, at an explicit time (e.g. when the scrape was taken).
  [[nodiscard]] absl::Status IngestAt(const scrapers::NodeScrape& scrape, Timestamp time);

  // Removes a pod / a node and all its series from the engine at once and retires them in
  // the store. Return whether anything was removed. A pod is looked for on `node` alone when
  // it is given (the pod's spec.nodeName: only that node's kubelet reports it), a lookup in
  // one node; without it, on every node.
  [[nodiscard]] absl::StatusOr<bool> DeletePod(std::string_view namespace_name,
                                               std::string_view name, std::string_view node = {});
  [[nodiscard]] absl::StatusOr<bool> DeleteNode(std::string_view name);

  // Known nodes (sorted by name) and pods (sorted by namespace, name).
  std::vector<std::string> ListNodes() const;
  std::vector<PodRef> ListPods() const;
  std::optional<NodeSnapshot> QueryNode(std::string_view name) const;
  std::optional<PodSnapshot> QueryPod(std::string_view namespace_name, std::string_view name) const;
  // A node's own series and its pods' in one pass over its series (what QueryNode and
  // QueryPod give for each of its pods); std::nullopt when the node is unknown.
  std::optional<NodeObjectsSnapshot> QueryNodeObjects(std::string_view name) const;
  // The same objects and series passed to `visitor` (see NodeObjectsVisitor) under one lock,
  // without copying them; false, with nothing visited, when the node is unknown.
  bool VisitNodeObjects(std::string_view name, NodeObjectsVisitor& visitor) const;
  // Every node's snapshot, by name.
  std::vector<NodeSnapshot> QueryNodes() const;
  // Every pod's snapshot (only those of `namespace_name` when it is non-empty), by
  // (namespace, name). A pod reported by two nodes at once appears once per node.
  std::vector<PodSnapshot> QueryPods(std::string_view namespace_name) const;
  // Every live container series that has a stored sample (only those of `namespace_name`
  // when it is non-empty), in key order per node.
  std::vector<StoredSeries> ContainerSeries(std::string_view namespace_name) const;
  // Every series of every node, in key order per node, nodes by name (tests, dumps).
  std::vector<windows::SeriesWindows> QueryAll() const;

  IngestStats Stats() const;
  // What Rebuild() could not restore, each named ("container/n1/shop/web-1/app/cpu (why)",
  // or "series 42 of node 7 (its dictionary entry is unreadable)"), the first
  // kMaxUnrestoredNamed of IngestStats::rebuild_errors.
  std::vector<std::string> UnrestoredSeries() const;
  static constexpr size_t kMaxUnrestoredNamed = 10000;
  // Bytes held by the engines plus the ingestor's own per-series state (approximate), by
  // part.
  struct Memory {
    windows::WindowEngine::Memory windows;  // every shard's engine
    size_t series_index = 0;                // per node: its series' store ids and newest times
    size_t cpu_counters = 0;                // per node: each cpu series' last cumulative reading
    size_t nodes = 0;  // per node: its record, pod names and last scrape's layout
    size_t total() const { return windows.total() + series_index + cpu_counters + nodes; }
  };
  Memory MemoryByPart() const;
  size_t MemoryBytes() const { return MemoryByPart().total(); }
  const windows::WindowEngineOptions& engine_options() const { return options_.engine; }

 private:
  struct Shard;
  struct Counters;
  struct RestoreScratch;
  struct RebuildNode;
  using NodeMap = std::map<std::string, NodeState, std::less<>>;
  Ingestor(IngestOptions options, storage::Store* store, Clock* clock,
           const PodWorkloads* workloads);
  Shard& ShardOf(std::string_view node) const;
  // Restores one node's series from the store (its newest scrape, rollups and the samples
  // the windows need) into its shard, as Rebuild does for each node; takes the shard's lock
  // unless the caller holds it.
  absl::Status RestoreNode(
      storage::NodeId node_id, const std::string& name,
      const std::vector<std::pair<storage::SeriesId, windows::SeriesKey>>& stored,
      RestoreScratch& scratch, bool take_lock);
  // The node's windows dropped and restored from what the store holds now, after the store
  // dropped writes it kept in memory (the shard's lock held). Returns the node's new entry.
  NodeMap::iterator RestoreAfterLoss(Shard& shard, NodeMap::iterator node, uint64_t generation);
  void MaybeApplyRetention(Timestamp time);
  // Rebuild's steps: the shards emptied (a rebuild after a salvage starts over); the store's
  // nodes with their live series, each unreadable entry named as not restored; the order the
  // restoring threads take them in; every node restored on options_.rebuild_threads threads
  // (the first error, naming its node).
  absl::Status ResetForRebuild();
  std::map<storage::NodeId, RebuildNode> NodesToRebuild(const storage::Dictionary& dict) const;
  std::vector<RebuildNode*> RebuildOrder(std::map<storage::NodeId, RebuildNode>& nodes) const;
  absl::Status RestoreAll(const std::vector<RebuildNode*>& queue);
  // IngestAt's steps 2 and 3, with the shard's lock held: the batch of `step` written (node
  // entry, new series, retirements, the rollups its samples close, the blob), then the node's
  // state and the engine given what was written.
  absl::Status WriteStep(Shard& shard, NodeState& node, const scrapers::NodeScrape& scrape,
                         Timestamp at, internal::IngestSampleCache& cache, IngestStep& step);
  void CommitStep(Shard& shard, NodeState& node, const scrapers::NodeScrape& scrape, Timestamp at,
                  bool same_layout, internal::IngestSampleCache& cache, IngestStep& step);

  IngestOptions options_;
  storage::Store* store_;
  Clock* clock_;
  const PodWorkloads* workloads_;  // may be null
  std::vector<std::unique_ptr<Shard>> shards_;
  std::unique_ptr<Counters> counters_;
  std::atomic<bool> ready_{false};
};

// One node as the store holds it: what NodeHistoryWriter::Resume continues.
struct StoredNode {
  storage::NodeId id = 0;
  std::string name;
  std::map<windows::SeriesKey, storage::SeriesId> series;  // its live series
};

// The store's nodes with their live series, by name, from one Store::LoadDictionary, so
// that resuming the writers of many nodes reads and decodes the dictionary once. A name
// held by several node ids (a node that was deleted and came back) maps to the newest
// (highest) id. DataLoss naming the entry when a series' key cannot be decoded, names
// another node, or its node has no entry.
[[nodiscard]] absl::StatusOr<std::map<std::string, StoredNode, std::less<>>> StoredNodesByName(
    const storage::Dictionary& dictionary);

// NodeHistoryWriter: writes into the store, in bulk, exactly the records Ingestor writes
// for one node given the samples of each of its scrapes: the node's dictionary entry (with
// its first scrape), a series' entry with its first sample, one blob per scrape, and the
// rollup of a series' bucket once a later sample of that series closes it. It runs no
// window engine and keeps no cpu counters: the values are the samples themselves (rates
// and pod sums already computed, as Ingest computes them). It never retires a series while
// it runs: every key is treated as an object still present in every scrape (a resumed
// writer retires what it was not given, see Resume). For importing history and for
// benchmarks that need a day of a large cluster in the store quickly; after Rebuild() the
// windows are those of an Ingestor that ingested the same samples.
//
// Ids come from the store's allocators in the order Ingest takes them: the node's at
// Create(), a series' at its first sample, in key order within a scrape.
//
// Records go into the caller's ScrapeBatch, so that many scrapes (of one or many nodes)
// can share one Store::Write; once a batch is written, Append must not be retried with it.
// The writer chains its node's blobs (storage::ScrapeChain): it must outlive the batches
// it appends to.
// Memory: the samples of every series' open bucket (16 bytes per sample).
// Thread-safety: none; different writers may be used from different threads.
class NodeHistoryWriter {
 public:
  // `keys`: the node's series, distinct, each with key.node == node_name; kept sorted.
  // `workloads` as for Ingestor::Create. InvalidArgument for bad options, an empty node
  // name, or a key of another node or twice.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<NodeHistoryWriter>> Create(
      const windows::WindowEngineOptions& options, storage::Store* store, std::string node_name,
      std::vector<windows::SeriesKey> keys, const PodWorkloads* workloads = nullptr);
  // A writer that continues `node` (as StoredNodesByName gives it, of this store) where
  // the store's records of it end, as an Ingestor restarted on the store would: the node
  // keeps its id (its entry is not written again); each of `keys` among node.series keeps
  // its id, the others get new ids at their first sample as with Create. The node's newest
  // stored scrape is the previous scrape: Append refuses times not after it. Each continued
  // series' open bucket (its stored samples since the bucket start of its newest one) is
  // read back, so the rollup written when a later sample closes it is the one a writer
  // that never stopped would write. The first blob starts a new chain (a key blob). As
  // Rebuild() and the next Ingest would, the first Append retires the series of
  // node.series not among `keys` (their objects left the node), and the stored series of
  // `keys` whose samples have all aged out (older than the store's retention before the
  // newest scrape), which then get new ids. Reads up to a rollup width of the node's
  // scrapes (more when a series' newest sample is older). InvalidArgument as for Create
  // (node.name is the node name); the store's error when a read fails.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<NodeHistoryWriter>> Resume(
      const windows::WindowEngineOptions& options, storage::Store* store, const StoredNode& node,
      std::vector<windows::SeriesKey> keys, const PodWorkloads* workloads = nullptr);
  ~NodeHistoryWriter();
  NodeHistoryWriter(const NodeHistoryWriter&) = delete;
  NodeHistoryWriter& operator=(const NodeHistoryWriter&) = delete;

  // The series, sorted: the order in which Append() takes values.
  const std::vector<windows::SeriesKey>& keys() const { return keys_; }
  storage::NodeId node_id() const { return node_id_; }
  // The previous scrape's time: the newest appended, or after Resume the newest stored;
  // nullopt before any.
  std::optional<Timestamp> last_scrape() const { return last_; }

  // Adds to `batch` the records of one scrape at `time`: values[i] is the sample of
  // keys()[i], or nullopt when the scrape gives none. InvalidArgument (nothing added) when
  // `time` is not after the previous scrape or values.size() != keys().size().
  [[nodiscard]] absl::Status Append(Timestamp time, std::span<const std::optional<uint64_t>> values,
                                    storage::ScrapeBatch* batch);

 private:
  struct OpenBucket;
  NodeHistoryWriter(std::unique_ptr<windows::WindowEngine> engine, storage::Store* store,
                    storage::NodeId node_id, std::string node_name,
                    std::vector<windows::SeriesKey> keys, const PodWorkloads* workloads);
  // Reads the newest stored scrape and the open buckets of the series of keys_ that have
  // ids (Resume).
  absl::Status LoadOpenBuckets();

  std::unique_ptr<windows::WindowEngine> engine_;  // for BuildRollup and RollupBucketStart only
  storage::Store* store_;
  const PodWorkloads* workloads_;  // may be null
  std::string node_name_;
  std::vector<windows::SeriesKey> keys_;
  storage::NodeId node_id_ = 0;
  bool node_written_ = false;
  std::optional<Timestamp> last_;
  std::vector<OpenBucket> open_;              // per key
  std::vector<storage::SeriesId> retire_;     // retired by the next Append (Resume)
  std::vector<storage::SeriesValue> values_;  // scratch
  storage::ScrapeChain chain_;                // the node's blobs (see ScrapeChain)
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_INGEST_INGEST_H_
