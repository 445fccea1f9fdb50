#include "kubestat/storage/store.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kubestat/core/log.h"
#include "kubestat/core/time.h"
#include "kubestat/storage/internal/ack_ledger.h"
#include "kubestat/storage/internal/keys.h"
#include "rocksdb/cache.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/listener.h"
#include "rocksdb/options.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/table.h"
#include "rocksdb/utilities/write_batch_with_index.h"
#include "rocksdb/write_batch.h"

namespace kubestat::storage {

namespace {

// Under ThreadSanitizer, writes are serialised: the Debian librocksdb.a is not instrumented,
// and its write group (a leader thread stamps and applies the followers' batches) looks
// like a race on the followers' WriteBatch memory. Production builds keep group commit.
#if defined(__SANITIZE_THREAD__)
#define KUBESTAT_STORE_SERIAL_WRITES 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KUBESTAT_STORE_SERIAL_WRITES 1
#endif
#endif
#ifdef KUBESTAT_STORE_SERIAL_WRITES
std::mutex serial_writes;
#endif

constexpr std::string_view kFormatKey = "Mformat";
constexpr std::string_view kFormatValue = "kubestat-store-1";

rocksdb::Slice ToSlice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }
std::string_view ToView(const rocksdb::Slice& s) { return std::string_view(s.data(), s.size()); }

absl::Status OpenError(const std::string& dir, const rocksdb::Status& s) {
  const std::string message =
      absl::StrCat("cannot open the RocksDB store in ", dir, ": ", s.ToString());
  if (s.IsCorruption()) return absl::DataLossError(message);
  if (s.IsIOError() && absl::StrContains(s.ToString(), "lock")) {
    return absl::UnavailableError(message);
  }
  if (s.IsIOError() || s.IsInvalidArgument() || s.IsNotSupported() || s.IsPathNotFound()) {
    return absl::FailedPreconditionError(message);
  }
  return absl::InternalError(message);
}

absl::Status ReadError(const char* what, const rocksdb::Status& s) {
  const std::string message = absl::StrCat("store: ", what, ": ", s.ToString());
  if (s.IsCorruption()) return absl::DataLossError(message);
  return absl::UnavailableError(message);
}

// The compression of the bottommost level, where nearly all of a day's data ends up: ZSTD
// when this RocksDB has it (Debian's does), at level 2 (level 3's ratio on these blocks at
// about 1.5 times its speed). Scrape blobs are varints, which ZSTD's entropy coding shrinks
// where LZ4 finds few repeats: a node-day of the ingest benchmark takes 6.5 MiB instead of
// 8.5 MiB. Flushes and the upper levels keep LZ4, so the memtable flushes that follow the
// writes stay cheap: ZSTD everywhere cost 10-15% more ingest CPU per scrape for 3% less
// disk. Without ZSTD, LZ4 everywhere, as before. Each SST block records its compression, so
// a store written by an earlier version opens, and compaction rewrites its files.
rocksdb::CompressionType BottommostCompression() {
  const std::vector<rocksdb::CompressionType> supported = rocksdb::GetSupportedCompressions();
  if (std::find(supported.begin(), supported.end(), rocksdb::kZSTD) != supported.end()) {
    return rocksdb::kZSTD;
  }
  KLOG(WARNING) << "store: this RocksDB has no ZSTD; every level is compressed with LZ4";
  return rocksdb::kLZ4Compression;
}

std::string Describe(Duration d) {
  return absl::StrCat(std::chrono::duration_cast<std::chrono::seconds>(d).count(), "s");
}

}  // namespace

struct Store::Counters {
  std::atomic<uint64_t> batches{0};
  std::atomic<uint64_t> batch_errors{0};
  std::atomic<uint64_t> bytes_written{0};
  std::atomic<uint64_t> write_nanos{0};
  std::atomic<uint64_t> max_write_nanos{0};
  mutable std::atomic<uint64_t> read_errors{0};
  std::atomic<uint64_t> retention_passes{0};
  std::atomic<uint64_t> retention_errors{0};
  std::atomic<uint64_t> series_forgotten{0};
  std::atomic<uint64_t> low_space_refusals{0};
  std::atomic<uint64_t> low_space_pauses{0};
  std::atomic<uint64_t> background_errors{0};
  std::atomic<uint64_t> recoveries{0};
  std::atomic<uint64_t> wal_bytes_dropped{0};
  std::atomic<uint64_t> recovery_lost_scrapes{0};
  std::atomic<uint64_t> recovery_lost_samples{0};
  std::atomic<uint64_t> recovery_lost_nodes{0};
  std::atomic<uint64_t> ack_marker_errors{0};
  std::atomic<bool> ack_marker_failing{false};
  std::atomic<uint64_t> batches_deferred{0};
  std::atomic<uint64_t> reopens{0};
  std::atomic<uint64_t> backlog_written{0};
  std::atomic<uint64_t> batches_lost{0};
  std::atomic<uint64_t> scrapes_lost{0};
  std::atomic<uint64_t> salvages{0};
  std::atomic<uint64_t> salvage_lost_ranges{0};
  std::atomic<int64_t> lost_from{0};  // nanoseconds; 0: none
  std::atomic<int64_t> lost_through{0};
  std::atomic<bool> low_space{false};     // writes paused for lack of free space
  std::atomic<bool> needs_resume{false};  // a background error RocksDB did not recover from
  std::atomic<bool> damaged{false};       // a table block failed its checksum; not salvaged yet
  std::atomic<uint64_t> damage_found{0};
  mutable std::atomic<uint64_t> orphaned_scrapes{0};
  mutable std::atomic<bool> orphans_logged{false};
  std::atomic<uint64_t> salvage_errors{0};
  std::atomic<bool> stopping{false};  // the store is being closed: a salvage gives up

  // Damage was read (by a query or a compaction): true the first time until a salvage.
  bool MarkDamaged() {
    if (damaged.exchange(true)) return false;
    damage_found.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
};

// The writes RocksDB could not take yet, oldest first, and an index of them that reads
// merge with the database's (overwrite_key: the newest value of a key is the one seen).
struct Store::Backlog {
  // Shared by every use of the database handle (reads, writes straight to RocksDB),
  // exclusive to change the backlog or to replace the handle (a reopen).
  mutable std::shared_mutex mu;
  // A write to RocksDB failed: its write-ahead log writer may hold the error, and RocksDB
  // must not be given another write before the database is reopened (a new log).
  std::atomic<bool> reopen{false};
  // The reserve was removed for an open and is not back yet: writes wait until there is
  // room for it again, so that the next open has it too.
  std::atomic<bool> reserve_missing{false};
  // A salvage made while running copies the database: writes wait in the backlog, which is
  // not drained, and the handle is not replaced, until the copy takes its place.
  std::atomic<bool> salvaging{false};
  // Taken by writes while the volume is nearly full (kSerialWritesBelow).
  std::mutex near_full_writes;
  // Holds batches; read without the lock as a hint, settled under it.
  std::atomic<bool> active{false};
  rocksdb::WriteBatchWithIndex index{rocksdb::BytewiseComparator(), 0, /*overwrite_key=*/true};
  std::deque<rocksdb::WriteBatch> batches;
  uint64_t batch_bytes = 0;    // of `batches`
  uint64_t index_entries = 0;  // records put into `index` since it was last cleared
  // After a drain that RocksDB refused, the next is tried no sooner than this.
  std::chrono::steady_clock::time_point next_drain{};
  std::atomic<uint64_t> loss_generation{0};
  std::string why;  // what stopped the writes, for DegradedReason
  std::chrono::system_clock::time_point since{};
};

// Reads of the database and, while there is a backlog, of its writes as if they were
// written. Holds the backlog's lock shared for its life, so the backlog and its index do not
// change under the iterators it made; one per public read (never two on one thread).
class Store::Reader {
 public:
  explicit Reader(const Store& store)
      : store_(store), lock_(store.backlog_->mu), merged_(store.backlog_->active.load()) {}
  // Without a database handle (a reopen that failed), the backlog alone.
  std::unique_ptr<rocksdb::Iterator> NewIterator() const {
    rocksdb::Iterator* base =
        store_.db_ ? store_.db_->NewIterator(rocksdb::ReadOptions()) : rocksdb::NewEmptyIterator();
    if (!merged_) return std::unique_ptr<rocksdb::Iterator>(base);
    return std::unique_ptr<rocksdb::Iterator>(store_.backlog_->index.NewIteratorWithBase(base));
  }
  rocksdb::Status Get(const std::string& key, std::string* value) const {
    if (!store_.db_) {
      if (!merged_) return rocksdb::Status::NotFound();
      return store_.backlog_->index.GetFromBatch(rocksdb::DBOptions(), key, value);
    }
    if (!merged_) return store_.db_->Get(rocksdb::ReadOptions(), key, value);
    return store_.backlog_->index.GetFromBatchAndDB(store_.db_.get(), rocksdb::ReadOptions(), key,
                                                    value);
  }

 private:
  const Store& store_;
  std::shared_lock<std::shared_mutex> lock_;
  bool merged_;
};

namespace {

// Puts a batch's records into the backlog's index.
class IndexInto final : public rocksdb::WriteBatch::Handler {
 public:
  IndexInto(rocksdb::WriteBatchWithIndex* index, uint64_t* entries)
      : index_(index), entries_(entries) {}
  void Put(const rocksdb::Slice& key, const rocksdb::Slice& value) override {
    (void)index_->Put(key, value);
    ++*entries_;
  }
  void Delete(const rocksdb::Slice& key) override {
    (void)index_->Delete(key);
    ++*entries_;
  }

 private:
  rocksdb::WriteBatchWithIndex* index_;
  uint64_t* entries_;
};

// Sorts a dropped batch's records: the dictionary's are kept (a later scrape may refer to
// its series), the scrapes are counted with their times, the rest (rollups, histories) go.
class SortDropped final : public rocksdb::WriteBatch::Handler {
 public:
  explicit SortDropped(rocksdb::WriteBatch* kept) : kept_(kept) {}
  void Put(const rocksdb::Slice& key, const rocksdb::Slice& value) override {
    if (key.empty()) return;
    const char tag = key[0];
    if (tag == keys::kNodeTag || tag == keys::kSeriesTag || tag == keys::kRetiredTag) {
      (void)kept_->Put(key, value);
      return;
    }
    lost_any = true;
    if (tag == keys::kBlobTag && key.size() == keys::kBlobKeySize) {
      const int64_t t = keys::BlobTime(ToView(key));
      ++scrapes;
      oldest = std::min(oldest, t);
      newest = std::max(newest, t);
    }
  }
  void Delete(const rocksdb::Slice& key) override { (void)kept_->Delete(key); }

  bool lost_any = false;  // of the batch being sorted; reset by the caller
  uint64_t scrapes = 0;
  int64_t oldest = std::numeric_limits<int64_t>::max();
  int64_t newest = std::numeric_limits<int64_t>::min();

