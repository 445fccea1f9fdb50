#include "kubestat/aggregator/query/publish_pacer.h"

#include <gtest/gtest.h>

#include <chrono>

namespace kubestat::aggregator {
namespace {

using std::chrono::milliseconds;

const Timestamp kStart = Timestamp{} + std::chrono::hours(1000);

TEST(PublishPacerTest, FirstPublicationIsDueAtOnce) {
  PublishPacer pacer(milliseconds(500), 0.1);
  EXPECT_TRUE(pacer.Due(kStart));
}

TEST(PublishPacerTest, CheapPublicationsAreDueEveryMinInterval) {
  PublishPacer pacer(milliseconds(500), 0.1);
  pacer.Record(kStart, milliseconds(20));  // 20 ms × 10 = 200 ms < 500 ms
  EXPECT_FALSE(pacer.Due(kStart + milliseconds(499)));
  EXPECT_TRUE(pacer.Due(kStart + milliseconds(500)));
  EXPECT_EQ(pacer.NextDue(), kStart + milliseconds(500));
}

TEST(PublishPacerTest, CostlyPublicationsKeepToTheirCoreShare) {
  PublishPacer pacer(milliseconds(500), 0.1);
  pacer.Record(kStart, milliseconds(120));  // 120 ms at a tenth of a core: 1.2 s
  EXPECT_FALSE(pacer.Due(kStart + milliseconds(500)));
  EXPECT_FALSE(pacer.Due(kStart + milliseconds(1199)));
  EXPECT_TRUE(pacer.Due(kStart + milliseconds(1200)));
  // A cheaper one afterwards brings the interval back down.
  pacer.Record(kStart + milliseconds(1200), milliseconds(10));
  EXPECT_TRUE(pacer.Due(kStart + milliseconds(1700)));
}

TEST(PublishPacerTest, ShareOfAWholeCoreAllowsBackToBack) {
  PublishPacer pacer(milliseconds(100), 1.0);
  pacer.Record(kStart, milliseconds(300));
  EXPECT_FALSE(pacer.Due(kStart + milliseconds(299)));
  EXPECT_TRUE(pacer.Due(kStart + milliseconds(300)));
}

TEST(PublishPacerTest, ZeroIntervalPublishesOnlyAtRoundEnds) {
  PublishPacer pacer(Duration::zero(), 0.1);
  EXPECT_FALSE(pacer.Due(kStart));
  pacer.Record(kStart, milliseconds(1));
  EXPECT_FALSE(pacer.Due(kStart + std::chrono::hours(1)));
}

TEST(PublishPacerTest, ANegativeCostCountsAsNone) {
  PublishPacer pacer(milliseconds(500), 0.1);
  pacer.Record(kStart, -milliseconds(50));
  EXPECT_EQ(pacer.NextDue(), kStart + milliseconds(500));
}

}  // namespace
}  // namespace kubestat::aggregator
