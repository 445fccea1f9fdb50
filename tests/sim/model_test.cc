#include "kubestat/sim/model.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace kubestat::sim {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

// 2026-11-21T10:00:00Z
const Timestamp kT0 = Timestamp(seconds(1795255200));

ClusterModel Make(ClusterModelOptions o) {
  absl::StatusOr<ClusterModel> m = ClusterModel::Create(o);
  EXPECT_TRUE(m.ok()) << m.status();
  return *std::move(m);
}

ClusterModelOptions Small(uint64_t seed = 7) {
  ClusterModelOptions o;
  o.seed = seed;
  o.nodes = 4;
  o.pods_per_node = 12;
  o.containers_per_pod = 2;
  return o;
}

TEST(ClusterModelTest, SameSeedGivesIdenticalValues) {
  const ClusterModel a = Make(Small(7));
  const ClusterModel b = Make(Small(7));
  for (int n = 0; n < 4; ++n) {
    const NodeSnapshot sa = a.Snapshot(n, kT0);
    const NodeSnapshot sb = b.Snapshot(n, kT0);
    EXPECT_EQ(sa.usage.usage_core_nano_seconds, sb.usage.usage_core_nano_seconds);
    ASSERT_EQ(sa.pods.size(), sb.pods.size());
    for (size_t p = 0; p < sa.pods.size(); ++p) {
      EXPECT_EQ(sa.pods[p].pod.name, sb.pods[p].pod.name);
      EXPECT_EQ(sa.pods[p].pod.uid, sb.pods[p].pod.uid);
      EXPECT_EQ(sa.pods[p].usage.usage_nano_cores, sb.pods[p].usage.usage_nano_cores);
      EXPECT_EQ(sa.pods[p].usage.working_set_bytes, sb.pods[p].usage.working_set_bytes);
    }
  }
}

TEST(ClusterModelTest, DifferentSeedGivesDifferentValues) {
  const ClusterModel a = Make(Small(7));
  const ClusterModel b = Make(Small(8));
  int differing = 0;
  for (int p = 0; p < 12; ++p) {
    if (a.ContainerUsage(0, p, 0, kT0).usage_core_nano_seconds !=
        b.ContainerUsage(0, p, 0, kT0).usage_core_nano_seconds) {
      ++differing;
    }
  }
  EXPECT_GE(differing, 11);
  EXPECT_NE(a.Pod(0, 5, kT0).uid, b.Pod(0, 5, kT0).uid);
}

TEST(ClusterModelTest, ValuesAreDefinedAtWholeSeconds) {
  const ClusterModel m = Make(Small());
  const ResourceUsage a = m.ContainerUsage(1, 3, 0, kT0);
  const ResourceUsage b = m.ContainerUsage(1, 3, 0, kT0 + std::chrono::milliseconds(999));
  EXPECT_EQ(a.usage_core_nano_seconds, b.usage_core_nano_seconds);
  EXPECT_EQ(a.time, b.time);
  EXPECT_EQ(b.time, kT0);
}

