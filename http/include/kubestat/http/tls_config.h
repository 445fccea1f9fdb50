// TLS settings as Kubernetes components spell them on the command line, checked and mapped
// to OpenSSL's names, so a binary can validate --tls-min-version and --tls-cipher-suites at
// start (ServerOptions::Validate uses the same functions).
//
// Allowed: TLS 1.2 and 1.3; TLS 1.2 suites with ECDHE key exchange and an AEAD cipher
// (AES-GCM or ChaCha20-Poly1305), and the three TLS 1.3 suites (all AEAD).
//
// Pure functions; thread-safe.
#ifndef KUBESTAT_HTTP_TLS_CONFIG_H_
#define KUBESTAT_HTTP_TLS_CONFIG_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kubestat::http {

enum class TlsVersion { kTls12, kTls13 };

// "VersionTLS12" -> kTls12, "VersionTLS13" -> kTls13. InvalidArgument naming
// --tls-min-version for "VersionTLS10"/"VersionTLS11" (too old) and unknown names.
[[nodiscard]] absl::StatusOr<TlsVersion> ParseTlsMinVersion(std::string_view name);

// The cipher suites kubestat allows and uses when none are configured, in server
// preference order: the six ECDHE AEAD TLS 1.2 suites (ECDSA before RSA, AES-128-GCM,
// AES-256-GCM, then ChaCha20-Poly1305).
std::vector<std::string> DefaultCipherSuites();

// The configured suites split into what OpenSSL takes.
struct OpenSslCipherConfig {
  // For SSL_CTX_set_cipher_list (TLS 1.2), ':'-separated, e.g.
  // "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305".
  std::string tls12_cipher_list;
  // For SSL_CTX_set_ciphersuites (TLS 1.3); empty = OpenSSL's default (all three).
  std::string tls13_ciphersuites;
};

// Maps Go/IANA names (also Go's short aliases TLS_ECDHE_*_WITH_CHACHA20_POLY1305) to
// OpenSSL names; an empty list means DefaultCipherSuites(). InvalidArgument naming
// --tls-cipher-suites and the name for: a suite without ECDHE key exchange, a suite
// without AEAD, an unknown name, or a list with no TLS 1.2 suite at all while TLS 1.2 is
// allowed (min_version kTls12).
[[nodiscard]] absl::StatusOr<OpenSslCipherConfig> MapCipherSuites(
    const std::vector<std::string>& names, TlsVersion min_version);

}  // namespace kubestat::http

#endif  // KUBESTAT_HTTP_TLS_CONFIG_H_
