// Simulator: a fake kube-apiserver and N fake kubelets serving a ClusterModel.
//
// The kubelets serve /stats/summary (with ?only_cpu_and_memory=true), /metrics/resource
// and /healthz computed from the model at clock.Now(); the apiserver serves discovery,
// nodes and pods (list, get, watch), a fault-control API (/sim/v1/faults) and, with
// metrics_backend set, proxies /apis/metrics.k8s.io/ and /apis/metrics/ to it. Pod churn
// and container restarts become watch events on each Tick(), driven by a background
// ticker every tick_interval of real time (reading the injected clock), or by calling
// Tick() directly in tests.
//
// Lifetime: construct, Start() once, Stop() (or destroy). The clock must outlive the
// Simulator. Accessors are valid after a successful Start(). Thread-safe.
#ifndef KUBESTAT_SIM_SIMULATOR_H_
#define KUBESTAT_SIM_SIMULATOR_H_

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "kubestat/core/clock.h"
#include "kubestat/sim/faults.h"
#include "kubestat/sim/model.h"

namespace kubestat::sim {

enum class KubeletAddressMode {
  kLoopback,  // node i listens on its own loopback address 127.1.x.y (see KubeletAddress)
  kPorts,     // every node on 127.0.0.1, node i on kubelet_port + i
};

struct SimulatorOptions {
  ClusterModelOptions model;
  // Address of the fake kube-apiserver. Default: "127.0.0.1"
  std::string apiserver_address = "127.0.0.1";
  // Its port; 0 picks a free one (see apiserver_url()). Default: 0
  int apiserver_port = 0;
  // How kubelets are addressed. Default: kLoopback
  KubeletAddressMode kubelet_address_mode = KubeletAddressMode::kLoopback;
  // Kubelet port (loopback mode: on every address; ports mode: node 0's, then +1 per
  // node). 0 picks a free port per node. Default: 10250
  int kubelet_port = 10250;
  // Serve the kubelets over HTTPS with a generated CA and serving certificate.
  // Default: false
  bool tls = false;
  // Where the CA and serving certificate go with tls; empty: a new temporary directory.
  // Default: ""
  std::string tls_dir;
  // When not empty, kubelets require "Authorization: Bearer <token>" (401 otherwise).
  // Default: ""
  std::string kubelet_token;
  // Initial faults by node name. Default: none
  std::map<std::string, Fault> faults;
  // "http://127.0.0.1:PORT": where the metrics API groups are proxied. Default: ""
  std::string metrics_backend;
  // When not empty, a kubeconfig for the fake apiserver is written there. Default: ""
  std::string kubeconfig_out;
  // Real-time period of the background ticker; zero disables it (call Tick()).
  // Default: 1s
  Duration tick_interval = std::chrono::seconds(1);
  // Watch events kept for resuming watches; older resourceVersions get 410 Gone.
  // Default: 10000
  size_t watch_history = 10000;

  [[nodiscard]] absl::Status Validate() const;
};

// The loopback address of node `index` in loopback mode: 127.1.x.y with
// x = index / 250, y = index % 250 + 1 (so node 0 is 127.1.0.1).
std::string KubeletLoopbackAddress(int index);

class Simulator {
 public:
  Simulator(SimulatorOptions options, const Clock& clock);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // Builds the model, generates certificates, opens every listener. On error nothing is
  // left running and the status names the failing part (a flag, an address:port).
  [[nodiscard]] absl::Status Start();
  // Closes every listener and open watch; idempotent.
  void Stop();

  // Computes churn/restart events up to clock.Now() and sends them to watchers.
  void Tick();

  const ClusterModel& model() const;
  FaultTable& faults();
  // "http://127.0.0.1:PORT"
  std::string apiserver_url() const;
  // The kubelet of node i: host (IP) and port, and its base URL ("https://…" with tls).
  std::string kubelet_host(int node) const;
  int kubelet_port(int node) const;
  std::string kubelet_url(int node) const;
  // The CA certificate (PEM) that signed the kubelets' serving certificate; "" without tls.
  std::string ca_path() const;
  // The kubeconfig written, or "".
  std::string kubeconfig_path() const;
  // The resourceVersion the pod list currently reports.
  uint64_t resource_version() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SIMULATOR_H_
