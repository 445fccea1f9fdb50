#include "kubestat/windows/usage_histogram.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "kubestat/core/varint.h"

namespace kubestat::windows {
namespace {

TEST(UsageHistogramTest, PercentileIsTheUpperEdgeOfItsBucketWithinFivePercent) {
  UsageHistogram h;
  for (uint64_t v = 1; v <= 1000; ++v) h.Add(v * 1000000);  // 1m .. 1000m in nanocores
  EXPECT_EQ(h.count(), 1000u);
  EXPECT_EQ(h.min(), 1000000u);
  EXPECT_EQ(h.max(), 1000000000u);
  for (double p : {50.0, 90.0, 95.0, 99.0}) {
    const uint64_t exact = static_cast<uint64_t>(p * 10) * 1000000;
    const uint64_t reported = h.Percentile(p);
    EXPECT_GE(reported, exact) << p;
    EXPECT_LE(static_cast<double>(reported), exact * UsageHistogram::kGrowth + 1) << p;
  }
  EXPECT_EQ(h.Percentile(100), 1000000000u);  // clamped to the exact max
}

TEST(UsageHistogramTest, SmallValuesAndZeroAreExactAtTheEdges) {
  UsageHistogram h;
  h.Add(0);
  h.Add(0);
  h.Add(7);
  EXPECT_EQ(h.Percentile(50), 0u);
  EXPECT_EQ(h.Percentile(100), 7u);
  EXPECT_EQ(UsageHistogram().Percentile(50), 0u);
}

TEST(UsageHistogramTest, MergedHoursGiveThePercentileOfEverySample) {
  // Hour one idles at 100, hour two peaks at 1000: the p50 of both is the idle value (the
  // upper edge of its bucket, 104), the p95 the peak; an average of hourly p95s would be 552.
  UsageHistogram idle, busy;
  for (int i = 0; i < 360; ++i) idle.Add(100);
  for (int i = 0; i < 360; ++i) busy.Add(i < 300 ? 100 : 1000);
  UsageHistogram both = idle;
  both.Merge(busy);
  EXPECT_EQ(both.count(), 720u);
  EXPECT_EQ(both.Percentile(50), 104u);
  EXPECT_EQ(both.Percentile(95), 1000u);
  EXPECT_EQ(both.max(), 1000u);
  EXPECT_EQ(both.min(), 100u);
}

TEST(UsageHistogramTest, SerializesCompactlyAndBack) {
  UsageHistogram h;
  for (uint64_t v = 50000000; v < 150000000; v += 100000) h.Add(v);  // 50m..150m, factor 3
  const std::string bytes = h.Serialize();
  EXPECT_LT(bytes.size(), 80u);
  absl::StatusOr<UsageHistogram> back = UsageHistogram::Parse(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, h);
}

TEST(UsageHistogramTest, CorruptBytesAreDataLoss) {
  UsageHistogram h;
  h.Add(5);
  h.Add(5000);
  std::string bytes = h.Serialize();
  EXPECT_FALSE(UsageHistogram::Parse("").ok());
  EXPECT_FALSE(UsageHistogram::Parse(bytes.substr(0, bytes.size() - 1)).ok());
  EXPECT_FALSE(UsageHistogram::Parse(bytes + "x").ok());
  bytes[1] = 9;  // count no longer the sum of the buckets
  EXPECT_EQ(UsageHistogram::Parse(bytes).status().code(), absl::StatusCode::kDataLoss);
  // A first bucket near INT64_MAX (zigzag 2^64 - 40), 40 buckets: out of bounds, not an
  // overflow (found by usage_histogram_parse_fuzz).
  const std::string far(
      "\x01\xe8\x02\xe8\x02\x80\x80\x19\x00"
      "\xd8\xff\xff\xff\xff\xff\xff\xff\xff\x01\x28",
      20);
  EXPECT_EQ(UsageHistogram::Parse(far).status().code(), absl::StatusCode::kDataLoss);
}

// A stored histogram may count nearly 2^64 samples (a corrupt record that still adds up):
// its percentiles' ranks do not fit a uint64_t as a product, and stay within [min, max].
TEST(UsageHistogramTest, PercentilesOfAHistogramOfNearly2To64SamplesStayInItsBounds) {
  UsageHistogram small;
  small.Add(0);
  small.Add(1000);
  const std::string stored = small.Serialize();
  // version, count 2, min 0, max 1000 (two bytes), zeros 1, then the buckets.
  ASSERT_EQ(stored.substr(1, 5), std::string("\x02\x00\xe8\x07\x01", 5));
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  std::string huge = stored.substr(0, 1);
  PutVarint(&huge, kMax);
  huge += stored.substr(2, 3);
  PutVarint(&huge, kMax - 1);
  huge += stored.substr(6);
  absl::StatusOr<UsageHistogram> h = UsageHistogram::Parse(huge);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->count(), kMax);
  EXPECT_EQ(h->Percentile(50), 0u);
  EXPECT_EQ(h->Percentile(99.99), 0u);
  EXPECT_EQ(h->Percentile(100), 1000u);
}

}  // namespace
}  // namespace kubestat::windows