 private:
  rocksdb::WriteBatch* kept_;
};

// The reserve: a file of 1 MiB (a sixteenth of a volume under 16 MiB) that the store keeps
// in its directory while there is room, and removes when an open of RocksDB needs room that
// a full volume no longer has (a start, or a reopen after a failed write): an open writes a
// new MANIFEST and OPTIONS file.
constexpr uint64_t kReserveBytes = 1 << 20;
uint64_t ReserveBytes(uint64_t volume) { return std::min(kReserveBytes, volume / 16); }
constexpr std::string_view kReserveName = "kubestat-reserve";

// Removes the reserve of `dir`, if any; whether there was one.
bool ReleaseReserve(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::remove(std::filesystem::path(dir) / kReserveName, ec);
}

// Creates the reserve of `dir` when it is missing and the volume (`volume` bytes) has
// `free` bytes, well more than the reserve; whether the reserve is there now.
bool KeepReserve(const std::string& dir, uint64_t free, uint64_t volume) {
  const std::filesystem::path path = std::filesystem::path(dir) / kReserveName;
  const uint64_t size = ReserveBytes(volume);
  std::error_code ec;
  if (size == 0 || std::filesystem::exists(path, ec)) return true;
  if (free < 3 * size) return false;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const bool allocated = ::posix_fallocate(fd, 0, static_cast<off_t>(size)) == 0;
  ::close(fd);
  if (!allocated) std::filesystem::remove(path, ec);
  return allocated;
}

// Below this much free space, writes reach RocksDB one at a time (Store::Write).
constexpr uint64_t kSerialWritesBelow = uint64_t{64} << 20;
// What an index entry costs beside the record's bytes (its skip-list node and entry).
constexpr uint64_t kIndexEntryBytes = 64;
// A drain writes at most this much per Write call, so no call waits long behind it.
constexpr uint64_t kDrainBytesPerWrite = 8 << 20;
// After RocksDB refused a drain, the next try waits this long.
constexpr auto kDrainRetry = std::chrono::seconds(1);

}  // namespace

// RocksDB's info log, into kubestat's: warnings and errors are logged with a "rocksdb:"
// prefix, the rest is dropped, and no LOG file is written into the store's directory. A LOG
// file on the store's volume fails like any other file when the volume is full, and
// RocksDB's file writer aborts the process (an assertion) on the next line it appends after
// one that failed. Read on the way for the records the write-ahead log replay drops at open
// ("…: dropping 1234 bytes; Corruption: …"), which the store reports itself (their size;
// which scrapes they held comes from the marker of acknowledged scrapes, ack_ledger.h).
class RocksDbLog final : public rocksdb::Logger {
 public:
  // `report_drops`: log dropped log records as lost writes (not at a reopen, where they are
  // the failed write, which the backlog holds).
  RocksDbLog(std::string dir, bool report_drops)
      : rocksdb::Logger(rocksdb::InfoLogLevel::INFO_LEVEL),
        dir_(std::move(dir)),
        report_drops_(report_drops) {}

  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < rocksdb::InfoLogLevel::WARN_LEVEL && !watching_.load()) return;
    char buffer[1024];
    const int n = std::vsnprintf(buffer, sizeof(buffer), format, ap);
    if (n <= 0) return;
    const std::string_view line(buffer, std::min<size_t>(n, sizeof(buffer) - 1));
    if (watching_.load() && Watch(line)) return;  // said in the store's words
    if (level >= rocksdb::InfoLogLevel::ERROR_LEVEL) {
      KLOG(ERROR) << "rocksdb: " << line;
    } else if (level >= rocksdb::InfoLogLevel::WARN_LEVEL) {
      KLOG(WARNING) << "rocksdb: " << line;
    }
  }
  void Logv(const char* format, va_list ap) override {
    Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
  }

  // Counts the bytes the log replay drops until StopWatching (the end of the open).
  void StopWatching() { watching_.store(false); }
  uint64_t dropped_bytes() const { return dropped_bytes_.load(); }

 private:
  // True when `line` was a dropped record, logged here.
  bool Watch(std::string_view line) {
    const size_t at = line.find(": dropping ");
    if (at == std::string_view::npos) return false;
    std::string_view rest = line.substr(at + 11);
    uint64_t bytes = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), bytes);
    if (ec != std::errc() ||
        !std::string_view(end, rest.data() + rest.size()).starts_with(" bytes")) {
      return false;
    }
    dropped_bytes_.fetch_add(bytes);
    if (!report_drops_) return false;
    KLOG(WARNING) << "store: the replay of the write-ahead log of " << dir_ << " dropped " << bytes
                  << " bytes (a cut or corrupt log): " << line;
    return true;
  }

  const std::string dir_;
  const bool report_drops_;
  std::atomic<bool> watching_{true};
  std::atomic<uint64_t> dropped_bytes_{0};
};

// Hears RocksDB's background errors and recoveries (on RocksDB's threads).
class Store::Listener final : public rocksdb::EventListener {
 public:
  Listener(std::string dir, std::shared_ptr<Counters> counters)
      : dir_(std::move(dir)), counters_(std::move(counters)) {}

  void OnBackgroundError(rocksdb::BackgroundErrorReason reason, rocksdb::Status* error) override {
    counters_->background_errors.fetch_add(1, std::memory_order_relaxed);
    KLOG(ERROR) << "store: RocksDB background error in " << dir_ << " (" << ReasonName(reason)
                << "): " << error->ToString() << "; writes fail until it is resumed from";
    counters_->needs_resume.store(true);
    // Damage a compaction read: the store salvages itself (Store::MaybeStartSalvage).
    if (error->IsCorruption()) counters_->MarkDamaged();
  }
  void OnErrorRecoveryEnd(const rocksdb::BackgroundErrorRecoveryInfo& info) override {
    if (info.new_bg_error.ok()) {
      counters_->needs_resume.store(false);
      // A resume asked for after RocksDB had already recovered on its own ends "from OK":
      // not a recovery.
      if (info.old_bg_error.ok()) return;
      counters_->recoveries.fetch_add(1, std::memory_order_relaxed);
      KLOG(INFO) << "store: RocksDB recovered in " << dir_ << " from "
                 << info.old_bg_error.ToString();
    } else {
      KLOG(ERROR) << "store: RocksDB could not recover in " << dir_ << ": "
                  << info.new_bg_error.ToString();
    }
  }

 private:
  static const char* ReasonName(rocksdb::BackgroundErrorReason reason) {
    switch (reason) {
      case rocksdb::BackgroundErrorReason::kFlush:
        return "flush";
      case rocksdb::BackgroundErrorReason::kCompaction:
        return "compaction";
      case rocksdb::BackgroundErrorReason::kWriteCallback:
        return "write";
      case rocksdb::BackgroundErrorReason::kMemTable:
        return "memtable";
      case rocksdb::BackgroundErrorReason::kManifestWrite:
        return "manifest write";
      case rocksdb::BackgroundErrorReason::kFlushNoWAL:
        return "flush without WAL";
      case rocksdb::BackgroundErrorReason::kManifestWriteNoWAL:
        return "manifest write without WAL";
    }
    return "other";
  }

  const std::string dir_;
  const std::shared_ptr<Counters> counters_;
};

absl::Status StoreOptions::Validate() const {
  if (dir.empty()) return absl::InvalidArgumentError("dir: must be set");
  if (retention < std::chrono::hours(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("retention: ", Describe(retention), " is below the minimum of 1h"));
  }
  if (history_retention < std::chrono::hours(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "history_retention: ", Describe(history_retention), " is below the minimum of 1h"));
  }
  if (block_cache_bytes < (size_t{1} << 20)) {
    return absl::InvalidArgumentError("block_cache_bytes: must be at least 1 MiB");
  }
  if (write_buffer_bytes < (size_t{1} << 20)) {
    return absl::InvalidArgumentError("write_buffer_bytes: must be at least 1 MiB");
  }
  if (salvage_retry < Duration(0)) {
    return absl::InvalidArgumentError("salvage_retry: must not be negative");
  }
  if (ack_marker_interval < Duration(0)) {
    return absl::InvalidArgumentError("ack_marker_interval: must not be negative");
  }
  return absl::OkStatus();
}

// --- ScrapeBatch ---

ScrapeBatch::ScrapeBatch() : batch_(std::make_unique<rocksdb::WriteBatch>()) {}
ScrapeBatch::~ScrapeBatch() { SettleChains(/*written=*/false); }

void ScrapeBatch::AddNode(NodeId id, std::string_view name) {
  batch_->Put(keys::NodeKey(id), ToSlice(name));
}

void ScrapeBatch::AddSeries(SeriesId id, NodeId node, std::string_view key) {
  scratch_.clear();
  keys::PutU32(&scratch_, node);
  scratch_.append(key);
  batch_->Put(keys::SeriesKey(id), scratch_);
}

void ScrapeBatch::RetireSeries(SeriesId id, Timestamp at) {
  scratch_.clear();
  keys::PutI64(&scratch_, Nanos(at));
  batch_->Put(keys::RetiredKey(id), scratch_);
}

void ScrapeBatch::PutScrape(NodeId node, Timestamp time, std::span<const SeriesValue> values,
                            ScrapeChain* chain) {
  sorted_.assign(values.begin(), values.end());
  std::sort(sorted_.begin(), sorted_.end(),
            [](const SeriesValue& a, const SeriesValue& b) { return a.id < b.id; });
  const int64_t t = Nanos(time);
  Staged* mine = nullptr;
  const BlobChainState* reference = nullptr;
  if (chain != nullptr) {
    for (Staged& staged : staged_) {
      if (staged.chain == chain) mine = &staged;
    }
    if (mine != nullptr) {
      reference = &mine->state;
    } else if (chain->pending_ == nullptr) {
      reference = &chain->written_;
    }  // else another unwritten batch holds the chain: a key blob
    if (reference != nullptr &&
        (reference->empty() || reference->time_ns() >= t ||
         keys::ChainSlotStart(reference->time_ns()) != keys::ChainSlotStart(t))) {
      reference = nullptr;
    }
  }
  scratch_.clear();
  // Ids are distinct by contract; a duplicate is a caller bug caught here.
  const absl::Status s = EncodeScrapeBlob(sorted_, t, reference, &scratch_);
  if (!s.ok()) std::abort();
  batch_->Put(keys::BlobKey(node, t), scratch_);
  stamps_.push_back({node, t, values.size()});
  if (chain == nullptr) return;
  BlobChainState next;
  next.Advance(reference, t, sorted_);
  if (mine != nullptr) {
    mine->state = std::move(next);
  } else {
    staged_.push_back({chain, std::move(next)});
  }
  chain->pending_ = this;
}

void ScrapeBatch::SettleChains(bool written) const {
  for (Staged& staged : staged_) {
    ScrapeChain& chain = *staged.chain;
    if (written && chain.pending_ == this) {
      chain.written_ = std::move(staged.state);
    } else if (written || chain.pending_ == this) {
      // Written while a later batch holds the chain, or not written (or not known to be:
      // a failed write): the chain's newest stored blob is uncertain, so it starts again.
      chain.written_.Clear();
    }
    if (chain.pending_ == this) chain.pending_ = nullptr;
  }
  staged_.clear();
}

void ScrapeBatch::PutRollup(NodeId node, SeriesId series, Timestamp bucket_start,
                            std::string_view bytes) {
  batch_->Put(keys::RollupKey(node, Nanos(bucket_start), series), ToSlice(bytes));
}

void ScrapeBatch::PutHistory(std::string_view owner, SeriesId series, Timestamp bucket_start,
                             std::string_view bytes) {
  batch_->Put(keys::WorkloadHistoryKey(owner, Nanos(bucket_start), series), ToSlice(bytes));
}

bool ScrapeBatch::empty() const { return batch_->Count() == 0; }
size_t ScrapeBatch::ByteSize() const { return batch_->GetDataSize(); }
void ScrapeBatch::Clear() {
  SettleChains(/*written=*/false);
  batch_->Clear();
  stamps_.clear();
  acks_put_ = false;
}

// --- Store ---

