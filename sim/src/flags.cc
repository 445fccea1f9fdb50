#include "kubestat/sim/flags.h"

#include <functional>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kubestat/core/time.h"
#include "sim_strings.h"

namespace kubestat::sim {
namespace {

struct FlagSpec {
  const char* name;
  const char* default_value;
  const char* help;
  bool is_bool;
  std::function<absl::Status(std::string_view, SimulatorOptions&)> apply;
};

absl::Status Bad(std::string_view flag, std::string_view value, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--", Av(flag), "=", Av(value), ": ", Av(why)));
}

template <typename T>
std::function<absl::Status(std::string_view, SimulatorOptions&)> Int(const char* name,
                                                                     T SimulatorOptions::*field) {
  return [name, field](std::string_view v, SimulatorOptions& o) {
    int64_t x;
    if (!absl::SimpleAtoi(Av(v), &x) || x < 0) return Bad(name, v, "not a non-negative integer");
    o.*field = static_cast<T>(x);
    return absl::OkStatus();
  };
}

template <typename T>
std::function<absl::Status(std::string_view, SimulatorOptions&)> ModelInt(
    const char* name, T ClusterModelOptions::*field) {
  return [name, field](std::string_view v, SimulatorOptions& o) {
    int64_t x;
    if (!absl::SimpleAtoi(Av(v), &x) || x < 0) return Bad(name, v, "not a non-negative integer");
    o.model.*field = static_cast<T>(x);
    return absl::OkStatus();
  };
}

std::function<absl::Status(std::string_view, SimulatorOptions&)> Str(
    std::string SimulatorOptions::*field) {
  return [field](std::string_view v, SimulatorOptions& o) {
    o.*field = std::string(v);
    return absl::OkStatus();
  };
}

absl::StatusOr<Duration> DurationFlag(std::string_view name, std::string_view v) {
  if (v == "0") return Duration::zero();
  absl::StatusOr<Duration> d = ParseDuration(v);
  if (!d.ok()) return Bad(name, v, "not a duration (e.g. 10s, 4h)");
  return *d;
}

const std::vector<FlagSpec>& Specs() {
  static const auto* specs = new std::vector<FlagSpec>{
      {"seed", "1", "seed of every random choice in the model", false,
       ModelInt("seed", &ClusterModelOptions::seed)},
      {"nodes", "50", "number of simulated nodes", false,
       ModelInt("nodes", &ClusterModelOptions::nodes)},
      {"pods-per-node", "30", "pods on each node", false,
       ModelInt("pods-per-node", &ClusterModelOptions::pods_per_node)},
      {"containers-per-pod", "2", "containers in each pod (1..8)", false,
       ModelInt("containers-per-pod", &ClusterModelOptions::containers_per_pod)},
      {"tenant-namespaces", "0",
       "spread the Deployment pods round-robin over this many namespaces tenant-0000… "
       "(0: the apps' own namespaces)",
       false, ModelInt("tenant-namespaces", &ClusterModelOptions::tenant_namespaces)},
      {"workload-mix", "steady:4,diurnal:3,spiky:2,leaky:1",
       "relative weights of the container workloads", false,
       [](std::string_view v, SimulatorOptions& o) -> absl::Status {
         std::map<std::string_view, double*> fields = {{"steady", &o.model.steady_weight},
                                                       {"diurnal", &o.model.diurnal_weight},
                                                       {"spiky", &o.model.spiky_weight},
                                                       {"leaky", &o.model.leaky_weight}};
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
       }},
      {"pod-lifetime", "4h", "mean pod lifetime before it is replaced (0: no churn, else >= 10m)",
       false,
       [](std::string_view v, SimulatorOptions& o) -> absl::Status {
         absl::StatusOr<Duration> d = DurationFlag("pod-lifetime", v);
         if (!d.ok()) return d.status();
         o.model.mean_pod_lifetime = *d;
         return absl::OkStatus();
       }},
      {"restart-fraction", "0.05", "fraction of non-leaky containers that restart periodically",
       false,
       [](std::string_view v, SimulatorOptions& o) -> absl::Status {
         if (!absl::SimpleAtod(Av(v), &o.model.restart_fraction)) {
           return Bad("restart-fraction", v, "not a number");
         }
         return absl::OkStatus();
       }},
      {"cluster-start", "2026-01-01T00:00:00Z", "when the simulated cluster came up (RFC 3339)",
       false,
       [](std::string_view v, SimulatorOptions& o) -> absl::Status {
         absl::StatusOr<Timestamp> t = ParseRfc3339(v);
         if (!t.ok()) return Bad("cluster-start", v, "not an RFC 3339 time");
         o.model.cluster_start = *t;
         return absl::OkStatus();
       }},
      {"apiserver-address", "127.0.0.1", "address of the fake kube-apiserver", false,
       Str(&SimulatorOptions::apiserver_address)},
      {"apiserver-port", "0", "port of the fake kube-apiserver (0: pick a free one)", false,
       Int("apiserver-port", &SimulatorOptions::apiserver_port)},
      {"kubelet-address-mode", "loopback",
       "loopback: node i on 127.1.x.y; ports: all on 127.0.0.1, consecutive ports", false,
       [](std::string_view v, SimulatorOptions& o) -> absl::Status {
         if (v == "loopback") {
           o.kubelet_address_mode = KubeletAddressMode::kLoopback;
         } else if (v == "ports") {
           o.kubelet_address_mode = KubeletAddressMode::kPorts;
         } else {
           return Bad("kubelet-address-mode", v, "want loopback or ports");
         }
         return absl::OkStatus();
       }},
      {"kubelet-port", "10250", "kubelet port (ports mode: the first one; 0: pick free ones)",
       false, Int("kubelet-port", &SimulatorOptions::kubelet_port)},
      {"tls", "false", "serve the kubelets over HTTPS with a generated CA", true,
       [](std::string_view v, SimulatorOptions& o) -> absl::Status {
         if (v == "true" || v == "1") {
           o.tls = true;
         } else if (v == "false" || v == "0") {
           o.tls = false;
         } else {
           return Bad("tls", v, "want true or false");
         }
         return absl::OkStatus();
       }},
      {"tls-dir", "", "where the CA and serving certificate are written (default: a temp dir)",
       false, Str(&SimulatorOptions::tls_dir)},
      {"kubelet-token", "", "bearer token the kubelets require (empty: none)", false,
       Str(&SimulatorOptions::kubelet_token)},
      {"faults", "", "initial faults, e.g. node-0003=timeout,node-0007=http500", false,
       [](std::string_view v, SimulatorOptions& o) -> absl::Status {
         absl::StatusOr<std::map<std::string, Fault>> f = ParseFaultList(v);
         if (!f.ok()) return Bad("faults", v, Sv(f.status().message()));
         o.faults = *std::move(f);
         return absl::OkStatus();
       }},
      {"metrics-backend", "",
       "http://HOST:PORT to proxy /apis/metrics.k8s.io/ and /apis/metrics/ to", false,
       Str(&SimulatorOptions::metrics_backend)},
      {"kubeconfig-out", "", "write a kubeconfig for the fake apiserver to this path", false,
       Str(&SimulatorOptions::kubeconfig_out)},
      {"tick", "1s", "how often churn and restarts are turned into watch events", false,
       [](std::string_view v, SimulatorOptions& o) -> absl::Status {
         absl::StatusOr<Duration> d = DurationFlag("tick", v);
         if (!d.ok()) return d.status();
         o.tick_interval = *d;
         return absl::OkStatus();
       }},
      {"watch-history", "10000", "watch events kept for resuming watches", false,
       Int("watch-history", &SimulatorOptions::watch_history)},
  };
  return *specs;
}

}  // namespace

absl::StatusOr<SimulatorFlags> ParseSimulatorFlags(const std::vector<std::string>& args) {
  SimulatorFlags flags;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      flags.help = true;
      continue;
    }
    if (arg.substr(0, 2) != "--") {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", Av(arg), "\""));
    }
    arg.remove_prefix(2);
    std::string_view name = arg;
    std::string_view value;
    bool has_value = false;
    if (size_t eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& s : Specs()) {
      if (name == s.name) spec = &s;
    }
    if (spec == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", Av(name), " (see --help)"));
    }
    if (!has_value) {
      if (spec->is_bool) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("--", Av(name), " needs a value"));
      }
    }
    if (absl::Status s = spec->apply(value, flags.options); !s.ok()) return s;
  }
  if (absl::Status s = flags.options.Validate(); !s.ok()) return s;
  return flags;
}

std::string SimulatorHelpText() {
  std::string out =
      "kubestat-sim: a simulated Kubernetes cluster (fake kube-apiserver and kubelets).\n\n"
      "Usage: kubestat-sim [--flag=value ...]\n\nFlags:\n";
  for (const FlagSpec& s : Specs()) {
    absl::StrAppend(&out, "  --", s.name, "\n      ", s.help, " (default: \"", s.default_value,
                    "\")\n");
  }
  absl::StrAppend(&out, "  --help\n      print this text\n");
  return out;
}

}  // namespace kubestat::sim
