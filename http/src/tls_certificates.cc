#include "kubestat/http/tls_certificates.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "openssl_pem.h"

namespace kubestat::http {
namespace {

using internal::BioPtr;
using internal::PrivateKeyPtr;
using internal::ReadCertificates;
using internal::ReadPrivateKey;
using internal::X509Ptr;

std::string OpenSslError() { return internal::TakeOpenSslError("no OpenSSL error queued"); }

absl::Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) {
    return absl::InternalError(
        absl::StrCat("bad certificate extension \"", value, "\": ", OpenSslError()));
  }
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return absl::OkStatus();
}

void AddName(X509_NAME* name, const char* field, const std::string& value) {
  X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1, 0);
}

std::string MemoryText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(size));
}

}  // namespace

absl::StatusOr<IssuedCertificate> IssueCertificate(const CertificateSpec& spec,
                                                   const IssuedCertificate* issuer) {
  PrivateKeyPtr key(spec.key_type == KeyType::kRsa2048 ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256"));
  if (!key) return absl::InternalError(absl::StrCat("key generation failed: ", OpenSslError()));
  X509Ptr issuer_cert;
  PrivateKeyPtr issuer_key;
  if (issuer != nullptr) {
    std::vector<X509Ptr> certs = ReadCertificates(issuer->cert_pem);
    if (!certs.empty()) issuer_cert = std::move(certs.front());
    issuer_key = ReadPrivateKey(issuer->key_pem);
    if (!issuer_cert || !issuer_key) {
      return absl::InvalidArgumentError("the issuer's certificate or key does not parse as PEM");
    }
  }

  X509Ptr cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), spec.serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), static_cast<long>(spec.not_before.count()));
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(spec.not_after.count()));
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  for (const std::string& org : spec.organizations) AddName(name, "O", org);
  AddName(name, "CN", spec.common_name);
  X509* signer = issuer_cert ? issuer_cert.get() : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));

  absl::Status s = AddExtension(cert.get(), signer, NID_basic_constraints,
                                spec.ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  std::string key_usage = spec.key_usage;
  if (key_usage.empty()) {
    key_usage =
        spec.ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature,keyEncipherment";
  }
  s.Update(AddExtension(cert.get(), signer, NID_key_usage, key_usage));
  if (!spec.extended_key_usage.empty()) {
    s.Update(AddExtension(cert.get(), signer, NID_ext_key_usage, spec.extended_key_usage));
  }
  if (spec.ca) s.Update(AddExtension(cert.get(), signer, NID_subject_key_identifier, "hash"));
  if (issuer_cert) {
    s.Update(AddExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always"));
  }
  if (!spec.subject_alt_names.empty()) {
    std::string san;
    for (const std::string& entry : spec.subject_alt_names) {
      absl::StrAppend(&san, san.empty() ? "" : ",", entry);
    }
    s.Update(AddExtension(cert.get(), signer, NID_subject_alt_name, san));
  }
  if (!s.ok()) return s;
  if (X509_sign(cert.get(), issuer_key ? issuer_key.get() : key.get(), EVP_sha256()) == 0) {
    return absl::InternalError(
        absl::StrCat("signing the certificate of ", spec.common_name, " failed: ", OpenSslError()));
  }

  IssuedCertificate issued;
  BioPtr cert_bio(BIO_new(BIO_s_mem()));
  BioPtr key_bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(cert_bio.get(), cert.get()) != 1 ||
      PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
          1) {
    return absl::InternalError(absl::StrCat("writing PEM failed: ", OpenSslError()));
  }
  issued.cert_pem = MemoryText(cert_bio.get());
  issued.key_pem = MemoryText(key_bio.get());
  return issued;
}

}  // namespace kubestat::http
