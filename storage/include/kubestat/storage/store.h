// Store: the RocksDB database that keeps a day of samples and rollups in one directory, so
// that the windows survive a restart.
//
// What is stored (one default column family, every key starts with a one-byte tag; all
// integers big-endian so that byte order is numeric order; times are int64 nanoseconds
// since the epoch with the sign bit flipped, so that they too sort numerically):
//
//   'N' node_id:u32                                        -> node name
//   'D' series_id:u64                                      -> series entry (node id, key)
//   'X' series_id:u64                                      -> retirement time
//   'B' hour:i64 node_id:u32 time:i64                      -> scrape blob
//   'R' hour:i64 node_id:u32 bucket_start:i64 series_id:u64 -> rollup bytes
//   'W' hour:i64 owner:bytes bucket_start:i64 series_id:u64 -> usage histogram bytes
//   'M' "ack" node_id:u32                                   -> the node's totals of
//                                                             acknowledged scrapes
//   ('H' hour:i64 node_id:u32 bucket_start:i64 series_id:u64: the usage histograms of
//    earlier versions, keyed by node; nothing reads them, retention drops them.)
//
// The usage histograms ('W') are the right-sizing history: one compact histogram per
// container series and rollup bucket (windows/usage_histogram.h, some tens of bytes), kept
// for `history_retention` (a week and more) while samples and rollups are kept a day. The
// key names the history's owner, opaque bytes to the store (the aggregator's encoding of a
// workload and container, aggregator/ingest/workload_history.h) before the bucket and the series:
// the series of every pod a workload ever had, on any node, are adjacent within an hour, so
// a workload's history is one seek per hour, and its pods of one hour are separate records
// (merged when read, never overwritten). They are read on demand (ReadHistory), never held
// in memory, so a week of history costs disk, not RAM; they outlive the series'
// dictionary entries (removed with the samples) and the pods themselves.
//
// Samples are stored as one blob per node scrape (scrape_blob.h: every series value of that
// scrape), not as one key per (series, time). The window
// engine asks for old samples of every series of a node at the same times (the samples
// leaving a window, the rest of the oldest bucket); with blobs that is one seek per node
// per window edge instead of one per series, the keys cost 21 bytes per scrape instead of
// per sample, and a write is one Put per scrape.
//
// A node's blobs form chains (ScrapeChain): a blob holds, for each series, the residual of
// its value against the prediction from the node's two previous blobs (second differences;
// memory in pages), so that slowly moving series cost one or two bytes per sample. A chain
// lives within one slot of 5 minutes (aligned to the epoch): the first blob of a node in a
// slot is a key blob holding whole values, so every read decodes from the start of the slot
// it begins in (at most a slot of blobs more than asked), and a lost or corrupt blob costs
// the rest of its slot, never more. Blobs written by earlier versions (version 1, whole
// values) are read as they are.
//
// On disk, RocksDB compresses 32 KiB blocks: LZ4 in flushes and the upper levels, ZSTD in
// the bottommost level that holds most of the data (LZ4 where the library lacks ZSTD; a
// store written either way opens).
//
// Blobs and rollups are partitioned by the hour of their time (`hour` = floor(time / 1h))
// before the node id: retention is then one DeleteRange per tag below the cutoff hour, and
// the files that hold only expired hours are dropped by compaction without rewriting live
// data. A node's range read costs one seek per hour it spans. Retention is applied with an
// hour's granularity: data is removed once its whole hour is older than `retention`.
//
// Identifiers: node ids (u32) and series ids (u64) are allocated by the store, never reused
// while any data can refer to them: a series that goes away (its pod disappeared or was
// deleted) is retired ('X'), and its dictionary entries are removed only when retention has
// removed its data. The series key itself is opaque bytes to the store (the aggregator's
// encoding of a SeriesKey).
//
// Faults: a store that cannot take a write costs durability, never the windows. While
// RocksDB refuses writes (a volume below StoreOptions::min_free_bytes, a background error it
// has not recovered from, a write that failed), Write keeps the batch in memory, in order
// (the backlog, at most StoreOptions::backlog_bytes), and every read sees it as if it were
// written; the backlog is written, oldest first, as soon as RocksDB takes writes again. A
// backlog that would outgrow its budget drops its oldest scrapes and rollups (never the
// dictionary entries), counts them (StoreStats::scrapes_lost) and advances
// LossGeneration(), so that whoever keeps windows over the store rebuilds them from what it
// now holds. RocksDB's background errors are caught by an event listener, logged, counted
// and resumed from when RocksDB allows (DB::Resume); files are not preallocated, so a small
// volume holds what is written and no more. Write-ahead log records that RocksDB's replay
// drops at open (a cut or corrupt log) are counted by size (StoreStats::wal_bytes_dropped)
// and by what they held: each batch carries its nodes' running totals of acknowledged
// scrapes into the database, a synced marker beside it keeps the totals RocksDB
// acknowledged, and an open compares the two (RecoveryLosses(): per node, how many scrapes
// and samples, in which time range; logged and counted).
//
// Damage found while running (a compaction or a read meets a table block that fails its
// checksum) is salvaged while the store goes on: a background thread copies what can be
// read into a new database (as Salvage() does at start), writes wait in the backlog
// meanwhile and reads are answered from the damaged database; then the copy takes its
// place, the backlog is written into it, StoreOptions::on_salvage hears what was lost, and
// SalvageEpoch() advances, so that the writer puts the dictionary entries of what it still
// writes again and starts its scrape chains anew (either may have been among the loss). A
// salvage that fails (no room for the copy) leaves the damaged database in use and is tried
// again after a while. A chained blob whose earlier blob was lost (a salvage stepped over
// it) is skipped by reads with the rest of its chain, at most a chain slot (5 minutes) of
// the node, and counted (StoreStats::orphaned_scrapes): the read goes on.
//
// Durability: every ScrapeBatch is one RocksDB WriteBatch with the WAL on, so a batch is
// applied entirely or not at all, and an acknowledged batch survives `kill -9`. With
// `sync` it also survives a power loss (fsync per batch).
//
// Errors: absl::Status. Open() reports a corrupt or unreadable database as a Status naming
// the directory and the RocksDB message (never a crash). A blob or rollup that fails to
// decode is DataLoss naming its key. Read callbacks see only decoded, validated data.
//
// Thread-safety: every method may be called concurrently from any thread (RocksDB is
// thread-safe; the store's own state is atomic or under its lock, which reads hold shared
// and the backlog's changes exclusively). A read's visitor runs under that lock and must
// not call the store. A ScrapeBatch is not thread-safe.
#ifndef KUBESTAT_STORAGE_STORE_H_
#define KUBESTAT_STORAGE_STORE_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/storage/scrape_blob.h"

