#include "kubestat/sim/flags.h"

#include <limits>
#include <map>
#include <span>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kubestat/core/flags.h"
#include "kubestat/core/time.h"
#include "sim_strings.h"

namespace kubestat::sim {
namespace {

// core's FlagSet has string, int64, double, bool, duration and string-list flags. The sim's
// enumerations, its weighted list, its fault list, its time and its narrower integers are
// bound to those types here and converted (with an error naming the flag) after parsing.
struct RawFlags {
  explicit RawFlags(const SimulatorOptions& o)
      : seed(static_cast<int64_t>(o.model.seed)),
        nodes(o.model.nodes),
        pods_per_node(o.model.pods_per_node),
        containers_per_pod(o.model.containers_per_pod),
        tenant_namespaces(o.model.tenant_namespaces),
        workload_mix(
            absl::StrCat("steady:", o.model.steady_weight, ",diurnal:", o.model.diurnal_weight,
                         ",spiky:", o.model.spiky_weight, ",leaky:", o.model.leaky_weight)),
        cluster_start(FormatRfc3339(o.model.cluster_start)),
        apiserver_port(o.apiserver_port),
        kubelet_address_mode(o.kubelet_address_mode == KubeletAddressMode::kPorts ? "ports"
                                                                                  : "loopback"),
        kubelet_port(o.kubelet_port),
        watch_history(static_cast<int64_t>(o.watch_history)) {}

