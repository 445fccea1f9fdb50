// Internal: the TLS side of kubestat::http::Client, on OpenSSL: checking the PEM material
// once at Validate() time and applying it to each connection's context.
#ifndef KUBESTAT_HTTP_SRC_CLIENT_TLS_H_
#define KUBESTAT_HTTP_SRC_CLIENT_TLS_H_

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "kubestat/http/client.h"
#include "openssl_pem.h"

namespace kubestat::http::internal {

// TLS material for a client, as PEM text: ca_pem the trusted CAs (empty: leave the
// context's trust as it is), client_cert_pem the client certificate chain (empty: none),
// client_key_pem its private key.
using ClientTlsMaterial = ClientTls;

// Makes `ctx` trust nothing: the handshake fails (material that could not be had).
void TrustNothing(SSL_CTX* ctx);

// Why the server certificates a client was shown failed verification, so an error can say
// more than "handshake failed" (cpprestsdk reports only that). Thread-safe.
class TlsVerifyLog {
 public:
  // Failures recorded so far; a request reads it before it starts.
  uint64_t failures() const;
  // The latest failure's reason when one was recorded after `failures_before`; "" if none.
  std::string ReasonSince(uint64_t failures_before) const;
  void Record(std::string reason);

 private:
  mutable std::mutex mu_;
  uint64_t failures_ = 0;
  std::string last_;
};

// Makes `ctx` record into `log` why a server certificate chain fails verification (the
// verification itself is unchanged). `ctx` keeps a reference to `log`.
void RecordVerifyFailures(SSL_CTX* ctx, std::shared_ptr<TlsVerifyLog> log);

// Applies `tls` to `ctx`: TLS 1.2 at least; with ca_pem a fresh trust store holding only
// those CAs (replacing any default roots); the client certificate, its chain and key.
// InvalidArgument naming the ClientOptions field whose PEM does not load (no certificate
// in ca_pem, a bad chain, a key that does not match the certificate). Thread-safe.
[[nodiscard]] absl::Status ApplyClientTls(SSL_CTX* ctx, const ClientTlsMaterial& tls);

// ApplyClientTls on a scratch context: whether the material loads.
[[nodiscard]] absl::Status CheckClientTls(const ClientTlsMaterial& tls);

}  // namespace kubestat::http::internal

#endif  // KUBESTAT_HTTP_SRC_CLIENT_TLS_H_
