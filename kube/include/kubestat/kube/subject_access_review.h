// Delegated authorization: a SubjectAccessReview (authorization.k8s.io/v1) sent to the
// Kubernetes API, answers cached.
//
// The request body for a resource request is
//   {"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{
//     "resourceAttributes":{"namespace":"ns","verb":"list","group":"metrics.k8s.io",
//                           "version":"v1beta1","resource":"pods","subresource":"s",
//                           "name":"n"},
//     "user":"alice","uid":"42","groups":["team-a","system:authenticated"],
//     "extra":{"key":["v1","v2"]}}}
// and for a non-resource request "nonResourceAttributes":{"path":"/metrics","verb":"get"}
// in place of resourceAttributes. Empty strings, empty groups and empty extra are left out
// (Go's omitempty); "verb" is always written. POSTed to kSubjectAccessReviewPath.
//
// ParseSubjectAccessReviewResponse reads status.allowed, status.denied, status.reason and
// status.evaluationError. The decision is kAllow when allowed, kDeny when denied, else
// kNoOpinion; the reason is status.reason, with status.evaluationError appended after
// "; " when present.
//
// SubjectAccessReviewer::Review caches answers by the SHA-256 of the request body:
// kAllow for `allowed_ttl`, kDeny and kNoOpinion for `denied_ttl` (errors are not cached),
// at most `max_cache_entries` (least recently used evicted); concurrent identical reviews
// are coalesced into one request. TTLs use the injected clock's MonotonicNow. A failed
// review gives kDeny with error = true and a reason naming the failure.
//
// Thread-safe; the transport is called without locks held.
#ifndef KUBESTAT_KUBE_SUBJECT_ACCESS_REVIEW_H_
#define KUBESTAT_KUBE_SUBJECT_ACCESS_REVIEW_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/kube/authorization_decision.h"
#include "kubestat/kube/request_attributes.h"
#include "kubestat/kube/review_transport.h"
#include "kubestat/kube/user_info.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::kube {

// The status of a SubjectAccessReview response.
struct SubjectAccessReviewStatus {
  bool allowed = false;
  bool denied = false;
  std::string reason;
  std::string evaluation_error;
  bool operator==(const SubjectAccessReviewStatus&) const = default;
};

// The request body (see the file comment). Deterministic: equal inputs give equal bytes.
std::string BuildSubjectAccessReviewRequest(const UserInfo& user, const RequestAttributes& request);

// Parses a response body. InvalidArgument (mentioning no content of the body) for invalid
// JSON, a body over kMaxReviewResponseBytes, a "kind" other than "SubjectAccessReview" or
// an "apiVersion" other than "authorization.k8s.io/v1" (each checked when present), a
// missing "status", a field of the wrong type (null reads as absent), or allowed and denied
// both true. Unknown fields are ignored. Thread-safe.
[[nodiscard]] absl::StatusOr<SubjectAccessReviewStatus> ParseSubjectAccessReviewResponse(
    std::string_view body);

// kAllow / kDeny / kNoOpinion with the reason as described in the file comment.
AuthorizerAnswer AnswerFromStatus(const SubjectAccessReviewStatus& status);

struct SubjectAccessReviewOptions {
  // --authorization-webhook-cache-authorized-ttl. Default: 10s
  Duration allowed_ttl = std::chrono::seconds(10);
  // --authorization-webhook-cache-unauthorized-ttl (denied and no-opinion answers).
  // Default: 10s
  Duration denied_ttl = std::chrono::seconds(10);
  // Cached answers kept at most; the least recently used is evicted. Default: 4096
  size_t max_cache_entries = 4096;

  // InvalidArgument naming the flag: TTLs >= 0, max_cache_entries > 0.
  [[nodiscard]] absl::Status Validate() const;
};

class SubjectAccessReviewer {
 public:
  // `transport` and `clock` (and `registry`, when not null) must outlive the reviewer.
  // With a registry, counts kubestat_subject_access_review_cache_lookups_total{result=
  // "hit|miss|coalesced"}. Call options.Validate() first.
  SubjectAccessReviewer(SubjectAccessReviewOptions options, KubeReviewTransport& transport,
                        const Clock& clock, prometheus::Registry* registry = nullptr);
  ~SubjectAccessReviewer();
  SubjectAccessReviewer(const SubjectAccessReviewer&) = delete;
  SubjectAccessReviewer& operator=(const SubjectAccessReviewer&) = delete;

  AuthorizerAnswer Review(const UserInfo& user, const RequestAttributes& request);

 private:
  struct State;
  AuthorizerAnswer Fetch(std::string body);

  const SubjectAccessReviewOptions options_;
  KubeReviewTransport& transport_;
  std::unique_ptr<State> state_;
};

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_SUBJECT_ACCESS_REVIEW_H_
