// AgentOptions: everything kubestat-node-agent is told on its command line, as one struct
// with the defaults a DaemonSet pod wants.
//
// RegisterFlags binds every field to its flag (`--help` prints each with its default).
// Validate() runs once at start, after parsing, and returns InvalidArgument whose message
// starts with the flag to fix ("--call-timeout: must be below a third of --resolution ...").
// The derived accessors may be used only after Validate() succeeded.
//
// Plain value type; thread-compatible.
#ifndef KUBESTAT_AGENT_OPTIONS_H_
#define KUBESTAT_AGENT_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "kubestat/agent/poller.h"
#include "kubestat/core/clock.h"
#include "kubestat/http/server_options.h"
#include "kubestat/kube/serving_options.h"

namespace kubestat {
class FlagSet;
}  // namespace kubestat

namespace kubestat::agent {

// The port kubestat-node-agent serves on by default, and the aggregator's
// --node-agent-port is set to.
inline constexpr int kDefaultAgentPort = 10266;

struct AgentOptions {
  AgentOptions();

  // The kubelet's podresources socket. Default: /var/lib/kubelet/pod-resources/kubelet.sock
  std::string podresources_socket;
  // The node this agent runs on (the DaemonSet passes spec.nodeName); reported with every
  // answer so that a reader can tell it reached the right node. Default: $NODE_NAME, else
  // the host name
  std::string node_name;
  // How often the socket is read (List, GetAllocatableResources, Get). Default: 10s
  Duration resolution = std::chrono::seconds(10);
  // Deadline of one call on the socket; a poll makes three, so it must stay under a third
  // of the resolution. Default: 2s
  Duration call_timeout = std::chrono::seconds(2);
  // Largest answer read from the socket, in bytes. Default: 16777216
  int64_t max_receive_message_bytes = int64_t{16} << 20;
  // HTTPS serving of /podresources and /metrics (authenticated and authorized: a non-resource
  // URL, `get`), /healthz, /livez and /readyz (open), with the flags every kubestat server
  // takes (kube/serving_options.h); the port defaults to kDefaultAgentPort.
  kube::SecureServingOptions serving;
  // Log verbosity. Default: 0
  int64_t verbosity = 0;

  // Binds every field above to its flag.
  void RegisterFlags(FlagSet& flags);
  // Checks every field; InvalidArgument naming the flag.
  [[nodiscard]] absl::Status Validate() const;

  // The components' options as these flags set them (after a successful Validate()).
  PollerOptions PollingOptions() const;
  http::ServerOptions ServingOptions() const;
};

}  // namespace kubestat::agent

#endif  // KUBESTAT_AGENT_OPTIONS_H_
