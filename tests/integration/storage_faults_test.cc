// kubestat-sim and kubestat-aggregator as real processes, the store on a 4 MiB tmpfs that
// something else fills: writes wait in memory while the metrics API stays ready and fresh
// (read with kubectl through the simulator's aggregation proxy), /readyz?verbose says what
// degraded, the writes are made when the room comes back, without a restart; with no free
// space kept, RocksDB's own full disk never aborts the process, and a restart on the full
// volume starts and serves (skips where a tmpfs cannot be mounted: not root, or no mount
// permission in this container). And a
// write-ahead log garbled after a kill -9: the restarted aggregator serves fresh and says
// which acknowledged scrapes the replay did not give back (how many, of which nodes, in
// which time range), in its log and in /metrics, once. And a store holding a series it cannot
// restore: the aggregator names it, counts it and serves the rest, or exits 1 with
// --storage-strict. And a table file with a damaged block: the store is salvaged at start and
// every node served, or, with --storage-strict, the aggregator exits 1 naming the damage.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "harness.h"
#include "kubestat/core/time.h"
#include "kubestat/storage/store.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/small_volume.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat {
namespace {

using testing::FreeLoopbackPort;
using testing::MetricValue;
using testing::PollUntil;
using testing::Process;
using testing::ReadAll;
using testing::SmallVolume;
using testing::TempDir;
using testing::WaitForLog;

constexpr int kNodes = 3;

// The simulator and an aggregator on a store in a 4 MiB tmpfs (or another folder), with
// the simulator's aggregation proxy in front of the aggregator (for kubectl), for one
// storage fault.
class FullVolume {
 public:
  explicit FullVolume(const std::string& name)
      : scratch_(name), volume_(scratch_.path() / "volume") {}

  // `store`: where the store lives; default: on the tmpfs.
  bool Start(const std::vector<std::string>& extra, std::filesystem::path store = {}) {
    const std::filesystem::path& dir = scratch_.path();
    if (store.empty()) store = dir / "volume" / "store";
    port_ = FreeLoopbackPort();
    std::vector<std::string> sim = testing::SimFlags(dir, kNodes, 11, FreeLoopbackPort());
    sim.push_back("--metrics-backend=http://127.0.0.1:" + std::to_string(port_));
    simulator_.emplace(KUBESTAT_SIM_BINARY, sim, dir / "sim.log");
    if (!WaitForLog(dir / "sim.log", "READY", std::chrono::seconds(60))) return false;
    args_ = testing::SimAggregatorFlags(dir, port_, store, "1s", "500ms", extra);
    return StartAggregator();
  }
  // Starts the aggregator again with `more` flags; waits until it serves node-0000 unless
  // `expect_ready` is false.
  bool StartAggregator(const std::vector<std::string>& more = {}, bool expect_ready = true) {
    ++starts_;
    std::vector<std::string> args = args_;
    args.insert(args.end(), more.begin(), more.end());
    aggregator_.reset();
    aggregator_.emplace(KUBESTAT_AGGREGATOR_BINARY, args, Log());
    if (!expect_ready) return true;
    return PollUntil(
        [&] { return Ready() && Get("/apis/metrics/v1alpha1/nodes/node-0000").code == 200; },
        std::chrono::seconds(60));
  }
  std::filesystem::path Log() const {
    return scratch_.path() / ("aggregator-" + std::to_string(starts_) + ".log");
  }
  std::string LogText() const { return ReadAll(Log().string()); }
  testing::HttpReply Get(const std::string& path) const {
    return testing::HttpGetReply(port_, path).value_or(testing::HttpReply{});
  }
  bool Ready() const { return Get("/readyz").code == 200; }
  double Metric(const std::string& name) const {
    return MetricValue(testing::HttpGet(port_, "/metrics").value_or(""), name);
  }
  bool Durable() const { return Metric("kubestat_store_durable") == 1; }
  // True once kubectl reads a node timestamp later than now: the API is fresh.
  bool ServesFreshThroughKubectl() const {
    return testing::ServesFreshThroughKubectl(scratch_.path(), std::chrono::seconds(20));
  }

