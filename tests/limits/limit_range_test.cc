// LimitRanger's semantics: the LimitRange's own defaulting, the pod's defaults, every
// constraint of the Container and Pod tables, several LimitRanges at once, and the
// walkthrough of the LimitRanger design (a namespace with Pod and Container limits, a pod
// with no resources, an invalid pod, a valid one) and the design document's example table.
#include "kubestat/limits/limit_range.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "limits_test_values.h"

namespace kubestat::limits {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing_values::Amt;
using testing_values::Messages;
using testing_values::Ratios;

// The design's walkthrough namespace: Pod cpu 200m..2, memory 6Mi..1Gi; Container cpu
// 100m..2, memory 3Mi..1Gi, default 300m / 200Mi, defaultRequest 200m / 100Mi.
LimitRange WalkthroughLimits() {
  LimitRangeItem pod{.type = LimitType::kPod, .min = Amt("200m", "6Mi"), .max = Amt("2", "1Gi")};
  LimitRangeItem container{.type = LimitType::kContainer,
                           .min = Amt("100m", "3Mi"),
                           .max = Amt("2", "1Gi"),
                           .default_limit = Amt("300m", "200Mi"),
                           .default_request = Amt("200m", "100Mi")};
  return {"mylimits", {pod, container}};
}

TEST(LimitRangeDefaultsTest, DefaultLimitIsTheMaxWhenAbsent) {
  const LimitRangeItem item = WithApiDefaults({.max = Amt("2", "1Gi")});
  EXPECT_EQ(item.default_limit, Amt("2", "1Gi"));
  EXPECT_EQ(item.default_request, Amt("2", "1Gi"));
}

TEST(LimitRangeDefaultsTest, DefaultRequestIsTheDefaultBeforeTheMin) {
  const LimitRangeItem item =
      WithApiDefaults({.min = Amt("100m", "1Mi"), .default_limit = Amt("500m", "64Mi")});
  EXPECT_EQ(item.default_request, Amt("500m", "64Mi"));
}

TEST(LimitRangeDefaultsTest, DefaultRequestIsTheMinWithoutDefaultOrMax) {
  const LimitRangeItem item = WithApiDefaults({.min = Amt("100m", "")});
  EXPECT_EQ(item.default_request, Amt("100m", ""));
  EXPECT_EQ(item.default_limit, Amt("", ""));
}

TEST(LimitRangeDefaultsTest, PodItemsAreNotDefaulted) {
  const LimitRangeItem item = WithApiDefaults({.type = LimitType::kPod, .max = Amt("2", "")});
  EXPECT_EQ(item.default_limit, Amt("", ""));
}

TEST(LimitRangeAdmitTest, PodWithoutResourcesGetsTheContainerDefaults) {
  const std::vector<LimitRange> lrs = {WalkthroughLimits()};
  const std::vector<ContainerResources> pod = ApplyDefaults(lrs, {{.name = "app"}});
  EXPECT_EQ(pod[0].requests, Amt("200m", "100Mi"));
  EXPECT_EQ(pod[0].limits, Amt("300m", "200Mi"));
  EXPECT_THAT(Check(lrs, pod), IsEmpty());
}

TEST(LimitRangeAdmitTest, InvalidPodIsRefusedByBothThePodAndTheContainerMax) {
  const std::vector<LimitRange> lrs = {WalkthroughLimits()};
  EXPECT_THAT(Messages(Admit(lrs, {{.name = "app", .limits = Amt("3", "100Mi")}})),
              ElementsAre("maximum cpu usage per Pod is 2, but limit is 3",
                          "maximum cpu usage per Container is 2, but limit is 3"));
}

TEST(LimitRangeAdmitTest, ValidPodWithLimitsOnlyRequestsItsLimits) {
  const std::vector<LimitRange> lrs = {WalkthroughLimits()};
  const std::vector<ContainerResources> pod =
      ApplyDefaults(lrs, {{.name = "app", .limits = Amt("1", "512Mi")}});
  EXPECT_EQ(pod[0].requests, Amt("1", "512Mi"));
  EXPECT_THAT(Check(lrs, pod), IsEmpty());
}

TEST(LimitRangeAdmitTest, RequestWithoutLimitTakesTheDefaultLimitEvenBelowIt) {
  // LimitRanger fills the default limit in without looking at the request; the pod is then
  // refused by the pod's own validation (request <= limit), not by the LimitRange.
  LimitRange lr{"cpu",
                {WithApiDefaults({.max = Amt("800m", ""), .default_limit = Amt("500m", "")})}};
  const std::vector<LimitRange> lrs = {lr};
  const std::vector<ContainerResources> pod =
      ApplyDefaults(lrs, {{.name = "app", .requests = Amt("700m", "")}});
  EXPECT_EQ(pod[0].limits, Amt("500m", ""));
  EXPECT_THAT(Messages(Check(lrs, pod)), IsEmpty());  // request <= limit is pod validation's
}

// The LimitRanger design document's own example: Container cpu .1..1, default 500m,
// defaultRequest 250m, limit/request at most 4; memory 250Mi..1Gi, default 500Mi,
// defaultRequest 250Mi.
LimitRange DesignExampleLimits() {
  return {"limits",
          {{.type = LimitType::kContainer,
            .min = Amt(".1", "250Mi"),
            .max = Amt("1", "1Gi"),
            .default_limit = Amt("500m", "500Mi"),
            .default_request = Amt("250m", "250Mi"),
            .max_limit_request_ratio = Ratios("4", "")}}};
}

TEST(LimitRangeDesignExampleTest, AContainerWithoutRequirementsGetsTheDefaults) {
  // "The incoming container cpu would request 250m with a limit of 500m", and memory 250Mi
  // with a limit of 500Mi.
  const std::vector<LimitRange> lrs = {DesignExampleLimits()};
  const std::vector<ContainerResources> pod = ApplyDefaults(lrs, {{.name = "app"}});
  EXPECT_EQ(pod[0].requests, Amt("250m", "250Mi"));
  EXPECT_EQ(pod[0].limits, Amt("500m", "500Mi"));
  EXPECT_THAT(Check(lrs, pod), IsEmpty());
}

TEST(LimitRangeDesignExampleTest, AResizedContainerStaysWithinTheRangeAndTheRatio) {
  // "If the container is later resized, its cpu would be constrained to between .1 and 1 and
  // the ratio of limit to request could not exceed 4."
  const std::vector<LimitRange> lrs = {DesignExampleLimits()};
  const auto check = [&](std::string_view request, std::string_view limit) {
    const std::vector<ContainerResources> pod = {
        {"app", Amt(request, "250Mi"), Amt(limit, "500Mi")}};
    return Messages(Check(lrs, pod));
  };
  EXPECT_THAT(check("250m", "1"), IsEmpty());  // exactly 4
  EXPECT_THAT(check(".1", "400m"), IsEmpty());
  EXPECT_THAT(check("50m", "200m"),
              ElementsAre("minimum cpu usage per Container is 100m, but request is 50m"));
  EXPECT_THAT(check("500m", "1500m"),
              ElementsAre("maximum cpu usage per Container is 1, but limit is 1500m"));
  EXPECT_THAT(check("200m", "1"),
              ElementsAre("cpu max limit to request ratio per Container is 4, but provided ratio "
                          "is 5.000000"));
}

struct ConstraintCase {
  std::string name;
  LimitRangeItem item;
  Amounts requests;
  Amounts limits;
  std::vector<std::string> messages;
};

class ContainerConstraintTest : public ::testing::TestWithParam<ConstraintCase> {};

TEST_P(ContainerConstraintTest, ChecksAsLimitRanger) {
  const ConstraintCase& c = GetParam();
  const std::vector<LimitRange> lrs = {{"lr", {c.item}}};
  const std::vector<ContainerResources> pod = {{"app", c.requests, c.limits}};
  EXPECT_EQ(Messages(Check(lrs, pod)), c.messages);
}

const LimitRangeItem kMinCpu{.min = Amt("100m", "")};
const LimitRangeItem kMaxMemory{.max = Amt("", "1Gi")};
const LimitRangeItem kRatioCpu{.max_limit_request_ratio = Ratios("4", "")};

INSTANTIATE_TEST_SUITE_P(
    Table, ContainerConstraintTest,
    ::testing::Values(
        ConstraintCase{"MinNeedsARequest",
                       kMinCpu,
                       {},
                       Amt("1", ""),
                       {"minimum cpu usage per Container is 100m.  No request is specified"}},
        ConstraintCase{"MinRequestBelow",
                       kMinCpu,
                       Amt("50m", ""),
                       {},
                       {"minimum cpu usage per Container is 100m, but request is 50m"}},
        ConstraintCase{"MinLimitBelow",
                       kMinCpu,
                       Amt("100m", ""),
                       Amt("90m", ""),
                       {"minimum cpu usage per Container is 100m, but limit is 90m"}},
        ConstraintCase{"MinMetWithoutLimit", kMinCpu, Amt("100m", ""), {}, {}},
        ConstraintCase{"MaxNeedsALimit",
                       kMaxMemory,
                       Amt("", "1Mi"),
                       {},
                       {"maximum memory usage per Container is 1Gi.  No limit is specified"}},
        ConstraintCase{"MaxLimitAbove",
                       kMaxMemory,
                       {},
                       Amt("", "2Gi"),
                       {"maximum memory usage per Container is 1Gi, but limit is 2Gi"}},
        ConstraintCase{"MaxRequestAbove",
                       kMaxMemory,
                       Amt("", "2Gi"),
                       Amt("", "1Gi"),
                       {"maximum memory usage per Container is 1Gi, but request is 2Gi"}},
        ConstraintCase{"MaxMetAtTheMax", kMaxMemory, Amt("", "1Gi"), Amt("", "1Gi"), {}},
        ConstraintCase{"RatioNeedsARequest",
                       kRatioCpu,
                       {},
                       Amt("1", ""),
                       {"cpu max limit to request ratio per Container is 4, but no request is "
                        "specified or request is 0"}},
        ConstraintCase{"RatioNeedsANonZeroRequest",
                       kRatioCpu,
                       Amt("0", ""),
                       Amt("1", ""),
                       {"cpu max limit to request ratio per Container is 4, but no request is "
                        "specified or request is 0"}},
        ConstraintCase{"RatioNeedsALimit",
                       kRatioCpu,
                       Amt("1", ""),
                       {},
                       {"cpu max limit to request ratio per Container is 4, but no limit is "
                        "specified or limit is 0"}},
        ConstraintCase{"RatioAbove",
                       kRatioCpu,
                       Amt("100m", ""),
                       Amt("500m", ""),
                       {"cpu max limit to request ratio per Container is 4, but provided ratio "
                        "is 5.000000"}},
        ConstraintCase{"RatioMetAtTheRatio", kRatioCpu, Amt("125m", ""), Amt("500m", ""), {}}),
    [](const auto& info) { return info.param.name; });

TEST(LimitRangePodTest, PodSumsTheContainers) {
  const std::vector<LimitRange> lrs = {{"pod", {{.type = LimitType::kPod, .max = Amt("1", "")}}}};
  const std::vector<ContainerResources> pod = {{"a", Amt("300m", ""), Amt("600m", "")},
                                               {"b", Amt("300m", ""), Amt("500m", "")}};
  EXPECT_THAT(Messages(Check(lrs, pod)),
              ElementsAre("maximum cpu usage per Pod is 1, but limit is 1100m"));
}

TEST(LimitRangePodTest, PodHasNoLimitWhenOneContainerHasNone) {
  const std::vector<LimitRange> lrs = {{"pod", {{.type = LimitType::kPod, .max = Amt("1", "")}}}};
  const std::vector<ContainerResources> pod = {{"a", Amt("300m", ""), Amt("600m", "")},
                                               {"b", Amt("300m", ""), {}}};
  EXPECT_THAT(Messages(Check(lrs, pod)),
              ElementsAre("maximum cpu usage per Pod is 1.  No limit is specified"));
}

TEST(LimitRangePodTest, PodRatioOnTheSums) {
  const std::vector<LimitRange> lrs = {
      {"pod", {{.type = LimitType::kPod, .max_limit_request_ratio = Ratios("2", "")}}}};
  // Each container alone is within 3, the sums are 2.5: 250m / 100m.
  const std::vector<ContainerResources> pod = {{"a", Amt("50m", ""), Amt("150m", "")},
                                               {"b", Amt("50m", ""), Amt("100m", "")}};
  EXPECT_THAT(Messages(Check(lrs, pod)),
              ElementsAre("cpu max limit to request ratio per Pod is 2, but provided ratio is "
                          "2.500000"));
}

TEST(LimitRangeSeveralTest, DefaultsComeFromTheFirstThatGivesThemAndAllAreEnforced) {
  const std::vector<LimitRange> lrs = {
      {"a", {WithApiDefaults({.default_request = Amt("200m", "")})}},
      {"b", {WithApiDefaults({.min = Amt("500m", "64Mi")})}}};
  const std::vector<ContainerResources> pod = ApplyDefaults(lrs, {{.name = "app"}});
  // cpu from a (b's 500m comes too late), memory from b.
  EXPECT_EQ(pod[0].requests, Amt("200m", "64Mi"));
  EXPECT_THAT(Check(lrs, pod),
              ElementsAre(AllOf(Field(&Violation::limit_range, "b"),
                                Field(&Violation::constraint, Constraint::kMin),
                                Field(&Violation::message, HasSubstr("but request is 200m")))));
}

TEST(LimitRangeValidateTest, AcceptsTheWalkthrough) {
  EXPECT_TRUE(Validate(WalkthroughLimits()).ok());
}

TEST(LimitRangeValidateTest, RefusesWhatTheApiServerRefuses) {
  auto refused = [](LimitRangeItem item, std::string_view why) {
    const absl::Status status = Validate({"bad", {item}});
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << why;
    EXPECT_THAT(std::string(status.message()), HasSubstr(why));
  };
  refused({.min = Amt("2", ""), .max = Amt("1", "")}, "min must be <= max");
  refused({.type = LimitType::kPod, .default_limit = Amt("1", "")}, "not allowed for type Pod");
  refused({.max = Amt("1", ""), .default_limit = Amt("2", "")}, "a default must be <= max");
  refused({.min = Amt("1", ""), .default_request = Amt("500m", "")}, "a default must be >= min");
  refused({.default_limit = Amt("1", ""), .default_request = Amt("2", "")},
          "defaultRequest must be <= default");
  refused({.max_limit_request_ratio = Ratios("500m", "")}, "must be >= 1");
  refused({.min = Amt("1", ""), .max = Amt("2", ""), .max_limit_request_ratio = Ratios("3", "")},
          "must be <= max/min");
  refused({.min = Amt("", "-1")}, "negative");
}

TEST(LimitRangeAmountTest, ParsesAsKubernetesRounds) {
  EXPECT_EQ(*ParseAmount(Resource::kCpu, "1.5"), 1500);
  EXPECT_EQ(*ParseAmount(Resource::kCpu, "100u"), 1);  // rounded up, as MilliValue
  EXPECT_EQ(*ParseAmount(Resource::kMemory, "1Gi"), 1073741824);
  EXPECT_EQ(*ParseRatio("4"), 4000);
  EXPECT_FALSE(ParseAmount(Resource::kCpu, "one").ok());
}

}  // namespace
}  // namespace kubestat::limits
