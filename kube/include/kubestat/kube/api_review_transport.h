// kube::ApiReviewTransport: the KubeReviewTransport (review_transport.h) that POSTs
// TokenReview and SubjectAccessReview objects to the Kubernetes API server a KubeApiConfig
// describes (kubeconfig.h), over kubestat::http::Client (http/client.h).
//
//   absl::StatusOr<KubeApiConfig> config = LoadKubeconfig(flags.authentication_kubeconfig);
//   absl::StatusOr<std::unique_ptr<ApiReviewTransport>> transport =
//       ApiReviewTransport::Create(*config, clock);
//   TokenReviewer reviewer(options, **transport, clock);
//
// Each Create(path, body) is one POST of `body` to `path` with `Content-Type:
// application/json` and `Accept: application/json`, authenticated with the config's client
// certificate and/or bearer token (token_file is re-read when it changes, bearer_token.h),
// and trusting the config's CA (or any server with insecure_skip_tls_verify). The whole
// exchange is bounded by `timeout`, measured on the injected clock; the answer's body is
// capped at kMaxReviewResponseBytes (token_review.h).
//
// Outcomes:
//   2xx (the API server answers 201 Created, some proxies 200) -> the response body
//   401 -> Unauthenticated      403 -> PermissionDenied
//   429 and 5xx -> Unavailable (retrying may help)
//   any other code -> FailedPrecondition
//   no complete answer (connection refused, TLS failure, timeout, a body over the cap), or
//   the token file cannot be read -> Unavailable
// The message of a non-2xx error holds the method and path, the code and the start (at
// most 200 bytes, control bytes as spaces) of the answer's Status `message`, e.g.
//   POST /apis/authentication.k8s.io/v1/tokenreviews: HTTP 401: Unauthorized
// Neither the bearer token nor the token under review (spec.token of the request body) ever
// appears in a message: both are replaced by "[redacted]" before the message is cut.
//
// Ownership: the transport borrows the clock, which must outlive it. Thread-safety: Create
// may be called from many threads at once (the HTTP client keeps connections alive and
// shares them).
#ifndef KUBESTAT_KUBE_API_REVIEW_TRANSPORT_H_
#define KUBESTAT_KUBE_API_REVIEW_TRANSPORT_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/kube/kubeconfig.h"
#include "kubestat/kube/review_transport.h"

namespace kubestat::http {
class Client;
}  // namespace kubestat::http

namespace kubestat::kube {

class BearerTokenFile;

class ApiReviewTransport final : public KubeReviewTransport {
 public:
  // Builds the transport for `config`; no connection is made yet. InvalidArgument naming
  // the field for an unusable config: no server or one that is not an http(s) URL, CA or
  // client certificate PEM that does not load, a certificate without its key, both token
  // and token_file set, a timeout that is not positive.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ApiReviewTransport>> Create(
      const KubeApiConfig& config, const Clock& clock, Duration timeout = std::chrono::seconds(10));
  ~ApiReviewTransport() override;

  // POSTs `body` to `path` (which starts with '/'); see the file comment for the outcomes.
  [[nodiscard]] absl::StatusOr<std::string> Create(std::string_view path,
                                                   std::string body) override;

 private:
  ApiReviewTransport(std::unique_ptr<http::Client> client,
                     std::shared_ptr<BearerTokenFile> token_file);

  // `message` with the bearer token and the reviewed token of `body` redacted.
  std::string Redacted(std::string message, std::string_view body) const;

  const std::unique_ptr<http::Client> client_;
  const std::shared_ptr<BearerTokenFile> token_file_;  // null without token_file
};

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_API_REVIEW_TRANSPORT_H_
