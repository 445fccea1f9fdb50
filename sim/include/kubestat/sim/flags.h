// Command-line flags of kubestat-sim.
//
// Flags are "--name=value" or "--name value"; booleans also accept a bare "--name".
// Every flag, with its default, is listed by SimulatorHelpText():
//   --seed=1 --nodes=50 --pods-per-node=30 --containers-per-pod=2
//   --workload-mix=steady:4,diurnal:3,spiky:2,leaky:1 --pod-lifetime=4h
//   --restart-fraction=0.05 --cluster-start=2026-01-01T00:00:00Z
//   --apiserver-address=127.0.0.1 --apiserver-port=0
//   --kubelet-address-mode=loopback|ports --kubelet-port=10250
//   --tls=false --tls-dir= --kubelet-token= --faults=node-0003=timeout,...
//   --metrics-backend=http://127.0.0.1:PORT --kubeconfig-out=PATH --tick=1s
//   --watch-history=10000 --help
// Errors are InvalidArgument naming the flag. Pure; thread-safe.
#ifndef KUBESTAT_SIM_FLAGS_H_
#define KUBESTAT_SIM_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kubestat/sim/simulator.h"

namespace kubestat::sim {

struct SimulatorFlags {
  SimulatorOptions options;
  bool help = false;  // --help was given
};

// `args` excludes the program name. The result's options have passed Validate().
[[nodiscard]] absl::StatusOr<SimulatorFlags> ParseSimulatorFlags(
    const std::vector<std::string>& args);

// Usage text listing every flag and its default.
std::string SimulatorHelpText();

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_FLAGS_H_
