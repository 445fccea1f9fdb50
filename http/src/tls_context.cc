#include "tls_context.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kubestat/core/file.h"
#include "kubestat/core/log.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/http/tls_certificates.h"
#include "kubestat/http/tls_config.h"
#include "openssl_pem.h"

namespace kubestat::http::internal {
namespace {

struct StoreCtxFree {
  void operator()(X509_STORE_CTX* c) const { X509_STORE_CTX_free(c); }
};

constexpr auto kReloadCheckInterval = std::chrono::seconds(1);

// Chooses http/1.1 when the client offers it; without it the handshake goes on without
// ALPN (the client then speaks HTTP/1.1 or fails on its own).
int SelectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned int inlen, void*) {
  static constexpr unsigned char kHttp11[] = {'h', 't', 't', 'p', '/', '1', '.', '1'};
  for (unsigned int i = 0; i < inlen;) {
    const unsigned int len = in[i];
    if (i + 1 + len > inlen) break;
    if (len == sizeof(kHttp11) && std::memcmp(in + i + 1, kHttp11, len) == 0) {
      *out = in + i + 1;
      *outlen = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

// Client certificates are requested and verified afterwards against each bundle on its
// own (TlsServing::ReadPeer), so the handshake accepts whatever chain is presented.
int AcceptAnyChain(int, X509_STORE_CTX*) { return 1; }

std::string NameEntry(X509_NAME_ENTRY* entry) {
  unsigned char* utf8 = nullptr;
  const int len = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(entry));
  if (len < 0) return "";
  std::string value(reinterpret_cast<char*>(utf8), static_cast<size_t>(len));
  OPENSSL_free(utf8);
  return value;
}

// --- self-signed pair ---

bool IsIp(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// A pair in the files that loads, matches and is valid for at least another day.
bool UsablePair(const std::string& cert_path, const std::string& key_path) {
  absl::StatusOr<std::string> cert_pem = ReadFile(cert_path);
  absl::StatusOr<std::string> key_pem = ReadFile(key_path);
  if (!cert_pem.ok() || !key_pem.ok()) return false;
  std::vector<X509Ptr> certs = ReadCertificates(*cert_pem);
  PrivateKeyPtr key = ReadPrivateKey(*key_pem);
  if (certs.empty() || key == nullptr) return false;
  if (X509_check_private_key(certs[0].get(), key.get()) != 1) {
    ERR_clear_error();
    return false;
  }
  time_t soon = std::time(nullptr) + 86400;
  return X509_cmp_time(X509_get0_notAfter(certs[0].get()), &soon) > 0;
}

}  // namespace

absl::StatusOr<std::pair<std::string, std::string>> EnsureSelfSignedPair(
    const std::string& dir, const std::vector<std::string>& hosts) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(StrCat("cannot create --cert-dir ", dir, ": ", ec.message()));
  const std::string cert_path = (std::filesystem::path(dir) / "apiserver.crt").string();
  const std::string key_path = (std::filesystem::path(dir) / "apiserver.key").string();
  if (UsablePair(cert_path, key_path)) return std::make_pair(cert_path, key_path);

  // As kube's GenerateSelfSignedCertKey: a CA of its own signs the serving certificate;
  // the certificate file holds the serving certificate, then the CA. Valid from an hour ago
  // (clock skew) for a year, as kube's self-signed pairs are.
  const long now = static_cast<long>(std::time(nullptr));
  CertificateSpec ca_spec;
  ca_spec.common_name = StrCat("localhost-ca@", now);
  ca_spec.ca = true;
  ca_spec.serial = now;
  absl::StatusOr<IssuedCertificate> ca = IssueCertificate(ca_spec);
  if (!ca.ok()) return ca.status();
  CertificateSpec spec;
  spec.common_name = StrCat("localhost@", now);
  spec.extended_key_usage = "serverAuth";
  spec.subject_alt_names = {"DNS:localhost", "IP:127.0.0.1", "IP:::1"};
  for (const std::string& host : hosts) {
    spec.subject_alt_names.push_back(StrCat(IsIp(host) ? "IP:" : "DNS:", host));
  }
  spec.serial = now + 1;
  absl::StatusOr<IssuedCertificate> cert = IssueCertificate(spec, &*ca);
  if (!cert.ok()) return cert.status();
  if (absl::Status s = WriteFileAtomically(key_path, cert->key_pem, 0600); !s.ok()) return s;
  if (absl::Status s = WriteFileAtomically(cert_path, cert->cert_pem + ca->cert_pem, 0644);
      !s.ok()) {
    return s;
  }
  KLOG(INFO) << "created a self-signed serving certificate in " << cert_path;
  return std::make_pair(cert_path, key_path);
}

TlsServing::~TlsServing() {
  for (auto& [name, store] : client_stores_) X509_STORE_free(store);
}

std::unique_ptr<PeerCertificate> TlsServing::ReadPeer(SSL* ssl) const {
  X509* leaf = SSL_get0_peer_certificate(ssl);
  if (leaf == nullptr) return nullptr;
  STACK_OF(X509)* chain = SSL_get_peer_cert_chain(ssl);  // the server side: without the leaf
  auto peer = std::make_unique<PeerCertificate>();
  for (const auto& [name, store] : client_stores_) {
    std::unique_ptr<X509_STORE_CTX, StoreCtxFree> ctx(X509_STORE_CTX_new());
    if (ctx == nullptr || X509_STORE_CTX_init(ctx.get(), store, leaf, chain) != 1) continue;
    X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_CLIENT);
    if (X509_verify_cert(ctx.get()) == 1) peer->verified_by.push_back(name);
  }
  ERR_clear_error();
  if (peer->verified_by.empty()) return peer;
  X509_NAME* subject = X509_get_subject_name(leaf);
  const int cn = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (cn >= 0) peer->common_name = NameEntry(X509_NAME_get_entry(subject, cn));
  for (int i = X509_NAME_get_index_by_NID(subject, NID_organizationName, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(subject, NID_organizationName, i)) {
    peer->organizations.push_back(NameEntry(X509_NAME_get_entry(subject, i)));
  }
  return peer;
}

TlsContextSource::TlsContextSource(const TlsOptions& options, const Clock& clock)
    : options_(options), clock_(clock) {}

absl::StatusOr<std::unique_ptr<TlsContextSource>> TlsContextSource::Create(
    const TlsOptions& options, const Clock& clock) {
  std::unique_ptr<TlsContextSource> source(new TlsContextSource(options, clock));
  if (options.cert_file.empty()) {
    absl::StatusOr<std::pair<std::string, std::string>> pair =
        EnsureSelfSignedPair(options.cert_dir, options.self_signed_hosts);
    if (!pair.ok()) return pair.status();
    source->cert_file_ = pair->first;
    source->key_file_ = pair->second;
  } else {
    source->cert_file_ = options.cert_file;
    source->key_file_ = options.key_file;
  }
  // Files given by the operator can be rotated; so can client CA bundles.
  source->watch_ = !options.cert_file.empty() || !options.client_cas.empty();
  source->current_ids_ = source->Identify();
  absl::StatusOr<std::shared_ptr<const TlsServing>> serving = source->Build();
  if (!serving.ok()) return serving.status();
  source->current_ = *std::move(serving);
  source->last_check_ = clock.MonotonicNow();
  return source;
}

std::vector<TlsContextSource::FileId> TlsContextSource::Identify() const {
  std::vector<std::string> paths = {cert_file_, key_file_};
  for (const ClientCaBundle& ca : options_.client_cas) paths.push_back(ca.file);
  std::vector<FileId> ids;
  for (const std::string& path : paths) {
    FileId id;
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) {
      id.exists = true;
      id.dev = st.st_dev;
      id.ino = st.st_ino;
      id.size = st.st_size;
      id.mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
    }
    ids.push_back(id);
  }
  return ids;
}

std::shared_ptr<const TlsServing> TlsContextSource::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!watch_) return current_;
  const Timestamp now = clock_.MonotonicNow();
  if (now - last_check_ < kReloadCheckInterval) return current_;
  last_check_ = now;
  std::vector<FileId> ids = Identify();
  if (ids == current_ids_ || ids == failed_ids_) return current_;
  absl::StatusOr<std::shared_ptr<const TlsServing>> serving = Build();
  if (!serving.ok()) {
    // Logged once per change of the files; the previous pair keeps serving.
    failed_ids_ = ids;
    KLOG(ERROR) << "TLS files changed but do not load; still serving the previous pair: "
                << serving.status();
    return current_;
  }
  current_ = *std::move(serving);
  current_ids_ = std::move(ids);
  failed_ids_.clear();
  KLOG(INFO) << "TLS: loaded the changed serving certificate " << cert_file_;
  return current_;
}

