// Who a request comes from: the identity an Authenticator establishes and an Authorizer
// judges (k8s.io/apiserver/pkg/authentication/user.Info).
//
// `name` is the user name ("alice", "system:serviceaccount:ns:sa"); `uid` may be empty;
// `groups` keeps the order the source gave; `extra` holds the authenticator's additional
// attributes (e.g. "authentication.kubernetes.io/pod-name"), keys lowercase as Kubernetes
// stores them. A value type; thread-compatible.
#ifndef KUBESTAT_KUBE_USER_INFO_H_
#define KUBESTAT_KUBE_USER_INFO_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kubestat::kube {

// The user and group Kubernetes gives a request without credentials when anonymous
// requests are allowed.
inline constexpr std::string_view kAnonymousUser = "system:anonymous";
inline constexpr std::string_view kUnauthenticatedGroup = "system:unauthenticated";
// The group Kubernetes adds to every authenticated (non-anonymous) user.
inline constexpr std::string_view kAuthenticatedGroup = "system:authenticated";

struct UserInfo {
  std::string name;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;

  bool HasGroup(std::string_view group) const;
  bool operator==(const UserInfo&) const = default;
};

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_USER_INFO_H_
