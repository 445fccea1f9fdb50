// kubestat-node-agent: runs on every node (a DaemonSet), reads the kubelet's podresources
// socket every resolution and serves the newest answer at /podresources over HTTPS, to the
// aggregator's service account only (agent.h). main runs the wired parts until SIGINT or
// SIGTERM.
#include "kubestat/agent/agent.h"
#include "kubestat/agent/options.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/program.h"

int main(int argc, char** argv) {
  using kubestat::agent::AgentOptions;
  return kubestat::RunServer<AgentOptions>(
      "kubestat-node-agent",
      "Reads the kubelet's podresources socket on this node (allocatable cpus, memory and "
      "devices; exclusive assignments) and serves it to kubestat-aggregator.",
      argc, argv, [](const AgentOptions& options) {
        return kubestat::StartCreated(
            kubestat::agent::NodeAgent::Create(options, kubestat::RealClock::Get()),
            /*exit_code=*/1);
      });
}
