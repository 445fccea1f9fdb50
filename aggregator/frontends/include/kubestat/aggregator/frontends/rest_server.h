// RestServer: the aggregator's HTTP front end, on the shared HTTP server (http/server.h):
// HTTPS by default, every request authenticated and authorized before it is answered.
//
// Serves RestHandler's paths (metrics/v1alpha1, metrics.k8s.io/v1 and v1beta1, discovery,
// /healthz, /livez, /readyz; see rest_handler.h) and /metrics, the Prometheus text
// exposition (version 0.0.4) of the registry it is given.
//
// Access, in this order, for every request:
//   1. A path in always_allow_paths (exact, or a prefix ending in '*') is answered at once,
//      without credentials: the kubelet's probes send none.
//   2. The authenticator names the user (front-proxy headers from a proxy whose client
//      certificate chains to the request-header CA, client certificates, bearer tokens; see
//      kube/authenticator.h). Without an identity: 401 Status "Unauthorized" (why is logged
//      at verbosity 1, never a credential).
//   3. The authorizer decides on the request's attributes as kube-apiserver derives them
//      (group, version, resource `nodes` or `pods`, namespace, name, verb get/list/watch;
//      /metrics and discovery as non-resource URLs). Denied: 403 Status in kube-apiserver's
//      words (`pods.metrics.k8s.io is forbidden: User "alice" cannot list resource "pods" in
//      API group "metrics.k8s.io" in the namespace "team-b"`).
//   4. A watch of a metrics resource (`?watch=1`, as the HPA's watch-list request asks
//      first) is answered 405 MethodNotAllowed, so client-go falls back to a list at once.
// The transport's own limits (header, body, connections, timeouts, TLS) are the HTTP
// server's (server_options.h); it answers what breaks them itself.
//
// Self-metrics: the HTTP server's kubestat_http_* series (labelled server="secure", or
// "insecure" for the plain listener), and the authenticator's and authorizer's.
//
// Ownership: borrows the source, the registry, the clock and the access control, which must
// outlive the server. Thread-safety: Start() and Stop() from one thread; port(), BaseUrl()
// and Prepare() from any after Start(). Requests are served on the HTTP server's threads.
#ifndef KUBESTAT_AGGREGATOR_FRONTENDS_REST_SERVER_H_
#define KUBESTAT_AGGREGATOR_FRONTENDS_REST_SERVER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/aggregator/frontends/rest_handler.h"
#include "kubestat/aggregator/query/metrics_source.h"
#include "kubestat/core/clock.h"
#include "kubestat/http/server_options.h"
#include "kubestat/kube/authenticator.h"
#include "kubestat/kube/authorizer.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::aggregator {

struct RestServerOptions {
  // The main listener: address, port (0 picks one), TLS (on by default), limits,
  // compression and the optional health listener. Default: http::ServerOptions{} with
  // metrics_name "secure"
  http::ServerOptions secure = SecureDefaults();
  // A second, plain-HTTP listener, only when explicitly asked for (--port); its tls is
  // turned off whatever it says. Same access control. Default: none
  std::optional<http::ServerOptions> insecure;
  // Paths answered without credentials. Default: /healthz, /livez, /readyz
  std::vector<std::string> always_allow_paths = {"/healthz", "/livez", "/readyz"};
  // metrics.k8s.io leaves out objects whose newest sample is older (RestHandler); zero:
  // nothing is left out. Default: 0
  Duration metrics_max_age = Duration::zero();

  // InvalidArgument naming the field; the listeners' own Validate() runs in Start().
  [[nodiscard]] absl::Status Validate() const;
  static http::ServerOptions SecureDefaults();
};

// Who may do what: both must outlive the server.
struct AccessControl {
  kube::Authenticator* authenticator = nullptr;
  kube::Authorizer* authorizer = nullptr;
};

class RestServer {
 public:
  RestServer(RestServerOptions options, const MetricsSource& source, prometheus::Registry& registry,
             const Clock& clock, LivenessCheck liveness, AccessControl access);
  ~RestServer();  // Stop()s.
  RestServer(const RestServer&) = delete;
  RestServer& operator=(const RestServer&) = delete;

  // Validates the options and starts the listeners; requests are served from then on.
  // InvalidArgument for bad options, Unavailable when a listener cannot bind, Internal when
  // the TLS material cannot be loaded or made.
  [[nodiscard]] absl::Status Start();
  // Stops listening and waits for requests in flight. Idempotent.
  void Stop();

  // Prepares the answers clients asked for lately for the source's newest snapshot (see
  // RestHandler::Prepare); call it after each publish. Any thread.
  RestHandler::Prepared Prepare();

  // Serves metrics/v1alpha1 recommendations from `recommender` (RestHandler::SetRecommender);
  // call before Start().
  void SetRecommender(const Recommender* recommender);

  // The checks behind /livez and /readyz (RestHandler::health(), counted in the registry);
  // add the owner's checks before Start().
  http::HealthChecks& health();

  // The main listener's port and URL ("https://127.0.0.1:8443"); 0 / "" before Start().
  int port() const;
  std::string BaseUrl() const;
  // The plain listener's, when there is one (0 / "" otherwise).
  int insecure_port() const;
  std::string InsecureBaseUrl() const;
  // The health listener's URL of the main listener, when it has one ("" otherwise).
  std::string HealthBaseUrl() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_FRONTENDS_REST_SERVER_H_
