// Options of kubestat::http::Server (server.h): where it listens, how much one peer may
// make it hold, TLS, compression and metrics naming.
//
// Every field's comment ends with its default. Defaults follow kube-apiserver and Go's
// net/http where they have one (1 MiB of request head, 3 MiB of body, TLS 1.2 with ECDHE
// and AEAD only, self-signed serving certificate in a cert dir), and are tighter where they
// have none (connection cap, timeouts for a head or a body that does not arrive).
//
// Memory bound. A connection holds at most one request: its head (max_header_bytes) and
// its body (max_body_bytes), plus a fixed ~40 KiB (socket buffers are the kernel's, TLS
// state ~30 KiB, read buffer 16 KiB). The worst case a peer can make the server hold is
//   (max_connections + health_max_connections) × (max_header_bytes + max_body_bytes + 40 KiB)
// = (1024 + 32) × (1 MiB + 3 MiB + 40 KiB) ≈ 4.2 GiB with the defaults. A server that takes
// no request bodies (the aggregator's read API) should lower max_body_bytes; a server with
// a memory limit should size max_connections from this formula. Response bodies are the
// handler's and are not counted here.
//
// Values; thread-compatible.
#ifndef KUBESTAT_HTTP_SERVER_OPTIONS_H_
#define KUBESTAT_HTTP_SERVER_OPTIONS_H_

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace kubestat::http {

// Limits on what one peer may send and how long it may take. A request that breaks one is
// answered by the server itself (a Kubernetes Status body, `Connection: close`) and never
// reaches the handler; see server.h for the code of each.
struct ServerLimits {
  // Most concurrent connections on the main listener. A connection accepted beyond it is
  // answered 503 and closed at once (plain HTTP), or closed at once without a TLS
  // handshake (HTTPS), so a flood cannot take descriptors or memory past the cap.
  // Default: 1024
  size_t max_connections = 1024;
  // Longest request-target (path and query) in bytes; longer ones get 414. Default: 8192
  size_t max_target_bytes = 8 * 1024;
  // Largest request head in bytes: request line, header fields and the empty line. A head
  // still growing past it gets 431, or 414 when the request line itself has not ended
  // (Go's MaxHeaderBytes). Default: 1048576
  size_t max_header_bytes = 1024 * 1024;
  // Most header fields in one request; more get 431. Default: 100
  size_t max_header_count = 100;
  // Largest request body in bytes. A Content-Length above it is answered 413 as soon as
  // the head has arrived, before any of the body is read; a chunked body is answered 413
  // as soon as its chunks add up to more (kube-apiserver's 3 MiB). Default: 3145728
  size_t max_body_bytes = 3 * 1024 * 1024;
  // Time from a connection's accept (TLS handshake included), or from the first byte of a
  // later request, to the end of the request head; a head that started but did not end in
  // time is answered 408, a connection that sent nothing is closed. Default: 10s
  std::chrono::milliseconds header_timeout = std::chrono::seconds(10);
  // Time from a request's first byte to the end of its body; 408 when it is not complete
  // in time. Default: 60s
  std::chrono::milliseconds read_timeout = std::chrono::seconds(60);
  // Time to write one response; a client that does not read it in time is dropped.
  // Default: 60s
  std::chrono::milliseconds write_timeout = std::chrono::seconds(60);
  // Time a keep-alive connection may wait for its next request. Default: 90s
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(90);
  // Requests served on one connection before it is closed (the last response carries
  // `Connection: close`), so clients spread over replicas again; 0 = no limit.
  // Default: 1000
  size_t max_requests_per_connection = 1000;
  // Requests waiting for a worker thread; a request that finds the queue full is answered
  // 429 with `Retry-After: 1` (kube-apiserver's max-in-flight answer). Default: 1024
  size_t max_queued_requests = 1024;
};

// A named bundle of client CA certificates (PEM). Names are what
// PeerCertificate::verified_by reports, e.g. "client-ca" for --client-ca-file and
// "requestheader-client-ca" for --requestheader-client-ca-file.
struct ClientCaBundle {
  std::string name;
  std::string file;
  // A bundle another part of the process keeps up to date (the cluster's trust, read from
  // its ConfigMap): while the file is missing or holds no certificate, the bundle verifies
  // nothing instead of failing the listener. Default: false (the file must hold one)
  bool may_be_empty = false;
};

struct TlsOptions {
  // Serve HTTPS. Plain HTTP only when a caller turns this off explicitly (tests, a
  // loopback-only listener behind a proxy). Default: true
  bool enabled = true;
  // PEM serving certificate (with its chain) and private key (--tls-cert-file,
  // --tls-private-key-file). Both or neither. They are re-read when they change on disk:
  // at most once a second, when a handshake starts, the files' identity (inode, size,
  // mtime) is compared, a changed pair is loaded and swapped in for later handshakes; a
  // pair that does not load keeps the previous one (logged once per change).
  // Default: "" (self-signed in cert_dir)
  std::string cert_file;
  std::string key_file;
  // Without cert_file and key_file: the directory holding a self-signed pair,
  // <cert_dir>/apiserver.crt and <cert_dir>/apiserver.key (key mode 0600), created at
  // Start() unless a valid, unexpired pair is already there, as kube components do
  // (--cert-dir). Default: "apiserver.local.config/certificates"
  std::string cert_dir = "apiserver.local.config/certificates";
  // Extra DNS names or IP addresses for the self-signed certificate's SANs, beyond
  // localhost, 127.0.0.1 and ::1. Default: none
  std::vector<std::string> self_signed_hosts;
  // Lowest protocol version, spelled as Kubernetes spells it (--tls-min-version):
  // "VersionTLS12" or "VersionTLS13". Default: "VersionTLS12"
  std::string min_version = "VersionTLS12";
  // Cipher suites as Go/IANA names (--tls-cipher-suites), e.g.
  // "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256". TLS 1.2 suites must be ECDHE with AEAD (GCM
  // or ChaCha20-Poly1305); the TLS 1.3 names (TLS_AES_128_GCM_SHA256, …) restrict TLS 1.3
  // when given. Empty = DefaultCipherSuites() (tls_config.h). Default: empty
  std::vector<std::string> cipher_suites;
  // Client CA bundles. When non-empty the server requests (does not require) a client
  // certificate and reports which bundles the presented chain verifies against
  // (server.h, PeerCertificate). Re-read with the serving pair. Default: none
  std::vector<ClientCaBundle> client_cas;
};

// Response compression (the semantics of the aggregator's former ResponseCompression).
struct CompressionOptions {
  // gzip bodies (level 1) for clients whose Accept-Encoding admits it, when the handler
  // did not set a content encoding itself; every response then carries
  // `Vary: Accept-Encoding`. Default: true
  bool enabled = true;
  // Smallest body compressed (kube-apiserver's threshold). Default: 131072
  size_t min_bytes = 128 * 1024;
};

// Where one more main listener listens (ServerOptions::more_listeners).
struct ListenerAddress {
  std::string address;  // IPv4 or IPv6 literal
  int port = 0;         // 0 = the kernel picks one
};

struct ServerOptions {
  // Address to listen on (IPv4 or IPv6 literal). Default: "0.0.0.0"
  std::string address = "0.0.0.0";
  // Port of the main listener; 0 = the kernel picks one (read it back with port()).
  // Default: 0
  int port = 0;
  // More listeners that serve as the main one does, each with its own connection cap
  // (limits.max_connections), on the same I/O and worker threads; a request tells which
  // listener took it (Request::listener). One server then stands for many endpoints (the
  // simulator's kubelets, one per loopback address) at a fixed cost in threads and
  // descriptors instead of one server each. Default: none
  std::vector<ListenerAddress> more_listeners;
  // Port of the health listener, which serves health_paths only (anything else 404) with
  // its own small cap, so probes are answered while the main listener is at its cap; -1 =
  // no health listener, 0 = the kernel picks. It speaks TLS when tls.enabled. Point the
  // kubelet's liveness and readiness probes at it. Default: -1
  int health_port = -1;
  // Connection cap of the health listener (it has no queue: health requests run on the
  // I/O thread). At the cap a new connection is not turned away: an open one is closed to
  // make room, from the peer address holding the most connections, the one that has made
  // the least progress (none of a request received, then a partial head), the oldest first.
  // Connections that hold a slot without asking for anything, from anywhere, then cannot
  // keep the kubelet's probes out. A connection whose request is being answered is never
  // closed for this; when every one is, the new connection is closed.
  // Default: 32
  size_t health_max_connections = 32;
  // The health listener's header_timeout: from the accept (the kernel hands over a
  // connection only once its first bytes have arrived, TCP_DEFER_ACCEPT) to the end of the
  // request head. A probe sends its request at once; the kubelet gives it 1 s by default.
  // Default: 2s
  std::chrono::milliseconds health_header_timeout = std::chrono::seconds(2);
  // Request paths that are health checks: on either listener they are handled on the I/O
  // thread, never behind the worker queue, so a busy or saturated handler pool does not
  // delay a probe; their handler must answer at once. Default: /healthz, /livez, /readyz
  std::vector<std::string> health_paths = {"/healthz", "/livez", "/readyz"};
  // Threads doing socket I/O, TLS and parsing. Default: 2
  int io_threads = 2;
  // Threads running the handler for non-health requests (a handler may take a while for a
  // large list; it never holds up other connections' I/O). Default: 4
  int worker_threads = 4;
  // Methods handed to the handler; any other method gets 405 with an Allow header, as soon
  // as the request line arrives. TRACE and CONNECT may not be listed.
  // Default: GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS
  std::vector<std::string> allowed_methods = {"GET",    "HEAD",  "POST",   "PUT",
                                              "DELETE", "PATCH", "OPTIONS"};
  // The value of the `server` label on every self-metric, so several servers of one
  // process can share one registry (give each its own name). Default: "main"
  std::string metrics_name = "main";

  ServerLimits limits;
  TlsOptions tls;
  CompressionOptions compression;

  // InvalidArgument naming the first bad field (and, for TLS names, the flag:
  // --tls-min-version, --tls-cipher-suites).
  [[nodiscard]] absl::Status Validate() const;
};

}  // namespace kubestat::http

#endif  // KUBESTAT_HTTP_SERVER_OPTIONS_H_
