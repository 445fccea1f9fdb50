#include "kubestat/testing/test_pki.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <cstdlib>

namespace kubestat::testing {
namespace {

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "test PKI: %s failed\n", what);
  std::abort();
}

EVP_PKEY* NewKey(TestKeyType type) {
  EVP_PKEY* key = type == TestKeyType::kRsa2048 ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
  if (key == nullptr) Die("key generation");
  return key;
}

void Fill(X509* cert, const std::string& common_name, const std::vector<std::string>& orgs,
          EVP_PKEY* key, long serial) {
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  for (const std::string& org : orgs) {
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(org.c_str()), -1, -1, 0);
  }
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
}

void AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) Die("certificate extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

std::string Drain(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string text(data, static_cast<size_t>(size));
  BIO_free(bio);
  return text;
}

std::string CertPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  return Drain(bio);
}

std::string KeyPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  return Drain(bio);
}

}  // namespace

TestPki::TestPki(const std::string& ca_name) {
  ca_key_ = NewKey(TestKeyType::kEcP256);
  ca_cert_ = X509_new();
  Fill(ca_cert_, ca_name, {}, ca_key_, /*serial=*/1);
  X509_set_issuer_name(ca_cert_, X509_get_subject_name(ca_cert_));
  AddExtension(ca_cert_, ca_cert_, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(ca_cert_, ca_cert_, NID_key_usage, "critical,keyCertSign,cRLSign");
  AddExtension(ca_cert_, ca_cert_, NID_subject_key_identifier, "hash");
  if (X509_sign(ca_cert_, ca_key_, EVP_sha256()) == 0) Die("signing the CA");
  ca_pem_ = CertPem(ca_cert_);
}

TestPki::~TestPki() {
  X509_free(ca_cert_);
  EVP_PKEY_free(ca_key_);
}

TestCertificate TestPki::IssueServer(const std::string& common_name,
                                     const std::vector<std::string>& sans, TestKeyType key_type) {
  std::string san;
  for (const std::string& s : sans) san += (san.empty() ? "" : ",") + s;
  return Issue(common_name, {}, san, /*client=*/false, key_type);
}

TestCertificate TestPki::IssueClient(const std::string& common_name,
                                     const std::vector<std::string>& organizations,
                                     TestKeyType key_type) {
  return Issue(common_name, organizations, "", /*client=*/true, key_type);
}

TestCertificate TestPki::Issue(const std::string& common_name, const std::vector<std::string>& orgs,
                               const std::string& san, bool client, TestKeyType key_type) {
  EVP_PKEY* key = NewKey(key_type);
  X509* cert = X509_new();
  Fill(cert, common_name, orgs, key, ++serial_);
  X509_set_issuer_name(cert, X509_get_subject_name(ca_cert_));
  AddExtension(cert, ca_cert_, NID_basic_constraints, "critical,CA:FALSE");
  AddExtension(cert, ca_cert_, NID_key_usage,
               key_type == TestKeyType::kRsa2048 ? "critical,digitalSignature,keyEncipherment"
                                                 : "critical,digitalSignature");
  AddExtension(cert, ca_cert_, NID_ext_key_usage, client ? "clientAuth" : "serverAuth");
  AddExtension(cert, ca_cert_, NID_authority_key_identifier, "keyid:always");
  if (!san.empty()) AddExtension(cert, ca_cert_, NID_subject_alt_name, san);
  if (X509_sign(cert, ca_key_, EVP_sha256()) == 0) Die("signing a certificate");
  TestCertificate result{CertPem(cert), KeyPem(key)};
  X509_free(cert);
  EVP_PKEY_free(key);
  return result;
}

TestCertificate SelfSignedServer(const std::string& common_name,
                                 const std::vector<std::string>& sans) {
  std::string san;
  for (const std::string& s : sans) san += (san.empty() ? "" : ",") + s;
  EVP_PKEY* key = NewKey(TestKeyType::kEcP256);
  X509* cert = X509_new();
  Fill(cert, common_name, {}, key, /*serial=*/1);
  X509_set_issuer_name(cert, X509_get_subject_name(cert));
  AddExtension(cert, cert, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(cert, cert, NID_key_usage, "critical,digitalSignature,keyCertSign");
  AddExtension(cert, cert, NID_ext_key_usage, "serverAuth");
  if (!san.empty()) AddExtension(cert, cert, NID_subject_alt_name, san);
  if (X509_sign(cert, key, EVP_sha256()) == 0) Die("signing a self-signed certificate");
  TestCertificate result{CertPem(cert), KeyPem(key)};
  X509_free(cert);
  EVP_PKEY_free(key);
  return result;
}

}  // namespace kubestat::testing
