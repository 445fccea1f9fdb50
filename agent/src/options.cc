#include "kubestat/agent/options.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>

#include "kubestat/core/absl_view.h"
#include "kubestat/core/flags.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/core/time.h"

namespace kubestat::agent {
namespace {

// $NODE_NAME (the DaemonSet's downward API), else the host name.
std::string DefaultNodeName() {
  if (const char* env = std::getenv("NODE_NAME"); env != nullptr && *env != '\0') return env;
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof(host) - 1) == 0) return host;
  return "";
}

absl::Status Flagged(std::string_view flag, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::InvalidArgumentError(StrCat(flag, ": ", StdView(status.message())));
}

}  // namespace

AgentOptions::AgentOptions()
    : podresources_socket(podresources::kDefaultSocketPath), node_name(DefaultNodeName()) {
  serving.secure_port = kDefaultAgentPort;
  // The aggregator calls the agent directly, never through the aggregation layer: no front
  // proxy's trust to look up.
  serving.authentication_skip_lookup = true;
}

void AgentOptions::RegisterFlags(FlagSet& flags) {
  flags.AddString("podresources-socket", &podresources_socket,
                  "the kubelet's podresources socket (<kubelet root-dir>/pod-resources/"
                  "kubelet.sock)");
  flags.AddString("node-name", &node_name,
                  "the node this agent runs on, reported with every answer (default: "
                  "$NODE_NAME, else the host name)");
  flags.AddDuration("resolution", &resolution,
                    "how often the socket is read (List, GetAllocatableResources, Get)");
  flags.AddDuration("call-timeout", &call_timeout,
                    "deadline of one call on the socket (below a third of --resolution)");
  flags.AddInt64("max-receive-message-bytes", &max_receive_message_bytes,
                 "largest answer read from the socket");
  serving.RegisterFlags(flags);
  flags.AddInt64("v", &verbosity, "log verbosity");
}

absl::Status AgentOptions::Validate() const {
  if (node_name.empty()) {
    return absl::InvalidArgumentError("--node-name: required (no $NODE_NAME, no host name)");
  }
  if (resolution <= Duration::zero()) {
    return absl::InvalidArgumentError("--resolution: must be positive");
  }
  if (call_timeout <= Duration::zero()) {
    return absl::InvalidArgumentError("--call-timeout: must be positive");
  }
  if (3 * call_timeout >= resolution) {
    return absl::InvalidArgumentError(StrCat(
        "--call-timeout: must be below a third of --resolution (3 × ", FormatDuration(call_timeout),
        " >= ", FormatDuration(resolution), "): a poll makes three calls"));
  }
  if (max_receive_message_bytes < 4096 || max_receive_message_bytes > INT_MAX) {
    return absl::InvalidArgumentError(StrCat(
        "--max-receive-message-bytes: ", max_receive_message_bytes, " is outside 4096..", INT_MAX));
  }
  if (absl::Status s = PollingOptions().client.Validate(); !s.ok()) {
    return Flagged("--podresources-socket", s);
  }
  if (absl::Status s = serving.Validate(); !s.ok()) return s;
  return Flagged("--listen-address/--cert-dir", ServingOptions().Validate());
}

PollerOptions AgentOptions::PollingOptions() const {
  PollerOptions options;
  options.node_name = node_name;
  options.client.socket_path = podresources_socket;
  options.client.call_timeout = absl::FromChrono(call_timeout);
  options.client.max_receive_message_bytes =
      static_cast<int>(std::clamp<int64_t>(max_receive_message_bytes, 0, INT_MAX));
  options.resolution = resolution;
  return options;
}

http::ServerOptions AgentOptions::ServingOptions() const {
  http::ServerOptions options = serving.SecureServer("node-agent");
  // Nothing the agent serves takes a body; one reader (the aggregator) and the probes.
  options.allowed_methods = {"GET", "HEAD"};
  options.limits.max_body_bytes = 0;
  options.limits.max_connections = std::min<size_t>(options.limits.max_connections, 64);
  options.io_threads = 1;
  options.worker_threads = 1;
  return options;
}

}  // namespace kubestat::agent
