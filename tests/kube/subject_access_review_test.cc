#include "kubestat/kube/subject_access_review.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <chrono>
#include <string>

#include "auth_test_support.h"
#include "kubestat/core/clock.h"

namespace kubestat::kube {
namespace {

using ::kubestat::kube::testing::CounterValue;
using ::kubestat::kube::testing::FakeReviewTransport;

constexpr char kAllowed[] =
    R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",)"
    R"("status":{"allowed":true,"reason":"RBAC: allowed by ClusterRoleBinding \"view\""}})";
constexpr char kDenied[] =
    R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",)"
    R"("status":{"allowed":false,"denied":true,"reason":"explicitly denied"}})";
constexpr char kNoOpinion[] =
    R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",)"
    R"("status":{"allowed":false}})";

UserInfo Alice() {
  return UserInfo{"alice", "u-1", {"team-a", "system:authenticated"}, {{"scopes", {"view"}}}};
}

RequestAttributes ListPods(std::string ns) {
  RequestAttributes a;
  a.resource_request = true;
  a.verb = "list";
  a.path = "/apis/metrics.k8s.io/v1beta1/namespaces/" + ns + "/pods";
  a.api_group = "metrics.k8s.io";
  a.api_version = "v1beta1";
  a.namespace_name = std::move(ns);
  a.resource = "pods";
  return a;
}

TEST(SubjectAccessReviewRequestTest, ResourceAttributes) {
  RequestAttributes request = ListPods("team-a");
  request.verb = "get";
  request.name = "web-1";
  request.subresource = "status";
  EXPECT_EQ(BuildSubjectAccessReviewRequest(Alice(), request),
            R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{)"
            R"("resourceAttributes":{"namespace":"team-a","verb":"get","group":"metrics.k8s.io",)"
            R"("version":"v1beta1","resource":"pods","subresource":"status","name":"web-1"},)"
            R"("user":"alice","groups":["team-a","system:authenticated"],)"
            R"("extra":{"scopes":["view"]},"uid":"u-1"}})");
}

TEST(SubjectAccessReviewRequestTest, ClusterScopedAndCoreGroupLeaveEmptyFieldsOut) {
  RequestAttributes request;
  request.resource_request = true;
  request.verb = "list";
  request.api_version = "v1";
  request.resource = "nodes";
  EXPECT_EQ(BuildSubjectAccessReviewRequest(UserInfo{"bob", "", {}, {}}, request),
            R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{)"
            R"("resourceAttributes":{"verb":"list","version":"v1","resource":"nodes"},)"
            R"("user":"bob"}})");
}

TEST(SubjectAccessReviewRequestTest, NonResourceAttributes) {
  RequestAttributes request;
  request.verb = "get";
  request.path = "/metrics";
  EXPECT_EQ(BuildSubjectAccessReviewRequest(UserInfo{"prom", "", {"mon"}, {}}, request),
            R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{)"
            R"("nonResourceAttributes":{"path":"/metrics","verb":"get"},)"
            R"("user":"prom","groups":["mon"]}})");
}

TEST(SubjectAccessReviewParseTest, ReadsStatus) {
  absl::StatusOr<SubjectAccessReviewStatus> status = ParseSubjectAccessReviewResponse(kAllowed);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(*status, (SubjectAccessReviewStatus{
                         true, false, "RBAC: allowed by ClusterRoleBinding \"view\"", ""}));
  status = ParseSubjectAccessReviewResponse(
      R"({"status":{"allowed":false,"reason":"no RBAC policy matched",)"
      R"("evaluationError":"role \"x\" not found"}})");
  ASSERT_TRUE(status.ok());
  AuthorizerAnswer answer = AnswerFromStatus(*status);
  EXPECT_EQ(answer.decision, Decision::kNoOpinion);
  EXPECT_EQ(answer.reason, "no RBAC policy matched; role \"x\" not found");
  EXPECT_EQ(AnswerFromStatus(*ParseSubjectAccessReviewResponse(kDenied)).decision, Decision::kDeny);
}