  SmallVolume& volume() { return volume_; }
  const std::filesystem::path& Dir() const { return scratch_.path(); }
  std::optional<Process>& aggregator() { return aggregator_; }
  std::optional<Process>& simulator() { return simulator_; }

 private:
  TempDir scratch_;
  SmallVolume volume_;
  int port_ = 0;
  int starts_ = 0;
  std::vector<std::string> args_;
  std::optional<Process> simulator_;
  std::optional<Process> aggregator_;
};

TEST(StorageFaultsTest,
     AFillingVolumeCostsDurabilityNeverTheMetricsApiAndWritesResumeByThemselves) {
  FullVolume run("kubestat-storage-faults-it");
  if (!run.volume().mounted()) {
    GTEST_SKIP() << "cannot mount a 4 MiB tmpfs (needs root and mount permission): "
                 << run.volume().error();
  }
  if (!testing::FindOnPath("kubectl")) GTEST_SKIP() << "kubectl is not installed; skipping";
  // The default --storage-min-free (256Mi) is more than the whole volume: a tenth of it,
  // 409 KiB, is what is kept free.
  ASSERT_TRUE(run.Start({"--storage-cache-mib=1"})) << run.LogText();
  EXPECT_TRUE(run.Durable());

  // Something else fills the volume: 200 KiB left.
  run.volume().FillLeaving(200 * 1024);
  ASSERT_TRUE(PollUntil([&] { return !run.Durable(); }, std::chrono::seconds(30))) << run.LogText();
  // The metrics API answers, ready and fresh, through kubectl; /readyz says what degraded.
  EXPECT_TRUE(run.Ready()) << run.Get("/readyz?verbose").body;
  EXPECT_TRUE(run.ServesFreshThroughKubectl()) << run.LogText();
  const testing::HttpReply verbose = run.Get("/readyz?verbose");
  EXPECT_EQ(verbose.code, 200);
  EXPECT_NE(verbose.body.find("[+]store-durability ok: writes to "), std::string::npos)
      << verbose.body;
  EXPECT_NE(verbose.body.find("below --storage-min-free (419430)"), std::string::npos)
      << verbose.body;
  EXPECT_GT(run.Metric("kubestat_store_backlog_batches"), 0);
  EXPECT_GT(run.Metric("kubestat_store_deferred_batches_total"), 0);
  EXPECT_EQ(run.Metric("kubestat_store_lost_scrapes_total"), 0);
  EXPECT_EQ(run.Get("/livez").code, 200);
  std::string log = run.LogText();
  EXPECT_NE(log.find("writes paused, kept in memory meanwhile"), std::string::npos) << log;
  EXPECT_NE(log.find("are kept in memory (at most 268435456 bytes)"), std::string::npos) << log;

  // Room again: what waited is written, without a restart.
  run.volume().Empty();
  ASSERT_TRUE(PollUntil([&] { return run.Durable(); }, std::chrono::seconds(30))) << run.LogText();
  EXPECT_EQ(run.Metric("kubestat_store_backlog_batches"), 0);
  EXPECT_EQ(run.Metric("kubestat_store_backlog_written_batches_total"),
            run.Metric("kubestat_store_deferred_batches_total"));
  EXPECT_EQ(run.Get("/readyz?verbose").body.find("store-durability ok:"), std::string::npos);
  EXPECT_NE(run.LogText().find("writes go to disk again"), std::string::npos);
  EXPECT_TRUE(run.aggregator()->Running());

  // Full again, then a restart on the full volume: it starts, is ready and serves fresh
  // data; once there is room, it writes again.
  run.volume().FillLeaving(200 * 1024);
  ASSERT_TRUE(PollUntil([&] { return !run.Durable(); }, std::chrono::seconds(30))) << run.LogText();
  ASSERT_EQ(run.aggregator()->Signal(SIGTERM, std::chrono::seconds(20)), 0) << run.LogText();
  ASSERT_TRUE(run.StartAggregator()) << run.Get("/readyz?verbose").body << run.LogText();
  EXPECT_TRUE(run.ServesFreshThroughKubectl()) << run.LogText();
  run.volume().Empty();
  ASSERT_TRUE(PollUntil([&] { return run.Durable(); }, std::chrono::seconds(30))) << run.LogText();
  EXPECT_EQ(run.aggregator()->Signal(SIGTERM, std::chrono::seconds(20)), 0) << run.LogText();
  run.aggregator().reset();
  EXPECT_EQ(run.simulator()->Signal(SIGTERM, std::chrono::seconds(10)), 0);
}

TEST(StorageFaultsTest, AFullDiskWithNoMinimumFreeNeverAbortsAndTheStoreReopensWithRoom) {
  FullVolume run("kubestat-storage-enospc-it");
  if (!run.volume().mounted()) {
    GTEST_SKIP() << "cannot mount a 4 MiB tmpfs (needs root and mount permission): "
                 << run.volume().error();
  }
  if (!testing::FindOnPath("kubectl")) GTEST_SKIP() << "kubectl is not installed; skipping";
  ASSERT_TRUE(run.Start({"--storage-min-free=0", "--storage-cache-mib=1"})) << run.LogText();

  // Nothing is kept free: RocksDB itself meets the full disk (its log, or a flush).
  run.volume().FillLeaving(0);
  ASSERT_TRUE(PollUntil([&] { return !run.Durable(); }, std::chrono::seconds(60))) << run.LogText();
  EXPECT_TRUE(run.ServesFreshThroughKubectl()) << run.LogText();
  EXPECT_TRUE(run.Ready()) << run.Get("/readyz?verbose").body;
  EXPECT_TRUE(run.aggregator()->Running());
  EXPECT_NE(run.LogText().find("No space left on device"), std::string::npos) << run.LogText();

  run.volume().Empty();
  ASSERT_TRUE(PollUntil([&] { return run.Durable(); }, std::chrono::seconds(30))) << run.LogText();
  EXPECT_EQ(run.Metric("kubestat_store_lost_scrapes_total"), 0);
  EXPECT_TRUE(run.aggregator()->Running());

  // A restart while the disk is full: it starts and serves (no crash loop).
  run.volume().FillLeaving(0);
  ASSERT_EQ(run.aggregator()->Signal(SIGTERM, std::chrono::seconds(20)), 0) << run.LogText();
  ASSERT_TRUE(run.StartAggregator()) << run.Get("/readyz?verbose").body << run.LogText();
  EXPECT_TRUE(run.ServesFreshThroughKubectl()) << run.LogText();
  EXPECT_TRUE(run.aggregator()->Running());
  run.volume().Empty();
  ASSERT_TRUE(PollUntil([&] { return run.Durable(); }, std::chrono::seconds(30))) << run.LogText();
  EXPECT_EQ(run.aggregator()->Signal(SIGTERM, std::chrono::seconds(20)), 0) << run.LogText();
  run.aggregator().reset();
  EXPECT_EQ(run.simulator()->Signal(SIGTERM, std::chrono::seconds(10)), 0);
}

// The marker of acknowledged scrapes (storage/src/ack_ledger.h): its inode, which each
// rewrite (a rename over it) changes; 0 while there is none.
ino_t MarkerInode(const std::filesystem::path& store) {
  struct stat st {};
  return ::stat((store / "KUBESTAT-ACKED").c_str(), &st) == 0 ? st.st_ino : 0;
}

// How the log is damaged after the kill: 64 bytes garbled in the middle of what it held, as
// a torn or bad disk write leaves it, or cut there, as a file system that lost its tail
// after a power loss leaves it. Either way RocksDB's replay drops every record from there.
enum class LogDamage { kGarbled, kCut };

// An offset at or after `near` that falls inside the data of one of the write-ahead log's
// records (RocksDB's log format: 32 KiB blocks of records, each a 7-byte header of checksum,
// length and type, then its data; a block's last 6 bytes or fewer are a zero trailer). A cut
// there leaves a torn record, which the replay reports by size; a cut on a record's end
// leaves a log that looks whole, whose loss only the marker of acknowledged scrapes shows.
// 0 when no record after `near` is whole in the file.
uintmax_t InsideARecord(const std::filesystem::path& wal, uintmax_t near) {
  constexpr uintmax_t kBlock = 32 * 1024;
  constexpr uintmax_t kHeader = 7;
  const std::string log = ReadAll(wal.string());
  uintmax_t at = 0;
  while (at + kHeader <= log.size()) {
    if (kBlock - at % kBlock < kHeader) {
      at += kBlock - at % kBlock;
      continue;
    }
    const auto byte = [&log](uintmax_t i) { return static_cast<unsigned char>(log[i]); };
    const uintmax_t length = byte(at + 4) | (byte(at + 5) << 8);
    const unsigned type = byte(at + 6);
    const uintmax_t data = at + kHeader;
    const uintmax_t end = data + length;
    if (end > log.size()) return 0;
    // Full, first, middle and last fragments of a write (not the compression record).
    if (type >= 1 && type <= 4 && length >= 2 && near < end) {
      return near > data ? near : data + length / 2;
    }
    at = end;
  }
  return 0;
}

class WriteAheadLogLossTest : public ::testing::TestWithParam<LogDamage> {};

TEST_P(WriteAheadLogLossTest, IsReportedAsTheScrapesItLostWithTheirTimes) {
  const TempDir scratch("kubestat-wal-drop-it");
  const std::filesystem::path& dir = scratch.path();
  const int port = FreeLoopbackPort();
  std::vector<std::string> sim = testing::SimFlags(dir, kNodes, 13, FreeLoopbackPort());
  sim.push_back("--metrics-backend=http://127.0.0.1:" + std::to_string(port));
  Process simulator(KUBESTAT_SIM_BINARY, sim, dir / "sim.log");
  ASSERT_TRUE(WaitForLog(dir / "sim.log", "READY", std::chrono::seconds(60)))
      << ReadAll((dir / "sim.log").string());
  const std::filesystem::path store = dir / "store";
  const std::vector<std::string> args =
      testing::SimAggregatorFlags(dir, port, store, "1s", "500ms");
  std::filesystem::path wal;
  const auto wal_bytes = [&store, &wal] {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(store, ec)) {
      if (entry.path().extension() == ".log" && entry.path() > wal) wal = entry.path();
    }
    return wal.empty() ? 0 : std::filesystem::file_size(wal, ec);
  };
  uintmax_t written = 0;
  {
    Process aggregator(KUBESTAT_AGGREGATOR_BINARY, args, dir / "aggregator-1.log");
    ASSERT_TRUE(
        PollUntil([&] { return (written = wal_bytes()) > 16 * 1024; }, std::chrono::seconds(120)))
        << ReadAll((dir / "aggregator-1.log").string());
    // Once the marker is rewritten, it counts every scrape in those bytes.
    const ino_t marker = MarkerInode(store);
    ASSERT_TRUE(PollUntil([&] { return MarkerInode(store) != marker; }, std::chrono::seconds(60)))
        << ReadAll((dir / "aggregator-1.log").string());
    ASSERT_EQ(aggregator.Signal(SIGKILL, std::chrono::seconds(10)), 128 + SIGKILL);
  }
  if (GetParam() == LogDamage::kGarbled) {
    testing::Garble(wal, written / 2, 64, '\xA5');
  } else {
    const uintmax_t cut = InsideARecord(wal, written / 2);
    ASSERT_GT(cut, 0u) << wal << " holds no whole record after byte " << written / 2;
    std::filesystem::resize_file(wal, cut);
  }

