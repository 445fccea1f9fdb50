// The ingestor over a store whose disk is full (a 4 MiB tmpfs; skips where it cannot be
// mounted): the writes wait in the store's memory, the windows go on, and when the store
// drops waiting writes for want of memory, each node's windows are restored from what the
// store still holds, so that they agree with it: an ingestor rebuilt from the store then
// has exactly the live one's windows. A retention pass refused while writes wait is made
// once they are written, within the same hour.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <span>
#include <vector>

#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/storage/store.h"
#include "kubestat/testing/aggregator/ingest_scrape_builder.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/small_volume.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::aggregator {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

const Timestamp kT0 = Timestamp(std::chrono::hours(24 * 20000));

class IngestStoreLossTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!volume_.mounted()) {
      GTEST_SKIP() << "cannot mount a 4 MiB tmpfs on " << volume_.path()
                   << " (needs root and mount permission): " << volume_.error();
    }
    storage::StoreOptions options;
    options.dir = (volume_.path() / "store").string();
    options.block_cache_bytes = 1 << 20;
    options.write_buffer_bytes = 1 << 20;
    options.min_free_bytes = 1 << 20;  // a tenth of the volume: 409 KiB
    options.backlog_bytes = 256 << 10;
    auto store = storage::Store::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    ingestor_ = NewIngestor();
  }

  std::unique_ptr<Ingestor> NewIngestor() {
    auto ingestor = Ingestor::Create(IngestOptions{}, store_.get(), &clock_);
    EXPECT_TRUE(ingestor.ok()) << ingestor.status();
    EXPECT_TRUE((*ingestor)->Rebuild().ok());
    return std::move(*ingestor);
  }

  // Empties the volume and ingests a round every `step` from *t on until the store's
  // waiting writes are written (it retries a refused write a second later).
  bool EmptyAndIngestUntilTheBacklogIsWritten(testing::SyntheticCluster& cluster, Timestamp* t,
                                              Duration step) {
    volume_.Empty();
    return ::kubestat::testing::PollUntil(
        [&] {
          for (size_t n = 0; n < cluster.nodes(); ++n) {
            EXPECT_TRUE(ingestor_->IngestAt(cluster.Scrape(n, *t), *t).ok());
          }
          *t += step;
          return store_->Stats().backlog_batches == 0;
        },
        std::chrono::seconds(30));
  }

  ::kubestat::testing::TempDir scratch_;
  ::kubestat::testing::SmallVolume volume_{scratch_.path() / "volume"};
  FakeClock clock_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<Ingestor> ingestor_;
};

TEST_F(IngestStoreLossTest, AfterTheStoreDropsWaitingWritesTheWindowsAreThoseOfWhatItHolds) {
  testing::SyntheticCluster cluster(2, 4, 2, 7);
  const Duration step = seconds(10);
  Timestamp t = kT0;
  // Some history on disk first, then a volume too full to write to.
  for (; t < kT0 + hours(1); t += step) {
    for (size_t n = 0; n < cluster.nodes(); ++n) {
      ASSERT_TRUE(ingestor_->IngestAt(cluster.Scrape(n, t), t).ok());
    }
  }
  ASSERT_EQ(store_->Stats().batches_deferred, 0u);
  volume_.FillLeaving(200 << 10);
  // Every write waits in memory; the backlog overflows and drops its oldest scrapes, again
  // and again, while every scrape is taken.
  for (; t < kT0 + hours(2); t += step) {
    for (size_t n = 0; n < cluster.nodes(); ++n) {
      ASSERT_TRUE(ingestor_->IngestAt(cluster.Scrape(n, t), t).ok());
    }
  }
  const storage::StoreStats degraded = store_->Stats();
  EXPECT_GT(degraded.batches_deferred, 0u);
  EXPECT_GT(degraded.scrapes_lost, 0u);
  EXPECT_GT(store_->LossGeneration(), 0u);
  EXPECT_GT(ingestor_->Stats().restores_after_loss, 0u);
  EXPECT_EQ(ingestor_->Stats().engine_errors, 0u);

  // Room again: the rounds write what waits, and every node has seen the last drop.
  ASSERT_TRUE(EmptyAndIngestUntilTheBacklogIsWritten(cluster, &t, step));

  const std::vector<windows::SeriesWindows> live = ingestor_->QueryAll();
  ASSERT_FALSE(live.empty());
  const std::vector<windows::SeriesWindows> rebuilt = NewIngestor()->QueryAll();
  ASSERT_EQ(rebuilt.size(), live.size());
  for (size_t i = 0; i < live.size(); ++i) {
    ASSERT_EQ(rebuilt[i], live[i]) << live[i].key.ToString();
  }
}

TEST_F(IngestStoreLossTest, ARetentionPassRefusedWhileWritesWaitIsMadeOnceTheyAreWritten) {
  // A store keeping an hour.
  storage::StoreOptions options = store_->options();
  ingestor_.reset();
  store_.reset();
  options.retention = hours(1);
  auto reopened = storage::Store::Open(options);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  store_ = *std::move(reopened);
  ingestor_ = NewIngestor();

  testing::SyntheticCluster cluster(2, 4, 2, 7);
  const Duration step = seconds(10);
  auto ingest_until = [&](Timestamp* t, Timestamp end) {
    for (; *t < end; *t += step) {
      for (size_t n = 0; n < cluster.nodes(); ++n) {
        ASSERT_TRUE(ingestor_->IngestAt(cluster.Scrape(n, *t), *t).ok());
      }
    }
  };
  Timestamp t = kT0;
  ASSERT_NO_FATAL_FAILURE(ingest_until(&t, kT0 + std::chrono::minutes(10)));
  const uint64_t passes = store_->Stats().retention_passes;  // this hour's (nothing expired)
  // Two hours on, with the volume full: the hour's pass is refused (writes wait).
  volume_.FillLeaving(200 << 10);
  t = kT0 + hours(2);
  ASSERT_NO_FATAL_FAILURE(ingest_until(&t, t + std::chrono::minutes(1)));
  ASSERT_GT(store_->Stats().batches_deferred, 0u);
  EXPECT_GT(store_->Stats().retention_errors, 0u);
  EXPECT_EQ(store_->Stats().retention_passes, passes);

  // Room again: once the waiting writes are in, a later scrape of the same hour makes the
  // pass, and the first hour's scrapes are gone.
  ASSERT_TRUE(EmptyAndIngestUntilTheBacklogIsWritten(cluster, &t, step));
  ASSERT_NO_FATAL_FAILURE(ingest_until(&t, t + std::chrono::minutes(2)));
  ASSERT_LT(t, kT0 + hours(3)) << "the pass should come within the hour it was refused in";
  EXPECT_EQ(store_->Stats().retention_passes, passes + 1);
  absl::StatusOr<storage::Dictionary> dict = store_->LoadDictionary();
  ASSERT_TRUE(dict.ok()) << dict.status();
  ASSERT_FALSE(dict->nodes.empty());
  for (const storage::NodeEntry& node : dict->nodes) {
    int first_hour = 0;
    ASSERT_TRUE(
        store_
            ->ReadScrapes(node.id, kT0 - Duration(1), kT0 + hours(1),
                          [&](Timestamp, std::span<const storage::SeriesValue>) { ++first_hour; })
            .ok());
    EXPECT_EQ(first_hour, 0) << node.name;
  }
}

}  // namespace
}  // namespace kubestat::aggregator
