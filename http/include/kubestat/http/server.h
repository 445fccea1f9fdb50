// kubestat::http::Server: the HTTP/1.1 server every kubestat process serves on (HTTPS by
// default), on Boost.Beast and Boost.Asio. It parses requests with limits checked as bytes
// arrive, hands each complete request to one Handler on a bounded worker pool, and writes
// the Response back, compressed when the client accepts gzip.
//
//   ServerOptions options;            // server_options.h: every default documented
//   options.port = 8443;
//   options.health_port = 8444;
//   Server server(options, [](const Request& r) { return Route(r); }, registry, clock);
//   if (absl::Status s = server.Start(); !s.ok()) { ... }   // bound; serving
//   ...
//   server.Stop();
//
// What the server answers itself (the handler never sees these requests). Every such
// answer is a Kubernetes Status JSON body (apimachinery/api_error.h) with `Connection: close`, and
// is counted in kubestat_http_rejected_requests_total{reason} (RejectionReasonLabel()):
//   400 malformed bytes: bad request line or field, bare LF line ends, a bad, negative,
//       repeated-and-different or > 2^63-1 Content-Length, Transfer-Encoding with
//       Content-Length, missing Host in HTTP/1.1, a request that ends early
//   404 a non-health path on the health listener (this one keeps the connection open)
//   405 a method not in ServerOptions::allowed_methods; TRACE and CONNECT always (so no
//       request is ever echoed), with `Allow`
//   408 a request whose head (header_timeout) or body (read_timeout) does not arrive in time
//   413 a body over max_body_bytes: from Content-Length before the body is read, or as
//       chunks arrive
//   414 a request-target over max_target_bytes, or a request line longer than the head limit
//   429 a full worker queue (`Retry-After: 1`)
//   431 a head over max_header_bytes or more than max_header_count fields
//   501 a Transfer-Encoding other than chunked
//   503 a plain-HTTP connection beyond max_connections (then closed; an HTTPS one is closed
//       without a handshake, so a flood does not buy TLS work)
//   505 an HTTP version other than 1.0 and 1.1
// A connection that sends nothing is closed after header_timeout (idle_timeout between
// keep-alive requests) without an answer, as Go's server does. After an answer that
// closes the connection the server stops sending and drops what the client still sends for
// up to 500 ms or 1 MiB, so the client reads the answer instead of a reset.
//
// Health under a flood. The main listener's cap and timeouts bound what a flood takes;
// past the cap new connections are turned away at once. Probes keep working in two ways:
//   - health_port: a second listener that serves only health_paths with its own cap
//     (health_max_connections); a flood on the main port cannot fill it. Point the
//     kubelet's probes there.
//   - requests for health_paths run on the I/O thread, on either listener, so a slow
//     handler or a full worker queue never delays them.
//
// Threads. io_threads run accept, TLS, parsing and writing; worker_threads run the handler
// (at most max_queued_requests wait). Health paths run the handler on an I/O thread.
// Timeouts run on the real steady clock; the injected Clock times handler durations for
// the metrics, stamps the Date header and paces the certificate-file checks.
//
// TLS (ServerOptions::tls): TLS 1.2+ (min_version), ECDHE+AEAD suites only, no
// compression, no renegotiation, no session resumption, server cipher preference, ALPN
// http/1.1. Serving pair from files re-read on change, or self-signed in cert_dir. With
// client_cas, a client certificate is requested (not required) and reported in
// Request::peer_certificate.
//
// Self-metrics (into the registry given to the constructor; every series carries
// server=<metrics_name>, so several servers can share a registry if their names differ):
//   kubestat_http_requests_total{server,route,code,method}   requests the handler answered
//       (method: GET HEAD POST PUT DELETE PATCH OPTIONS CONNECT TRACE, else "other")
//   kubestat_http_request_duration_seconds{server,route}      handler + compression time,
//       buckets 0.1 ms … 2.5 s
//   kubestat_http_response_bytes_total{server,route,content_encoding}  body bytes sent
//       (content_encoding "identity" or the response's; HEAD sends none)
//   kubestat_http_responses_total{server,route,content_type}  handler answers by the media
//       type of their body: application/json, application/vnd.kubernetes.protobuf,
//       text/plain, "other", or "none" without a Content-Type (streamed ones too)
//   kubestat_http_rejected_requests_total{server,reason}     answers by the server itself
//   kubestat_http_open_connections{server,listener}          listener: "main", "health"
//   kubestat_http_connections_total{server,listener,result}  result: accepted,
//       over_capacity, evicted (health listener), tls_handshake_failed, accept_failed
//
// Streamed responses (Response::stream). A handler that cannot give its whole body at once
// (a watch, a proxied answer, a body produced over time) returns a Response whose `stream`
// is set; the server then ignores `body` and hands the handler's code a StreamWriter:
//   response.stream = [](std::shared_ptr<StreamWriter> writer) { hub.Add(writer); };
// The producer keeps the writer and pushes chunks from any thread, whenever it has them:
// nothing waits on an I/O or worker thread while it has no data. Each Write is posted to
// the connection's strand and written there as one HTTP/1.1 chunk
// (`Transfer-Encoding: chunked`; to an HTTP/1.0 client the bytes as they are, ended by the
// close). The head goes out with the first Write, Flush or Finish, so a handler may hold
// an answer back (it never sends one if the stream closes first). Every streamed response
// carries `Connection: close` and the connection closes after the last chunk. Rules:
//   - each write to the socket must finish within limits.write_timeout, or the client is
//     dropped; while the producer has nothing to send no timer runs, so a stream lives as
//     long as the producer keeps it open (idle_timeout does not apply);
//   - the server keeps one read pending on the connection, so a client that goes away
//     ends the stream at once (bytes it sends meanwhile are dropped; a client that shuts
//     down its sending side counts as gone);
//   - the stream counts against its listener's connection cap while it is open;
//   - Stop() closes every open stream without waiting for its producer: it returns
//     promptly whatever the producers do;
//   - StreamWriter::queued_bytes() tells a producer how much the client has not taken
//     yet; the server buffers whatever is written, so a producer bounds it itself.
// When the stream ends for any reason (Finish and the last chunk written, client gone,
// write timeout, Stop), the writer becomes closed(): Write returns false from then on, and
// the OnClose callback runs once. HEAD requests and 1xx/204/304 codes get the head only;
// the body is dropped. Streamed bodies are not compressed (content_encoding is sent as the
// handler set it) and are not counted in kubestat_http_response_bytes_total.
//
// Ownership: the server borrows the registry and the clock (both must outlive it) and owns
// the handler. Thread-safety: Start, Stop, port, health_port and BaseUrl may be called from
// any thread; the handler is called concurrently from several threads.
#ifndef KUBESTAT_HTTP_SERVER_H_
#define KUBESTAT_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/apimachinery/api_error.h"
#include "kubestat/core/clock.h"
#include "kubestat/http/server_options.h"
#include "kubestat/http/server_request_reader.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::http {

