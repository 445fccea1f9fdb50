#include "kubestat/kube/token_review.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "auth_test_support.h"
#include "kubestat/core/clock.h"

namespace kubestat::kube {
namespace {

using ::kubestat::kube::testing::CounterValue;
using ::kubestat::kube::testing::FakeReviewTransport;

constexpr char kToken[] = "eyJhbGciOiJSUzI1NiJ9.secret-part";
constexpr char kAlice[] =
    R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","status":{)"
    R"("authenticated":true,"user":{"username":"alice","uid":"u-1",)"
    R"("groups":["team-a"],"extra":{"scopes":["view","edit"]}},"audiences":["api"]}})";
constexpr char kDenied[] =
    R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","status":{)"
    R"("authenticated":false,"error":"invalid bearer token"}})";

TEST(TokenReviewParseTest, ReadsStatus) {
  absl::StatusOr<TokenReviewStatus> status = ParseTokenReviewResponse(kAlice);
  ASSERT_TRUE(status.ok()) << status.status();
  TokenReviewStatus expected;
  expected.authenticated = true;
  expected.user = UserInfo{"alice", "u-1", {"team-a"}, {{"scopes", {"view", "edit"}}}};
  expected.audiences = {"api"};
  EXPECT_EQ(*status, expected);

  status = ParseTokenReviewResponse(kDenied);
  ASSERT_TRUE(status.ok());
  EXPECT_FALSE(status->authenticated);
  EXPECT_EQ(status->error, "invalid bearer token");

  // Nulls read as absent; unknown fields are ignored.
  status = ParseTokenReviewResponse(
      R"({"status":{"authenticated":true,"user":{"username":"x","groups":null,"extra":null},)"
      R"("audiences":null,"future":1},"metadata":{}})");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->user.name, "x");
}

TEST(TokenReviewParseTest, RejectsMalformedResponses) {
  for (const char* body : {
           "",
           "not json",
           "[]",
           R"({"kind":"TokenReview"})",
           R"({"kind":"SubjectAccessReview","status":{}})",
           R"({"apiVersion":"authentication.k8s.io/v1beta1","status":{}})",
           R"({"status":[]})",
           R"({"status":{"authenticated":"true"}})",
           R"({"status":{"user":{"username":7}}})",
           R"({"status":{"user":{"groups":"a"}}})",
           R"({"status":{"user":{"groups":[1]}}})",
           R"({"status":{"user":{"extra":{"k":"v"}}}})",
           R"({"status":{"audiences":{}}})",
           R"({"status":{"error":false}})",
       }) {
    EXPECT_EQ(ParseTokenReviewResponse(body).status().code(), absl::StatusCode::kInvalidArgument)
        << body;
  }
  EXPECT_EQ(ParseTokenReviewResponse(std::string(kMaxReviewResponseBytes + 1, ' ')).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TokenReviewParseTest, ErrorsDoNotQuoteTheBody) {
  const std::string body = std::string(R"({"spec":{"token":")") + kToken +
                           R"("},"status":{"user":{"username":[")" + kToken + R"("]}}})";
  absl::Status status = ParseTokenReviewResponse(body).status();
  EXPECT_EQ(status.message(), "TokenReview status.user.username is not a string");
}

TEST(TokenReviewRequestTest, BodyHasTokenAndAudiences) {
  EXPECT_EQ(BuildTokenReviewRequest("a\"b", {}),
            R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview",)"
            R"("spec":{"token":"a\"b"}})");
  EXPECT_EQ(BuildTokenReviewRequest("t", {"api", "kubestat"}),
            R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview",)"
            R"("spec":{"token":"t","audiences":["api","kubestat"]}})");
}

TEST(TokenReviewRequestTest, FingerprintIsAShortSha256Prefix) {
  // sha256("abc") = ba7816bf…
  EXPECT_EQ(TokenFingerprint("abc"), "sha256:ba7816bf");
}

class TokenReviewerTest : public ::testing::Test {
 protected:
  TokenReviewer& Reviewer() {
    if (!reviewer_) {
      EXPECT_TRUE(options_.Validate().ok());
      reviewer_ = std::make_unique<TokenReviewer>(options_, transport_, clock_, &registry_);
    }
    return *reviewer_;
  }
  double Lookups(std::string result) {
    return CounterValue(registry_, "kubestat_token_review_cache_lookups_total",
                        {{"result", result}});
  }

