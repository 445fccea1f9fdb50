// What the http/ code that reads and writes PEM shares: owning handles of OpenSSL objects,
// certificates and a key read from PEM text, and the text of the oldest queued OpenSSL error.
// Private to http/src.
#ifndef KUBESTAT_HTTP_SRC_OPENSSL_PEM_H_
#define KUBESTAT_HTTP_SRC_OPENSSL_PEM_H_

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kubestat::http::internal {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct PrivateKeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PrivateKeyPtr = std::unique_ptr<EVP_PKEY, PrivateKeyFree>;

// A read-only memory BIO over `pem` (which must outlive it).
BioPtr MemoryBio(const std::string& pem);
// Every certificate in `pem`, in order; empty when there is none.
std::vector<X509Ptr> ReadCertificates(const std::string& pem);
// The first private key in `pem`; null when there is none.
PrivateKeyPtr ReadPrivateKey(const std::string& pem);
// The oldest OpenSSL error queued on this thread as text (`otherwise` when there is none),
// and the queue cleared.
std::string TakeOpenSslError(std::string_view otherwise = "no details");

}  // namespace kubestat::http::internal

#endif  // KUBESTAT_HTTP_SRC_OPENSSL_PEM_H_
