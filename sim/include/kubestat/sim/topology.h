// NodeTopology: what a simulated node's kubelet reports through the podresources API, as
// pure functions of the model (ClusterModelOptions::node_topology must be on for pods to
// ask for anything; without it every node still has a topology and no pod is assigned any).
//
// The node: logical cpus 0 … cores-1, the first half on NUMA node 0 and the second on NUMA
// node 1; cpu 0 is reserved for the system (the static CPU manager reserves whole cpus for
// the node's 100m of reserved cpu), so the allocatable cpus are 1 … cores-1. Allocatable
// memory (the node's, as its status says) is split evenly over the two NUMA nodes, one
// "memory" block each. The node's GPUs ("nvidia.com/gpu", NodeInfo::gpus of them) are
// numbered GPU-<node uid prefix>-<i>, the first half on NUMA node 0.
//
// The assignments, per pod slot and container, as the kubelet's managers make them when the
// pods are admitted in slot order: a Guaranteed pod's first container with whole cpus gets
// that many exclusive cpus from one NUMA node (the one with more free; both when neither
// holds them), and every container of a Guaranteed pod gets a "memory" block of its
// request on the NUMA node(s) of the pod's cpus; a container asking for GPUs gets the
// lowest free ones. A slot keeps its app, and so its requests, across generations, and a
// replacement pod takes the resources its predecessor freed: the assignments of a slot never
// change. Shared-pool containers have no cpus listed.
//
// Pure; thread-safe.
#ifndef KUBESTAT_SIM_TOPOLOGY_H_
#define KUBESTAT_SIM_TOPOLOGY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kubestat/sim/model.h"

namespace kubestat::sim {

// A block of memory of one type on some NUMA nodes (podresources ContainerMemory).
struct NumaMemory {
  std::string memory_type;  // "memory"
  uint64_t size_bytes = 0;
  std::vector<int64_t> numa_nodes;

  friend bool operator==(const NumaMemory&, const NumaMemory&) = default;
};

// Devices of one resource on one NUMA node (podresources ContainerDevices).
struct DeviceGroup {
  std::string resource_name;  // "nvidia.com/gpu"
  std::vector<std::string> device_ids;
  int64_t numa_node = 0;

  friend bool operator==(const DeviceGroup&, const DeviceGroup&) = default;
};

// What the node can hand out (podresources GetAllocatableResources).
struct NodeTopology {
  int numa_nodes = 2;
  std::vector<int64_t> reserved_cpus;     // {0}
  std::vector<int64_t> allocatable_cpus;  // ascending
  std::vector<NumaMemory> memory;         // one "memory" block per NUMA node
  std::vector<DeviceGroup> devices;       // one group per NUMA node that has GPUs
  // NUMA node of each logical cpu (index: cpu id).
  std::vector<int64_t> cpu_numa;
};

// What one container was given (podresources ContainerResources, less its name).
struct ContainerAssignment {
  std::vector<int64_t> cpu_ids;  // ascending; empty: the shared pool
  std::vector<NumaMemory> memory;
  std::vector<DeviceGroup> devices;

  bool empty() const { return cpu_ids.empty() && memory.empty() && devices.empty(); }
  friend bool operator==(const ContainerAssignment&, const ContainerAssignment&) = default;
};

// Every slot's assignments on one node: [slot][container].
using NodeAssignments = std::vector<std::vector<ContainerAssignment>>;

NodeTopology TopologyOf(const ClusterModel& model, int node);
NodeAssignments AssignmentsOf(const ClusterModel& model, int node);

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_TOPOLOGY_H_
