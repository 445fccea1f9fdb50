// The store on a real file system that fills up (a 4 MiB tmpfs; skips where it cannot be
// mounted): with min_free_bytes writes pause before RocksDB meets a full disk; without it,
// RocksDB's failure is caught and the database reopened once there is room. With a backlog,
// the writes that could not be made wait in memory, are read as if written and are written
// when there is room; without one, they fail with a Status. Never an abort.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kubestat/storage/store.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/small_volume.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::storage {
namespace {

constexpr Timestamp kT0 = Timestamp(std::chrono::seconds(1795255200));

class StoreFullVolumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!volume_.mounted()) {
      GTEST_SKIP() << "cannot mount a 4 MiB tmpfs on " << volume_.path()
                   << " (needs root and mount permission): " << volume_.error();
    }
  }
  void TearDown() override { store_.reset(); }

  void Open(uint64_t min_free_bytes, uint64_t backlog_bytes = 0) {
    StoreOptions options;
    options.backlog_bytes = backlog_bytes;
    options.dir = (volume_.path() / "store").string();
    options.write_buffer_bytes = size_t{1} << 20;
    options.block_cache_bytes = size_t{1} << 20;
    options.min_free_bytes = min_free_bytes;
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  // One scrape of 200 series with incompressible values (about 2 KB); the values are kept
  // by time in `written_`.
  absl::Status WriteScrape(int i, bool with_dictionary = false) {
    ScrapeBatch batch;
    std::vector<SeriesValue> values;
    for (uint64_t id = 1; id <= 200; ++id) values.push_back({id, random_()});
    if (with_dictionary) {
      batch.AddNode(1, "node-a");
      for (uint64_t id = 1; id <= 200; ++id) batch.AddSeries(id, 1, "series-" + std::to_string(id));
    }
    batch.PutScrape(1, At(i), values);
    written_[i] = values;
    return store_->Write(batch);
  }
  static Timestamp At(int i) { return kT0 + std::chrono::seconds(i); }
  // The scrapes the store holds, by second.
  std::map<int, std::vector<SeriesValue>> Stored() {
    std::map<int, std::vector<SeriesValue>> stored;
    const absl::Status s = store_->ReadScrapes(
        1, kT0 - std::chrono::seconds(1), At(1 << 20),
        [&](Timestamp t, std::span<const SeriesValue> values) {
          stored[static_cast<int>(
              std::chrono::duration_cast<std::chrono::seconds>(t - kT0).count())] =
              std::vector<SeriesValue>(values.begin(), values.end());
        });
    EXPECT_TRUE(s.ok()) << s;
    return stored;
  }
  // Writes the next scrapes until the backlog is written (a write RocksDB refused is tried
  // again a second later); whether it was within 30 s.
  bool WriteUntilTheBacklogIsWritten() {
    return ::kubestat::testing::PollUntil(
        [&] {
          EXPECT_TRUE(WriteScrape(written_.rbegin()->first + 1).ok());
          return store_->Stats().backlog_batches == 0;
        },
        std::chrono::seconds(30));
  }
  std::map<int, std::vector<SeriesValue>> written_;
  ::kubestat::testing::TempDir scratch_;
  ::kubestat::testing::SmallVolume volume_{scratch_.path() / "volume"};
  std::unique_ptr<Store> store_;
  std::mt19937_64 random_{7};
};

TEST_F(StoreFullVolumeTest, WithoutABacklogWritesAreRefusedBeforeTheVolumeIsFullAndResume) {
  Open(256 << 10);
  ASSERT_TRUE(WriteScrape(0).ok());
  volume_.FillLeaving(128 << 10);
  const absl::Status refused = WriteScrape(1);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(refused.message().find("below --storage-min-free (262144)"), std::string::npos);
  EXPECT_EQ(store_->Stats().low_space_pauses, 1u);
  EXPECT_EQ(store_->Stats().low_space_refusals, 1u);
  volume_.Empty();
  EXPECT_TRUE(WriteScrape(2).ok());
  EXPECT_EQ(store_->Stats().low_space_pauses, 1u);
}

