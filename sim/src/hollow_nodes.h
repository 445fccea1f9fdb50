// Hollow nodes: the simulator's kubelets registered in a real kube-apiserver, as kubemark's
// hollow nodes are (real control plane, simulated kubelets).
//
// Register() creates each Node as its kubelet would (POST /api/v1/nodes: addresses, the
// kubelet endpoint's port, capacity, allocatable, Ready; a Node that exists already, as after
// a restart of the simulator, gets that status with a merge patch of /status) and its Lease
// in kube-node-lease (holder the node, 40 s, owned by the Node; an existing one is taken
// over). Start() renews every Lease each renew_interval on a thread of its own, as the
// kubelet's node lease controller does, so the node lifecycle controller keeps the nodes
// Ready; a renewal that fails is logged and tried again at the next interval. The Nodes stay
// when the simulator stops, as a stopped kubelet's do: the lifecycle controller marks them
// NotReady once their Leases expire.
//
// Thread-safe: Register, Start and Stop from one thread; the renewals on their own.
#ifndef KUBESTAT_SIM_SRC_HOLLOW_NODES_H_
#define KUBESTAT_SIM_SRC_HOLLOW_NODES_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "api_client.h"
#include "kubestat/core/clock.h"

namespace kubestat::sim {

struct HollowNode {
  std::string name;
  std::string node_json;  // the Node to create (render.h, AppendNodeForRegistration)
};

class HollowNodes {
 public:
  // Borrows the client and the clock, which must outlive it.
  HollowNodes(ApiClient& client, std::vector<HollowNode> nodes, const Clock& clock,
              Duration renew_interval);
  ~HollowNodes();  // Stop()
  HollowNodes(const HollowNodes&) = delete;
  HollowNodes& operator=(const HollowNodes&) = delete;

  // Every Node and Lease, or the first error naming the node and the API server's answer.
  [[nodiscard]] absl::Status Register();
  void Start();
  void Stop();

  // Renewals that failed since Start().
  uint64_t failed_renewals() const;

 private:
  absl::Status RegisterNode(const HollowNode& node, std::string* uid);
  absl::Status RegisterLease(const std::string& name, const std::string& uid);
  absl::Status Renew(const std::string& name);

  ApiClient& client_;
  const std::vector<HollowNode> nodes_;
  const Clock& clock_;
  const Duration renew_interval_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;         // guarded by mu_
  uint64_t failed_renewals_ = 0;  // guarded by mu_
  std::thread renewer_;
};

// A metav1.MicroTime as the API writes it: RFC 3339 in UTC with six fractional digits.
std::string FormatMicroTime(Timestamp t);

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_HOLLOW_NODES_H_