namespace rocksdb {
class DB;
class EventListener;
class Status;
class WriteBatch;
}  // namespace rocksdb

namespace kubestat::storage {

class Store;
struct SalvageReport;

struct StoreOptions {
  // Directory of the database; created when missing. Default: "" (must be set)
  std::string dir;
  // How long samples and rollups are kept: a day plus a margin. At least 1h.
  // Default: 26h
  Duration retention = std::chrono::hours(26);
  // How long usage histograms ('H') are kept: the right-sizing history. At least 1h.
  // Default: 8 days (192h)
  Duration history_retention = std::chrono::hours(192);
  // fsync every batch (survives power loss) instead of relying on the WAL in the page
  // cache (survives a process crash). Default: false
  bool sync = false;
  // RocksDB block cache, bytes. Default: 64 MiB
  size_t block_cache_bytes = size_t{64} << 20;
  // RocksDB memtable size, bytes. Default: 32 MiB
  size_t write_buffer_bytes = size_t{32} << 20;
  // Create the database when the directory holds none. Default: true
  bool create_if_missing = true;
  // Writes do not go to RocksDB (they wait in the backlog) while the directory's file
  // system has fewer bytes free than this or than a tenth of its size, whichever is less,
  // so the volume never fills under RocksDB; they are written again as soon as there is
  // room. 0: no such pause. Default: 0
  uint64_t min_free_bytes = 0;
  // Memory for the writes that wait while RocksDB cannot take them (the backlog: the
  // batches and their index), bytes. 0: no backlog, a write that cannot be made fails
  // (ResourceExhausted or Unavailable). Default: 0
  uint64_t backlog_bytes = 0;
  // How often, at most, the marker of acknowledged scrapes (RecoveryLosses) is rewritten
  // and synced while writes come: acknowledged writes lost within this much of a crash are
  // not seen at the next open. Also rewritten at close. At least 0 (every write).
  // Default: 5s
  Duration ack_marker_interval = std::chrono::seconds(5);
  // Salvage damage found while running (see the file comment); false: writes that RocksDB
  // refuses after it wait in the backlog, and the damage waits for a salvage at the next
  // open. Default: true
  bool salvage_when_damaged = true;
  // Hears each salvage made while running, on the salvage's thread, with no lock of the
  // store held (it may read `store`, the store salvaged). Default: none
  std::function<void(const Store& store, const SalvageReport&)> on_salvage;
  // How long after a salvage that failed the next is tried. Default: 10 min
  Duration salvage_retry = std::chrono::minutes(10);

