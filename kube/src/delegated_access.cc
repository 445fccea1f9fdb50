#include "kubestat/kube/delegated_access.h"

#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/kube/kubeconfig.h"

namespace kubestat::kube {
namespace {

// The review transport to the API server `kubeconfig` names ("in-cluster": the service
// account's); errors name `flag`.
absl::StatusOr<std::unique_ptr<ApiReviewTransport>> ReviewTransport(const std::string& kubeconfig,
                                                                    std::string_view flag,
                                                                    const Clock& clock) {
  absl::StatusOr<KubeApiConfig> api =
      kubeconfig == "in-cluster" ? InClusterConfig() : LoadKubeconfig(kubeconfig);
  if (!api.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(AbslView(flag), ": ", api.status().message()));
  }
  return ApiReviewTransport::Create(*api, clock);
}

}  // namespace

absl::StatusOr<std::unique_ptr<DelegatedAccess>> DelegatedAccess::Create(
    const SecureServingOptions& options, const Clock& clock, prometheus::Registry* registry) {
  std::unique_ptr<DelegatedAccess> access(new DelegatedAccess());
  access->always_allow_paths_ = options.authorization_always_allow_paths;
  if (!options.authentication_kubeconfig.empty()) {
    absl::StatusOr<std::unique_ptr<ApiReviewTransport>> transport =
        ReviewTransport(options.authentication_kubeconfig, "--authentication-kubeconfig", clock);
    if (!transport.ok()) return transport.status();
    access->authentication_transport_ = *std::move(transport);
  }
  if (!options.authorization_kubeconfig.empty()) {
    absl::StatusOr<std::unique_ptr<ApiReviewTransport>> transport =
        ReviewTransport(options.authorization_kubeconfig, "--authorization-kubeconfig", clock);
    if (!transport.ok()) return transport.status();
    access->authorization_transport_ = *std::move(transport);
  }
  absl::StatusOr<std::unique_ptr<Authenticator>> authenticator = Authenticator::Create(
      options.AuthenticationOptions(), clock, access->authentication_transport_.get(), registry);
  if (!authenticator.ok()) return authenticator.status();
  access->authenticator_ = *std::move(authenticator);
  absl::StatusOr<std::unique_ptr<Authorizer>> authorizer = Authorizer::Create(
      options.AuthorizationOptions(), clock, access->authorization_transport_.get(), registry);
  if (!authorizer.ok()) return authorizer.status();
  access->authorizer_ = *std::move(authorizer);
  return access;
}

AccessGate DelegatedAccess::Gate(std::string server_name) const {
  return AccessGate(std::move(server_name), always_allow_paths_, authenticator_.get(),
                    authorizer_.get());
}

}  // namespace kubestat::kube
