#include "kubestat/http/server_options.h"

#include <arpa/inet.h>

#include <algorithm>
#include <set>

#include "kubestat/core/str_cat.h"
#include "kubestat/http/tls_config.h"

namespace kubestat::http {
namespace {

bool IsIpLiteral(const std::string& address) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, address.c_str(), buf) == 1 ||
         inet_pton(AF_INET6, address.c_str(), buf) == 1;
}

// RFC 9110 token characters.
bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

absl::Status Bad(std::string_view field, std::string_view why) {
  return absl::InvalidArgumentError(StrCat(field, ": ", why));
}

absl::Status ValidateLimits(const ServerLimits& l) {
  if (l.max_connections < 1) return Bad("limits.max_connections", "must be at least 1");
  if (l.max_target_bytes < 1) return Bad("limits.max_target_bytes", "must be at least 1");
  if (l.max_header_bytes < 256) return Bad("limits.max_header_bytes", "must be at least 256");
  if (l.max_header_bytes > (size_t{1} << 31)) {
    return Bad("limits.max_header_bytes", "must be at most 2 GiB");
  }
  if (l.max_header_count < 1) return Bad("limits.max_header_count", "must be at least 1");
  using std::chrono::milliseconds;
  if (l.header_timeout <= milliseconds(0)) return Bad("limits.header_timeout", "must be positive");
  if (l.read_timeout <= milliseconds(0)) return Bad("limits.read_timeout", "must be positive");
  if (l.write_timeout <= milliseconds(0)) return Bad("limits.write_timeout", "must be positive");
  if (l.idle_timeout <= milliseconds(0)) return Bad("limits.idle_timeout", "must be positive");
  if (l.max_queued_requests < 1) return Bad("limits.max_queued_requests", "must be at least 1");
  return absl::OkStatus();
}

absl::Status ValidateTls(const TlsOptions& tls) {
  if (!tls.enabled) return absl::OkStatus();
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return Bad("tls.cert_file", "--tls-cert-file and --tls-private-key-file go together");
  }
  if (tls.cert_file.empty() && tls.cert_dir.empty()) {
    return Bad("tls.cert_dir", "--cert-dir must be set when no --tls-cert-file is given");
  }
  absl::StatusOr<TlsVersion> version = ParseTlsMinVersion(tls.min_version);
  if (!version.ok()) return version.status();
  absl::StatusOr<OpenSslCipherConfig> ciphers = MapCipherSuites(tls.cipher_suites, *version);
  if (!ciphers.ok()) return ciphers.status();
  std::set<std::string> names;
  for (const ClientCaBundle& ca : tls.client_cas) {
    if (ca.name.empty()) return Bad("tls.client_cas", "every bundle needs a name");
    if (ca.file.empty()) return Bad("tls.client_cas", StrCat("bundle ", ca.name, " has no file"));
    if (!names.insert(ca.name).second) {
      return Bad("tls.client_cas", StrCat("bundle name ", ca.name, " is used twice"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ServerOptions::Validate() const {
  if (!IsIpLiteral(address)) {
    return Bad("address", StrCat("\"", address, "\" is not an IPv4 or IPv6 address"));
  }
  if (port < 0 || port > 65535) return Bad("port", StrCat("must be in [0, 65535], got ", port));
  for (const ListenerAddress& more : more_listeners) {
    if (!IsIpLiteral(more.address)) {
      return Bad("more_listeners", StrCat("\"", more.address, "\" is not an IPv4 or IPv6 address"));
    }
    if (more.port < 0 || more.port > 65535) {
      return Bad("more_listeners", StrCat("port must be in [0, 65535], got ", more.port));
    }
  }
  if (health_port < -1 || health_port > 65535) {
    return Bad("health_port", StrCat("must be -1 or in [0, 65535], got ", health_port));
  }
  if (health_port > 0 && health_port == port) return Bad("health_port", "must differ from port");
  if (health_port >= 0 && health_header_timeout <= std::chrono::milliseconds::zero()) {
    return Bad("health_header_timeout", "must be positive");
  }
  if (health_port >= 0 && health_max_connections < 1) {
    return Bad("health_max_connections", "must be at least 1");
  }
  for (const std::string& path : health_paths) {
    if (path.empty() || path[0] != '/') {
      return Bad("health_paths", StrCat("\"", path, "\" does not start with '/'"));
    }
  }
  if (io_threads < 1) return Bad("io_threads", "must be at least 1");
  if (worker_threads < 1) return Bad("worker_threads", "must be at least 1");
  if (allowed_methods.empty()) return Bad("allowed_methods", "must not be empty");
  for (const std::string& method : allowed_methods) {
    if (!IsToken(method)) return Bad("allowed_methods", StrCat("\"", method, "\" is not a method"));
    if (method == "TRACE" || method == "CONNECT") {
      return Bad("allowed_methods", StrCat(method, " may not be allowed"));
    }
  }
  if (metrics_name.empty()) return Bad("metrics_name", "must not be empty");
  if (absl::Status s = ValidateLimits(limits); !s.ok()) return s;
  return ValidateTls(tls);
}

}  // namespace kubestat::http
