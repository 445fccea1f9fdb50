// The simulated nodes' podresources topology: consistent with the pods the model runs (every
// Guaranteed container with whole cpus has exactly that many exclusive cpus, every GPU request
// one GPU, nothing handed out twice or outside what the node can allocate), and the model is
// unchanged unless node_topology is on.
#include "kubestat/sim/topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "kubestat/sim/model.h"

namespace kubestat::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

ClusterModel Make(const ClusterModelOptions& o) {
  absl::StatusOr<ClusterModel> m = ClusterModel::Create(o);
  EXPECT_TRUE(m.ok()) << m.status();
  return *std::move(m);
}

ClusterModelOptions WithTopology(int nodes = 8, int pods = 30) {
  ClusterModelOptions o;
  o.seed = 11;
  o.nodes = nodes;
  o.pods_per_node = pods;
  o.node_topology = true;
  return o;
}

TEST(TopologyTest, NodeHasTwoNumaNodesCpuZeroReservedAndMemorySplitEvenly) {
  const ClusterModel model = Make(WithTopology());
  for (int n = 0; n < model.node_count(); ++n) {
    const NodeInfo& node = model.node(n);
    const NodeTopology t = TopologyOf(model, n);
    const int64_t cores = node.cpu_capacity_millis / 1000;
    EXPECT_EQ(t.numa_nodes, 2);
    EXPECT_THAT(t.reserved_cpus, ElementsAre(0));
    ASSERT_EQ(static_cast<int64_t>(t.allocatable_cpus.size()), cores - 1);
    EXPECT_EQ(t.allocatable_cpus.front(), 1);
    EXPECT_EQ(t.allocatable_cpus.back(), cores - 1);
    EXPECT_EQ(t.cpu_numa[0], 0);
    EXPECT_EQ(t.cpu_numa[static_cast<size_t>(cores - 1)], 1);
    ASSERT_EQ(t.memory.size(), 2u);
    EXPECT_EQ(t.memory[0].size_bytes + t.memory[1].size_bytes,
              static_cast<uint64_t>(node.memory_allocatable_bytes));
    EXPECT_THAT(t.memory[0].numa_nodes, ElementsAre(0));
    EXPECT_THAT(t.memory[1].numa_nodes, ElementsAre(1));
    EXPECT_EQ(node.gpus, kNodeGpus);
    ASSERT_EQ(t.devices.size(), 2u);
    EXPECT_EQ(t.devices[0].resource_name, "nvidia.com/gpu");
    EXPECT_EQ(t.devices[0].numa_node, 0);
    EXPECT_EQ(t.devices[0].device_ids.size() + t.devices[1].device_ids.size(),
              static_cast<size_t>(kNodeGpus));
  }
}

