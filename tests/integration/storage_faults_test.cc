// kubestat-sim and kubestat-aggregator as real processes, the store on a 4 MiB tmpfs that
// something else fills: store writes pause before the volume is full (--storage-min-free),
// /readyz says why while the windows keep being served from memory, the refused nodes are
// failed nodes of their rounds, writes resume when the room comes back, and a restart on the
// nearly full volume starts, serves and waits for room instead of aborting (skips where a
// tmpfs cannot be mounted: not root, or no mount permission in this container). And a
// write-ahead log garbled after a kill -9: the restarted aggregator says how many bytes
// RocksDB's replay dropped, in its log and in /metrics. And a store holding a series it cannot
// restore: the aggregator names it and exits 1, unless --storage-salvage, with which it
// serves the rest and counts it.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "harness.h"
#include "kubestat/storage/store.h"
#include "support/files.h"
#include "support/net.h"
#include "support/poll.h"
#include "support/small_volume.h"
#include "support/temp_dir.h"

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

TEST(StorageFaultsTest, AFillingVolumePausesWritesWithReadyzSayingWhyAndNeverAborts) {
  const TempDir scratch("kubestat-storage-faults-it");
  const std::filesystem::path& dir = scratch.path();
  SmallVolume volume(dir / "volume");
  if (!volume.mounted()) {
    GTEST_SKIP() << "cannot mount a 4 MiB tmpfs on " << (dir / "volume")
                 << " (needs root and mount permission): " << volume.error();
  }

  const int apiserver_port = FreeLoopbackPort();
  Process simulator(KUBESTAT_SIM_BINARY, testing::SimFlags(dir, kNodes, 11, apiserver_port),
                    dir / "sim.log");
  ASSERT_TRUE(WaitForLog(dir / "sim.log", "READY", std::chrono::seconds(60)))
      << ReadAll((dir / "sim.log").string());

  const int port = FreeLoopbackPort();
  const std::vector<std::string> args =
      testing::SimAggregatorFlags(dir, port, dir / "volume" / "store", "1s", "500ms",
                                  {"--storage-min-free=1Mi", "--storage-cache-mib=1"});
  const auto get = [port](const std::string& path) {
    return testing::HttpGetReply(port, path).value_or(testing::HttpReply{});
  };
  const auto ready = [&] { return get("/readyz").code == 200; };
  const auto store_refusing = [&] {
    return get("/readyz?verbose")
               .body.find("[-]store-writes failed: the store rejected the last") !=
           std::string::npos;
  };

  std::optional<Process> aggregator;
  aggregator.emplace(KUBESTAT_AGGREGATOR_BINARY, args, dir / "aggregator-1.log");
  const auto log1 = [&dir] { return ReadAll((dir / "aggregator-1.log").string()); };
  ASSERT_TRUE(PollUntil(
      [&] { return ready() && get("/apis/metrics/v1alpha1/nodes/node-0000").code == 200; },
      std::chrono::seconds(60)))
      << get("/readyz?verbose").body << log1();

  // Something else fills the volume: under 1 MiB left.
  volume.FillLeaving(512 * 1024);
  ASSERT_TRUE(PollUntil(store_refusing, std::chrono::seconds(30)))
      << get("/readyz?verbose").body << log1();
  const testing::HttpReply refusing = get("/readyz?verbose");
  EXPECT_EQ(refusing.code, 503);
  EXPECT_NE(refusing.body.find("store: writes paused: "), std::string::npos) << refusing.body;
  EXPECT_NE(refusing.body.find("below --storage-min-free (1048576)"), std::string::npos)
      << refusing.body;
  EXPECT_EQ(get("/livez").code, 200);  // a restart makes no room
  // The windows are still served from memory.
  EXPECT_EQ(get("/apis/metrics/v1alpha1/nodes/node-0000").code, 200);
  ASSERT_TRUE(PollUntil([&] { return log1().find("failed (store=") != std::string::npos; },
                        std::chrono::seconds(30)))
      << log1();
  EXPECT_NE(log1().find("writes paused, queries answered from memory"), std::string::npos);
  EXPECT_NE(log1().find("readyz check store-writes failed: "), std::string::npos);
  std::string metrics = testing::HttpGet(port, "/metrics").value_or("");
  // At least one pause: RocksDB deleting files a compaction replaced can give room back for
  // a moment, and a pause that resumes and comes again counts twice.
  EXPECT_GE(MetricValue(metrics, "kubestat_store_low_space_pauses_total"), 1) << metrics;
  EXPECT_GT(MetricValue(metrics, "kubestat_store_low_space_refusals_total"), 0) << metrics;
  EXPECT_GE(MetricValue(metrics,
                        "kubestat_health_check_failures_total{check=\"store-writes\","
                        "endpoint=\"readyz\"}"),
            1)
      << metrics;

  // Room again: writes resume and the aggregator is ready.
  volume.Empty();
  ASSERT_TRUE(PollUntil(ready, std::chrono::seconds(30))) << get("/readyz?verbose").body << log1();
  EXPECT_NE(log1().find(": writes resumed"), std::string::npos) << log1();
  EXPECT_NE(log1().find("readyz check store-writes passes again"), std::string::npos);

  // Full again, then a restart on the nearly full volume: it starts, serves, says why it is
  // not ready, and is ready once there is room; it exits cleanly every time.
  volume.FillLeaving(512 * 1024);
  ASSERT_TRUE(PollUntil(store_refusing, std::chrono::seconds(30))) << log1();
  ASSERT_EQ(aggregator->Signal(SIGTERM, std::chrono::seconds(20)), 0) << log1();
  aggregator.emplace(KUBESTAT_AGGREGATOR_BINARY, args, dir / "aggregator-2.log");
  const auto log2 = [&dir] { return ReadAll((dir / "aggregator-2.log").string()); };
  ASSERT_TRUE(PollUntil(store_refusing, std::chrono::seconds(60)))
      << get("/readyz?verbose").body << log2();
  EXPECT_NE(get("/readyz?verbose").body.find("[+]startup ok"), std::string::npos);
  EXPECT_EQ(get("/apis/metrics/v1alpha1/nodes/node-0000").code, 200) << log2();
  EXPECT_TRUE(aggregator->Running());
  volume.Empty();
  ASSERT_TRUE(PollUntil(ready, std::chrono::seconds(30))) << get("/readyz?verbose").body << log2();
  EXPECT_EQ(aggregator->Signal(SIGTERM, std::chrono::seconds(20)), 0) << log2();
  aggregator.reset();
  EXPECT_EQ(simulator.Signal(SIGTERM, std::chrono::seconds(10)), 0);
}

