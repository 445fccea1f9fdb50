// NodeAgent: kubestat-node-agent's parts, wired: the podresources poller and the HTTPS server
// in front of it, behind the shared front door (kube/access_gate.h: TLS, then the
// authenticator and the authorizer that the serving flags describe, with TokenReview and
// SubjectAccessReview delegated to the cluster).
//
// Routes:
//   GET /podresources   the newest NodePodResources document (metrics_api/node_resources.h;
//                       ?pretty=true indents it). Authorized as a non-resource URL, verb get:
//                       grant it to the aggregator's service account only (the document
//                       names every pod on the node and what it was given).
//   GET /metrics        the agent's own metrics (authorized the same way)
//   /healthz, /livez    200 while the poll loop runs: 503 when no poll started within two
//                       resolutions plus three call timeouts (a stuck loop)
//   /readyz             200 when the newest List answered; 503 with the List status (no
//                       socket, a slow or failing kubelet) otherwise, and before the first poll
//   anything else       404 Status; methods other than GET and HEAD are 405 (by the server)
// Health paths need no credentials (--authorization-always-allow-paths); everything else is
// 401 without an identity and 403 without permission, as Status objects.
//
// Create() builds and binds everything; Start() starts polling; Stop() (or the destructor)
// stops both. Thread-safety: Create, Start and Stop from one thread.
#ifndef KUBESTAT_AGENT_AGENT_H_
#define KUBESTAT_AGENT_AGENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "kubestat/agent/options.h"
#include "kubestat/core/clock.h"

namespace kubestat::agent {

class NodeAgent {
 public:
  // `options` must have passed Validate(); the clock must outlive the agent. Errors name the
  // flag (an unreadable kubeconfig or token file, a port that cannot be bound).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<NodeAgent>> Create(
      const AgentOptions& options, const Clock& clock);
  ~NodeAgent();
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  void Start();
  void Stop();  // Idempotent.

  // "https://127.0.0.1:10266"
  std::string BaseUrl() const;

 private:
  struct Parts;
  explicit NodeAgent(std::unique_ptr<Parts> parts);
  std::unique_ptr<Parts> parts_;
};

}  // namespace kubestat::agent

#endif  // KUBESTAT_AGENT_AGENT_H_