  Process aggregator(KUBESTAT_AGGREGATOR_BINARY, args, dir / "aggregator-2.log");
  const auto log2 = [&dir] { return ReadAll((dir / "aggregator-2.log").string()); };
  ASSERT_TRUE(PollUntil(
      [&] {
        return testing::HttpGetReply(port, "/readyz").value_or(testing::HttpReply{}).code == 200;
      },
      std::chrono::seconds(60)))
      << log2();
  EXPECT_TRUE(testing::ServesFreshThroughKubectl(dir, std::chrono::seconds(30))) << log2();
  const std::string log = log2();
  double scrapes = -1;
  double samples = -1;
  double nodes = -1;
  ASSERT_TRUE(PollUntil(
      [&] {
        const std::string metrics = testing::HttpGet(port, "/metrics").value_or("");
        scrapes = MetricValue(metrics, "kubestat_store_recovery_lost_scrapes");
        samples = MetricValue(metrics, "kubestat_store_recovery_lost_samples");
        nodes = MetricValue(metrics, "kubestat_store_recovery_lost_nodes");
        return scrapes > 0;
      },
      std::chrono::seconds(30)))
      << scrapes << "\n"
      << log;
  EXPECT_GT(samples, scrapes);
  EXPECT_GE(nodes, 1);
  EXPECT_LE(nodes, kNodes);
  // The log says the same, with the time range and the nodes by name.
  const std::string said = "store: the write-ahead log of " + store.string() +
                           " did not give back " + std::to_string(static_cast<uint64_t>(scrapes)) +
                           " acknowledged scrapes (" +
                           std::to_string(static_cast<uint64_t>(samples)) + " samples) of " +
                           std::to_string(static_cast<int>(nodes)) + " nodes, taken after ";
  const size_t at = log.find(said);
  ASSERT_NE(at, std::string::npos) << said << "\n" << log;
  const std::string line = log.substr(at, log.find('\n', at) - at);
  EXPECT_NE(line.find(" through "), std::string::npos) << line;
  EXPECT_NE(line.find("node-000"), std::string::npos) << line;
  EXPECT_GT(MetricValue(testing::HttpGet(port, "/metrics").value_or(""),
                        "kubestat_store_wal_dropped_bytes"),
            0)
      << log;
  EXPECT_EQ(aggregator.Signal(SIGTERM, std::chrono::seconds(20)), 0) << log2();
  // Said once: the next start finds nothing missing.
  Process third(KUBESTAT_AGGREGATOR_BINARY, args, dir / "aggregator-3.log");
  ASSERT_TRUE(PollUntil(
      [&] {
        return testing::HttpGetReply(port, "/readyz").value_or(testing::HttpReply{}).code == 200;
      },
      std::chrono::seconds(60)))
      << ReadAll((dir / "aggregator-3.log").string());
  EXPECT_EQ(MetricValue(testing::HttpGet(port, "/metrics").value_or(""),
                        "kubestat_store_recovery_lost_scrapes"),
            0);
  EXPECT_EQ(ReadAll((dir / "aggregator-3.log").string()).find("did not give back"),
            std::string::npos);
  EXPECT_EQ(third.Signal(SIGTERM, std::chrono::seconds(20)), 0);
}

