// ClusterModel: a deterministic, seeded model of a Kubernetes cluster's resource usage.
//
// Every value is a pure function of (options, pods deleted so far, node, pod slot,
// container, t): there is no I/O and no clock read, so a test can recompute exactly what
// the simulator served at a given time. The only mutable state is the list of pod
// deletions (DeletePod), each recorded with its instant, so answers for instants before a
// deletion never change. All methods are thread-safe; the const ones may run concurrently
// with DeletePod.
//
// Time rule: values are defined at whole seconds. Every method first truncates t toward
// the past to a whole second (Quantize), as real kubelets write second-precision times;
// times before options.cluster_start are treated as cluster_start.
//
// Shape of the cluster:
//  - nodes "node-0000" … each with `pods_per_node` pod slots. A slot holds one pod at a
//    time; with churn, the pod of a slot is replaced at seeded instants (generation g+1
//    starts exactly when generation g ends, with a new name, uid and creation time). A
//    deleted pod is replaced at once by the slot's next generation, as its controller
//    would replace it; every later generation number shifts by one, while the seeded
//    instants of churn stay where they were.
//  - every slot belongs to one app (a Deployment or DaemonSet in one of a handful of
//    namespaces) and keeps it across generations; labels app=…, tier=… (and
//    pod-template-hash=… for Deployments) select it.
//  - each container runs one workload (steady, diurnal, spiky, leaky). cpu is a rate in
//    cores, r(t), given as a closed form of absolute time; usageCoreNanoSeconds is its
//    exact integral since the container started, so cum(t2) - cum(t1) = integral of r
//    over [t1, t2] (up to rounding to whole nanoseconds) and usageNanoCores is r(t).
//    Containers that restart (every leaky one, and a seeded fraction of the others) do so
//    at seeded instants; the counter then starts again from 0 and startTime moves.
//  - system containers "kubelet", "runtime" and "pods" (the kubepods cgroup: the sum of
//    all pods plus a little overhead). The node's cpu counter is the integral since the
//    node started of everything on it (pods past and present, system containers, kernel),
//    so it is monotonic across pod churn and container restarts; node memory is the sum of
//    the live values plus a fixed kernel/OS share.
#ifndef KUBESTAT_SIM_MODEL_H_
#define KUBESTAT_SIM_MODEL_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"

namespace kubestat::sim {

enum class Workload {
  kSteady,   // a constant rate with a small wobble; flat memory.
  kDiurnal,  // a 24 h sinusoid of cpu and memory.
  kSpiky,    // a seeded square wave: short cpu bursts on a low base.
  kLeaky,    // flat cpu; memory grows linearly and resets when the container restarts.
};
std::string_view WorkloadName(Workload w);

struct ClusterModelOptions {
  // Seed of every random choice; two models with equal options are identical.
  // Default: 1
  uint64_t seed = 1;
  // Number of nodes. Default: 50
  int nodes = 50;
  // Pod slots per node (every slot always holds exactly one running pod). Default: 30
  int pods_per_node = 30;
  // Containers per pod (1..8). Default: 2
  int containers_per_pod = 2;
  // Relative weights of the workloads assigned to containers (not all zero).
  // Default: 4, 3, 2, 1
  double steady_weight = 4;
  double diurnal_weight = 3;
  double spiky_weight = 2;
  double leaky_weight = 1;
  // Mean lifetime of a pod before it is replaced (actual lifetimes vary between 0.2x and
  // 1.8x of it); zero disables churn. At least 10 minutes when not zero. Default: 4h
  Duration mean_pod_lifetime = std::chrono::hours(4);
  // When positive, the Deployment pods (every slot but the two DaemonSet slots of each
  // node) are dealt round-robin, in (node, slot) order, into this many namespaces
  // "tenant-0000", "tenant-0001", … instead of their apps' own namespaces, so each holds
  // about nodes × (pods_per_node - 2) / tenant_namespaces pods; DaemonSet pods stay in
  // kube-system and monitoring. Zero keeps the apps' namespaces. Default: 0
  int tenant_namespaces = 0;
  // Fraction (0..1) of non-leaky containers that restart on a seeded schedule (every
  // 30 min to 6 h). Leaky containers always restart (every 1 to 3 h). Default: 0.05
  double restart_fraction = 0.05;
  // The instant the cluster came up; nodes boot within the following 10 minutes.
  // Default: 2026-01-01T00:00:00Z
  Timestamp cluster_start = Timestamp(std::chrono::seconds(1767225600));

