// The key encoding's byte order is numeric order (what range reads and retention rely on).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kubestat/storage/internal/keys.h"

namespace kubestat::storage::keys {
namespace {

TEST(KeyOrderTest, BlobKeysSortByHourThenNodeThenTime) {
  std::mt19937_64 rng(1);
  std::vector<std::tuple<int64_t, NodeId, int64_t>> items;
  const int64_t interesting[] = {
      INT64_MIN, INT64_MIN + 1,       -kPartitionNanos - 1, -kPartitionNanos, -1, 0,
      1,         kPartitionNanos - 1, kPartitionNanos,      INT64_MAX};
  for (int64_t t : interesting) items.push_back({HourOf(t), 3, t});
  for (int i = 0; i < 2000; ++i) {
    const auto t = static_cast<int64_t>(rng()) >> (rng() % 40);
    const auto node = static_cast<NodeId>(rng() % 3 == 0 ? rng() : rng() % 5);
    items.push_back({HourOf(t), node, t});
  }
  std::vector<std::pair<std::string, size_t>> encoded;
  for (size_t i = 0; i < items.size(); ++i) {
    encoded.push_back({BlobKey(std::get<1>(items[i]), std::get<2>(items[i])), i});
    ASSERT_EQ(encoded.back().first.size(), kBlobKeySize);
    ASSERT_EQ(BlobTime(encoded.back().first), std::get<2>(items[i]));
  }
  std::sort(encoded.begin(), encoded.end());
  for (size_t i = 1; i < encoded.size(); ++i) {
    EXPECT_LE(items[encoded[i - 1].second], items[encoded[i].second]) << i;
  }
}

TEST(KeyOrderTest, HourOfIsAFloorAlsoBeforeTheEpoch) {
  EXPECT_EQ(HourOf(0), 0);
  EXPECT_EQ(HourOf(kPartitionNanos - 1), 0);
  EXPECT_EQ(HourOf(kPartitionNanos), 1);
  EXPECT_EQ(HourOf(-1), -1);
  EXPECT_EQ(HourOf(-kPartitionNanos), -1);
  EXPECT_EQ(HourOf(-kPartitionNanos - 1), -2);
  EXPECT_EQ(HourOf(INT64_MIN), INT64_MIN / kPartitionNanos - 1);
}

TEST(KeyOrderTest, RollupAndSeriesKeysSortNumerically) {
  EXPECT_LT(SeriesKey(255), SeriesKey(256));
  EXPECT_LT(SeriesKey(1), SeriesKey(uint64_t{1} << 56));
  EXPECT_LT(NodeKey(255), NodeKey(256));
  EXPECT_LT(RollupKey(1, -kPartitionNanos, 9), RollupKey(1, 0, 1));
  EXPECT_LT(RollupKey(1, 0, 9), RollupKey(2, 0, 1));
  EXPECT_LT(RollupKey(2, 0, 1), RollupKey(1, kPartitionNanos, 1));
  EXPECT_LT(RollupKey(1, 0, 1), RollupKey(1, 0, 256));
}

}  // namespace
}  // namespace kubestat::storage::keys
