#include "kubestat/kube/authorizer.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <fstream>
#include <string>

#include "auth_test_support.h"
#include "kubestat/core/clock.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::kube {
namespace {

using ::kubestat::kube::testing::CounterValue;
using ::kubestat::kube::testing::FakeReviewTransport;

constexpr char kAlicePodsInTeamA[] = R"(
rules:
- users: [alice]
  verbs: [get, list, watch]
  apiGroups: [metrics.k8s.io, metrics]
  resources: [pods]
  namespaces: [team-a]
)";

RequestAttributes Request(std::string method, std::string path, std::string query = "") {
  absl::StatusOr<RequestAttributes> attrs = ParseRequestAttributes(method, path, query);
  EXPECT_TRUE(attrs.ok()) << attrs.status();
  return attrs.ok() ? *attrs : RequestAttributes{};
}

UserInfo Alice() { return UserInfo{"alice", "", {"system:authenticated"}, {}}; }

class AuthorizerTest : public ::testing::Test {
 protected:
  std::unique_ptr<Authorizer> Make(std::optional<AccessRules> rules, bool sar) {
    options_.subject_access_review = sar;
    absl::StatusOr<std::unique_ptr<Authorizer>> a =
        Authorizer::Create(options_, std::move(rules), clock_, &transport_, &registry_);
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? std::move(*a) : nullptr;
  }
  static AccessRules Rules(const char* yaml) {
    absl::StatusOr<AccessRules> rules = AccessRules::Parse(yaml, "rules.yaml");
    EXPECT_TRUE(rules.ok()) << rules.status();
    return *rules;
  }
  double Decisions(std::string decision, std::string source) {
    return CounterValue(registry_, "kubestat_authorization_decisions_total",
                        {{"decision", decision}, {"source", source}});
  }

  // A fake kube-apiserver RBAC: alice may get/list/watch pods in team-a, nothing else.
  static absl::StatusOr<std::string> FakeRbac(std::string_view, const std::string& body) {
    const bool grant = body.find(R"("user":"alice")") != std::string::npos &&
                       body.find(R"("namespace":"team-a")") != std::string::npos &&
                       body.find(R"("resource":"pods")") != std::string::npos &&
                       (body.find(R"("verb":"list")") != std::string::npos ||
                        body.find(R"("verb":"get")") != std::string::npos ||
                        body.find(R"("verb":"watch")") != std::string::npos);
    return grant ? std::string(R"({"kind":"SubjectAccessReview","status":{"allowed":true,)"
                               R"("reason":"RBAC: allowed by RoleBinding \"alice/team-a\""}})")
                 : std::string(R"({"kind":"SubjectAccessReview","status":{"allowed":false}})");
  }

  FakeClock clock_;
  FakeReviewTransport transport_;
  prometheus::Registry registry_;
  AuthorizerOptions options_;
};

TEST_F(AuthorizerTest, NamespaceScopedGrantViaRulesFile) {
  auto authz = Make(Rules(kAlicePodsInTeamA), false);
  AuthorizationResult r = authz->Authorize(
      Alice(), Request("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/team-a/pods"));
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(r.source, DecisionSource::kRulesFile);
  EXPECT_EQ(r.reason, "allowed by rule 0 of rules.yaml");

  r = authz->Authorize(Alice(), Request("GET", "/apis/metrics.k8s.io/v1beta1/nodes"));
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.source, DecisionSource::kDefault);
  r = authz->Authorize(Alice(),
                       Request("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/team-b/pods"));
  EXPECT_FALSE(r.allowed);
  r = authz->Authorize(Alice(), Request("GET", "/apis/metrics.k8s.io/v1beta1/pods"));
  EXPECT_FALSE(r.allowed);
  // Pushing is a verb of its own.
  r = authz->Authorize(Alice(),
                       Request("PUT", "/apis/metrics.k8s.io/v1beta1/namespaces/team-a/pods/p"));
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(Decisions("allow", "rules_file"), 1);
  EXPECT_EQ(Decisions("deny", "default"), 4);
  EXPECT_EQ(transport_.call_count(), 0u);
}

TEST_F(AuthorizerTest, NamespaceScopedGrantViaSubjectAccessReview) {
  transport_.SetResponder(&FakeRbac);
  auto authz = Make(std::nullopt, true);
  AuthorizationResult r = authz->Authorize(
      Alice(), Request("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/team-a/pods"));
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(r.source, DecisionSource::kSubjectAccessReview);
  EXPECT_EQ(r.reason, "RBAC: allowed by RoleBinding \"alice/team-a\"");
  r = authz->Authorize(Alice(), Request("GET", "/apis/metrics.k8s.io/v1beta1/nodes"));
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.source, DecisionSource::kDefault);  // the review had no opinion
  r = authz->Authorize(Alice(),
                       Request("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/team-b/pods"));
  EXPECT_FALSE(r.allowed);

  const std::vector<FakeReviewTransport::Call> calls = transport_.calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].body,
            R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{)"
            R"("resourceAttributes":{"namespace":"team-a","verb":"list","group":"metrics.k8s.io",)"
            R"("version":"v1beta1","resource":"pods"},"user":"alice",)"
            R"("groups":["system:authenticated"]}})");
  EXPECT_EQ(calls[1].body,
            R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{)"
            R"("resourceAttributes":{"verb":"list","group":"metrics.k8s.io",)"
            R"("version":"v1beta1","resource":"nodes"},"user":"alice",)"
            R"("groups":["system:authenticated"]}})");
  EXPECT_NE(calls[2].body.find(R"("namespace":"team-b")"), std::string::npos);
  EXPECT_EQ(Decisions("allow", "subject_access_review"), 1);
  EXPECT_EQ(Decisions("deny", "default"), 2);
}

