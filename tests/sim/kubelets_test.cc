// The kubelets' side of the seam to the fake API server (sim/src/kubelet_view.h): the pods
// they run and the changes the watcher hears, with no server started.
#include "kubelets.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kubestat/core/clock.h"

namespace kubestat::sim {
namespace {

struct HeardEvent {
  std::string type;
  PodInfo pod;
};

class RecordingWatcher : public PodWatcher {
 public:
  void OnPodEvent(std::string_view type, const PodInfo& pod, Timestamp) override {
    events.push_back({std::string(type), pod});
  }
  std::vector<HeardEvent> events;
};

SimulatorOptions SmallCluster(Duration mean_pod_lifetime) {
  SimulatorOptions options;
  options.model.nodes = 2;
  options.model.pods_per_node = 4;
  options.model.restart_fraction = 0;
  options.model.leaky_weight = 0;  // leaky containers always restart
  options.model.mean_pod_lifetime = mean_pod_lifetime;
  return options;
}

// "node/slot" -> pod name, as ReadPods() reports them now.
std::map<std::string, std::string> Running(const Kubelets& kubelets) {
  std::map<std::string, std::string> out;
  kubelets.ReadPods("", [&out](std::span<const PodInfo> pods) {
    for (const PodInfo& pod : pods) {
      out[std::to_string(pod.node) + "/" + std::to_string(pod.slot)] = pod.name;
    }
  });
  return out;
}

TEST(KubeletsTest, TickTellsTheWatcherEachReplacedPodAsDeletedThenAdded) {
  const SimulatorOptions options = SmallCluster(std::chrono::minutes(10));
  FakeClock clock(options.model.cluster_start + std::chrono::hours(2));
  FaultTable faults;
  PodResourcesFaultTable podresources_faults;
  auto kubelets = Kubelets::Create(options, clock, faults, podresources_faults);
  ASSERT_TRUE(kubelets.ok()) << kubelets.status();
  RecordingWatcher watcher;
  (*kubelets)->SetPodWatcher(&watcher);
  const std::map<std::string, std::string> before = Running(**kubelets);

  clock.Advance(std::chrono::minutes(30));
  (*kubelets)->Tick();

  const std::map<std::string, std::string> after = Running(**kubelets);
  ASSERT_FALSE(watcher.events.empty());
  ASSERT_EQ(watcher.events.size() % 2, 0u);
  size_t replaced = 0;
  for (const auto& [slot, name] : after) replaced += before.at(slot) != name ? 1 : 0;
  EXPECT_EQ(watcher.events.size(), 2 * replaced);
  for (size_t i = 0; i < watcher.events.size(); i += 2) {
    const HeardEvent& deleted = watcher.events[i];
    const HeardEvent& added = watcher.events[i + 1];
    const std::string slot =
        std::to_string(deleted.pod.node) + "/" + std::to_string(deleted.pod.slot);
    EXPECT_EQ(deleted.type, "DELETED");
    EXPECT_EQ(added.type, "ADDED");
    EXPECT_EQ(deleted.pod.name, before.at(slot));
    EXPECT_EQ(added.pod.name, after.at(slot));
    EXPECT_EQ(added.pod.node, deleted.pod.node);
    EXPECT_EQ(added.pod.slot, deleted.pod.slot);
  }
  // Nothing changed since: a second tick is silent.
  watcher.events.clear();
  (*kubelets)->Tick();
  EXPECT_TRUE(watcher.events.empty());
}

TEST(KubeletsTest, DeletePodShowsThePodThenReplacesItInItsSlot) {
  const SimulatorOptions options = SmallCluster(Duration::zero());
  FakeClock clock(options.model.cluster_start + std::chrono::hours(2));
  FaultTable faults;
  PodResourcesFaultTable podresources_faults;
  auto kubelets = Kubelets::Create(options, clock, faults, podresources_faults);
  ASSERT_TRUE(kubelets.ok()) << kubelets.status();
  RecordingWatcher watcher;
  (*kubelets)->SetPodWatcher(&watcher);
  PodInfo victim;
  (*kubelets)->ReadPods("node-0001", [&victim](std::span<const PodInfo> pods) {
    ASSERT_EQ(pods.size(), 4u);
    victim = pods[3];
  });

  std::vector<std::string> seen;
  EXPECT_TRUE(
      (*kubelets)->DeletePod(victim.namespace_name, victim.name,
                             [&seen](const PodInfo& pod, Timestamp) { seen.push_back(pod.name); }));

  EXPECT_EQ(seen, std::vector<std::string>{victim.name});
  ASSERT_EQ(watcher.events.size(), 2u);
  EXPECT_EQ(watcher.events[0].type, "DELETED");
  EXPECT_EQ(watcher.events[0].pod.name, victim.name);
  EXPECT_EQ(watcher.events[1].type, "ADDED");
  EXPECT_NE(watcher.events[1].pod.name, victim.name);
  EXPECT_EQ(watcher.events[1].pod.slot, victim.slot);
  EXPECT_EQ(Running(**kubelets).at("1/3"), watcher.events[1].pod.name);
  // The deleted pod runs no more: deleting it again finds nothing and changes nothing.
  watcher.events.clear();
  EXPECT_FALSE(
      (*kubelets)->DeletePod(victim.namespace_name, victim.name,
                             [&seen](const PodInfo& pod, Timestamp) { seen.push_back(pod.name); }));
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_TRUE(watcher.events.empty());
}

}  // namespace
}  // namespace kubestat::sim
