// The workloads and pods of hollow nodes (hollow_nodes.h): the simulator's seeded
// workloads made real in a real kube-apiserver, their pods run by its kubelets.
//
// CreateWorkloads() makes the model's namespaces and, for each of its apps, a Deployment
// (replicas: the model's pods of that app) or a DaemonSet (one pod per hollow node), their
// pod templates labelled app=<app> and kubestat.dev/hollow=true, asking for the requests and
// limits of the app's first pod in the model, and kept to the hollow nodes (nodeSelector
// kubestat.dev/hollow-node=true, which the registered Nodes carry). The controllers make the
// pods and the scheduler binds them. Existing objects are left as they are.
//
// Start() follows those pods (a list in pages of 500, then a watch from its resourceVersion;
// again from a list when the watch ends badly or expires) on a thread of its own. A pod bound
// to a hollow node
// is given a slot of that node's model (a DaemonSet's pod the slot of its app, any other the
// lowest free one of the rest, shared round-robin once all are taken) and reported Running
// and Ready through its status subresource, as its kubelet would; a pod being deleted
// (deletionTimestamp) is removed for good (DELETE with gracePeriodSeconds=0, the kubelet's
// last word); a deleted one frees its slot. Those status writes and deletes are made by
// `parallel` threads, a pod's latest wish replacing one not yet made, so that thirty thousand
// pods starting at once do not wait on one connection. Rewrite() turns a node's model snapshot into
// what its kubelet reports: the real pods bound there, each with its slot's usage under its own
// name, namespace, uid and container names.
//
// Load: a pod annotated kubestat.dev/cpu=<quantity> (kubectl annotate, through the real API)
// reports that cpu rate for its first container from then on, instead of its slot's; the
// cumulative counter grows at that rate and never goes back when the annotation is removed
// and the slot's rate returns. This is how a test raises and lowers a Deployment's load for
// the HPA.
//
// Thread-safe: Rewrite may be called from any thread.
#ifndef KUBESTAT_SIM_SRC_HOLLOW_PODS_H_
#define KUBESTAT_SIM_SRC_HOLLOW_PODS_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "api_client.h"
#include "kubestat/core/clock.h"
#include "kubestat/sim/model.h"

namespace kubestat::sim {

inline constexpr std::string_view kHollowPodLabel = "kubestat.dev/hollow";
inline constexpr std::string_view kHollowNodeLabel = "kubestat.dev/hollow-node";
inline constexpr std::string_view kHollowCpuAnnotation = "kubestat.dev/cpu";

class HollowPods {
 public:
  // Borrows the client, the model and the clock, which must outlive it. `parallel` (at least
  // 1): status writes and deletes under way at once; the client needs one connection more.
  HollowPods(ApiClient& client, const ClusterModel& model, const Clock& clock, int parallel = 1);
  ~HollowPods();  // Stop()
  HollowPods(const HollowPods&) = delete;
  HollowPods& operator=(const HollowPods&) = delete;

  // The first error names the object and the API server's answer.
  [[nodiscard]] absl::Status CreateWorkloads();
  void Start();
  void Stop();

  void Rewrite(int node, NodeSnapshot& snapshot) const;
  // Pods bound to hollow nodes and reported Running.
  size_t running() const;
  // Status writes and deletes not yet made.
  size_t pending_calls() const;

 private:
  struct RealPod {
    std::string namespace_name;
    std::string name;
    std::string uid;
    std::string app;
    std::vector<std::string> containers;
    int slot = 0;
    // kubestat.dev/cpu, in nanocores; nullopt without the annotation.
    std::optional<uint64_t> cpu_nano_cores;
  };
  // The first container's cpu as served: the slot's plus `offset`, or, while overridden,
  // what it was at `since` plus the override's rate since then.
  struct CpuTrack {
    bool overriding = false;
    uint64_t rate = 0;  // nanocores, while overriding
    Timestamp since;
    uint64_t at_since = 0;
    int64_t offset = 0;
    uint64_t last = 0;  // never served less than this
  };

  // A write of the API for one pod: a status PATCH or the final DELETE.
  struct Call {
    std::string method;
    std::string path;
    std::string body;
    std::string content_type;  // "" for JSON
    std::string what;          // for the log: "reporting pod ns/name Running"
  };

  void Run(const std::stop_token& stop);
  // Queues `call` for the pod at `pod_path`, in place of one not yet made.
  void Queue(const std::string& pod_path, Call call);
  // Makes queued calls until `stop`.
  void Make(const std::stop_token& stop);
  // A full list: what it holds replaces what was followed. Its resourceVersion, or "" when
  // the list failed.
  std::string List();
  // One pod's JSON, as listed or watched; `deleted` for a DELETED event.
  void Apply(std::string_view pod_json, bool deleted);
  int FreeSlot(int node, const std::string& app, bool daemon) const;  // requires mu_

  ApiClient& client_;
  const ClusterModel& model_;
  const Clock& clock_;
  const int parallel_;
  mutable std::mutex calls_mu_;
  std::condition_variable_any calls_cv_;
  std::map<std::string, Call> calls_;   // by pod path; guarded by calls_mu_
  std::deque<std::string> call_order_;  // keys of calls_, oldest first; guarded by calls_mu_
  std::vector<std::jthread> callers_;
  mutable std::mutex mu_;
  std::vector<std::map<std::string, RealPod>> by_node_;  // by uid; guarded by mu_
  std::map<std::string, int> node_of_uid_;               // guarded by mu_
  mutable std::map<std::string, CpuTrack> cpu_;          // by uid; guarded by mu_
  std::jthread follower_;                                // last: stopped first
};

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_HOLLOW_PODS_H_
