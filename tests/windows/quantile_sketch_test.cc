#include "kubestat/windows/quantile_sketch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kubestat/windows/window_stats.h"

namespace kubestat::windows {
namespace {

const SketchMapping kMapping(SketchMapping::kMaxRelativeAccuracy);

TEST(QuantileSketchTest, ValuesBelow1024AreReportedExactly) {
  for (uint64_t v = 0; v < SketchMapping::kExactBelow; ++v) {
    ASSERT_EQ(kMapping.Value(kMapping.Index(v)), v);
  }
}

TEST(QuantileSketchTest, ReportedValueIsWithinOnePercentAcrossTheWholeRange) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> log2(10, 63.99);
  std::vector<uint64_t> values = {1024, 1025, 2047, 100000, std::numeric_limits<uint64_t>::max()};
  for (int i = 0; i < 200000; ++i) values.push_back(static_cast<uint64_t>(std::exp2(log2(rng))));
  for (uint64_t v : values) {
    const double reported = static_cast<double>(kMapping.Value(kMapping.Index(v)));
    ASSERT_LE(std::abs(reported - static_cast<double>(v)), 0.01 * static_cast<double>(v))
        << "value " << v;
  }
}

TEST(QuantileSketchTest, IndexIsMonotoneInTheValue) {
  int32_t previous = -1;
  for (uint64_t v = 0; v < 3000000; v += 7) {
    const int32_t index = kMapping.Index(v);
    ASSERT_GE(index, previous) << v;
    previous = index;
  }
}

TEST(QuantileSketchTest, PercentilesAreWithinOnePercentOfNearestRank) {
  std::mt19937_64 rng(2);
  std::lognormal_distribution<double> dist(18, 1.5);
  QuantileSketch sketch;
  std::vector<uint64_t> values;
  for (int i = 0; i < 10001; ++i) {
    values.push_back(static_cast<uint64_t>(dist(rng)));
    sketch.Add(kMapping, values.back());
  }
  std::sort(values.begin(), values.end());
  for (uint32_t p : {1u, 50u, 95u, 99u, 100u}) {
    const uint64_t k = NearestRank(p, values.size());
    const double exact = static_cast<double>(values[k - 1]);
    EXPECT_LE(std::abs(static_cast<double>(sketch.ValueAtRank(kMapping, k)) - exact), 0.01 * exact)
        << "p" << p;
  }
}

TEST(QuantileSketchTest, ValuesAtRanksGivesTheBucketOfEachRanksValue) {
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> dist(12, 2);
  QuantileSketch empty;
  std::vector<uint64_t> out(2, 7);
  empty.ValuesAtRanks(kMapping, std::vector<uint64_t>{1, 5}, out);
  EXPECT_EQ(out, std::vector<uint64_t>({0, 0}));
  EXPECT_EQ(empty.ValueAtRank(kMapping, 1), 0u);
  for (int trial = 0; trial < 200; ++trial) {
    QuantileSketch sketch;
    std::vector<uint64_t> added;
    const int n = 1 + static_cast<int>(rng() % 3000);
    for (int i = 0; i < n; ++i) {
      // Zeros too (their own bucket).
      added.push_back(rng() % 5 == 0 ? 0 : static_cast<uint64_t>(dist(rng)));
    }
    if (trial % 50 == 0) added.insert(added.end(), 65536, 4096);  // wide counts
    for (uint64_t v : added) sketch.Add(kMapping, v);
    std::sort(added.begin(), added.end());
    // Ranks ascending, with repeats, 0 and beyond the count (both clamped to [1, count]).
    std::vector<uint64_t> ks;
    for (int i = 0; i < 1 + static_cast<int>(rng() % 6); ++i) {
      ks.push_back(rng() % (added.size() + 4));
    }
    std::sort(ks.begin(), ks.end());
    std::vector<uint64_t> values(ks.size());
    sketch.ValuesAtRanks(kMapping, ks, values);
    for (size_t i = 0; i < ks.size(); ++i) {
      // The reported value of the bucket that holds the k-th smallest value added.
      const uint64_t k = std::clamp<uint64_t>(ks[i], 1, added.size());
      const uint64_t expected = kMapping.Value(kMapping.Index(added[k - 1]));
      ASSERT_EQ(values[i], expected) << "trial " << trial << " k " << ks[i];
      ASSERT_EQ(sketch.ValueAtRank(kMapping, ks[i]), expected) << "trial " << trial;
    }
  }
}

// The walk skips whole blocks of buckets at a time: every rank, those at a block's first and
// last bucket among them, in narrow and wide counts.
TEST(QuantileSketchTest, EveryRankOfManyBucketsIsFound) {
  for (const uint64_t copies : {uint64_t{1}, uint64_t{70000}}) {  // 70000: wide counts
    QuantileSketch sketch;
    for (uint64_t v = 1; v <= 100; ++v) {
      for (uint64_t c = 0; c < copies; ++c) sketch.Add(kMapping, v);
    }
    std::vector<uint64_t> ks;
    for (uint64_t v = 1; v <= 100; ++v) ks.push_back((v - 1) * copies + 1);  // v's first copy
    for (uint64_t v = 1; v <= 100; ++v) ks.push_back(v * copies);            // and its last
    std::sort(ks.begin(), ks.end());
    std::vector<uint64_t> values(ks.size());
    sketch.ValuesAtRanks(kMapping, ks, values);
    for (size_t i = 0; i < ks.size(); ++i) {
      EXPECT_EQ(values[i], (ks[i] - 1) / copies + 1) << "copies " << copies << " k " << ks[i];
    }
  }
}

TEST(QuantileSketchTest, TabledValuesEqualTheComputedOnes) {
  const int32_t top = kMapping.Index(std::numeric_limits<uint64_t>::max());
  for (int32_t index = 0; index <= top; ++index) {
    ASSERT_EQ(kMapping.Value(index), kMapping.ComputeValue(index)) << "index " << index;
  }
  // The largest value's bucket is tabled too (and reported within 1% of it).
  EXPECT_GE(static_cast<double>(kMapping.Value(top)), 0.99 * 18446744073709551615.0);
  // A mapping too fine for the table computes every value.
  const SketchMapping fine(1e-4);
  for (uint64_t v : {uint64_t{1023}, uint64_t{1024}, uint64_t{5000000}, uint64_t{1} << 62}) {
    const int32_t index = fine.Index(v);
    EXPECT_EQ(fine.Value(index), fine.ComputeValue(index));
    EXPECT_LE(std::abs(static_cast<double>(fine.Value(index)) - static_cast<double>(v)),
              0.01 * static_cast<double>(v));
  }
}

TEST(QuantileSketchTest, RemoveUndoesAddAndShrinksTheRange) {
  QuantileSketch sketch;
  QuantileSketch empty;
  sketch.Add(kMapping, 5000000);
  const size_t one_bucket = sketch.HeapBytes();
  sketch.Add(kMapping, 5);
  sketch.Add(kMapping, 0);
  sketch.Add(kMapping, 9000000000);
  EXPECT_EQ(sketch.count(), 4u);
  EXPECT_EQ(sketch.ValueAtRank(kMapping, 1), 0u);
  EXPECT_EQ(sketch.ValueAtRank(kMapping, 2), 5u);
  EXPECT_TRUE(sketch.Remove(kMapping, 5));
  EXPECT_TRUE(sketch.Remove(kMapping, 9000000000));
  EXPECT_TRUE(sketch.Remove(kMapping, 0));
  EXPECT_EQ(sketch.HeapBytes(), one_bucket);
  EXPECT_TRUE(sketch.Remove(kMapping, 5000000));
  EXPECT_EQ(sketch, empty);
  EXPECT_EQ(sketch.ValueAtRank(kMapping, 1), 0u);
}

TEST(QuantileSketchTest, RemovingAnAbsentValueFailsAndChangesNothing) {
  QuantileSketch sketch;
  sketch.Add(kMapping, 1000000);
  const QuantileSketch before = sketch;
  EXPECT_FALSE(sketch.Remove(kMapping, 0));
  EXPECT_FALSE(sketch.Remove(kMapping, 7));
  EXPECT_FALSE(sketch.Remove(kMapping, 2000000));
  EXPECT_EQ(sketch, before);
}

TEST(QuantileSketchTest, ZeroValuesHaveTheirOwnBucket) {
  QuantileSketch sketch;
  for (int i = 0; i < 60; ++i) sketch.Add(kMapping, 0);
  for (int i = 0; i < 40; ++i) sketch.Add(kMapping, 300000000);
  EXPECT_EQ(sketch.ValueAtRank(kMapping, NearestRank(50, 100)), 0u);
  EXPECT_EQ(sketch.ValueAtRank(kMapping, NearestRank(60, 100)), 0u);
  EXPECT_NEAR(static_cast<double>(sketch.ValueAtRank(kMapping, NearestRank(61, 100))), 3e8, 3e6);
  // Zero does not stretch the bucket range down to the exact buckets.
  EXPECT_LE(sketch.HeapBytes(), 8u);
}

TEST(QuantileSketchTest, CountsBeyond65535StayExact) {
  QuantileSketch sketch;
  for (int i = 0; i < 70000; ++i) sketch.Add(kMapping, 123456789);
  sketch.Add(kMapping, 1000);
  EXPECT_EQ(sketch.count(), 70001u);
  EXPECT_EQ(sketch.ValueAtRank(kMapping, 1), 1000u);
  for (int i = 0; i < 70000; ++i) ASSERT_TRUE(sketch.Remove(kMapping, 123456789));
  EXPECT_FALSE(sketch.Remove(kMapping, 123456789));
  EXPECT_EQ(sketch.count(), 1u);
}

// Index() by table gives exactly what the logarithm gives: on both sides of every bucket
// boundary (found here by bisection), at powers of two and across random values of every
// octave, for the default accuracy, a coarser one and one too fine for the tables.
TEST(SketchMappingTest, IndexByTableIsTheLogarithmsIndex) {
  std::mt19937_64 rng(11);
  for (const double accuracy : {SketchMapping::kMaxRelativeAccuracy, 0.005, 0.001}) {
    SCOPED_TRACE(accuracy);
    const SketchMapping mapping(accuracy);
    auto check = [&mapping](uint64_t v) {
      ASSERT_EQ(mapping.Index(v), mapping.LogIndex(v)) << "at " << v;
    };
    const uint64_t top = std::numeric_limits<uint64_t>::max();
    uint64_t from = SketchMapping::kExactBelow;
    for (int32_t index = mapping.LogIndex(from) + 1; index <= mapping.LogIndex(top); ++index) {
      // The first value of bucket `index`.
      uint64_t low = from, high = top;
      while (high - low > 1) {
        const uint64_t mid = low + (high - low) / 2;
        (mapping.LogIndex(mid) >= index ? high : low) = mid;
      }
      from = high;
      ASSERT_NO_FATAL_FAILURE(check(from - 1));
      ASSERT_NO_FATAL_FAILURE(check(from));
      if (from < top) {
        ASSERT_NO_FATAL_FAILURE(check(from + 1));
      }
    }
    for (int bit = 0; bit < 64; ++bit) {
      const uint64_t p = uint64_t{1} << bit;
      ASSERT_NO_FATAL_FAILURE(check(p - 1));
      ASSERT_NO_FATAL_FAILURE(check(p));
      ASSERT_NO_FATAL_FAILURE(check(p + 1));
    }
    ASSERT_NO_FATAL_FAILURE(check(top));
    for (int i = 0; i < 200000; ++i) ASSERT_NO_FATAL_FAILURE(check(rng() >> (rng() % 64)));
  }
}

// A copy of a sketch whose counts outgrew 16 bits has counts of its own.
TEST(QuantileSketchTest, ACopyOfAWideSketchIsItsOwn) {
  QuantileSketch sketch;
  for (int i = 0; i < 70000; ++i) sketch.Add(kMapping, 123456789);
  sketch.Add(kMapping, 1000);
  QuantileSketch copy = sketch;
  EXPECT_EQ(copy, sketch);
  QuantileSketch assigned;
  assigned.Add(kMapping, 5);
  assigned = copy;
  EXPECT_EQ(assigned, sketch);
  for (int i = 0; i < 70000; ++i) ASSERT_TRUE(sketch.Remove(kMapping, 123456789));
  EXPECT_EQ(sketch.count(), 1u);
  EXPECT_EQ(copy.count(), 70001u);
  EXPECT_EQ(assigned.count(), 70001u);
  EXPECT_EQ(copy.ValueAtRank(kMapping, 70001), assigned.ValueAtRank(kMapping, 70001));
  EXPECT_GT(copy.ValueAtRank(kMapping, 70001), 100000000u);
  EXPECT_EQ(sketch.ValueAtRank(kMapping, 1), copy.ValueAtRank(kMapping, 1));
}

TEST(QuantileSketchTest, MergeEqualsAddingEverything) {
  std::mt19937_64 rng(4);
  std::uniform_int_distribution<uint64_t> dist(0, 1ull << 40);
  QuantileSketch a, b, all;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t v = dist(rng) >> (rng() % 40);
    (i % 2 ? a : b).Add(kMapping, v);
    all.Add(kMapping, v);
  }
  a.Merge(b);
  EXPECT_EQ(a, all);
}