  // InvalidArgument naming the field.
  [[nodiscard]] absl::Status Validate() const;
};

// Counters of what the store did, for /metrics. Read with Store::Stats().
struct StoreStats {
  uint64_t batches = 0;             // batches written
  uint64_t batch_errors = 0;        // batches that failed to write
  uint64_t bytes_written = 0;       // WriteBatch bytes
  uint64_t write_nanos = 0;         // total time spent in writes
  uint64_t max_write_nanos = 0;     // slowest write
  uint64_t read_errors = 0;         // failed reads and undecodable records
  uint64_t retention_passes = 0;    // ApplyRetention calls that succeeded
  uint64_t retention_errors = 0;    // ApplyRetention calls that failed
  uint64_t series_forgotten = 0;    // dictionary entries removed by retention
  uint64_t low_space_refusals = 0;  // batches not written while free space was below min_free_bytes
  uint64_t low_space_pauses = 0;    // times writes were paused for lack of free space
  uint64_t background_errors = 0;   // RocksDB background errors (flush, compaction, WAL sync)
  uint64_t recoveries = 0;          // RocksDB recoveries from a background error that ended well
  uint64_t wal_bytes_dropped = 0;   // write-ahead log bytes RocksDB's replay dropped at open
  uint64_t recovery_lost_scrapes = 0;  // acknowledged scrapes the last open did not get back
  uint64_t recovery_lost_samples = 0;  // their samples
  uint64_t recovery_lost_nodes = 0;    // nodes they were of
  uint64_t ack_marker_errors = 0;      // rewrites of the marker of acknowledged scrapes that failed
  uint64_t batches_deferred = 0;       // batches kept in the backlog instead of written at once
  uint64_t reopens = 0;                // RocksDB reopened after a failed write
  uint64_t backlog_batches = 0;        // batches in the backlog now
  uint64_t backlog_bytes = 0;          // memory the backlog holds now
  uint64_t backlog_written = 0;        // backlog batches written since
  uint64_t batches_lost = 0;           // backlog batches dropped for want of room in memory
  uint64_t scrapes_lost = 0;           // node scrapes in those batches
  uint64_t salvages = 0;               // Salvage() calls that replaced the database
  uint64_t salvage_lost_ranges = 0;    // unreadable ranges they stepped over
  uint64_t damage_found = 0;           // times damage was found while running
  // Stored scrapes that reads skipped: the blob they build on was lost.
  uint64_t orphaned_scrapes = 0;
  uint64_t salvage_errors = 0;  // salvages made while running that failed
  bool salvaging = false;       // a salvage is copying the database now
  Timestamp lost_from{};        // the oldest and newest scrape lost (zero: none lost)
  Timestamp lost_through{};
};

// A part of the store Salvage() could not read: every key after `after` and before
// `before` (exclusive; "" at either end: the start or the end of the keys). `what` says in
// words where it lies ("scrapes of node 24, hour 2026-12-02T05:00:00Z" up to "…"), and
// `nodes` the ids of the nodes at its two ends whose data it held.
struct LostRange {
  std::string after;
  std::string before;
  std::string what;
  std::vector<NodeId> nodes;
};

// What Salvage() did: the keys it kept, the ranges it could not read, and where the
// damaged database's files were moved (kept for inspection, safe to delete).
struct SalvageReport {
  uint64_t kept_keys = 0;
  uint64_t kept_bytes = 0;
  std::vector<LostRange> lost;
  std::string quarantine_dir;
};

struct NodeEntry {
  NodeId id = 0;
  std::string name;
};

struct SeriesEntry {
  SeriesId id = 0;
  NodeId node = 0;
  std::string key;  // opaque: the aggregator's encoding of the series key
};

// Every node and every live (not retired) series.
struct Dictionary {
  std::vector<NodeEntry> nodes;     // by id
  std::vector<SeriesEntry> series;  // by id
};

// One scrape a batch holds (for the store's count of acknowledged scrapes).
struct ScrapeStamp {
  NodeId node = 0;
  int64_t time = 0;  // ns since the epoch
  uint64_t samples = 0;
};

// Scrapes of one node that Write acknowledged before the last stop and that the database
// did not hold at the next open (the write-ahead log lost them: a cut or corrupt log after
// a crash or power loss). Their times lie in (after, through].
struct RecoveryLoss {
  NodeId node = 0;
  std::string name;     // "" when the node's dictionary entry is gone too
  Timestamp after{};    // the node's newest scrape that was recovered (zero: none)
  Timestamp through{};  // its newest acknowledged scrape
  uint64_t scrapes = 0;
  uint64_t samples = 0;
};

class ScrapeBatch;
class AckLedger;
struct Ack;

// The writer's side of one node's chain of scrape blobs: the node's newest written blob,
// which the next one is chained to when it lies in the same slot. Kept by the caller, one
// per node, and passed to ScrapeBatch::PutScrape. A Store::Write that succeeds makes the
// batch's blob the newest; a Write that fails, or a batch cleared or destroyed before it
// was written, resets the chain, so that the next blob is a key blob (a chained blob never
// refers to one that may not be stored). A new chain (after a restart) starts with a key
// blob. Memory: 25 bytes per series of the node (and as much in a batch until written).
// Not thread-safe: used by one writer at a time; it must outlive the batches it is in.
class ScrapeChain {
 public:
  ScrapeChain() = default;
  ScrapeChain(const ScrapeChain&) = delete;
  ScrapeChain& operator=(const ScrapeChain&) = delete;
  // Only while no unwritten batch holds it.
  ScrapeChain(ScrapeChain&&) = default;
  ScrapeChain& operator=(ScrapeChain&&) = default;
  // The next blob is a key blob.
  void Reset() { written_.Clear(); }

