#include "kubestat/storage/store.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <charconv>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <mutex>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "keys.h"
#include "kubestat/core/log.h"
#include "rocksdb/cache.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/listener.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"
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
  std::atomic<bool> low_space{false};     // writes paused for lack of free space
  std::atomic<bool> needs_resume{false};  // a background error RocksDB did not recover from
};

// RocksDB's info log (the LOG file, as RocksDB writes it), read on the way for the records
// the write-ahead log replay drops at open ("…: dropping 1234 bytes; Corruption: …"): those
// are acknowledged writes lost, which the store reports itself.
class WalDropWatcher final : public rocksdb::LoggerWrapper {
 public:
  WalDropWatcher(std::shared_ptr<rocksdb::Logger> file, std::string dir)
      : rocksdb::LoggerWrapper(file.get()), file_(std::move(file)), dir_(std::move(dir)) {}

  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    va_list copy;
    va_copy(copy, ap);
    char line[1024];
    const int n = std::vsnprintf(line, sizeof(line), format, copy);
    va_end(copy);
    if (n > 0) Watch(std::string_view(line, std::min<size_t>(n, sizeof(line) - 1)));
    rocksdb::LoggerWrapper::Logv(level, format, ap);
  }
  void Logv(const char* format, va_list ap) override {
    Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
  }

  uint64_t dropped_bytes() const { return dropped_bytes_.load(); }

 private:
  void Watch(std::string_view line) {
    const size_t at = line.find(": dropping ");
    if (at == std::string_view::npos) return;
    std::string_view rest = line.substr(at + 11);
    uint64_t bytes = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), bytes);
    if (ec != std::errc() ||
        !std::string_view(end, rest.data() + rest.size()).starts_with(" bytes")) {
      return;
    }
    dropped_bytes_.fetch_add(bytes);
    KLOG(ERROR) << "store: the write-ahead log of " << dir_ << " lost " << bytes
                << " bytes at recovery (acknowledged writes of the last moments before a crash "
                   "are gone): "
                << line;
  }

  const std::shared_ptr<rocksdb::Logger> file_;  // the target, kept alive
  const std::string dir_;
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
  keys::PutI64(&scratch_, keys::Nanos(at));
  batch_->Put(keys::RetiredKey(id), scratch_);
}

void ScrapeBatch::PutScrape(NodeId node, Timestamp time, std::span<const SeriesValue> values,
                            ScrapeChain* chain) {
  sorted_.assign(values.begin(), values.end());
  std::sort(sorted_.begin(), sorted_.end(),
            [](const SeriesValue& a, const SeriesValue& b) { return a.id < b.id; });
  const int64_t t = keys::Nanos(time);
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
  batch_->Put(keys::RollupKey(node, keys::Nanos(bucket_start), series), ToSlice(bytes));
}

void ScrapeBatch::PutHistory(std::string_view owner, SeriesId series, Timestamp bucket_start,
                             std::string_view bytes) {
  batch_->Put(keys::WorkloadHistoryKey(owner, keys::Nanos(bucket_start), series), ToSlice(bytes));
}

bool ScrapeBatch::empty() const { return batch_->Count() == 0; }
size_t ScrapeBatch::ByteSize() const { return batch_->GetDataSize(); }
void ScrapeBatch::Clear() {
  SettleChains(/*written=*/false);
  batch_->Clear();
}

// --- Store ---

absl::StatusOr<std::unique_ptr<Store>> Store::Open(StoreOptions options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
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
  auto counters = std::make_shared<Counters>();
  db_options.listeners.push_back(std::make_shared<Listener>(options.dir, counters));
  std::shared_ptr<WalDropWatcher> wal_watcher;
  if (std::shared_ptr<rocksdb::Logger> file;
      std::filesystem::is_directory(options.dir) &&
      rocksdb::CreateLoggerFromOptions(options.dir, db_options, &file).ok()) {
    wal_watcher = std::make_shared<WalDropWatcher>(std::move(file), options.dir);
    db_options.info_log = wal_watcher;
  }
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  // Blobs of one node are adjacent (hour, node, time), and reads of a node walk them in
  // order, so a larger block compresses better without being read in vain; 32 KiB rather
  // than more because the block cache keeps one block per node being read, uncompressed.
  table.block_size = 32 << 10;
  db_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));

  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_options, options.dir, &raw);
  if (!s.ok()) return OpenError(options.dir, s);
  if (wal_watcher) counters->wal_bytes_dropped.store(wal_watcher->dropped_bytes());
  std::unique_ptr<rocksdb::DB> db(raw);

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
  if (absl::Status status = store->LoadIdCounters(); !status.ok()) {
    return absl::Status(status.code(), absl::StrCat("cannot open the RocksDB store in ",
                                                    store->options_.dir, ": ", status.message()));
  }
  return store;
}

Store::Store(StoreOptions options, std::unique_ptr<rocksdb::DB> db,
             std::shared_ptr<Counters> counters)
    : options_(std::move(options)), db_(std::move(db)), counters_(std::move(counters)) {}

