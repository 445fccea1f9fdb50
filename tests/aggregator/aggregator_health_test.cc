// AggregatorHealth's readyz checks: store-writes follows the newest write the store was
// asked for, kube-api fails only past its bound, scrapes after N empty rounds in a row.
#include "kubestat/aggregator/aggregator_health.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "kubestat/http/health_checks.h"

namespace kubestat::aggregator {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;

// A discovery whose kube API contact the test sets.
class ContactDiscovery final : public discovery::Discovery {
 public:
  void Start() override {}
  void Stop() override {}
  void Fail(Timestamp at, std::string error) { RecordFailure(1, at, std::move(error)); }
  void Answer() { RecordAnswer(1); }
};

class AggregatorHealthTest : public ::testing::Test {
 protected:
  AggregatorHealthTest() : health_(Options(), discovery_) { health_.AddChecks(checks_); }
  static AggregatorHealthOptions Options() {
    AggregatorHealthOptions options;
    options.kube_api_unready_after = seconds(60);
    options.scrape_unready_rounds = 3;
    return options;
  }
  http::HealthAnswer Ready() { return checks_.Answer(http::HealthEndpoint::kReadyz, "verbose"); }
  static scrapers::RoundSummary Round(size_t targets, size_t succeeded) {
    scrapers::RoundSummary round;
    round.targets = targets;
    round.succeeded = succeeded;
    round.failed = targets - succeeded;
    if (round.failed > 0) round.failures_by_reason["connect"] = round.failed;
    return round;
  }

  FakeClock clock_;
  ContactDiscovery discovery_;
  AggregatorHealth health_;
  http::HealthChecks checks_{clock_};
};

TEST_F(AggregatorHealthTest, StoreWritesFailsWhileTheStoreRejectsWrites) {
  EXPECT_EQ(Ready().code, 200);
  // The ingest refusing a scrape says nothing of the store.
  health_.RecordIngest(absl::InvalidArgumentError("scrape without a node name"));
  health_.RecordIngest(absl::FailedPreconditionError("not after its previous scrape"));
  EXPECT_EQ(Ready().code, 200);
  health_.RecordIngest(absl::UnavailableError("store: writing a batch: IO error: No space left"));
  health_.RecordIngest(absl::UnavailableError("store: writing a batch: IO error: No space left"));
  const http::HealthAnswer answer = Ready();
  EXPECT_EQ(answer.code, 503);
  EXPECT_THAT(answer.body, HasSubstr("[-]store-writes failed: the store rejected the last 2 node "
                                     "writes; the newest: store: writing a batch: IO error: No "
                                     "space left\n"));
  health_.RecordIngest(absl::OkStatus());
  EXPECT_EQ(Ready().code, 200);
}

TEST_F(AggregatorHealthTest, KubeApiFailsOnlyPastItsBound) {
  discovery_.Fail(clock_.Now(), "GET /api/v1/pods: connect: refused");
  clock_.Advance(seconds(30));
  discovery_.Fail(clock_.Now(), "GET /api/v1/pods: connect: refused again");
  clock_.Advance(seconds(30));
  EXPECT_EQ(Ready().code, 200);
  clock_.Advance(seconds(1));
  const http::HealthAnswer answer = Ready();
  EXPECT_EQ(answer.code, 503);
  EXPECT_THAT(answer.body, HasSubstr("[-]kube-api failed: the kube API has not answered for 1m1s "
                                     "(more than 1m): GET /api/v1/pods: connect: refused again\n"));
  discovery_.Answer();
  EXPECT_EQ(Ready().code, 200);
}

TEST_F(AggregatorHealthTest, ScrapesFailsAfterRoundsInARowWithoutANodeScraped) {
  health_.RecordRound(Round(5, 0));
  health_.RecordRound(Round(5, 0));
  EXPECT_EQ(Ready().code, 200);
  health_.RecordRound(Round(0, 0));  // nothing to scrape is no failure, and breaks the run
  health_.RecordRound(Round(5, 0));
  health_.RecordRound(Round(5, 0));
  EXPECT_EQ(Ready().code, 200);
  health_.RecordRound(Round(5, 0));
  const http::HealthAnswer answer = Ready();
  EXPECT_EQ(answer.code, 503);
  EXPECT_THAT(answer.body,
              HasSubstr("[-]scrapes failed: no node scraped in the last 3 rounds (5 targets; "
                        "connect=5)\n"));
  health_.RecordRound(Round(5, 1));
  EXPECT_EQ(Ready().code, 200);
}

}  // namespace
}  // namespace kubestat::aggregator
