// The aggregation proxy's client: forwards one request to the metrics backend over HTTP or
// HTTPS and streams the answer back, as kube-apiserver's aggregation layer does.
//
// Every request gets its own connection ("Connection: close"). Over HTTPS the proxy
// presents the front-proxy client certificate and verifies the backend's certificate and
// host name (an IP in the URL must be in the certificate's IP SANs) against, in order:
// nothing with insecure_skip_tls_verify; the certificates in ca_file, which is read on the
// first request and re-read whenever its modification time, size or inode changes (the
// backend may write it after the proxy starts); otherwise the system's roots. Transfer
// encodings are undone; Content-Encoding is not (a gzip body passes byte for byte). Bodies
// are never buffered whole: each chunk goes to the sink as it arrives, and a body larger
// than max_response_bytes is cut off with an error.
//
// Errors reaching the backend (resolve, connect, TLS, a missing or unreadable ca_file,
// a timeout) come back as Unavailable statuses whose message reads like kube-apiserver's:
// "error trying to reach service: connect 127.0.0.1:8443: Connection refused".
//
// Thread-safe. One background thread runs every connection. Stop() (or the destructor)
// aborts the connections still open, each sink learning of it, and joins the thread.
#ifndef KUBESTAT_SIM_SRC_BACKEND_PROXY_H_
#define KUBESTAT_SIM_SRC_BACKEND_PROXY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/sim/users.h"

namespace kubestat::sim {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct BackendProxyOptions {
  // "http[s]://host[:port][/base/path]"; requests' targets are appended to the base path.
  std::string url;
  // PEM certificates trusted for the backend's serving certificate. Default: "" (system roots)
  std::string ca_file;
  // Do not verify the backend's certificate at all. Default: false
  bool insecure_skip_tls_verify = false;
  // Client certificate (chain) and key presented over HTTPS; empty: none. Default: ""
  std::string client_cert_file;
  std::string client_key_file;
  // Largest response body passed on. Default: 256 MiB
  uint64_t max_response_bytes = uint64_t{256} << 20;
  // Deadline of each network step (connect, handshake, write, each read). Default: 60s
  Duration step_timeout = std::chrono::seconds(60);
};

struct ProxiedRequest {
  std::string method;  // "GET"
  std::string target;  // encoded path and query: "/apis/metrics.k8s.io/v1beta1/nodes?x=1"
  HeaderList headers;  // sent as given, duplicates included (Host is set by the proxy)
  std::string body;
};

struct ProxiedResponseHead {
  int status = 0;
  // The backend's headers without hop-by-hop ones (Connection, Transfer-Encoding,
  // Content-Length, Keep-Alive, …).
  HeaderList headers;
  std::optional<uint64_t> content_length;
  bool has_body = true;  // false for HEAD, 1xx, 204 and 304
};

// Receives one proxied answer, on the proxy's thread.
class ProxyResponseSink {
 public:
  virtual ~ProxyResponseSink() = default;
  // Exactly once: the response head, or why none came (then nothing else is called).
  virtual void OnHead(absl::StatusOr<ProxiedResponseHead> head) = 0;
  // Zero or more times after a head: the next piece of the body.
  virtual void OnData(std::string_view chunk) = 0;
  // Once after a head: OK at the end of the body, else why it ended early.
  virtual void OnEnd(absl::Status status) = 0;
};

class BackendProxy {
 public:
  // Checks the URL and starts the thread. InvalidArgument naming --metrics-backend for a
  // bad URL.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BackendProxy>> Create(
      BackendProxyOptions options);
  ~BackendProxy();
  BackendProxy(const BackendProxy&) = delete;
  BackendProxy& operator=(const BackendProxy&) = delete;

  void Forward(ProxiedRequest request, std::shared_ptr<ProxyResponseSink> sink);
  void Stop();

  struct Impl;

 private:
  explicit BackendProxy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The headers a proxied request carries, from the client's: hop-by-hop headers, Host,
// Content-Length and every X-Remote-* header are dropped; with `user`, Authorization is
// dropped too and X-Remote-User, one X-Remote-Group per group and
// X-Remote-Extra-<key> (key percent-escaped, one header per value) are added.
HeaderList FrontProxyHeaders(const HeaderList& incoming, const UserInfo* user);

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_BACKEND_PROXY_H_
