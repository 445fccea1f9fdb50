#include "kubestat/core/varint.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace kubestat {
namespace {

TEST(VarintTest, RoundTripsEdgeValuesWithTheirLeb128Lengths) {
  const struct {
    uint64_t value;
    size_t bytes;
  } cases[] = {{0, 1},     {1, 1},     {127, 1},        {128, 2},
               {16383, 2}, {16384, 3}, {1ULL << 35, 6}, {std::numeric_limits<uint64_t>::max(), 10}};
  std::string all;
  for (const auto& c : cases) {
    std::string one;
    PutVarint(&one, c.value);
    EXPECT_EQ(one.size(), c.bytes) << c.value;
    EXPECT_EQ(VarintSize(c.value), c.bytes) << c.value;
    all += one;
  }
  std::string_view in = all;
  for (const auto& c : cases) {
    uint64_t v = 0;
    ASSERT_TRUE(GetVarint(&in, &v));
    EXPECT_EQ(v, c.value);
  }
  EXPECT_TRUE(in.empty());
}

TEST(VarintTest, WritesTheKnownBytes) {
  std::string out;
  PutVarint(&out, 300);
  EXPECT_EQ(out, std::string("\xAC\x02", 2));
}

TEST(VarintTest, RejectsTruncatedAndOverlongInput) {
  uint64_t v = 42;
  std::string_view empty;
  EXPECT_FALSE(GetVarint(&empty, &v));
  std::string_view truncated("\x80\x80", 2);
  EXPECT_FALSE(GetVarint(&truncated, &v));
  // Ten continuation bytes: more than 64 bits.
  const std::string eleven = std::string(10, '\x80') + '\x01';
  std::string_view in = eleven;
  EXPECT_FALSE(GetVarint(&in, &v));
  // A tenth byte carrying more than the 64th bit.
  std::string overflow(9, '\xFF');
  overflow.push_back('\x02');
  in = overflow;
  EXPECT_FALSE(GetVarint(&in, &v));
  EXPECT_EQ(v, 42u);
}

TEST(VarintTest, ZigZagKeepsSmallMagnitudesSmallAndRoundTrips) {
  EXPECT_EQ(ZigZag(0), 0u);
  EXPECT_EQ(ZigZag(-1), 1u);
  EXPECT_EQ(ZigZag(1), 2u);
  EXPECT_EQ(ZigZag(-2), 3u);
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{123456789}, int64_t{-987654321},
                    std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(UnZigZag(ZigZag(v)), v);
  }
}

}  // namespace
}  // namespace kubestat
