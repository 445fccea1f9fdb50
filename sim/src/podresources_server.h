// PodResourcesSockets: every simulated node's kubelet podresources v1 API (List,
// GetAllocatableResources, Get) on a unix socket <dir>/<node name>/kubelet.sock, as a real
// kubelet serves it on /var/lib/kubelet/pod-resources/kubelet.sock: gRPC over plaintext
// HTTP/2.
//
// Answers are computed when asked, from the model at the clock's time: List gives every pod
// the node's kubelet reports at that instant (the same names and containers as
// /stats/summary) with what topology.h assigned to its slot; GetAllocatableResources the
// node's topology; Get one of those pods, or UNKNOWN "pod <name> in namespace <ns> not
// found" as the kubelet answers. The messages are written by podresources_wire.h (gRPC's
// generic API: no generated code). A method the node's fault (faults.h) or the API does not
// have answers UNIMPLEMENTED "unknown method <M> for service v1.PodResourcesLister", as a
// grpc-go server does.
//
// Lifetime: Start() once (nodes whose fault is "absent" get no socket), Apply() after a
// node's fault changed, Restart() to replace a node's socket with a new one, Stop() (or the
// destructor) to end every call in flight (UNAVAILABLE) and remove the sockets.
// Thread-safe. Borrows the model, clock and fault table, which must outlive it.
#ifndef KUBESTAT_SIM_SRC_PODRESOURCES_SERVER_H_
#define KUBESTAT_SIM_SRC_PODRESOURCES_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "kubestat/core/clock.h"
#include "kubestat/sim/faults.h"
#include "kubestat/sim/model.h"

namespace kubestat::sim {

class PodResourcesSockets {
 public:
  // `dir` holds one directory per node; `slow_delay` is how long a "slow" node holds each
  // answer.
  PodResourcesSockets(std::string dir, Duration slow_delay, const ClusterModel& model,
                      const Clock& clock, const PodResourcesFaultTable& faults);
  ~PodResourcesSockets();
  PodResourcesSockets(const PodResourcesSockets&) = delete;
  PodResourcesSockets& operator=(const PodResourcesSockets&) = delete;

  // Makes the directories and serves every node whose fault is not "absent". The status
  // names the socket that could not be served.
  [[nodiscard]] absl::Status Start();
  // Removes node's socket when its fault is "absent", else serves it if it does not yet.
  [[nodiscard]] absl::Status Apply(int node);
  // Ends node's socket (calls in flight get UNAVAILABLE) and, unless its fault is "absent",
  // serves a new one at the same path: what the agent sees when a kubelet restarts.
  [[nodiscard]] absl::Status Restart(int node);
  void Stop();

  // <dir>/<node name>/kubelet.sock
  std::string SocketPath(int node) const;

  // Defined in the .cc only (the calls in flight reach it).
  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_PODRESOURCES_SERVER_H_
