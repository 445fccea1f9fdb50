// kubestat-bridge: a sidecar beside kubestat-aggregator that follows its gRPC Watch and
// pushes every Node and Pod metrics object into the metrics API server (kubestat-apiserver,
// or any Kubernetes-style server with --push-mode=put), with its own /metrics and health
// over HTTPS. main runs the wired parts until SIGINT or SIGTERM (bridge.h).
#include "kubestat/bridge/bridge.h"
#include "kubestat/bridge/options.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/program.h"

int main(int argc, char** argv) {
  using kubestat::bridge::BridgeOptions;
  return kubestat::RunServer<BridgeOptions>(
      "kubestat-bridge",
      "Follows kubestat-aggregator's Watch and pushes Node and Pod metrics into the metrics API "
      "server.",
      argc, argv, [](const BridgeOptions& options) {
        return kubestat::StartCreated(
            kubestat::bridge::Bridge::Create(options, kubestat::RealClock::Get()),
            /*exit_code=*/2);
      });
}
