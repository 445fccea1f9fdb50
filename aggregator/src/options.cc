#include "kubestat/aggregator/options.h"

#include <algorithm>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/flags.h"
#include "kubestat/core/time.h"

namespace kubestat::aggregator {
namespace {

// A component's InvalidArgument, prefixed with the flags that set it.
absl::Status Prefixed(std::string_view flags, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::InvalidArgumentError(std::string(flags) + ": " + std::string(status.message()));
}

}  // namespace

void AggregatorOptions::RegisterFlags(FlagSet& flags) {
  flags.AddString("kubeconfig", &kubeconfig,
                  "kubeconfig file for the kube API; empty: the in-cluster service account");
  flags.AddString("kubeconfig-context", &kubeconfig_context,
                  "context of --kubeconfig to use; empty: its current-context");
  flags.AddString("static-nodes", &static_nodes,
                  "fixed node list name=host[:port],... instead of the kube API (no pods)");
  flags.AddStringList("kubelet-preferred-address-types", &preferred_address_types,
                      "node address types to scrape kubelets at, in order of preference");
  flags.AddInt64("kubelet-port", &kubelet_port, "kubelet port");
  flags.AddBool("kubelet-use-node-status-port", &kubelet_use_node_status_port,
                "use the port in the node's status.daemonEndpoints.kubeletEndpoint");
  flags.AddString("kubelet-endpoint", &kubelet_endpoint,
                  "what to scrape: summary (/stats/summary) or resource (/metrics/resource)");
  flags.AddString("kubelet-scheme", &kubelet_scheme, "https, or http for tests and demos");
  flags.AddString("kubelet-certificate-authority", &kubelet_ca,
                  "CA file for the kubelets' serving certificates; empty: the system roots");
  flags.AddBool("kubelet-insecure-tls", &kubelet_insecure_tls,
                "INSECURE: do not verify the kubelets' serving certificates");
  flags.AddString("kubelet-token-file", &kubelet_token_file,
                  "bearer token file for kubelets, re-read when it changes (in a cluster without "
                  "--kubeconfig: the "
                  "in-cluster service account token, when present)");
  flags.AddString("kubelet-client-certificate", &kubelet_client_certificate,
                  "client certificate file presented to kubelets");
  flags.AddString("kubelet-client-key", &kubelet_client_key, "key of --kubelet-client-certificate");
  flags.AddDuration("kubelet-timeout", &kubelet_timeout,
                    "deadline for one kubelet request; must be below --metric-resolution");
  flags.AddInt64("kubelet-max-response-bytes", &kubelet_max_response_bytes,
                 "largest kubelet response accepted");
  flags.AddDuration("metric-resolution", &metric_resolution, "time between scrape rounds");
  flags.AddInt64("max-concurrent-scrapes", &max_concurrent_scrapes,
                 "kubelet scrapes running at once");
  flags.AddDouble("scrape-stagger", &scrape_stagger,
                  "fraction of the resolution over which the scrapes of a round are spread");
  flags.AddString("listen-address", &listen_address,
                  "address of the HTTPS server (REST APIs, /metrics, /healthz, /livez, /readyz)");
  flags.AddInt64("secure-port", &secure_port, "port of the HTTPS server; 0 picks a free one");
  flags.AddInt64("port", &port,
                 "port of a plain-HTTP listener (same authentication and authorization); 0: none");
  flags.AddInt64("health-port", &health_port,
                 "port of a listener serving only /healthz, /livez and /readyz (its own "
                 "connection cap: point the probes there); 0: none");
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
  flags.AddString("grpc-address", &grpc_address,
                  "address of the gRPC server (kubestat.v1.Aggregator)");
  flags.AddInt64("grpc-port", &grpc_port, "port of the gRPC server; 0 turns it off");
  flags.AddString("grpc-tls-cert-file", &grpc_tls_cert_file,
                  "serving certificate of the gRPC server (PEM); empty: plain text, allowed only "
                  "on a loopback --grpc-address");
  flags.AddString("grpc-tls-private-key-file", &grpc_tls_private_key_file,
                  "key of --grpc-tls-cert-file");
  flags.AddString("storage-dir", &storage_dir,
                  "RocksDB directory holding a day of samples and rollups (required; a "
                  "PersistentVolume in a cluster)");
  flags.AddDuration("retention", &retention,
                    "how long samples and rollups are kept: a day plus a margin (at least the "
                    "longest window)");
  flags.AddBool("storage-fsync", &storage_fsync,
                "fsync every write batch (survives power loss); without it the write-ahead log "
                "still survives a killed process");
  flags.AddInt64("storage-cache-mib", &storage_cache_mib, "RocksDB block cache, MiB");
  flags.AddStringList("windows", &windows,
                      "statistical windows kept for every series (durations, e.g. 10s,1m,1h,1d)");
  flags.AddString("scrape-dump", &scrape_dump,
                  "append every decoded node scrape to this file as a JSON line");
  flags.AddInt64("v", &verbosity, "log verbosity");
}

absl::Status AggregatorOptions::Validate() const {
  for (const auto& [flag, value] :
       {std::pair<std::string_view, int64_t>{"--secure-port", secure_port},
        {"--port", port},
        {"--health-port", health_port}}) {
    if (value < 0 || value > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat(AbslView(flag), ": ", value, " is not a port"));
    }
  }
  if (grpc_tls_cert_file.empty() != grpc_tls_private_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--grpc-tls-cert-file, --grpc-tls-private-key-file: give both or neither");
  }
  if (grpc_port > 0 && grpc_tls_cert_file.empty() && grpc_address != "localhost" &&
      grpc_address != "::1" && grpc_address.rfind("127.", 0) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--grpc-address: ", grpc_address,
                     " is not a loopback address, so the gRPC server needs --grpc-tls-cert-file"));
  }
  if (max_connections < 1) {
    return absl::InvalidArgumentError("--max-connections: must be at least 1");
  }
  if (absl::Status s = RestOptions().Validate(); !s.ok()) {
    return Prefixed("--tls-*/--cert-dir/--listen-address", s);
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
        "could be allowed to read node or pod metrics");
  }
  if (grpc_port < 0 || grpc_port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("--grpc-port: ", grpc_port, " is not a port"));
  }
  if (gzip_min_bytes < 0) {
    return absl::InvalidArgumentError("--gzip-min-bytes: must not be negative");
  }
  if (kubelet_max_response_bytes <= 0) {
    return absl::InvalidArgumentError("--kubelet-max-response-bytes: must be positive");
  }
  if (absl::StatusOr<scrapers::KubeletEndpoint> e =
          scrapers::ParseKubeletEndpoint(kubelet_endpoint);
      !e.ok()) {
    return Prefixed("--kubelet-endpoint", e.status());
  }
  if (absl::Status s = AddressOptions().Validate(); !s.ok()) {
    return Prefixed("--kubelet-preferred-address-types/--kubelet-port", s);
  }
  if (absl::Status s = SchedulingOptions().Validate(); !s.ok()) {
    return Prefixed("--metric-resolution/--max-concurrent-scrapes/--scrape-stagger", s);
  }
  if (kubelet_timeout >= metric_resolution) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kubelet-timeout: must be shorter than --metric-resolution (",
        FormatDuration(kubelet_timeout), " >= ", FormatDuration(metric_resolution), ")"));
  }
  if (storage_dir.empty()) {
    return absl::InvalidArgumentError("--storage-dir: required (where RocksDB keeps the day)");
  }
  if (storage_cache_mib < 1) {
    return absl::InvalidArgumentError("--storage-cache-mib: must be at least 1");
  }
  std::vector<Duration> parsed;
  for (const std::string& w : windows) {
    absl::StatusOr<Duration> d = ParseDuration(w);
    if (!d.ok()) return Prefixed("--windows", d.status());
    parsed.push_back(*d);
  }
  IngestOptions ingest;
  ingest.engine.windows = std::move(parsed);
  std::sort(ingest.engine.windows.begin(), ingest.engine.windows.end());
  if (absl::Status s = ingest.Validate(); !s.ok()) return Prefixed("--windows", s);
  if (retention < ingest.engine.windows.back()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--retention: must be at least the longest window (",
                     FormatDuration(ingest.engine.windows.back()), ")"));
  }
  return Prefixed("--storage-dir/--retention", StorageOptions().Validate());
}

