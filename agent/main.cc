// kubestat-node-agent: runs on every node (a DaemonSet), reads the kubelet's podresources
// socket every resolution and serves the newest answer at /podresources over HTTPS, to the
// aggregator's service account only (agent.h). main parses the options and runs the wired
// parts until SIGINT or SIGTERM.
#include <optional>
#include <string_view>

#include "kubestat/agent/agent.h"
#include "kubestat/agent/options.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/flags.h"
#include "kubestat/core/log.h"
#include "kubestat/core/program.h"

namespace {

constexpr std::string_view kProgram = "kubestat-node-agent";

int Fail(const absl::Status& status, int code = 2) {
  return kubestat::FailProgram(kProgram, status, code);
}

int Run(int argc, char** argv) {
  kubestat::agent::AgentOptions options;
  kubestat::FlagSet flags("kubestat-node-agent",
                          "Reads the kubelet's podresources socket on this node (allocatable "
                          "cpus, memory and devices; exclusive assignments) and serves it to "
                          "kubestat-aggregator.");
  options.RegisterFlags(flags);
  if (std::optional<int> exit =
          kubestat::StartProgram(kProgram, flags, argc, argv, options.verbosity)) {
    return *exit;
  }
  if (absl::Status s = options.Validate(); !s.ok()) return Fail(s);
  kubestat::TerminationSignals signals;  // before any thread starts

  absl::StatusOr<std::unique_ptr<kubestat::agent::NodeAgent>> agent =
      kubestat::agent::NodeAgent::Create(options, kubestat::RealClock::Get());
  if (!agent.ok()) return Fail(agent.status(), 1);
  (*agent)->Start();
  signals.Wait();
  (*agent)->Stop();
  KLOG(INFO) << "stopped";
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