 private:
  friend class ScrapeBatch;
  friend class Store;
  BlobChainState written_;                // the newest blob known to be stored
  const ScrapeBatch* pending_ = nullptr;  // the unwritten batch holding its next blob
};

// What one node scrape writes: its samples blob, dictionary additions and retirements, and
// the rollups of the buckets it closes. Applied atomically by Store::Write.
class ScrapeBatch {
 public:
  ScrapeBatch();
  ~ScrapeBatch();
  ScrapeBatch(const ScrapeBatch&) = delete;
  ScrapeBatch& operator=(const ScrapeBatch&) = delete;

  void AddNode(NodeId id, std::string_view name);
  void AddSeries(SeriesId id, NodeId node, std::string_view key);
  // The series gets no more samples; its data ages out, then its entry is removed.
  void RetireSeries(SeriesId id, Timestamp at);
  // The samples of one scrape of `node` at `time`; `values` in any order, ids distinct.
  // With `chain` (the node's), the blob is chained to the node's previous blob when that is
  // in the same slot and older (several scrapes of a node in one batch chain too); without,
  // it is a key blob. A chain that another unwritten batch holds gets a key blob.
  void PutScrape(NodeId node, Timestamp time, std::span<const SeriesValue> values,
                 ScrapeChain* chain = nullptr);
  // The serialized rollup of one series' bucket starting at `bucket_start`.
  void PutRollup(NodeId node, SeriesId series, Timestamp bucket_start, std::string_view bytes);
  // The serialized usage histogram of one series' bucket starting at `bucket_start`, kept
  // under `owner` (non-empty opaque bytes; see ReadHistory for prefixes).
  void PutHistory(std::string_view owner, SeriesId series, Timestamp bucket_start,
                  std::string_view bytes);