std::vector<Duration> AggregatorOptions::Windows() const {
  std::vector<Duration> result;
  for (const std::string& w : windows) result.push_back(*ParseDuration(w));
  std::sort(result.begin(), result.end());
  return result;
}

scrapers::KubeletAddressOptions AggregatorOptions::AddressOptions() const {
  scrapers::KubeletAddressOptions options;
  options.preferred_address_types = preferred_address_types;
  options.port = static_cast<int>(kubelet_port);
  options.use_node_status_port = kubelet_use_node_status_port;
  return options;
}

scrapers::KubeletClientOptions AggregatorOptions::ClientOptions() const {
  scrapers::KubeletClientOptions options;
  options.endpoint = *scrapers::ParseKubeletEndpoint(kubelet_endpoint);
  options.scheme = kubelet_scheme;
  options.ca_file = kubelet_ca;
  options.insecure_skip_tls_verify = kubelet_insecure_tls;
  options.token_file = kubelet_token_file;
  options.client_cert_file = kubelet_client_certificate;
  options.client_key_file = kubelet_client_key;
  options.timeout = kubelet_timeout;
  options.max_response_bytes = static_cast<size_t>(kubelet_max_response_bytes);
  return options;
}

scrapers::SchedulerOptions AggregatorOptions::SchedulingOptions() const {
  scrapers::SchedulerOptions options;
  options.resolution = metric_resolution;
  options.max_concurrent_scrapes = static_cast<int>(max_concurrent_scrapes);
  options.stagger = scrape_stagger;
  return options;
}

