#include "kubestat/kube/delegated_access.h"

#include <optional>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/log.h"
#include "kubestat/kube/kubeconfig.h"

namespace kubestat::kube {
namespace {

// The API server `kubeconfig` names ("in-cluster": the service account's); errors name
// `flag`.
absl::StatusOr<KubeApiConfig> KubeApi(const std::string& kubeconfig, std::string_view flag) {
  absl::StatusOr<KubeApiConfig> api =
      kubeconfig == "in-cluster" ? InClusterConfig() : LoadKubeconfig(kubeconfig);
  if (!api.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(AbslView(flag), ": ", api.status().message()));
  }
  return api;
}

// The review transport to that API server.
absl::StatusOr<std::unique_ptr<ApiReviewTransport>> ReviewTransport(const std::string& kubeconfig,
                                                                    std::string_view flag,
                                                                    const Clock& clock) {
  absl::StatusOr<KubeApiConfig> api = KubeApi(kubeconfig, flag);
  if (!api.ok()) return api.status();
  return ApiReviewTransport::Create(*api, clock);
}

}  // namespace

absl::StatusOr<std::unique_ptr<DelegatedAccess>> DelegatedAccess::Create(
    const SecureServingOptions& options, const Clock& clock, prometheus::Registry* registry) {
  std::unique_ptr<DelegatedAccess> access(new DelegatedAccess());
  access->always_allow_paths_ = options.authorization_always_allow_paths;
  // Read once: TokenReview and the cluster's trust both use it.
  std::optional<KubeApiConfig> authentication_api;
  if (!options.authentication_kubeconfig.empty()) {
    absl::StatusOr<KubeApiConfig> api =
        KubeApi(options.authentication_kubeconfig, "--authentication-kubeconfig");
    if (!api.ok()) return api.status();
    absl::StatusOr<std::unique_ptr<ApiReviewTransport>> transport =
        ApiReviewTransport::Create(*api, clock);
    if (!transport.ok()) return transport.status();
    access->authentication_transport_ = *std::move(transport);
    authentication_api = *std::move(api);
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
  if (authentication_api) {
    if (absl::Status s = access->FollowClusterTrust(options, *authentication_api, clock, registry);
        !s.ok()) {
      return s;
    }
  }
  return access;
}

absl::Status DelegatedAccess::FollowClusterTrust(const SecureServingOptions& options,
                                                 const KubeApiConfig& api, const Clock& clock,
                                                 prometheus::Registry* registry) {
  const ExtensionAuthenticationOptions lookup = options.ExtensionLookup();
  if (!lookup.client_ca && !lookup.request_header) return absl::OkStatus();
  const FrontProxyOptions flags_front_proxy = options.AuthenticationOptions().front_proxy;
  const bool flags_client_ca = !options.client_ca_file.empty();
  Authenticator* authenticator = authenticator_.get();
  absl::StatusOr<std::unique_ptr<ExtensionAuthenticationFollower>> follower =
      ExtensionAuthenticationFollower::Create(
          api, lookup, clock, registry,
          [authenticator, lookup, flags_front_proxy,
           flags_client_ca](const ExtensionAuthentication& trust) {
            absl::Status s = authenticator->SetClusterTrust(
                lookup.request_header ? trust.FrontProxy() : flags_front_proxy,
                flags_client_ca || (lookup.client_ca && !trust.client_ca_pem.empty()));
            if (!s.ok()) KLOG(ERROR) << "the cluster's trust does not apply: " << s;
          });
  if (!follower.ok()) {
    return absl::Status(follower.status().code(),
                        absl::StrCat("--authentication-kubeconfig: ", follower.status().message()));
  }
  cluster_trust_ = *std::move(follower);
  if (absl::Status loaded = cluster_trust_->LoadOnce(); !loaded.ok()) {
    // As kube's servers: the client CA alone is optional; the front proxy's trust is needed
    // to believe the aggregation layer.
    if (lookup.request_header && !options.authentication_tolerate_lookup_failure) {
      return absl::Status(
          loaded.code(),
          absl::StrCat("cannot read the front-proxy trust from the cluster (give "
                       "--requestheader-client-ca-file, or --authentication-tolerate-lookup-"
                       "failure to start without it): ",
                       loaded.message()));
    }
    KLOG(WARNING) << "cannot read the cluster's extension-apiserver-authentication ConfigMap; "
                     "starting without it and following it: "
                  << loaded;
  }
  cluster_trust_->Start();
  return absl::OkStatus();
}

AccessGate DelegatedAccess::Gate(std::string server_name) const {
  return AccessGate(std::move(server_name), always_allow_paths_, authenticator_.get(),
                    authorizer_.get());
}

}  // namespace kubestat::kube
