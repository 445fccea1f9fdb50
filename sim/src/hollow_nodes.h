// Hollow nodes: the simulator's kubelets registered in a real kube-apiserver, as kubemark's
// hollow nodes are (real control plane, simulated kubelets).
//
// Register() creates each Node as its kubelet would (POST /api/v1/nodes: addresses, the
// kubelet endpoint's port, capacity, allocatable, Ready; a Node that exists already, as after
// a restart of the simulator, gets that status with a merge patch of /status) and its Lease
// in kube-node-lease (holder the node, 40 s, owned by the Node; an existing one is taken
// over). Start() renews every Lease each renew_interval, as the kubelet's node lease
// controller does, so the node lifecycle controller keeps the nodes Ready. `parallel` threads
// share the nodes (registration too), each spreading its renewals evenly over the interval,
// as a thousand kubelets' fall, rather than all at once; a renewal that fails is logged and
// tried again at the next interval, and a round that falls behind starts again from now
// rather than hurrying. Start() also watches the hollow Nodes: one whose Ready condition is
// not True (the lifecycle controller marks a node Unknown when its Lease was not renewed in
// its grace period, as on a loaded API server) is reported Ready again by a strategic merge
// patch of its status, as its kubelet's next status update would, and counted. The Nodes stay
// when the simulator stops, as a stopped kubelet's do: the lifecycle controller marks them
// NotReady once their Leases expire.
//
// Thread-safe: Register, Start and Stop from one thread; the renewals on their own.
#ifndef KUBESTAT_SIM_SRC_HOLLOW_NODES_H_
#define KUBESTAT_SIM_SRC_HOLLOW_NODES_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
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
  // `parallel` (at least 1): calls under way at once; the client needs as many connections.
  HollowNodes(ApiClient& client, std::vector<HollowNode> nodes, const Clock& clock,
              Duration renew_interval, int parallel = 1);
  ~HollowNodes();  // Stop()
  HollowNodes(const HollowNodes&) = delete;
  HollowNodes& operator=(const HollowNodes&) = delete;

  // Every Node and Lease, or the first error naming the node and the API server's answer.
  [[nodiscard]] absl::Status Register();
  void Start();
  void Stop();

  // Renewals that failed since Start(), and those made.
  uint64_t failed_renewals() const;
  uint64_t renewals() const;
  // Nodes reported Ready again after the API server said otherwise.
  uint64_t readied() const;

 private:
  absl::Status RegisterNode(const HollowNode& node, std::string* uid);
  absl::Status RegisterLease(const std::string& name, const std::string& uid);
  absl::Status Renew(const std::string& name);
  // The nodes of one of the `parallel` shares: worker, worker + parallel, ...
  std::vector<const HollowNode*> Share(int worker) const;
  void RenewShare(int worker);
  // Watches the hollow Nodes until `stop`, reporting Ready again any that is not.
  void FollowNodes(const std::stop_token& stop);
  // One line of the Node watch (anything but a Node event of nodes_ is passed over).
  void OnNodeEvent(std::string_view line);

  ApiClient& client_;
  const std::vector<HollowNode> nodes_;
  std::set<std::string, std::less<>> names_;  // of nodes_
  const Clock& clock_;
  const Duration renew_interval_;
  const int parallel_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;         // guarded by mu_
  uint64_t failed_renewals_ = 0;  // guarded by mu_
  uint64_t renewals_ = 0;         // guarded by mu_
  uint64_t readied_ = 0;          // guarded by mu_
  std::vector<std::thread> renewers_;
  std::jthread follower_;
};

// A metav1.MicroTime as the API writes it: RFC 3339 in UTC with six fractional digits.
std::string FormatMicroTime(Timestamp t);

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_HOLLOW_NODES_H_
