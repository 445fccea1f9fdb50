// Authorization of an authenticated request: may this user do this?
//
// The chain, first definite answer wins:
//   1. always-allow paths (--authorization-always-allow-paths, kube's path authorizer):
//      non-resource requests whose path equals an entry, or starts with an entry's prefix
//      when the entry ends in '*' ("/debug/*" allows "/debug/pprof"; a leading '/' is
//      optional on both sides; "/" alone matches only "/"). Resource requests are never
//      allowed here. A '*' anywhere but at the end is a configuration error.
//   2. the local rules file, if configured (access_rules.h): allow or no opinion;
//   3. SubjectAccessReview, if enabled (subject_access_review.h): allow, deny or no opinion;
//      a failed review denies, with error set.
// When no one had an opinion the request is denied (403) with source kDefault.
//
// Metrics (with a registry): kubestat_authorization_decisions_total{decision,source},
// decision one of allow, deny, error (a review that failed); source one of
// always_allow_path, rules_file, subject_access_review, default. Every label pair exists
// from the start. The reviewer adds its cache counter.
//
// Thread-safe: Authorize may be called from many threads at once.
#ifndef KUBESTAT_KUBE_AUTHORIZER_H_
#define KUBESTAT_KUBE_AUTHORIZER_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/apimachinery/api_error.h"
#include "kubestat/core/clock.h"
#include "kubestat/kube/access_rules.h"
#include "kubestat/kube/authorization_decision.h"
#include "kubestat/kube/request_attributes.h"
#include "kubestat/kube/review_transport.h"
#include "kubestat/kube/subject_access_review.h"
#include "kubestat/kube/user_info.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::kube {

struct AuthorizerOptions {
  // --authorization-always-allow-paths. Default: {"/healthz", "/livez", "/readyz"}
  std::vector<std::string> always_allow_paths = {"/healthz", "/livez", "/readyz"};
  // A rules file (access_rules.h), read once at Create; "" for none. Default: ""
  std::string rules_file;
  // Ask the Kubernetes API with SubjectAccessReview (--authorization-kubeconfig given);
  // needs a transport. Default: false
  bool subject_access_review = false;
  SubjectAccessReviewOptions subject_access_review_options;

  // InvalidArgument naming the flag (--authorization-always-allow-paths with a '*' not at
  // the end, --authorization-webhook-cache-*-ttl < 0, …).
  [[nodiscard]] absl::Status Validate() const;
};

enum class DecisionSource { kAlwaysAllowPath, kRulesFile, kSubjectAccessReview, kDefault };
// "always_allow_path", "rules_file", "subject_access_review", "default".
std::string_view DecisionSourceName(DecisionSource source);

struct AuthorizationResult {
  bool allowed = false;
  DecisionSource source = DecisionSource::kDefault;
  std::string reason;
  // The denial comes from a review that failed.
  bool error = false;
};

class Authorizer {
 public:
  // Validates `options`, loads the rules file (errors name it) and builds the chain.
  // `transport` may be null unless options.subject_access_review (InvalidArgument
  // otherwise). `clock`, `transport` and `registry` (optional) must outlive the authorizer.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Authorizer>> Create(
      const AuthorizerOptions& options, const Clock& clock, KubeReviewTransport* transport,
      prometheus::Registry* registry = nullptr);
  // The same with rules already loaded (options.rules_file is then ignored).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Authorizer>> Create(
      const AuthorizerOptions& options, std::optional<AccessRules> rules, const Clock& clock,
      KubeReviewTransport* transport, prometheus::Registry* registry = nullptr);
  ~Authorizer();
  Authorizer(const Authorizer&) = delete;
  Authorizer& operator=(const Authorizer&) = delete;

  AuthorizationResult Authorize(const UserInfo& user, const RequestAttributes& request);

 private:
  struct Parts;
  explicit Authorizer(std::unique_ptr<Parts> parts);
  AuthorizationResult Decide(const UserInfo& user, const RequestAttributes& request);

  std::unique_ptr<Parts> parts_;
};

// The 403 kube-apiserver sends for a denied request, e.g.
//   pods.metrics.k8s.io "p" is forbidden: User "alice" cannot get resource "pods" in API
//   group "metrics.k8s.io" in the namespace "team-b": <reason>
// (": <reason>" only when `reason` is not empty; "at the cluster scope" without a namespace;
// `User "alice" cannot get path "/metrics"` for non-resource requests).
ApiError ForbiddenError(const UserInfo& user, const RequestAttributes& request,
                        std::string_view reason);

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_AUTHORIZER_H_
