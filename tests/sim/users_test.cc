// The users file, RequestInfo and the access reviews, without any HTTP.
#include "kubestat/sim/users.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include "kubestat/apimachinery/api_error.h"
#include "kubestat/sim/access_review.h"
#include "kubestat/sim/request_info.h"
#include "test_users.h"

namespace kubestat::sim {
namespace {

constexpr std::string_view kUsers = test_users::kUsersYaml;

UsersFile Users() {
  absl::StatusOr<UsersFile> f = UsersFile::Parse(kUsers, "users.yaml");
  EXPECT_TRUE(f.ok()) << f.status();
  return *std::move(f);
}

TEST(UsersFileTest, ParsesUsersAndAddsTheAuthenticatedGroup) {
  const UsersFile users = Users();
  ASSERT_EQ(users.users().size(), 3u);
  EXPECT_EQ(users.rules().size(), 4u);
  const UserInfo* alice = users.Authenticate("alice-token");
  ASSERT_NE(alice, nullptr);
  EXPECT_EQ(alice->name, "alice");
  EXPECT_EQ(alice->uid, "1001");
  EXPECT_EQ(alice->groups, (std::vector<std::string>{"team-a", "system:authenticated"}));
  EXPECT_EQ(alice->extra.at("scopes"), (std::vector<std::string>{"read", "write"}));
  EXPECT_EQ(users.Authenticate("alice-token "), nullptr);
  EXPECT_EQ(users.Authenticate(""), nullptr);
  EXPECT_EQ(users.Find("admin")->token, "admin-token");
}

TEST(UsersFileTest, RejectsBadFilesNamingFileLineAndField) {
  struct Case {
    std::string yaml;
    std::string want;  // a piece of the message
  };
  const std::vector<Case> cases = {
      {"users: [", "bad.yaml:"},
      {"", "must be a mapping"},
      {"rules: []", "users: must be a non-empty list"},
      {"users: []", "users: must be a non-empty list"},
      {"users:\n- name: a\n", "bad.yaml:2: users[0]: token is required"},
      {"users:\n- name: a\n  token: t\n  group: [x]\n",
       "bad.yaml:4: users[0]: unknown key \"group\""},
      {"users:\n- name: a\n  token: t\n- name: a\n  token: u\n",
       "bad.yaml:4: users[1].name: duplicate name (also users[0])"},
      {"users:\n- name: a\n  token: t\n- name: b\n  token: t\n",
       "bad.yaml:5: users[1].token: duplicate token (also users[0])"},
      {"users:\n- name: a\n  token: two words\n",
       "users[0].token: must be non-empty and without spaces"},
      {"users:\n- name: a\n  token: t\n  groups: x\n",
       "users[0].groups: must be a list of strings"},
      {"users:\n- name: \"a\\nb\"\n  token: t\n",
       "users[0].name: must not contain control characters"},
      {"users:\n- name: a\n  token: t\nrules:\n- verbs: [get]\n  nonResourceURLs: [/x]\n",
       "bad.yaml:5: rules[0]: needs users or groups"},
      {"users:\n- name: a\n  token: t\nrules:\n- users: [a]\n  nonResourceURLs: [/x]\n",
       "rules[0]: verbs must not be empty"},
      {"users:\n- name: a\n  token: t\nrules:\n- users: [a]\n  verbs: [get]\n",
       "rules[0]: needs either resources (with apiGroups) or nonResourceURLs"},
      {"users:\n- name: a\n  token: t\nrules:\n- users: [a]\n  verbs: [get]\n  resources: [pods]\n",
       "rules[0]: resources need apiGroups"},
      {"users:\n- name: a\n  token: t\nrules:\n- users: [a]\n  verbs: [get]\n"
       "  nonResourceURLs: [/a*b]\n",
       "rules[0].nonResourceURLs[0]: must be \"*\" or start with \"/\""},
      {"users:\n- name: a\n  token: t\nrules:\n- users: [a]\n  verbs: [get]\n"
       "  nonResourceURLs: [/a]\n  namespaces: [x]\n",
       "nonResourceURLs do not take apiGroups, resourceNames or namespaces"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<UsersFile> f = UsersFile::Parse(c.yaml, "bad.yaml");
    ASSERT_FALSE(f.ok()) << c.yaml;
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(f.status().message()).find(c.want), std::string::npos)
        << "got: " << f.status().message() << "\nwant: " << c.want;
  }
  absl::StatusOr<UsersFile> missing = UsersFile::Load("/nonexistent/users.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(std::string(missing.status().message()).find("/nonexistent/users.yaml"),
            std::string::npos);
}

TEST(RequestInfoTest, DerivesVerbResourceNamespaceAndNameAsKubeApiserverDoes) {
  RequestInfo r = ParseRequestInfo("GET", "/api/v1/nodes", "");
  EXPECT_TRUE(r.is_resource_request);
  EXPECT_EQ(r.verb, "list");
  EXPECT_EQ(r.api_group, "");
  EXPECT_EQ(r.api_version, "v1");
  EXPECT_EQ(r.resource, "nodes");
  EXPECT_EQ(r.namespace_name, "");

  r = ParseRequestInfo("GET", "/api/v1/nodes", "watch=true&resourceVersion=5");
  EXPECT_EQ(r.verb, "watch");
  r = ParseRequestInfo("GET", "/api/v1/nodes", "watch=false");
  EXPECT_EQ(r.verb, "list");
  r = ParseRequestInfo("GET", "/api/v1/watch/namespaces/shop/pods", "");
  EXPECT_EQ(r.verb, "watch");
  EXPECT_EQ(r.namespace_name, "shop");
  EXPECT_EQ(r.resource, "pods");

  r = ParseRequestInfo("GET", "/api/v1/namespaces/shop/pods/web-1/log", "");
  EXPECT_EQ(r.verb, "get");
  EXPECT_EQ(r.namespace_name, "shop");
  EXPECT_EQ(r.resource, "pods");
  EXPECT_EQ(r.name, "web-1");
  EXPECT_EQ(r.subresource, "log");

  r = ParseRequestInfo("GET", "/api/v1/namespaces/shop/pods",
                       "fieldSelector=metadata.name%3Dweb-1");
  EXPECT_EQ(r.verb, "list");
  EXPECT_EQ(r.name, "web-1");

  r = ParseRequestInfo("GET", "/api/v1/namespaces/shop", "");
  EXPECT_EQ(r.resource, "namespaces");
  EXPECT_EQ(r.name, "shop");
  EXPECT_EQ(r.namespace_name, "shop");

  r = ParseRequestInfo("POST", "/apis/authentication.k8s.io/v1/tokenreviews", "");
  EXPECT_EQ(r.verb, "create");
  EXPECT_EQ(r.api_group, "authentication.k8s.io");
  EXPECT_EQ(r.resource, "tokenreviews");

  r = ParseRequestInfo("DELETE", "/apis/metrics.k8s.io/v1beta1/namespaces/a/pods", "");
  EXPECT_EQ(r.verb, "deletecollection");
  EXPECT_EQ(r.api_group, "metrics.k8s.io");

  for (const char* path : {"/api", "/api/v1", "/apis", "/apis/metrics.k8s.io",
                           "/apis/metrics.k8s.io/v1beta1", "/healthz", "/sim/v1/faults"}) {
    r = ParseRequestInfo("GET", path, "");
    EXPECT_FALSE(r.is_resource_request) << path;
    EXPECT_EQ(r.verb, "get") << path;
    EXPECT_EQ(r.path, path);
  }
  EXPECT_EQ(ParseRequestInfo("PUT", "/sim/v1/faults/node-0001", "").verb, "put");
}

TEST(UsersFileTest, RulesAllowOnlyWhatTheyName) {
  const UsersFile users = Users();
  const UserInfo& alice = *users.Authenticate("alice-token");
  auto allowed = [&](const UserInfo& u, const char* method, const char* path) {
    return users.Authorize(u.name, u.groups, ParseRequestInfo(method, path, "")).allowed;
  };
  EXPECT_TRUE(allowed(alice, "GET", "/apis/metrics.k8s.io/v1beta1/namespaces/team-a/pods"));
  EXPECT_TRUE(allowed(alice, "GET", "/apis/metrics/v1alpha1/namespaces/team-a/pods/web-1"));
  EXPECT_FALSE(allowed(alice, "GET", "/apis/metrics.k8s.io/v1beta1/namespaces/team-b/pods"));
  EXPECT_FALSE(allowed(alice, "GET", "/apis/metrics.k8s.io/v1beta1/pods"));  // cluster scope
  EXPECT_FALSE(allowed(alice, "GET", "/apis/metrics.k8s.io/v1beta1/nodes"));
  EXPECT_FALSE(allowed(alice, "GET", "/api/v1/namespaces/team-a/pods"));  // core group
  EXPECT_TRUE(allowed(alice, "GET", "/api"));
  EXPECT_TRUE(allowed(alice, "GET", "/apis/metrics.k8s.io/v1beta1"));
  EXPECT_FALSE(allowed(alice, "GET", "/sim/v1/faults"));
  EXPECT_FALSE(allowed(alice, "POST", "/api"));

  const UserInfo& agg = *users.Authenticate("agg-token");
  EXPECT_TRUE(allowed(agg, "GET", "/api/v1/nodes"));
  EXPECT_TRUE(allowed(agg, "GET", "/api/v1/namespaces/x/pods/p"));
  EXPECT_FALSE(allowed(agg, "DELETE", "/api/v1/nodes/node-0000"));
  EXPECT_TRUE(allowed(agg, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews"));

  const UserInfo& admin = *users.Authenticate("admin-token");
  EXPECT_TRUE(allowed(admin, "PUT", "/sim/v1/faults/node-0001"));
  const AccessDecision d = users.Authorize(admin.name, admin.groups, RequestInfo{});
  EXPECT_TRUE(d.allowed);
  EXPECT_NE(d.reason.find("system:masters"), std::string::npos);
}

TEST(UsersFileTest, SubresourcesResourceNamesAndUrlPrefixes) {
  absl::StatusOr<UsersFile> f = UsersFile::Parse(R"(users:
- {name: bob, token: b}
rules:
- users: [bob]
  verbs: ["*"]
  apiGroups: ["*"]
  resources: ["*/status", pods/log]
  resourceNames: [web-1]
- users: [bob]
  verbs: [get]
  nonResourceURLs: [/metrics, /debug/*]
)",
                                                 "f.yaml");
  ASSERT_TRUE(f.ok()) << f.status();
  auto allowed = [&](const char* method, const char* path) {
    return f->Authorize("bob", {}, ParseRequestInfo(method, path, "")).allowed;
  };
  EXPECT_TRUE(allowed("PUT", "/api/v1/namespaces/a/pods/web-1/status"));
  EXPECT_TRUE(allowed("GET", "/apis/apps/v1/namespaces/a/deployments/web-1/status"));
  EXPECT_TRUE(allowed("GET", "/api/v1/namespaces/a/pods/web-1/log"));
  EXPECT_FALSE(allowed("GET", "/api/v1/namespaces/a/pods/web-2/log"));
  EXPECT_FALSE(allowed("GET", "/api/v1/namespaces/a/pods/web-1"));
  EXPECT_TRUE(allowed("GET", "/metrics"));
  EXPECT_FALSE(allowed("GET", "/metrics/x"));
  EXPECT_TRUE(allowed("GET", "/debug/pprof/heap"));
  EXPECT_FALSE(allowed("POST", "/debug/pprof/heap"));
}

TEST(UsersFileTest, ForbiddenMessagesReadLikeKubeApiserver) {
  EXPECT_EQ(ForbiddenMessage("alice", ParseRequestInfo("GET", "/api/v1/nodes", "")),
            "User \"alice\" cannot list resource \"nodes\" in API group \"\" at the cluster scope");
  EXPECT_EQ(
      ForbiddenMessage("alice", ParseRequestInfo("GET", "/api/v1/namespaces/a/pods/p/log", "")),
      "User \"alice\" cannot get resource \"pods/log\" in API group \"\" in the namespace "
      "\"a\"");
  EXPECT_EQ(ForbiddenMessage("alice", ParseRequestInfo("GET", "/sim/v1/faults", "")),
            "User \"alice\" cannot get path \"/sim/v1/faults\"");
}

std::string_view Str(simdjson::dom::element e) { return std::string_view(e.get_string()); }

TEST(AccessReviewTest, TokenReviewAnswersWithTheUserOrAnError) {
  const UsersFile users = Users();
  absl::StatusOr<std::string> known = ReviewToken(
      R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"alice-token","audiences":["x"]}})",
      users);
  ASSERT_TRUE(known.ok()) << known.status();
  simdjson::dom::parser parser;
  simdjson::dom::element r = parser.parse(*known);
  EXPECT_EQ(Str(r["kind"]), "TokenReview");
  EXPECT_EQ(Str(r["apiVersion"]), "authentication.k8s.io/v1");
  EXPECT_TRUE(bool(r["status"]["authenticated"]));
  EXPECT_EQ(Str(r["status"]["user"]["username"]), "alice");
  EXPECT_EQ(Str(r["status"]["user"]["uid"]), "1001");
  EXPECT_EQ(Str(r["status"]["user"]["groups"].at(0)), "team-a");
  EXPECT_EQ(Str(r["status"]["user"]["groups"].at(1)), "system:authenticated");
  EXPECT_EQ(Str(r["status"]["user"]["extra"]["scopes"].at(0)), "read");
  EXPECT_EQ(Str(r["status"]["audiences"].at(0)), "x");

  absl::StatusOr<std::string> unknown = ReviewToken(R"({"spec":{"token":"nope"}})", users);
  ASSERT_TRUE(unknown.ok());
  simdjson::dom::parser parser2;
  simdjson::dom::element u = parser2.parse(*unknown);
  EXPECT_FALSE(bool(u["status"]["authenticated"]));
  EXPECT_FALSE(Str(u["status"]["error"]).empty());
  EXPECT_TRUE(u["status"]["user"]["username"].error() == simdjson::NO_SUCH_FIELD);

  for (const char* bad : {"", "[]", "{\"kind\":\"Pod\",\"spec\":{\"token\":\"x\"}}",
                          "{\"apiVersion\":\"v1\",\"spec\":{\"token\":\"x\"}}",
                          "{\"spec\":{\"token\":5}}", "{\"spec\":{}}"}) {
    absl::StatusOr<std::string> r2 = ReviewToken(bad, users);
    ASSERT_FALSE(r2.ok()) << bad;
    EXPECT_EQ(ApiError::FromStatus(r2.status()).code(), 400) << bad;
  }
}

bool SarAllowed(const UsersFile& users, const std::string& body) {
  absl::StatusOr<std::string> r = ReviewSubjectAccess(body, users);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return false;
  simdjson::dom::parser parser;
  simdjson::dom::element e = parser.parse(*r);
  EXPECT_EQ(Str(e["kind"]), "SubjectAccessReview");
  EXPECT_TRUE(e["status"]["denied"].error() == simdjson::NO_SUCH_FIELD);
  return bool(e["status"]["allowed"]);
}

TEST(AccessReviewTest, SubjectAccessReviewEvaluatesTheGivenUserAndGroups) {
  const UsersFile users = Users();
  auto pods = [](const char* ns) {
    return std::string(R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",)"
                       R"("spec":{"user":"alice","resourceAttributes":{"namespace":")") +
           ns +
           R"(","verb":"list","group":"metrics.k8s.io","version":"v1beta1","resource":"pods"}}})";
  };
  EXPECT_TRUE(SarAllowed(users, pods("team-a")));
  EXPECT_FALSE(SarAllowed(users, pods("team-b")));
  EXPECT_FALSE(SarAllowed(
      users,
      R"({"spec":{"user":"alice","resourceAttributes":{"verb":"list","group":"metrics.k8s.io","resource":"nodes"}}})"));
  // Groups are taken as given: alice without system:authenticated has no discovery grant.
  EXPECT_FALSE(SarAllowed(
      users, R"({"spec":{"user":"alice","nonResourceAttributes":{"path":"/apis","verb":"get"}}})"));
  EXPECT_TRUE(SarAllowed(
      users,
      R"({"spec":{"user":"alice","groups":["system:authenticated"],"nonResourceAttributes":{"path":"/apis/metrics.k8s.io","verb":"get"}}})"));
  EXPECT_TRUE(SarAllowed(
      users,
      R"({"spec":{"groups":["kubestat:aggregators"],"resourceAttributes":{"verb":"watch","resource":"pods"}}})"));

  absl::StatusOr<std::string> allowed = ReviewSubjectAccess(pods("team-a"), users);
  ASSERT_TRUE(allowed.ok());
  EXPECT_NE(allowed->find("\"reason\":\"allowed by rules[2]"), std::string::npos) << *allowed;

  for (const char* invalid :
       {R"({"spec":{"user":"alice"}})", R"({"spec":{"resourceAttributes":{"verb":"get"}}})",
        R"({"spec":{"user":"a","resourceAttributes":{},"nonResourceAttributes":{}}})"}) {
    absl::StatusOr<std::string> r = ReviewSubjectAccess(invalid, users);
    ASSERT_FALSE(r.ok()) << invalid;
    const ApiError e = ApiError::FromStatus(r.status());
    EXPECT_EQ(e.code(), 422) << invalid;
    EXPECT_EQ(e.reason(), StatusReason::kInvalid);
  }
  EXPECT_EQ(ApiError::FromStatus(ReviewSubjectAccess("{", users).status()).code(), 400);
}

}  // namespace
}  // namespace kubestat::sim
