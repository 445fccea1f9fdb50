// Command-line flags of kubestat-sim, parsed with core's FlagSet (kubestat/core/flags.h):
// "--name=value" or "--name value"; booleans also as a bare "--name" or "--no-name".
// SimulatorHelpText() lists every flag with its default; among them:
//   --seed=1 --nodes=50 --pods-per-node=30 --containers-per-pod=2 --tenant-namespaces=0
//   --workload-mix=steady:4,diurnal:3,spiky:2,leaky:1 --pod-lifetime=4h
//   --restart-fraction=0.05 --cluster-start=2026-01-01T00:00:00Z
//   --apiserver-address=127.0.0.1 --apiserver-port=0 --apiserver-tls=false
//   --kubelet-address-mode=loopback|ports --kubelet-port=10250
//   --tls=false --tls-dir= --kubelet-token= --faults=node-0003=timeout,...
//   --metrics-backend=http[s]://HOST:PORT --metrics-backend-ca-file=
//   --metrics-backend-insecure-skip-tls-verify=false --authorize-proxied-requests=true
//   --users-file= --kubeconfig-out=PATH --kubeconfig-user= --kubeconfig-dir=
//   --tick=1s --watch-history=10000 --help
// Errors are InvalidArgument naming the flag ("--nodes: invalid int64 \"x\""); a
// positional argument is an error. Pure; thread-safe.
#ifndef KUBESTAT_SIM_FLAGS_H_
#define KUBESTAT_SIM_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kubestat/sim/simulator.h"

namespace kubestat::sim {

struct SimulatorFlags {
  SimulatorOptions options;
  bool help = false;  // --help or -h was given (nothing else was checked then)
};

// `args` excludes the program name. Unless help is set, the result's options have passed
// Validate().
[[nodiscard]] absl::StatusOr<SimulatorFlags> ParseSimulatorFlags(
    const std::vector<std::string>& args);

// Usage text listing every flag with its type and default.
std::string SimulatorHelpText();

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_FLAGS_H_