  bool empty() const;
  size_t ByteSize() const;  // bytes of the underlying WriteBatch
  // Empties the batch; the chains of its unwritten blobs are reset.
  void Clear();

 private:
  friend class Store;
  // After the batch was written (or failed to be): advances (or resets) its chains.
  void SettleChains(bool written) const;

  // A chain's newest blob in this batch, which becomes its written blob once the batch is.
  struct Staged {
    ScrapeChain* chain;
    BlobChainState state;
  };

  std::unique_ptr<rocksdb::WriteBatch> batch_;
  std::vector<ScrapeStamp> stamps_;
  mutable bool acks_put_ = false;  // the store put the nodes' totals into batch_
  std::string scratch_;
  std::vector<SeriesValue> sorted_;
  mutable std::vector<Staged> staged_;  // emptied by the Write that takes it
};

class Store {
 public:
  // Opens (or creates) the database in options.dir. Options must pass Validate().
  // Errors name the directory: InvalidArgument for bad options, DataLoss for a corrupt
  // database, FailedPrecondition for a directory that cannot be used (permissions, not a
  // database of this format), Unavailable for a database locked by another process.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Store>> Open(StoreOptions options);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const StoreOptions& options() const { return options_; }

  // New ids, never handed out before (also across restarts).
  NodeId AllocateNodeId();
  SeriesId AllocateSeriesId();

  // Applies the batch atomically (WAL on; fsync when options.sync). The batch gets its
  // nodes' totals of acknowledged scrapes added (once, at its first Write) and its scrape
  // chains advance (or are reset when it is not written at once); it is otherwise left
  // unchanged. When RocksDB cannot take it (free space below options.min_free_bytes, a
  // background error, a failed write) it joins the backlog, is read as if written and is
  // written later: OK. Without a backlog (options.backlog_bytes 0): ResourceExhausted,
  // without touching RocksDB, while free space is low; Unavailable for a write RocksDB
  // failed. Each change between writing and keeping writes in memory is logged once. After
  // a RocksDB background error that RocksDB does not recover from itself, a write asks
  // RocksDB to resume once there is room again.
  [[nodiscard]] absl::Status Write(const ScrapeBatch& batch);

  // The scrapes acknowledged before the last stop that this open did not find (see
  // RecoveryLoss), by node id; empty when the log gave back every one the marker knew of.
  const std::vector<RecoveryLoss>& RecoveryLosses() const { return recovery_losses_; }

  // Advanced each time the backlog dropped data (StoreStats::scrapes_lost): windows built
  // from reads before then may count samples the store no longer holds.
  uint64_t LossGeneration() const;
  // Why writes are not durable now ("" when they go to RocksDB): for health and logs.
  std::string DegradedReason() const;
  // Advanced by each salvage made while running: a writer that remembers what it wrote puts
  // its nodes' and live series' dictionary entries into its next batches again and resets
  // its scrape chains (ScrapeChain::Reset), as what they name may have been lost.
  uint64_t SalvageEpoch() const;

  // Every node and live series.
  [[nodiscard]] absl::StatusOr<Dictionary> LoadDictionary() const;

  using ScrapeVisitor = std::function<void(Timestamp time, std::span<const SeriesValue> values)>;
  // Calls `visit` for every scrape of `node` with after < time <= through, oldest first.
  [[nodiscard]] absl::Status ReadScrapes(NodeId node, Timestamp after, Timestamp through,
                                         const ScrapeVisitor& visit) const;
  // Newest first, from `through` down to (but excluding) `after`, while `visit` returns
  // true.
  using BackwardVisitor = std::function<bool(Timestamp time, std::span<const SeriesValue> values)>;
  [[nodiscard]] absl::Status ReadScrapesBackward(NodeId node, Timestamp through, Timestamp after,
                                                 const BackwardVisitor& visit) const;
  // The scrape of `node` at exactly `time`; NotFound when there is none.
  [[nodiscard]] absl::StatusOr<std::vector<SeriesValue>> GetScrape(NodeId node,
                                                                   Timestamp time) const;