// The client certificate of a TLS connection (Request::peer_certificate).
struct PeerCertificate {
  // Names of the TlsOptions::client_cas bundles the presented chain verifies against
  // (each bundle checked on its own, purpose TLS client), in the order configured. Empty
  // when it verifies against none: the connection still proceeds, without identity.
  std::vector<std::string> verified_by;
  // The leaf's subject CN and O values (user and groups, as Kubernetes reads them). Filled
  // only when verified_by is not empty, so an unverified certificate gives no identity.
  std::string common_name;
  std::vector<std::string> organizations;
};

struct HeaderField {
  std::string_view name;  // as received
  std::string_view value;
};

// One request, as the handler sees it. The views point into the server's connection and
// are valid only during the handler call.
struct Request {
  std::string_view method;           // as received, case-sensitive ("GET")
  std::string_view target;           // the request-target as received ("/a%20b?x=1")
  std::string_view path;             // target up to '?', still percent-encoded
  std::string_view query;            // after '?', without it; "" when none
  int http_version = 11;             // 10 or 11
  std::vector<HeaderField> headers;  // in the order received
  std::string_view body;
  // The client certificate of a TLS connection that presented one; nullptr on plain HTTP
  // or without a certificate.
  const PeerCertificate* peer_certificate = nullptr;
  std::string remote_address;  // the peer's IP ("127.0.0.1", "::1")
  int remote_port = 0;
  // Accept-Encoding admits gzip (core/gzip.h AcceptsGzip).
  bool accepts_gzip = false;
  // The listener that took the request: 0 for the main (or health) listener, i + 1 for
  // ServerOptions::more_listeners[i].
  size_t listener = 0;

  // The first value of the header `name` (case-insensitive), if present.
  std::optional<std::string_view> Header(std::string_view name) const;
  // Every value of the header `name`, in order.
  std::vector<std::string_view> HeaderValues(std::string_view name) const;
  // Every value of the list-valued header `name` joined with ", ", as RFC 9110 §5.3 combines
  // repeated fields ("" when absent).
  std::string CombinedHeader(std::string_view name) const;
};