TEST(TopologyTest, AssignmentsFollowThePodsRequestsAndNeverOverlap) {
  const ClusterModel model = Make(WithTopology());
  int pinned_containers = 0;
  int gpu_containers = 0;
  for (int n = 0; n < model.node_count(); ++n) {
    const NodeTopology t = TopologyOf(model, n);
    const NodeAssignments given = AssignmentsOf(model, n);
    ASSERT_EQ(given.size(), static_cast<size_t>(model.pods_per_node()));
    const std::set<int64_t> allocatable(t.allocatable_cpus.begin(), t.allocatable_cpus.end());
    std::set<std::string> gpus_of_node;
    for (const DeviceGroup& g : t.devices)
      gpus_of_node.insert(g.device_ids.begin(), g.device_ids.end());
    std::set<int64_t> cpus_used;
    std::set<std::string> gpus_used;
    for (int slot = 0; slot < model.pods_per_node(); ++slot) {
      const PodInfo pod = model.PodOfGeneration(n, slot, 0);
      const bool guaranteed = IsGuaranteed(pod);
      // Pinned apps are Guaranteed; the others keep their Burstable limits.
      EXPECT_EQ(guaranteed, pod.app == "ledger" || pod.app == "indexer") << pod.name;
      ASSERT_EQ(given[slot].size(), pod.containers.size());
      for (size_t c = 0; c < pod.containers.size(); ++c) {
        const ContainerSpec& spec = pod.containers[c];
        const ContainerAssignment& a = given[slot][c];
        if (guaranteed && spec.cpu_request_millis % 1000 == 0) {
          ++pinned_containers;
          EXPECT_EQ(static_cast<int64_t>(a.cpu_ids.size()), spec.cpu_request_millis / 1000)
              << pod.name << "/" << spec.name;
        } else {
          EXPECT_THAT(a.cpu_ids, IsEmpty()) << pod.name << "/" << spec.name;
        }
        for (int64_t cpu : a.cpu_ids) {
          EXPECT_TRUE(allocatable.contains(cpu)) << cpu;
          EXPECT_TRUE(cpus_used.insert(cpu).second) << "cpu " << cpu << " given twice";
        }
        if (guaranteed) {
          ASSERT_EQ(a.memory.size(), 1u) << pod.name;
          EXPECT_EQ(a.memory[0].memory_type, "memory");
          EXPECT_EQ(a.memory[0].size_bytes, static_cast<uint64_t>(spec.memory_request_bytes));
          // The memory comes from the NUMA node(s) of the pod's cpus.
          for (int64_t cpu : given[slot][0].cpu_ids) {
            const int64_t numa = t.cpu_numa[static_cast<size_t>(cpu)];
            EXPECT_NE(std::find(a.memory[0].numa_nodes.begin(), a.memory[0].numa_nodes.end(), numa),
                      a.memory[0].numa_nodes.end());
          }
        } else {
          EXPECT_THAT(a.memory, IsEmpty());
        }
        size_t devices = 0;
        for (const DeviceGroup& g : a.devices) {
          EXPECT_EQ(g.resource_name, "nvidia.com/gpu");
          for (const std::string& id : g.device_ids) {
            ++devices;
            EXPECT_TRUE(gpus_of_node.contains(id)) << id;
            EXPECT_TRUE(gpus_used.insert(id).second) << "GPU " << id << " given twice";
          }
        }
        EXPECT_EQ(static_cast<int64_t>(devices), spec.gpus) << pod.name << "/" << spec.name;
        if (spec.gpus > 0) ++gpu_containers;
      }
    }
  }
  // The seed gives some of each (so the checks above did check something).
  EXPECT_GT(pinned_containers, 8);
  EXPECT_GT(gpu_containers, 8);
}

TEST(TopologyTest, GpuRequestsNeverExceedTheNodesGpus) {
  const ClusterModel model = Make(WithTopology(20, 60));
  for (int n = 0; n < model.node_count(); ++n) {
    int64_t asked = 0;
    for (int slot = 0; slot < model.pods_per_node(); ++slot) {
      for (const ContainerSpec& c : model.PodOfGeneration(n, slot, 0).containers) asked += c.gpus;
    }
    EXPECT_LE(asked, kNodeGpus);
  }
}

TEST(TopologyTest, SlotsKeepTheirRequestsAcrossGenerations) {
  const ClusterModel model = Make(WithTopology(2, 12));
  for (int slot = 0; slot < 12; ++slot) {
    const PodInfo first = model.PodOfGeneration(0, slot, 0);
    const PodInfo later = model.PodOfGeneration(0, slot, 5);
    ASSERT_EQ(first.containers.size(), later.containers.size());
    for (size_t c = 0; c < first.containers.size(); ++c) {
      EXPECT_EQ(first.containers[c].cpu_request_millis, later.containers[c].cpu_request_millis);
      EXPECT_EQ(first.containers[c].gpus, later.containers[c].gpus);
    }
  }
}

TEST(TopologyTest, WithoutNodeTopologyNothingIsPinnedAndNoNodeHasGpus) {
  ClusterModelOptions o = WithTopology();
  o.node_topology = false;
  const ClusterModel model = Make(o);
  for (int n = 0; n < model.node_count(); ++n) {
    EXPECT_EQ(model.node(n).gpus, 0);
    for (int slot = 0; slot < model.pods_per_node(); ++slot) {
      const PodInfo pod = model.PodOfGeneration(n, slot, 0);
      EXPECT_FALSE(IsGuaranteed(pod)) << pod.name;
      for (const ContainerSpec& c : pod.containers) EXPECT_EQ(c.gpus, 0);
    }
    for (const auto& slot : AssignmentsOf(model, n)) {
      for (const ContainerAssignment& a : slot) EXPECT_TRUE(a.empty());
    }
  }
}

}  // namespace
}  // namespace kubestat::sim