absl::StatusOr<std::shared_ptr<const TlsServing>> TlsContextSource::Build() const {
  namespace ssl = boost::asio::ssl;
  auto serving = std::make_shared<TlsServing>();
  serving->context_ = std::make_unique<ssl::context>(ssl::context::tls_server);
  SSL_CTX* ctx = serving->context_->native_handle();

  absl::StatusOr<TlsVersion> version = ParseTlsMinVersion(options_.min_version);
  if (!version.ok()) return version.status();
  absl::StatusOr<OpenSslCipherConfig> ciphers = MapCipherSuites(options_.cipher_suites, *version);
  if (!ciphers.ok()) return ciphers.status();
  SSL_CTX_set_min_proto_version(ctx,
                                *version == TlsVersion::kTls13 ? TLS1_3_VERSION : TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_TICKET);
  // No resumption: every connection shows its client certificate again.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx, 0);
  static constexpr unsigned char kSessionContext[] = "kubestat-http";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof(kSessionContext) - 1);
  if (!ciphers->tls12_cipher_list.empty() &&
      SSL_CTX_set_cipher_list(ctx, ciphers->tls12_cipher_list.c_str()) != 1) {
    return absl::InternalError(StrCat("--tls-cipher-suites: OpenSSL refused ",
                                      ciphers->tls12_cipher_list, ": ",
                                      TakeOpenSslError("unknown OpenSSL error")));
  }
  if (!ciphers->tls13_ciphersuites.empty() &&
      SSL_CTX_set_ciphersuites(ctx, ciphers->tls13_ciphersuites.c_str()) != 1) {
    return absl::InternalError(StrCat("--tls-cipher-suites: OpenSSL refused ",
                                      ciphers->tls13_ciphersuites, ": ",
                                      TakeOpenSslError("unknown OpenSSL error")));
  }
  // Key exchange by elliptic-curve Diffie-Hellman only: OpenSSL also offers finite-field
  // groups (ffdhe*) for TLS 1.3 unless told otherwise.
  if (SSL_CTX_set1_groups_list(ctx, "X25519:P-256:X448:P-384:P-521") != 1) {
    return absl::InternalError(absl::StrCat("TLS: cannot set the key exchange groups: ",
                                            TakeOpenSslError("unknown OpenSSL error")));
  }
  SSL_CTX_set_alpn_select_cb(ctx, SelectAlpn, nullptr);

  // Unreadable TLS material is Internal, as server.h promises, whatever the reason.
  absl::StatusOr<std::string> cert_pem = ReadFile(cert_file_, "--tls-cert-file");
  if (!cert_pem.ok()) return absl::InternalError(cert_pem.status().message());
  absl::StatusOr<std::string> key_pem = ReadFile(key_file_, "--tls-private-key-file");
  if (!key_pem.ok()) return absl::InternalError(key_pem.status().message());
  boost::system::error_code ec;
  serving->context_->use_certificate_chain(boost::asio::buffer(*cert_pem), ec);
  if (ec) {
    ERR_clear_error();
    return absl::InternalError(StrCat("--tls-cert-file ", cert_file_, ": ", ec.message()));
  }
  serving->context_->use_private_key(boost::asio::buffer(*key_pem), ssl::context::pem, ec);
  if (ec) {
    ERR_clear_error();
    return absl::InternalError(StrCat("--tls-private-key-file ", key_file_, ": ", ec.message()));
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return absl::InternalError(StrCat("--tls-private-key-file ", key_file_,
                                      " does not match --tls-cert-file ", cert_file_));
  }

  if (!options_.client_cas.empty()) {
    STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
    for (const ClientCaBundle& bundle : options_.client_cas) {
      absl::StatusOr<std::string> pem = ReadFile(bundle.file, bundle.name);
      if (!pem.ok() && bundle.may_be_empty && !std::filesystem::exists(bundle.file)) pem = "";
      if (!pem.ok()) {
        sk_X509_NAME_pop_free(names, X509_NAME_free);
        return absl::InternalError(pem.status().message());
      }
      std::vector<X509Ptr> certs = ReadCertificates(*pem);
      if (certs.empty() && !bundle.may_be_empty) {
        sk_X509_NAME_pop_free(names, X509_NAME_free);
        return absl::InternalError(
            StrCat("client CA bundle ", bundle.name, " (", bundle.file, ") holds no certificate"));
      }
      X509_STORE* store = X509_STORE_new();
      for (const X509Ptr& cert : certs) {
        X509_STORE_add_cert(store, cert.get());
        sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(cert.get())));
      }
      serving->client_stores_.emplace_back(bundle.name, store);
    }
    SSL_CTX_set_client_CA_list(ctx, names);  // takes ownership
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, AcceptAnyChain);
  }
  return std::shared_ptr<const TlsServing>(std::move(serving));
}

}  // namespace kubestat::http::internal