namespace {

// Opens the RocksDB database of `options` (Store::Open's, and a reopen's after a failed
// write); `wal_dropped` gets the write-ahead log bytes its replay dropped.
absl::StatusOr<std::unique_ptr<rocksdb::DB>> OpenDatabase(
    const StoreOptions& options, const std::shared_ptr<rocksdb::EventListener>& listener,
    bool reopen, uint64_t* wal_dropped) {
  rocksdb::Options db_options;
  db_options.create_if_missing = options.create_if_missing;
  db_options.paranoid_checks = true;
  db_options.write_buffer_size = options.write_buffer_bytes;
  db_options.max_background_jobs = 2;
  db_options.compression = rocksdb::kLZ4Compression;
  db_options.bottommost_compression = BottommostCompression();
  db_options.bottommost_compression_opts.level = 2;
  db_options.bottommost_compression_opts.enabled = true;
  db_options.keep_log_file_num = 2;
  db_options.max_log_file_size = 4 << 20;
  // Recovery replays the WAL into the memtable without writing an SST first, so a store
  // reopened on a nearly full volume opens rather than failing for want of room.
  db_options.avoid_flush_during_recovery = true;
  // No file is preallocated: RocksDB's default reserves 1.1 write buffers for every log and
  // 4 MiB for the MANIFEST, which on a small volume leave no room while the files hold a
  // few kilobytes. Files then take what they hold.
  db_options.allow_fallocate = false;
  db_options.manifest_preallocation_size = 64 << 10;
  db_options.listeners.push_back(listener);
  auto log = std::make_shared<RocksDbLog>(options.dir, /*report_drops=*/!reopen);
  db_options.info_log = log;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  // Blobs of one node are adjacent (hour, node, time), and reads of a node walk them in
  // order, so a larger block compresses better without being read in vain; 32 KiB rather
  // than more because the block cache keeps one block per node being read, uncompressed.
  table.block_size = 32 << 10;
  db_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));

  if (options.create_if_missing) {
    std::error_code ec;  // RocksDB says why when it cannot use the directory
    std::filesystem::create_directories(options.dir, ec);
  }
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_options, options.dir, &raw);
  if (!s.ok()) return OpenError(options.dir, s);
  log->StopWatching();
  *wal_dropped = log->dropped_bytes();
  return std::unique_ptr<rocksdb::DB>(raw);
}

}  // namespace

// --- Salvage ---

namespace {

namespace fs = std::filesystem;

constexpr char kSalvageDir[] = "salvage";
constexpr char kSalvageDone[] = "KUBESTAT-SALVAGE-COMPLETE";
constexpr char kQuarantinePrefix[] = "quarantine-";
// The lowest ids to hand out, when a salvage lost dictionary entries: u32 node, u64 series.
constexpr std::string_view kIdFloorKey = "Mid-floor";
// How far the id counters jump past the highest id left when dictionary entries were lost.
constexpr uint32_t kNodeIdJump = 1u << 16;
constexpr uint64_t kSeriesIdJump = uint64_t{1} << 32;
// Bytes of copied keys per table file the salvage writes.
constexpr size_t kSalvageFileBytes = 64 << 20;

// The salvage's copy: keys in ascending order written straight into table files of about
// kSalvageFileBytes in `dir`, which the new database then takes whole
// (DB::IngestExternalFile): no memtable, log or compaction on the way, so a copy runs at
// the speed of reading and compressing (a write through the memtable stalled on level-0
// files and ran at a third of it). The files are compressed as the bottommost level is.
class TableFileCopy {
 public:
  TableFileCopy(rocksdb::Options options, fs::path dir)
      : options_(std::move(options)), dir_(std::move(dir)) {}

  rocksdb::Status Put(const rocksdb::Slice& key, const rocksdb::Slice& value) {
    if (!writer_) {
      std::error_code ec;
      fs::create_directories(dir_, ec);
      writer_ = std::make_unique<rocksdb::SstFileWriter>(rocksdb::EnvOptions(), options_);
      files_.push_back((dir_ / absl::StrCat("copy-", files_.size(), ".sst")).string());
      if (rocksdb::Status s = writer_->Open(files_.back()); !s.ok()) return s;
      bytes_ = 0;
    }
    if (rocksdb::Status s = writer_->Put(key, value); !s.ok()) return s;
    bytes_ += key.size() + value.size();
    return bytes_ >= kSalvageFileBytes ? Finish() : rocksdb::Status::OK();
  }
  // Ends the file being written (if any).
  rocksdb::Status Finish() {
    if (!writer_) return rocksdb::Status::OK();
    rocksdb::Status s = writer_->Finish();
    writer_.reset();
    return s;
  }
  // Moves every file into `db`.
  rocksdb::Status IngestInto(rocksdb::DB* db) {
    if (rocksdb::Status s = Finish(); !s.ok()) return s;
    if (files_.empty()) return rocksdb::Status::OK();
    rocksdb::IngestExternalFileOptions ingest;
    ingest.move_files = true;
    return db->IngestExternalFile(files_, ingest);
  }

 private:
  const rocksdb::Options options_;
  const fs::path dir_;
  std::unique_ptr<rocksdb::SstFileWriter> writer_;
  std::vector<std::string> files_;
  uint64_t bytes_ = 0;
};

// The node id in a 'B', 'R' or 'H' key; nullopt for other keys.
std::optional<NodeId> NodeOfKey(std::string_view key) {
  if (key.size() < 13) return std::nullopt;
  if (key[0] != keys::kBlobTag && key[0] != keys::kRollupTag && key[0] != keys::kHistoryTag) {
    return std::nullopt;
  }
  return keys::GetU32(key.substr(9));
}

// Where `key` lies, in words.
std::string DescribeKey(std::string_view key) {
  if (key.empty()) return "the end of the keys";
  const char tag = key[0];
  if (std::optional<NodeId> node = NodeOfKey(key)) {
    const int64_t hour = keys::GetI64(key.substr(1));
    const char* what = tag == keys::kBlobTag     ? "scrapes"
                       : tag == keys::kRollupTag ? "rollups"
                                                 : "usage histograms";
    return absl::StrCat(what, " of node ", *node, ", hour ",
                        FormatRfc3339(AtNanos(hour * keys::kPartitionNanos)));
  }
  if (tag == keys::kWorkloadHistoryTag && key.size() >= 9) {
    return absl::StrCat(
        "workload usage histograms, hour ",
        FormatRfc3339(AtNanos(keys::GetI64(key.substr(1)) * keys::kPartitionNanos)));
  }
  switch (tag) {
    case keys::kNodeTag:
      return "the node dictionary";
    case keys::kSeriesTag:
      return "the series dictionary";
    case keys::kRetiredTag:
      return "the retired series";
    case keys::kMetaTag:
      return "the store's metadata";
    default:
      return absl::StrCat("keys under tag 0x", absl::Hex(static_cast<uint8_t>(tag)));
  }
}

// Whether keys after `after` and before `before` ("": the end) may include dictionary
// entries or the store's metadata.
bool SpansDictionary(const std::string& after, const std::string& before) {
  for (char tag : {keys::kNodeTag, keys::kSeriesTag, keys::kRetiredTag, keys::kMetaTag}) {
    const std::string first(1, tag);
    const std::string past(1, static_cast<char>(tag + 1));
    if (after < past && (before.empty() || before > first)) return true;
  }
  return false;
}

// Seek targets as big-endian numbers of kKeyWidth bytes (keys cut or padded with zeros),
// so that Salvage can step past damage by adding powers of two and bisect back.
constexpr size_t kKeyWidth = 64;
using WideKey = std::array<uint8_t, kKeyWidth>;

WideKey Widen(std::string_view key) {
  WideKey wide{};
  std::copy_n(key.begin(), std::min(key.size(), kKeyWidth), wide.begin());
  return wide;
}

std::string Narrow(const WideKey& wide) {
  size_t size = kKeyWidth;
  while (size > 1 && wide[size - 1] == 0) --size;
  return std::string(wide.begin(), wide.begin() + static_cast<std::ptrdiff_t>(size));
}

// key + 2^bit; false when that overflows the width (past every key).
bool AddPowerOfTwo(WideKey* key, int bit) {
  size_t at = kKeyWidth - 1 - static_cast<size_t>(bit / 8);
  unsigned carry = 1u << (bit % 8);
  while (carry != 0) {
    const unsigned sum = (*key)[at] + carry;
    (*key)[at] = static_cast<uint8_t>(sum);
    carry = sum >> 8;
    if (carry != 0 && at == 0) return false;
    --at;
  }
  return true;
}

// The first key after an unreadable region that begins after `from` (a key read, or the
// smallest key of the database when none could be): seeks from + 2^k for k = 0, 1, … until
// one does not fail, then bisects back between the last that failed and it, so that at
// most the keys that share the damaged blocks are lost, whatever their layout (a region
// across hours, nodes or tags). Leaves `it` at that key (or invalid with an OK status when
// nothing after the damage can be read); false when every seek failed.
bool SeekPastDamage(rocksdb::DB* db, const rocksdb::ReadOptions& read,
                    std::unique_ptr<rocksdb::Iterator>* it, const std::string& from) {
  const WideKey base = Widen(from);
  // Whether a seek to `target` reads: a key, or the end. A new iterator each time: one that
  // met damage may answer a later seek from what it holds.
  const auto reads = [&](const WideKey& target) {
    it->reset(db->NewIterator(read));
    (*it)->Seek(Narrow(target));
    return (*it)->Valid() || (*it)->status().ok();
  };
  constexpr int kBits = static_cast<int>(kKeyWidth * 8);
  int bit = 0;
  for (; bit < kBits; ++bit) {
    WideKey target = base;
    if (!AddPowerOfTwo(&target, bit)) return false;
    if (reads(target)) break;
  }
  if (bit == kBits) return false;
  // base + 2^(bit-1) fails and base + 2^bit reads: the first target that reads lies
  // between; `failing` is the largest target known to fail.
  WideKey failing = base;
  if (bit > 0) (void)AddPowerOfTwo(&failing, bit - 1);
  for (int b = bit - 2; b >= 0; --b) {
    WideKey target = failing;
    (void)AddPowerOfTwo(&target, b);
    if (!reads(target)) failing = target;
  }
  WideKey first = failing;
  if (!AddPowerOfTwo(&first, 0) || !reads(first)) {
    // Not monotonic there (another damaged block): take the target that read.
    first = base;
    (void)AddPowerOfTwo(&first, bit);
    return reads(first);
  }
  return true;
}

absl::Status FsError(const char* what, const fs::path& path, const std::error_code& ec) {
  return absl::UnavailableError(
      absl::StrCat("store: cannot ", what, " ", path.string(), ": ", ec.message()));
}

// "quarantine-20261202T051800Z" (a suffix when that exists already).
fs::path NewQuarantineDir(const fs::path& dir) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &utc);
  fs::path path = dir / absl::StrCat(kQuarantinePrefix, stamp);
  for (int i = 1; fs::exists(path); ++i) {
    path = dir / absl::StrCat(kQuarantinePrefix, stamp, "-", i);
  }
  return path;
}

// Whether `name` in a store's directory belongs to the database (and moves with it), not
// to the store's own housekeeping.
bool IsDatabaseFile(const std::string& name) {
  return name != kSalvageDir && name != kReserveName && !absl::StartsWith(name, kQuarantinePrefix);
}

// Moves the database files of `dir` into a new quarantine folder; its path.
absl::StatusOr<fs::path> QuarantineDatabaseFiles(const fs::path& dir) {
  const fs::path quarantine = NewQuarantineDir(dir);
  std::error_code ec;
  fs::create_directory(quarantine, ec);
  if (ec) return FsError("create", quarantine, ec);
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!IsDatabaseFile(name)) continue;
    fs::rename(entry.path(), quarantine / name, ec);
    if (ec) return FsError("move aside", entry.path(), ec);
  }
  if (ec) return FsError("list", dir, ec);
  if (absl::Status s = SyncDirectory(quarantine); !s.ok()) return s;
  if (absl::Status s = SyncDirectory(dir); !s.ok()) return s;
  return quarantine;
}