TEST(QuantileSketchTest, SerializedFormRoundTrips) {
  QuantileSketch sketch;
  for (uint64_t v : {0ull, 0ull, 17ull, 4096ull, 5000000ull, 5000001ull, 1ull << 50}) {
    sketch.Add(kMapping, v);
  }
  std::string bytes;
  sketch.AppendTo(&bytes);
  std::string_view in = bytes;
  auto parsed = QuantileSketch::Parse(&in);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(*parsed, sketch);
  EXPECT_EQ(parsed->ValueAtRank(kMapping, 7), sketch.ValueAtRank(kMapping, 7));
}

TEST(QuantileSketchTest, ParseRejectsTruncatedAndOversizedInput) {
  QuantileSketch sketch;
  for (uint64_t v = 1000000; v < 2000000; v += 50000) sketch.Add(kMapping, v);
  std::string bytes;
  sketch.AppendTo(&bytes);
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::string_view in(bytes.data(), n);
    EXPECT_FALSE(QuantileSketch::Parse(&in).ok()) << n;
  }
  // A huge bucket count that the input cannot hold.
  const std::string huge = std::string("\x00\x05\xff\xff\xff\xff\x0f", 7);
  std::string_view in = huge;
  EXPECT_EQ(QuantileSketch::Parse(&in).status().code(), absl::StatusCode::kDataLoss);
}

TEST(QuantileSketchTest, MappingValidateRejectsAccuracyThatBreaksTheBound) {
  EXPECT_TRUE(SketchMapping::Validate(0.0095).ok());
  EXPECT_TRUE(SketchMapping::Validate(0.001).ok());
  EXPECT_FALSE(SketchMapping::Validate(0.01).ok());
  EXPECT_FALSE(SketchMapping::Validate(0).ok());
  EXPECT_FALSE(SketchMapping::Validate(std::nan("")).ok());
}

}  // namespace
}  // namespace kubestat::windows
