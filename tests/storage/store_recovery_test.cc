// What a cut write-ahead log lost, reported as what it was: on a real RocksDB whose newest
// log is cut in half after a clean close or after a writer died without closing, the
// reopened store names per node how many scrapes and samples it did not get back and their
// time range, and those figures equal what reading the store shows missing; a second open
// reports nothing again; a marker that does not decode is said and ignored; retention
// forgets the totals of nodes without scrapes left.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kubestat/storage/internal/ack_ledger.h"
#include "kubestat/storage/store.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::storage {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;
using ::testing::IsEmpty;

const Timestamp kT0 = Timestamp(std::chrono::hours(24 * 20000));
constexpr NodeId kNodes = 3;
constexpr int kRounds = 200;
constexpr SeriesId kSeries = 20;

std::unique_ptr<Store> OpenStore(const std::string& dir, Duration marker_interval = seconds(5)) {
  StoreOptions options;
  options.dir = dir;
  options.block_cache_bytes = 4 << 20;
  options.write_buffer_bytes = 16 << 20;
  options.ack_marker_interval = marker_interval;
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

Timestamp RoundTime(int round) { return kT0 + seconds(10 * round); }

// kNodes nodes of kSeries series; rounds [first, last) of one batch per node scrape.
void WriteRounds(Store& store, int first, int last) {
  if (first == 0) {
    ScrapeBatch dictionary;
    for (NodeId node = 1; node <= kNodes; ++node) {
      dictionary.AddNode(node, "node-" + std::to_string(node));
      for (SeriesId s = 1; s <= kSeries; ++s) {
        dictionary.AddSeries(node * 1000 + s, node, "series-" + std::to_string(s));
      }
    }
    ASSERT_TRUE(store.Write(dictionary).ok());
  }
  for (int round = first; round < last; ++round) {
    for (NodeId node = 1; node <= kNodes; ++node) {
      std::vector<SeriesValue> values;
      for (SeriesId s = 1; s <= kSeries; ++s) {
        values.push_back({node * 1000 + s, static_cast<uint64_t>(round * 7 + s)});
      }
      ScrapeBatch batch;
      batch.PutScrape(node, RoundTime(round), values);
      ASSERT_TRUE(store.Write(batch).ok());
    }
  }
}

// Cuts the newest write-ahead log of `dir` to half its size; its size before.
uintmax_t CutNewestLog(const std::string& dir) {
  fs::path newest;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".log" && entry.path() > newest) newest = entry.path();
  }
  EXPECT_FALSE(newest.empty()) << "no write-ahead log in " << dir;
  if (newest.empty()) return 0;
  const uintmax_t size = fs::file_size(newest);
  fs::resize_file(newest, size / 2);
  return size;
}

struct NodeRead {
  int scrapes = 0;
  Timestamp newest{};
};

NodeRead ReadNode(const Store& store, NodeId node) {
  NodeRead read;
  const absl::Status s = store.ReadScrapes(node, Timestamp::min(), Timestamp::max(),
                                           [&](Timestamp t, std::span<const SeriesValue>) {
                                             ++read.scrapes;
                                             read.newest = t;
                                           });
  EXPECT_TRUE(s.ok()) << s;
  return read;
}

// The store's reported losses equal what reading it shows missing of kRounds per node.
void ExpectLossesMatchReads(const Store& store, int rounds) {
  const std::vector<RecoveryLoss>& losses = store.RecoveryLosses();
  ASSERT_THAT(losses, ::testing::Not(IsEmpty())) << "the cut should have lost scrapes";
  uint64_t scrapes = 0;
  for (NodeId node = 1; node <= kNodes; ++node) {
    const NodeRead read = ReadNode(store, node);
    const int missing = rounds - read.scrapes;
    auto it = std::find_if(losses.begin(), losses.end(),
                           [node](const RecoveryLoss& l) { return l.node == node; });
    if (missing == 0) {
      EXPECT_EQ(it, losses.end()) << "node " << node << " lost nothing";
      continue;
    }
    ASSERT_NE(it, losses.end()) << "node " << node << " lost " << missing << " scrapes";
    EXPECT_EQ(it->name, "node-" + std::to_string(node));
    EXPECT_EQ(it->scrapes, static_cast<uint64_t>(missing));
    EXPECT_EQ(it->samples, static_cast<uint64_t>(missing) * kSeries);
    EXPECT_EQ(it->after, read.scrapes == 0 ? Timestamp{} : read.newest);
    EXPECT_EQ(it->through, RoundTime(rounds - 1));
    scrapes += it->scrapes;
  }
  EXPECT_EQ(store.Stats().recovery_lost_scrapes, scrapes);
  EXPECT_EQ(store.Stats().recovery_lost_samples, scrapes * kSeries);
  EXPECT_EQ(store.Stats().recovery_lost_nodes, losses.size());
}

