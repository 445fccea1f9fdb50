#include "kubestat/core/divisor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace kubestat {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// Dividends where a wrong magic number shows first: around multiples of d (the
// remainder's wrap), around powers of two, the largest values, and random ones.
std::vector<uint64_t> DividendsFor(uint64_t d, std::mt19937_64& random) {
  std::vector<uint64_t> n = {0, 1, 2, kMax, kMax - 1, kMax / 2, kMax / 2 + 1};
  for (uint64_t k :
       {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{1000}, kMax / d, kMax / d - 1}) {
    if (k == 0 || k > kMax / d) continue;
    for (uint64_t delta : {uint64_t{0}, uint64_t{1}}) {
      n.push_back(k * d - delta);
      if (k * d <= kMax - delta) n.push_back(k * d + delta);
    }
  }
  for (int bit = 0; bit < 64; ++bit) {
    const uint64_t p = uint64_t{1} << bit;
    n.insert(n.end(), {p - 1, p, p + 1});
  }
  for (int i = 0; i < 20000; ++i) n.push_back(random() >> (random() % 64));
  return n;
}

std::vector<uint64_t> Divisors(std::mt19937_64& random) {
  std::vector<uint64_t> d = {1,
                             2,
                             3,
                             7,
                             10,
                             1441,
                             1'000'000'007,
                             10'000'000'000,     // 10 s in ns: the hour window's bucket
                             60'000'000'000,     // a minute
                             3'600'000'000'000,  // an hour
                             300'000'000'000,    // 5 minutes
                             (uint64_t{1} << 32) - 1,
                             uint64_t{1} << 32,
                             (uint64_t{1} << 32) + 1,
                             (uint64_t{1} << 63) - 1,
                             uint64_t{1} << 63,
                             (uint64_t{1} << 63) + 1,
                             kMax - 1,
                             kMax};
  for (int bit = 1; bit < 64; ++bit) d.push_back((uint64_t{1} << bit) + 3);
  for (int i = 0; i < 200; ++i) d.push_back(std::max<uint64_t>(1, random() >> (random() % 64)));
  return d;
}

TEST(DivisorTest, Remainder32GivesTheRemainderOfEveryDividend) {
  std::mt19937_64 random(11);
  for (uint64_t d : Divisors(random)) {
    const Remainder32 remainder(d);
    EXPECT_EQ(remainder.divisor(), d);
    for (uint64_t n : DividendsFor(d, random)) {
      ASSERT_EQ(remainder.Of(n), n % d) << n << " % " << d;
    }
    // Every 32-bit dividend near the top, where the multiplication's rounding is tightest.
    for (uint64_t n = std::numeric_limits<uint32_t>::max() - 5000;
         n <= std::numeric_limits<uint32_t>::max(); ++n) {
      ASSERT_EQ(remainder.Of(n), n % d) << n << " % " << d;
    }
  }
}

TEST(DivisorTest, ADefaultDivisorIsOne) { EXPECT_EQ(Remainder32().Of(12345), 0u); }

}  // namespace
}  // namespace kubestat
