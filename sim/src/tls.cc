#include "tls.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"

namespace kubestat::sim {
namespace {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

absl::Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return absl::InternalError(absl::StrCat("bad certificate extension ", value));
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return absl::OkStatus();
}

enum class Usage { kServer, kClient };

// A CA (issuer == nullptr: self-signed) or a leaf certificate for `usage`. `org` may be
// nullptr (no O in the subject).
absl::StatusOr<Cert> MakeCert(EVP_PKEY* key, const char* org, const char* cn, long serial,
                              X509* issuer, EVP_PKEY* issuer_key, Usage usage = Usage::kServer) {
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  // Valid from a day ago (clock skew) for ten years.
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -86400);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 10L * 365 * 86400);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (org != nullptr) {
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(org),
                               -1, -1, 0);
  }
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer ? issuer : cert.get();
  absl::Status s;
  if (issuer == nullptr) {
    s.Update(AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE"));
    s.Update(AddExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign"));
    s.Update(AddExtension(cert.get(), signer, NID_subject_key_identifier, "hash"));
  } else {
    s.Update(AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE"));
    s.Update(AddExtension(cert.get(), signer, NID_key_usage,
                          "critical,digitalSignature,keyEncipherment"));
    s.Update(AddExtension(cert.get(), signer, NID_ext_key_usage,
                          usage == Usage::kServer ? "serverAuth" : "clientAuth"));
    s.Update(AddExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always"));
  }
  if (!s.ok()) return s;
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) {
    return absl::InternalError("signing a certificate failed");
  }
  return cert;
}

absl::Status WritePem(const std::string& path, X509* cert, X509* chain, EVP_PKEY* key) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return absl::InternalError(absl::StrCat("cannot write ", path));
  bool ok = true;
  if (cert) ok = ok && PEM_write_X509(f, cert) == 1;
  if (chain) ok = ok && PEM_write_X509(f, chain) == 1;
  if (key) ok = ok && PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return absl::InternalError(absl::StrCat("cannot write ", path));
  if (key)
    std::filesystem::permissions(
        path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  return absl::OkStatus();
}

}  // namespace

namespace {

// A CA and a serving certificate it signed, for `dns` names and `ips`, written to
// dir/<ca_file>, dir/<cert_file> (leaf then CA) and dir/<key_file>.
absl::StatusOr<TlsFiles> GenerateServing(const std::string& dir, const char* ca_cn,
                                         const char* leaf_cn, const std::vector<std::string>& dns,
                                         const std::vector<std::string>& ips, const char* ca_file,
                                         const char* cert_file, const char* key_file) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("cannot create --tls-dir ", dir, ": ", ec.message()));
  Key ca_key(EVP_EC_gen("P-256"));
  Key server_key(EVP_EC_gen("P-256"));
  if (!ca_key || !server_key) return absl::InternalError("EC key generation failed");
  absl::StatusOr<Cert> ca = MakeCert(ca_key.get(), "kubestat-sim", ca_cn, 1, nullptr, ca_key.get());
  if (!ca.ok()) return ca.status();
  absl::StatusOr<Cert> server =
      MakeCert(server_key.get(), "kubestat-sim", leaf_cn, 2, ca->get(), ca_key.get());
  if (!server.ok()) return server.status();
  std::string san;
  for (const std::string& name : dns) absl::StrAppend(&san, san.empty() ? "" : ",", "DNS:", name);
  for (const std::string& ip : ips) absl::StrAppend(&san, san.empty() ? "" : ",", "IP:", ip);
  // The SAN goes in before signing: re-sign after adding it.
  if (absl::Status s = AddExtension(server->get(), ca->get(), NID_subject_alt_name, san); !s.ok()) {
    return s;
  }
  if (X509_sign(server->get(), ca_key.get(), EVP_sha256()) == 0) {
    return absl::InternalError("signing the serving certificate failed");
  }
  TlsFiles files{dir + "/" + ca_file, dir + "/" + cert_file, dir + "/" + key_file};
  absl::Status s = WritePem(files.ca_cert, ca->get(), nullptr, nullptr);
  s.Update(WritePem(files.server_cert, server->get(), ca->get(), nullptr));
  s.Update(WritePem(files.server_key, nullptr, nullptr, server_key.get()));
  if (!s.ok()) return s;
  return files;
}

}  // namespace

absl::StatusOr<TlsFiles> GenerateTls(const std::string& dir, const std::vector<std::string>& ips) {
  return GenerateServing(dir, "kubestat-sim-ca", "kubestat-sim-kubelet", {"localhost"}, ips,
                         "ca.crt", "kubelet.crt", "kubelet.key");
}

absl::StatusOr<TlsFiles> GenerateApiserverTls(const std::string& dir,
                                              const std::vector<std::string>& dns,
                                              const std::vector<std::string>& ips) {
  return GenerateServing(dir, "kubestat-sim-apiserver-ca", "kube-apiserver", dns, ips,
                         "apiserver-ca.crt", "apiserver.crt", "apiserver.key");
}

absl::StatusOr<FrontProxyFiles> GenerateFrontProxy(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("cannot create --tls-dir ", dir, ": ", ec.message()));
  Key ca_key(EVP_EC_gen("P-256"));
  Key client_key(EVP_EC_gen("P-256"));
  if (!ca_key || !client_key) return absl::InternalError("EC key generation failed");
  absl::StatusOr<Cert> ca =
      MakeCert(ca_key.get(), nullptr, "front-proxy-ca", 1, nullptr, ca_key.get());
  if (!ca.ok()) return ca.status();
  absl::StatusOr<Cert> client = MakeCert(client_key.get(), nullptr, "front-proxy-client", 2,
                                         ca->get(), ca_key.get(), Usage::kClient);
  if (!client.ok()) return client.status();
  FrontProxyFiles files{dir + "/front-proxy-ca.crt", dir + "/front-proxy-client.crt",
                        dir + "/front-proxy-client.key"};
  absl::Status s = WritePem(files.ca_cert, ca->get(), nullptr, nullptr);
  s.Update(WritePem(files.client_cert, client->get(), nullptr, nullptr));
  s.Update(WritePem(files.client_key, nullptr, nullptr, client_key.get()));
  if (!s.ok()) return s;
  return files;
}

}  // namespace kubestat::sim
