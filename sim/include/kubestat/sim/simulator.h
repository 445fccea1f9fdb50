// Simulator: a fake kube-apiserver and N fake kubelets serving a ClusterModel.
//
// With hollow_apiserver it fakes no API server: the kubelets' nodes are registered in that
// real kube-apiserver (sim/src/hollow_nodes.h), the model's workloads are made real
// Deployments and DaemonSets there, and the kubelets run and report the pods the scheduler
// binds to them (sim/src/hollow_pods.h); a pod annotated kubestat.dev/cpu=<quantity> reports
// that cpu rate (how a test drives the HPA).
//
// The kubelets serve /stats/summary (with ?only_cpu_and_memory=true), /metrics/resource
// and /healthz computed from the model at clock.Now(); the apiserver serves discovery,
// nodes and pods (list, get, watch), a fault-control API (/sim/v1/faults) and, with
// metrics_backend set, proxies /apis/metrics.k8s.io/ and /apis/metrics/ to it. Pod churn
// and container restarts become watch events on each Tick(), driven by a background
// ticker every tick_interval of real time (reading the injected clock), or by calling
// Tick() directly in tests. DELETE /sim/v1/namespaces/{namespace}/pods/{name} deletes a
// listed pod as its controller's pod is deleted (ClusterModel::DeletePod): watchers get
// DELETED for it, then ADDED for its replacement in the same slot, and the node's kubelet
// reports the replacement; the answer is the deleted pod, 404 Status for a pod not listed
// and 405 for any other method. LimitRanges are served at /api/v1/limitranges and
// /api/v1/namespaces/{namespace}/limitranges[/{name}] (list, get, watch); PUT
// /sim/v1/namespaces/{namespace}/limitranges/{name} with a LimitRange (or its spec) creates
// or replaces one and DELETE removes it, as watch events ADDED, MODIFIED and DELETED (400
// Status for a body without spec.limits).
//
// Without users_file the apiserver asks nobody who they are (as before). With it (format:
// kubestat/sim/users.h):
//  - every request but /healthz, /livez, /readyz (and their subpaths) and /version
//    (always open, as kube-apiserver's system:public-info-viewer role opens them) needs
//    "Authorization: Bearer <token>" of a listed user, else 401 Status Unauthorized;
//  - the request, described as kube-apiserver's RequestInfo does (request_info.h), must be
//    allowed by a rule, else 403 Status Forbidden with kube-apiserver's message
//    (`nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at
//    the cluster scope`). The fault-control API /sim/v1/... is a non-resource URL like
//    any other: system:masters, or a rule with nonResourceURLs [/sim/*], may use it;
//  - POST /apis/authentication.k8s.io/v1/tokenreviews and
//    /apis/authorization.k8s.io/v1/subjectaccessreviews are served (access_review.h),
//    each needing "create" on its resource; bodies over 64 KiB get 413. Their groups are
//    listed in discovery.
//
// The aggregation proxy (metrics_backend): requests for the metrics groups are
// authenticated, authorized unless authorize_proxied_requests is false, and forwarded
// without the client's Authorization header and without any X-Remote-* header, carrying
// X-Remote-User, one X-Remote-Group per group and X-Remote-Extra-<key> of the
// authenticated user (no identity headers without users_file). Over https the proxy
// presents a generated front-proxy client certificate (CN front-proxy-client, clientAuth)
// whose CA is written to <tls dir>/front-proxy-ca.crt (front_proxy_ca_path()) for the
// backend's --requestheader-client-ca-file; the backend's certificate is verified with
// metrics_backend_ca_file, else the system roots, unless
// metrics_backend_insecure_skip_tls_verify. Status codes and headers (Content-Type,
// Content-Encoding: gzip bodies pass unchanged) pass through; bodies stream, up to 256 MiB.
// A backend that cannot be reached gives 503 Status ServiceUnavailable.
//
// With podresources_dir, each node also serves the kubelet's podresources v1 API on a unix
// socket (podresources_server.h), with its own faults (faults.h): set by
// PUT /sim/v1/podresources-faults/{node} (body: the fault's name), listed by
// GET /sim/v1/podresources-faults, and POST /sim/v1/podresources/{node}/restart replaces a
// node's socket as a restarted kubelet does (404 without podresources_dir).
//
// Lifetime: construct, Start() once, Stop() (or destroy). The clock must outlive the
// Simulator. Accessors are valid after a successful Start(). Thread-safe. Tokens are never
// logged.
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
  // Serve the fake kube-apiserver over HTTPS with a generated CA and serving certificate
  // (SANs localhost, 127.0.0.1, ::1 and apiserver_address); kubeconfigs then carry the CA
  // as certificate-authority-data. kubectl sends tokens only over HTTPS. Default: false
  bool apiserver_tls = false;
  // How kubelets are addressed. Default: kLoopback
  KubeletAddressMode kubelet_address_mode = KubeletAddressMode::kLoopback;
  // Kubelet port (loopback mode: on every address; ports mode: node 0's, then +1 per
  // node). 0 picks a free port per node. Default: 10250
  int kubelet_port = 10250;
  // Serve the kubelets over HTTPS with a generated CA and serving certificate.
  // Default: false
  bool tls = false;
  // Where generated certificates go: the kubelets' (with tls), the apiserver's (with
  // apiserver_tls) and the front-proxy CA and client certificate (with metrics_backend). Empty: a
  // new temporary directory, removed by Stop(). Default: ""
  std::string tls_dir;
  // When not empty, kubelets require "Authorization: Bearer <token>" (401 otherwise).
  // Default: ""
  std::string kubelet_token;
  // Initial faults by node name. Default: none
  std::map<std::string, Fault> faults;
  // "http[s]://HOST:PORT[/PATH]": where the metrics API groups are proxied. Default: ""
  std::string metrics_backend;
  // PEM certificates the https backend's serving certificate must chain to; read when
  // proxying and re-read when the file changes. Empty: the system roots. Default: ""
  std::string metrics_backend_ca_file;
  // Do not verify the https backend's certificate. Default: false
  bool metrics_backend_insecure_skip_tls_verify = false;
  // With users_file, authorize proxied requests as kube-apiserver does before forwarding
  // them; false leaves authorization to the backend. Default: true
  bool authorize_proxied_requests = true;
  // The users file (kubestat/sim/users.h); empty: no authentication. Default: ""
  std::string users_file;
  // When not empty, a kubeconfig for the fake apiserver is written there (mode 0600); with
  // users_file it carries the token of kubeconfig_user. Default: ""
  std::string kubeconfig_out;
  // The user whose token kubeconfig_out carries; empty: the first user of users_file.
  // Default: ""
  std::string kubeconfig_user;
  // With users_file: DIR/<user>.kubeconfig (mode 0600, "/" in a name written as %2F) is
  // written for every user. Default: ""
  std::string kubeconfig_dir;
  // Real-time period of the background ticker; zero disables it (call Tick()).
  // Default: 1s
  Duration tick_interval = std::chrono::seconds(1);
  // Watch events kept for resuming watches; a watch from an older resourceVersion, or
  // from one never handed out (an earlier simulator's), gets 410 Expired.
  // Default: 10000
  size_t watch_history = 10000;
  // ---- Hollow nodes (sim/src/hollow_nodes.h) ----
  // When not empty: the https URL of a real kube-apiserver. The simulator then fakes no API
  // server: it registers its nodes there (Nodes with their kubelets' addresses and ports,
  // capacity, allocatable and Ready; a Lease each in kube-node-lease, renewed every
  // hollow_lease_renew_interval) and serves their kubelets. Default: ""
  std::string hollow_apiserver;
  // Its CA (PEM file), and the client certificate and key and/or bearer token file of a user
  // allowed to create Nodes and Leases. Default: "", "", "", ""
  std::string hollow_ca_file;
  std::string hollow_client_cert_file;
  std::string hollow_client_key_file;
  std::string hollow_token_file;
  // How often the Leases are renewed (the kubelet's: a quarter of their 40 s). Default: 10s
  Duration hollow_lease_renew_interval = std::chrono::seconds(10);

  // Start with the default LimitRanges (namespace shop: "limits"; sim/src/stored_objects.h).
  // PUT and DELETE /sim/v1/namespaces/{namespace}/limitranges/{name} change them at run
  // time. Default: true
  bool default_limit_ranges = true;

  // ---- The kubelets' podresources API (read by kubestat-node-agent) ----
  // When not empty, node i serves the kubelet's podresources v1 API (List,
  // GetAllocatableResources, Get) on the unix socket <dir>/<node name>/kubelet.sock
  // (PodResourcesSocket()), with the topology and assignments of topology.h; Start() then
  // turns model.node_topology on, so that pods ask for what the API reports. The path of a
  // socket must fit in 107 bytes. Default: "" (no sockets)
  std::string podresources_dir;
  // Initial faults of the podresources sockets by node name (faults.h). Default: none
  std::map<std::string, PodResourcesFault> podresources_faults;
  // How long a node with the "slow" podresources fault holds each answer. Default: 10s
  Duration podresources_slow_delay = std::chrono::seconds(10);

  [[nodiscard]] absl::Status Validate() const;
};

