// AccessGate: the front door every kubestat server puts before its routes, as a delegating
// Kubernetes API server does. For each request (kubestat::http::Request), in this order:
//   1. A path in always_allow_paths (exact, or a prefix ending in '*') passes at once,
//      without credentials: the kubelet's probes send none.
//   2. The authenticator names the user (front-proxy headers from a proxy whose client
//      certificate chains to the request-header CA, client certificates, bearer tokens; see
//      authenticator.h). Without an identity: a 401 Status "Unauthorized" (why is logged at
//      verbosity 1 with the server's name, never a credential).
//   3. The request's attributes are derived as kube-apiserver derives them
//      (request_attributes.h); a path that cannot be read is a 400 Status.
//   4. The authorizer decides; denied: a 403 Status in kube-apiserver's words
//      (ForbiddenError).
// What passes carries the user and the attributes for the route to use.
//
// Ownership: borrows the authenticator and the authorizer, which must outlive the gate.
// Thread-safety: Check() is const and safe from any thread when they are.
#ifndef KUBESTAT_KUBE_ACCESS_GATE_H_
#define KUBESTAT_KUBE_ACCESS_GATE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/http/server.h"
#include "kubestat/kube/authenticator.h"
#include "kubestat/kube/authorizer.h"
#include "kubestat/kube/request_attributes.h"
#include "kubestat/kube/user_info.h"

namespace kubestat::kube {

// Whether `path` is one of `patterns` (exact, or a prefix ending in '*').
bool PathMatches(const std::vector<std::string>& patterns, std::string_view path);

// OK when every path starts with '/'; otherwise InvalidArgument "<what>: \"<path>\" does not
// start with '/'".
[[nodiscard]] absl::Status ValidateAlwaysAllowPaths(const std::vector<std::string>& paths,
                                                    std::string_view what);

struct AccessDecision {
  // Set when the request is refused: the 400, 401 or 403 answer to send.
  std::optional<http::Response> refusal;
  // The path is always allowed: no user and no attributes were derived.
  bool always_allowed = false;
  // Otherwise, who asked and for what.
  UserInfo user;
  RequestAttributes attributes;
};

class AccessGate {
 public:
  // `server_name` names the server in logs ("REST", "apiserver").
  AccessGate(std::string server_name, std::vector<std::string> always_allow_paths,
             Authenticator* authenticator, Authorizer* authorizer);

  // InvalidArgument when an authenticator or authorizer is missing, or a path does not
  // start with '/'.
  [[nodiscard]] absl::Status Validate() const;

  AccessDecision Check(const http::Request& request) const;

 private:
  std::string server_name_;
  std::vector<std::string> always_allow_paths_;
  Authenticator* authenticator_;
  Authorizer* authorizer_;
};

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_ACCESS_GATE_H_
