// RestServer: the aggregator's HTTP front end (cpprestsdk http_listener).
//
// Serves RestHandler's paths (metrics/v1alpha1, metrics.k8s.io/v1beta1, discovery,
// /healthz, /livez, /readyz; see rest_handler.h) and /metrics, the Prometheus text
// exposition (version 0.0.4) of the registry it is given. Every request is counted in that
// registry:
//   kubestat_http_requests_total{route, code, method}       counter
//   kubestat_http_request_duration_seconds{route}           histogram (seconds: handling
//                                                           and rendering, not sending)
//   kubestat_http_response_bytes_total{route, content_encoding}  counter (body bytes,
//                                                           as sent: "gzip" or "identity")
// `route` is the route template ("/apis/metrics.k8s.io/v1beta1/nodes/{node}", "/metrics",
// or "other" for an unknown path), never the raw path; `method` is the HTTP method for the
// standard ones and "other" for anything else, so a peer cannot grow the label sets.
//
// Compression: a client whose Accept-Encoding admits gzip gets bodies of at least
// options.compression.min_bytes gzip-compressed (Content-Encoding: gzip), /metrics
// included; every response carries "Vary: Accept-Encoding" while compression is on.
//
// Limits: a request whose request line plus headers exceed max_header_bytes, or whose
// declared (Content-Length) or streamed (chunked) body exceeds max_request_body_bytes, gets
// 413 RequestEntityTooLarge. cpprestsdk reads the request head before the handler runs, so
// the header cap bounds what is processed, not what the library buffers.
//
// Port 0: cpprestsdk cannot report the port it bound, so Start() asks the kernel for a free
// port on the address (bind to port 0, read it back, release it) and listens there,
// retrying with another port if a different process took it in between. port() reports it.
//
// Ownership: borrows the source, the registry and the clock, which must outlive the server.
// Thread-safety: Start() and Stop() from one thread; port(), BaseUrl() and Prepare() from
// any after Start(). Requests are served on cpprestsdk's thread pool.
// Errors: Start() returns InvalidArgument for bad options, Unavailable when it cannot
// listen (address in use, unknown address).
#ifndef KUBESTAT_AGGREGATOR_REST_SERVER_H_
#define KUBESTAT_AGGREGATOR_REST_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "kubestat/aggregator/metrics_source.h"
#include "kubestat/aggregator/rest_handler.h"
#include "kubestat/core/clock.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::aggregator {

struct RestServerOptions {
  // Address to listen on: an IPv4 or IPv6 literal or a host name. Default: 0.0.0.0
  std::string address = "0.0.0.0";
  // TCP port; 0 picks a free port (see port()). Default: 8080
  int port = 8080;
  // Largest request body accepted (these are GET endpoints; a body is never needed).
  // Default: 65536
  size_t max_request_body_bytes = size_t{64} * 1024;
  // Largest request line plus headers accepted (Go's http.DefaultMaxHeaderBytes).
  // Default: 1048576
  size_t max_header_bytes = size_t{1024} * 1024;
  // How long cpprestsdk waits on a slow connection. Default: 30s
  std::chrono::seconds connection_timeout{30};
  // gzip for clients that accept it (see rest_handler.h). Default: on, from 128 KiB
  ResponseCompression compression;

  // InvalidArgument naming the field: empty address, port outside [0, 65535], a zero cap
  // or a timeout under one second.
  [[nodiscard]] absl::Status Validate() const;
};

class RestServer {
 public:
  RestServer(RestServerOptions options, const MetricsSource& source, prometheus::Registry& registry,
             const Clock& clock, LivenessCheck liveness);
  ~RestServer();  // Stop()s.
  RestServer(const RestServer&) = delete;
  RestServer& operator=(const RestServer&) = delete;

  // Validates the options and starts listening; requests are served from then on.
  [[nodiscard]] absl::Status Start();
  // Stops listening and waits for requests in flight. Idempotent.
  void Stop();

  // Prepares the answers clients asked for lately for the source's newest snapshot (see
  // RestHandler::Prepare); call it after each publish. Any thread.
  RestHandler::Prepared Prepare();

  // The port listened on (the chosen one when options.port is 0); 0 before Start().
  int port() const;
  // "http://<address>:<port>" (IPv6 in brackets; 0.0.0.0 and :: as loopback, for clients).
  std::string BaseUrl() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_REST_SERVER_H_
