// The ingestor over a damaged store. Damage found while running: the store salvages itself
// in the background while scrapes go on, and when the salvage lost the dictionary the
// ingestor puts its nodes' and series' entries again, so that a restart still knows every
// series. Damage found at start, in the middle of the ingestor's chained blobs: after the
// salvage, the blobs whose chain lost its start are skipped and every node is rebuilt.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/storage/store.h"
#include "kubestat/testing/aggregator/ingest_scrape_builder.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::aggregator {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

const Timestamp kT0 = Timestamp(std::chrono::hours(24 * 20000));

std::set<std::string> Keys(const std::vector<windows::SeriesWindows>& series) {
  std::set<std::string> keys;
  for (const windows::SeriesWindows& s : series) keys.insert(s.key.ToString());
  return keys;
}

storage::StoreOptions SmallStore(const ::kubestat::testing::TempDir& scratch) {
  storage::StoreOptions options;
  options.dir = (scratch.path() / "store").string();
  options.block_cache_bytes = 1 << 20;
  options.write_buffer_bytes = 1 << 20;
  return options;
}

TEST(IngestStoreDamageTest, ASalvageThatLostTheDictionaryLeavesEverySeriesKnownAfterARestart) {
  ::kubestat::testing::TempDir scratch;
  storage::StoreOptions options = SmallStore(scratch);
  options.backlog_bytes = 16 << 20;
  auto opened = storage::Store::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<storage::Store> store = *std::move(opened);
  FakeClock clock;
  auto created = Ingestor::Create(IngestOptions{}, store.get(), &clock);
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<Ingestor> ingestor = *std::move(created);
  ASSERT_TRUE(ingestor->Rebuild().ok());

  testing::SyntheticCluster cluster(2, 4, 2, 7);
  const Duration step = seconds(10);
  Timestamp t = kT0;
  auto round = [&] {
    for (size_t n = 0; n < cluster.nodes(); ++n) {
      ASSERT_TRUE(ingestor->IngestAt(cluster.Scrape(n, t), t).ok());
    }
    t += step;
  };
  // The first round writes every dictionary entry, into a table file of its own whose
  // first block is then damaged (before any read brought it into the block cache).
  round();
  ASSERT_TRUE(store->Flush().ok());
  fs::path table;
  for (const fs::directory_entry& entry : fs::directory_iterator(options.dir)) {
    // The newest (the highest number), should the store have flushed before.
    if (entry.path().extension() == ".sst" && (table.empty() || entry.path() > table)) {
      table = entry.path();
    }
  }
  ASSERT_FALSE(table.empty());
  ::kubestat::testing::Garble(table, 0, 64);
  ASSERT_EQ(store->LoadDictionary().status().code(), absl::StatusCode::kDataLoss);

  // Scrapes go on; the store salvages, loses the dictionary, and the ingestor puts it again.
  ASSERT_TRUE(::kubestat::testing::PollUntil(
      [&] {
        round();
        return store->Stats().salvages == 1 && store->DegradedReason().empty();
      },
      seconds(30)))
      << store->DegradedReason();
  ASSERT_EQ(store->SalvageEpoch(), 1u);
  for (int i = 0; i < 3; ++i) round();
  EXPECT_EQ(ingestor->Stats().engine_errors, 0u);
  const std::set<std::string> live = Keys(ingestor->QueryAll());
  ASSERT_FALSE(live.empty());

  // A restart: every series is known again from the store.
  ingestor.reset();
  store.reset();
  opened = storage::Store::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  store = *std::move(opened);
  created = Ingestor::Create(IngestOptions{}, store.get(), &clock);
  ASSERT_TRUE(created.ok()) << created.status();
  ingestor = *std::move(created);
  const absl::Status rebuilt = ingestor->Rebuild();
  ASSERT_TRUE(rebuilt.ok()) << rebuilt;
  EXPECT_EQ(ingestor->Stats().rebuild_errors, 0u);
  EXPECT_EQ(Keys(ingestor->QueryAll()), live);
}

TEST(IngestStoreDamageTest, AfterASalvageAtStartChainsThatLostTheirStartCostOnlyThemselves) {
  ::kubestat::testing::TempDir scratch;
  storage::StoreOptions options = SmallStore(scratch);
  FakeClock clock;
  testing::SyntheticCluster cluster(8, 10, 2, 11);
  const Duration step = seconds(10);
  std::set<std::string> before;
  {
    auto store = storage::Store::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    auto ingestor = Ingestor::Create(IngestOptions{}, store->get(), &clock);
    ASSERT_TRUE(ingestor.ok()) << ingestor.status();
    ASSERT_TRUE((*ingestor)->Rebuild().ok());
    for (Timestamp t = kT0; t < kT0 + std::chrono::minutes(40); t += step) {
      for (size_t n = 0; n < cluster.nodes(); ++n) {
        ASSERT_TRUE((*ingestor)->IngestAt(cluster.Scrape(n, t), t).ok());
      }
    }
    before = Keys((*ingestor)->QueryAll());
    ASSERT_TRUE((*store)->Flush().ok());
  }
  // 4 KiB of random bytes in the middle of the largest table: blocks of chained blobs.
  fs::path largest;
  for (const fs::directory_entry& entry : fs::directory_iterator(options.dir)) {
    if (entry.path().extension() == ".sst" &&
        (largest.empty() || entry.file_size() > fs::file_size(largest))) {
      largest = entry.path();
    }
  }
  ASSERT_GT(fs::file_size(largest), 128u << 10) << "the history should span many blocks";
  ::kubestat::testing::Garble(largest, fs::file_size(largest) / 2, 4096);

  // As the aggregator starts: a rebuild that reads damage, a salvage, a rebuild again.
  auto store = storage::Store::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  auto ingestor = Ingestor::Create(IngestOptions{}, store->get(), &clock);
  ASSERT_TRUE(ingestor.ok()) << ingestor.status();
  const absl::Status first = (*ingestor)->Rebuild();
  ASSERT_TRUE(absl::IsDataLoss(first) || (*ingestor)->Stats().rebuild_damaged_reads > 0) << first;
  absl::StatusOr<storage::SalvageReport> salvaged = (*store)->Salvage();
  ASSERT_TRUE(salvaged.ok()) << salvaged.status();
  const absl::Status second = (*ingestor)->Rebuild();
  ASSERT_TRUE(second.ok()) << second;
  EXPECT_GT((*store)->Stats().orphaned_scrapes, 0u)
      << "the damage should have cut a chain, whose rest is skipped";
  EXPECT_EQ(Keys((*ingestor)->QueryAll()), before);
}

}  // namespace
}  // namespace kubestat::aggregator
