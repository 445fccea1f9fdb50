#include "kubestat/kube/access_rules.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "kubestat/testing/temp_dir.h"

namespace kubestat::kube {
namespace {

constexpr char kRules[] = R"(
rules:
- users: [alice]
  verbs: [get, list, watch]
  apiGroups: [metrics.k8s.io, metrics]
  resources: [pods]
  namespaces: [team-a]
- groups: [system:monitoring]
  nonResourceURLs: [/metrics, /debug/*]
  verbs: [get]
- groups: [cluster-viewers]
  verbs: [get, list, watch]
  apiGroups: ["*"]
  resources: [nodes, pods]
- users: [kubestat-bridge]
  verbs: [create, update, delete]
  apiGroups: [metrics.k8s.io]
  resources: [nodes, pods]
- users: ["*"]
  verbs: [get]
  apiGroups: [""]
  resources: [pods/status, "*/scale"]
  resourceNames: [web-1]
  namespaces: ["*"]
)";

RequestAttributes Res(std::string verb, std::string group, std::string ns, std::string resource,
                      std::string name = "", std::string subresource = "") {
  RequestAttributes a;
  a.resource_request = true;
  a.verb = std::move(verb);
  a.api_group = std::move(group);
  a.api_version = "v1beta1";
  a.namespace_name = std::move(ns);
  a.resource = std::move(resource);
  a.name = std::move(name);
  a.subresource = std::move(subresource);
  return a;
}

RequestAttributes NonRes(std::string verb, std::string path) {
  RequestAttributes a;
  a.verb = std::move(verb);
  a.path = std::move(path);
  return a;
}

UserInfo User(std::string name, std::vector<std::string> groups = {}) {
  return UserInfo{std::move(name), "", std::move(groups), {}};
}

class AccessRulesTest : public ::testing::Test {
 protected:
  AccessRulesTest() {
    absl::StatusOr<AccessRules> parsed = AccessRules::Parse(kRules, "rules.yaml");
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    if (parsed.ok()) rules_ = std::move(*parsed);
  }
  Decision Eval(const UserInfo& user, const RequestAttributes& request) {
    return rules_->Evaluate(user, request).decision;
  }
  std::optional<AccessRules> rules_;
};

TEST_F(AccessRulesTest, NamespaceScopedGrantCoversOnlyThatNamespace) {
  const UserInfo alice = User("alice");
  EXPECT_EQ(Eval(alice, Res("list", "metrics.k8s.io", "team-a", "pods")), Decision::kAllow);
  EXPECT_EQ(Eval(alice, Res("get", "metrics", "team-a", "pods", "p")), Decision::kAllow);
  EXPECT_EQ(Eval(alice, Res("list", "metrics.k8s.io", "team-b", "pods")), Decision::kNoOpinion);
  EXPECT_EQ(Eval(alice, Res("list", "metrics.k8s.io", "", "pods")), Decision::kNoOpinion);
  EXPECT_EQ(Eval(alice, Res("list", "metrics.k8s.io", "", "nodes")), Decision::kNoOpinion);
  EXPECT_EQ(Eval(alice, Res("create", "metrics.k8s.io", "team-a", "pods")), Decision::kNoOpinion);
  EXPECT_EQ(Eval(alice, Res("list", "apps", "team-a", "pods")), Decision::kNoOpinion);
  EXPECT_EQ(rules_->Evaluate(alice, Res("list", "metrics.k8s.io", "team-a", "pods")).reason,
            "allowed by rule 0 of rules.yaml");
}

TEST_F(AccessRulesTest, GroupsAndWildcardsMatch) {
  const UserInfo viewer = User("v", {"team-x", "cluster-viewers"});
  EXPECT_EQ(Eval(viewer, Res("list", "metrics.k8s.io", "", "nodes")), Decision::kAllow);
  EXPECT_EQ(Eval(viewer, Res("watch", "anything", "ns", "pods")), Decision::kAllow);
  EXPECT_EQ(Eval(viewer, Res("delete", "metrics.k8s.io", "", "nodes", "n1")), Decision::kNoOpinion);
  EXPECT_EQ(Eval(viewer, Res("get", "metrics.k8s.io", "ns", "pods", "p", "status")),
            Decision::kNoOpinion);
}

TEST_F(AccessRulesTest, PushingIsAVerbOfItsOwn) {
  const UserInfo bridge = User("kubestat-bridge");
  EXPECT_EQ(Eval(bridge, Res("update", "metrics.k8s.io", "ns", "pods", "p")), Decision::kAllow);
  EXPECT_EQ(Eval(bridge, Res("create", "metrics.k8s.io", "", "nodes")), Decision::kAllow);
  EXPECT_EQ(Eval(bridge, Res("delete", "metrics.k8s.io", "", "nodes", "n1")), Decision::kAllow);
  EXPECT_EQ(Eval(bridge, Res("list", "metrics.k8s.io", "", "nodes")), Decision::kNoOpinion);
  EXPECT_EQ(Eval(bridge, Res("patch", "metrics.k8s.io", "ns", "pods", "p")), Decision::kNoOpinion);
}

TEST_F(AccessRulesTest, SubresourcesAndResourceNames) {
  const UserInfo anyone = User("zed");
  EXPECT_EQ(Eval(anyone, Res("get", "", "ns", "pods", "web-1", "status")), Decision::kAllow);
  EXPECT_EQ(Eval(anyone, Res("get", "", "ns", "pods", "web-2", "status")), Decision::kNoOpinion);
  EXPECT_EQ(Eval(anyone, Res("get", "", "ns", "deployments", "web-1", "scale")), Decision::kAllow);
  EXPECT_EQ(Eval(anyone, Res("get", "", "ns", "pods", "web-1")), Decision::kNoOpinion);
}

TEST_F(AccessRulesTest, NonResourceUrls) {
  const UserInfo monitor = User("prom", {"system:monitoring"});
  EXPECT_EQ(Eval(monitor, NonRes("get", "/metrics")), Decision::kAllow);
  EXPECT_EQ(Eval(monitor, NonRes("get", "/debug/pprof/heap")), Decision::kAllow);
  EXPECT_EQ(Eval(monitor, NonRes("get", "/metricsx")), Decision::kNoOpinion);
  EXPECT_EQ(Eval(monitor, NonRes("post", "/metrics")), Decision::kNoOpinion);
  EXPECT_EQ(Eval(User("alice"), NonRes("get", "/metrics")), Decision::kNoOpinion);
  // A non-resource rule never grants a resource request and vice versa.
  EXPECT_EQ(Eval(monitor, Res("get", "", "", "metrics")), Decision::kNoOpinion);
  EXPECT_EQ(Eval(User("v", {"cluster-viewers"}), NonRes("get", "/pods")), Decision::kNoOpinion);
}

TEST(AccessRulesParseTest, ErrorsNameFileAndRule) {
  struct Case {
    std::string yaml;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"rules: [", "r.yaml: invalid YAML at line 1: end of sequence flow not found"},
           {"- a", "r.yaml: must be a mapping with a \"rules\" list"},
           {"rulez: []", "r.yaml: unknown key \"rulez\""},
           {"rules: {}", "r.yaml: \"rules\" must be a list"},
           {"rules:\n- users: [a]\n  verbs: [get]\n  nonResourceURLs: [/m]\n- users: [a]\n"
            "  verb: [get]\n",
            "r.yaml: rule 1: unknown key \"verb\""},
           {"rules:\n- users: [a]\n  verbs: []\n  nonResourceURLs: [/m]\n",
            "r.yaml: rule 0: verbs must not be empty"},
           {"rules:\n- users: [a]\n  nonResourceURLs: [/m]\n",
            "r.yaml: rule 0: verbs must not be empty"},
           {"rules:\n- users: [a]\n  verbs: [get]\n  apiGroups: [x]\n  resources: [pods]\n"
            "  nonResourceURLs: [/m]\n",
            "r.yaml: rule 0: has both resources and nonResourceURLs"},
           {"rules:\n- users: [a]\n  verbs: [get]\n",
            "r.yaml: rule 0: needs resources or nonResourceURLs"},
           {"rules:\n- verbs: [get]\n  nonResourceURLs: [/m]\n",
            "r.yaml: rule 0: names no users and no groups"},
           {"rules:\n- users: a\n  verbs: [get]\n  nonResourceURLs: [/m]\n",
            "r.yaml: rule 0: users must be a list of strings"},
           {"rules:\n- users: [[a]]\n  verbs: [get]\n  nonResourceURLs: [/m]\n",
            "r.yaml: rule 0: users must be a list of strings"},
           {"rules:\n- users: [a]\n  verbs: [get]\n  resources: [pods]\n",
            "r.yaml: rule 0: a resource rule needs apiGroups (\"\" for the core group)"},
           {"rules:\n- users: [a]\n  verbs: [get]\n  nonResourceURLs: [/m]\n  namespaces: [x]\n",
            "r.yaml: rule 0: a nonResourceURLs rule cannot have apiGroups, resourceNames or "
            "namespaces"},
           {"rules:\n- users: [a]\n  verbs: [get]\n  nonResourceURLs: [m]\n",
            "r.yaml: rule 0: nonResourceURL \"m\" must start with '/'"},
           {"rules:\n- users: [a]\n  verbs: [get]\n  nonResourceURLs: [/a/*/b]\n",
            "r.yaml: rule 0: nonResourceURL \"/a/*/b\" has a '*' before the end"},
           {"rules:\n- [a]\n", "r.yaml: rule 0: must be a mapping"},
       }) {
    absl::StatusOr<AccessRules> rules = AccessRules::Parse(c.yaml, "r.yaml");
    EXPECT_EQ(rules.status().code(), absl::StatusCode::kInvalidArgument) << c.yaml;
    EXPECT_EQ(rules.status().message(), c.message) << c.yaml;
  }
}

TEST(AccessRulesParseTest, EmptyRulesGrantNothing) {
  absl::StatusOr<AccessRules> rules = AccessRules::Parse("rules: []", "r.yaml");
  ASSERT_TRUE(rules.ok());
  EXPECT_EQ(rules->Evaluate(User("a"), NonRes("get", "/")).decision, Decision::kNoOpinion);
}

TEST(AccessRulesParseTest, LoadReadsAFile) {
  kubestat::testing::TempDir dir;
  const std::string path = dir.File("rules.yaml");
  EXPECT_EQ(AccessRules::Load(path).status().code(), absl::StatusCode::kNotFound);
  std::ofstream(path) << kRules;
  absl::StatusOr<AccessRules> rules = AccessRules::Load(path);
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_EQ(rules->rules().size(), 5u);
  EXPECT_EQ(rules->source(), path);
  EXPECT_EQ(rules->rules()[1].non_resource_urls,
            (std::vector<std::string>{"/metrics", "/debug/*"}));
}

}  // namespace
}  // namespace kubestat::kube
