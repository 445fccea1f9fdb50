// kubestat::http::Client: the HTTP/1.1 client every kubestat component uses to reach the
// Kubernetes API, kubelets and its own peers (HTTPS with optional client certificates and
// bearer tokens). Do runs each request on its caller's thread, on OpenSSL and Beast's
// parser over non-blocking sockets (a kubelet scrape wakes no other thread); Stream runs on
// cpprestsdk.
//
//   ClientOptions options;                       // every default documented below
//   options.base_url = "https://10.0.0.1:6443";
//   options.ca_pem = ca;                          // PEM text, already read from a file
//   options.bearer_token = token;
//   absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options, clock);
//   absl::StatusOr<ClientResponse> r = (*client)->Get("/api/v1/nodes?limit=500");
//   if (r.ok() && r->code == 200) Decode(r->body);
//
// Outcomes. A request that gets a complete answer returns it as a ClientResponse, whatever
// its code: a 404 or a 500 is a response, not an error; the caller decides what a code
// means. Errors are for requests that got no complete answer. Each message starts with the
// method and the URL path (without the query, which may be long), e.g.
// "GET /api/v1/nodes: connecting: ...", and never holds a bearer token or a request body:
//   DeadlineExceeded   no complete answer (head and whole body) within the timeout
//   ResourceExhausted  the body is larger than max_response_bytes (reading stopped there)
//   Unavailable        the connection could not be made ("connecting: "), the TLS
//                      handshake failed ("TLS: ", with OpenSSL's reason when the server's
//                      certificate was refused: untrusted, expired, not valid for the
//                      host), or the connection broke before the answer was complete
//   Cancelled          ClientRequest::stop was triggered
//   InvalidArgument    a malformed request (method, path or header with bad bytes)
//   the source's own code, when bearer_token_source fails
// FailureReason() gives each error a short label for metrics.
//
// Deadline. Client enforces one deadline over the whole exchange (connect, TLS, request,
// head, body), measured on the injected clock's MonotonicNow, so a peer that drips a byte
// at a time still times out. The clock (and the request's stop token) is read at least
// every 50 ms of real time while a request waits, so a FakeClock moved past the deadline
// ends the request within that. For Stream, cpprestsdk's per-operation timeout is set to
// the same value, as a backstop.
//
// Connections are kept alive and reused between requests (Do: up to 32 idle per client; a
// kept connection the server closed is not used again, and an idempotent request whose
// kept connection closed before any answer is sent once more on a new one); redirects are
// not followed (a 3xx is returned as a response). TLS 1.2 or later; with ca_pem only those
// CAs are trusted (not the system's), and the certificate must name the host of base_url
// (DNS name or IP address SAN). A response head is at most 64 KiB.
//
// Streaming: Stream() hands a body to a callback as it arrives (Kubernetes watches).
//
// Ownership: the client borrows the clock, which must outlive it. Thread-safety: Do, Stream
// and the conveniences may be called from any number of threads at once; each call blocks its
// caller until the outcome is known (at most the timeout, or until stop).
#ifndef KUBESTAT_HTTP_CLIENT_H_
#define KUBESTAT_HTTP_CLIENT_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"