TEST(SubjectAccessReviewParseTest, RejectsMalformedResponses) {
  for (const char* body : {
           "",
           "{",
           "true",
           R"({"kind":"SubjectAccessReview"})",
           R"({"kind":"TokenReview","status":{"allowed":true}})",
           R"({"apiVersion":"authorization.k8s.io/v1beta1","status":{"allowed":true}})",
           R"({"status":"allowed"})",
           R"({"status":{"allowed":1}})",
           R"({"status":{"denied":"yes"}})",
           R"({"status":{"reason":["r"]}})",
           R"({"status":{"evaluationError":{}}})",
           R"({"status":{"allowed":true,"denied":true}})",
       }) {
    EXPECT_EQ(ParseSubjectAccessReviewResponse(body).status().code(),
              absl::StatusCode::kInvalidArgument)
        << body;
  }
}

class SubjectAccessReviewerTest : public ::testing::Test {
 protected:
  SubjectAccessReviewer& Reviewer() {
    if (!reviewer_) {
      EXPECT_TRUE(options_.Validate().ok());
      reviewer_ = std::make_unique<SubjectAccessReviewer>(options_, transport_, clock_, &registry_);
    }
    return *reviewer_;
  }
  double Lookups(std::string result) {
    return CounterValue(registry_, "kubestat_subject_access_review_cache_lookups_total",
                        {{"result", result}});
  }

  FakeClock clock_;
  FakeReviewTransport transport_;
  prometheus::Registry registry_;
  SubjectAccessReviewOptions options_;
  std::unique_ptr<SubjectAccessReviewer> reviewer_;
};

TEST_F(SubjectAccessReviewerTest, PostsTheReviewAndReadsTheDecision) {
  transport_.Push(kAllowed);
  AuthorizerAnswer answer = Reviewer().Review(Alice(), ListPods("team-a"));
  EXPECT_EQ(answer.decision, Decision::kAllow);
  EXPECT_EQ(answer.reason, "RBAC: allowed by ClusterRoleBinding \"view\"");
  EXPECT_FALSE(answer.error);
  ASSERT_EQ(transport_.calls().size(), 1u);
  EXPECT_EQ(transport_.calls()[0].path, "/apis/authorization.k8s.io/v1/subjectaccessreviews");
  EXPECT_EQ(transport_.calls()[0].body,
            BuildSubjectAccessReviewRequest(Alice(), ListPods("team-a")));
}

TEST_F(SubjectAccessReviewerTest, AllowedAndDeniedAreCachedApartWithTheirTtls) {
  options_.allowed_ttl = std::chrono::seconds(30);
  options_.denied_ttl = std::chrono::seconds(5);
  transport_.SetResponder(
      [](std::string_view, const std::string& body) -> absl::StatusOr<std::string> {
        return body.find(R"("namespace":"team-a")") != std::string::npos ? kAllowed : kDenied;
      });
  EXPECT_EQ(Reviewer().Review(Alice(), ListPods("team-a")).decision, Decision::kAllow);
  EXPECT_EQ(Reviewer().Review(Alice(), ListPods("team-b")).decision, Decision::kDeny);
  EXPECT_EQ(transport_.call_count(), 2u);
  clock_.Advance(std::chrono::seconds(4));
  EXPECT_EQ(Reviewer().Review(Alice(), ListPods("team-a")).decision, Decision::kAllow);
  EXPECT_EQ(Reviewer().Review(Alice(), ListPods("team-b")).decision, Decision::kDeny);
  EXPECT_EQ(transport_.call_count(), 2u);
  EXPECT_EQ(Lookups("hit"), 2);
  clock_.Advance(std::chrono::seconds(1));  // 5s: the denial expired, the grant did not
  EXPECT_EQ(Reviewer().Review(Alice(), ListPods("team-a")).decision, Decision::kAllow);
  EXPECT_EQ(transport_.call_count(), 2u);
  EXPECT_EQ(Reviewer().Review(Alice(), ListPods("team-b")).decision, Decision::kDeny);
  EXPECT_EQ(transport_.call_count(), 3u);
  clock_.Advance(std::chrono::seconds(25));  // 30s
  EXPECT_EQ(Reviewer().Review(Alice(), ListPods("team-a")).decision, Decision::kAllow);
  EXPECT_EQ(transport_.call_count(), 4u);
  EXPECT_EQ(Lookups("miss"), 4);
}