TEST(ClusterModelTest, CounterIsTheIntegralOfTheRate) {
  ClusterModelOptions o = Small();
  o.restart_fraction = 0;
  o.leaky_weight = 0;
  o.mean_pod_lifetime = Duration::zero();
  const ClusterModel m = Make(o);
  int checked = 0;
  for (int slot = 0; slot < 12; ++slot) {
    for (int c = 0; c < 2; ++c) {
      for (int interval = 0; interval < 20; ++interval) {
        const Timestamp t1 = kT0 + seconds(977 * interval + slot);
        const int length = 10 + 37 * interval;
        const Timestamp t2 = t1 + seconds(length);
        // Sum of the per-second rates: exact for the square wave, a Riemann sum otherwise.
        long double sum = 0;
        for (int s = 0; s < length; ++s) {
          const ResourceUsage a = m.ContainerUsage(0, slot, c, t1 + seconds(s));
          const ResourceUsage b = m.ContainerUsage(0, slot, c, t1 + seconds(s + 1));
          sum += (static_cast<long double>(a.usage_nano_cores) + b.usage_nano_cores) / 2;
        }
        const double delta =
            static_cast<double>(m.ContainerUsage(0, slot, c, t2).usage_core_nano_seconds -
                                m.ContainerUsage(0, slot, c, t1).usage_core_nano_seconds);
        const double mean_counter = delta / length;
        const double mean_rate = static_cast<double>(sum) / length;
        // Spiky rates jump inside an interval; the trapezoid sum misses by at most half a
        // burst height per edge.
        const Workload w = m.Pod(0, slot, t1).containers[c].workload;
        const double tolerance = w == Workload::kSpiky ? 2.0e9 / length : 0.002 * mean_rate + 50;
        EXPECT_NEAR(mean_counter, mean_rate, tolerance)
            << "slot " << slot << " container " << c << " workload " << WorkloadName(w);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 480);
}

TEST(ClusterModelTest, SpikyCounterMatchesPiecewiseConstantRateExactly) {
  ClusterModelOptions o = Small();
  o.steady_weight = o.diurnal_weight = o.leaky_weight = 0;
  o.spiky_weight = 1;
  o.restart_fraction = 0;
  o.mean_pod_lifetime = Duration::zero();
  const ClusterModel m = Make(o);
  for (int slot = 0; slot < 4; ++slot) {
    uint64_t prev = m.ContainerUsage(2, slot, 0, kT0).usage_core_nano_seconds;
    for (int s = 0; s < 900; ++s) {
      const uint64_t rate = m.ContainerUsage(2, slot, 0, kT0 + seconds(s)).usage_nano_cores;
      const uint64_t next =
          m.ContainerUsage(2, slot, 0, kT0 + seconds(s + 1)).usage_core_nano_seconds;
      EXPECT_NEAR(static_cast<double>(next - prev), static_cast<double>(rate), 2.0);
      prev = next;
    }
  }
}

TEST(ClusterModelTest, RestartResetsCounterAndMovesStartTime) {
  ClusterModelOptions o = Small();
  o.steady_weight = o.diurnal_weight = o.spiky_weight = 0;
  o.leaky_weight = 1;  // every container restarts every 1 to 3 hours
  o.mean_pod_lifetime = Duration::zero();
  const ClusterModel m = Make(o);
  const Timestamp start = m.ContainerStart(0, 4, 0, kT0);
  // Find the next restart, second by second.
  Timestamp restart{};
  for (int s = 1; s <= 3 * 3600 + 1; ++s) {
    if (m.ContainerStart(0, 4, 0, kT0 + seconds(s)) != start) {
      restart = kT0 + seconds(s);
      break;
    }
  }
  ASSERT_NE(restart, Timestamp{}) << "no restart within 3h";
  const ResourceUsage before = m.ContainerUsage(0, 4, 0, restart - seconds(1));
  const ResourceUsage after = m.ContainerUsage(0, 4, 0, restart);
  EXPECT_EQ(after.start_time, restart);
  EXPECT_EQ(before.start_time, start);
  EXPECT_EQ(after.usage_core_nano_seconds, 0u);
  EXPECT_GT(before.usage_core_nano_seconds, after.usage_core_nano_seconds);
  // Leaked memory is released by the restart.
  EXPECT_LT(after.working_set_bytes, before.working_set_bytes);
  EXPECT_EQ(m.RestartCount(0, 4, 0, restart), m.RestartCount(0, 4, 0, restart - seconds(1)) + 1);
  // The node's counter does not go backwards across the restart.
  EXPECT_GE(m.NodeUsage(0, restart).usage_core_nano_seconds,
            m.NodeUsage(0, restart - seconds(1)).usage_core_nano_seconds);
}

// `new_pod` is the next generation of `old_pod`'s slot, created at `created`.
void ExpectReplacement(const PodInfo& old_pod, const PodInfo& new_pod, Timestamp created) {
  EXPECT_EQ(new_pod.generation, old_pod.generation + 1);
  EXPECT_NE(new_pod.name, old_pod.name);
  EXPECT_NE(new_pod.uid, old_pod.uid);
  EXPECT_EQ(new_pod.start_time, created);
  EXPECT_EQ(new_pod.app, old_pod.app);
  EXPECT_EQ(new_pod.namespace_name, old_pod.namespace_name);
}

TEST(ClusterModelTest, ChurnReplacesPodWithNewNameUidAndCreationTime) {
  ClusterModelOptions o = Small();
  o.mean_pod_lifetime = hours(1);
  const ClusterModel m = Make(o);
  const int64_t g = m.Generation(1, 6, kT0);
  Timestamp change{};
  for (int s = 1; s <= 2 * 3600; ++s) {
    if (m.Generation(1, 6, kT0 + seconds(s)) != g) {
      change = kT0 + seconds(s);
      break;
    }
  }
  ASSERT_NE(change, Timestamp{}) << "no churn within 1.8x the mean lifetime";
  ExpectReplacement(m.Pod(1, 6, change - seconds(1)), m.Pod(1, 6, change), change);
  EXPECT_EQ(m.ContainerUsage(1, 6, 0, change).usage_core_nano_seconds, 0u);
  EXPECT_GE(m.NodeUsage(1, change).usage_core_nano_seconds,
            m.NodeUsage(1, change - seconds(1)).usage_core_nano_seconds);
}

TEST(ClusterModelTest, DeletedPodIsReplacedAtOnceAndThePastStaysAsItWas) {
  ClusterModelOptions o = Small();
  o.mean_pod_lifetime = hours(1);
  ClusterModel m = Make(o);
  const PodInfo old_pod = m.Pod(1, 6, kT0);
  const PodInfo neighbour = m.Pod(1, 7, kT0);
  const uint64_t node_before = m.NodeUsage(1, kT0 - seconds(1)).usage_core_nano_seconds;

  const PodInfo replacement = m.DeletePod(1, 6, kT0 + std::chrono::milliseconds(700));
  ExpectReplacement(old_pod, replacement, kT0);
  EXPECT_EQ(m.Pod(1, 6, kT0).name, replacement.name);
  EXPECT_EQ(m.Pod(1, 6, kT0 - seconds(1)).name, old_pod.name);
  EXPECT_EQ(m.Pod(1, 7, kT0).name, neighbour.name);
  EXPECT_EQ(m.ContainerUsage(1, 6, 0, kT0).usage_core_nano_seconds, 0u);
  EXPECT_EQ(m.ContainerStart(1, 6, 0, kT0 + seconds(5)), kT0);

  const NodeSnapshot snap = m.Snapshot(1, kT0);
  EXPECT_EQ(snap.pods[6].pod.name, replacement.name);
  EXPECT_EQ(snap.pods[6].usage.start_time, kT0);
  EXPECT_EQ(m.NodeUsage(1, kT0 - seconds(1)).usage_core_nano_seconds, node_before);
  EXPECT_GE(snap.usage.usage_core_nano_seconds, node_before);

  // Churn goes on at its seeded instants, and every generation starts where Generation()
  // says it does.
  int64_t last = replacement.generation;
  for (int s = 0; s <= 3 * 3600; s += 7) {
    const Timestamp t = kT0 + seconds(s);
    const int64_t g = m.Generation(1, 6, t);
    ASSERT_GE(g, last) << "at +" << s << "s";
    last = g;
    const Timestamp start = m.GenerationStart(1, 6, g);
    ASSERT_LE(start, t) << "at +" << s << "s";
    ASSERT_EQ(m.Generation(1, 6, start), g) << "at +" << s << "s";
  }
  EXPECT_GT(last, replacement.generation) << "no churn within 3h at a 1h mean lifetime";
}

TEST(ClusterModelTest, PodsDeletedWithoutChurnStartTheirReplacementsWhenDeleted) {
  ClusterModelOptions o = Small();
  o.mean_pod_lifetime = Duration::zero();
  ClusterModel m = Make(o);
  EXPECT_EQ(m.DeletePod(0, 3, kT0).generation, 1);
  // A second deletion in the same second replaces the replacement.
  const PodInfo second = m.DeletePod(0, 3, kT0);
  EXPECT_EQ(second.generation, 2);
  EXPECT_EQ(second.start_time, kT0);
  EXPECT_EQ(m.Generation(0, 3, kT0 - seconds(1)), 0);
  EXPECT_EQ(m.Generation(0, 3, kT0 + hours(5)), 2);
  EXPECT_EQ(m.GenerationStart(0, 3, 1), kT0);
  EXPECT_EQ(m.GenerationStart(0, 3, 3), Timestamp::max());
  // A deletion is never placed before the slot's previous one.
  EXPECT_EQ(m.DeletePod(0, 3, kT0 - hours(1)).start_time, kT0);
  EXPECT_EQ(m.Generation(0, 3, kT0), 3);
  EXPECT_EQ(m.Generation(0, 4, kT0), 0);
}

TEST(ClusterModelTest, NodeCounterIsMonotonicOverADayOfChurn) {
  ClusterModelOptions o = Small();
  o.mean_pod_lifetime = std::chrono::minutes(10);
  o.restart_fraction = 0.5;
  const ClusterModel m = Make(o);
  uint64_t prev = 0;
  for (int s = 0; s < 86400; s += 17) {
    const uint64_t v = m.NodeUsage(3, kT0 + seconds(s)).usage_core_nano_seconds;
    ASSERT_GE(v, prev) << "at +" << s << "s";
    prev = v;
  }
}

TEST(ClusterModelTest, NodeIsSumOfPodsAndSystemContainers) {
  const ClusterModel m = Make(Small());
  const NodeSnapshot snap = m.Snapshot(2, kT0);
  uint64_t pods_rate = 0, pods_ws = 0;
  for (const PodSnapshot& p : snap.pods) {
    uint64_t c_rate = 0;
    for (const ContainerSnapshot& c : p.containers) c_rate += c.usage.usage_nano_cores;
    EXPECT_EQ(p.usage.usage_nano_cores, c_rate);
    pods_rate += p.usage.usage_nano_cores;
    pods_ws += p.usage.working_set_bytes;
  }
  const ResourceUsage& pods_cg = snap.system_containers[static_cast<int>(SystemContainer::kPods)];
  EXPECT_GT(pods_cg.usage_nano_cores, pods_rate);
  EXPECT_LT(pods_cg.usage_nano_cores, pods_rate + 5'000'000);  // overhead under 5m
  EXPECT_GT(pods_cg.working_set_bytes, pods_ws);
  const uint64_t system_rate = pods_cg.usage_nano_cores +
                               snap.system_containers[0].usage_nano_cores +
                               snap.system_containers[1].usage_nano_cores;
  EXPECT_GT(snap.usage.usage_nano_cores, system_rate);
  EXPECT_LT(snap.usage.working_set_bytes, static_cast<uint64_t>(snap.node->memory_capacity_bytes));
  EXPECT_LT(snap.usage.usage_nano_cores,
            static_cast<uint64_t>(snap.node->cpu_capacity_millis) * 1'000'000);
}

TEST(ClusterModelTest, PodNamesAreUniqueAndLabelled) {
  ClusterModelOptions o;
  o.nodes = 100;
  o.pods_per_node = 30;
  const ClusterModel m = Make(o);
  std::set<std::string> names, uids, namespaces;
  for (int n = 0; n < 100; ++n) {
    for (int p = 0; p < 30; ++p) {
      const PodInfo pod = m.Pod(n, p, kT0);
      EXPECT_TRUE(names.insert(pod.namespace_name + "/" + pod.name).second) << pod.name;
      EXPECT_TRUE(uids.insert(pod.uid).second);
      namespaces.insert(pod.namespace_name);
      bool has_app = false;
      for (const auto& [k, v] : pod.labels) has_app |= (k == "app" && v == pod.app);
      EXPECT_TRUE(has_app);
    }
  }
  EXPECT_GE(namespaces.size(), 5u);
  EXPECT_EQ(m.node(7).name, "node-0007");
  EXPECT_EQ(m.NodeIndex("node-0007"), 7);
  EXPECT_EQ(m.NodeIndex("node-9999"), -1);
}

TEST(ClusterModelTest, TenantNamespacesHoldTheDeploymentPodsEvenly) {
  ClusterModelOptions o;
  o.nodes = 20;
  o.pods_per_node = 32;  // 30 Deployment pods per node: 600 over 20 namespaces
  o.tenant_namespaces = 20;
  const ClusterModel m = Make(o);
  const ClusterModel apps = Make(ClusterModelOptions{.nodes = 20, .pods_per_node = 32});
  std::map<std::string, int> per_namespace;
  for (int n = 0; n < o.nodes; ++n) {
    for (int p = 0; p < o.pods_per_node; ++p) {
      const PodInfo pod = m.Pod(n, p, kT0);
      const PodInfo same = apps.Pod(n, p, kT0);
      // Only the namespace moves: the pod, its app and its usage are those of the default.
      EXPECT_EQ(pod.name, same.name);
      EXPECT_EQ(pod.app, same.app);
      if (p < 2) {
        EXPECT_EQ(pod.namespace_name, same.namespace_name);
        EXPECT_TRUE(pod.namespace_name == "kube-system" || pod.namespace_name == "monitoring");
      } else {
        ++per_namespace[pod.namespace_name];
      }
    }
  }
  ASSERT_EQ(per_namespace.size(), 20u);
  EXPECT_EQ(per_namespace.begin()->first, "tenant-0000");
  EXPECT_EQ(per_namespace.rbegin()->first, "tenant-0019");
  for (const auto& [ns, count] : per_namespace) EXPECT_EQ(count, 30) << ns;
  // Round-robin in (node, slot) order: node 0's first Deployment slot is tenant-0000.
  EXPECT_EQ(m.Pod(0, 2, kT0).namespace_name, "tenant-0000");
  EXPECT_EQ(m.Pod(0, 3, kT0).namespace_name, "tenant-0001");
  EXPECT_EQ(m.Pod(1, 2, kT0).namespace_name, "tenant-0010");
}

TEST(ClusterModelTest, RejectsBadOptionsNamingTheField) {
  ClusterModelOptions o;
  o.nodes = 0;
  absl::StatusOr<ClusterModel> m = ClusterModel::Create(o);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("nodes"), absl::string_view::npos);
  o = ClusterModelOptions();
  o.mean_pod_lifetime = std::chrono::minutes(1);
  EXPECT_FALSE(ClusterModel::Create(o).ok());
  o = ClusterModelOptions();
  o.tenant_namespaces = -1;
  m = ClusterModel::Create(o);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("tenant_namespaces"), absl::string_view::npos);
}

}  // namespace
}  // namespace kubestat::sim