TEST_F(StoreFullVolumeTest, AMinimumAboveATenthOfTheVolumeIsATenth) {
  Open(64 << 20);  // more than the whole volume
  EXPECT_TRUE(WriteScrape(0).ok()) << "a tenth of 4 MiB is free";
  volume_.FillLeaving(128 << 10);
  EXPECT_EQ(WriteScrape(1).code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(StoreFullVolumeTest, WithoutABacklogAFullDiskUnderRocksDbIsAStatusAndWritesResumeWithRoom) {
  Open(0);
  volume_.FillLeaving(256 << 10);
  absl::Status failed;
  int i = 0;
  for (; i < 2000 && failed.ok(); ++i) {
    failed = WriteScrape(i);
    if (failed.ok() && i % 50 == 49) (void)store_->Flush();  // SSTs too, not only the log
  }
  ASSERT_FALSE(failed.ok()) << "4 MiB never filled";
  EXPECT_GE(store_->Stats().batch_errors, 1u);
  // Whatever met the full disk first (the log, a flush, a compaction), no write reaches
  // RocksDB again before it is reopened; the first reopen has the store's reserve to open
  // with, and takes writes until the volume is full for good. Then writes fail, and no
  // reopen is tried, until there is room.
  int failures = 0;
  for (int more = 0; more < 2000 && failures < 20; ++more) {
    failures = WriteScrape(i++).ok() ? 0 : failures + 1;
  }
  ASSERT_EQ(failures, 20);
  const uint64_t reopens = store_->Stats().reopens;
  EXPECT_LE(reopens, 1u);
  for (int more = 0; more < 20; ++more) EXPECT_FALSE(WriteScrape(i++).ok());
  EXPECT_EQ(store_->Stats().reopens, reopens);
  volume_.Empty();
  int next = i + 1;
  ASSERT_TRUE(::kubestat::testing::PollUntil([&] { return WriteScrape(next++).ok(); },
                                             std::chrono::seconds(60)))
      << WriteScrape(next);
  EXPECT_GE(store_->Stats().reopens + store_->Stats().recoveries, 1u);
}

TEST_F(StoreFullVolumeTest, WritesWaitInMemoryWhileTheVolumeIsLowAreReadAndWrittenWithRoom) {
  Open(256 << 10, 16 << 20);
  ASSERT_TRUE(WriteScrape(0, /*with_dictionary=*/true).ok());
  volume_.FillLeaving(128 << 10);
  for (int i = 1; i <= 40; ++i) ASSERT_TRUE(WriteScrape(i).ok()) << i;
  StoreStats stats = store_->Stats();
  EXPECT_EQ(stats.batches_deferred, 40u);
  EXPECT_EQ(stats.backlog_batches, 40u);
  EXPECT_GT(stats.backlog_bytes, 40u * 1000);
  EXPECT_NE(store_->DegradedReason().find("kept in memory"), std::string::npos)
      << store_->DegradedReason();
  // Read as if written: ranges, one scrape, the dictionary.
  EXPECT_EQ(Stored(), written_);
  absl::StatusOr<std::vector<SeriesValue>> one = store_->GetScrape(1, At(17));
  ASSERT_TRUE(one.ok()) << one.status();
  std::vector<SeriesValue> want = written_[17];
  std::sort(want.begin(), want.end(),
            [](const SeriesValue& a, const SeriesValue& b) { return a.id < b.id; });
  EXPECT_EQ(*one, want);
  volume_.Empty();
  ASSERT_TRUE(WriteUntilTheBacklogIsWritten()) << store_->DegradedReason();
  EXPECT_EQ(store_->DegradedReason(), "");
  EXPECT_EQ(store_->Stats().scrapes_lost, 0u);
  EXPECT_GE(store_->Stats().backlog_written, 40u);
  // On disk: all of them, after a reopen.
  store_.reset();
  Open(0);
  EXPECT_EQ(Stored(), written_);
  absl::StatusOr<Dictionary> dict = store_->LoadDictionary();
  ASSERT_TRUE(dict.ok()) << dict.status();
  EXPECT_EQ(dict->series.size(), 200u);
}

TEST_F(StoreFullVolumeTest,
       AFullDiskUnderRocksDbLosesNoWriteWithABacklogAndTheStoreReopensWithRoom) {
  Open(0, 16 << 20);
  ASSERT_TRUE(WriteScrape(0, /*with_dictionary=*/true).ok());
  volume_.FillLeaving(256 << 10);
  int i = 1;
  // RocksDB meets the full disk in its log or in a flush: either way the writes wait.
  for (; i < 2000 && store_->Stats().backlog_batches == 0; ++i) {
    ASSERT_TRUE(WriteScrape(i).ok()) << i;
    if (i % 50 == 49) (void)store_->Flush();
  }
  ASSERT_GT(store_->Stats().backlog_batches, 0u) << "4 MiB never filled";
  for (int more = 0; more < 20; ++more) ASSERT_TRUE(WriteScrape(i++).ok());
  EXPECT_GT(store_->Stats().backlog_batches, 0u);
  EXPECT_EQ(Stored(), written_);
  volume_.Empty();
  ASSERT_TRUE(WriteUntilTheBacklogIsWritten()) << store_->DegradedReason();
  EXPECT_GE(store_->Stats().reopens, 1u);
  EXPECT_EQ(store_->Stats().scrapes_lost, 0u);
  store_.reset();
  Open(0);
  EXPECT_EQ(Stored(), written_);
  EXPECT_EQ(store_->Stats().wal_bytes_dropped, 0u);
}

TEST_F(StoreFullVolumeTest, ABacklogOverItsBudgetDropsTheOldestScrapesAndKeepsTheDictionary) {
  Open(256 << 10, 96 << 10);
  volume_.FillLeaving(128 << 10);
  const uint64_t generation = store_->LossGeneration();
  ASSERT_TRUE(WriteScrape(0, /*with_dictionary=*/true).ok());
  for (int i = 1; i < 60; ++i) ASSERT_TRUE(WriteScrape(i).ok());
  const StoreStats stats = store_->Stats();
  EXPECT_GT(stats.scrapes_lost, 0u);
  EXPECT_LT(stats.scrapes_lost, 60u);
  EXPECT_EQ(stats.batches_lost, stats.scrapes_lost);  // one scrape each
  EXPECT_EQ(stats.lost_from, At(0));
  EXPECT_EQ(stats.lost_through, At(static_cast<int>(stats.scrapes_lost) - 1));
  EXPECT_LE(stats.backlog_bytes, 96u << 10);
  EXPECT_GT(store_->LossGeneration(), generation);
  std::map<int, std::vector<SeriesValue>> newest;
  for (const auto& [t, values] : written_) {
    if (t >= static_cast<int>(stats.scrapes_lost)) newest[t] = values;
  }
  EXPECT_EQ(Stored(), newest);
  volume_.Empty();
  ASSERT_TRUE(WriteUntilTheBacklogIsWritten()) << store_->DegradedReason();
  store_.reset();
  Open(0);
  absl::StatusOr<Dictionary> dict = store_->LoadDictionary();
  ASSERT_TRUE(dict.ok()) << dict.status();
  EXPECT_EQ(dict->nodes.size(), 1u);
  EXPECT_EQ(dict->series.size(), 200u);
}

}  // namespace
}  // namespace kubestat::storage
