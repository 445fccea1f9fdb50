// The store on a real file system that fills up (a 4 MiB tmpfs; skips where it cannot be
// mounted): with min_free_bytes writes are refused before RocksDB meets a full disk; without
// it, RocksDB's failure is a Status, its background error is caught by the listener and
// counted, and once there is room again the next write resumes RocksDB. Never an abort.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kubestat/storage/store.h"
#include "support/poll.h"
#include "support/small_volume.h"
#include "support/temp_dir.h"

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

  void Open(uint64_t min_free_bytes) {
    StoreOptions options;
    options.dir = (volume_.path() / "store").string();
    options.write_buffer_bytes = size_t{1} << 20;
    options.block_cache_bytes = size_t{1} << 20;
    options.min_free_bytes = min_free_bytes;
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  // One scrape of 200 series with incompressible values (about 2 KB).
  absl::Status WriteScrape(int i) {
    ScrapeBatch batch;
    std::vector<SeriesValue> values;
    for (uint64_t id = 1; id <= 200; ++id) values.push_back({id, random_()});
    batch.PutScrape(1, kT0 + std::chrono::seconds(i), values);
    return store_->Write(batch);
  }
  ::kubestat::testing::TempDir scratch_;
  ::kubestat::testing::SmallVolume volume_{scratch_.path() / "volume"};
  std::unique_ptr<Store> store_;
  std::mt19937_64 random_{7};
};

TEST_F(StoreFullVolumeTest, WritesAreRefusedBeforeTheVolumeIsFullAndResumeWithRoom) {
  Open(1 << 20);
  ASSERT_TRUE(WriteScrape(0).ok());
  volume_.FillLeaving(512 << 10);
  const absl::Status refused = WriteScrape(1);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(refused.message().find("below --storage-min-free (1048576)"), std::string::npos);
  EXPECT_EQ(store_->Stats().low_space_pauses, 1u);
  EXPECT_EQ(store_->Stats().low_space_refusals, 1u);
  volume_.Empty();
  EXPECT_TRUE(WriteScrape(2).ok());
  EXPECT_EQ(store_->Stats().low_space_pauses, 1u);
}

TEST_F(StoreFullVolumeTest, AFullDiskUnderRocksDbIsAStatusAndWritesResumeWithRoom) {
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
  // Which background job meets the full disk first is up to RocksDB's timing: a compaction's
  // error lets writes go on (the next write resumes it, a recovery) until a flush's stops
  // them. Either way the store is now stopped on an error it has not recovered from.
  const StoreStats failing = store_->Stats();
  EXPECT_GE(failing.background_errors, 1u);
  EXPECT_LT(failing.recoveries, failing.background_errors);
  volume_.Empty();
  // RocksDB recovers from a full disk by itself once there is room (it looks every few
  // seconds); writes are taken again from then on, and that is counted as a recovery.
  int next = i + 1;
  ASSERT_TRUE(::kubestat::testing::PollUntil([&] { return WriteScrape(next++).ok(); },
                                             std::chrono::seconds(60)))
      << WriteScrape(next);
  EXPECT_EQ(store_->Stats().background_errors, failing.background_errors);
  EXPECT_GT(store_->Stats().recoveries, failing.recoveries);
}

}  // namespace
}  // namespace kubestat::storage
