// SecureServingOptions: how a kubestat server serves and whom it lets in, spelled as
// Kubernetes components spell these flags (--secure-port, --tls-*, --client-ca-file,
// --requestheader-*, --authentication-kubeconfig, --authorization-*), shared by every
// kubestat server so that each reads them alike. A binary may change a default (its port)
// before RegisterFlags: the value a field holds then is the default --help shows.
//
// DelegatedAccess (delegated_access.h) builds the authenticator and authorizer these
// options describe.
//
// Thread-safety: a plain value; RegisterFlags binds pointers to its fields, which must
// outlive the FlagSet.
#ifndef KUBESTAT_KUBE_SERVING_OPTIONS_H_
#define KUBESTAT_KUBE_SERVING_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/core/clock.h"
#include "kubestat/http/server_options.h"
#include "kubestat/kube/authenticator.h"
#include "kubestat/kube/authorizer.h"
#include "kubestat/kube/extension_authentication.h"

namespace kubestat {
class FlagSet;
}  // namespace kubestat

namespace kubestat::kube {

struct SecureServingOptions {
  // Address of the HTTPS server (the API, /metrics, health). Default: 0.0.0.0
  std::string listen_address = "0.0.0.0";
  // Port of the HTTPS server; 0 picks a free one (logged). Default: 8443 (each binary may
  // set its own before RegisterFlags)
  int64_t secure_port = 8443;
  // Port of a plain-HTTP listener on listen_address, with the same authentication and
  // authorization; only when asked for. Default: 0 (none)
  int64_t port = 0;
  // Port of a listener that serves only /healthz, /livez and /readyz (its own connection
  // cap, so probes answer through a flood on the main port). Default: 0 (none)
  int64_t health_port = 0;
  // Open connections allowed on the main listener; more are turned away. Default: 1024
  int64_t max_connections = 1024;
  // Serving certificate and key (PEM), re-read when they change; when empty, a self-signed
  // pair is made (or reused) in cert_dir. Default: "", "", "apiserver.local.config/certificates"
  std::string tls_cert_file;
  std::string tls_private_key_file;
  std::string cert_dir = "apiserver.local.config/certificates";
  // VersionTLS12 or VersionTLS13. Default: VersionTLS12
  std::string tls_min_version = "VersionTLS12";
  // TLS 1.2 cipher suites by their IANA names, ECDHE with AEAD only. Default: all of those
  std::vector<std::string> tls_cipher_suites;
  // Client certificates signed by this CA authenticate as CN (user) and O (groups).
  // Default: ""
  std::string client_ca_file;
  // Front-proxy authentication: request headers are believed only from connections whose
  // client certificate chains to this CA and, when allowed names are given, has one of
  // them as CN. Default: "", none, X-Remote-User, X-Remote-Group, X-Remote-Extra-
  std::string requestheader_client_ca_file;
  std::vector<std::string> requestheader_allowed_names;
  std::vector<std::string> requestheader_username_headers = {"X-Remote-User"};
  std::vector<std::string> requestheader_group_headers = {"X-Remote-Group"};
  std::vector<std::string> requestheader_extra_headers_prefix = {"X-Remote-Extra-"};
  // With --authentication-kubeconfig, the client CA and the front-proxy CA, allowed names
  // and header names that the flags above leave out (--client-ca-file,
  // --requestheader-client-ca-file) are read from the cluster's ConfigMap
  // kube-system/extension-apiserver-authentication and followed as it changes
  // (extension_authentication.h; the CA files are kept in <cert_dir>/cluster-trust), unless
  // authentication_skip_lookup. When the front proxy is looked up and the ConfigMap cannot
  // be read at start, the server does not start unless
  // authentication_tolerate_lookup_failure (it then starts without that trust and takes it
  // when the ConfigMap can be read). Default: false, false
  bool authentication_skip_lookup = false;
  bool authentication_tolerate_lookup_failure = false;
  // Static bearer tokens (kube-apiserver's CSV: token,user,uid,"group1,group2"), re-read
  // when the file changes. Default: ""
  std::string token_auth_file;
  // Requests without credentials are system:anonymous (and then authorized as such).
  // Default: false
  bool anonymous_auth = false;
  // kubeconfig of the Kubernetes API that reviews bearer tokens nobody else knows
  // (TokenReview); "in-cluster" for the service account. Default: "" (none)
  std::string authentication_kubeconfig;
  // How long TokenReview answers are cached. Default: 10s
  Duration authentication_token_webhook_cache_ttl = std::chrono::seconds(10);
  // A local rules file granting verbs on nodes, pods and non-resource URLs
  // (kube/access_rules.h), asked first. Default: ""
  std::string authorization_rules_file;
  // kubeconfig of the Kubernetes API asked with SubjectAccessReview when the rules file
  // grants nothing; "in-cluster" for the service account. Default: "" (none)
  std::string authorization_kubeconfig;
  // How long allowed and denied SubjectAccessReview answers are cached. Default: 10s, 10s
  Duration authorization_webhook_cache_authorized_ttl = std::chrono::seconds(10);
  Duration authorization_webhook_cache_unauthorized_ttl = std::chrono::seconds(10);
  // Paths answered without authentication or authorization. Default: /healthz,/livez,/readyz
  std::vector<std::string> authorization_always_allow_paths = {"/healthz", "/livez", "/readyz"};
  // gzip answers for clients that accept them, from this many bytes. Default: true, 131072
  bool gzip_responses = true;
  int64_t gzip_min_bytes = int64_t{128} * 1024;

  // Binds every field above to its flag.
  void RegisterFlags(FlagSet& flags);
  // Checks every field; InvalidArgument naming the flag. An authenticator that could never
  // name anyone, or an authorizer that could never allow anything, is refused.
  [[nodiscard]] absl::Status Validate() const;

  // The HTTPS listener these flags describe, its metrics labelled `metrics_name`.
  http::ServerOptions SecureServer(std::string metrics_name) const;
  // The plain-HTTP listener asked for with --port (std::nullopt without it), labelled
  // "insecure".
  std::optional<http::ServerOptions> PlainServer() const;
  AuthenticatorOptions AuthenticationOptions() const;
  // What is read from the cluster's ConfigMap (see authentication_skip_lookup); neither
  // part when nothing is (client_ca and request_header both false). Timeouts are the
  // defaults.
  ExtensionAuthenticationOptions ExtensionLookup() const;
  AuthorizerOptions AuthorizationOptions() const;
};

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_SERVING_OPTIONS_H_