  // ---- Node topology (what the kubelet's podresources API reports; topology.h) ----
  // When true, every node has 2 NUMA nodes and kNodeGpus GPUs ("nvidia.com/gpu", half on
  // each NUMA node); the pods of the data-tier apps (ledger, indexer) are Guaranteed, every
  // container with cpu and memory limits equal to its requests, the first one with whole
  // cpus (its peak rounded up), so that the static CPU and memory managers pin them; and the
  // first container of each batch-tier pod (etl, spark-worker) asks for one GPU while the
  // node has one left (in slot order). Slots keep their app across generations, so these
  // requests never change on a node. When false, nothing of this exists. Default: false
  bool node_topology = false;

  [[nodiscard]] absl::Status Validate() const;
};

// One cgroup's cpu and memory at one instant (the kubelet's CPUStats + MemoryStats).
struct ResourceUsage {
  Timestamp time;                        // the (quantized) sample time
  Timestamp start_time;                  // when this container/pod/node started
  uint64_t usage_nano_cores = 0;         // rate at `time`, in billionths of a core
  uint64_t usage_core_nano_seconds = 0;  // integral of the rate since start_time
  uint64_t working_set_bytes = 0;
  uint64_t usage_bytes = 0;                 // >= working_set_bytes
  uint64_t rss_bytes = 0;                   // <= working_set_bytes
  uint64_t page_faults = 0;                 // cumulative
  uint64_t major_page_faults = 0;           // cumulative
  std::optional<uint64_t> available_bytes;  // limit - working set, when there is a limit
};

struct ContainerSpec {
  std::string name;
  Workload workload = Workload::kSteady;
  int64_t cpu_request_millis = 0;
  int64_t cpu_limit_millis = 0;  // 0: no limit
  int64_t memory_request_bytes = 0;
  int64_t memory_limit_bytes = 0;  // 0: no limit
  // GPUs ("nvidia.com/gpu") requested, with a limit of the same count (node_topology only).
  int64_t gpus = 0;
};

// The identity of the pod in a slot at some instant.
struct PodInfo {
  int node = 0;
  int slot = 0;
  int64_t generation = 0;  // 0 for the first pod of the slot
  std::string name;
  std::string namespace_name;
  std::string uid;
  std::string app;
  Timestamp start_time;  // creation time == start time == start of the generation
  std::vector<std::pair<std::string, std::string>> labels;  // sorted by key
  std::vector<ContainerSpec> containers;
};

// The pod's QoS class is Guaranteed: every container has cpu and memory limits equal to its
// non-zero requests (else it is Burstable: requests are always set).
bool IsGuaranteed(const PodInfo& pod);

struct NodeInfo {
  int index = 0;
  std::string name;  // "node-0000"
  std::string uid;
  Timestamp start_time;  // boot time
  int64_t cpu_capacity_millis = 0;
  int64_t memory_capacity_bytes = 0;
  int64_t cpu_allocatable_millis = 0;
  int64_t memory_allocatable_bytes = 0;
  std::vector<std::pair<std::string, std::string>> labels;  // sorted by key
  // GPUs ("nvidia.com/gpu") in capacity and allocatable; 0 without node_topology.
  int64_t gpus = 0;
};

// With ClusterModelOptions::node_topology: GPUs per node, and the resource name they go by.
inline constexpr int64_t kNodeGpus = 4;
inline constexpr std::string_view kGpuResourceName = "nvidia.com/gpu";

enum class SystemContainer { kKubelet = 0, kRuntime = 1, kPods = 2 };
inline constexpr std::array<std::string_view, 3> kSystemContainerNames = {"kubelet", "runtime",
                                                                          "pods"};

struct ContainerSnapshot {
  int index = 0;  // into the owning PodSnapshot's pod.containers
  int restart_count = 0;
  ResourceUsage usage;
};

struct PodSnapshot {
  PodInfo pod;
  std::vector<ContainerSnapshot> containers;
  ResourceUsage usage;  // sum of the containers; start_time is the pod's
};

// Everything a kubelet reports for one node at one instant.
struct NodeSnapshot {
  const NodeInfo* node = nullptr;  // points into the model
  Timestamp time;
  ResourceUsage usage;
  std::array<ResourceUsage, 3> system_containers;  // indexed by SystemContainer
  std::vector<PodSnapshot> pods;                   // in slot order
};

class ClusterModel {
 public:
  // InvalidArgument naming the field when options.Validate() fails.
  [[nodiscard]] static absl::StatusOr<ClusterModel> Create(const ClusterModelOptions& options);
  ClusterModel(ClusterModel&&) noexcept;
  ClusterModel& operator=(ClusterModel&&) noexcept;
  ~ClusterModel();

