// Minting X.509 certificates and their keys: the self-signed serving pair a kubestat server
// makes for itself (EnsureSelfSignedPair), the simulator's kubelet, API server and front-proxy
// PKIs, and the tests' (kubestat::testing::TestPki). One recipe, so that what every part
// serves and trusts is built the same way. Certificates and keys travel as PEM text.
//
// Values and free functions; thread-safe.
#ifndef KUBESTAT_HTTP_TLS_CERTIFICATES_H_
#define KUBESTAT_HTTP_TLS_CERTIFICATES_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kubestat::http {

enum class KeyType { kEcP256, kRsa2048 };

// What a certificate says. Version 3, signed with SHA-256.
struct CertificateSpec {
  std::string common_name;
  std::vector<std::string> organizations;  // one O each, before the CN (Kubernetes' groups)
  // A CA: basicConstraints critical CA:TRUE and a subjectKeyIdentifier; otherwise CA:FALSE
  // and, when an issuer signs it, an authorityKeyIdentifier.
  bool ca = false;
  // keyUsage; empty: "critical,keyCertSign,cRLSign" for a CA,
  // "critical,digitalSignature,keyEncipherment" otherwise.
  std::string key_usage;
  // extendedKeyUsage ("serverAuth", "clientAuth", "serverAuth,clientAuth"); empty: none.
  std::string extended_key_usage;
  // subjectAltName entries ("DNS:localhost", "IP:127.0.0.1"); empty: none.
  std::vector<std::string> subject_alt_names;
  long serial = 1;
  // Valid from now + not_before (negative: allowing for clock skew) to now + not_after.
  std::chrono::seconds not_before = std::chrono::hours(-1);
  std::chrono::seconds not_after = std::chrono::hours(24 * 365);
  KeyType key_type = KeyType::kEcP256;
};

// A certificate and its private key, as PEM ("-----BEGIN CERTIFICATE-----…" and PKCS#8,
// "-----BEGIN PRIVATE KEY-----…").
struct IssuedCertificate {
  std::string cert_pem;
  std::string key_pem;
};

// A new key and its certificate as `spec` says, signed by `issuer` (a CA made here or read
// from files), or self-signed when it is null. Internal naming the step when OpenSSL refuses
// one; InvalidArgument when the issuer's PEM does not parse.
[[nodiscard]] absl::StatusOr<IssuedCertificate> IssueCertificate(
    const CertificateSpec& spec, const IssuedCertificate* issuer = nullptr);

}  // namespace kubestat::http

#endif  // KUBESTAT_HTTP_TLS_CERTIFICATES_H_
