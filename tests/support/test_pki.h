// A throwaway PKI for TLS tests, made through the OpenSSL API: a CA, serving certificates
// with SANs, client certificates with a CN and O values, as PEM text or files in a temp dir.
//
// Certificates are valid from an hour ago for a day. Keys are EC P-256 or RSA 2048 (RSA
// when a test needs the ECDHE-RSA suites, or a non-ECDHE RSA suite to be refused).
// Thread-compatible; aborts the test binary if OpenSSL fails (a broken test setup).
#ifndef KUBESTAT_TESTS_SUPPORT_TEST_PKI_H_
#define KUBESTAT_TESTS_SUPPORT_TEST_PKI_H_

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

typedef struct evp_pkey_st EVP_PKEY;
typedef struct x509_st X509;

namespace kubestat::testing {

// A fresh directory under the system temp dir, removed with everything in it on
// destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // Writes `contents` to <path>/<name> (replacing it through a rename, so a reader sees
  // the old or the new file, never half of one) and returns the file's path.
  std::string Write(const std::string& name, const std::string& contents) const;

 private:
  std::string path_;
};

enum class TestKeyType { kEcP256, kRsa2048 };

struct TestCertificate {
  std::string cert_pem;  // the certificate (not the CA)
  std::string key_pem;   // PKCS#8 private key
};

class TestPki {
 public:
  explicit TestPki(const std::string& ca_name = "kubestat-test-ca");
  ~TestPki();
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
                        const std::string& san, bool client, TestKeyType key_type);

  EVP_PKEY* ca_key_ = nullptr;
  X509* ca_cert_ = nullptr;
  std::string ca_pem_;
  long serial_ = 1;
};

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTS_SUPPORT_TEST_PKI_H_