TEST(StorageFaultsTest, WriteAheadLogBytesDroppedAtRecoveryAreReportedWithTheirSize) {
  const TempDir scratch("kubestat-wal-drop-it");
  const std::filesystem::path& dir = scratch.path();
  const int apiserver_port = FreeLoopbackPort();
  Process simulator(KUBESTAT_SIM_BINARY, testing::SimFlags(dir, kNodes, 13, apiserver_port),
                    dir / "sim.log");
  ASSERT_TRUE(WaitForLog(dir / "sim.log", "READY", std::chrono::seconds(60)))
      << ReadAll((dir / "sim.log").string());
  const int port = FreeLoopbackPort();
  const std::filesystem::path store = dir / "store";
  const std::vector<std::string> args =
      testing::SimAggregatorFlags(dir, port, store, "1s", "500ms");
  const auto wal_bytes = [&store] {
    uint64_t bytes = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(store, ec)) {
      if (entry.path().extension() == ".log") bytes += entry.file_size();
    }
    return bytes;
  };
  {
    Process aggregator(KUBESTAT_AGGREGATOR_BINARY, args, dir / "aggregator-1.log");
    ASSERT_TRUE(PollUntil([&] { return wal_bytes() > 16 * 1024; }, std::chrono::seconds(120)))
        << ReadAll((dir / "aggregator-1.log").string());
    ASSERT_EQ(aggregator.Signal(SIGKILL, std::chrono::seconds(10)), 128 + SIGKILL);
  }
  // Garble 64 bytes in the middle of the newest log, as a torn or bad disk write would.
  std::filesystem::path wal;
  for (const auto& entry : std::filesystem::directory_iterator(store)) {
    if (entry.path().extension() == ".log" && entry.path() > wal) wal = entry.path();
  }
  ASSERT_FALSE(wal.empty());
  {
    std::fstream file(wal, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(std::filesystem::file_size(wal) / 2));
    const std::string garbage(64, '\xA5');
    file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }

  Process aggregator(KUBESTAT_AGGREGATOR_BINARY, args, dir / "aggregator-2.log");
  const auto log2 = [&dir] { return ReadAll((dir / "aggregator-2.log").string()); };
  ASSERT_TRUE(PollUntil(
      [&] {
        return testing::HttpGetReply(port, "/readyz").value_or(testing::HttpReply{}).code == 200;
      },
      std::chrono::seconds(60)))
      << log2();
  const std::string log = log2();
  EXPECT_NE(log.find("store: the write-ahead log of " + store.string() + " lost "),
            std::string::npos)
      << log;
  double dropped = -1;
  ASSERT_TRUE(PollUntil(
      [&] {
        dropped = MetricValue(testing::HttpGet(port, "/metrics").value_or(""),
                              "kubestat_store_wal_dropped_bytes");
        return dropped > 0;
      },
      std::chrono::seconds(30)))
      << dropped;
  EXPECT_NE(log.find(" lost " + std::to_string(static_cast<uint64_t>(dropped)) + " bytes"),
            std::string::npos)
      << dropped << "\n"
      << log;
  EXPECT_EQ(aggregator.Signal(SIGTERM, std::chrono::seconds(20)), 0) << log2();
}

TEST(StorageFaultsTest, ADamagedStoreStopsWithEverySeriesNamedUnlessSalvaged) {
  const TempDir scratch("kubestat-salvage-it");
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

  Process refused(KUBESTAT_AGGREGATOR_BINARY,
                  testing::SimAggregatorFlags(dir, port, store, "1s", "500ms"),
                  dir / "aggregator-1.log");
  EXPECT_EQ(refused.Wait(std::chrono::seconds(60)), 1);
  const std::string log1 = ReadAll((dir / "aggregator-1.log").string());
  EXPECT_NE(log1.find("not restored: series 1 of node 1 (its dictionary entry is unreadable)"),
            std::string::npos)
      << log1;
  EXPECT_NE(log1.find("is damaged: 1 series could not be restored (named above); start with "
                      "--storage-salvage"),
            std::string::npos)
      << log1;

  Process salvaged(
      KUBESTAT_AGGREGATOR_BINARY,
      testing::SimAggregatorFlags(dir, port, store, "1s", "500ms", {"--storage-salvage"}),
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
  EXPECT_EQ(salvaged.Signal(SIGTERM, std::chrono::seconds(20)), 0) << log2();
}

}  // namespace
}  // namespace kubestat