TEST(StoreRecoveryTest, ACutLogAfterACleanCloseIsReportedAsTheScrapesItLost) {
  testing::TempDir dir;
  const std::string path = dir.File("db");
  {
    std::unique_ptr<Store> store = OpenStore(path);
    ASSERT_NE(store, nullptr);
    WriteRounds(*store, 0, kRounds);
    EXPECT_THAT(store->RecoveryLosses(), IsEmpty());
  }
  ASSERT_GT(CutNewestLog(path), 0u);
  {
    std::unique_ptr<Store> store = OpenStore(path);
    ASSERT_NE(store, nullptr);
    ExpectLossesMatchReads(*store, kRounds);
    EXPECT_GT(store->Stats().wal_bytes_dropped + store->Stats().recovery_lost_scrapes, 0u);
  }
  {
    // Reported once: the next open compares with what this one found.
    std::unique_ptr<Store> store = OpenStore(path);
    ASSERT_NE(store, nullptr);
    EXPECT_THAT(store->RecoveryLosses(), IsEmpty());
    EXPECT_EQ(store->Stats().recovery_lost_scrapes, 0u);
  }
}

TEST(StoreRecoveryTest, AWriterThatDiedWithoutClosingLosesExactlyWhatTheMarkerSays) {
  testing::TempDir dir;
  const std::string path = dir.File("db");
  // The writer is a child process that ends without closing the store (no destructor, no
  // final marker), as a killed aggregator does; with an interval of 0 the marker is
  // rewritten after every acknowledged write.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::unique_ptr<Store> store = OpenStore(path, Duration(0));
    if (store == nullptr) _exit(2);
    WriteRounds(*store, 0, kRounds);
    _exit(::testing::Test::HasFailure() ? 3 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_GT(CutNewestLog(path), 0u);
  std::unique_ptr<Store> store = OpenStore(path);
  ASSERT_NE(store, nullptr);
  ExpectLossesMatchReads(*store, kRounds);
  // Writes go on from what was recovered, and are whole at the next open.
  const int recovered = ReadNode(*store, 1).scrapes;
  store.reset();
  store = OpenStore(path);
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(store->RecoveryLosses(), IsEmpty());
  EXPECT_EQ(ReadNode(*store, 1).scrapes, recovered);
}

TEST(StoreRecoveryTest, AMarkerThatDoesNotDecodeIsIgnoredAndReplaced) {
  testing::TempDir dir;
  const std::string path = dir.File("db");
  {
    std::unique_ptr<Store> store = OpenStore(path);
    ASSERT_NE(store, nullptr);
    WriteRounds(*store, 0, 10);
  }
  {
    std::ofstream garbage(path + "/" + kMarkerName, std::ios::trunc | std::ios::binary);
    garbage << "not a marker";
  }
  EXPECT_FALSE(ReadAckMarker(path).ok());
  {
    std::unique_ptr<Store> store = OpenStore(path);
    ASSERT_NE(store, nullptr);
    EXPECT_THAT(store->RecoveryLosses(), IsEmpty());
    EXPECT_EQ(ReadNode(*store, 1).scrapes, 10);
  }
  absl::StatusOr<AckTable> marker = ReadAckMarker(path);
  ASSERT_TRUE(marker.ok()) << marker.status();
  ASSERT_EQ(marker->size(), kNodes);
  EXPECT_EQ(marker->at(1).scrapes, 10u);
  EXPECT_EQ(marker->at(1).samples, 10u * kSeries);
  EXPECT_EQ(marker->at(1).newest, RoundTime(9).time_since_epoch().count());
}

TEST(StoreRecoveryTest, RetentionForgetsTheTotalsOfNodesWithoutScrapesLeft) {
  testing::TempDir dir;
  const std::string path = dir.File("db");
  {
    std::unique_ptr<Store> store = OpenStore(path);
    ASSERT_NE(store, nullptr);
    WriteRounds(*store, 0, 1);  // every node at kT0
    // Only node 1 goes on, two days later.
    ScrapeBatch batch;
    const std::vector<SeriesValue> values = {{1001, 5}};
    const Timestamp later = kT0 + std::chrono::hours(48);
    batch.PutScrape(1, later, values);
    ASSERT_TRUE(store->Write(batch).ok());
    ASSERT_TRUE(store->ApplyRetention(later).ok());
  }
  absl::StatusOr<AckTable> marker = ReadAckMarker(path);
  ASSERT_TRUE(marker.ok()) << marker.status();
  ASSERT_EQ(marker->size(), 1u);
  EXPECT_EQ(marker->at(1).scrapes, 2u);
}

}  // namespace
}  // namespace kubestat::storage
