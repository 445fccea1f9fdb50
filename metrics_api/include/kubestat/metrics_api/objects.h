// NodeMetrics and PodMetrics as plain values: what every served group-version is rendered
// from and what a JSON document is parsed into.
//
// One object carries everything any group-version shows of it. metrics/v1alpha1 shows all of
// it (every window of the object and of each container); metrics.k8s.io/v1 and v1beta1 show
// the mean of the shortest window as `usage`, with its length and end (render.h).
//
// Units: cpu in nanocores, memory in bytes. A resource without samples has no windows.
//
// Plain value types; thread-compatible.
#ifndef KUBESTAT_METRICS_API_OBJECTS_H_
#define KUBESTAT_METRICS_API_OBJECTS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/shared_value.h"

namespace kubestat::metrics_api {

using Labels = std::map<std::string, std::string>;

// The statistics of one resource over one window (interval (endtime - window, endtime]).
// count, min, max and mean are exact; the percentiles are nearest-rank (see the window
// engine for their accuracy).
struct Statistics {
  Duration window{0};  // the window's length (10s, 1m, ...)
  Timestamp endtime;   // the time of the resource's newest sample in the window
  uint64_t count = 0;
  uint64_t mean = 0;
  uint64_t min = 0;
  uint64_t max = 0;
  uint64_t p50 = 0;
  uint64_t p95 = 0;
  uint64_t p99 = 0;

  friend bool operator==(const Statistics&, const Statistics&) = default;
};

// One resource's windows, in ascending length. Held inline up to four windows (the
// default set): a view has a few of these per object, and a heap block for each would be
// most of its allocations.
using StatisticsList = absl::InlinedVector<Statistics, 4>;

// The windows of one object, per resource, ascending by length (empty: no samples yet).
struct ResourceWindows {
  StatisticsList cpu;     // nanocores
  StatisticsList memory;  // bytes

  // Both resources have at least one window: what metrics.k8s.io needs to show usage.
  bool HasUsage() const { return !cpu.empty() && !memory.empty(); }

  friend bool operator==(const ResourceWindows&, const ResourceWindows&) = default;
};

// Amounts a pod's container declares in its spec (resources.requests or .limits): cpu in
// nanocores, memory in bytes; absent when not declared. metrics/v1alpha1 shows them.
struct DeclaredResources {
  std::optional<uint64_t> cpu = {};
  std::optional<uint64_t> memory = {};

  bool empty() const { return !cpu && !memory; }
  friend bool operator==(const DeclaredResources&, const DeclaredResources&) = default;
};

// ---- Topology: allocatable and exclusive assignments (the kubelet's podresources API,
// read on each node by kubestat-node-agent; node_resources.h) ----

// A block of memory of one type on some NUMA nodes (memory manager).
struct NumaMemory {
  std::string memory_type{};  // a resource name: "memory", "hugepages-2Mi", ...
  uint64_t size_bytes = 0;
  std::vector<int64_t> numa_nodes{};  // empty: not known

  friend bool operator==(const NumaMemory&, const NumaMemory&) = default;
};

// Devices of one resource (device plugins), with their NUMA affinity.
struct DeviceSet {
  std::string resource_name{};  // "nvidia.com/gpu"
  std::vector<std::string> device_ids{};
  std::vector<int64_t> numa_nodes{};  // empty: not known

  friend bool operator==(const DeviceSet&, const DeviceSet&) = default;
};

// Logical cpus, memory blocks and devices: what a node can hand out (GetAllocatableResources),
// or what a container or pod was given exclusively (List).
struct ResourceSet {
  std::vector<int64_t> cpu_ids{};  // the kernel's logical cpu numbers
  std::vector<NumaMemory> memory{};
  std::vector<DeviceSet> devices{};

  bool empty() const { return cpu_ids.empty() && memory.empty() && devices.empty(); }
  // Bytes of memory blocks of type "memory" (hugepages are other resources).
  uint64_t MemoryBytes() const;
  // Devices by resource name.
  std::map<std::string, int64_t> DeviceCounts() const;

  friend bool operator==(const ResourceSet&, const ResourceSet&) = default;
};

// A ResourceSet kept beside the object that has it: most containers and pods have no
// exclusive resources, and a view holds one set per container and per pod (72 bytes inline;
// here 16, with a heap block only when the set is not empty). Set as a whole (from a
// ResourceSet) and read as a const ResourceSet; copies share the one block.
using SharedResourceSet = SharedValue<ResourceSet>;

// How complete a node's podresources data is, as the aggregator last heard from the node's
// agent.
struct PodResourcesStatus {
  // "Complete": List and GetAllocatableResources answered. "AllocatableUnsupported": the
  // kubelet lacks GetAllocatableResources (older than 1.21, or its feature gate is off);
  // assignments are still known. "Partial": one of them failed otherwise (message).
  // "Unavailable": the agent could not read the kubelet at all (no socket, ...). "Stale":
  // the aggregator could not read the agent; what it answered before is kept.
  std::string state{};
  std::string message{};
  Timestamp time{};  // when the agent last read the kubelet

  friend bool operator==(const PodResourcesStatus&, const PodResourcesStatus&) = default;
};

// A pod's container, or a node's system container (kubelet, runtime, pods, misc).
struct ContainerMetrics {
  std::string name;
  ResourceWindows windows;
  // A pod's container: its requests and limits as the pod spec declares them.
  DeclaredResources requests = {};
  DeclaredResources limits = {};
  // What the container was given exclusively (pods only; empty: the shared pool, or not
  // known).
  SharedResourceSet exclusive{};

  friend bool operator==(const ContainerMetrics&, const ContainerMetrics&) = default;
};

struct NodeMetrics {
  std::string name;
  SharedLabels labels;
  // metadata.resourceVersion where a server versions its objects (the secondary API
  // server); empty: not shown.
  std::string resource_version;
  ResourceWindows machine;  // the whole node
  std::vector<ContainerMetrics> system_containers;
  // From the node's agent (podresources): what the node can allocate (std::nullopt: not
  // known), and how complete that knowledge is (std::nullopt: no agent is scraped).
  std::optional<ResourceSet> allocatable{};
  std::optional<PodResourcesStatus> pod_resources{};

  friend bool operator==(const NodeMetrics&, const NodeMetrics&) = default;
};

struct PodMetrics {
  std::string name;
  std::string namespace_name;
  std::string node_name;  // spec.nodeName; empty when unknown
  SharedLabels labels;
  std::string resource_version;  // as NodeMetrics::resource_version
  ResourceWindows pod;           // the pod's own series: at each scrape the sum of its containers
  std::vector<ContainerMetrics> containers;
  // Pod-level exclusive resources (podresources of the newest kubelets); empty: none known.
  SharedResourceSet exclusive{};

  friend bool operator==(const PodMetrics&, const PodMetrics&) = default;
};

}  // namespace kubestat::metrics_api

#endif  // KUBESTAT_METRICS_API_OBJECTS_H_
