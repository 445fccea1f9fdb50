// Bridge: kubestat-bridge's parts, wired. The client of the metrics API server (from
// --apiserver-url / --apiserver-ca-file / --apiserver-token-file, or a kubeconfig), the
// PushQueue, the Pusher's workers, the WatchClient following the aggregator, and an HTTPS
// server (http::Server, self-signed in --cert-dir unless a pair is given) for:
//   /metrics   the bridge's metrics (Prometheus text): queue, pushes, watch, HTTP server
//   /healthz   200
//   /livez     the livez checks (http/health_checks.h, kube-apiserver's form, ?verbose for
//              the reasons): loops, failing (500) when the pusher or the watch has stopped
//   /readyz    the readyz checks (503 when one fails): first-snapshot, until the first
//              snapshot of the aggregator, and the deletes of its resync, have been pushed
//              (WatchClient::snapshot_pushed); aggregator, once no watch stream has read an
//              event for --aggregator-unready-after; apiserver-push, while
//              kNotReadyAfterFailures pushes in a row or more failed (the metrics API server
//              is down or refusing)
// All of them are open without credentials (the bridge serves no data).
//
// Create() expects options that passed Validate(); it reads the credential files and binds
// the server, so machine-dependent errors come back from it: InvalidArgument naming the
// flag for a file that cannot be used, Unavailable for a listener. Start() starts the
// loops and returns at once; Stop() stops them (the server last); the destructor Stop()s.
//
// Thread-safety: Create, Start and Stop from one thread (main's); the accessors from any.
#ifndef KUBESTAT_BRIDGE_BRIDGE_H_
#define KUBESTAT_BRIDGE_BRIDGE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "kubestat/bridge/options.h"
#include "kubestat/core/clock.h"

namespace kubestat::bridge {

// Retryable push failures in a row (no success between) that make /readyz 503.
inline constexpr uint32_t kNotReadyAfterFailures = 3;

class Bridge {
 public:
  // `clock` must outlive the bridge.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Bridge>> Create(const BridgeOptions& options,
                                                                      const Clock& clock);
  ~Bridge();
  Bridge(const Bridge&) = delete;
  Bridge& operator=(const Bridge&) = delete;

  void Start();
  void Stop();  // Idempotent.

  // Where /metrics and health are served ("https://127.0.0.1:8444"), and the health-only
  // listener ("" without one).
  std::string BaseUrl() const;
  std::string HealthBaseUrl() const;
  // What /readyz answers.
  bool ready() const;

 private:
  struct Parts;
  explicit Bridge(std::unique_ptr<Parts> parts);
  std::unique_ptr<Parts> parts_;
};

}  // namespace kubestat::bridge

#endif  // KUBESTAT_BRIDGE_BRIDGE_H_
