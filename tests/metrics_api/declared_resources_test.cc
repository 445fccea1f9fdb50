// A pod's containers' requests and limits in metrics/v1alpha1: shown as quantities, with the
// windows' usage over them; limitPressure finds containers near their memory limit or
// throttled by their cpu limit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kubestat/metrics_api/query.h"
#include "kubestat/metrics_api/render.h"

namespace kubestat::metrics_api {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint64_t kMilli = 1000000;  // nanocores
constexpr uint64_t kMi = 1 << 20;
const Timestamp kEnd = Timestamp(std::chrono::seconds(1795255200));

Statistics Window(uint64_t mean, uint64_t p95, uint64_t max) {
  return {std::chrono::minutes(1), kEnd, 6, mean, mean / 2, max, mean, p95, max};
}

// cpu mean 100m, 95th 200m, max 400m; memory mean 64Mi, 95th 96Mi, max 120Mi.
PodMetrics Pod(std::string name, DeclaredResources requests, DeclaredResources limits) {
  PodMetrics pod;
  pod.name = std::move(name);
  pod.namespace_name = "shop";
  ContainerMetrics app;
  app.name = "app";
  app.windows.cpu = {Window(100 * kMilli, 200 * kMilli, 400 * kMilli)};
  app.windows.memory = {Window(64 * kMi, 96 * kMi, 120 * kMi)};
  app.requests = requests;
  app.limits = limits;
  pod.containers = {app};
  return pod;
}

const RenderContext kAlpha{GroupVersion::kV1alpha1, kEnd, 0};

TEST(DeclaredResourcesTest, V1alpha1ShowsRequestsLimitsAndUsageOverThem) {
  const PodMetrics pod = Pod("web", {200 * kMilli, 64 * kMi}, {150 * kMilli, 128 * kMi});
  const std::string json = *RenderPod(pod, kAlpha);
  EXPECT_THAT(json, HasSubstr(R"("requests":{"cpu":"200m","memory":"64Mi"})"));
  EXPECT_THAT(json, HasSubstr(R"("limits":{"cpu":"150m","memory":"128Mi"})"));
  EXPECT_THAT(json, HasSubstr(R"("ratios":{"1m":{"usage/request":{"mean":{"cpu":0.5,"memory":1},)"
                              R"("95th":{"cpu":1,"memory":1.5},"max":{"cpu":2,"memory":1.875}},)"
                              R"("usage/limit":{"mean":{"cpu":0.667,"memory":0.5},)"
                              R"("95th":{"cpu":1.333,"memory":0.75},)"
                              R"("max":{"cpu":2.667,"memory":0.938}}}})"));
}

TEST(DeclaredResourcesTest, OnlyDeclaredResourcesAndNothingForMetricsK8sIo) {
  const PodMetrics pod = Pod("web", {200 * kMilli, std::nullopt}, {});
  const std::string json = *RenderPod(pod, kAlpha);
  EXPECT_THAT(json, HasSubstr(R"("requests":{"cpu":"200m"})"));
  EXPECT_THAT(json, Not(HasSubstr(R"("limits")")));
  EXPECT_THAT(json, HasSubstr(R"("ratios":{"1m":{"usage/request":{"mean":{"cpu":0.5},)"));
  EXPECT_THAT(json, Not(HasSubstr("usage/limit")));
  const std::string k8s = *RenderPod(pod, RenderContext{GroupVersion::kV1, kEnd, 0});
  EXPECT_THAT(k8s, Not(HasSubstr("requests")));
  EXPECT_THAT(*RenderPod(Pod("web", {}, {}), kAlpha), Not(HasSubstr("ratios")));
}

std::vector<std::string> Selected(const std::string& query_string,
                                  const std::vector<PodMetrics>& pods) {
  absl::StatusOr<ListQuery> query =
      ParseListQuery(ParseQueryString(query_string), Resource::kPods, "");
  EXPECT_TRUE(query.ok()) << query.status();
  std::vector<std::string> names;
  for (const PodMetrics& pod : pods) {
    if (query->Matches(pod)) names.push_back(pod.name);
  }
  return names;
}

TEST(DeclaredResourcesTest, LimitPressureSelectsNearMemoryLimitsAndThrottledCpu) {
  const std::vector<PodMetrics> pods = {
      // memory max 120Mi over 90% of 128Mi; cpu 95th 200m under 1.
      Pod("near-oom", {}, {1000 * kMilli, 128 * kMi}),
      // memory max exactly 90% of its limit is not over it; cpu 95th over 150m.
      Pod("throttled", {}, {150 * kMilli, 120 * kMi * 10 / 9 + 1}),
      Pod("calm", {}, {1000 * kMilli, 1024 * kMi}), Pod("no-limits", {100 * kMilli, 10 * kMi}, {})};
  EXPECT_EQ(Selected("limitPressure=memory", pods), std::vector<std::string>{"near-oom"});
  EXPECT_EQ(Selected("limitPressure=cpu", pods), std::vector<std::string>{"throttled"});
  EXPECT_EQ(Selected("limitPressure=any", pods),
            (std::vector<std::string>{"near-oom", "throttled"}));
  EXPECT_EQ(Selected("", pods).size(), 4u);
}

TEST(DeclaredResourcesTest, LimitPressureIsAPodsParameterWithKnownValues) {
  absl::StatusOr<ListQuery> bad =
      ParseListQuery(ParseQueryString("limitPressure=disk"), Resource::kPods, "");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("must be memory, cpu or any"));
  EXPECT_FALSE(ParseListQuery(ParseQueryString("limitPressure=cpu"), Resource::kNodes, "").ok());
  EXPECT_FALSE(
      ParseListQuery(ParseQueryString("limitPressure=cpu"), Resource::kPods, "")->SelectsAll());
}

}  // namespace
}  // namespace kubestat::metrics_api
