// Fit: wanted values moved into what the LimitRanges admit, each move named; constraints
// that cannot all be met.
#include "kubestat/limits/fit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kubestat/limits/recommend.h"
#include "limits_test_values.h"

namespace kubestat::limits {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing_values::Amt;
using testing_values::Ratios;

constexpr Resource kCpu = Resource::kCpu;
constexpr Resource kMemory = Resource::kMemory;

// One container wanting cpu request/limit in millicores and memory in MiB.
ContainerWant Want(std::string name, int64_t cpu_request, int64_t cpu_limit,
                   int64_t memory_mib = 64) {
  ContainerWant w{std::move(name), {}};
  w.want[0] = {cpu_request, cpu_limit};
  w.want[1] = {memory_mib << 20, memory_mib << 20};
  return w;
}

BoundBy Bound(std::string lr, LimitType type, Constraint constraint, int64_t value) {
  return {std::move(lr), type, constraint, value};
}

TEST(FitTest, AdmittedValuesAreKeptAndNameNothing) {
  const std::vector<LimitRange> lrs = {
      {"lr", {{.min = Amt("100m", "1Mi"), .max = Amt("2", "1Gi")}}}};
  const FittedPod pod = Fit(lrs, std::vector{Want("app", 250, 500)});
  EXPECT_EQ(pod.containers[0][kCpu].request.value, 250);
  EXPECT_EQ(pod.containers[0][kCpu].limit.value, 500);
  EXPECT_THAT(pod.containers[0][kCpu].request.bound_by, IsEmpty());
  EXPECT_THAT(pod.containers[0][kCpu].limit.bound_by, IsEmpty());
  EXPECT_EQ(pod.conflict, "");
}

// The LimitRanger design document's example namespace (cpu .1..1, ratio 4): a container
// that wants 50m..2 is fitted to what it admits, each move named.
TEST(FitTest, TheDesignExampleMovesEachValueIntoItsRangeAndRatio) {
  const std::vector<LimitRange> lrs = {{"limits",
                                        {{.min = Amt(".1", "250Mi"),
                                          .max = Amt("1", "1Gi"),
                                          .default_limit = Amt("500m", "500Mi"),
                                          .default_request = Amt("250m", "250Mi"),
                                          .max_limit_request_ratio = Ratios("4", "")}}}};
  const FittedPod pod = Fit(lrs, std::vector{Want("app", 50, 2000)});
  EXPECT_EQ(pod.conflict, "");
  // The limit comes down to the max (1), then the request up to limit / 4 (250m), which
  // is above the min (100m) that raised it first.
  EXPECT_EQ(pod.containers[0][kCpu].limit.value, 1000);
  EXPECT_THAT(pod.containers[0][kCpu].limit.bound_by,
              ElementsAre(Bound("limits", LimitType::kContainer, Constraint::kMax, 1000)));
  EXPECT_EQ(pod.containers[0][kCpu].request.value, 250);
  EXPECT_THAT(Check(lrs, AsPodSpec(pod)), IsEmpty());
}

TEST(FitTest, ContainerMinRaisesAndMaxLowers) {
  const std::vector<LimitRange> lrs = {{"lr", {{.min = Amt("100m", ""), .max = Amt("2", "")}}}};
  const FittedPod pod = Fit(lrs, std::vector{Want("app", 20, 3000)});
  EXPECT_EQ(pod.containers[0][kCpu].request.value, 100);
  EXPECT_THAT(pod.containers[0][kCpu].request.bound_by,
              ElementsAre(Bound("lr", LimitType::kContainer, Constraint::kMin, 100)));
  EXPECT_EQ(pod.containers[0][kCpu].limit.value, 2000);
  EXPECT_THAT(pod.containers[0][kCpu].limit.bound_by,
              ElementsAre(Bound("lr", LimitType::kContainer, Constraint::kMax, 2000)));
}

TEST(FitTest, RatioRaisesTheRequestAndKeepsTheLimit) {
  const std::vector<LimitRange> lrs = {{"burst", {{.max_limit_request_ratio = Ratios("4", "")}}}};
  const FittedPod pod = Fit(lrs, std::vector{Want("app", 100, 1000)});
  EXPECT_EQ(pod.containers[0][kCpu].request.value, 250);
  EXPECT_THAT(
      pod.containers[0][kCpu].request.bound_by,
      ElementsAre(Bound("burst", LimitType::kContainer, Constraint::kMaxLimitRequestRatio, 4000)));
  EXPECT_EQ(pod.containers[0][kCpu].limit.value, 1000);
  EXPECT_THAT(pod.containers[0][kCpu].limit.bound_by, IsEmpty());
}

TEST(FitTest, MaxThenRatioFromTwoLimitRangesBothNamed) {
  const std::vector<LimitRange> lrs = {{"a", {{.max = Amt("2", "")}}},
                                       {"b", {{.max_limit_request_ratio = Ratios("4", "")}}}};
  const FittedPod pod = Fit(lrs, std::vector{Want("app", 100, 3000)});
  EXPECT_EQ(pod.containers[0][kCpu].limit.value, 2000);
  EXPECT_EQ(pod.containers[0][kCpu].request.value, 500);
  EXPECT_THAT(
      pod.containers[0][kCpu].request.bound_by,
      ElementsAre(Bound("b", LimitType::kContainer, Constraint::kMaxLimitRequestRatio, 4000)));
  EXPECT_THAT(Check(lrs, AsPodSpec(pod)), IsEmpty());
}

TEST(FitTest, TightestOfSeveralLimitRangesIsNamed) {
  const std::vector<LimitRange> lrs = {{"loose", {{.max = Amt("", "2Gi")}}},
                                       {"tight", {{.max = Amt("", "1Gi")}}}};
  const FittedPod pod = Fit(lrs, std::vector{Want("app", 100, 100, 1500)});
  EXPECT_EQ(pod.containers[0][kMemory].limit.value, 1 << 30);
  EXPECT_THAT(pod.containers[0][kMemory].limit.bound_by,
              ElementsAre(Bound("tight", LimitType::kContainer, Constraint::kMax, 1 << 30)));
}

TEST(FitTest, PodMaxLowersLimitsTowardTheirRequestsInProportion) {
  const std::vector<LimitRange> lrs = {{"pod", {{.type = LimitType::kPod, .max = Amt("2", "")}}}};
  const FittedPod pod = Fit(lrs, std::vector{Want("a", 500, 1500), Want("b", 500, 1500)});
  EXPECT_EQ(pod.containers[0][kCpu].limit.value, 1000);
  EXPECT_EQ(pod.containers[1][kCpu].limit.value, 1000);
  EXPECT_EQ(pod.containers[0][kCpu].request.value, 500);
  EXPECT_THAT(pod.containers[1][kCpu].limit.bound_by,
              ElementsAre(Bound("pod", LimitType::kPod, Constraint::kMax, 2000)));
  EXPECT_THAT(Check(lrs, AsPodSpec(pod)), IsEmpty());
}

TEST(FitTest, PodMaxBelowTheRequestsLowersThemTooAndSaysSo) {
  const std::vector<LimitRange> lrs = {{"pod", {{.type = LimitType::kPod, .max = Amt("1", "")}}}};
  const FittedPod pod = Fit(lrs, std::vector{Want("a", 800, 800), Want("b", 800, 800)});
  EXPECT_EQ(pod.containers[0][kCpu].request.value + pod.containers[1][kCpu].request.value, 1000);
  EXPECT_THAT(pod.containers[0][kCpu].request.bound_by,
              ElementsAre(Bound("pod", LimitType::kPod, Constraint::kMax, 1000)));
  EXPECT_EQ(pod.conflict, "");
}

TEST(FitTest, PodMinRaisesRequestsUpToTheirLimitsFirst) {
  const std::vector<LimitRange> lrs = {{"pod", {{.type = LimitType::kPod, .min = Amt("1", "")}}}};
  const FittedPod pod = Fit(lrs, std::vector{Want("a", 200, 600), Want("b", 200, 200)});
  // a's request rises to its limit (400m), the 200m left is shared by both, requests and
  // limits together.
  EXPECT_EQ(pod.containers[0][kCpu].request.value, 700);
  EXPECT_EQ(pod.containers[0][kCpu].limit.value, 700);
  EXPECT_EQ(pod.containers[1][kCpu].request.value, 300);
  EXPECT_EQ(pod.containers[1][kCpu].limit.value, 300);
  EXPECT_THAT(Check(lrs, AsPodSpec(pod)), IsEmpty());
}

TEST(FitTest, PodRatioRaisesRequests) {
  const std::vector<LimitRange> lrs = {
      {"pod", {{.type = LimitType::kPod, .max_limit_request_ratio = Ratios("2", "")}}}};
  const FittedPod pod = Fit(lrs, std::vector{Want("a", 100, 1000), Want("b", 100, 200)});
  const int64_t requests =
      pod.containers[0][kCpu].request.value + pod.containers[1][kCpu].request.value;
  EXPECT_EQ(requests, 600);  // limits 1200 / 2
  EXPECT_THAT(Check(lrs, AsPodSpec(pod)), IsEmpty());
}

TEST(FitTest, MinAboveMaxAdmitsNothingAndTheMaxWins) {
  const std::vector<LimitRange> lrs = {{"floor", {{.min = Amt("500m", "")}}},
                                       {"ceiling", {{.max = Amt("200m", "")}}}};
  const FittedPod pod = Fit(lrs, std::vector{Want("app", 300, 300)});
  EXPECT_THAT(pod.conflict,
              HasSubstr("Container cpu min 500m (LimitRange floor) is above Container cpu max "
                        "200m (LimitRange ceiling)"));
  EXPECT_THAT(pod.conflict, HasSubstr("a max wins over a min"));
  EXPECT_EQ(pod.containers[0][kCpu].request.value, 200);
  EXPECT_EQ(pod.containers[0][kCpu].limit.value, 200);
}

TEST(FitTest, ContainerMinsOverThePodMaxAdmitNothing) {
  const std::vector<LimitRange> lrs = {
      {"lr", {{.min = Amt("", "400Mi")}, {.type = LimitType::kPod, .max = Amt("", "1Gi")}}}};
  const FittedPod pod =
      Fit(lrs, std::vector{Want("a", 10, 10, 500), Want("b", 10, 10, 500), Want("c", 10, 10, 500)});
  EXPECT_THAT(pod.conflict, HasSubstr("Container memory min 400Mi (LimitRange lr) for each of 3 "
                                      "containers is above Pod memory max 1Gi (LimitRange lr)"));
}

TEST(FitTest, ZeroUsageStillGetsANonZeroRequestForTheRatio) {
  const std::vector<LimitRange> lrs = {{"burst", {{.max_limit_request_ratio = Ratios("10", "")}}}};
  const FittedPod pod = Fit(lrs, std::vector{Want("idle", 0, 0)});
  EXPECT_EQ(pod.containers[0][kCpu].request.value, 1);
  EXPECT_THAT(Check(lrs, AsPodSpec(pod)), IsEmpty());
}

TEST(RecommendTest, StatisticsWithMargins) {
  const ContainerWant want =
      WantFor("app", {.p50 = 100, .percentile = 200, .max = 400},
              {.p50 = 1000, .percentile = 0, .max = 2000}, RecommendOptions{});
  EXPECT_EQ(want.want[0].request, 230);
  EXPECT_EQ(want.want[0].limit, 460);
  EXPECT_EQ(want.want[1].request, 2300);
  EXPECT_EQ(want.want[1].limit, 2300);
}

TEST(RecommendTest, OptionsNameTheirFlag) {
  EXPECT_THAT(std::string(RecommendOptions{.cpu_percentile = 0}.Validate().message()),
              HasSubstr("--recommend-cpu-percentile"));
  EXPECT_THAT(std::string(RecommendOptions{.memory_margin = -1}.Validate().message()),
              HasSubstr("--recommend-memory-margin"));
  EXPECT_TRUE(RecommendOptions{}.Validate().ok());
}

}  // namespace
}  // namespace kubestat::limits