// The copy in <dir>/salvage is complete: the damaged files go to quarantine and the copy's
// take their place. Also finishes one a crash cut short (the moves are idempotent).
absl::StatusOr<fs::path> SwapInSalvage(const fs::path& dir) {
  const fs::path salvage = dir / std::string(kSalvageDir);
  absl::StatusOr<fs::path> quarantine = QuarantineDatabaseFiles(dir);
  if (!quarantine.ok()) return quarantine.status();
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(salvage, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == kSalvageDone) continue;
    fs::rename(entry.path(), dir / name, ec);
    if (ec) return FsError("move into place", entry.path(), ec);
  }
  if (ec) return FsError("list", salvage, ec);
  if (absl::Status s = SyncDirectory(dir); !s.ok()) return s;
  fs::remove_all(salvage, ec);
  if (ec) return FsError("remove", salvage, ec);
  return quarantine;
}

// At open: a salvage that a crash cut short is finished (its copy was complete) or its
// copy discarded (it was not).
absl::Status SettleSalvage(const fs::path& dir) {
  const fs::path salvage = dir / std::string(kSalvageDir);
  std::error_code ec;
  if (!fs::exists(salvage, ec)) return absl::OkStatus();
  if (fs::exists(salvage / std::string(kSalvageDone), ec)) {
    absl::StatusOr<fs::path> quarantine = SwapInSalvage(dir);
    if (!quarantine.ok()) return quarantine.status();
    KLOG(WARNING) << "store: finished a salvage of " << dir.string()
                  << " that was cut short; the damaged files are in " << quarantine->string();
    return absl::OkStatus();
  }
  fs::remove_all(salvage, ec);
  if (ec) return FsError("remove an unfinished salvage", salvage, ec);
  KLOG(WARNING) << "store: removed the unfinished copy of a salvage in " << salvage.string();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(StoreOptions options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  auto counters = std::make_shared<Counters>();
  auto listener = std::make_shared<Listener>(options.dir, counters);
  uint64_t wal_dropped = 0;
  bool released_reserve = false;
  if (absl::Status s = SettleSalvage(options.dir); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<rocksdb::DB>> opened =
      OpenDatabase(options, listener, /*reopen=*/false, &wal_dropped);
  if (!opened.ok() && absl::StrContains(opened.status().message(), "No space left") &&
      ReleaseReserve(options.dir)) {
    KLOG(WARNING) << "store: the volume of " << options.dir
                  << " is full: its reserve is removed so that RocksDB can open";
    released_reserve = true;
    opened = OpenDatabase(options, listener, /*reopen=*/false, &wal_dropped);
  }
  if (!opened.ok()) return opened.status();
  counters->wal_bytes_dropped.store(wal_dropped);
  std::unique_ptr<rocksdb::DB> db = *std::move(opened);
  rocksdb::Status s;

  // The format marker: written into an empty database, checked in an existing one.
  std::string format;
  s = db->Get(rocksdb::ReadOptions(), ToSlice(kFormatKey), &format);
  if (s.IsNotFound()) {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    it->SeekToFirst();
    if (it->Valid()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot open the RocksDB store in ", options.dir,
          ": the database holds data but no kubestat format marker (not a kubestat store)"));
    }
    if (!it->status().ok()) return OpenError(options.dir, it->status());
    rocksdb::WriteOptions w;
    w.sync = true;
    s = db->Put(w, ToSlice(kFormatKey), ToSlice(kFormatValue));
    if (!s.ok()) return OpenError(options.dir, s);
  } else if (!s.ok()) {
    return OpenError(options.dir, s);
  } else if (format != kFormatValue) {
    return absl::FailedPreconditionError(absl::StrCat("cannot open the RocksDB store in ",
                                                      options.dir, ": unknown format \"",
                                                      format.substr(0, 64), "\""));
  }
  std::unique_ptr<Store> store(new Store(std::move(options), std::move(db), std::move(counters)));
  store->listener_ = std::move(listener);
  if (!KeepReserve(store->options_.dir, store->FreeBytes(), store->VolumeBytes()) &&
      released_reserve) {
    store->backlog_->reserve_missing.store(true);
  }
  if (absl::Status status = store->LoadIdCounters(); !status.ok()) {
    return absl::Status(status.code(), absl::StrCat("cannot open the RocksDB store in ",
                                                    store->options_.dir, ": ", status.message()));
  }
  store->CheckRecovery();
  return store;
}

Store::Store(StoreOptions options, std::unique_ptr<rocksdb::DB> db,
             std::shared_ptr<Counters> counters)
    : options_(std::move(options)),
      db_(std::move(db)),
      counters_(std::move(counters)),
      backlog_(std::make_unique<Backlog>()),
      ledger_(std::make_unique<AckLedger>(options_.dir)) {}

Store::~Store() {
  counters_->stopping.store(true);
  std::thread salvage;
  {
    std::lock_guard hold(salvage_mu_);
    salvage = std::move(salvage_thread_);
  }
  if (salvage.joinable()) salvage.join();
  std::unique_lock lock(backlog_->mu);
  if (backlog_->active.load()) {
    backlog_->next_drain = {};
    while (backlog_->active.load() &&
           backlog_->next_drain == std::chrono::steady_clock::time_point{}) {
      DrainLocked();
    }
    if (backlog_->active.load()) {
      KLOG(ERROR) << "store: closing " << options_.dir << " with " << backlog_->batches.size()
                  << " batches of writes that could not be written (" << backlog_->why
                  << "): they are lost";
    }
  }
  if (!db_) return;
  // The marker at a clean stop: exactly the totals the database holds.
  if (AckTable stored; LoadAcks(&stored).ok()) {
    if (absl::Status s = WriteAckMarker(options_.dir, stored); !s.ok()) {
      KLOG(WARNING) << s.message();
    }
  }
  // Let background work finish before the handle goes.
  rocksdb::CancelAllBackgroundWork(db_.get(), /*wait=*/true);
  (void)db_->Close();
}

absl::Status Store::LoadIdCounters() {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  // The last key with a tag is the one before the first key of the next tag.
  it->SeekForPrev(std::string(1, keys::kNodeTag + 1));
  if (it->Valid() && it->key().size() == 5 && it->key()[0] == keys::kNodeTag) {
    next_node_id_ = keys::GetU32(ToView(it->key()).substr(1)) + 1;
  }
  it->SeekForPrev(std::string(1, keys::kSeriesTag + 1));
  if (it->Valid() && it->key().size() == 9 && it->key()[0] == keys::kSeriesTag) {
    next_series_id_ = keys::GetU64(ToView(it->key()).substr(1)) + 1;
  }
  if (!it->status().ok()) return ReadError("reading the dictionary", it->status());
  it.reset();
  // After a salvage that lost dictionary entries: ids below the floor are never handed out.
  std::string floor;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), ToSlice(kIdFloorKey), &floor);
  if (s.ok() && floor.size() == 12) {
    next_node_id_.store(std::max(next_node_id_.load(), keys::GetU32(floor)));
    next_series_id_.store(
        std::max(next_series_id_.load(), keys::GetU64(std::string_view(floor).substr(4))));
  } else if (!s.ok() && !s.IsNotFound()) {
    return ReadError("reading the id floor", s);
  }
  return absl::OkStatus();
}

absl::Status Store::LoadAcks(AckTable* table) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(ToSlice(keys::kAckPrefix));
       it->Valid() && it->key().starts_with(ToSlice(keys::kAckPrefix)); it->Next()) {
    const std::string_view key = ToView(it->key());
    Ack ack;
    if (key.size() != keys::kAckPrefix.size() + 4 || !DecodeAck(ToView(it->value()), &ack)) {
      continue;
    }
    (*table)[keys::GetU32(key.substr(keys::kAckPrefix.size()))] = ack;
  }
  if (!it->status().ok())
    return ReadError("reading the totals of acknowledged scrapes", it->status());
  return absl::OkStatus();
}

void Store::CheckRecovery() {
  AckTable stored;
  if (absl::Status s = LoadAcks(&stored); !s.ok()) {
    KLOG(ERROR) << "store: " << options_.dir << ": " << s.message()
                << ": what the last stop may have lost is not known";
  }
  absl::StatusOr<AckTable> marker = ReadAckMarker(options_.dir);
  if (!marker.ok() && !absl::IsNotFound(marker.status())) {
    KLOG(ERROR) << marker.status().message() << ": what the last stop may have lost is not known";
  }
  if (marker.ok()) {
    for (const auto& [node, acked] : *marker) {
      auto it = stored.find(node);
      const Ack held = it == stored.end() ? Ack{} : it->second;
      if (acked.scrapes <= held.scrapes) continue;
      RecoveryLoss loss;
      loss.node = node;
      if (!db_->Get(rocksdb::ReadOptions(), keys::NodeKey(node), &loss.name).ok()) {
        loss.name.clear();
      }
      loss.after = held.scrapes == 0 ? Timestamp{} : AtNanos(held.newest);
      loss.through = AtNanos(acked.newest);
      loss.scrapes = acked.scrapes - held.scrapes;
      loss.samples = acked.samples > held.samples ? acked.samples - held.samples : 0;
      recovery_losses_.push_back(std::move(loss));
    }
    std::sort(recovery_losses_.begin(), recovery_losses_.end(),
              [](const RecoveryLoss& a, const RecoveryLoss& b) { return a.node < b.node; });
  }
  if (!recovery_losses_.empty()) {
    uint64_t scrapes = 0;
    uint64_t samples = 0;
    Timestamp from = recovery_losses_.front().through;
    Timestamp through{};
    std::string nodes;
    constexpr size_t kNamed = 10;
    for (size_t i = 0; i < recovery_losses_.size(); ++i) {
      const RecoveryLoss& loss = recovery_losses_[i];
      scrapes += loss.scrapes;
      samples += loss.samples;
      from = std::min(from, loss.after == Timestamp{} ? loss.through : loss.after);
      through = std::max(through, loss.through);
      if (i < kNamed) {
        absl::StrAppend(&nodes, i == 0 ? "" : ", ",
                        loss.name.empty() ? absl::StrCat("node id ", loss.node) : loss.name, " (",
                        loss.scrapes, " after ",
                        loss.after == Timestamp{} ? "none" : FormatRfc3339(loss.after), ")");
      }
    }
    if (recovery_losses_.size() > kNamed) {
      absl::StrAppend(&nodes, " and ", recovery_losses_.size() - kNamed, " more nodes");
    }
    counters_->recovery_lost_scrapes.store(scrapes);
    counters_->recovery_lost_samples.store(samples);
    counters_->recovery_lost_nodes.store(recovery_losses_.size());
    KLOG(ERROR) << "store: the write-ahead log of " << options_.dir << " did not give back "
                << scrapes << " acknowledged scrapes (" << samples << " samples) of "
                << recovery_losses_.size() << " nodes, taken after " << FormatRfc3339(from)
                << " through " << FormatRfc3339(through)
                << "; the windows are rebuilt without them: " << nodes;
  }
  ledger_->Reset(std::move(stored));
  PersistAcks(/*force=*/true);
}

void Store::PersistAcks(bool force) {
  const absl::Status s = ledger_->Persist(options_.ack_marker_interval, force);
  if (!s.ok()) counters_->ack_marker_errors.fetch_add(1, std::memory_order_relaxed);
  if (s.ok() == !counters_->ack_marker_failing.load()) return;
  if (counters_->ack_marker_failing.exchange(!s.ok()) == !s.ok()) return;
  if (s.ok()) {
    KLOG(INFO) << "store: the marker of acknowledged scrapes in " << options_.dir
               << " is written again";
  } else {
    KLOG(ERROR) << s.message()
                << ": a crash meanwhile could lose acknowledged scrapes without it being seen";
  }
}

