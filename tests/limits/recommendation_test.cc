#include "kubestat/limits/recommendation.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "limits_test_values.h"

namespace kubestat::limits {
namespace {

using std::chrono::hours;
using testing_values::Amt;

const Timestamp kT0 = Timestamp(std::chrono::seconds(1800000000));

// A container seen for two days: cpu p50 100m, p95 200m, max 400m; memory max 1000 Mi.
ContainerUsage KnownHistory() {
  ContainerUsage c;
  c.name = "app";
  ResourceUsage& cpu = c.usage[static_cast<size_t>(Resource::kCpu)];
  cpu.summary = {100, 200, 400};
  cpu.history = {17280, kT0, kT0 + hours(48)};
  ResourceUsage& memory = c.usage[static_cast<size_t>(Resource::kMemory)];
  memory.summary = {500.0 * (1 << 20), 0, 1000.0 * (1 << 20)};
  memory.history = {17280, kT0, kT0 + hours(48)};
  return c;
}

TEST(RecommendationTest, ValuesComeFromTheStatisticsWithTheirMarginsAndHistory) {
  const ContainerUsage c = KnownHistory();
  const std::vector<Recommendation> recs =
      Recommend("shop", {"Deployment", "web"}, 3, {&c, 1}, {}, RecommendOptions{}, hours(192));
  ASSERT_EQ(recs.size(), 1u);
  const Recommendation& r = recs[0];
  EXPECT_EQ(r.Name(), "deployment.web.app");
  EXPECT_EQ(r.pods, 3u);
  const RecommendedValue& cpu_req = r.requests[0];
  EXPECT_EQ(cpu_req.value, 230);  // 200m x 1.15
  EXPECT_EQ(cpu_req.statistic, "p95");
  EXPECT_DOUBLE_EQ(cpu_req.usage, 200);
  EXPECT_DOUBLE_EQ(cpu_req.margin, 0.15);
  EXPECT_DOUBLE_EQ(cpu_req.confidence, 0.25);  // 48h of 192h
  EXPECT_TRUE(cpu_req.bound_by.empty());
  EXPECT_EQ(r.limits[0].value, 460);  // 400m x 1.15
  EXPECT_EQ(r.limits[0].statistic, "max");
  const int64_t memory = 1205862400;  // ceil(1000Mi x 1.15)
  EXPECT_EQ(r.requests[1].value, memory);
  EXPECT_EQ(r.limits[1].value, memory);
  EXPECT_EQ(r.requests[1].history.Covered(), hours(48));
  const std::string json = RenderRecommendation(r, 0);
  EXPECT_NE(json.find(R"("metadata":{"name":"deployment.web.app","namespace":"shop"})"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("cpu":{"value":"230m","wanted":"230m","statistic":"p95","usage":"200m",)"
                      R"("margin":0.15,"history":{"samples":17280,"from":"2027-01-15T08:00:00Z",)"
                      R"("to":"2027-01-17T08:00:00Z","covered":"2d"},"confidence":0.25,)"
                      R"("boundBy":[]})"),
            std::string::npos)
      << json;
}

TEST(RecommendationTest, LimitRangesMoveValuesAndAreNamed) {
  const ContainerUsage c = KnownHistory();
  LimitRange lr;
  lr.name = "caps";
  LimitRangeItem item;
  item.min = Amt("250m", "");
  item.max = Amt("", "1Gi");
  lr.items.push_back(item);
  const std::vector<Recommendation> recs = Recommend("shop", {"Deployment", "web"}, 1, {&c, 1},
                                                     {&lr, 1}, RecommendOptions{}, hours(192));
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].requests[0].value, 250);
  EXPECT_EQ(recs[0].requests[0].wanted, 230);
  ASSERT_EQ(recs[0].requests[0].bound_by.size(), 1u);
  EXPECT_EQ(recs[0].requests[0].bound_by[0].constraint, Constraint::kMin);
  EXPECT_EQ(recs[0].limits[1].value, int64_t{1} << 30);
  ASSERT_EQ(recs[0].limits[1].bound_by.size(), 1u);
  EXPECT_EQ(Describe(Resource::kMemory, recs[0].limits[1].bound_by[0]),
            "Container memory max 1Gi (LimitRange caps)");
  EXPECT_TRUE(recs[0].conflict.empty());
  EXPECT_NE(RenderRecommendation(recs[0], 0).find(R"("constraint":"max","value":"1Gi")"),
            std::string::npos);
}

TEST(RecommendationTest, ContradictoryLimitRangesSayWhichBoundWins) {
  const ContainerUsage c = KnownHistory();
  LimitRange a{"floor", {LimitRangeItem{}}};
  a.items[0].min = Amt("2", "");
  LimitRange b{"ceiling", {LimitRangeItem{}}};
  b.items[0].max = Amt("1", "");
  const std::vector<LimitRange> both = {a, b};
  const std::vector<Recommendation> recs =
      Recommend("shop", {"Pod", "p"}, 1, {&c, 1}, both, RecommendOptions{}, hours(192));
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_NE(recs[0].conflict.find("above"), std::string::npos) << recs[0].conflict;
  EXPECT_EQ(recs[0].requests[0].value, 1000);  // the max wins
  EXPECT_NE(RenderRecommendation(recs[0], 0).find("\"conflict\":"), std::string::npos);
}

TEST(RecommendationTest, AContainerWithoutUsageKeepsItsDeclaredValues) {
  ContainerUsage c;
  c.name = "sidecar";
  c.declared_requests = Amt("50m", "64Mi");
  c.declared_limits = Amt("", "128Mi");
  const std::vector<Recommendation> recs =
      Recommend("shop", {"Pod", "p"}, 1, {&c, 1}, {}, RecommendOptions{}, hours(192));
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].requests[0].statistic, "declared");
  EXPECT_EQ(recs[0].requests[0].value, 50);
  EXPECT_EQ(recs[0].limits[0].value, 50);
  EXPECT_EQ(recs[0].limits[1].value, 128 << 20);
  EXPECT_EQ(recs[0].requests[1].confidence, 0);
}

}  // namespace
}  // namespace kubestat::limits