TEST_F(AuthorizerTest, AlwaysAllowPathsNeedNoRuleOrReview) {
  options_.always_allow_paths = {"/healthz", "/livez", "/readyz", "/debug/*", "version"};
  auto authz = Make(std::nullopt, true);
  const UserInfo anonymous{"system:anonymous", "", {"system:unauthenticated"}, {}};
  for (const char* path : {"/healthz", "/livez", "/readyz", "/debug/pprof", "/version"}) {
    AuthorizationResult r = authz->Authorize(anonymous, Request("GET", path));
    EXPECT_TRUE(r.allowed) << path;
    EXPECT_EQ(r.source, DecisionSource::kAlwaysAllowPath);
  }
  EXPECT_EQ(transport_.call_count(), 0u);
  EXPECT_EQ(Decisions("allow", "always_allow_path"), 5);
  // Not a prefix of /healthz, not the /debug/ prefix, and resource requests never.
  transport_.SetResponder(&FakeRbac);
  for (const char* path : {"/healthzz", "/healthz/etcd", "/debug", "/metrics"}) {
    EXPECT_FALSE(authz->Authorize(anonymous, Request("GET", path)).allowed) << path;
  }
  options_.always_allow_paths = {"/api/*"};
  auto wide = Make(std::nullopt, true);
  EXPECT_TRUE(wide->Authorize(anonymous, Request("GET", "/api/v1")).allowed);
  EXPECT_FALSE(wide->Authorize(anonymous, Request("GET", "/api/v1/nodes")).allowed);
}

TEST_F(AuthorizerTest, DefaultAlwaysAllowPaths) {
  EXPECT_EQ(AuthorizerOptions().always_allow_paths,
            (std::vector<std::string>{"/healthz", "/livez", "/readyz"}));
}

TEST_F(AuthorizerTest, RulesFileBeforeReviewAndReviewDenies) {
  transport_.Push(R"({"kind":"SubjectAccessReview","status":{"allowed":false,"denied":true,)"
                  R"("reason":"blocked"}})");
  auto authz = Make(Rules(kAlicePodsInTeamA), true);
  EXPECT_TRUE(authz
                  ->Authorize(Alice(),
                              Request("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/team-a/pods"))
                  .allowed);
  EXPECT_EQ(transport_.call_count(), 0u);
  AuthorizationResult r =
      authz->Authorize(Alice(), Request("GET", "/apis/metrics.k8s.io/v1beta1/nodes"));
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.source, DecisionSource::kSubjectAccessReview);
  EXPECT_EQ(r.reason, "blocked");
  EXPECT_EQ(Decisions("deny", "subject_access_review"), 1);
}

TEST_F(AuthorizerTest, ReviewFailureDeniesAndCountsAsError) {
  transport_.Push(absl::UnavailableError("connection refused"));
  auto authz = Make(std::nullopt, true);
  AuthorizationResult r = authz->Authorize(Alice(), Request("GET", "/metrics"));
  EXPECT_FALSE(r.allowed);
  EXPECT_TRUE(r.error);
  EXPECT_EQ(r.reason, "subject access review failed: connection refused");
  EXPECT_EQ(Decisions("error", "subject_access_review"), 1);
  EXPECT_EQ(Decisions("deny", "subject_access_review"), 0);
}

TEST_F(AuthorizerTest, CreateValidatesAndLoadsTheRulesFile) {
  AuthorizerOptions options;
  options.always_allow_paths = {"/a*b"};
  EXPECT_EQ(Authorizer::Create(options, clock_, nullptr).status().message(),
            "--authorization-always-allow-paths: only a trailing * is allowed in \"/a*b\"");
  options = {};
  options.subject_access_review = true;
  EXPECT_EQ(Authorizer::Create(options, clock_, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);

  kubestat::testing::TempDir dir;
  options = {};
  options.rules_file = dir.File("rules.yaml");
  std::ofstream(options.rules_file) << "rules:\n- users: [alice]\n  verbs: [get]\n";
  absl::StatusOr<std::unique_ptr<Authorizer>> bad = Authorizer::Create(options, clock_, nullptr);
  EXPECT_EQ(bad.status().message(),
            options.rules_file + ": rule 0: needs resources or nonResourceURLs");
  std::ofstream(options.rules_file, std::ios::trunc) << kAlicePodsInTeamA;
  absl::StatusOr<std::unique_ptr<Authorizer>> good = Authorizer::Create(options, clock_, nullptr);
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_TRUE(
      (*good)
          ->Authorize(Alice(), Request("GET", "/apis/metrics/v1alpha1/namespaces/team-a/pods"))
          .allowed);
}

TEST(ForbiddenErrorTest, MessagesAsKubeApiserver) {
  const UserInfo alice = Alice();
  ApiError e = ForbiddenError(
      alice, Request("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/team-b/pods/p"), "");
  EXPECT_EQ(e.code(), 403);
  EXPECT_EQ(e.message(),
            "pods.metrics.k8s.io \"p\" is forbidden: User \"alice\" cannot get resource \"pods\" "
            "in API group \"metrics.k8s.io\" in the namespace \"team-b\"");
  e = ForbiddenError(alice, Request("GET", "/apis/metrics.k8s.io/v1beta1/nodes"), "no rule");
  EXPECT_EQ(e.message(),
            "nodes.metrics.k8s.io is forbidden: User \"alice\" cannot list resource \"nodes\" in "
            "API group \"metrics.k8s.io\" at the cluster scope: no rule");
  e = ForbiddenError(alice, Request("GET", "/metrics"), "");
  EXPECT_EQ(e.message(), "forbidden: User \"alice\" cannot get path \"/metrics\"");
  EXPECT_EQ(e.reason(), StatusReason::kForbidden);
}

}  // namespace
}  // namespace kubestat::kube
