// Internal: the transport behind Client::Do. A request runs on its caller's thread from
// start to end: a kept-alive connection from the client's pool (or a new one: connect, TLS
// handshake), the request written and the response read through a non-blocking socket and
// poll(2), the response parsed by Beast as its bytes arrive. No other thread is woken for
// a request: a library's own threads would cost a wake-up per step of every request (see
// bench/RESULTS.md, "The kubelet client's own transport").
//
// Waits are sliced: poll(2) returns at least every kClockCheck, so the injected clock's
// deadline and the request's stop token are looked at that often.
#ifndef KUBESTAT_HTTP_SRC_CLIENT_DIRECT_H_
#define KUBESTAT_HTTP_SRC_CLIENT_DIRECT_H_

#include <openssl/ssl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client_tls.h"
#include "kubestat/core/clock.h"
#include "kubestat/http/client.h"

namespace kubestat::http::internal {

// How often a waiting request looks at the injected clock and its stop token (see client.h,
// Deadline).
inline constexpr Duration kClockCheck = std::chrono::milliseconds(50);

// Where a status carries its FailureReason label.
inline constexpr std::string_view kReasonPayload = "type.kubestat.io/kubestat.http.FailureReason";

// `status` with `reason` attached, for FailureReason.
[[nodiscard]] absl::Status WithReason(absl::Status status, std::string_view reason);

// Text from a peer or a library made safe for one log line (at most 300 bytes, controls
// replaced by spaces).
std::string Printable(std::string_view text);

// Where a client's requests go, from ClientOptions::base_url.
struct DirectEndpoint {
  bool tls = false;
  std::string host;         // a DNS name or an IP address, without brackets
  std::string port;         // decimal
  std::string path_prefix;  // "" or "/k8s/clusters/c-1": put before every request path
  std::string host_field;   // the Host field's value

  // Parses a base_url that ClientOptions::Validate() accepted.
  [[nodiscard]] static absl::StatusOr<DirectEndpoint> Parse(std::string_view base_url);
};

// One request as the transport sends it.
struct DirectRequest {
  std::string_view label;      // "GET /a": how every message starts
  std::string_view bytes;      // the request as sent: head and body
  bool idempotent = false;     // may be sent again when a kept-alive connection was closed
  bool head = false;           // a HEAD request: the response has no body
  Timestamp deadline;          // on the clock's MonotonicNow
  std::string_view timed_out;  // what DeadlineExceeded says after the label
  const std::stop_token* stop = nullptr;
  size_t max_response_bytes = 0;
  size_t body_spare_capacity = 0;
  // ClientRequest::body_buffer: the response body is read into its storage, which comes
  // back in it, emptied, when the exchange fails. Null: a new string.
  std::string* body_buffer = nullptr;
};

class DirectTransport {
 public:
  // The transport of a client with `options` (which passed ClientOptions::Validate()): its
  // endpoint from base_url and, for https, its own TLS context (the options' CA or the
  // system's roots, client certificate, the host checked unless insecure_skip_tls_verify;
  // why a chain was refused recorded in `verify_log`).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<DirectTransport>> Create(
      const ClientOptions& options, std::shared_ptr<TlsVerifyLog> verify_log, const Clock& clock);
  ~DirectTransport();
  DirectTransport(const DirectTransport&) = delete;
  DirectTransport& operator=(const DirectTransport&) = delete;

  const DirectEndpoint& endpoint() const { return endpoint_; }

  // Sends `request` and reads its whole response; the errors are Client::Do's.
  [[nodiscard]] absl::StatusOr<ClientResponse> Do(const DirectRequest& request);

 private:
  struct Connection;
  struct Outcome;

  using TlsContext = std::shared_ptr<SSL_CTX>;

  // `tls_context`: null for http.
  DirectTransport(DirectEndpoint endpoint, TlsContext tls_context, ClientTls material,
                  std::function<absl::StatusOr<ClientTls>()> tls_source, bool verify,
                  std::shared_ptr<TlsVerifyLog> verify_log, const Clock& clock);

  // A TLS context for `material`: verification as `verify` says (the system's roots when
  // the material has no CA), failures recorded in `verify_log`.
  static absl::StatusOr<TlsContext> NewTlsContext(const ClientTls& material, bool verify,
                                                  const std::shared_ptr<TlsVerifyLog>& verify_log);
  // The context for the next connection: the source's material, built anew when it changed.
  absl::StatusOr<TlsContext> CurrentTlsContext(const DirectRequest& request);

  std::unique_ptr<Connection> TakeIdle();
  void PutIdle(std::unique_ptr<Connection> connection);
  absl::StatusOr<std::unique_ptr<Connection>> Connect(const DirectRequest& request);
  absl::Status Handshake(Connection& connection, SSL_CTX* context, const DirectRequest& request);
  Outcome Exchange(Connection& connection, const DirectRequest& request);
  absl::Status Wait(int fd, short events, const DirectRequest& request) const;
  // Waits for what an SSL call that failed with `ssl_error` (WantsIo) asks for.
  absl::Status WaitForTls(const Connection& connection, int ssl_error,
                          const DirectRequest& request) const;
  absl::Status WriteAll(Connection& connection, const DirectRequest& request) const;
  absl::StatusOr<size_t> ReadSome(Connection& connection, char* out, size_t room,
                                  const DirectRequest& request) const;

  const DirectEndpoint endpoint_;
  const std::function<absl::StatusOr<ClientTls>()> tls_source_;
  std::mutex tls_mu_;
  TlsContext tls_context_;  // under tls_mu_ when there is a source
  ClientTls tls_material_;  // what it was built from
  const bool verify_;
  const bool host_is_ip_;
  const std::shared_ptr<TlsVerifyLog> verify_log_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_;
};

}  // namespace kubestat::http::internal

#endif  // KUBESTAT_HTTP_SRC_CLIENT_DIRECT_H_
