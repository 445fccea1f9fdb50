#include "kubestat/core/clock.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace kubestat {
namespace {

using std::chrono::seconds;

TEST(FakeClockTest, StartsAtAFixedReadableTime) {
  FakeClock clock;
  // 2026-11-21T10:00:00Z
  EXPECT_EQ(clock.Now().time_since_epoch(), seconds(1795255200));
}

TEST(FakeClockTest, AdvanceMovesWallAndMonotonicTime) {
  FakeClock clock;
  Timestamp wall = clock.Now();
  Timestamp mono = clock.MonotonicNow();
  clock.Advance(seconds(10));
  EXPECT_EQ(clock.Now() - wall, seconds(10));
  EXPECT_EQ(clock.MonotonicNow() - mono, seconds(10));
}

TEST(FakeClockTest, SettingWallTimeBackwardsKeepsMonotonicTimeStill) {
  FakeClock clock;
  Timestamp mono = clock.MonotonicNow();
  clock.Set(clock.Now() - seconds(30));
  EXPECT_EQ(clock.MonotonicNow(), mono);
  clock.Set(clock.Now() + seconds(5));
  EXPECT_EQ(clock.MonotonicNow() - mono, seconds(5));
}

TEST(PartitionTest, PartitionOfIsTheFloorOfTheQuotientOnBothSidesOfTheEpoch) {
  for (const int64_t width : {int64_t{1}, int64_t{7}, int64_t{10}, kNanosPerHour}) {
    std::vector<int64_t> times = {std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max()};
    for (int64_t k = -3; k <= 3; ++k) {
      for (int64_t d = -1; d <= 1; ++d) times.push_back(k * width + d);
    }
    for (const int64_t t : times) {
      // p * width <= t < (p + 1) * width, in 128 bits so that the limits cannot overflow.
      const __int128 p = PartitionOf(t, width);
      EXPECT_LE(p * width, __int128{t}) << t << " / " << width;
      EXPECT_GT((p + 1) * width, __int128{t}) << t << " / " << width;
    }
  }
  EXPECT_EQ(HourOf(0), 0);
  EXPECT_EQ(HourOf(-1), -1);
  EXPECT_EQ(HourOf(kNanosPerHour - 1), 0);
  EXPECT_EQ(HourOf(kNanosPerHour), 1);
  EXPECT_EQ(Nanos(AtNanos(-5)), -5);
}

TEST(RealClockTest, MonotonicReadingsNeverGoBackwards) {
  Timestamp a = RealClock::Get().MonotonicNow();
  Timestamp b = RealClock::Get().MonotonicNow();
  EXPECT_LE(a, b);
}

}  // namespace
}  // namespace kubestat
