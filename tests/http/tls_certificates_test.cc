#include "kubestat/http/tls_certificates.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>

namespace kubestat::http {
namespace {

struct X509Free {
  void operator()(X509* c) const { X509_free(c); }
};
using Cert = std::unique_ptr<X509, X509Free>;

Cert Parse(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  Cert cert(PEM_read_bio_X509(bio, nullptr, nullptr, nullptr));
  BIO_free(bio);
  return cert;
}

int KeyTypeOf(const std::string& key_pem) {
  BIO* bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  const int type = key == nullptr ? -1 : EVP_PKEY_get_base_id(key);
  EVP_PKEY_free(key);
  return type;
}

// Whether `leaf` chains to `ca` for `purpose` (X509_PURPOSE_SSL_SERVER, _SSL_CLIENT).
bool Verifies(X509* leaf, X509* ca, int purpose) {
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  X509_STORE_CTX_set_purpose(ctx, purpose);
  const bool ok = X509_verify_cert(ctx) == 1;
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return ok;
}

std::string Subject(X509* cert) {
  char buf[256];
  X509_NAME_oneline(X509_get_subject_name(cert), buf, sizeof(buf));
  return buf;
}

CertificateSpec CaSpec() {
  CertificateSpec spec;
  spec.common_name = "test-ca";
  spec.ca = true;
  return spec;
}

TEST(TlsCertificatesTest, AServingCertificateChainsToItsCaForItsNamesOnly) {
  absl::StatusOr<IssuedCertificate> ca = IssueCertificate(CaSpec());
  ASSERT_TRUE(ca.ok()) << ca.status();
  CertificateSpec spec;
  spec.common_name = "server";
  spec.extended_key_usage = "serverAuth";
  spec.subject_alt_names = {"DNS:localhost", "IP:127.0.0.1"};
  spec.serial = 7;
  absl::StatusOr<IssuedCertificate> leaf = IssueCertificate(spec, &*ca);
  ASSERT_TRUE(leaf.ok()) << leaf.status();

  Cert ca_cert = Parse(ca->cert_pem);
  Cert leaf_cert = Parse(leaf->cert_pem);
  ASSERT_TRUE(ca_cert && leaf_cert);
  EXPECT_EQ(X509_check_ca(ca_cert.get()), 1);
  EXPECT_EQ(X509_check_ca(leaf_cert.get()), 0);
  EXPECT_TRUE(Verifies(leaf_cert.get(), ca_cert.get(), X509_PURPOSE_SSL_SERVER));
  EXPECT_FALSE(Verifies(leaf_cert.get(), ca_cert.get(), X509_PURPOSE_SSL_CLIENT));
  EXPECT_EQ(X509_check_host(leaf_cert.get(), "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(leaf_cert.get(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_host(leaf_cert.get(), "example.test", 0, 0, nullptr), 0);
  EXPECT_EQ(ASN1_INTEGER_get(X509_get0_serialNumber(leaf_cert.get())), 7);
  EXPECT_EQ(KeyTypeOf(leaf->key_pem), EVP_PKEY_EC);

  // Another CA's certificate does not chain to this one.
  absl::StatusOr<IssuedCertificate> other = IssueCertificate(CaSpec());
  ASSERT_TRUE(other.ok());
  Cert other_cert = Parse(other->cert_pem);
  EXPECT_FALSE(Verifies(leaf_cert.get(), other_cert.get(), X509_PURPOSE_SSL_SERVER));
}

TEST(TlsCertificatesTest, AClientCertificateNamesItsOrganizationsBeforeItsCommonName) {
  absl::StatusOr<IssuedCertificate> ca = IssueCertificate(CaSpec());
  ASSERT_TRUE(ca.ok());
  CertificateSpec spec;
  spec.common_name = "alice";
  spec.organizations = {"system:masters", "dev"};
  spec.extended_key_usage = "clientAuth";
  spec.key_type = KeyType::kRsa2048;
  absl::StatusOr<IssuedCertificate> leaf = IssueCertificate(spec, &*ca);
  ASSERT_TRUE(leaf.ok()) << leaf.status();
  Cert cert = Parse(leaf->cert_pem);
  Cert ca_cert = Parse(ca->cert_pem);
  EXPECT_EQ(Subject(cert.get()), "/O=system:masters/O=dev/CN=alice");
  EXPECT_TRUE(Verifies(cert.get(), ca_cert.get(), X509_PURPOSE_SSL_CLIENT));
  EXPECT_FALSE(Verifies(cert.get(), ca_cert.get(), X509_PURPOSE_SSL_SERVER));
  EXPECT_EQ(KeyTypeOf(leaf->key_pem), EVP_PKEY_RSA);
}

TEST(TlsCertificatesTest, ValidityRunsFromNotBeforeToNotAfter) {
  CertificateSpec spec = CaSpec();
  spec.not_before = std::chrono::hours(-24);
  spec.not_after = std::chrono::hours(24 * 10);
  absl::StatusOr<IssuedCertificate> ca = IssueCertificate(spec);
  ASSERT_TRUE(ca.ok());
  Cert cert = Parse(ca->cert_pem);
  int days = 0;
  int seconds = 0;
  ASSERT_EQ(ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(cert.get()),
                           X509_get0_notAfter(cert.get())),
            1);
  EXPECT_EQ(days, 11);
  EXPECT_EQ(seconds, 0);
}

TEST(TlsCertificatesTest, AnIssuerThatDoesNotParseIsRefused) {
  const IssuedCertificate broken{"-----BEGIN CERTIFICATE-----\nnot base64\n", "no key"};
  absl::StatusOr<IssuedCertificate> leaf = IssueCertificate(CertificateSpec{}, &broken);
  EXPECT_EQ(leaf.status().code(), absl::StatusCode::kInvalidArgument) << leaf.status();
}

}  // namespace
}  // namespace kubestat::http