  int64_t seed;
  int64_t nodes;
  int64_t pods_per_node;
  int64_t containers_per_pod;
  int64_t tenant_namespaces;
  std::string workload_mix;
  std::string cluster_start;
  int64_t apiserver_port;
  std::string kubelet_address_mode;
  int64_t kubelet_port;
  std::string faults;
  int64_t watch_history;
  std::string podresources_faults;
};

void Register(FlagSet& flags, RawFlags& raw, SimulatorOptions& o) {
  flags.AddInt64("seed", &raw.seed, "seed of every random choice in the model");
  flags.AddInt64("nodes", &raw.nodes, "number of simulated nodes");
  flags.AddInt64("pods-per-node", &raw.pods_per_node, "pods on each node");
  flags.AddInt64("containers-per-pod", &raw.containers_per_pod, "containers in each pod (1..8)");
  flags.AddInt64("tenant-namespaces", &raw.tenant_namespaces,
                 "spread the Deployment pods round-robin over this many namespaces "
                 "tenant-0000… (0: the apps' own namespaces)");
  flags.AddString("workload-mix", &raw.workload_mix,
                  "relative weights of the container workloads (steady:W,diurnal:W,spiky:W,"
                  "leaky:W; workloads left out weigh 0)");
  flags.AddDuration("pod-lifetime", &o.model.mean_pod_lifetime,
                    "mean pod lifetime before it is replaced (0: no churn, else >= 10m)");
  flags.AddDouble("restart-fraction", &o.model.restart_fraction,
                  "fraction of non-leaky containers that restart periodically");
  flags.AddString("cluster-start", &raw.cluster_start,
                  "when the simulated cluster came up (RFC 3339)");
  flags.AddString("apiserver-address", &o.apiserver_address, "address of the fake kube-apiserver");
  flags.AddInt64("apiserver-port", &raw.apiserver_port,
                 "port of the fake kube-apiserver (0: pick a free one)");
  flags.AddBool("apiserver-tls", &o.apiserver_tls,
                "serve the fake kube-apiserver over HTTPS with a generated CA (--tls-dir/"
                "apiserver-ca.crt, written into the kubeconfigs); kubectl sends tokens only "
                "over HTTPS");
  flags.AddString("kubelet-address-mode", &raw.kubelet_address_mode,
                  "loopback: node i on 127.1.x.y; ports: all on 127.0.0.1, consecutive ports");
  flags.AddInt64("kubelet-port", &raw.kubelet_port,
                 "kubelet port (ports mode: the first one; 0: pick free ones)");
  flags.AddBool("tls", &o.tls, "serve the kubelets over HTTPS with a generated CA");
  flags.AddString(
      "tls-dir", &o.tls_dir,
      "where generated certificates go: the kubelets' CA and serving certificate "
      "(ca.crt, kubelet.crt, kubelet.key), with --apiserver-tls the apiserver's "
      "(apiserver-ca.crt, apiserver.crt, apiserver.key) and, with --metrics-backend, the "
      "front-proxy CA and client certificate (front-proxy-ca.crt, "
      "front-proxy-client.crt, front-proxy-client.key); empty: a new temporary "
      "directory, removed on exit");
  flags.AddString("kubelet-token", &o.kubelet_token,
                  "bearer token the kubelets require (empty: none)");
  flags.AddString("faults", &raw.faults,
                  "initial faults NODE=FAULT,... (timeout, http500, garbage, truncated, "
                  "oversized, slowdrip, zero-timestamp), e.g. node-0003=timeout,node-0007=http500");
  flags.AddString("metrics-backend", &o.metrics_backend,
                  "http[s]://HOST:PORT to proxy /apis/metrics.k8s.io/ and /apis/metrics/ to, "
                  "as the aggregation layer does (front-proxy client certificate, "
                  "X-Remote-User/-Group/-Extra-* headers)");
  flags.AddString("metrics-backend-ca-file", &o.metrics_backend_ca_file,
                  "PEM CA (or self-signed certificate) the https backend's serving certificate "
                  "must chain to; read when proxying and re-read when it changes (empty: the "
                  "system roots)");
  flags.AddBool("metrics-backend-insecure-skip-tls-verify",
                &o.metrics_backend_insecure_skip_tls_verify,
                "INSECURE: do not verify the https backend's serving certificate");
  flags.AddBool("authorize-proxied-requests", &o.authorize_proxied_requests,
                "with --users-file, authorize requests for the metrics groups before proxying "
                "them (false: only authenticate, the backend authorizes)");
  flags.AddBool("default-limit-ranges", &o.default_limit_ranges,
                "start with a LimitRange in namespace shop (changed at run time with PUT and "
                "DELETE /sim/v1/namespaces/{namespace}/limitranges/{name})");
  flags.AddString("users-file", &o.users_file,
                  "YAML users (name, uid, token, groups, extra) and allow rules; every request "
                  "to the fake kube-apiserver then needs a listed bearer token and a rule "
                  "allowing it, and TokenReview and SubjectAccessReview are served (empty: no "
                  "authentication)");
  flags.AddString("kubeconfig-out", &o.kubeconfig_out,
                  "write a kubeconfig for the fake apiserver to this path");
  flags.AddString("kubeconfig-user", &o.kubeconfig_user,
                  "user of --users-file whose token --kubeconfig-out carries (empty: the "
                  "file's first user)");
  flags.AddString("kubeconfig-dir", &o.kubeconfig_dir,
                  "with --users-file, write DIR/<user>.kubeconfig (mode 0600) for every user");
  flags.AddString("hollow-apiserver", &o.hollow_apiserver,
                  "https URL of a real kube-apiserver: register the nodes there (Nodes, Leases "
                  "kept renewed) and serve their kubelets, faking no API server (empty: the "
                  "fake kube-apiserver)");
  flags.AddString("hollow-ca-file", &o.hollow_ca_file, "CA (PEM) of --hollow-apiserver");
  flags.AddString("hollow-client-cert-file", &o.hollow_client_cert_file,
                  "client certificate (PEM) for --hollow-apiserver");
  flags.AddString("hollow-client-key-file", &o.hollow_client_key_file,
                  "key of --hollow-client-cert-file");
  flags.AddString("hollow-token-file", &o.hollow_token_file,
                  "bearer token file for --hollow-apiserver");
  flags.AddDuration("hollow-lease-renew-interval", &o.hollow_lease_renew_interval,
                    "how often the hollow nodes' Leases are renewed");
  flags.AddDuration("tick", &o.tick_interval,
                    "how often churn and restarts are turned into watch events (0: never)");
  flags.AddInt64("watch-history", &raw.watch_history, "watch events kept for resuming watches");
  flags.AddString("podresources-dir", &o.podresources_dir,
                  "serve each node's kubelet podresources v1 API (List, GetAllocatableResources, "
                  "Get) on the unix socket DIR/<node>/kubelet.sock, with 2 NUMA nodes, GPUs and "
                  "pinned Guaranteed pods (empty: no sockets)");
  flags.AddString("podresources-faults", &raw.podresources_faults,
                  "initial podresources socket faults NODE=FAULT,... (absent, no-allocatable, "
                  "no-get, slow), e.g. node-0002=no-allocatable");
  flags.AddDuration("podresources-slow-delay", &o.podresources_slow_delay,
                    "how long a node with the slow podresources fault holds each answer");
}

absl::Status Bad(std::string_view flag, std::string_view value, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--", Av(flag), "=", Av(value), ": ", Av(why)));
}

template <typename T>
absl::Status Narrow(std::string_view flag, int64_t value, T* out) {
  if (value < 0 ||
      static_cast<uint64_t>(value) > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
    return Bad(flag, absl::StrCat(value), "not a non-negative integer in range");
  }
  *out = static_cast<T>(value);
  return absl::OkStatus();
}

absl::Status ParseWorkloadMix(std::string_view v, ClusterModelOptions& m) {
  std::map<std::string_view, double*> fields = {{"steady", &m.steady_weight},
                                                {"diurnal", &m.diurnal_weight},
                                                {"spiky", &m.spiky_weight},
                                                {"leaky", &m.leaky_weight}};
  for (auto& [k, f] : fields) *f = 0;
  for (absl::string_view item : absl::StrSplit(Av(v), ',', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, ':');
    auto it = fields.find(Sv(kv.first));
    double w;
    if (it == fields.end() || !absl::SimpleAtod(kv.second, &w) || w < 0) {
      return Bad("workload-mix", v, "want steady:W,diurnal:W,spiky:W,leaky:W");
    }
    *it->second = w;
  }
  return absl::OkStatus();
}

absl::Status Convert(const RawFlags& raw, SimulatorOptions& o) {
  absl::Status s = Narrow("seed", raw.seed, &o.model.seed);
  s.Update(Narrow("nodes", raw.nodes, &o.model.nodes));
  s.Update(Narrow("pods-per-node", raw.pods_per_node, &o.model.pods_per_node));
  s.Update(Narrow("containers-per-pod", raw.containers_per_pod, &o.model.containers_per_pod));
  s.Update(Narrow("tenant-namespaces", raw.tenant_namespaces, &o.model.tenant_namespaces));
  s.Update(Narrow("apiserver-port", raw.apiserver_port, &o.apiserver_port));
  s.Update(Narrow("kubelet-port", raw.kubelet_port, &o.kubelet_port));
  s.Update(Narrow("watch-history", raw.watch_history, &o.watch_history));
  if (!s.ok()) return s;
  if (absl::Status w = ParseWorkloadMix(raw.workload_mix, o.model); !w.ok()) return w;
  absl::StatusOr<Timestamp> start = ParseRfc3339(raw.cluster_start);
  if (!start.ok()) return Bad("cluster-start", raw.cluster_start, "not an RFC 3339 time");
  o.model.cluster_start = *start;
  if (raw.kubelet_address_mode == "loopback") {
    o.kubelet_address_mode = KubeletAddressMode::kLoopback;
  } else if (raw.kubelet_address_mode == "ports") {
    o.kubelet_address_mode = KubeletAddressMode::kPorts;
  } else {
    return Bad("kubelet-address-mode", raw.kubelet_address_mode, "want loopback or ports");
  }
  absl::StatusOr<std::map<std::string, Fault>> faults = ParseFaultList(raw.faults);
  if (!faults.ok()) return Bad("faults", raw.faults, Sv(faults.status().message()));
  o.faults = *std::move(faults);
  absl::StatusOr<std::map<std::string, PodResourcesFault>> podresources_faults =
      ParsePodResourcesFaultList(raw.podresources_faults);
  if (!podresources_faults.ok()) {
    return Bad("podresources-faults", raw.podresources_faults,
               Sv(podresources_faults.status().message()));
  }
  o.podresources_faults = *std::move(podresources_faults);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SimulatorFlags> ParseSimulatorFlags(const std::vector<std::string>& args) {
  SimulatorFlags result;
  RawFlags raw(result.options);
  FlagSet flags("kubestat-sim", "");
  Register(flags, raw, result.options);
  const std::vector<std::string_view> views(args.begin(), args.end());
  absl::StatusOr<ParsedFlags> parsed = flags.Parse(std::span<const std::string_view>(views));
  if (!parsed.ok()) return parsed.status();
  if (parsed->help_requested) {
    result.help = true;
    return result;
  }
  if (!parsed->positional.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument \"", parsed->positional[0], "\""));
  }
  if (absl::Status s = Convert(raw, result.options); !s.ok()) return s;
  if (absl::Status s = result.options.Validate(); !s.ok()) return s;
  return result;
}

std::string SimulatorHelpText() {
  SimulatorOptions defaults;
  RawFlags raw(defaults);
  FlagSet flags("kubestat-sim",
                "A simulated Kubernetes cluster: a fake kube-apiserver (with authentication, "
                "authorization,\nTokenReview, SubjectAccessReview and the aggregation proxy) and "
                "N fake kubelets.");
  Register(flags, raw, defaults);
  return flags.Usage();
}

}  // namespace kubestat::sim