NodeId Store::AllocateNodeId() { return next_node_id_.fetch_add(1); }
SeriesId Store::AllocateSeriesId() { return next_series_id_.fetch_add(1); }

uint64_t Store::FreeBytes() const {
  struct statvfs fs {};
  if (statvfs(options_.dir.c_str(), &fs) != 0) return 0;
  return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
}

uint64_t Store::VolumeBytes() const {
  struct statvfs fs {};
  if (statvfs(options_.dir.c_str(), &fs) != 0) return 0;
  return static_cast<uint64_t>(fs.f_blocks) * fs.f_frsize;
}

absl::Status Store::ReadyToWrite(uint64_t free) {
  if (backlog_->reserve_missing.load()) {
    if (!KeepReserve(options_.dir, free, VolumeBytes())) {
      return absl::ResourceExhaustedError(
          absl::StrCat("store: writes paused: ", free, " bytes free in ", options_.dir,
                       ", too few to keep the store's reserve for its next open"));
    }
    backlog_->reserve_missing.store(false);
  }
  if (options_.min_free_bytes > 0) {
    const uint64_t min_free = std::min(options_.min_free_bytes, VolumeBytes() / 10);
    const bool low = free < min_free;
    if (low != counters_->low_space.exchange(low)) {
      if (low) {
        counters_->low_space_pauses.fetch_add(1, std::memory_order_relaxed);
        KLOG(ERROR) << "store: " << free << " bytes free in " << options_.dir
                    << ", below --storage-min-free (" << min_free
                    << "): writes paused, kept in memory meanwhile";
      } else {
        KLOG(INFO) << "store: " << free << " bytes free in " << options_.dir << ": writes resumed";
      }
    }
    if (low) {
      counters_->low_space_refusals.fetch_add(1, std::memory_order_relaxed);
      return absl::ResourceExhaustedError(
          absl::StrCat("store: writes paused: ", free, " bytes free in ", options_.dir,
                       ", below --storage-min-free (", min_free, ")"));
    }
  }
  if (counters_->needs_resume.load()) {
    // RocksDB stops writes after a background error it does not retry itself (e.g. a
    // flush that found no room); with room again, asking it to resume is what it allows.
    if (const rocksdb::Status r = db_->Resume(); r.ok()) {
      if (counters_->needs_resume.exchange(false)) {
        counters_->recoveries.fetch_add(1, std::memory_order_relaxed);
        KLOG(INFO) << "store: RocksDB resumed writes in " << options_.dir;
      }
    } else {
      // RocksDB's own recovery from a full disk waits for a whole write buffer of room,
      // which a small volume never has; a reopen (a new log) needs only what it writes.
      backlog_->reopen.store(true);
      return absl::UnavailableError(absl::StrCat("store: RocksDB stopped writes in ", options_.dir,
                                                 " after a background error: ", r.ToString()));
    }
  }
  return absl::OkStatus();
}

absl::Status Store::Write(const ScrapeBatch& batch) {
  if (counters_->damaged.load(std::memory_order_relaxed)) MaybeStartSalvage();
  // The nodes' new totals travel in the batch, so the database's always match its scrapes.
  std::vector<std::pair<NodeId, Ack>> acks;
  if (!batch.stamps_.empty() && !batch.acks_put_) {
    acks = ledger_->Next(batch.stamps_);
    for (const auto& [node, ack] : acks) batch.batch_->Put(keys::AckKey(node), EncodeAck(ack));
    batch.acks_put_ = true;
  }
  absl::Status ready;
  {
    std::shared_lock lock(backlog_->mu);
    const uint64_t free = FreeBytes();
    // Near a full disk, writes go to RocksDB one at a time: after a log append that failed,
    // RocksDB's log writer holds the error, and a write group that appends to it before the
    // error is noticed aborts the process (an assertion in RocksDB). One at a time, the
    // next write sees the failure (`reopen`) and waits instead.
    std::unique_lock serial(backlog_->near_full_writes, std::defer_lock);
    if (free < kSerialWritesBelow) serial.lock();
    if (backlog_->salvaging.load()) {
      ready = absl::UnavailableError(absl::StrCat(
          "store: writes wait in memory while damage found in ", options_.dir, " is salvaged"));
    } else if (backlog_->active.load() || backlog_->reopen.load() || !db_) {
      ready = absl::UnavailableError("store: writes wait in memory");
    } else {
      ready = ReadyToWrite(free);
    }
    if (ready.ok()) {
      rocksdb::WriteOptions w;
      w.sync = options_.sync;
      const auto start = std::chrono::steady_clock::now();
      rocksdb::Status s;
      {
#ifdef KUBESTAT_STORE_SERIAL_WRITES
        std::lock_guard serial(serial_writes);
#endif
        s = db_->Write(w, batch.batch_.get());
      }
      const auto nanos = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                   std::chrono::steady_clock::now() - start)
                                                   .count());
      if (s.ok()) {
        batch.SettleChains(/*written=*/true);
        counters_->batches.fetch_add(1, std::memory_order_relaxed);
        counters_->bytes_written.fetch_add(batch.ByteSize(), std::memory_order_relaxed);
        counters_->write_nanos.fetch_add(nanos, std::memory_order_relaxed);
        uint64_t max = counters_->max_write_nanos.load(std::memory_order_relaxed);
        while (nanos > max && !counters_->max_write_nanos.compare_exchange_weak(max, nanos)) {
        }
        if (!acks.empty()) {
          ledger_->Acknowledge(acks);
          PersistAcks(/*force=*/false);
        }
        return absl::OkStatus();
      }
      counters_->batch_errors.fetch_add(1, std::memory_order_relaxed);
      backlog_->reopen.store(true);
      ready = absl::UnavailableError(
          absl::StrCat("store: writing a batch to ", options_.dir, ": ", s.ToString()));
    } else if (options_.backlog_bytes == 0) {
      counters_->batch_errors.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (options_.backlog_bytes == 0) {
    batch.SettleChains(/*written=*/false);
    if (backlog_->reopen.load()) {
      std::unique_lock lock(backlog_->mu);
      if (backlog_->reopen.load() && !backlog_->salvaging.load()) (void)ReopenLocked();
    }
    return ready;
  }
  return Defer(batch, ready);
}

absl::Status Store::Defer(const ScrapeBatch& batch, const absl::Status& why) {
  Backlog& b = *backlog_;
  std::unique_lock lock(b.mu);
  // A kept blob is a key blob's successor only if the key blob is stored, so a chain goes
  // on from disk alone: the next blob is a key blob, and any kept batch can be dropped.
  batch.SettleChains(/*written=*/false);
  const uint64_t size = batch.ByteSize();
  const uint64_t cost = 2 * size + kIndexEntryBytes * batch.batch_->Count();
  if (BacklogBytesLocked() + cost > options_.backlog_bytes) ShedLocked(options_.backlog_bytes / 2);
  b.batches.push_back(*batch.batch_);
  b.batch_bytes += size;
  IndexInto into(&b.index, &b.index_entries);
  (void)b.batches.back().Iterate(&into);
  counters_->batches_deferred.fetch_add(1, std::memory_order_relaxed);
  if (!b.active.exchange(true)) {
    b.why = std::string(why.message());
    b.since = std::chrono::system_clock::now();
    b.next_drain = std::chrono::steady_clock::now() + kDrainRetry;
    KLOG(ERROR) << "store: writes to " << options_.dir << " are kept in memory (at most "
                << options_.backlog_bytes
                << " bytes) and written when RocksDB takes them again: " << b.why;
  }
  DrainLocked();
  return absl::OkStatus();
}

void Store::DrainLocked() {
  Backlog& b = *backlog_;
  const auto now = std::chrono::steady_clock::now();
  if (now < b.next_drain || b.salvaging.load()) return;
  b.next_drain = {};
  if (b.reopen.load()) {
    if (absl::Status reopened = ReopenLocked(); !reopened.ok()) {
      b.why = std::string(reopened.message());
      b.next_drain = now + kDrainRetry;
      return;
    }
  }
  if (absl::Status ready = ReadyToWrite(FreeBytes()); !ready.ok()) {
    b.why = std::string(ready.message());
    b.next_drain = now + kDrainRetry;
    return;
  }
  rocksdb::WriteOptions w;
  w.sync = options_.sync;
  uint64_t drained = 0;
  while (!b.batches.empty() && drained < kDrainBytesPerWrite) {
    rocksdb::WriteBatch& front = b.batches.front();
    rocksdb::Status s;
    {
#ifdef KUBESTAT_STORE_SERIAL_WRITES
      std::lock_guard serial(serial_writes);
#endif
      s = db_->Write(w, &front);
    }
    if (!s.ok()) {
      counters_->batch_errors.fetch_add(1, std::memory_order_relaxed);
      b.reopen.store(true);
      b.why = absl::StrCat("writing a batch to ", options_.dir, ": ", s.ToString());
      b.next_drain = now + kDrainRetry;
      return;
    }
    const uint64_t size = front.GetDataSize();
    drained += size;
    b.batch_bytes -= size;
    counters_->batches.fetch_add(1, std::memory_order_relaxed);
    counters_->bytes_written.fetch_add(size, std::memory_order_relaxed);
    counters_->backlog_written.fetch_add(1, std::memory_order_relaxed);
    b.batches.pop_front();
  }
  if (!b.batches.empty()) return;
  b.index.Clear();
  b.index_entries = 0;
  b.batch_bytes = 0;
  b.active.store(false);
  const auto kept_for = std::chrono::system_clock::now() - b.since;
  KLOG(INFO) << "store: the writes kept in memory are in " << options_.dir << " (after "
             << std::chrono::duration_cast<std::chrono::seconds>(kept_for).count()
             << "s); writes go to disk again";
  b.why.clear();
}

absl::Status Store::ReopenLocked() {
  // Room for what an open writes (a new log, MANIFEST and OPTIONS file) and a little more:
  // otherwise the open would fail for want of it and the handle would be gone meanwhile.
  const uint64_t room_to_reopen = std::max<uint64_t>(ReserveBytes(VolumeBytes()), 64 << 10);
  if (FreeBytes() < room_to_reopen && ReleaseReserve(options_.dir)) {
    KLOG(WARNING) << "store: the volume of " << options_.dir
                  << " is full: its reserve is removed so that RocksDB can reopen";
    backlog_->reserve_missing.store(true);
  }
  if (const uint64_t free = FreeBytes(); free < room_to_reopen) {
    return absl::ResourceExhaustedError(absl::StrCat("store: ", free, " bytes free in ",
                                                     options_.dir,
                                                     ", too few to reopen RocksDB after a "
                                                     "failed write"));
  }
  if (db_) {
    rocksdb::CancelAllBackgroundWork(db_.get(), /*wait=*/true);
    (void)db_->Close();
    db_.reset();
  }
  uint64_t wal_dropped = 0;
  absl::StatusOr<std::unique_ptr<rocksdb::DB>> opened =
      OpenDatabase(options_, listener_, /*reopen=*/true, &wal_dropped);
  if (!opened.ok()) {
    KLOG(ERROR) << "store: reopening RocksDB after a failed write: " << opened.status().message();
    return opened.status();
  }
  db_ = *std::move(opened);
  backlog_->reopen.store(false);
  counters_->needs_resume.store(false);
  counters_->reopens.fetch_add(1, std::memory_order_relaxed);
  // The log's torn tail is the failed write, which the backlog holds (or which was
  // refused): not a loss.
  KLOG(INFO) << "store: reopened RocksDB in " << options_.dir << " after a failed write"
             << (wal_dropped > 0 ? absl::StrCat(" (the failed write's ", wal_dropped,
                                                " bytes left out of the log)")
                                 : std::string());
  return absl::OkStatus();
}

