// Local authorization rules: a small, RBAC-like YAML file that grants requests.
//
//   rules:
//   - users: [alice]                  # who: any listed user or any listed group matches;
//     groups: [team-a]                #   "*" matches everyone (at least one of the two)
//     verbs: [get, list, watch]       # required, non-empty; "*" for any verb
//     apiGroups: [metrics.k8s.io, metrics]   # resource rules: required; "" is the core
//                                            #   group, "*" any group
//     resources: [pods]               # "pods", "nodes", "pods/status" (subresource),
//                                     #   "*", "*/status"
//     resourceNames: [web-1]          # optional: only these object names
//     namespaces: [team-a]            # optional: only requests in these namespaces;
//                                     #   omitted or containing "*": any namespace and
//                                     #   cluster-wide requests
//   - groups: [system:monitoring]
//     nonResourceURLs: [/metrics, /debug/*]  # non-resource rules: exact, or prefix with
//     verbs: [get]                           #   a trailing "*"; "*" alone matches all
//
// A rule is either a resource rule (apiGroups + resources) or a non-resource rule
// (nonResourceURLs), never both; a resource rule matches only resource requests and a
// non-resource rule only non-resource requests. A rule matches when the subject, the verb
// and the target all match. Rules only grant: a match gives kAllow ("allowed by rule N of
// <file>"), no match gives kNoOpinion, so the next authorizer (SubjectAccessReview) may
// still decide.
//
// Namespaces: a rule restricted to namespaces matches only requests inside one of them
// (e.g. `list pods` under /namespaces/team-a/). Requests without a namespace (nodes, or pods
// across all namespaces) need a rule without a namespace restriction, so a grant for pods
// in team-a never reveals the pods of other namespaces nor nodes (RBAC's Role versus
// ClusterRole). Pushing metrics is the verbs create, update, patch, delete of the resources
// nodes and pods, granted like any other verb.
//
// Validation is strict; each error is InvalidArgument naming the file and, for a rule,
// its index ("rules.yaml: rule 2: …"): unknown keys (top level or in a rule), a value that
// is not a list of strings, a rule with no users and no groups, empty verbs, a rule with
// both resources and nonResourceURLs or with neither, a resource rule without apiGroups, a
// non-resource rule with apiGroups, resourceNames or namespaces, a nonResourceURL not
// starting with '/' (other than "*"), or a '*' anywhere but at the end of one, or a missing
// or non-list `rules`. An empty `rules: []` is valid (grants nothing).
//
// AccessRules is immutable after loading; Evaluate is thread-safe.
#ifndef KUBESTAT_KUBE_ACCESS_RULES_H_
#define KUBESTAT_KUBE_ACCESS_RULES_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kubestat/kube/authorization_decision.h"
#include "kubestat/kube/request_attributes.h"
#include "kubestat/kube/user_info.h"

namespace kubestat::kube {

struct AccessRule {
  std::vector<std::string> users;
  std::vector<std::string> groups;
  std::vector<std::string> verbs;
  std::vector<std::string> api_groups;
  std::vector<std::string> resources;
  std::vector<std::string> resource_names;
  std::vector<std::string> namespaces;
  std::vector<std::string> non_resource_urls;

  bool Matches(const UserInfo& user, const RequestAttributes& request) const;
};

class AccessRules {
 public:
  // Parses YAML text; `source` names it in errors and reasons.
  [[nodiscard]] static absl::StatusOr<AccessRules> Parse(std::string_view yaml, std::string source);
  // Reads and parses `path`. NotFound / PermissionDenied naming the path when unreadable.
  [[nodiscard]] static absl::StatusOr<AccessRules> Load(const std::string& path);

  // kAllow naming the first matching rule, or kNoOpinion.
  AuthorizerAnswer Evaluate(const UserInfo& user, const RequestAttributes& request) const;

  const std::vector<AccessRule>& rules() const { return rules_; }
  const std::string& source() const { return source_; }

 private:
  AccessRules(std::vector<AccessRule> rules, std::string source)
      : rules_(std::move(rules)), source_(std::move(source)) {}

  std::vector<AccessRule> rules_;
  std::string source_;
};

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_ACCESS_RULES_H_