Store::~Store() {
  if (db_) {
    // Let background work finish before the handle goes.
    rocksdb::CancelAllBackgroundWork(db_.get(), /*wait=*/true);
    (void)db_->Close();
  }
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
  return absl::OkStatus();
}

NodeId Store::AllocateNodeId() { return next_node_id_.fetch_add(1); }
SeriesId Store::AllocateSeriesId() { return next_series_id_.fetch_add(1); }

uint64_t Store::FreeBytes() const {
  struct statvfs fs {};
  if (statvfs(options_.dir.c_str(), &fs) != 0) return 0;
  return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
}

absl::Status Store::ReadyToWrite() {
  if (options_.min_free_bytes > 0) {
    const uint64_t free = FreeBytes();
    const bool low = free < options_.min_free_bytes;
    if (low != counters_->low_space.exchange(low)) {
      if (low) {
        counters_->low_space_pauses.fetch_add(1, std::memory_order_relaxed);
        KLOG(ERROR) << "store: " << free << " bytes free in " << options_.dir
                    << ", below --storage-min-free (" << options_.min_free_bytes
                    << "): writes paused, queries answered from memory";
      } else {
        KLOG(INFO) << "store: " << free << " bytes free in " << options_.dir << ": writes resumed";
      }
    }
    if (low) {
      counters_->low_space_refusals.fetch_add(1, std::memory_order_relaxed);
      return absl::ResourceExhaustedError(
          absl::StrCat("store: writes paused: ", free, " bytes free in ", options_.dir,
                       ", below --storage-min-free (", options_.min_free_bytes, ")"));
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
    } else if (r.IsBusy()) {
      // RocksDB recovers from this one itself (a full disk: once there is room); the
      // listener hears when it is done.
      return absl::UnavailableError(
          absl::StrCat("store: RocksDB is recovering from a background error in ", options_.dir));
    } else {
      return absl::UnavailableError(
          absl::StrCat("store: RocksDB cannot resume in ", options_.dir, ": ", r.ToString()));
    }
  }
  return absl::OkStatus();
}

absl::Status Store::Write(const ScrapeBatch& batch) {
  if (absl::Status ready = ReadyToWrite(); !ready.ok()) {
    counters_->batch_errors.fetch_add(1, std::memory_order_relaxed);
    batch.SettleChains(/*written=*/false);
    return ready;
  }
  rocksdb::WriteOptions w;
  w.sync = options_.sync;
  const auto start = std::chrono::steady_clock::now();
#ifdef KUBESTAT_STORE_SERIAL_WRITES
  std::lock_guard serial(serial_writes);
#endif
  const rocksdb::Status s = db_->Write(w, batch.batch_.get());
  const auto nanos = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
  batch.SettleChains(/*written=*/s.ok());
  if (!s.ok()) {
    counters_->batch_errors.fetch_add(1, std::memory_order_relaxed);
    return absl::UnavailableError(
        absl::StrCat("store: writing a batch to ", options_.dir, ": ", s.ToString()));
  }
  counters_->batches.fetch_add(1, std::memory_order_relaxed);
  counters_->bytes_written.fetch_add(batch.ByteSize(), std::memory_order_relaxed);
  counters_->write_nanos.fetch_add(nanos, std::memory_order_relaxed);
  uint64_t max = counters_->max_write_nanos.load(std::memory_order_relaxed);
  while (nanos > max && !counters_->max_write_nanos.compare_exchange_weak(max, nanos)) {
  }
  return absl::OkStatus();
}

absl::StatusOr<Dictionary> Store::LoadDictionary() const {
  Dictionary dict;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
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
    counters_->read_errors.fetch_add(1, std::memory_order_relaxed);
    return ReadError("reading the dictionary", it->status());
  }
  return dict;
}

absl::Status Store::ScanBlobs(NodeId node, int64_t lo, int64_t hi, const BlobVisitor& visit) const {
  if (lo >= hi) return absl::OkStatus();
  // Chained blobs decode from the key blob that starts their slot.
  const int64_t from = keys::ChainSlotStart(lo + 1);
  const int64_t last_hour = keys::HourOf(hi);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  BlobChainState state, next;
  std::vector<SeriesValue> values;
  int64_t hour = keys::HourOf(from);
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
      if (absl::Status s = DecodeScrapeBlob(ToView(it->value()), t, &state, &values); !s.ok()) {
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
    counters_->read_errors.fetch_add(1, std::memory_order_relaxed);
    return ReadError("reading scrapes", it->status());
  }
  return absl::OkStatus();
}

absl::Status Store::ReadScrapes(NodeId node, Timestamp after, Timestamp through,
                                const ScrapeVisitor& visit) const {
  return ScanBlobs(node, keys::Nanos(after), keys::Nanos(through),
                   [&](int64_t t, std::span<const SeriesValue> values) {
                     visit(keys::AtNanos(t), values);
                     return true;
                   });
}