  using RollupVisitor =
      std::function<void(SeriesId series, Timestamp bucket_start, std::string_view bytes)>;
  // Every rollup of `node`'s series with after < bucket_start <= through, by bucket start,
  // then series id.
  [[nodiscard]] absl::Status ReadRollups(NodeId node, Timestamp after, Timestamp through,
                                         const RollupVisitor& visit) const;
  using HistoryVisitor = std::function<void(std::string_view owner, SeriesId series,
                                            Timestamp bucket_start, std::string_view bytes)>;
  // Every usage histogram whose owner starts with `owner_prefix` ("" for all) and with
  // after < bucket_start <= through, by hour, then owner, bucket start and series id; one
  // seek per hour spanned. An owner encoding that ends each field with a terminator makes a
  // prefix of whole fields select exactly those owners.
  [[nodiscard]] absl::Status ReadHistory(std::string_view owner_prefix, Timestamp after,
                                         Timestamp through, const HistoryVisitor& visit) const;

  // Removes every blob and rollup whose hour ended at or before now - retention, every usage
  // histogram whose hour ended at or before now - history_retention, and the
  // dictionary entries of series retired before then; compacts the removed range so the
  // space is returned. Cheap when nothing expired (idempotent per hour): one pass per hour,
  // which a call may make every scrape. A pass that failed (Unavailable; while writes wait
  // in memory, say) is made again by the first call a minute (of `now`) later.
  [[nodiscard]] absl::Status ApplyRetention(Timestamp now);

  // Flushes memtables to SST files (tests and benchmarks measuring disk use).
  [[nodiscard]] absl::Status Flush();

  // Rebuilds the database from the parts of it that can still be read, after a read
  // failed with DataLoss (a table file with a bad block, say): every readable key is copied
  // into a new database in <dir>/salvage; an unreadable region is stepped over by seeking
  // ever further past the last key read (the next scrape of the node, its next hour, the
  // next tag) and reported; then the damaged files move to <dir>/quarantine-<UTC time>/ and
  // the new ones take their place, and the store goes on with them. Ids are never handed
  // out again even where the dictionary was lost. Call it before the store is written to
  // (the aggregator does, at start, when the rebuild reads damage); FailedPrecondition
  // while writes wait in memory. A failure (say, no room for the copy) leaves the damaged
  // database in use and <dir>/salvage removed. A salvage cut short by a crash is finished,
  // or its copy discarded, by the next Open.
  [[nodiscard]] absl::StatusOr<SalvageReport> Salvage();
  // Moves every file of the database in options.dir to <dir>/quarantine-<UTC time>/ (the
  // database cannot be opened at all); its path. The next Open starts an empty store.
  [[nodiscard]] static absl::StatusOr<std::string> MoveAside(const StoreOptions& options);
  // Bytes of every file in the directory (SSTs, WAL, manifest).
  uint64_t DiskBytes() const;
  // Bytes of memory RocksDB holds for this store: memtables, the block cache's contents and
  // the open tables' indexes and filters (RocksDB's own estimates).
  uint64_t MemoryBytes() const;
  // Bytes free to this process on the directory's file system (statvfs f_bavail); 0 when it
  // cannot be read.
  uint64_t FreeBytes() const;
  // Bytes of the directory's file system (statvfs f_blocks); 0 when it cannot be read.
  uint64_t VolumeBytes() const;

  StoreStats Stats() const;