INSTANTIATE_TEST_SUITE_P(StorageFaultsTest, WriteAheadLogLossTest,
                         ::testing::Values(LogDamage::kGarbled, LogDamage::kCut),
                         [](const ::testing::TestParamInfo<LogDamage>& info) {
                           return info.param == LogDamage::kGarbled ? "Garbled" : "CutInHalf";
                         });

TEST(StorageFaultsTest, ADamagedDictionaryIsServedWithEverySeriesNamedAndStopsOnlyWhenStrict) {
  const TempDir scratch("kubestat-unrestored-it");
  const std::filesystem::path& dir = scratch.path();
  const std::filesystem::path store = dir / "store";
  {
    // A store whose dictionary holds a series entry that is not a series key.
    storage::StoreOptions options;
    options.dir = store.string();
    absl::StatusOr<std::unique_ptr<storage::Store>> opened = storage::Store::Open(options);
    ASSERT_TRUE(opened.ok()) << opened.status();
    storage::ScrapeBatch batch;
    const storage::NodeId node = (*opened)->AllocateNodeId();
    batch.AddNode(node, "node-0000");
    batch.AddSeries((*opened)->AllocateSeriesId(), node, "not a series key");
    ASSERT_TRUE((*opened)->Write(batch).ok());
  }
  const int apiserver_port = FreeLoopbackPort();
  Process simulator(KUBESTAT_SIM_BINARY, testing::SimFlags(dir, kNodes, 17, apiserver_port),
                    dir / "sim.log");
  ASSERT_TRUE(WaitForLog(dir / "sim.log", "READY", std::chrono::seconds(60)))
      << ReadAll((dir / "sim.log").string());
  const int port = FreeLoopbackPort();

  Process strict(KUBESTAT_AGGREGATOR_BINARY,
                 testing::SimAggregatorFlags(dir, port, store, "1s", "500ms", {"--storage-strict"}),
                 dir / "aggregator-1.log");
  EXPECT_EQ(strict.Wait(std::chrono::seconds(60)), 1);
  const std::string log1 = ReadAll((dir / "aggregator-1.log").string());
  EXPECT_NE(log1.find("not restored: series 1 of node 1 (its dictionary entry is unreadable)"),
            std::string::npos)
      << log1;
  EXPECT_NE(log1.find("is damaged: 1 series could not be restored (named above); start without "
                      "--storage-strict"),
            std::string::npos)
      << log1;

  Process served(KUBESTAT_AGGREGATOR_BINARY,
                 testing::SimAggregatorFlags(dir, port, store, "1s", "500ms"),
                 dir / "aggregator-2.log");
  const auto log2 = [&dir] { return ReadAll((dir / "aggregator-2.log").string()); };
  ASSERT_TRUE(PollUntil(
      [&] {
        return testing::HttpGetReply(port, "/apis/metrics/v1alpha1/nodes/node-0000")
                   .value_or(testing::HttpReply{})
                   .code == 200;
      },
      std::chrono::seconds(60)))
      << log2();
  EXPECT_NE(log2().find("not restored: series 1 of node 1 (its dictionary entry is unreadable)"),
            std::string::npos);
  EXPECT_EQ(MetricValue(testing::HttpGet(port, "/metrics").value_or(""),
                        "kubestat_rebuild_unrestored_series"),
            1);
  EXPECT_EQ(served.Signal(SIGTERM, std::chrono::seconds(20)), 0) << log2();
}

