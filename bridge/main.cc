// kubestat-bridge: a sidecar beside kubestat-aggregator that follows its gRPC Watch and
// pushes every Node and Pod metrics object into the metrics API server (kubestat-apiserver,
// or any Kubernetes-style server with --push-mode=put), with its own /metrics and health
// over HTTPS. main parses the options and runs the wired parts until SIGINT or SIGTERM
// (bridge.h).
#include <optional>
#include <string_view>

#include "kubestat/bridge/bridge.h"
#include "kubestat/bridge/options.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/flags.h"
#include "kubestat/core/log.h"
#include "kubestat/core/program.h"

namespace {

constexpr std::string_view kProgram = "kubestat-bridge";

int Fail(const absl::Status& status, int code = 2) {
  return kubestat::FailProgram(kProgram, status, code);
}

int Run(int argc, char** argv) {
  kubestat::bridge::BridgeOptions options;
  kubestat::FlagSet flags("kubestat-bridge",
                          "Follows kubestat-aggregator's Watch and pushes Node and Pod metrics "
                          "into the metrics API server.");
  options.RegisterFlags(flags);
  if (std::optional<int> exit =
          kubestat::StartProgram(kProgram, flags, argc, argv, options.verbosity)) {
    return *exit;
  }
  if (absl::Status s = options.Validate(); !s.ok()) return Fail(s);
  kubestat::TerminationSignals signals;  // before any thread starts

  absl::StatusOr<std::unique_ptr<kubestat::bridge::Bridge>> bridge =
      kubestat::bridge::Bridge::Create(options, kubestat::RealClock::Get());
  if (!bridge.ok()) return Fail(bridge.status());
  (*bridge)->Start();
  signals.Wait();
  (*bridge)->Stop();
  KLOG(INFO) << "stopped";
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