TEST_F(SubjectAccessReviewerTest, NoOpinionIsCachedWithTheDeniedTtl) {
  options_.allowed_ttl = std::chrono::seconds(30);
  options_.denied_ttl = std::chrono::seconds(5);
  transport_.Push(kNoOpinion);
  transport_.Push(kAllowed);
  EXPECT_EQ(Reviewer().Review(Alice(), ListPods("x")).decision, Decision::kNoOpinion);
  clock_.Advance(std::chrono::seconds(4));
  EXPECT_EQ(Reviewer().Review(Alice(), ListPods("x")).decision, Decision::kNoOpinion);
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ(Reviewer().Review(Alice(), ListPods("x")).decision, Decision::kAllow);
  EXPECT_EQ(transport_.call_count(), 2u);
}

TEST_F(SubjectAccessReviewerTest, DifferentUsersAreCachedApart) {
  transport_.Push(kAllowed);
  transport_.Push(kDenied);
  EXPECT_EQ(Reviewer().Review(Alice(), ListPods("x")).decision, Decision::kAllow);
  UserInfo other = Alice();
  other.groups.push_back("extra-group");
  EXPECT_EQ(Reviewer().Review(other, ListPods("x")).decision, Decision::kDeny);
  EXPECT_EQ(transport_.call_count(), 2u);
}

TEST_F(SubjectAccessReviewerTest, FailuresDenyWithAnErrorAndAreNotCached) {
  transport_.Push(absl::DeadlineExceededError("context deadline exceeded"));
  transport_.Push("<html>bad gateway</html>");
  transport_.Push(kAllowed);
  AuthorizerAnswer answer = Reviewer().Review(Alice(), ListPods("x"));
  EXPECT_EQ(answer.decision, Decision::kDeny);
  EXPECT_TRUE(answer.error);
  EXPECT_EQ(answer.reason, "subject access review failed: context deadline exceeded");
  answer = Reviewer().Review(Alice(), ListPods("x"));
  EXPECT_TRUE(answer.error);
  EXPECT_NE(answer.reason.find("SubjectAccessReview response is not valid JSON"), std::string::npos)
      << answer.reason;
  EXPECT_EQ(Reviewer().Review(Alice(), ListPods("x")).decision, Decision::kAllow);
  EXPECT_EQ(transport_.call_count(), 3u);
}

TEST_F(SubjectAccessReviewerTest, CacheIsBounded) {
  options_.max_cache_entries = 1;
  transport_.SetResponder(
      [](std::string_view, const std::string&) -> absl::StatusOr<std::string> { return kAllowed; });
  Reviewer().Review(Alice(), ListPods("a"));
  Reviewer().Review(Alice(), ListPods("b"));
  Reviewer().Review(Alice(), ListPods("b"));
  EXPECT_EQ(transport_.call_count(), 2u);
  Reviewer().Review(Alice(), ListPods("a"));
  EXPECT_EQ(transport_.call_count(), 3u);
}

TEST(SubjectAccessReviewOptionsTest, ValidateNamesTheFlag) {
  SubjectAccessReviewOptions options;
  EXPECT_TRUE(options.Validate().ok());
  options.allowed_ttl = std::chrono::seconds(-1);
  EXPECT_EQ(options.Validate().message(),
            "--authorization-webhook-cache-authorized-ttl must not be negative");
  options = {};
  options.denied_ttl = std::chrono::seconds(-1);
  EXPECT_EQ(options.Validate().message(),
            "--authorization-webhook-cache-unauthorized-ttl must not be negative");
}

}  // namespace
}  // namespace kubestat::kube