// The loopback address of node `index` in loopback mode: 127.1.x.y with
// x = index / 250, y = index % 250 + 1 (so node 0 is 127.1.0.1).
std::string KubeletLoopbackAddress(int index);

// The resourceVersion a simulator started at wall-clock time `start` begins with: the
// microseconds since the Unix epoch (at least 1). Each watch event adds one, so a simulator
// restarted later begins above every version an earlier one handed out, as etcd's revisions
// keep growing across kube-apiserver restarts, unless the earlier one made more than one
// event per microsecond of its run or the wall clock was set back in between. A watch
// resumed from an earlier simulator's version is older than the new one's history and gets
// 410 Expired, so the client lists again.
uint64_t InitialResourceVersion(Timestamp start);

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
  // "http://127.0.0.1:PORT" ("https://…" with apiserver_tls)
  std::string apiserver_url() const;
  // <tls dir>/apiserver-ca.crt with apiserver_tls, else "".
  std::string apiserver_ca_path() const;
  // The kubelet of node i: host (IP) and port, and its base URL ("https://…" with tls).
  std::string kubelet_host(int node) const;
  int kubelet_port(int node) const;
  std::string kubelet_url(int node) const;
  // The CA certificate (PEM) that signed the kubelets' serving certificate; "" without tls.
  std::string ca_path() const;
  // The kubeconfig written, or "".
  std::string kubeconfig_path() const;
  // <tls dir>/front-proxy-ca.crt with metrics_backend, else "".
  std::string front_proxy_ca_path() const;
  // The kubeconfig written for `user` into kubeconfig_dir, or "".
  std::string user_kubeconfig_path(const std::string& user) const;
  // The resourceVersion the node and pod lists currently report: InitialResourceVersion()
  // of the clock's time at Start(), plus one per watch event since; 0 with
  // hollow_apiserver (no lists).
  uint64_t resource_version() const;

  // ---- podresources (with podresources_dir) ----
  // The faults of the podresources sockets; after Set(), call ApplyPodResourcesFault().
  PodResourcesFaultTable& podresources_faults();
  // Makes node's socket match its fault (removed when "absent", served otherwise).
  [[nodiscard]] absl::Status ApplyPodResourcesFault(int node);
  // Replaces node's socket by a new one, as a restarted kubelet does.
  [[nodiscard]] absl::Status RestartPodResources(int node);
  // <podresources_dir>/<node name>/kubelet.sock; "" without podresources_dir.
  std::string podresources_socket(int node) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SIMULATOR_H_
