// The trust a Kubernetes cluster publishes for the API servers it aggregates, read as every
// aggregated API server reads it when its flags leave it out.
//
// kube-apiserver writes the ConfigMap kube-system/extension-apiserver-authentication:
//   client-ca-file                      PEM: the CA of client certificates it accepts
//   requestheader-client-ca-file        PEM: the CA of its front-proxy client certificate
//   requestheader-allowed-names         JSON array: CNs that certificate may carry
//   requestheader-username-headers      JSON array, e.g. ["X-Remote-User"]
//   requestheader-uid-headers           JSON array (may be absent)
//   requestheader-group-headers         JSON array, e.g. ["X-Remote-Group"]
//   requestheader-extra-headers-prefix  JSON array, e.g. ["X-Remote-Extra-"]
// and the Role extension-apiserver-authentication-reader in kube-system lets a
// ServiceAccount get, list and watch it (by name).
//
// ExtensionAuthenticationFollower reads it once at start (LoadOnce) and then follows it by
// list+watch (with fieldSelector metadata.name=extension-apiserver-authentication, as the
// Role's resourceNames require). Each version that reads is applied:
//   - the CA bundles it looks up are written to <dir>/client-ca.crt and
//     <dir>/requestheader-client-ca.crt (atomically, only when they change), which the
//     HTTPS listener re-reads within a second (http/server_options.h, ClientCaBundle with
//     may_be_empty);
//   - on_change receives the whole ExtensionAuthentication (the authenticator's front-proxy
//     options and whether client certificates authenticate: Authenticator::SetClusterTrust).
// A version that does not read (a list that is not a JSON array of strings, a CA that holds
// no PEM certificate, no requestheader-client-ca-file or no username header when the front
// proxy is looked up), and a deleted ConfigMap, change nothing: the last trust applied stays,
// and the log says why (once per resourceVersion). An absent client-ca-file means no client
// certificate authenticates.
//
// Metrics (with a registry): kubestat_extension_authentication_updates_total{result}, result
// one of applied (a changed trust taken), unchanged (a version that changed nothing here),
// rejected (one that does not read, or a deletion), error (the ConfigMap could not be
// read: no answer, 403, 404).
//
// Ownership: borrows the clock and the registry, which must outlive it.
// Thread-safety: on_change is called from the follower's thread (after Start) or LoadOnce's
// caller, one call at a time. current() may be called from any thread.
#ifndef KUBESTAT_KUBE_EXTENSION_AUTHENTICATION_H_
#define KUBESTAT_KUBE_EXTENSION_AUTHENTICATION_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/kube/front_proxy.h"
#include "kubestat/kube/kubeconfig.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::kube {

inline constexpr std::string_view kExtensionAuthenticationNamespace = "kube-system";
inline constexpr std::string_view kExtensionAuthenticationName =
    "extension-apiserver-authentication";

struct ExtensionAuthentication {
  std::string client_ca_pem;                // client-ca-file; "" when absent
  std::string requestheader_client_ca_pem;  // requestheader-client-ca-file; "" when absent
  std::vector<std::string> allowed_names;
  std::vector<std::string> username_headers;
  std::vector<std::string> uid_headers;
  std::vector<std::string> group_headers;
  std::vector<std::string> extra_headers_prefixes;
  std::string resource_version;  // the ConfigMap's metadata.resourceVersion

  // The front-proxy options these values describe (enabled; its CA bundle is
  // kRequestHeaderCaBundle).
  FrontProxyOptions FrontProxy() const;
  // The same trust, whatever the resourceVersion.
  bool SameTrust(const ExtensionAuthentication& other) const;
};

// Reads the ConfigMap's JSON. InvalidArgument naming the key: not a JSON object, a kind
// other than ConfigMap, `data` not an object or a value in it not a string, a list key that
// is not a JSON array of strings, a CA key that holds no "-----BEGIN CERTIFICATE-----".
[[nodiscard]] absl::StatusOr<ExtensionAuthentication> ParseExtensionAuthentication(
    std::string_view configmap_json);

struct ExtensionAuthenticationOptions {
  // Look up client-ca-file (no --client-ca-file given). Default: false
  bool client_ca = false;
  // Look up the requestheader-* keys (no --requestheader-client-ca-file given). Default: false
  bool request_header = false;
  // Where the CA files are kept (created, mode 0755; the files 0644). Required. Default: ""
  std::string dir;
  // Bounds of each request to the API server; watches are resumed after watch_timeout;
  // failed ones retried after retry_backoff (real time). Default: 10s, 5m, 1s
  Duration request_timeout = std::chrono::seconds(10);
  Duration watch_timeout = std::chrono::minutes(5);
  Duration retry_backoff = std::chrono::seconds(1);
};

// <dir>/client-ca.crt and <dir>/requestheader-client-ca.crt.
std::string ExtensionClientCaFile(const std::string& dir);
std::string ExtensionRequestHeaderCaFile(const std::string& dir);

class ExtensionAuthenticationFollower {
 public:
  using OnChange = std::function<void(const ExtensionAuthentication&)>;

  // InvalidArgument for an unusable config (kube_api_tls.h, KubeApiClientOptions), an empty
  // dir or neither part looked up; Internal when dir cannot be made.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ExtensionAuthenticationFollower>> Create(
      const KubeApiConfig& config, ExtensionAuthenticationOptions options, const Clock& clock,
      prometheus::Registry* registry, OnChange on_change);
  ~ExtensionAuthenticationFollower();  // Stop()
  ExtensionAuthenticationFollower(const ExtensionAuthenticationFollower&) = delete;
  ExtensionAuthenticationFollower& operator=(const ExtensionAuthenticationFollower&) = delete;

  // One GET of the ConfigMap, applied as above. The error says what failed and, for 403
  // and 404, how to grant the Role (the text kube's own servers print).
  [[nodiscard]] absl::Status LoadOnce();
  // Follows the ConfigMap by list+watch on a thread of its own until Stop().
  void Start();
  void Stop();

  // The trust last applied; nullopt before the first.
  std::optional<ExtensionAuthentication> current() const;

 private:
  struct Impl;
  explicit ExtensionAuthenticationFollower(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_EXTENSION_AUTHENTICATION_H_