 private:
  struct Counters;
  class Listener;
  struct Backlog;
  class Reader;
  Store(StoreOptions options, std::unique_ptr<rocksdb::DB> db, std::shared_ptr<Counters> counters);
  // OK when a write may go to RocksDB now (`free_bytes` free on the volume): there is room,
  // and a background error that stopped writes (if any) has been resumed from.
  absl::Status ReadyToWrite(uint64_t free_bytes);
  // Write, once RocksDB could not take the batch (`why`) or a backlog is waiting.
  absl::Status Defer(const ScrapeBatch& batch, const absl::Status& why);
  // Writes the oldest backlog batches while RocksDB takes them (the backlog's lock held).
  void DrainLocked();
  // Closes and opens RocksDB again after a failed write, when there is room to (the
  // backlog's lock held exclusively).
  absl::Status ReopenLocked();
  // A read failed with `s`: a RocksDB Corruption marks the store damaged (logged once), and
  // the next Write starts a salvage (MaybeStartSalvage).
  void NoteDamage(const rocksdb::Status& s) const;
  // Counts a failed read, notes damage, and returns ReadError's status.
  absl::Status ReadFailed(const char* what, const rocksdb::Status& s) const;
  // Starts the salvage thread when damage was noted and no salvage runs or waits to retry.
  void MaybeStartSalvage();
  // The salvage thread: copies, then swaps the copy in and writes the backlog into it.
  void SalvageWhileRunning();
  // Copies every readable key of the database into a new one in <dir>/salvage (Salvage's
  // first half); no lock held, the database must not be written or replaced meanwhile.
  absl::Status CopyReadable(SalvageReport* report, bool* lost_dictionary);
  // Replaces the database with the finished copy (the backlog's lock held exclusively).
  absl::Status AdoptCopyLocked(SalvageReport* report, bool lost_dictionary, bool at_start);
  // Drops the oldest backlog batches but their dictionary entries until the backlog holds
  // at most `keep` bytes (the backlog's lock held).
  void ShedLocked(uint64_t keep);
  // The backlog's memory (its lock held).
  uint64_t BacklogBytesLocked() const;
  absl::Status LoadIdCounters();
  // The nodes' totals of acknowledged scrapes the database holds ('M' "ack" keys).
  absl::Status LoadAcks(std::unordered_map<NodeId, Ack>* table) const;
  // At open: compares the marker with the database's totals (recovery_losses_), then
  // starts the ledger from the database's.
  void CheckRecovery();
  // Rewrites the marker when due (any time with `force`); a failure is counted and logged
  // once until a rewrite works again.
  void PersistAcks(bool force);
  using BlobVisitor = std::function<bool(int64_t time, std::span<const SeriesValue> values)>;
  // Decodes `node`'s blobs from the start of the chain slot holding lo + 1 and calls `visit`
  // for those with lo < time <= hi in time order, while it returns true.
  absl::Status ScanBlobs(const Reader& reader, NodeId node, int64_t lo, int64_t hi,
                         const BlobVisitor& visit) const;
  // ReadRollups: the records under `tag`.
  absl::Status ReadBuckets(const Reader& reader, char tag, NodeId node, Timestamp after,
                           Timestamp through, const RollupVisitor& visit) const;

  StoreOptions options_;
  std::unique_ptr<rocksdb::DB> db_;
  std::shared_ptr<Counters> counters_;  // shared with the event listener
  std::unique_ptr<Backlog> backlog_;
  std::shared_ptr<rocksdb::EventListener> listener_;  // the Listener, kept for a reopen
  std::unique_ptr<AckLedger> ledger_;
  std::vector<RecoveryLoss> recovery_losses_;
  std::atomic<uint32_t> next_node_id_{1};
  std::atomic<uint64_t> next_series_id_{1};
  std::atomic<int64_t> retained_from_hour_{INT64_MIN};
  std::atomic<int64_t> retention_retry_ns_{INT64_MIN};  // no pass before this `now`
  std::atomic<uint64_t> salvage_epoch_{0};
  // The salvage made while running (MaybeStartSalvage); joined at destruction.
  std::mutex salvage_mu_;
  std::thread salvage_thread_;
  std::chrono::steady_clock::time_point next_salvage_{};  // guarded by salvage_mu_
};

}  // namespace kubestat::storage

#endif  // KUBESTAT_STORAGE_STORE_H_