  FakeClock clock_;
  FakeReviewTransport transport_;
  prometheus::Registry registry_;
  TokenReviewOptions options_;
  std::unique_ptr<TokenReviewer> reviewer_;
};

TEST_F(TokenReviewerTest, SendsTheReviewAndReturnsTheUser) {
  transport_.Push(kAlice);
  TokenReviewResult result = Reviewer().Review(kToken);
  ASSERT_EQ(result.outcome, TokenReviewOutcome::kAuthenticated);
  EXPECT_EQ(result.user, (UserInfo{"alice", "u-1", {"team-a"}, {{"scopes", {"view", "edit"}}}}));
  ASSERT_EQ(transport_.calls().size(), 1u);
  EXPECT_EQ(transport_.calls()[0].path, "/apis/authentication.k8s.io/v1/tokenreviews");
  EXPECT_EQ(transport_.calls()[0].body, BuildTokenReviewRequest(kToken, {}));
}

TEST_F(TokenReviewerTest, SuccessIsCachedUntilItsTtl) {
  options_.success_ttl = std::chrono::seconds(10);
  transport_.Push(kAlice);
  transport_.Push(kDenied);
  EXPECT_EQ(Reviewer().Review(kToken).outcome, TokenReviewOutcome::kAuthenticated);
  clock_.Advance(std::chrono::milliseconds(9999));
  EXPECT_EQ(Reviewer().Review(kToken).outcome, TokenReviewOutcome::kAuthenticated);
  EXPECT_EQ(transport_.call_count(), 1u);
  EXPECT_EQ(Lookups("hit"), 1);
  EXPECT_EQ(Lookups("miss"), 1);
  clock_.Advance(std::chrono::milliseconds(1));
  EXPECT_EQ(Reviewer().Review(kToken).outcome, TokenReviewOutcome::kUnauthenticated);
  EXPECT_EQ(transport_.call_count(), 2u);
}

TEST_F(TokenReviewerTest, FailureHasItsOwnTtl) {
  options_.success_ttl = std::chrono::seconds(60);
  options_.failure_ttl = std::chrono::seconds(2);
  transport_.Push(kDenied);
  transport_.Push(kAlice);
  TokenReviewResult result = Reviewer().Review(kToken);
  EXPECT_EQ(result.outcome, TokenReviewOutcome::kUnauthenticated);
  EXPECT_EQ(result.reason, "token review: invalid bearer token");
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ(Reviewer().Review(kToken).outcome, TokenReviewOutcome::kUnauthenticated);
  EXPECT_EQ(transport_.call_count(), 1u);
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ(Reviewer().Review(kToken).outcome, TokenReviewOutcome::kAuthenticated);
  EXPECT_EQ(transport_.call_count(), 2u);
}

TEST_F(TokenReviewerTest, ErrorsAreNotCachedAndDoNotLeakTheToken) {
  transport_.Push(absl::UnavailableError("dial tcp 10.0.0.1:443: connection refused"));
  transport_.Push("{\"kind\":\"TokenReview\"}");
  transport_.Push(kAlice);
  TokenReviewResult result = Reviewer().Review(kToken);
  EXPECT_EQ(result.outcome, TokenReviewOutcome::kError);
  EXPECT_EQ(result.reason, "token review failed: dial tcp 10.0.0.1:443: connection refused");
  result = Reviewer().Review(kToken);
  EXPECT_EQ(result.outcome, TokenReviewOutcome::kError);
  EXPECT_EQ(result.reason, "token review failed: TokenReview response has no status");
  EXPECT_EQ(Reviewer().Review(kToken).outcome, TokenReviewOutcome::kAuthenticated);
  EXPECT_EQ(transport_.call_count(), 3u);
}

TEST_F(TokenReviewerTest, TransportMessagesEchoingTheTokenAreRedacted) {
  transport_.Push(absl::PermissionDeniedError(std::string("forbidden for ") + kToken));
  TokenReviewResult result = Reviewer().Review(kToken);
  EXPECT_EQ(result.reason, "token review failed: forbidden for [redacted]");
}

