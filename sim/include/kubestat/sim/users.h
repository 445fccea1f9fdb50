// The fake kube-apiserver's users file (--users-file): who may call it, with which bearer
// token, and what each may do (RBAC-like rules that only allow).
//
// Format (YAML; unknown keys, wrong types and duplicates are errors):
//
//   users:                          # at least one
//   - name: admin                   # required, unique
//     uid: "1"                      # optional
//     token: admin-token            # required, unique: "Authorization: Bearer admin-token"
//     groups: [system:masters]      # optional
//     extra: {scopes: [read]}       # optional: sent to a proxied backend as X-Remote-Extra-*
//   rules:                          # optional; each rule allows, none denies
//   - users: [alice]                # the rule applies to these users and/or
//     groups: [kubestat:readers]    # members of these groups (at least one of the two)
//     verbs: [get, list, watch]     # required; "*" is every verb
//     apiGroups: ["", metrics.k8s.io]  # resource rules: "" is the core group, "*" any
//     resources: [pods, pods/log]   # "*" any; "*/status" any resource's subresource
//     resourceNames: [web-1]        # optional: only these object names
//     namespaces: [team-a]          # optional: only in these namespaces (never cluster scope)
//   - groups: [system:authenticated]
//     nonResourceURLs: [/api, /api/*, /apis, /apis/*]   # "*" at the end is a prefix match
//     verbs: [get]
//
// A rule has either resources (with apiGroups) or nonResourceURLs. Every authenticated
// user is also in group "system:authenticated"; members of "system:masters" may do
// everything, as in Kubernetes. Names, groups, uids, tokens and extra values may not hold
// control characters; tokens may not hold spaces.
//
// Values; thread-safe for concurrent const use.
#ifndef KUBESTAT_SIM_USERS_H_
#define KUBESTAT_SIM_USERS_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kubestat/sim/request_info.h"

namespace kubestat::sim {

inline constexpr std::string_view kAuthenticatedGroup = "system:authenticated";
inline constexpr std::string_view kMastersGroup = "system:masters";

// Who made a request (user.Info).
struct UserInfo {
  std::string name;
  std::string uid;  // may be empty
  // As listed in the file, then "system:authenticated" when not listed already.
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;

  bool operator==(const UserInfo&) const = default;
};

struct UserEntry {
  UserInfo info;
  std::string token;
};

// One rule of the file (PolicyRule plus its subjects).
struct AccessRule {
  std::vector<std::string> users;
  std::vector<std::string> groups;
  std::vector<std::string> verbs;
  std::vector<std::string> api_groups;
  std::vector<std::string> resources;
  std::vector<std::string> resource_names;
  std::vector<std::string> namespaces;
  std::vector<std::string> non_resource_urls;
  int line = 0;  // 1-based line of the rule in the file, for reasons
};

struct AccessDecision {
  bool allowed = false;
  // Why it was allowed ("allowed by rules[2] (line 14)", "user is in system:masters"),
  // or "" when no rule allows it.
  std::string reason;
};

class UsersFile {
 public:
  // Parses `yaml`; errors are InvalidArgument "<source>:<line>: <where>: <what>", e.g.
  //   /etc/sim/users.yaml:7: users[1].token: duplicate token (also users[0])
  [[nodiscard]] static absl::StatusOr<UsersFile> Parse(std::string_view yaml,
                                                       std::string_view source);
  // Reads and parses the file at `path` (errors name it).
  [[nodiscard]] static absl::StatusOr<UsersFile> Load(const std::string& path);

  // The user holding `token`, or nullptr (the pointer is valid as long as this object).
  const UserInfo* Authenticate(std::string_view token) const;

  // Whether a subject with `user` name and `groups` (as given: nothing is added) may do
  // what `request` describes.
  AccessDecision Authorize(std::string_view user, const std::vector<std::string>& groups,
                           const RequestInfo& request) const;

  // Users in file order (with their tokens, for kubeconfigs). Never empty.
  const std::vector<UserEntry>& users() const { return users_; }
  const std::vector<AccessRule>& rules() const { return rules_; }
  // The user called `name`, or nullptr.
  const UserEntry* Find(std::string_view name) const;

 private:
  std::vector<UserEntry> users_;
  std::vector<AccessRule> rules_;
  std::map<std::string, size_t, std::less<>> by_token_;
};

// kube-apiserver's message for a denied request, e.g.
//   User "alice" cannot list resource "nodes" in API group "" at the cluster scope
//   User "alice" cannot get resource "pods/log" in API group "" in the namespace "a"
//   User "alice" cannot get path "/sim/v1/faults"
std::string ForbiddenMessage(std::string_view user, const RequestInfo& request);

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_USERS_H_
