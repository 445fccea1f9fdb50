#include "kubestat/core/clock.h"

#include <gtest/gtest.h>

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

TEST(RealClockTest, MonotonicReadingsNeverGoBackwards) {
  Timestamp a = RealClock::Get().MonotonicNow();
  Timestamp b = RealClock::Get().MonotonicNow();
  EXPECT_LE(a, b);
}

}  // namespace
}  // namespace kubestat
