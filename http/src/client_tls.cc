#include "client_tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kubestat/core/absl_view.h"

namespace kubestat::http::internal {
namespace {

struct CtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};

absl::Status Bad(std::string_view field, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("ClientOptions.", AbslView(field), ": ",
                                                 AbslView(what), " (", TakeOpenSslError(), ")"));
}

// The SSL_CTX ex_data slot holding a heap std::shared_ptr<TlsVerifyLog>, freed with the
// context.
void FreeLogRef(void* /*parent*/, void* ptr, CRYPTO_EX_DATA* /*ad*/, int /*idx*/, long /*argl*/,
                void* /*argp*/) {
  delete static_cast<std::shared_ptr<TlsVerifyLog>*>(ptr);
}

int LogSlot() {
  static const int slot = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, FreeLogRef);
  return slot;
}

std::string SubjectCn(X509* cert) {
  if (cert == nullptr) return "";
  char cn[256] = {0};
  if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn)) < 0) {
    return "";
  }
  return cn;
}

// Runs OpenSSL's chain verification (with the host name check the connection installed)
// and records why it failed.
int VerifyAndRecord(X509_STORE_CTX* store_ctx, void* /*arg*/) {
  const int ok = X509_verify_cert(store_ctx);
  if (ok > 0) return ok;
  auto* ssl = static_cast<SSL*>(
      X509_STORE_CTX_get_ex_data(store_ctx, SSL_get_ex_data_X509_STORE_CTX_idx()));
  auto* log = ssl == nullptr ? nullptr
                             : static_cast<std::shared_ptr<TlsVerifyLog>*>(
                                   SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), LogSlot()));
  if (log == nullptr || *log == nullptr) return ok;
  const int error = X509_STORE_CTX_get_error(store_ctx);
  // The host name check: OpenSSL's own (X509_VERIFY_PARAM), or the connection's after a
  // chain that verified.
  const bool host_check = error == X509_V_OK || error == X509_V_ERR_UNSPECIFIED ||
                          error == X509_V_ERR_HOSTNAME_MISMATCH ||
                          error == X509_V_ERR_IP_ADDRESS_MISMATCH;
  std::string reason = host_check ? "the certificate is not valid for the host name"
                                  : X509_verify_cert_error_string(error);
  const std::string cn = SubjectCn(X509_STORE_CTX_get_current_cert(store_ctx));
  if (!cn.empty()) reason = absl::StrCat(reason, " (certificate CN \"", cn, "\")");
  (*log)->Record(std::move(reason));
  return ok;
}

}  // namespace

uint64_t TlsVerifyLog::failures() const {
  std::lock_guard lock(mu_);
  return failures_;
}

std::string TlsVerifyLog::ReasonSince(uint64_t failures_before) const {
  std::lock_guard lock(mu_);
  return failures_ > failures_before ? last_ : "";
}

void TlsVerifyLog::Record(std::string reason) {
  std::lock_guard lock(mu_);
  ++failures_;
  last_ = std::move(reason);
}

void RecordVerifyFailures(SSL_CTX* ctx, std::shared_ptr<TlsVerifyLog> log) {
  // A context set up twice keeps one reference.
  if (auto* held =
          static_cast<std::shared_ptr<TlsVerifyLog>*>(SSL_CTX_get_ex_data(ctx, LogSlot()))) {
    *held = std::move(log);
    return;
  }
  auto* ref = new std::shared_ptr<TlsVerifyLog>(std::move(log));
  if (SSL_CTX_set_ex_data(ctx, LogSlot(), ref) != 1) {
    delete ref;
    return;
  }
  SSL_CTX_set_cert_verify_callback(ctx, VerifyAndRecord, nullptr);
}

void TrustNothing(SSL_CTX* ctx) { SSL_CTX_set_cert_store(ctx, X509_STORE_new()); }

absl::Status ApplyClientTls(SSL_CTX* ctx, const ClientTlsMaterial& tls) {
  ERR_clear_error();
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
    return absl::InternalError(absl::StrCat("TLS 1.2 minimum: ", TakeOpenSslError()));
  }
  if (!tls.ca_pem.empty()) {
    std::vector<X509Ptr> cas = ReadCertificates(tls.ca_pem);
    if (cas.empty()) return Bad("ca_pem", "holds no PEM certificate");
    // A store of our own: the CAs configured are the only ones trusted, as a kubeconfig's
    // certificate-authority means (the HTTP library adds the system's roots first). It is
    // swapped in before it is filled, so a failure part way trusts less, never more.
    X509_STORE* store = X509_STORE_new();
    if (store == nullptr) return absl::InternalError("cannot create a certificate store");
    SSL_CTX_set_cert_store(ctx, store);  // takes ownership
    for (const X509Ptr& ca : cas) {
      if (X509_STORE_add_cert(store, ca.get()) != 1) {
        return Bad("ca_pem", "a certificate cannot be trusted");
      }
    }
  }
  if (!tls.client_cert_pem.empty() || !tls.client_key_pem.empty()) {
    if (tls.client_cert_pem.empty()) {
      return absl::InvalidArgumentError(
          "ClientOptions.client_key_pem is set without client_cert_pem");
    }
    if (tls.client_key_pem.empty()) {
      return absl::InvalidArgumentError(
          "ClientOptions.client_cert_pem is set without client_key_pem");
    }
    std::vector<X509Ptr> chain = ReadCertificates(tls.client_cert_pem);
    if (chain.empty()) return Bad("client_cert_pem", "holds no PEM certificate");
    if (SSL_CTX_use_certificate(ctx, chain.front().get()) != 1) {
      return Bad("client_cert_pem", "the certificate cannot be used");
    }
    SSL_CTX_clear_chain_certs(ctx);
    for (size_t i = 1; i < chain.size(); ++i) {
      if (SSL_CTX_add1_chain_cert(ctx, chain[i].get()) != 1) {
        return Bad("client_cert_pem", "a chain certificate cannot be used");
      }
    }
    BioPtr key_bio = MemoryBio(tls.client_key_pem);
    PrivateKeyPtr key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
    if (key == nullptr) return Bad("client_key_pem", "holds no PEM private key");
    if (SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
      return Bad("client_key_pem", "does not match client_cert_pem");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckClientTls(const ClientTlsMaterial& tls) {
  std::unique_ptr<SSL_CTX, CtxFree> ctx(SSL_CTX_new(TLS_client_method()));
  if (ctx == nullptr) return absl::InternalError("cannot create a TLS context");
  return ApplyClientTls(ctx.get(), tls);
}

}  // namespace kubestat::http::internal