void Store::ShedLocked(uint64_t keep) {
  Backlog& b = *backlog_;
  rocksdb::WriteBatch kept;
  SortDropped dropped(&kept);
  // What the backlog will hold once the index is rebuilt from the batches that stay: their
  // bytes twice (the batches and the index's copy) and the index entries.
  uint64_t entries = 0;
  for (const rocksdb::WriteBatch& batch : b.batches) entries += batch.Count();
  const auto projected = [&] { return 2 * b.batch_bytes + kIndexEntryBytes * entries; };
  uint64_t batches = 0;
  while (!b.batches.empty() && projected() > keep) {
    dropped.lost_any = false;
    (void)b.batches.front().Iterate(&dropped);
    if (dropped.lost_any) ++batches;
    b.batch_bytes -= b.batches.front().GetDataSize();
    entries -= b.batches.front().Count();
    b.batches.pop_front();
  }
  if (batches == 0 && kept.Count() == 0) return;
  b.index.Clear();
  b.index_entries = 0;
  if (kept.Count() > 0) {
    b.batch_bytes += kept.GetDataSize();
    b.batches.push_front(std::move(kept));
  }
  for (rocksdb::WriteBatch& batch : b.batches) {
    IndexInto into(&b.index, &b.index_entries);
    (void)batch.Iterate(&into);
  }
  if (batches == 0) return;
  counters_->batches_lost.fetch_add(batches, std::memory_order_relaxed);
  counters_->scrapes_lost.fetch_add(dropped.scrapes, std::memory_order_relaxed);
  if (dropped.scrapes > 0) {
    int64_t from = counters_->lost_from.load();
    if (from == 0 || dropped.oldest < from) counters_->lost_from.store(dropped.oldest);
    counters_->lost_through.store(std::max(counters_->lost_through.load(), dropped.newest));
  }
  b.loss_generation.fetch_add(1);
  KLOG(ERROR) << "store: the writes kept in memory for " << options_.dir << " outgrew "
              << options_.backlog_bytes << " bytes: dropped the oldest " << batches << " batches ("
              << dropped.scrapes << " node scrapes, "
              << (dropped.scrapes > 0 ? absl::StrCat(FormatRfc3339(AtNanos(dropped.oldest)), " to ",
                                                     FormatRfc3339(AtNanos(dropped.newest)))
                                      : std::string("no scrape"))
              << "); their series and nodes are kept";
}

uint64_t Store::BacklogBytesLocked() const {
  const Backlog& b = *backlog_;
  return b.batch_bytes + b.index.GetDataSize() + kIndexEntryBytes * b.index_entries;
}

uint64_t Store::LossGeneration() const { return backlog_->loss_generation.load(); }

std::string Store::DegradedReason() const {
  std::string damage;
  if (backlog_->salvaging.load()) {
    damage = absl::StrCat("damage read in ", options_.dir, " while running is being salvaged");
  } else if (counters_->damaged.load()) {
    damage = absl::StrCat(
        "damage read in ", options_.dir, " while running ",
        options_.salvage_when_damaged ? "waits for a salvage" : "is salvaged at the next start");
  }
  if (!backlog_->active.load()) return damage;
  std::shared_lock lock(backlog_->mu);
  if (!backlog_->active.load()) return damage;
  const auto since = std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::system_clock::now() - backlog_->since);
  return absl::StrCat(damage, damage.empty() ? "" : "; ", "writes to ", options_.dir,
                      " have been kept in memory for ", since.count(), "s (",
                      backlog_->batches.size(), " batches, ", BacklogBytesLocked(),
                      " bytes of at most ", options_.backlog_bytes, "): ", backlog_->why);
}

uint64_t Store::SalvageEpoch() const { return salvage_epoch_.load(); }

void Store::NoteDamage(const rocksdb::Status& s) const {
  if (!s.IsCorruption() || !counters_->MarkDamaged()) return;
  KLOG(ERROR) << "store: a read found damage in " << options_.dir << ": " << s.ToString()
              << (options_.salvage_when_damaged ? "; the store will be salvaged"
                                                : "; it is salvaged at the next start");
}

absl::Status Store::ReadFailed(const char* what, const rocksdb::Status& s) const {
  counters_->read_errors.fetch_add(1, std::memory_order_relaxed);
  NoteDamage(s);
  return ReadError(what, s);
}

absl::StatusOr<Dictionary> Store::LoadDictionary() const {
  Dictionary dict;
  const Reader reader(*this);
  std::unique_ptr<rocksdb::Iterator> it = reader.NewIterator();
  for (it->Seek(std::string(1, keys::kNodeTag));
       it->Valid() && it->key().size() > 0 && it->key()[0] == keys::kNodeTag; it->Next()) {
    if (it->key().size() != 5) {
      counters_->read_errors.fetch_add(1, std::memory_order_relaxed);
      return absl::DataLossError("store: malformed node dictionary key");
    }
    dict.nodes.push_back({keys::GetU32(ToView(it->key()).substr(1)), it->value().ToString()});
  }
  std::vector<SeriesId> retired;
  for (it->Seek(std::string(1, keys::kRetiredTag));
       it->Valid() && it->key().size() > 0 && it->key()[0] == keys::kRetiredTag; it->Next()) {
    if (it->key().size() == 9) retired.push_back(keys::GetU64(ToView(it->key()).substr(1)));
  }
  for (it->Seek(std::string(1, keys::kSeriesTag));
       it->Valid() && it->key().size() > 0 && it->key()[0] == keys::kSeriesTag; it->Next()) {
    if (it->key().size() != 9 || it->value().size() < 4) {
      counters_->read_errors.fetch_add(1, std::memory_order_relaxed);
      return absl::DataLossError("store: malformed series dictionary entry");
    }
    const SeriesId id = keys::GetU64(ToView(it->key()).substr(1));
    if (std::binary_search(retired.begin(), retired.end(), id)) continue;
    const std::string_view value = ToView(it->value());
    dict.series.push_back({id, keys::GetU32(value), std::string(value.substr(4))});
  }
  if (!it->status().ok()) {
    return ReadFailed("reading the dictionary", it->status());
  }
  return dict;
}

absl::Status Store::ScanBlobs(const Reader& reader, NodeId node, int64_t lo, int64_t hi,
                              const BlobVisitor& visit) const {
  if (lo >= hi) return absl::OkStatus();
  // Chained blobs decode from the key blob that starts their slot.
  const int64_t from = keys::ChainSlotStart(lo + 1);
  const int64_t last_hour = HourOf(hi);
  std::unique_ptr<rocksdb::Iterator> it = reader.NewIterator();
  BlobChainState state, next;
  std::vector<SeriesValue> values;
  int64_t hour = HourOf(from);
  bool first = true;
  while (hour <= last_hour) {
    const std::string prefix = keys::BlobPrefix(hour, node);
    it->Seek(first ? keys::BlobKey(node, from) : prefix);
    first = false;
    if (!it->Valid() || it->key()[0] != keys::kBlobTag) break;
    if (it->key().size() != keys::kBlobKeySize) {
      counters_->read_errors.fetch_add(1, std::memory_order_relaxed);
      return absl::DataLossError("store: malformed scrape key");
    }
    const int64_t key_hour = keys::GetI64(ToView(it->key()).substr(1));
    if (key_hour > hour) {
      hour = key_hour;  // skip the hours that hold nothing
      continue;
    }
    state.Clear();  // chains never cross hours
    for (; it->Valid() && it->key().starts_with(prefix); it->Next()) {
      const int64_t t = keys::BlobTime(ToView(it->key()));
      if (t > hi) return absl::OkStatus();
      absl::Status s = DecodeScrapeBlob(ToView(it->value()), t, &state, &values);
      if (absl::IsFailedPrecondition(s)) {
        // The blob its chain builds on is gone (a salvage stepped over it): this scrape and
        // the rest of its chain, up to the next key blob, are lost; the read goes on.
        counters_->orphaned_scrapes.fetch_add(1, std::memory_order_relaxed);
        if (!counters_->orphans_logged.exchange(true)) {
          KLOG(WARNING) << "store: the scrape of node " << node << " at " << t << "ns in "
                        << options_.dir << " builds on one that was lost: it is skipped, with "
                        << "the rest of its chain (kubestat_store_orphaned_scrapes_total counts "
                           "every one; logged once)";
        }
        state.Clear();
        continue;
      }
      if (!s.ok()) {
        counters_->read_errors.fetch_add(1, std::memory_order_relaxed);
        return absl::DataLossError(
            absl::StrCat("store: scrape of node ", node, " at ", t, "ns: ", s.message()));
      }
      next.Advance(IsChainedScrapeBlob(ToView(it->value())) ? &state : nullptr, t, values);
      std::swap(state, next);
      if (t > lo && !visit(t, values)) return absl::OkStatus();
    }
    ++hour;
  }
  if (!it->status().ok()) {
    return ReadFailed("reading scrapes", it->status());
  }
  return absl::OkStatus();
}

absl::Status Store::ReadScrapes(NodeId node, Timestamp after, Timestamp through,
                                const ScrapeVisitor& visit) const {
  const Reader reader(*this);
  return ScanBlobs(reader, node, Nanos(after), Nanos(through),
                   [&](int64_t t, std::span<const SeriesValue> values) {
                     visit(AtNanos(t), values);
                     return true;
                   });
}