  const ClusterModelOptions& options() const { return options_; }
  int node_count() const { return options_.nodes; }
  int pods_per_node() const { return options_.pods_per_node; }
  const NodeInfo& node(int n) const { return nodes_[n]; }
  const std::vector<NodeInfo>& nodes() const { return nodes_; }
  // Index of the node called `name`, or -1.
  int NodeIndex(std::string_view name) const;

  // t truncated to a whole second, and not before cluster_start.
  Timestamp Quantize(Timestamp t) const;

  // The generation of the pod in (node, slot) at t, and the instant that generation began.
  // Both count the deletions recorded so far. Without churn, a generation past the slot's
  // deletions is never reached and begins at Timestamp::max().
  int64_t Generation(int node, int slot, Timestamp t) const;
  Timestamp GenerationStart(int node, int slot, int64_t generation) const;
  // The pod in (node, slot) at t (its identity: name, uid, labels, containers).
  PodInfo Pod(int node, int slot, Timestamp t) const;
  // The identity of a given generation, whether or not it is alive now.
  PodInfo PodOfGeneration(int node, int slot, int64_t generation) const;

  // When the container currently running in (node, slot, container) at t started, and how
  // many times it restarted within its pod.
  Timestamp ContainerStart(int node, int slot, int container, Timestamp t) const;
  int RestartCount(int node, int slot, int container, Timestamp t) const;

  ResourceUsage ContainerUsage(int node, int slot, int container, Timestamp t) const;
  ResourceUsage PodUsage(int node, int slot, Timestamp t) const;
  ResourceUsage SystemContainerUsage(int node, SystemContainer which, Timestamp t) const;
  ResourceUsage NodeUsage(int node, Timestamp t) const;

  // All of the above for one node at t (what /stats/summary shows).
  NodeSnapshot Snapshot(int node, Timestamp t) const;

  // Deletes the pod in (node, slot) as a ReplicaSet's or DaemonSet's pod is deleted: from
  // t (quantized, and not before the node booted or the slot's previous deletion) the slot
  // holds its replacement, the next generation, which starts then with a new name and
  // uid. Returns the replacement.
  PodInfo DeletePod(int node, int slot, Timestamp t);

 private:
  struct Deletions;
  struct ParamsTable;

  explicit ClusterModel(const ClusterModelOptions& options);
  // Seconds since cluster_start of the deletions in (node, slot), ascending.
  std::vector<int64_t> DeletionsOf(int node, int slot) const;

  ClusterModelOptions options_;
  std::vector<NodeInfo> nodes_;
  // Owned on the heap so that the model stays movable; never null.
  std::unique_ptr<Deletions> deletions_;
  // Every container's parameters (workload, curves, requests), a pure function of the
  // options and its place, computed once at Create (they cost most of a snapshot
  // otherwise); never null.
  std::unique_ptr<ParamsTable> params_;
};

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_MODEL_H_