// The body of a streamed response (see "Streamed responses" above). Thread-safe: every
// method may be called from any thread, concurrently. The writer outlives the connection
// safely: once the stream has ended it only reports closed().
class StreamWriter {
 public:
  virtual ~StreamWriter() = default;

  // Queues `chunk` to be sent (one HTTP chunk; empty chunks are ignored), and the head
  // before it if not yet sent. Never blocks. False when the stream has ended.
  virtual bool Write(std::string chunk) = 0;
  // Sends the head now if it has not gone out yet. False when the stream has ended.
  virtual bool Flush() = 0;
  // Ends the body after everything queued (the last chunk), then closes the connection.
  // Later writes return false. Idempotent.
  virtual void Finish() = 0;
  // Body bytes written by Write and not yet accepted by the socket.
  virtual size_t queued_bytes() const = 0;
  // True once the stream has ended: finished and sent, the client gone, a write timed
  // out, or the server stopped.
  virtual bool closed() const = 0;
  // Registers `callback` to run once when the stream ends (at once, on this thread, if it
  // already has). It runs on an I/O thread or the thread calling Server::Stop(), so it must
  // not block; it must not call back into this writer's OnClose. A later call replaces an
  // earlier callback that has not run.
  virtual void OnClose(std::function<void()> callback) = 0;
};

// Called once with the writer of a streamed response, on the thread that ran the handler
// (a worker, or the I/O thread for health paths), before the head is sent: it hands the
// writer to its producer and returns without waiting for data.
using StreamStart = std::function<void(std::shared_ptr<StreamWriter>)>;

struct Response {
  int code = 200;  // 100..599; anything else is sent as a 500
  // Default: JSON, as every kubestat API answers.
  std::string content_type = "application/json";
  // Empty = identity (the server may gzip it, CompressionOptions); otherwise the body is
  // already in this coding and is sent as it is.
  std::string content_encoding;
  std::string body;
  // More header fields. Content-Length, Transfer-Encoding, Connection, Content-Type,
  // Content-Encoding and Date are the server's and are ignored here; a Vary is joined with the
  // server's own (Accept-Encoding, when compression is on) into one field; a name or value
  // with CR, LF or NUL makes the response a 500.
  std::vector<std::pair<std::string, std::string>> headers;
  // The route template for the metrics' route label; must point to static storage (a
  // literal). Default: "other"
  std::string_view route = "other";
  // Close the connection after this response.
  bool close_connection = false;
  // When set, the body is streamed (see "Streamed responses" above) and `body` is ignored.
  StreamStart stream;
};

// The Status of `error` as a Response (code, JSON body).
Response ErrorResponse(const ApiError& error, std::string_view route = "other");
// A plain-text Response (health answers): `code`, "text/plain; charset=utf-8", `body`.
Response TextResponse(int code, std::string body, std::string_view route);

// Called for every accepted request, concurrently; must not throw (an exception becomes a
// 500 Status and is logged).
using Handler = std::function<Response(const Request&)>;

class Server {
 public:
  Server(ServerOptions options, Handler handler, prometheus::Registry& registry,
         const Clock& clock);
  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Validates the options, prepares TLS (loads or creates the serving pair), binds and
  // listens (port 0: the kernel picks, read back with port()), then serves. Errors:
  // InvalidArgument from Validate(); Unavailable naming the address when it cannot bind or
  // listen; Internal when the TLS pair or a client CA cannot be loaded or created;
  // FailedPrecondition when already started or stopped.
  [[nodiscard]] absl::Status Start();

  // Closes the listeners and every connection, lets running handlers finish, drops queued
  // requests, and joins every thread. Idempotent; returns promptly with clients connected.
  void Stop();

  // The bound port of the main listener (0 before Start).
  int port() const;
  // The bound port of listener `listener` (0: the main one, i + 1: more_listeners[i]); 0
  // before Start or out of range.
  int port(size_t listener) const;
  // The bound port of the health listener; 0 when there is none.
  int health_port() const;
  // "https://127.0.0.1:8443" ("http://" without TLS); 0.0.0.0 and :: are shown as
  // loopback, IPv6 in brackets.
  std::string BaseUrl() const;
  // The same for the health listener; "" when there is none.
  std::string HealthBaseUrl() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kubestat::http

#endif  // KUBESTAT_HTTP_SERVER_H_