absl::Status Store::ReadScrapesBackward(NodeId node, Timestamp through, Timestamp after,
                                        const BackwardVisitor& visit) const {
  int64_t hi = Nanos(through);
  const int64_t lo = Nanos(after);  // exclusive
  if (lo >= hi) return absl::OkStatus();
  const int64_t first_hour = HourOf(lo + 1);
  const Reader reader(*this);
  std::unique_ptr<rocksdb::Iterator> it = reader.NewIterator();
  // The scrapes of one slot, decoded forward from its key blob, then visited backward.
  std::vector<std::pair<int64_t, std::vector<SeriesValue>>> slot;
  size_t used = 0;
  int64_t hour = HourOf(hi);
  bool first = true;
  while (hour >= first_hour) {
    // The newest blob of `node` at or before hi, in `hour`.
    const std::string prefix = keys::BlobPrefix(hour, node);
    std::string target = first ? keys::BlobKey(node, hi) : prefix;
    if (!first) keys::PutI64(&target, std::numeric_limits<int64_t>::max());
    first = false;
    it->SeekForPrev(target);
    if (!it->Valid() || it->key()[0] != keys::kBlobTag) break;
    if (it->key().size() != keys::kBlobKeySize) {
      counters_->read_errors.fetch_add(1, std::memory_order_relaxed);
      return absl::DataLossError("store: malformed scrape key");
    }
    const int64_t key_hour = keys::GetI64(ToView(it->key()).substr(1));
    if (key_hour < hour) {
      hour = key_hour;
      continue;
    }
    if (!it->key().starts_with(prefix)) {
      --hour;
      continue;
    }
    const int64_t newest = keys::BlobTime(ToView(it->key()));
    if (newest <= lo) return absl::OkStatus();
    // Decode the slot of `newest` up to it, then visit it newest first.
    const int64_t slot_start = keys::ChainSlotStart(newest);
    used = 0;
    absl::Status s = ScanBlobs(reader, node, std::max(slot_start, lo + 1) - 1, newest,
                               [&](int64_t t, std::span<const SeriesValue> values) {
                                 if (used == slot.size()) slot.emplace_back();
                                 slot[used].first = t;
                                 slot[used].second.assign(values.begin(), values.end());
                                 ++used;
                                 return true;
                               });
    if (!s.ok()) return s;
    for (size_t i = used; i > 0; --i) {
      if (!visit(AtNanos(slot[i - 1].first), slot[i - 1].second)) return absl::OkStatus();
    }
    if (slot_start <= lo + 1) return absl::OkStatus();
    hi = slot_start - 1;
    hour = HourOf(hi);
    first = true;
  }
  if (!it->status().ok()) {
    return ReadFailed("reading scrapes", it->status());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SeriesValue>> Store::GetScrape(NodeId node, Timestamp time) const {
  const int64_t t = Nanos(time);
  std::string value;
  const Reader reader(*this);
  const rocksdb::Status s = reader.Get(keys::BlobKey(node, t), &value);
  if (s.IsNotFound()) {
    return absl::NotFoundError(absl::StrCat("store: no scrape of node ", node, " at ", t, "ns"));
  }
  if (!s.ok()) {
    return ReadFailed("reading a scrape", s);
  }
  std::vector<SeriesValue> values;
  if (!IsChainedScrapeBlob(value)) {
    if (absl::Status d = DecodeScrapeBlob(value, t, nullptr, &values); !d.ok()) {
      counters_->read_errors.fetch_add(1, std::memory_order_relaxed);
      return d;
    }
    return values;
  }
  // A chained blob: decode its slot from the key blob up to it.
  bool found = false;
  absl::Status d =
      ScanBlobs(reader, node, t - 1, t, [&](int64_t at, std::span<const SeriesValue> v) {
        found = at == t;
        values.assign(v.begin(), v.end());
        return false;
      });
  if (!d.ok()) return d;
  if (!found) {
    return absl::NotFoundError(absl::StrCat("store: no scrape of node ", node, " at ", t, "ns"));
  }
  return values;
}

absl::Status Store::ReadRollups(NodeId node, Timestamp after, Timestamp through,
                                const RollupVisitor& visit) const {
  const Reader reader(*this);
  return ReadBuckets(reader, keys::kRollupTag, node, after, through, visit);
}

absl::Status Store::ReadHistory(std::string_view owner_prefix, Timestamp after, Timestamp through,
                                const HistoryVisitor& visit) const {
  const int64_t hi = Nanos(through);
  if (Nanos(after) >= hi) return absl::OkStatus();
  const int64_t lo = Nanos(after) + 1;
  const int64_t last_hour = HourOf(hi);
  const Reader reader(*this);
  std::unique_ptr<rocksdb::Iterator> it = reader.NewIterator();
  for (int64_t hour = HourOf(lo); hour <= last_hour; ++hour) {
    std::string prefix = keys::PartitionStart(keys::kWorkloadHistoryTag, hour);
    prefix.append(owner_prefix);
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      const std::string_view key = ToView(it->key());
      if (key.size() <= keys::kWorkloadHistoryFixedSize) {
        counters_->read_errors.fetch_add(1, std::memory_order_relaxed);
        return absl::DataLossError("store: malformed W key");
      }
      const std::string_view tail = key.substr(key.size() - 16);
      const int64_t start = keys::GetI64(tail);
      if (start < lo || start > hi) continue;
      visit(key.substr(9, key.size() - keys::kWorkloadHistoryFixedSize),
            keys::GetU64(tail.substr(8)), AtNanos(start), ToView(it->value()));
    }
    // Skip the hours that hold nothing for this prefix.
    if (it->Valid() && it->key()[0] == keys::kWorkloadHistoryTag && it->key().size() > 9) {
      hour = std::max(hour, keys::GetI64(ToView(it->key()).substr(1)) - 1);
    } else if (!it->Valid() || it->key()[0] != keys::kWorkloadHistoryTag) {
      break;
    }
  }
  if (!it->status().ok()) {
    return ReadFailed("reading usage history", it->status());
  }
  return absl::OkStatus();
}

absl::Status Store::ReadBuckets(const Reader& reader, char tag, NodeId node, Timestamp after,
                                Timestamp through, const RollupVisitor& visit) const {
  const int64_t hi = Nanos(through);
  if (Nanos(after) >= hi) return absl::OkStatus();
  const int64_t lo = Nanos(after) + 1;
  const int64_t last_hour = HourOf(hi);
  std::unique_ptr<rocksdb::Iterator> it = reader.NewIterator();
  int64_t hour = HourOf(lo);
  bool first = true;
  while (hour <= last_hour) {
    std::string prefix = keys::BucketPrefix(tag, hour, node);
    std::string target = prefix;
    if (first) keys::PutI64(&target, lo);
    first = false;
    it->Seek(target);
    if (!it->Valid() || it->key()[0] != tag) break;
    if (it->key().size() != keys::kRollupKeySize) {
      counters_->read_errors.fetch_add(1, std::memory_order_relaxed);
      return absl::DataLossError(absl::StrCat("store: malformed ", std::string(1, tag), " key"));
    }
    const int64_t key_hour = keys::GetI64(ToView(it->key()).substr(1));
    if (key_hour > hour) {
      hour = key_hour;
      continue;
    }
    for (; it->Valid() && it->key().starts_with(prefix); it->Next()) {
      const std::string_view key = ToView(it->key());
      const int64_t start = keys::GetI64(key.substr(13));
      if (start > hi) return absl::OkStatus();
      visit(keys::GetU64(key.substr(21)), AtNanos(start), ToView(it->value()));
    }
    ++hour;
  }
  if (!it->status().ok()) {
    return ReadFailed("reading rollups", it->status());
  }
  return absl::OkStatus();
}

// How long after a retention pass that failed (writes waiting in memory, say) the next call
// tries again, in the time the calls pass.
constexpr Duration kRetentionRetry = std::chrono::minutes(1);

absl::Status Store::ApplyRetention(Timestamp now) {
  const int64_t cutoff_ns = Nanos(now) - options_.retention.count();
  const int64_t cutoff_hour = HourOf(cutoff_ns);
  int64_t done = retained_from_hour_.load();
  if (cutoff_hour <= done || Nanos(now) < retention_retry_ns_.load() ||
      !retained_from_hour_.compare_exchange_strong(done, cutoff_hour)) {
    // This hour is done, a failed pass waits to be tried again, or another thread is at it.
    return absl::OkStatus();
  }
  auto fail = [&](const char* what, const rocksdb::Status& s) {
    counters_->retention_errors.fetch_add(1, std::memory_order_relaxed);
    retention_retry_ns_.store(Nanos(now) + kRetentionRetry.count());
    retained_from_hour_.store(done);  // tried again by a call kRetentionRetry later
    return absl::UnavailableError(
        absl::StrCat("store: retention in ", options_.dir, ": ", what, ": ", s.ToString()));
  };
  // Data removed under a backlog would come back when the backlog is written: retention
  // waits until it is.
  std::shared_lock lock(backlog_->mu);
  if (backlog_->active.load() || backlog_->salvaging.load() || !db_) {
    return fail("writes wait in memory", rocksdb::Status::Busy());
  }
  rocksdb::WriteOptions w;
  w.sync = options_.sync;
  // Forget the series retired before the cutoff: their data is all older.
  rocksdb::WriteBatch forget;
  uint64_t forgotten = 0;
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    for (it->Seek(std::string(1, keys::kRetiredTag));
         it->Valid() && it->key()[0] == keys::kRetiredTag; it->Next()) {
      if (it->key().size() != 9 || it->value().size() != 8) continue;
      if (keys::GetI64(ToView(it->value())) >= cutoff_hour * keys::kPartitionNanos) continue;
      const SeriesId id = keys::GetU64(ToView(it->key()).substr(1));
      forget.Delete(keys::RetiredKey(id));
      forget.Delete(keys::SeriesKey(id));
      ++forgotten;
    }
    if (!it->status().ok()) return fail("scanning retired series", it->status());
  }
  // The totals of nodes without a scrape left.
  for (const NodeId node : ledger_->ForgetOlderThan(cutoff_hour * keys::kPartitionNanos)) {
    forget.Delete(keys::AckKey(node));
  }
  // Usage histograms have a retention of their own (the right-sizing history).
  const int64_t history_cutoff_hour = HourOf(Nanos(now) - options_.history_retention.count());
  const auto cutoff_of = [&](char tag) {
    return tag == keys::kHistoryTag || tag == keys::kWorkloadHistoryTag ? history_cutoff_hour
                                                                        : cutoff_hour;
  };
  constexpr char kTags[] = {keys::kBlobTag, keys::kRollupTag, keys::kHistoryTag,
                            keys::kWorkloadHistoryTag};
  for (char tag : kTags) {
    forget.DeleteRange(std::string(1, tag), keys::PartitionStart(tag, cutoff_of(tag)));
  }
  if (rocksdb::Status s = db_->Write(w, &forget); !s.ok()) return fail("deleting", s);
  for (char tag : kTags) {
    const std::string begin(1, tag);
    const std::string end = keys::PartitionStart(tag, cutoff_of(tag));
    const rocksdb::Slice b(begin), e(end);
    if (rocksdb::Status s =
            rocksdb::DeleteFilesInRange(db_.get(), db_->DefaultColumnFamily(), &b, &e);
        !s.ok()) {
      return fail("dropping files", s);
    }
    rocksdb::CompactRangeOptions compact;
    compact.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    if (rocksdb::Status s = db_->CompactRange(compact, &b, &e); !s.ok()) {
      return fail("compacting", s);
    }
  }
  counters_->series_forgotten.fetch_add(forgotten, std::memory_order_relaxed);
  counters_->retention_passes.fetch_add(1, std::memory_order_relaxed);
  return absl::OkStatus();
}

absl::Status Store::Flush() {
  std::shared_lock lock(backlog_->mu);
  if (!db_) return absl::UnavailableError("store: flush: the database is not open");
  rocksdb::FlushOptions f;
  f.wait = true;
  if (rocksdb::Status s = db_->Flush(f); !s.ok()) {
    return absl::UnavailableError(absl::StrCat("store: flush: ", s.ToString()));
  }
  return absl::OkStatus();
}

uint64_t Store::DiskBytes() const {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options_.dir, ec)) {
    if (entry.is_regular_file(ec)) total += entry.file_size(ec);
  }
  return total;
}

uint64_t Store::MemoryBytes() const {
  uint64_t total = 0;
  std::shared_lock lock(backlog_->mu);
  if (!db_) return 0;
  for (const char* property : {"rocksdb.cur-size-all-mem-tables",
                               "rocksdb.estimate-table-readers-mem", "rocksdb.block-cache-usage"}) {
    uint64_t value = 0;
    if (db_->GetIntProperty(property, &value)) total += value;
  }
  return total;
}

