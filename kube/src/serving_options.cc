#include "kubestat/kube/serving_options.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/flags.h"
#include "kubestat/kube/front_proxy.h"

namespace kubestat::kube {
namespace {

absl::Status Prefixed(std::string_view flags, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(AbslView(flags), ": ", status.message()));
}

}  // namespace

void SecureServingOptions::RegisterFlags(FlagSet& flags) {
  flags.AddString("listen-address", &listen_address,
                  "address of the HTTPS server (the API, /metrics, /healthz, /livez, /readyz)");
  flags.AddInt64("secure-port", &secure_port, "port of the HTTPS server; 0 picks a free one");
  flags.AddInt64("port", &port,
                 "port of a plain-HTTP listener (same authentication and authorization); 0: none");
  flags.AddInt64("health-port", &health_port,
                 "port of a listener serving only /healthz, /livez and /readyz, with its "
                 "own 32 connections (when full, a stalled one from the address holding the "
                 "most is closed for the newcomer): point the probes there; 0: none");
  flags.AddInt64("max-connections", &max_connections,
                 "open connections allowed on the main listener; more are turned away");
  flags.AddString("tls-cert-file", &tls_cert_file,
                  "serving certificate (PEM, re-read when it changes); empty: self-signed in "
                  "--cert-dir");
  flags.AddString("tls-private-key-file", &tls_private_key_file, "key of --tls-cert-file");
  flags.AddString("cert-dir", &cert_dir,
                  "where the self-signed serving pair is made when --tls-cert-file is empty");
  flags.AddString("tls-min-version", &tls_min_version, "VersionTLS12 or VersionTLS13");
  flags.AddStringList("tls-cipher-suites", &tls_cipher_suites,
                      "TLS 1.2 cipher suites (IANA names; ECDHE with AEAD only); empty: all of "
                      "those");
  flags.AddString("client-ca-file", &client_ca_file,
                  "client certificates signed by this CA authenticate as CN (user), O (groups)");
  flags.AddString("requestheader-client-ca-file", &requestheader_client_ca_file,
                  "CA of the front proxy (the kube-apiserver's aggregation layer); request "
                  "headers are believed only from connections with a certificate it signed");
  flags.AddStringList("requestheader-allowed-names", &requestheader_allowed_names,
                      "common names allowed for the front proxy's certificate; empty: any");
  flags.AddStringList("requestheader-username-headers", &requestheader_username_headers,
                      "request headers holding the user name");
  flags.AddStringList("requestheader-group-headers", &requestheader_group_headers,
                      "request headers holding the groups");
  flags.AddStringList("requestheader-extra-headers-prefix", &requestheader_extra_headers_prefix,
                      "request header prefixes of the user's extra attributes");
  flags.AddBool("authentication-skip-lookup", &authentication_skip_lookup,
                "do not read the client CA and the front-proxy trust that the flags leave out "
                "from the ConfigMap kube-system/extension-apiserver-authentication");
  flags.AddBool("authentication-tolerate-lookup-failure", &authentication_tolerate_lookup_failure,
                "start even when that ConfigMap cannot be read (proxied requests are then "
                "not believed until it can)");
  flags.AddString("token-auth-file", &token_auth_file,
                  "static bearer tokens, CSV token,user,uid,\"group1,group2\" (re-read on change)");
  flags.AddBool("anonymous-auth", &anonymous_auth,
                "requests without credentials are system:anonymous (then authorized as such)");
  flags.AddString("authentication-kubeconfig", &authentication_kubeconfig,
                  "kubeconfig of the Kubernetes API that reviews unknown bearer tokens "
                  "(TokenReview); in-cluster: the service account; empty: none");
  flags.AddDuration("authentication-token-webhook-cache-ttl",
                    &authentication_token_webhook_cache_ttl,
                    "how long TokenReview answers are cached");
  flags.AddString("authorization-rules-file", &authorization_rules_file,
                  "rules granting verbs on nodes, pods and non-resource URLs to users and groups "
                  "(asked first)");
  flags.AddString("authorization-kubeconfig", &authorization_kubeconfig,
                  "kubeconfig of the Kubernetes API asked with SubjectAccessReview when the rules "
                  "grant nothing; in-cluster: the service account; empty: none");
  flags.AddDuration("authorization-webhook-cache-authorized-ttl",
                    &authorization_webhook_cache_authorized_ttl,
                    "how long allowed SubjectAccessReview answers are cached");
  flags.AddDuration("authorization-webhook-cache-unauthorized-ttl",
                    &authorization_webhook_cache_unauthorized_ttl,
                    "how long denied SubjectAccessReview answers are cached");
  flags.AddStringList("authorization-always-allow-paths", &authorization_always_allow_paths,
                      "paths answered without authentication or authorization");
  flags.AddBool("gzip-responses", &gzip_responses,
                "gzip-compress HTTP answers for clients that accept it (Accept-Encoding)");
  flags.AddInt64("gzip-min-bytes", &gzip_min_bytes,
                 "smallest HTTP answer body that --gzip-responses compresses");
}