namespace kubestat::http {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// The TLS material a client trusts and presents, as PEM text (ClientOptions::tls_source).
struct ClientTls {
  std::string ca_pem;
  std::string client_cert_pem;
  std::string client_key_pem;
  bool operator==(const ClientTls&) const = default;
};

struct ClientOptions {
  // Scheme, host and optional port, optionally a path prefix that every request path is
  // appended to: "https://10.0.0.1:6443", "http://127.0.0.1:8080",
  // "https://rancher.example/k8s/clusters/c-1". No trailing slash, query or fragment.
  // Required. Default: ""
  std::string base_url;
  // Trusted CA certificates (PEM text, one or more). Empty: the system's roots. Set: only
  // these. Default: ""
  std::string ca_pem;
  // Accept any server certificate (kubeconfig's insecure-skip-tls-verify). Default: false
  bool insecure_skip_tls_verify = false;
  // Client certificate chain and its private key (PEM text), presented when the server
  // asks for one. Both or neither. Default: ""
  std::string client_cert_pem;
  std::string client_key_pem;
  // Called before each new connection (not before a request on a kept one) for the
  // current TLS material, which then replaces ca_pem, client_cert_pem and client_key_pem:
  // a CA or client certificate replaced on disk is used from the next connection on (e.g.
  // kube::KubeApiTlsFiles::Get). When it differs from the material in use, the client's
  // TLS is built anew from it (kept connections stay until they close). An error from the
  // source, or material that does not load, fails that connection ("TLS: ...", Unavailable)
  // and trusts nothing new. Called from the requesting threads concurrently: it must be
  // thread-safe. https only. Default: none (the fields above, for the client's life)
  std::function<absl::StatusOr<ClientTls>()> tls_source;
  // A static bearer token sent as `Authorization: Bearer <token>`. At most one of
  // bearer_token and bearer_token_source. Default: ""
  std::string bearer_token;
  // Called before every request for the current token, so a rotated token is used from the
  // next request on (e.g. kube::BearerTokenFile::Get). An error fails that request with the
  // source's status (its message must not hold the token). Called from the requesting
  // threads concurrently: it must be thread-safe. Default: none
  std::function<absl::StatusOr<std::string>()> bearer_token_source;
  // Deadline over one whole exchange (see the file comment); > 0 and at most 24h.
  // Default: 10s
  Duration timeout = std::chrono::seconds(10);
  // Largest response body accepted, in bytes (as received, before any decoding); > 0. A
  // Content-Length above it fails at once, a body growing past it as it arrives.
  // Default: 16777216 (16 MiB)
  size_t max_response_bytes = size_t{16} << 20;
  // The User-Agent header. Default: "kubestat"
  std::string user_agent = "kubestat";

  // InvalidArgument naming the first bad field: base_url not http(s) or with a trailing
  // slash, query or fragment; ca_pem or a client certificate with an http:// base_url;
  // ca_pem without a certificate; a client certificate without its key (or the reverse),
  // or a pair that does not load or does not match; both token fields set; a token with
  // bytes a header cannot carry (the message never shows the token); a timeout not
  // positive or over 24h; max_response_bytes 0; a user_agent with control bytes.
  [[nodiscard]] absl::Status Validate() const;
};

struct ClientRequest {
  // The request method as sent ("GET", "POST", ...): an HTTP token. Default: "GET"
  std::string method = "GET";
  // Appended to ClientOptions::base_url: starts with '/', already percent-encoded.
  // Default: "/"
  std::string path_and_query = "/";
  // The request body; sent with Content-Length. Empty: none (POST, PUT and PATCH still
  // send Content-Length: 0). Default: ""
  std::string body;
  // Content-Type of a non-empty body. Default: "application/json"
  std::string content_type = "application/json";
  // More header fields (e.g. Accept). An Authorization field here replaces the client's
  // bearer token for this request. Names must be HTTP tokens, values hold no control
  // bytes (tabs aside). Default: none
  HeaderList headers;
  // Bytes of spare capacity reserved in the returned body past its end, for parsers that
  // read past the end of their input (simdjson's padding). Default: 0
  size_t body_spare_capacity = 0;
  // Storage whose capacity the response body reuses (its contents are discarded), so a
  // caller reading one body after another allocates none once its storage is large enough.
  // Do takes the string's storage, emptied, and reads the body into it, growing it only when
  // it is too small (body_spare_capacity included); ClientResponse::body then carries it and
  // *body_buffer is left empty. On an error *body_buffer gets the storage back, empty (its
  // capacity possibly grown by what was read before the failure). The limits
  // (max_response_bytes), errors and body_spare_capacity hold as without it. Must stay valid
  // during the call and not be used by another call at the same time. Stream does not use
  // it. Default: null (a new string per response)
  std::string* body_buffer = nullptr;
  // Triggering it abandons the request at once (the connection is closed): Cancelled.
  // Default: a token that never stops
  std::stop_token stop;
  // Stream() only: called once on the calling thread when the response head arrives, with
  // its status code, before any of the body (a watch learns that the server answered
  // before its first event). Default: none
  std::function<void(int status_code)> on_stream_head;
};

struct ClientResponse {
  int code = 0;              // the HTTP status code, 100..599
  std::string content_type;  // the Content-Type field; "" when absent
  // Every response header field (a repeated field's values joined with ", ").
  HeaderList headers;
  std::string body;  // as received (a gzip body stays compressed)

