// HealthChecks answers /livez and /readyz in kube-apiserver's form, withholds the reasons
// without ?verbose, honours ?exclude, and logs and counts each check's changes once.
#include "kubestat/http/health_checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "kubestat/core/log.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace kubestat::http {
namespace {

using ::testing::HasSubstr;

class HealthChecksTest : public ::testing::Test {
 protected:
  HealthChecksTest() {
    checks_.Add(HealthEndpoint::kReadyz, "ping", [](Timestamp) { return std::nullopt; });
    checks_.Add(HealthEndpoint::kReadyz, "kube-api",
                [this](Timestamp now) -> std::optional<std::string> {
                  if (!down_since_ || now - *down_since_ <= std::chrono::seconds(60)) {
                    return std::nullopt;
                  }
                  return "no answer for " +
                         std::to_string((now - *down_since_) / std::chrono::seconds(1)) + "s";
                });
    checks_.Add(HealthEndpoint::kLivez, "ping", [](Timestamp) { return std::nullopt; });
    checks_.AttachMetrics(registry_);
    SetLogSink([this](std::string_view line) { logged_.emplace_back(line); });
  }
  ~HealthChecksTest() override { SetLogSink(nullptr); }

  std::string Exposition() { return prometheus::TextSerializer().Serialize(registry_.Collect()); }

  FakeClock clock_;
  prometheus::Registry registry_;
  HealthChecks checks_{clock_};
  std::optional<Timestamp> down_since_;
  std::vector<std::string> logged_;
};

TEST_F(HealthChecksTest, PassingIsOkAndVerboseListsEveryCheck) {
  HealthAnswer answer = checks_.Answer(HealthEndpoint::kReadyz, "");
  EXPECT_EQ(answer.code, 200);
  EXPECT_EQ(answer.body, "ok");
  answer = checks_.Answer(HealthEndpoint::kReadyz, "verbose");
  EXPECT_EQ(answer.code, 200);
  EXPECT_EQ(answer.body, "[+]ping ok\n[+]kube-api ok\nreadyz check passed\n");
  answer = checks_.Answer(HealthEndpoint::kLivez, "verbose=1");
  EXPECT_EQ(answer.body, "[+]ping ok\nlivez check passed\n");
}

TEST_F(HealthChecksTest, AFailingCheckIs503WithItsReasonOnlyUnderVerbose) {
  down_since_ = clock_.Now();
  clock_.Advance(std::chrono::seconds(60));
  EXPECT_EQ(checks_.Answer(HealthEndpoint::kReadyz, "").code, 200);  // exactly the bound
  clock_.Advance(std::chrono::seconds(1));
  HealthAnswer answer = checks_.Answer(HealthEndpoint::kReadyz, "");
  EXPECT_EQ(answer.code, 503);
  EXPECT_EQ(answer.body, "[+]ping ok\n[-]kube-api failed: reason withheld\nreadyz check failed");
  answer = checks_.Answer(HealthEndpoint::kReadyz, "verbose");
  EXPECT_EQ(answer.code, 503);
  EXPECT_EQ(answer.body, "[+]ping ok\n[-]kube-api failed: no answer for 61s\nreadyz check failed");
  // livez has its own checks: a peer that is away is no reason to restart.
  EXPECT_EQ(checks_.Answer(HealthEndpoint::kLivez, "").code, 200);
}

TEST_F(HealthChecksTest, ExcludedChecksDoNotFailTheEndpoint) {
  down_since_ = clock_.Now();
  clock_.Advance(std::chrono::minutes(5));
  const HealthAnswer answer = checks_.Answer(HealthEndpoint::kReadyz, "exclude=kube-api&verbose");
  EXPECT_EQ(answer.code, 200);
  EXPECT_EQ(answer.body, "[+]ping ok\n[+]kube-api excluded: ok\nreadyz check passed\n");
}

TEST_F(HealthChecksTest, EachChangeIsLoggedAndCountedOnce) {
  down_since_ = clock_.Now();
  clock_.Advance(std::chrono::minutes(2));
  checks_.Observe();
  checks_.Answer(HealthEndpoint::kReadyz, "");
  checks_.Answer(HealthEndpoint::kReadyz, "verbose");
  std::string metrics = Exposition();
  EXPECT_THAT(
      metrics,
      HasSubstr("kubestat_health_check_failures_total{check=\"kube-api\",endpoint=\"readyz\"} 1"));
  EXPECT_THAT(metrics,
              HasSubstr("kubestat_health_check_failing{check=\"kube-api\",endpoint=\"readyz\"} 1"));
  EXPECT_THAT(
      metrics,
      HasSubstr("kubestat_health_check_failures_total{check=\"ping\",endpoint=\"livez\"} 0"));
  down_since_.reset();
  clock_.Advance(std::chrono::seconds(30));
  checks_.Observe();
  checks_.Observe();
  metrics = Exposition();
  EXPECT_THAT(metrics,
              HasSubstr("kubestat_health_check_failing{check=\"kube-api\",endpoint=\"readyz\"} 0"));
  EXPECT_THAT(
      metrics,
      HasSubstr("kubestat_health_check_failures_total{check=\"kube-api\",endpoint=\"readyz\"} 1"));
  ASSERT_EQ(logged_.size(), 2u);
  EXPECT_THAT(logged_[0], HasSubstr("WARNING"));
  EXPECT_THAT(logged_[0], HasSubstr("readyz check kube-api failed: no answer for 120s"));
  EXPECT_THAT(logged_[1], HasSubstr("readyz check kube-api passes again, after 30s"));
}

}  // namespace
}  // namespace kubestat::http