absl::Status SecureServingOptions::Validate() const {
  for (const auto& [flag, value] :
       {std::pair<std::string_view, int64_t>{"--secure-port", secure_port},
        {"--port", port},
        {"--health-port", health_port}}) {
    if (value < 0 || value > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat(AbslView(flag), ": ", value, " is not a port"));
    }
  }
  if (max_connections < 1) {
    return absl::InvalidArgumentError("--max-connections: must be at least 1");
  }
  if (gzip_min_bytes < 0) {
    return absl::InvalidArgumentError("--gzip-min-bytes: must not be negative");
  }
  if (absl::Status s = SecureServer("secure").Validate(); !s.ok()) {
    return Prefixed("--tls-*/--cert-dir/--listen-address", s);
  }
  if (std::optional<http::ServerOptions> plain = PlainServer()) {
    if (absl::Status s = plain->Validate(); !s.ok()) return Prefixed("--port", s);
  }
  if (absl::Status s = AuthenticationOptions().Validate(); !s.ok()) return s;
  if (absl::Status s = AuthorizationOptions().Validate(); !s.ok()) return s;
  if (!anonymous_auth && client_ca_file.empty() && requestheader_client_ca_file.empty() &&
      token_auth_file.empty() && authentication_kubeconfig.empty()) {
    return absl::InvalidArgumentError(
        "--client-ca-file, --requestheader-client-ca-file, --token-auth-file, "
        "--authentication-kubeconfig: none given, so no request could be authenticated (give "
        "one, or --anonymous-auth for a test cluster)");
  }
  if (authorization_rules_file.empty() && authorization_kubeconfig.empty()) {
    return absl::InvalidArgumentError(
        "--authorization-rules-file, --authorization-kubeconfig: neither given, so nobody "
        "could be allowed anything");
  }
  return absl::OkStatus();
}

http::ServerOptions SecureServingOptions::SecureServer(std::string metrics_name) const {
  http::ServerOptions secure;
  secure.metrics_name = std::move(metrics_name);
  secure.address = listen_address;
  secure.port = static_cast<int>(secure_port);
  secure.health_port = health_port > 0 ? static_cast<int>(health_port) : -1;
  secure.limits.max_connections = static_cast<size_t>(std::max<int64_t>(max_connections, 1));
  secure.compression.enabled = gzip_responses;
  secure.compression.min_bytes = static_cast<size_t>(std::max<int64_t>(gzip_min_bytes, 0));
  secure.tls.cert_file = tls_cert_file;
  secure.tls.key_file = tls_private_key_file;
  secure.tls.cert_dir = cert_dir;
  secure.tls.min_version = tls_min_version;
  secure.tls.cipher_suites = tls_cipher_suites;
  if (!client_ca_file.empty()) {
    secure.tls.client_cas.push_back({std::string(kClientCaBundle), client_ca_file});
  }
  if (!requestheader_client_ca_file.empty()) {
    secure.tls.client_cas.push_back(
        {std::string(kRequestHeaderCaBundle), requestheader_client_ca_file});
  }
  // The cluster's trust, kept in files that ExtensionAuthenticationFollower writes.
  const ExtensionAuthenticationOptions lookup = ExtensionLookup();
  if (lookup.client_ca) {
    secure.tls.client_cas.push_back(
        {std::string(kClientCaBundle), ExtensionClientCaFile(lookup.dir), true});
  }
  if (lookup.request_header) {
    secure.tls.client_cas.push_back(
        {std::string(kRequestHeaderCaBundle), ExtensionRequestHeaderCaFile(lookup.dir), true});
  }
  return secure;
}

std::optional<http::ServerOptions> SecureServingOptions::PlainServer() const {
  if (port <= 0) return std::nullopt;
  http::ServerOptions plain = SecureServer("insecure");
  plain.port = static_cast<int>(port);
  plain.health_port = -1;
  plain.tls.enabled = false;
  return plain;
}

ExtensionAuthenticationOptions SecureServingOptions::ExtensionLookup() const {
  ExtensionAuthenticationOptions lookup;
  if (authentication_skip_lookup || authentication_kubeconfig.empty()) return lookup;
  lookup.client_ca = client_ca_file.empty();
  lookup.request_header = requestheader_client_ca_file.empty();
  lookup.dir = cert_dir + "/cluster-trust";
  return lookup;
}

AuthenticatorOptions SecureServingOptions::AuthenticationOptions() const {
  AuthenticatorOptions options;
  // Looked up, the front proxy is believed once the cluster's trust is applied
  // (Authenticator::SetClusterTrust); until then no certificate verifies against its CA.
  options.front_proxy.enabled =
      !requestheader_client_ca_file.empty() || ExtensionLookup().request_header;
  options.front_proxy.allowed_names = requestheader_allowed_names;
  options.front_proxy.username_headers = requestheader_username_headers;
  options.front_proxy.group_headers = requestheader_group_headers;
  options.front_proxy.extra_headers_prefixes = requestheader_extra_headers_prefix;
  options.client_certificates = !client_ca_file.empty();
  options.token_auth_file = token_auth_file;
  options.token_review = !authentication_kubeconfig.empty();
  options.token_review_options.success_ttl = authentication_token_webhook_cache_ttl;
  options.token_review_options.failure_ttl = authentication_token_webhook_cache_ttl;
  options.anonymous = anonymous_auth;
  return options;
}

AuthorizerOptions SecureServingOptions::AuthorizationOptions() const {
  AuthorizerOptions options;
  options.always_allow_paths = authorization_always_allow_paths;
  options.rules_file = authorization_rules_file;
  options.subject_access_review = !authorization_kubeconfig.empty();
  options.subject_access_review_options.allowed_ttl = authorization_webhook_cache_authorized_ttl;
  options.subject_access_review_options.denied_ttl = authorization_webhook_cache_unauthorized_ttl;
  return options;
}

}  // namespace kubestat::kube
