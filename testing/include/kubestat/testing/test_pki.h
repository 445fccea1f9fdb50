// A throwaway PKI for TLS tests, minted as every kubestat part mints its certificates
// (kubestat/http/tls_certificates.h): a CA, serving certificates
// with SANs and client certificates with a CN and O values, as PEM text (a TempDir writes
// them to files when the code under test reads files).
//
// Certificates are valid from an hour ago for a day. Keys are EC P-256 or RSA 2048 (RSA
// when a test needs the ECDHE-RSA suites, or a non-ECDHE RSA suite to be refused).
// Thread-compatible; aborts the test binary if OpenSSL fails (a broken test setup).
#ifndef KUBESTAT_TESTING_TEST_PKI_H_
#define KUBESTAT_TESTING_TEST_PKI_H_

#include <string>
#include <vector>

namespace kubestat::testing {

enum class TestKeyType { kEcP256, kRsa2048 };

struct TestCertificate {
  std::string cert_pem;  // the certificate (not the CA)
  std::string key_pem;   // PKCS#8 private key
};

class TestPki {
 public:
  explicit TestPki(const std::string& ca_name = "kubestat-test-ca");
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  const std::string& ca_pem() const { return ca_pem_; }

  // A serving certificate (extended key usage serverAuth) for `sans`, each in OpenSSL's
  // form ("DNS:localhost", "IP:127.0.0.1").
  TestCertificate IssueServer(const std::string& common_name, const std::vector<std::string>& sans,
                              TestKeyType key_type = TestKeyType::kEcP256);
  // A client certificate (clientAuth) with subject CN=common_name and one O per
  // organization (Kubernetes reads them as user and groups).
  TestCertificate IssueClient(const std::string& common_name,
                              const std::vector<std::string>& organizations,
                              TestKeyType key_type = TestKeyType::kEcP256);

 private:
  TestCertificate Issue(const std::string& common_name, const std::vector<std::string>& orgs,
                        const std::vector<std::string>& sans, bool client, TestKeyType key_type);

  std::string ca_pem_;
  std::string ca_key_pem_;
  long serial_ = 1;
};

// A self-signed serving certificate (EC P-256, serverAuth) for `sans` that is also a CA
// (CA:TRUE, keyCertSign), for a peer whose own certificate the client is given as its
// trust anchor.
TestCertificate SelfSignedServer(const std::string& common_name,
                                 const std::vector<std::string>& sans);

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTING_TEST_PKI_H_
