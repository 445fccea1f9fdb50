// How delegated authentication and authorization reach the Kubernetes API: one POST of a
// review object (TokenReview, SubjectAccessReview), answered with the same kind carrying
// its status.
//
// Implementations send `body` (JSON) as a POST to `path` on the API server configured by
// --authentication-kubeconfig / --authorization-kubeconfig, with that config's credentials,
// and return the response body of a 2xx answer. Any other outcome (connection failure,
// timeout, non-2xx) is a non-OK Status whose message says what happened; it must not
// include the request body (a TokenReview body holds the token being reviewed).
//
// Create may be called from many threads at once and may block (the caller holds no lock
// while it runs); implementations must be thread-safe and bound their own deadline.
#ifndef KUBESTAT_KUBE_REVIEW_TRANSPORT_H_
#define KUBESTAT_KUBE_REVIEW_TRANSPORT_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kubestat::kube {

inline constexpr std::string_view kTokenReviewPath = "/apis/authentication.k8s.io/v1/tokenreviews";
inline constexpr std::string_view kSubjectAccessReviewPath =
    "/apis/authorization.k8s.io/v1/subjectaccessreviews";

class KubeReviewTransport {
 public:
  virtual ~KubeReviewTransport() = default;
  // POSTs `body` to `path`; the response body of a 2xx, an error otherwise.
  [[nodiscard]] virtual absl::StatusOr<std::string> Create(std::string_view path,
                                                           std::string body) = 0;
};

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_REVIEW_TRANSPORT_H_