TEST_F(TokenReviewerTest, DistinctTokensAreCachedApart) {
  transport_.Push(kAlice);
  transport_.Push(kDenied);
  EXPECT_EQ(Reviewer().Review("token-a").outcome, TokenReviewOutcome::kAuthenticated);
  EXPECT_EQ(Reviewer().Review("token-b").outcome, TokenReviewOutcome::kUnauthenticated);
  EXPECT_EQ(Reviewer().Review("token-a").outcome, TokenReviewOutcome::kAuthenticated);
  EXPECT_EQ(Reviewer().Review("token-b").outcome, TokenReviewOutcome::kUnauthenticated);
  EXPECT_EQ(transport_.call_count(), 2u);
}

TEST_F(TokenReviewerTest, CacheIsBoundedAndEvictsTheLeastRecentlyUsed) {
  options_.max_cache_entries = 2;
  transport_.SetResponder(
      [](std::string_view, const std::string&) -> absl::StatusOr<std::string> { return kAlice; });
  Reviewer().Review("t1");
  Reviewer().Review("t2");
  Reviewer().Review("t1");  // t2 is now the least recently used
  Reviewer().Review("t3");  // evicts t2
  EXPECT_EQ(transport_.call_count(), 3u);
  Reviewer().Review("t1");
  Reviewer().Review("t3");
  EXPECT_EQ(transport_.call_count(), 3u);
  Reviewer().Review("t2");
  EXPECT_EQ(transport_.call_count(), 4u);
}

TEST_F(TokenReviewerTest, AudiencesAreSentAndChecked) {
  options_.audiences = {"kubestat"};
  transport_.Push(kAlice);  // audiences ["api"]
  TokenReviewResult result = Reviewer().Review(kToken);
  EXPECT_EQ(result.outcome, TokenReviewOutcome::kUnauthenticated);
  EXPECT_EQ(result.reason, "token review: token is not valid for the configured audiences");
  EXPECT_EQ(transport_.calls()[0].body, BuildTokenReviewRequest(kToken, {"kubestat"}));

  transport_.Push(
      R"({"status":{"authenticated":true,"user":{"username":"a"},"audiences":["x","kubestat"]}})");
  EXPECT_EQ(Reviewer().Review("other").outcome, TokenReviewOutcome::kAuthenticated);
}

TEST_F(TokenReviewerTest, AuthenticatedWithoutUsernameIsAnError) {
  transport_.Push(R"({"status":{"authenticated":true,"user":{}}})");
  EXPECT_EQ(Reviewer().Review(kToken).outcome, TokenReviewOutcome::kError);
}

// The first review blocks until the second caller is known to wait for it (the cache
// counts a coalesced lookup before waiting), so exactly one TokenReview is sent.
TEST_F(TokenReviewerTest, ConcurrentReviewsOfOneTokenAreCoalesced) {
  options_.success_ttl = Duration::zero();  // nothing cached: only coalescing saves the call
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  transport_.SetResponder([&](std::string_view, const std::string&) -> absl::StatusOr<std::string> {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });
    return kAlice;
  });
  TokenReviewer& reviewer = Reviewer();
  TokenReviewResult first, second;
  std::thread a([&] { first = reviewer.Review(kToken); });
  while (transport_.call_count() == 0) std::this_thread::yield();
  std::thread b([&] { second = reviewer.Review(kToken); });
  while (Lookups("coalesced") < 1 && transport_.call_count() < 2) std::this_thread::yield();
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  a.join();
  b.join();
  EXPECT_EQ(first.outcome, TokenReviewOutcome::kAuthenticated);
  EXPECT_EQ(second.outcome, TokenReviewOutcome::kAuthenticated);
  EXPECT_EQ(second.user.name, "alice");
  EXPECT_EQ(transport_.call_count(), 1u);
  EXPECT_EQ(Lookups("miss"), 1);
  EXPECT_EQ(Lookups("coalesced"), 1);
}

TEST(TokenReviewOptionsTest, ValidateNamesTheFlag) {
  TokenReviewOptions options;
  EXPECT_TRUE(options.Validate().ok());
  options.failure_ttl = std::chrono::seconds(-1);
  EXPECT_EQ(options.Validate().message(),
            "--authentication-token-webhook-cache-ttl must not be negative");
  options = {};
  options.max_cache_entries = 0;
  EXPECT_EQ(options.Validate().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kubestat::kube
