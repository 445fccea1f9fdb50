#include "kubestat/sim/topology.h"

#include <algorithm>
#include <cstdio>
#include <set>

namespace kubestat::sim {
namespace {

std::string GpuId(const NodeInfo& node, int64_t index) {
  char id[48];
  std::snprintf(id, sizeof(id), "GPU-%.8s-%04lld", node.uid.c_str(), static_cast<long long>(index));
  return id;
}

int64_t Cores(const NodeInfo& node) { return node.cpu_capacity_millis / 1000; }

}  // namespace

NodeTopology TopologyOf(const ClusterModel& model, int node) {
  const NodeInfo& info = model.node(node);
  NodeTopology t;
  const int64_t cores = Cores(info);
  t.cpu_numa.resize(static_cast<size_t>(cores));
  for (int64_t cpu = 0; cpu < cores; ++cpu) {
    t.cpu_numa[static_cast<size_t>(cpu)] = cpu < cores / 2 ? 0 : 1;
  }
  t.reserved_cpus = {0};
  for (int64_t cpu = 1; cpu < cores; ++cpu) t.allocatable_cpus.push_back(cpu);
  const uint64_t half = static_cast<uint64_t>(info.memory_allocatable_bytes) / 2;
  const uint64_t rest = static_cast<uint64_t>(info.memory_allocatable_bytes) - half;
  t.memory = {{"memory", half, {0}}, {"memory", rest, {1}}};
  for (int64_t numa = 0; numa < t.numa_nodes; ++numa) {
    DeviceGroup group{std::string(kGpuResourceName), {}, numa};
    for (int64_t i = 0; i < info.gpus; ++i) {
      if ((i < info.gpus / 2 ? 0 : 1) == numa) group.device_ids.push_back(GpuId(info, i));
    }
    if (!group.device_ids.empty()) t.devices.push_back(std::move(group));
  }
  return t;
}

NodeAssignments AssignmentsOf(const ClusterModel& model, int node) {
  const NodeTopology topology = TopologyOf(model, node);
  const NodeInfo& info = model.node(node);
  // Free cpus per NUMA node, ascending; free memory per NUMA node; free GPUs by index.
  std::vector<std::set<int64_t>> free_cpus(static_cast<size_t>(topology.numa_nodes));
  for (int64_t cpu : topology.allocatable_cpus) {
    free_cpus[static_cast<size_t>(topology.cpu_numa[static_cast<size_t>(cpu)])].insert(cpu);
  }
  std::vector<uint64_t> free_memory;
  for (const NumaMemory& block : topology.memory) free_memory.push_back(block.size_bytes);
  std::vector<bool> gpu_taken(static_cast<size_t>(info.gpus), false);

  NodeAssignments out(static_cast<size_t>(model.pods_per_node()));
  for (int slot = 0; slot < model.pods_per_node(); ++slot) {
    // Requests do not depend on the generation.
    const PodInfo pod = model.PodOfGeneration(node, slot, 0);
    std::vector<ContainerAssignment>& containers = out[static_cast<size_t>(slot)];
    containers.resize(pod.containers.size());
    const bool guaranteed = IsGuaranteed(pod);
    std::set<int64_t> pod_numa;
    for (size_t c = 0; c < pod.containers.size(); ++c) {
      const ContainerSpec& spec = pod.containers[c];
      ContainerAssignment& a = containers[c];
      if (guaranteed && spec.cpu_request_millis % 1000 == 0) {
        size_t want = static_cast<size_t>(spec.cpu_request_millis / 1000);
        // The NUMA node with more free cpus, then the other one if it cannot hold them all.
        std::vector<size_t> order = {0, 1};
        if (free_cpus[1].size() > free_cpus[0].size()) std::swap(order[0], order[1]);
        for (size_t numa : order) {
          while (want > 0 && !free_cpus[numa].empty()) {
            a.cpu_ids.push_back(*free_cpus[numa].begin());
            free_cpus[numa].erase(free_cpus[numa].begin());
            pod_numa.insert(static_cast<int64_t>(numa));
            --want;
          }
        }
        std::sort(a.cpu_ids.begin(), a.cpu_ids.end());
      }
      for (int64_t g = 0; g < spec.gpus; ++g) {
        for (size_t i = 0; i < gpu_taken.size(); ++i) {
          if (gpu_taken[i]) continue;
          gpu_taken[i] = true;
          const int64_t numa = static_cast<int64_t>(i) < info.gpus / 2 ? 0 : 1;
          if (a.devices.empty() || a.devices.back().numa_node != numa) {
            a.devices.push_back({std::string(kGpuResourceName), {}, numa});
          }
          a.devices.back().device_ids.push_back(GpuId(info, static_cast<int64_t>(i)));
          break;
        }
      }
    }
    if (!guaranteed) continue;
    // The memory manager: each container's request from the pod's NUMA node(s); without
    // pinned cpus, from the node with more free memory, or both when one does not hold it.
    for (size_t c = 0; c < pod.containers.size(); ++c) {
      const uint64_t size = static_cast<uint64_t>(pod.containers[c].memory_request_bytes);
      std::vector<int64_t> numa(pod_numa.begin(), pod_numa.end());
      if (numa.empty()) numa = {free_memory[1] > free_memory[0] ? 1 : 0};
      if (numa.size() == 1 && free_memory[static_cast<size_t>(numa[0])] < size) numa = {0, 1};
      uint64_t left = size;
      for (int64_t n : numa) {
        const uint64_t take = std::min(left, free_memory[static_cast<size_t>(n)]);
        free_memory[static_cast<size_t>(n)] -= take;
        left -= take;
      }
      containers[c].memory.push_back({"memory", size, std::move(numa)});
    }
  }
  return out;
}

}  // namespace kubestat::sim