absl::Status Store::ReadScrapesBackward(NodeId node, Timestamp through, Timestamp after,
                                        const BackwardVisitor& visit) const {
  int64_t hi = keys::Nanos(through);
  const int64_t lo = keys::Nanos(after);  // exclusive
  if (lo >= hi) return absl::OkStatus();
  const int64_t first_hour = keys::HourOf(lo + 1);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  // The scrapes of one slot, decoded forward from its key blob, then visited backward.
  std::vector<std::pair<int64_t, std::vector<SeriesValue>>> slot;
  size_t used = 0;
  int64_t hour = keys::HourOf(hi);
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
    absl::Status s = ScanBlobs(node, std::max(slot_start, lo + 1) - 1, newest,
                               [&](int64_t t, std::span<const SeriesValue> values) {
                                 if (used == slot.size()) slot.emplace_back();
                                 slot[used].first = t;
                                 slot[used].second.assign(values.begin(), values.end());
                                 ++used;
                                 return true;
                               });
    if (!s.ok()) return s;
    for (size_t i = used; i > 0; --i) {
      if (!visit(keys::AtNanos(slot[i - 1].first), slot[i - 1].second)) return absl::OkStatus();
    }
    if (slot_start <= lo + 1) return absl::OkStatus();
    hi = slot_start - 1;
    hour = keys::HourOf(hi);
    first = true;
  }
  if (!it->status().ok()) {
    counters_->read_errors.fetch_add(1, std::memory_order_relaxed);
    return ReadError("reading scrapes", it->status());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SeriesValue>> Store::GetScrape(NodeId node, Timestamp time) const {
  const int64_t t = keys::Nanos(time);
  std::string value;
  const rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), keys::BlobKey(node, t), &value);
  if (s.IsNotFound()) {
    return absl::NotFoundError(absl::StrCat("store: no scrape of node ", node, " at ", t, "ns"));
  }
  if (!s.ok()) {
    counters_->read_errors.fetch_add(1, std::memory_order_relaxed);
    return ReadError("reading a scrape", s);
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
  absl::Status d = ScanBlobs(node, t - 1, t, [&](int64_t at, std::span<const SeriesValue> v) {
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
  return ReadBuckets(keys::kRollupTag, node, after, through, visit);
}

absl::Status Store::ReadHistory(std::string_view owner_prefix, Timestamp after, Timestamp through,
                                const HistoryVisitor& visit) const {
  const int64_t hi = keys::Nanos(through);
  if (keys::Nanos(after) >= hi) return absl::OkStatus();
  const int64_t lo = keys::Nanos(after) + 1;
  const int64_t last_hour = keys::HourOf(hi);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (int64_t hour = keys::HourOf(lo); hour <= last_hour; ++hour) {
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
            keys::GetU64(tail.substr(8)), keys::AtNanos(start), ToView(it->value()));
    }
    // Skip the hours that hold nothing for this prefix.
    if (it->Valid() && it->key()[0] == keys::kWorkloadHistoryTag && it->key().size() > 9) {
      hour = std::max(hour, keys::GetI64(ToView(it->key()).substr(1)) - 1);
    } else if (!it->Valid() || it->key()[0] != keys::kWorkloadHistoryTag) {
      break;
    }
  }
  if (!it->status().ok()) {
    counters_->read_errors.fetch_add(1, std::memory_order_relaxed);
    return ReadError("reading usage history", it->status());
  }
  return absl::OkStatus();
}

absl::Status Store::ReadBuckets(char tag, NodeId node, Timestamp after, Timestamp through,
                                const RollupVisitor& visit) const {
  const int64_t hi = keys::Nanos(through);
  if (keys::Nanos(after) >= hi) return absl::OkStatus();
  const int64_t lo = keys::Nanos(after) + 1;
  const int64_t last_hour = keys::HourOf(hi);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  int64_t hour = keys::HourOf(lo);
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
      visit(keys::GetU64(key.substr(21)), keys::AtNanos(start), ToView(it->value()));
    }
    ++hour;
  }
  if (!it->status().ok()) {
    counters_->read_errors.fetch_add(1, std::memory_order_relaxed);
    return ReadError("reading rollups", it->status());
  }
  return absl::OkStatus();
}

absl::Status Store::ApplyRetention(Timestamp now) {
  const int64_t cutoff_ns = keys::Nanos(now) - options_.retention.count();
  const int64_t cutoff_hour = keys::HourOf(cutoff_ns);
  int64_t done = retained_from_hour_.load();
  if (cutoff_hour <= done || !retained_from_hour_.compare_exchange_strong(done, cutoff_hour)) {
    return absl::OkStatus();  // this hour is done (or another thread is doing it)
  }
  auto fail = [&](const char* what, const rocksdb::Status& s) {
    counters_->retention_errors.fetch_add(1, std::memory_order_relaxed);
    retained_from_hour_.store(done);  // retry on the next call
    return absl::UnavailableError(
        absl::StrCat("store: retention in ", options_.dir, ": ", what, ": ", s.ToString()));
  };
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
  // Usage histograms have a retention of their own (the right-sizing history).
  const int64_t history_cutoff_hour =
      keys::HourOf(keys::Nanos(now) - options_.history_retention.count());
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
  return s;
}

}  // namespace kubestat::storage