aggregator::IngestOptions AggregatorOptions::IngestionOptions() const {
  aggregator::IngestOptions options;
  options.engine.windows = Windows();
  return options;
}

storage::StoreOptions AggregatorOptions::StorageOptions() const {
  storage::StoreOptions options;
  options.dir = storage_dir;
  options.retention = retention;
  options.sync = storage_fsync;
  options.block_cache_bytes = static_cast<size_t>(storage_cache_mib) << 20;
  return options;
}

RestServerOptions AggregatorOptions::RestOptions() const {
  RestServerOptions options;
  http::ServerOptions& secure = options.secure;
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
    secure.tls.client_cas.push_back({std::string(kube::kClientCaBundle), client_ca_file});
  }
  if (!requestheader_client_ca_file.empty()) {
    secure.tls.client_cas.push_back(
        {std::string(kube::kRequestHeaderCaBundle), requestheader_client_ca_file});
  }
  if (port > 0) {
    http::ServerOptions plain = secure;
    plain.port = static_cast<int>(port);
    plain.health_port = -1;
    plain.tls.enabled = false;
    plain.metrics_name = "insecure";
    options.insecure = plain;
  }
  options.always_allow_paths = authorization_always_allow_paths;
  return options;
}

kube::AuthenticatorOptions AggregatorOptions::AuthenticationOptions() const {
  kube::AuthenticatorOptions options;
  options.front_proxy.enabled = !requestheader_client_ca_file.empty();
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

kube::AuthorizerOptions AggregatorOptions::AuthorizationOptions() const {
  kube::AuthorizerOptions options;
  options.always_allow_paths = authorization_always_allow_paths;
  options.rules_file = authorization_rules_file;
  options.subject_access_review = !authorization_kubeconfig.empty();
  options.subject_access_review_options.allowed_ttl = authorization_webhook_cache_authorized_ttl;
  options.subject_access_review_options.denied_ttl = authorization_webhook_cache_unauthorized_ttl;
  return options;
}

}  // namespace kubestat::aggregator
