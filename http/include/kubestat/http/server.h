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
// answer is a Kubernetes Status JSON body (core/status.h) with `Connection: close`, and is
// counted in kubestat_http_rejected_requests_total{reason} (RejectionReasonLabel()):
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
//   kubestat_http_rejected_requests_total{server,reason}     answers by the server itself
//   kubestat_http_open_connections{server,listener}          listener: "main", "health"
//   kubestat_http_connections_total{server,listener,result}  result: accepted,
//       over_capacity, tls_handshake_failed, accept_failed
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
#include "kubestat/core/clock.h"
#include "kubestat/core/status.h"
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

  // The first value of the header `name` (case-insensitive), if present.
  std::optional<std::string_view> Header(std::string_view name) const;
  // Every value of the header `name`, in order.
  std::vector<std::string_view> HeaderValues(std::string_view name) const;
};

struct Response {
  int code = 200;  // 100..599; anything else is sent as a 500
  // Default: JSON, as every kubestat API answers.
  std::string content_type = "application/json";
  // Empty = identity (the server may gzip it, CompressionOptions); otherwise the body is
  // already in this coding and is sent as it is.
  std::string content_encoding;
  std::string body;
  // More header fields. Content-Length, Transfer-Encoding, Connection, Content-Type,
  // Content-Encoding and Date are the server's and are ignored here; a name or value with
  // CR, LF or NUL makes the response a 500.
  std::vector<std::pair<std::string, std::string>> headers;
  // The route template for the metrics' route label; must point to static storage (a
  // literal). Default: "other"
  std::string_view route = "other";
  // Close the connection after this response.
  bool close_connection = false;
};

// The Status of `error` as a Response (code, JSON body).
Response ErrorResponse(const ApiError& error, std::string_view route = "other");

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
