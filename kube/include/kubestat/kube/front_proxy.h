// Front-proxy (request-header) authentication, as kube-apiserver's --requestheader-* flags:
// an authenticating proxy (the kube-apiserver aggregation layer) tells the identity of the
// user it forwards in headers:
//   X-Remote-User: alice
//   X-Remote-Group: team-a            (repeated for each group)
//   X-Remote-Extra-Scopes: view       (key "scopes"; repeated for several values)
//
// The headers are believed only on a connection whose client certificate verified against
// the request-header CA bundle (kRequestHeaderCaBundle) and, when `allowed_names` is not
// empty, whose CN is one of them. On any other connection they are ignored entirely: the
// result is kNotApplicable, whatever the headers say.
//
// On a qualifying connection: the user is the first non-empty value among
// `username_headers` (in the order given); without one the method has no opinion
// (kNotApplicable). The uid is the first non-empty value among `uid_headers`. Groups are
// every value of every `group_headers` header, in order (values are not split on commas,
// as upstream). Extra: for each header starting with an `extra_headers_prefixes` entry (any
// case), the key is the rest of the name lowercased, then percent-decoded (kept as is if it
// does not decode), and each value of the header is appended.
//
// Callers that pass the request on to another server must remove these headers first.
// Pure function; thread-safe.
#ifndef KUBESTAT_KUBE_FRONT_PROXY_H_
#define KUBESTAT_KUBE_FRONT_PROXY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/kube/request_credentials.h"
#include "kubestat/kube/user_info.h"

namespace kubestat::kube {

struct FrontProxyOptions {
  // Believe front-proxy headers at all (set when --requestheader-client-ca-file is given).
  // Default: false
  bool enabled = false;
  // The CA bundle a proxy's certificate must verify against. Default: "requestheader-client-ca"
  std::string ca_bundle = std::string(kRequestHeaderCaBundle);
  // --requestheader-allowed-names: CNs allowed; empty allows any CN the CA signed.
  // Default: empty
  std::vector<std::string> allowed_names;
  // --requestheader-username-headers. Default: {"X-Remote-User"}
  std::vector<std::string> username_headers = {"X-Remote-User"};
  // --requestheader-uid-headers. Default: empty
  std::vector<std::string> uid_headers;
  // --requestheader-group-headers. Default: {"X-Remote-Group"}
  std::vector<std::string> group_headers = {"X-Remote-Group"};
  // --requestheader-extra-headers-prefix. Default: {"X-Remote-Extra-"}
  std::vector<std::string> extra_headers_prefixes = {"X-Remote-Extra-"};

  // When enabled: InvalidArgument if --requestheader-username-headers is empty or holds an
  // empty name, or the CA bundle name is empty.
  [[nodiscard]] absl::Status Validate() const;
};

enum class FrontProxyOutcome {
  kNotApplicable,  // disabled, connection does not qualify, or no username header
  kAuthenticated,  // `user` is set
};

struct FrontProxyResult {
  FrontProxyOutcome outcome = FrontProxyOutcome::kNotApplicable;
  UserInfo user;
};

FrontProxyResult AuthenticateFrontProxy(const FrontProxyOptions& options,
                                        const RequestCredentials& credentials);

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_FRONT_PROXY_H_
