// Authentication of an incoming request: who sent it.
//
// Methods, each switched by its options, are tried in this order; the first that
// establishes an identity wins:
//   1. front-proxy request headers (front_proxy.h): only on connections whose client
//      certificate verified against the request-header CA with an allowed CN;
//   2. client certificate: a certificate that verified against the client CA bundle
//      (kClientCaBundle) names the user by its CN and the groups by its O values; an empty
//      CN is rejected. A certificate that did not verify against that bundle (and did not
//      carry front-proxy headers) is remembered as a rejection: it fails the request unless
//      a later method succeeds, as kube-apiserver's union of authenticators does;
//   3. bearer token, from `Authorization: Bearer <token>` (scheme in any case, one space,
//      then a non-empty token without spaces). Another scheme (e.g. Basic) is not a
//      credential here; a Bearer header that breaks this form is rejected. The token is
//      looked up in the token file (token_file.h), then, if unknown there, reviewed by a
//      TokenReview (token_review.h). A token neither knows is rejected.
//
// Outcomes:
//   kAuthenticated  `user` and `method` are set; "system:authenticated" is added to the
//                   groups unless present (as kube-apiserver does).
//   kNoCredentials  nothing identified the request and anonymous requests are off; the
//                   caller answers 401.
//   kRejected       credentials were presented and are not valid (unknown token, untrusted
//                   certificate, malformed Bearer header): 401.
//   kError          a TokenReview could not be made or read: 401; `reason` says why.
// With `anonymous` on, a request without any credentials is authenticated as
// "system:anonymous" in group "system:unauthenticated" (method kAnonymous); rejected and
// failed credentials are never downgraded to anonymous.
//
// `reason` never contains a token; callers should still send clients only "Unauthorized"
// (ApiError::Unauthorized) and log the reason.
//
// Metrics (with a registry): kubestat_authentication_attempts_total{method,result}, method
// one of front_proxy, client_certificate, token_file, token_review, anonymous, none; result
// one of authenticated, no_credentials, rejected, error. Every label pair exists from the
// start. The token reviewer adds its cache counter (token_review.h).
//
// Thread-safe: Authenticate may be called from many threads at once.
#ifndef KUBESTAT_KUBE_AUTHENTICATOR_H_
#define KUBESTAT_KUBE_AUTHENTICATOR_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/kube/front_proxy.h"
#include "kubestat/kube/request_credentials.h"
#include "kubestat/kube/review_transport.h"
#include "kubestat/kube/token_review.h"
#include "kubestat/kube/user_info.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::kube {

struct AuthenticatorOptions {
  FrontProxyOptions front_proxy;
  // Authenticate by client certificates (set when --client-ca-file is given). Default: false
  bool client_certificates = false;
  // The CA bundle user certificates must verify against. Default: "client-ca"
  std::string client_ca_bundle = std::string(kClientCaBundle);
  // --token-auth-file: static tokens (token_file.h); "" for none. Default: ""
  std::string token_auth_file;
  // How often the token file is checked for changes. Default: 1s
  Duration token_auth_file_check_interval = std::chrono::seconds(1);
  // Review unknown bearer tokens with TokenReview (--authentication-kubeconfig given);
  // needs a transport. Default: false
  bool token_review = false;
  TokenReviewOptions token_review_options;
  // --anonymous-auth: requests without credentials are system:anonymous. Default: false
  bool anonymous = false;

  // InvalidArgument naming the flag (--client-ca-file's bundle name empty,
  // --requestheader-* problems, --authentication-token-webhook-cache-ttl < 0, …).
  [[nodiscard]] absl::Status Validate() const;
};

enum class AuthenticationMethod {
  kNone,
  kFrontProxy,
  kClientCertificate,
  kTokenFile,
  kTokenReview,
  kAnonymous,
};
// "front_proxy", "client_certificate", "token_file", "token_review", "anonymous", "none".
std::string_view AuthenticationMethodName(AuthenticationMethod method);

enum class AuthenticationOutcome { kAuthenticated, kNoCredentials, kRejected, kError };
// "authenticated", "no_credentials", "rejected", "error".
std::string_view AuthenticationOutcomeName(AuthenticationOutcome outcome);

struct AuthenticationResult {
  AuthenticationOutcome outcome = AuthenticationOutcome::kNoCredentials;
  // The method that decided (kNone for kNoCredentials).
  AuthenticationMethod method = AuthenticationMethod::kNone;
  UserInfo user;       // kAuthenticated only
  std::string reason;  // kRejected / kError: why, without secrets

  bool authenticated() const { return outcome == AuthenticationOutcome::kAuthenticated; }
};

class Authenticator {
 public:
  // Validates `options`, opens the token file (errors name it) and builds the chain.
  // `transport` may be null unless options.token_review (InvalidArgument otherwise).
  // `clock`, `transport` and `registry` (optional) must outlive the authenticator.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Authenticator>> Create(
      AuthenticatorOptions options, const Clock& clock, KubeReviewTransport* transport,
      prometheus::Registry* registry = nullptr);
  ~Authenticator();
  Authenticator(const Authenticator&) = delete;
  Authenticator& operator=(const Authenticator&) = delete;

  AuthenticationResult Authenticate(const RequestCredentials& credentials);

  // Replaces the front-proxy options and whether client certificates authenticate (the
  // trust a cluster publishes and may change: extension_authentication.h), for the requests
  // that start after it returns. InvalidArgument (and nothing changes) when `front_proxy`
  // does not validate.
  [[nodiscard]] absl::Status SetClusterTrust(FrontProxyOptions front_proxy,
                                             bool client_certificates);

 private:
  struct Parts;
  explicit Authenticator(std::unique_ptr<Parts> parts);
  AuthenticationResult Decide(const RequestCredentials& credentials);

  std::unique_ptr<Parts> parts_;
};

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_AUTHENTICATOR_H_
