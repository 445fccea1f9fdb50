// FullJitterDelay's bounds and WaitUntil on a FakeClock.
#include "kubestat/bridge/backoff.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "kubestat/testing/poll.h"

namespace kubestat::bridge {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(BackoffTest, CeilingDoublesFromBaseAndStopsAtMax) {
  const Duration base = milliseconds(100);
  const Duration max = seconds(2);
  // random 1.0 draws the ceiling itself.
  EXPECT_EQ(FullJitterDelay(1, base, max, 1.0), milliseconds(100));
  EXPECT_EQ(FullJitterDelay(2, base, max, 1.0), milliseconds(200));
  EXPECT_EQ(FullJitterDelay(3, base, max, 1.0), milliseconds(400));
  EXPECT_EQ(FullJitterDelay(5, base, max, 1.0), milliseconds(1600));
  EXPECT_EQ(FullJitterDelay(6, base, max, 1.0), seconds(2));
  EXPECT_EQ(FullJitterDelay(4000000000u, base, max, 1.0), seconds(2));
  EXPECT_EQ(FullJitterDelay(0, base, max, 1.0), milliseconds(100));
}

TEST(BackoffTest, DelayIsTheRandomFractionOfTheCeiling) {
  const Duration base = milliseconds(100);
  const Duration max = seconds(2);
  EXPECT_EQ(FullJitterDelay(3, base, max, 0.0), Duration::zero());
  EXPECT_EQ(FullJitterDelay(3, base, max, 0.25), milliseconds(100));
  EXPECT_EQ(FullJitterDelay(8, base, max, 0.5), seconds(1));
  // Out-of-range draws are clamped into [0, ceiling].
  EXPECT_EQ(FullJitterDelay(3, base, max, -1.0), Duration::zero());
  EXPECT_EQ(FullJitterDelay(3, base, max, 7.0), milliseconds(400));
}

TEST(BackoffTest, RandomSourceStaysInUnitInterval) {
  RandomSource random = MakeRandomSource();
  for (int i = 0; i < 1000; ++i) {
    const double r = random();
    EXPECT_GE(r, 0.0);
    EXPECT_LT(r, 1.0);
  }
}

TEST(BackoffTest, WaitUntilEndsWhenTheFakeClockPassesTheDeadline) {
  FakeClock clock;
  std::atomic<int> result{-1};
  std::stop_source stop;
  const Timestamp deadline = clock.MonotonicNow() + seconds(30);
  std::thread waiter([&] { result = WaitUntil(clock, deadline, stop.get_token()) ? 1 : 0; });
  clock.Advance(seconds(29));
  EXPECT_EQ(result.load(), -1);
  clock.Advance(seconds(1));
  EXPECT_TRUE(testing::PollUntil([&] { return result.load() != -1; }, seconds(10)));
  EXPECT_EQ(result.load(), 1);
  waiter.join();
}

TEST(BackoffTest, WaitUntilEndsFalseOnStop) {
  FakeClock clock;
  std::atomic<int> result{-1};
  std::stop_source stop;
  std::thread waiter([&] {
    result =
        WaitUntil(clock, clock.MonotonicNow() + std::chrono::hours(1), stop.get_token()) ? 1 : 0;
  });
  stop.request_stop();
  EXPECT_TRUE(testing::PollUntil([&] { return result.load() != -1; }, seconds(10)));
  EXPECT_EQ(result.load(), 0);
  waiter.join();
}

}  // namespace
}  // namespace kubestat::bridge