  // The value of header `name` (case-insensitive); "" when absent.
  std::string Header(std::string_view name) const;
};

class Client {
 public:
  // Validates `options` (InvalidArgument from Validate()) and builds the client. No
  // connection is made until the first request.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Client>> Create(ClientOptions options,
                                                                      const Clock& clock);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // One request; see the file comment for what is a response and what is an error.
  [[nodiscard]] absl::StatusOr<ClientResponse> Do(const ClientRequest& request);

  // A streaming request (a watch): sends `request` and hands the body to `on_chunk` piece by
  // piece as it arrives, rather than waiting for all of it. A piece is whatever the
  // connection holds when the client looks (one or more bytes; chunk boundaries of the
  // peer are not kept); the view is valid only during the call.
  //
  // The response head must arrive within `header_timeout` (> 0), measured on the injected
  // clock like Do's deadline: DeadlineExceeded ("timeout") otherwise. *status_code is then
  // set. The body has no deadline of its own; cpprestsdk's per-operation timeout
  // (ClientOptions::timeout) ends a stream that stays silent that long (DeadlineExceeded).
  // max_response_bytes does not apply to a 2xx body (the caller bounds what it keeps).
  //
  // Returns OK when a 2xx body ends or `on_chunk` returns false (the connection is then
  // closed), and when the answer is not 2xx: `on_chunk` is not called, the first 64 KiB of
  // the body go to *error_body (reading stops there) and the caller reads *status_code.
  // Cancelled ("cancelled") when ClientRequest::stop is triggered, at any point. The other
  // errors are Do's, with the same messages and FailureReason labels ("read" when the
  // connection breaks during the body). request.body_spare_capacity and
  // request.body_buffer are not used.
  // `status_code` and `error_body` must not be null; *error_body is cleared first.
  // Thread-safety: as Do; `on_chunk` runs on the calling thread.
  [[nodiscard]] absl::Status Stream(const ClientRequest& request, Duration header_timeout,
                                    const std::function<bool(std::string_view chunk)>& on_chunk,
                                    int* status_code, std::string* error_body);

  // Conveniences over Do.
  [[nodiscard]] absl::StatusOr<ClientResponse> Do(
      std::string_view method, std::string_view path_and_query, std::string_view body = "",
      std::string_view content_type = "application/json", const HeaderList& headers = {});
  [[nodiscard]] absl::StatusOr<ClientResponse> Get(std::string_view path_and_query,
                                                   const HeaderList& headers = {});
  [[nodiscard]] absl::StatusOr<ClientResponse> Post(
      std::string_view path_and_query, std::string_view body,
      std::string_view content_type = "application/json", const HeaderList& headers = {});
  [[nodiscard]] absl::StatusOr<ClientResponse> Put(
      std::string_view path_and_query, std::string_view body,
      std::string_view content_type = "application/json", const HeaderList& headers = {});
  [[nodiscard]] absl::StatusOr<ClientResponse> Delete(std::string_view path_and_query,
                                                      const HeaderList& headers = {});

  const ClientOptions& options() const;

 private:
  class Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A short label for an error from Client, for metrics: "timeout" (DeadlineExceeded),
// "too_large" (ResourceExhausted), "tls" (handshake or certificate), "connect" (no
// connection), "read" (the connection broke after the answer started), "cancelled",
// "request" (InvalidArgument), "auth" (bearer_token_source failed); "other" for a status
// that did not come from Client, "" for OK.
std::string FailureReason(const absl::Status& status);

}  // namespace kubestat::http

#endif  // KUBESTAT_HTTP_CLIENT_H_
