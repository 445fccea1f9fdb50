#include "kubestat/testing/test_pki.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "kubestat/http/tls_certificates.h"

namespace kubestat::testing {
namespace {

http::IssuedCertificate OrDie(absl::StatusOr<http::IssuedCertificate> issued, const char* what) {
  if (!issued.ok()) {
    std::fprintf(stderr, "test PKI: %s failed: %s\n", what, issued.status().ToString().c_str());
    std::abort();
  }
  return *std::move(issued);
}

// Valid from an hour ago for a day.
http::CertificateSpec Spec(const std::string& common_name, long serial, TestKeyType key_type) {
  http::CertificateSpec spec;
  spec.common_name = common_name;
  spec.serial = serial;
  spec.not_before = std::chrono::hours(-1);
  spec.not_after = std::chrono::hours(24);
  spec.key_type =
      key_type == TestKeyType::kRsa2048 ? http::KeyType::kRsa2048 : http::KeyType::kEcP256;
  return spec;
}

}  // namespace

TestPki::TestPki(const std::string& ca_name) {
  http::CertificateSpec spec = Spec(ca_name, /*serial=*/1, TestKeyType::kEcP256);
  spec.ca = true;
  http::IssuedCertificate ca = OrDie(http::IssueCertificate(spec), "signing the CA");
  ca_pem_ = std::move(ca.cert_pem);
  ca_key_pem_ = std::move(ca.key_pem);
}

TestCertificate TestPki::IssueServer(const std::string& common_name,
                                     const std::vector<std::string>& sans, TestKeyType key_type) {
  return Issue(common_name, {}, sans, /*client=*/false, key_type);
}

TestCertificate TestPki::IssueClient(const std::string& common_name,
                                     const std::vector<std::string>& organizations,
                                     TestKeyType key_type) {
  return Issue(common_name, organizations, {}, /*client=*/true, key_type);
}

TestCertificate TestPki::Issue(const std::string& common_name, const std::vector<std::string>& orgs,
                               const std::vector<std::string>& sans, bool client,
                               TestKeyType key_type) {
  http::CertificateSpec spec = Spec(common_name, ++serial_, key_type);
  spec.organizations = orgs;
  // keyEncipherment only where the key can encipher (RSA key exchange).
  spec.key_usage = key_type == TestKeyType::kRsa2048 ? "critical,digitalSignature,keyEncipherment"
                                                     : "critical,digitalSignature";
  spec.extended_key_usage = client ? "clientAuth" : "serverAuth";
  spec.subject_alt_names = sans;
  const http::IssuedCertificate ca{ca_pem_, ca_key_pem_};
  http::IssuedCertificate issued =
      OrDie(http::IssueCertificate(spec, &ca), "signing a certificate");
  return TestCertificate{std::move(issued.cert_pem), std::move(issued.key_pem)};
}

TestCertificate SelfSignedServer(const std::string& common_name,
                                 const std::vector<std::string>& sans) {
  http::CertificateSpec spec = Spec(common_name, /*serial=*/1, TestKeyType::kEcP256);
  spec.ca = true;
  spec.key_usage = "critical,digitalSignature,keyCertSign";
  spec.extended_key_usage = "serverAuth";
  spec.subject_alt_names = sans;
  http::IssuedCertificate issued =
      OrDie(http::IssueCertificate(spec), "signing a self-signed certificate");
  return TestCertificate{std::move(issued.cert_pem), std::move(issued.key_pem)};
}

}  // namespace kubestat::testing