// A table file with 4 KiB of random bytes where its first block was: the aggregator starts,
// salvages the store (the unreadable range named in its log and counted, the damaged files
// kept in a quarantine folder), rebuilds the nodes' history that lay beyond the damage and
// serves every node fresh through kubectl; a restart then finds a clean store. With
// --storage-strict it stops instead, naming the damage.
TEST(StorageFaultsTest, ACorruptTableFileIsSalvagedAndEveryNodeServedWithoutARestart) {
  if (!testing::FindOnPath("kubectl")) GTEST_SKIP() << "kubectl is not installed; skipping";
  FullVolume run("kubestat-corrupt-table-it");  // on the scratch folder's own disk
  const std::filesystem::path store = run.Dir() / "store";
  ASSERT_TRUE(run.Start({}, store)) << run.LogText();
  // A few rounds of history, then a stop.
  ASSERT_TRUE(PollUntil([&] { return run.Metric("kubestat_scrape_rounds_total") >= 8; },
                        std::chrono::seconds(60)))
      << run.LogText();
  ASSERT_EQ(run.aggregator()->Signal(SIGTERM, std::chrono::seconds(20)), 0) << run.LogText();
  run.aggregator().reset();
  {
    // Scrapes of a node nobody knows, three hours back, so that the table's first blocks
    // hold them (keys sort by hour) and the nodes' own history lies beyond: the rebuild,
    // reading each node's hours newest first, reaches the damage in that hour. Then
    // everything goes into a table file, whose first 4 KiB are overwritten.
    storage::StoreOptions options;
    options.dir = store.string();
    absl::StatusOr<std::unique_ptr<storage::Store>> opened = storage::Store::Open(options);
    ASSERT_TRUE(opened.ok()) << opened.status();
    const Timestamp earlier = std::chrono::time_point_cast<Duration>(
        std::chrono::system_clock::now() - std::chrono::hours(3));
    std::mt19937_64 random(3);
    for (int i = 0; i < 2000; ++i) {
      std::vector<storage::SeriesValue> values;
      for (storage::SeriesId id = 1; id <= 20; ++id) values.push_back({id, random() >> 24});
      storage::ScrapeBatch filler;
      filler.PutScrape(4000000000u, earlier + std::chrono::seconds(i), values);
      ASSERT_TRUE((*opened)->Write(filler).ok());
    }
    ASSERT_TRUE((*opened)->Flush().ok());
  }
  std::filesystem::path table;
  for (const auto& entry : std::filesystem::directory_iterator(store)) {
    if (entry.path().extension() == ".sst" &&
        (table.empty() || entry.file_size() > std::filesystem::file_size(table))) {
      table = entry.path();
    }
  }
  ASSERT_FALSE(table.empty());
  testing::Garble(table, 0, std::min<size_t>(4096, std::filesystem::file_size(table) / 2), 7u);

  ASSERT_TRUE(run.StartAggregator({"--storage-strict"}, /*expect_ready=*/false));
  EXPECT_EQ(run.aggregator()->Wait(std::chrono::seconds(60)), 1) << run.LogText();
  EXPECT_NE(run.LogText().find("block checksum mismatch"), std::string::npos) << run.LogText();

  ASSERT_TRUE(run.StartAggregator({})) << run.LogText();
  EXPECT_TRUE(run.Ready());
  EXPECT_TRUE(run.ServesFreshThroughKubectl()) << run.LogText();
  for (int n = 0; n < kNodes; ++n) {
    char name[16];
    std::snprintf(name, sizeof(name), "node-%04d", n);
    EXPECT_TRUE(PollUntil(
        [&] {
          return run.Get(std::string("/apis/metrics.k8s.io/v1beta1/nodes/") + name).code == 200;
        },
        std::chrono::seconds(30)))
        << name;
  }
  const std::string log = run.LogText();
  EXPECT_NE(log.find("store: lost in the salvage: "), std::string::npos) << log;
  // The nodes' own history lay beyond the damage: their series were rebuilt from it.
  const size_t rebuilt = log.find("rebuilt ", log.find("store: salvaged "));
  ASSERT_NE(rebuilt, std::string::npos) << log;
  EXPECT_GT(std::atoi(log.c_str() + rebuilt + 8), 0) << log;
  EXPECT_EQ(run.Metric("kubestat_store_salvages_total"), 1);
  EXPECT_GE(run.Metric("kubestat_store_salvage_lost_ranges_total"), 1);
  int quarantines = 0;
  for (const auto& entry : std::filesystem::directory_iterator(store)) {
    if (entry.path().filename().string().starts_with("quarantine-")) {
      ++quarantines;
      EXPECT_TRUE(std::filesystem::exists(entry.path() / table.filename())) << entry.path();
    }
  }
  EXPECT_EQ(quarantines, 1);

  // The salvaged store is clean: the next start rebuilds without a salvage.
  ASSERT_EQ(run.aggregator()->Signal(SIGTERM, std::chrono::seconds(20)), 0) << run.LogText();
  ASSERT_TRUE(run.StartAggregator({})) << run.LogText();
  EXPECT_EQ(run.LogText().find("salvag"), std::string::npos) << run.LogText();
  EXPECT_EQ(run.Metric("kubestat_store_salvages_total"), 0);
}

}  // namespace
}  // namespace kubestat
