#include "openssl_pem.h"

#include <openssl/err.h>
#include <openssl/pem.h>

namespace kubestat::http::internal {

BioPtr MemoryBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

std::vector<X509Ptr> ReadCertificates(const std::string& pem) {
  std::vector<X509Ptr> certs;
  BioPtr bio = MemoryBio(pem);
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certs.emplace_back(cert);
  }
  // The loop ends on "no start line" at the end of the text: not an error.
  ERR_clear_error();
  return certs;
}

PrivateKeyPtr ReadPrivateKey(const std::string& pem) {
  BioPtr bio = MemoryBio(pem);
  PrivateKeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  return key;
}

std::string TakeOpenSslError(std::string_view otherwise) {
  const unsigned long code = ERR_peek_error();
  std::string text(otherwise);
  if (code != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    text = buf;
  }
  ERR_clear_error();
  return text;
}

}  // namespace kubestat::http::internal