StoreStats Store::Stats() const {
  StoreStats s;
  s.batches = counters_->batches.load();
  s.batch_errors = counters_->batch_errors.load();
  s.bytes_written = counters_->bytes_written.load();
  s.write_nanos = counters_->write_nanos.load();
  s.max_write_nanos = counters_->max_write_nanos.load();
  s.read_errors = counters_->read_errors.load();
  s.retention_passes = counters_->retention_passes.load();
  s.retention_errors = counters_->retention_errors.load();
  s.series_forgotten = counters_->series_forgotten.load();
  s.low_space_refusals = counters_->low_space_refusals.load();
  s.low_space_pauses = counters_->low_space_pauses.load();
  s.background_errors = counters_->background_errors.load();
  s.recoveries = counters_->recoveries.load();
  s.wal_bytes_dropped = counters_->wal_bytes_dropped.load();
  s.recovery_lost_scrapes = counters_->recovery_lost_scrapes.load();
  s.recovery_lost_samples = counters_->recovery_lost_samples.load();
  s.recovery_lost_nodes = counters_->recovery_lost_nodes.load();
  s.ack_marker_errors = counters_->ack_marker_errors.load();
  s.batches_deferred = counters_->batches_deferred.load();
  s.reopens = counters_->reopens.load();
  s.backlog_written = counters_->backlog_written.load();
  s.batches_lost = counters_->batches_lost.load();
  s.scrapes_lost = counters_->scrapes_lost.load();
  s.salvages = counters_->salvages.load();
  s.salvage_lost_ranges = counters_->salvage_lost_ranges.load();
  s.damage_found = counters_->damage_found.load();
  s.orphaned_scrapes = counters_->orphaned_scrapes.load();
  s.salvage_errors = counters_->salvage_errors.load();
  s.salvaging = backlog_->salvaging.load();
  if (counters_->scrapes_lost.load() > 0) {
    s.lost_from = AtNanos(counters_->lost_from.load());
    s.lost_through = AtNanos(counters_->lost_through.load());
  }
  if (backlog_->active.load()) {
    std::shared_lock lock(backlog_->mu);
    s.backlog_batches = backlog_->batches.size();
    s.backlog_bytes = BacklogBytesLocked();
  }
  return s;
}

absl::StatusOr<std::string> Store::MoveAside(const StoreOptions& options) {
  absl::StatusOr<fs::path> quarantine = QuarantineDatabaseFiles(options.dir);
  if (!quarantine.ok()) return quarantine.status();
  return quarantine->string();
}

absl::StatusOr<SalvageReport> Store::Salvage() {
  std::unique_lock lock(backlog_->mu);
  if (!backlog_->batches.empty()) {
    return absl::FailedPreconditionError("store: cannot salvage while writes wait in memory");
  }
  if (backlog_->salvaging.exchange(true)) {
    return absl::FailedPreconditionError("store: a salvage is already under way");
  }
  SalvageReport report;
  bool lost_dictionary = false;
  absl::Status s = CopyReadable(&report, &lost_dictionary);
  if (s.ok()) s = AdoptCopyLocked(&report, lost_dictionary, /*at_start=*/true);
  backlog_->salvaging.store(false);
  if (!s.ok()) return s;
  return report;
}

void Store::MaybeStartSalvage() {
  if (!options_.salvage_when_damaged || counters_->stopping.load()) return;
  std::lock_guard lock(salvage_mu_);
  if (backlog_->salvaging.load() || std::chrono::steady_clock::now() < next_salvage_) return;
  if (salvage_thread_.joinable()) salvage_thread_.join();  // the last one, ended
  backlog_->salvaging.store(true);
  salvage_thread_ = std::thread([this] { SalvageWhileRunning(); });
}

void Store::SalvageWhileRunning() {
  // Writes that went on to RocksDB before `salvaging` was set end first; later ones wait.
  { std::unique_lock barrier(backlog_->mu); }
  KLOG(ERROR) << "store: salvaging " << options_.dir
              << " after damage read while running; writes wait in memory and reads are "
                 "answered from the damaged database meanwhile";
  const auto start = std::chrono::steady_clock::now();
  SalvageReport report;
  bool lost_dictionary = false;
  absl::Status s = CopyReadable(&report, &lost_dictionary);
  {
    std::unique_lock lock(backlog_->mu);
    if (s.ok()) s = AdoptCopyLocked(&report, lost_dictionary, /*at_start=*/false);
    if (s.ok()) {
      salvage_epoch_.fetch_add(1);
    } else {
      // The damaged database (or, were it closed, a new handle) takes writes again.
      backlog_->reopen.store(true);
    }
    backlog_->salvaging.store(false);
    backlog_->next_drain = {};
    if (backlog_->active.load() && !counters_->stopping.load()) DrainLocked();
  }
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  if (!s.ok()) {
    if (counters_->stopping.load()) {
      KLOG(WARNING) << "store: the salvage of " << options_.dir
                    << " stopped with the store; the next start salvages it";
      return;
    }
    counters_->salvage_errors.fetch_add(1, std::memory_order_relaxed);
    {
      std::lock_guard lock(salvage_mu_);
      next_salvage_ = std::chrono::steady_clock::now() + options_.salvage_retry;
    }
    KLOG(ERROR) << "store: the salvage of " << options_.dir << " failed after " << took.count()
                << " ms: " << s.message() << "; the damaged database stays in use and is salvaged "
                << "again in " << Describe(options_.salvage_retry);
    return;
  }
  KLOG(WARNING) << "store: the salvage of " << options_.dir << " took " << took.count() << " ms";
  if (options_.on_salvage && !counters_->stopping.load()) options_.on_salvage(*this, report);
}

absl::Status Store::CopyReadable(SalvageReport* report_out, bool* lost_dictionary_out) {
  if (!db_) return absl::UnavailableError("store: salvage: the database is not open");
  SalvageReport& report = *report_out;
  bool& lost_dictionary = *lost_dictionary_out;
  const fs::path dir = options_.dir;
  const fs::path salvage = dir / std::string(kSalvageDir);
  std::error_code ec;
  fs::remove_all(salvage, ec);
  StoreOptions copy_options = options_;
  copy_options.dir = salvage.string();
  copy_options.create_if_missing = true;
  uint64_t dropped = 0;
  absl::StatusOr<std::unique_ptr<rocksdb::DB>> copy = OpenDatabase(
      copy_options, std::make_shared<Listener>(copy_options.dir, std::make_shared<Counters>()),
      /*reopen=*/true, &dropped);
  if (!copy.ok()) return copy.status();
  rocksdb::CancelAllBackgroundWork(db_.get(), /*wait=*/true);

  auto abandon = [&](const rocksdb::Status& why, const char* doing) {
    (*copy)->Close().PermitUncheckedError();
    copy->reset();
    fs::remove_all(salvage, ec);
    const std::string what = absl::StrCat("salvaging the store (", doing, ")");
    return ReadError(what.c_str(), why);
  };
  rocksdb::ReadOptions read;
  read.fill_cache = false;
  read.verify_checksums = true;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read));
  const fs::path files = salvage / "tables";
  TableFileCopy table_copy((*copy)->GetOptions(), files);
  // Where to step on from when the damage comes before any key could be read.
  std::string smallest;
  {
    std::vector<rocksdb::LiveFileMetaData> files;
    db_->GetLiveFilesMetaData(&files);
    for (const rocksdb::LiveFileMetaData& file : files) {
      if (smallest.empty() || file.smallestkey < smallest) smallest = file.smallestkey;
    }
  }
  std::string last;
  it->SeekToFirst();
  while (true) {
    if (it->Valid()) {
      if (rocksdb::Status s = table_copy.Put(it->key(), it->value()); !s.ok()) {
        return abandon(s, "writing the copy");
      }
      ++report.kept_keys;
      report.kept_bytes += it->key().size() + it->value().size();
      last = it->key().ToString();
      if (report.kept_keys % 4096 == 0 && counters_->stopping.load()) {
        return abandon(rocksdb::Status::Aborted("the store is closing"), "stopped");
      }
      it->Next();
      continue;
    }
    if (it->status().ok()) break;  // the end
    LostRange range;
    range.after = last;
    const std::string error = it->status().ToString();
    const bool resumed =
        SeekPastDamage(db_.get(), read, &it, last.empty() ? smallest : last) && it->Valid();
    range.before = resumed ? it->key().ToString() : std::string();
    range.what = absl::StrCat(last.empty() ? "the first keys" : DescribeKey(last), " up to ",
                              DescribeKey(range.before), " (", error, ")");
    for (const std::string* end : {&range.after, &range.before}) {
      if (std::optional<NodeId> node = NodeOfKey(*end)) {
        if (range.nodes.empty() || range.nodes.back() != *node) range.nodes.push_back(*node);
      }
    }
    // A range that reaches into the dictionary may have held ids still used by stored data.
    lost_dictionary = lost_dictionary || SpansDictionary(last, range.before);
    report.lost.push_back(std::move(range));
    if (!resumed) break;
  }
  it.reset();
  if (rocksdb::Status s = table_copy.IngestInto(copy->get()); !s.ok()) {
    return abandon(s, "moving the copied tables into the new database");
  }
  fs::remove_all(files, ec);
  // The format marker, whether or not it could be read.
  rocksdb::WriteOptions write;
  write.disableWAL = true;  // flushed and synced before it is used
  if (rocksdb::Status s = (*copy)->Put(write, ToSlice(kFormatKey), ToSlice(kFormatValue));
      !s.ok()) {
    return abandon(s, "writing the copy");
  }
  if (rocksdb::Status s = (*copy)->Flush(rocksdb::FlushOptions()); !s.ok()) {
    return abandon(s, "flushing the copy");
  }
  if (rocksdb::Status s = (*copy)->Close(); !s.ok()) return abandon(s, "closing the copy");
  copy->reset();
  {
    std::ofstream done(salvage / std::string(kSalvageDone));
    done << "complete\n";
    if (!done.flush()) {
      fs::remove_all(salvage, ec);
      return absl::UnavailableError(
          absl::StrCat("store: cannot mark the salvage of ", dir.string(), " complete"));
    }
  }
  return SyncDirectory(salvage);
}

absl::Status Store::AdoptCopyLocked(SalvageReport* report_out, bool lost_dictionary,
                                    bool at_start) {
  SalvageReport& report = *report_out;
  const fs::path dir = options_.dir;
  // From here the copy replaces the database.
  (void)db_->Close();
  db_.reset();
  absl::StatusOr<fs::path> quarantine = SwapInSalvage(dir);
  if (!quarantine.ok()) return quarantine.status();  // the next Open finishes it
  report.quarantine_dir = quarantine->string();
  uint64_t dropped = 0;
  absl::StatusOr<std::unique_ptr<rocksdb::DB>> opened =
      OpenDatabase(options_, listener_, /*reopen=*/true, &dropped);
  if (!opened.ok()) return opened.status();
  db_ = *std::move(opened);
  backlog_->reopen.store(false);
  counters_->needs_resume.store(false);
  if (at_start) {
    if (absl::Status s = LoadIdCounters(); !s.ok()) return s;
  }
  if (lost_dictionary) {
    // Stored data may use ids whose dictionary entries were lost: they are never handed out
    // again, also after a restart.
    const uint32_t node_floor = next_node_id_.load() + kNodeIdJump;
    const uint64_t series_floor = next_series_id_.load() + kSeriesIdJump;
    std::string floor;
    keys::PutU32(&floor, node_floor);
    keys::PutU64(&floor, series_floor);
    rocksdb::WriteOptions sync;
    sync.sync = true;
    if (rocksdb::Status s = db_->Put(sync, ToSlice(kIdFloorKey), ToSlice(floor)); !s.ok()) {
      return ReadError("recording the id floor after a salvage", s);
    }
    next_node_id_.store(node_floor);
    next_series_id_.store(series_floor);
  }
  // At start, the copy's totals of acknowledged scrapes are what it holds now. While
  // running, the ledger goes on: the backlog's batches carry totals it handed out.
  if (AckTable stored; at_start && LoadAcks(&stored).ok()) {
    ledger_->Reset(std::move(stored));
    PersistAcks(/*force=*/true);
  }
  counters_->damaged.store(false);
  counters_->salvages.fetch_add(1, std::memory_order_relaxed);
  counters_->salvage_lost_ranges.fetch_add(report.lost.size(), std::memory_order_relaxed);
  KLOG(WARNING) << "store: salvaged " << dir.string() << ": kept " << report.kept_keys << " keys ("
                << report.kept_bytes << " bytes), " << report.lost.size()
                << " unreadable ranges stepped over; the damaged files are in "
                << report.quarantine_dir << " (delete them once inspected)";
  return absl::OkStatus();
}

}  // namespace kubestat::storage
