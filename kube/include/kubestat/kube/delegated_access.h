// DelegatedAccess: the authenticator and the authorizer that SecureServingOptions describe,
// with the review transports they delegate through (TokenReview to the API server of
// --authentication-kubeconfig, SubjectAccessReview to that of --authorization-kubeconfig;
// "in-cluster" for the service account's), and the front door made of them. When the flags
// leave the client CA or the front-proxy trust out, it reads them from the cluster's
// extension-apiserver-authentication ConfigMap and follows it (serving_options.h).
//
// Ownership: owns the transports, the authenticator and the authorizer; borrows the clock
// and the registry (optional), which must outlive it. Gates it makes borrow it.
// Thread-safety: the parts are safe to use from any thread once built.
#ifndef KUBESTAT_KUBE_DELEGATED_ACCESS_H_
#define KUBESTAT_KUBE_DELEGATED_ACCESS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/kube/access_gate.h"
#include "kubestat/kube/api_review_transport.h"
#include "kubestat/kube/authenticator.h"
#include "kubestat/kube/authorizer.h"
#include "kubestat/kube/extension_authentication.h"
#include "kubestat/kube/kubeconfig.h"
#include "kubestat/kube/serving_options.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::kube {

class DelegatedAccess {
 public:
  // Errors name the flag: a kubeconfig that cannot be loaded, a token or rules file that
  // cannot be read.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<DelegatedAccess>> Create(
      const SecureServingOptions& options, const Clock& clock,
      prometheus::Registry* registry = nullptr);

  Authenticator* authenticator() const { return authenticator_.get(); }
  Authorizer* authorizer() const { return authorizer_.get(); }
  // A front door with --authorization-always-allow-paths; `server_name` names it in logs.
  AccessGate Gate(std::string server_name) const;

 private:
  DelegatedAccess() = default;
  // Reads and follows what SecureServingOptions::ExtensionLookup names, if anything, from
  // the API server of --authentication-kubeconfig (`api`).
  [[nodiscard]] absl::Status FollowClusterTrust(const SecureServingOptions& options,
                                                const KubeApiConfig& api, const Clock& clock,
                                                prometheus::Registry* registry);

  std::vector<std::string> always_allow_paths_;
  std::unique_ptr<ApiReviewTransport> authentication_transport_;
  std::unique_ptr<ApiReviewTransport> authorization_transport_;
  std::unique_ptr<Authenticator> authenticator_;
  std::unique_ptr<Authorizer> authorizer_;
  // Declared last: stopped first, while the authenticator it updates still exists.
  std::unique_ptr<ExtensionAuthenticationFollower> cluster_trust_;
};

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_DELEGATED_ACCESS_H_
