#include "kubestat/aggregator/query/snapshot_source.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "kubestat/testing/aggregator/fake_metrics_source.h"
#include "kubestat/testing/aggregator/parts_source.h"

namespace kubestat::aggregator {
namespace {

using testing::BaseTime;
using testing::FakeMetricsSource;
using testing::MakeNode;
using testing::MakePod;

std::vector<std::string> Names(const std::vector<metrics_api::PodMetrics>& pods) {
  std::vector<std::string> names;
  names.reserve(pods.size());
  for (const metrics_api::PodMetrics& pod : pods)
    names.push_back(pod.namespace_name + "/" + pod.name);
  return names;
}

std::vector<std::string> Names(const std::vector<metrics_api::NodeMetrics>& nodes) {
  std::vector<std::string> names;
  names.reserve(nodes.size());
  for (const metrics_api::NodeMetrics& node : nodes) names.push_back(node.name);
  return names;
}

// Runs a hook in the middle of a refresh: after the nodes are read, before the pods are.
class HookedSource final : public MetricsSource {
 public:
  explicit HookedSource(const MetricsSource* inner) : inner_(inner) {}
  std::function<void()> before_pods;

  bool Ready() const override { return inner_->Ready(); }
  std::vector<metrics_api::NodeMetrics> ListNodes() const override { return inner_->ListNodes(); }
  std::optional<metrics_api::NodeMetrics> GetNode(std::string_view name) const override {
    return inner_->GetNode(name);
  }
  std::vector<metrics_api::PodMetrics> ListPods(std::string_view namespace_name) const override {
    if (before_pods) before_pods();
    return inner_->ListPods(namespace_name);
  }
  std::optional<metrics_api::PodMetrics> GetPod(std::string_view namespace_name,
                                                std::string_view name) const override {
    return inner_->GetPod(namespace_name, name);
  }

 private:
  const MetricsSource* inner_;
};

class SnapshotSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    live_.PutNode(MakeNode("node-b", {{"zone", "b"}}, BaseTime(), 2000));
    live_.PutNode(MakeNode("node-a", {{"zone", "a"}}, BaseTime(), 1000));
    live_.PutPod(MakePod("shop", "web-1", "node-a", {{"app", "web"}}, BaseTime(), 10));
    live_.PutPod(MakePod("shop", "web-2", "node-b", {{"app", "web"}}, BaseTime(), 20));
    live_.PutPod(MakePod("kube-system", "dns-1", "node-a", {{"app", "dns"}}, BaseTime(), 30));
    live_.PutPod(MakePod("zeta", "job-1", "node-b", {{"app", "job"}}, BaseTime(), 40, 2));
  }

  FakeMetricsSource live_;
  SnapshotSource snapshot_{&live_};
};

TEST_F(SnapshotSourceTest, EmptyAndNotReadyBeforeTheFirstRefresh) {
  EXPECT_FALSE(snapshot_.Ready());
  EXPECT_TRUE(snapshot_.ListNodes().empty());
  EXPECT_TRUE(snapshot_.ListPods("").empty());
  EXPECT_FALSE(snapshot_.GetNode("node-a").has_value());
}

TEST_F(SnapshotSourceTest, RefreshPublishesEveryObjectSortedAndEqualToTheLiveSource) {
  snapshot_.Refresh();
  EXPECT_TRUE(snapshot_.Ready());
  EXPECT_EQ(Names(snapshot_.ListNodes()), (std::vector<std::string>{"node-a", "node-b"}));
  EXPECT_EQ(
      Names(snapshot_.ListPods("")),
      (std::vector<std::string>{"kube-system/dns-1", "shop/web-1", "shop/web-2", "zeta/job-1"}));
  std::optional<metrics_api::PodMetrics> job = snapshot_.GetPod("zeta", "job-1");
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->node_name, "node-b");
  EXPECT_EQ(job->labels.at("app"), "job");
  ASSERT_EQ(job->containers.size(), 2u);
  EXPECT_EQ(job->containers[1].windows.cpu[0].max, 41u + 10u);
  std::optional<metrics_api::NodeMetrics> node = snapshot_.GetNode("node-b");
  ASSERT_TRUE(node.has_value());
  EXPECT_EQ(node->machine.memory[3].p95, 2000u * 1000u + 5u);
  EXPECT_EQ(snapshot_.Stats().nodes, 2u);
  EXPECT_EQ(snapshot_.Stats().pods, 4u);
}

TEST_F(SnapshotSourceTest, LiveChangesShowOnlyAfterTheNextRefresh) {
  snapshot_.Refresh();
  live_.PutPod(MakePod("shop", "web-3", "node-a", {{"app", "web"}}, BaseTime(), 50));
  live_.RemoveNode("node-b");
  EXPECT_EQ(snapshot_.ListPods("shop").size(), 2u);
  EXPECT_TRUE(snapshot_.GetNode("node-b").has_value());
  // A reader holding the old cut keeps it after the refresh.
  std::shared_ptr<const MetricsSnapshot> held = snapshot_.Snapshot();
  snapshot_.Refresh();
  EXPECT_EQ(Names(snapshot_.ListPods("shop")),
            (std::vector<std::string>{"shop/web-1", "shop/web-2", "shop/web-3"}));
  EXPECT_FALSE(snapshot_.GetNode("node-b").has_value());
  EXPECT_EQ(held->pods.size(), 4u);
  EXPECT_EQ(held->nodes.size(), 2u);
}

TEST_F(SnapshotSourceTest, ListsOneNamespaceOnly) {
  snapshot_.Refresh();
  EXPECT_EQ(Names(snapshot_.ListPods("shop")),
            (std::vector<std::string>{"shop/web-1", "shop/web-2"}));
  EXPECT_EQ(Names(snapshot_.ListPods("kube-system")),
            (std::vector<std::string>{"kube-system/dns-1"}));
  EXPECT_EQ(Names(snapshot_.ListPods("zeta")), (std::vector<std::string>{"zeta/job-1"}));
  EXPECT_TRUE(snapshot_.ListPods("sh").empty());
  EXPECT_TRUE(snapshot_.ListPods("nope").empty());
}

// The pods of one node, from the snapshot's parts.
std::vector<std::string> OnNode(const SnapshotSource& source, const std::string& node) {
  std::vector<std::string> names;
  std::shared_ptr<const MetricsSnapshot> cut = source.Snapshot();
  for (const auto& pod : cut->PodsOfNode(node)) {
    names.push_back(pod->namespace_name + "/" + pod->name);
  }
  return names;
}

// How many pods the snapshot gives by node: each listed pod once when consistent.
size_t PodsByNode(const MetricsSnapshot& cut) {
  size_t indexed = 0;
  for (const auto& part : cut.parts) indexed += cut.PodsOfNode(part->node_name).size();
  return indexed;
}

TEST_F(SnapshotSourceTest, IndexesThePodsByNodeAndNamespace) {
  snapshot_.Refresh();
  EXPECT_EQ(OnNode(snapshot_, "node-a"),
            (std::vector<std::string>{"kube-system/dns-1", "shop/web-1"}));
  EXPECT_EQ(OnNode(snapshot_, "node-b"), (std::vector<std::string>{"shop/web-2", "zeta/job-1"}));
  EXPECT_TRUE(OnNode(snapshot_, "node-x").empty());
  std::shared_ptr<const MetricsSnapshot> cut = snapshot_.Snapshot();
  EXPECT_EQ(cut->NamespaceRange("shop"), (std::pair<size_t, size_t>(1, 3)));
  EXPECT_EQ(cut->NamespaceRange(""), (std::pair<size_t, size_t>(0, 4)));
  EXPECT_EQ(cut->NamespaceRange("nope").first, cut->NamespaceRange("nope").second);
  // No copy: the same cut until the next refresh.
  EXPECT_EQ(snapshot_.Snapshot(), cut);
  snapshot_.Refresh();
  EXPECT_NE(snapshot_.Snapshot(), cut);
}

TEST_F(SnapshotSourceTest, RemovalsLeaveEverywhereAtTheNextPublishWithoutACopyBefore) {
  snapshot_.Refresh();
  const std::shared_ptr<const MetricsSnapshot> cut = snapshot_.Snapshot();
  snapshot_.RemovePod("shop", "web-1");
  // Not copied per removal: the served cut is the same until the next publish.
  EXPECT_EQ(snapshot_.Snapshot(), cut);
  EXPECT_TRUE(snapshot_.Stats().removals_unpublished);
  snapshot_.Publish();
  EXPECT_FALSE(snapshot_.Stats().removals_unpublished);
  EXPECT_FALSE(snapshot_.GetPod("shop", "web-1").has_value());
  EXPECT_EQ(Names(snapshot_.ListPods("shop")), (std::vector<std::string>{"shop/web-2"}));
  EXPECT_EQ(OnNode(snapshot_, "node-a"), (std::vector<std::string>{"kube-system/dns-1"}));
  snapshot_.RemovePod("kube-system", "dns-1", "node-a");
  snapshot_.Publish();
  EXPECT_TRUE(OnNode(snapshot_, "node-a").empty());
  snapshot_.RemoveNode("node-a");
  snapshot_.Publish();
  EXPECT_EQ(Names(snapshot_.ListNodes()), (std::vector<std::string>{"node-b"}));
  snapshot_.RemovePod("shop", "absent");
  snapshot_.RemoveNode("absent");
  EXPECT_EQ(snapshot_.Stats().removals, 5u);
  snapshot_.Publish();
  EXPECT_EQ(snapshot_.Stats().pods, 2u);
}

TEST_F(SnapshotSourceTest, ARemovalDuringARefreshIsNotUndoneByIt) {
  HookedSource hooked(&live_);
  SnapshotSource snapshot(&hooked);
  snapshot.Refresh();
  // The deletion reaches the snapshot after the refresh read the nodes and before it read
  // the pods; the live source still lists the pod (its engine entry goes later).
  hooked.before_pods = [&] {
    snapshot.RemovePod("shop", "web-2");
    snapshot.RemoveNode("node-a");
  };
  snapshot.Refresh();
  hooked.before_pods = nullptr;
  EXPECT_FALSE(snapshot.GetPod("shop", "web-2").has_value());
  EXPECT_FALSE(snapshot.GetNode("node-a").has_value());
  EXPECT_EQ(OnNode(snapshot, "node-b"), (std::vector<std::string>{"zeta/job-1"}));
  // The next refresh reads the live source as it is.
  snapshot.Refresh();
  EXPECT_TRUE(snapshot.GetPod("shop", "web-2").has_value());
  EXPECT_TRUE(snapshot.GetNode("node-a").has_value());
}

TEST_F(SnapshotSourceTest, ReadyOnlyAfterARefreshWhileTheLiveSourceWasReady) {
  live_.SetReady(false);
  snapshot_.Refresh();
  EXPECT_FALSE(snapshot_.Ready());
  live_.SetReady(true);
  EXPECT_FALSE(snapshot_.Ready());
  snapshot_.Refresh();
  EXPECT_TRUE(snapshot_.Ready());
}

TEST_F(SnapshotSourceTest, ReadersRunConcurrentlyWithRefreshesAndRemovals) {
  snapshot_.Refresh();
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  readers.reserve(3);
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        // Every cut is internally consistent: each pod of a node's index is in the list.
        std::shared_ptr<const MetricsSnapshot> cut = snapshot_.Snapshot();
        if (PodsByNode(*cut) != cut->pods.size()) ++bad;
        if (snapshot_.ListPods("shop").size() > 3) ++bad;
      }
    });
  }
  for (int i = 0; i < 200; ++i) {
    live_.PutPod(MakePod("shop", "web-3", "node-a", {}, BaseTime(), 60));
    snapshot_.Refresh();
    snapshot_.RemovePod("shop", "web-3");
    live_.RemovePod("shop", "web-3");
  }
  stop.store(true);
  for (std::thread& reader : readers) reader.join();
  EXPECT_EQ(bad.load(), 0);
  snapshot_.Publish();
  EXPECT_FALSE(snapshot_.GetPod("shop", "web-3").has_value());
  EXPECT_EQ(snapshot_.Stats().refreshes, 201u);
}

TEST_F(SnapshotSourceTest, ANodeReadAfterItsScrapeShowsAtTheNextPublishAlone) {
  snapshot_.Refresh();
  live_.PutNode(MakeNode("node-a", {{"zone", "a"}}, BaseTime(), 1500));
  live_.PutPod(MakePod("shop", "web-3", "node-a", {{"app", "web"}}, BaseTime(), 50));
  live_.PutPod(MakePod("shop", "web-4", "node-b", {{"app", "web"}}, BaseTime(), 60));
  snapshot_.RefreshNode("node-a");
  // Read, not yet published.
  EXPECT_EQ(snapshot_.ListPods("shop").size(), 2u);
  snapshot_.Publish();
  EXPECT_EQ(Names(snapshot_.ListPods("shop")),
            (std::vector<std::string>{"shop/web-1", "shop/web-2", "shop/web-3"}));
  EXPECT_EQ(snapshot_.GetNode("node-a")->machine.cpu[0].max, 1500u + 10u);
  EXPECT_EQ(OnNode(snapshot_, "node-a"),
            (std::vector<std::string>{"kube-system/dns-1", "shop/web-1", "shop/web-3"}));
  // node-b was not read again: its new pod waits for its own read.
  EXPECT_FALSE(snapshot_.GetPod("shop", "web-4").has_value());
  snapshot_.RefreshNode("node-b");
  snapshot_.Publish();
  EXPECT_TRUE(snapshot_.GetPod("shop", "web-4").has_value());
  EXPECT_EQ(OnNode(snapshot_, "node-b"),
            (std::vector<std::string>{"shop/web-2", "shop/web-4", "zeta/job-1"}));
  const SnapshotStats stats = snapshot_.Stats();
  EXPECT_EQ(stats.refreshes, 1u);
  EXPECT_EQ(stats.node_refreshes, 2u);
  EXPECT_EQ(stats.publishes, 3u);
  EXPECT_EQ(stats.pods, 6u);
}

// Ages on metrics.k8s.io count from the newest sample a snapshot shows, kept with it.
TEST_F(SnapshotSourceTest, ASnapshotKeepsTheNewestUsageOfItsNodes) {
  EXPECT_EQ(snapshot_.Snapshot()->newest_usage, kZeroTime);
  snapshot_.Refresh();
  EXPECT_EQ(snapshot_.Snapshot()->newest_usage, BaseTime());
  live_.PutNode(MakeNode("node-b", {{"zone", "b"}}, BaseTime() + std::chrono::seconds(10), 2000));
  snapshot_.RefreshNode("node-b");
  snapshot_.Publish();
  EXPECT_EQ(snapshot_.Snapshot()->newest_usage, BaseTime() + std::chrono::seconds(10));
  // The node that had it is deleted: the newest is the other one's again.
  snapshot_.RemoveNode("node-b");
  snapshot_.Publish();
  EXPECT_EQ(snapshot_.Snapshot()->newest_usage, BaseTime());
}

TEST_F(SnapshotSourceTest, ANodeTheLiveSourceNoLongerKnowsLeavesWithItsPods) {
  snapshot_.Refresh();
  live_.RemoveNode("node-b");
  live_.RemovePod("shop", "web-2");
  live_.RemovePod("zeta", "job-1");
  snapshot_.RefreshNode("node-b");
  snapshot_.RefreshNode("node-never-seen");
  snapshot_.Publish();
  EXPECT_EQ(Names(snapshot_.ListNodes()), (std::vector<std::string>{"node-a"}));
  EXPECT_EQ(Names(snapshot_.ListPods("")),
            (std::vector<std::string>{"kube-system/dns-1", "shop/web-1"}));
  EXPECT_TRUE(OnNode(snapshot_, "node-b").empty());
}

TEST_F(SnapshotSourceTest, ARemovalDuringANodeReadIsNotUndoneByIt) {
  HookedSource hooked(&live_);
  SnapshotSource snapshot(&hooked);
  snapshot.Refresh();
  hooked.before_pods = [&] { snapshot.RemovePod("shop", "web-2"); };
  snapshot.RefreshNode("node-b");
  hooked.before_pods = [&] { snapshot.RemoveNode("node-a"); };
  snapshot.RefreshNode("node-a");
  hooked.before_pods = nullptr;
  snapshot.Publish();
  EXPECT_FALSE(snapshot.GetPod("shop", "web-2").has_value());
  EXPECT_FALSE(snapshot.GetNode("node-a").has_value());
  // The removed node's pods left with it.
  EXPECT_EQ(Names(snapshot.ListPods("")), (std::vector<std::string>{"zeta/job-1"}));
  // A read that starts after the removals sees the live source as it is.
  snapshot.RefreshNode("node-a");
  snapshot.RefreshNode("node-b");
  snapshot.Publish();
  EXPECT_TRUE(snapshot.GetPod("shop", "web-2").has_value());
  EXPECT_TRUE(snapshot.GetNode("node-a").has_value());
}

TEST_F(SnapshotSourceTest, AnEarlierReadNeverReplacesALaterOne) {
  HookedSource hooked(&live_);
  SnapshotSource snapshot(&hooked);
  // While a full read is in flight (it has read node-a at 1000), node-a is scraped again and
  // read on its own; the full read ends last but must not bring back the older value.
  bool fired = false;
  hooked.before_pods = [&] {
    if (fired) return;
    fired = true;
    live_.PutNode(MakeNode("node-a", {{"zone", "a"}}, BaseTime(), 3000));
    snapshot.RefreshNode("node-a");
  };
  snapshot.Refresh();
  EXPECT_EQ(snapshot.GetNode("node-a")->machine.cpu[0].max, 3000u + 10u);
  EXPECT_EQ(snapshot.GetNode("node-b")->machine.cpu[0].max, 2000u + 10u);
}

using testing::PartsSource;

TEST(SnapshotSourcePartsTest, APodReportedByTwoNodesIsListedOnceFromTheFirstNode) {
  PartsSource live;
  auto pod_on = [](const std::string& node, uint64_t cpu) {
    return std::make_shared<const metrics_api::PodMetrics>(
        MakePod("shop", "moved", node, {{"app", "web"}}, BaseTime(), cpu));
  };
  live.parts["node-a"] = {"node-a", nullptr, {pod_on("node-a", 10)}};
  live.parts["node-b"] = {
      "node-b",
      std::make_shared<const metrics_api::NodeMetrics>(MakeNode("node-b", {}, BaseTime(), 5)),
      {pod_on("node-b", 20)}};
  SnapshotSource snapshot(&live);
  snapshot.RefreshNode("node-b");
  snapshot.RefreshNode("node-a");
  snapshot.Publish();
  EXPECT_EQ(Names(snapshot.ListNodes()), (std::vector<std::string>{"node-b"}));
  ASSERT_EQ(snapshot.ListPods("").size(), 1u);
  EXPECT_EQ(snapshot.GetPod("shop", "moved")->node_name, "node-a");
  EXPECT_EQ(OnNode(snapshot, "node-a"), (std::vector<std::string>{"shop/moved"}));
  EXPECT_TRUE(OnNode(snapshot, "node-b").empty());
  // Once node-a stops reporting it, node-b's view is the one listed.
  live.parts.erase("node-a");
  snapshot.RefreshNode("node-a");
  snapshot.Publish();
  EXPECT_EQ(snapshot.GetPod("shop", "moved")->node_name, "node-b");
  EXPECT_EQ(OnNode(snapshot, "node-b"), (std::vector<std::string>{"shop/moved"}));
}

TEST(SnapshotSourcePartsTest, APodRemovedWithItsNodeNamedLeavesThatNodeAlone) {
  // shop/moved deleted on node-a, while a new pod of that name already runs on node-b.
  PartsSource live;
  auto pod_on = [](const std::string& node, uint64_t cpu) {
    return std::make_shared<const metrics_api::PodMetrics>(
        MakePod("shop", "moved", node, {{"app", "web"}}, BaseTime(), cpu));
  };
  live.parts["node-a"] = {"node-a", nullptr, {pod_on("node-a", 10)}};
  live.parts["node-b"] = {"node-b", nullptr, {pod_on("node-b", 20)}};
  SnapshotSource snapshot(&live);
  snapshot.RefreshNode("node-a");
  snapshot.RefreshNode("node-b");
  snapshot.Publish();
  snapshot.RemovePod("shop", "moved", "node-c");  // not there: nothing leaves
  snapshot.Publish();
  EXPECT_EQ(snapshot.GetPod("shop", "moved")->node_name, "node-a");
  snapshot.RemovePod("shop", "moved", "node-a");
  snapshot.Publish();
  ASSERT_TRUE(snapshot.GetPod("shop", "moved").has_value());
  EXPECT_EQ(snapshot.GetPod("shop", "moved")->node_name, "node-b");
  EXPECT_TRUE(OnNode(snapshot, "node-a").empty());
  // Without a node, every node's pod of that name leaves.
  snapshot.RemovePod("shop", "moved");
  snapshot.Publish();
  EXPECT_FALSE(snapshot.GetPod("shop", "moved").has_value());
}

TEST_F(SnapshotSourceTest, NodeReadsPublishesAndRemovalsRunConcurrently) {
  for (int n = 0; n < 8; ++n) {
    const std::string node = "node-" + std::to_string(n);
    live_.PutNode(MakeNode(node, {}, BaseTime(), 100 + n));
    for (int p = 0; p < 4; ++p) {
      live_.PutPod(MakePod("ns-" + std::to_string(p),
                           "pod-" + std::to_string(n) + "-" + std::to_string(p), node, {},
                           BaseTime(), 10));
    }
  }
  snapshot_.Refresh();
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {  // publisher and reader
    while (!stop.load()) {
      snapshot_.Publish();
      std::shared_ptr<const MetricsSnapshot> cut = snapshot_.Snapshot();
      if (PodsByNode(*cut) != cut->pods.size()) ++bad;
    }
  });
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {  // scrape workers
      for (int i = 0; i < 300; ++i)
        snapshot_.RefreshNode("node-" + std::to_string(2 * (i % 4) + w));
    });
  }
  for (int i = 0; i < 100; ++i) snapshot_.RemovePod("ns-1", "pod-" + std::to_string(i % 8) + "-1");
  for (int w = 1; w < 3; ++w) threads[static_cast<size_t>(w)].join();
  stop.store(true);
  threads[0].join();
  EXPECT_EQ(bad.load(), 0);
  // The live source still has the removed pods: the last reads bring them back, every one.
  for (int n = 0; n < 8; ++n) snapshot_.RefreshNode("node-" + std::to_string(n));
  snapshot_.Publish();
  EXPECT_EQ(snapshot_.ListPods("ns-1").size(), 8u);
}

}  // namespace
}  // namespace kubestat::aggregator

namespace kubestat::aggregator {
namespace {

// Random node reads, removals and publications over parts whose pods come and go, change,
// and are now and then reported by two nodes at once: every published snapshot lists what
// a whole assembly of the parts would (each pod once, from the first node by name, sorted,
// indexed by node), whether it was made from the previous one or anew.
TEST(SnapshotSourceAssemblyTest, EveryPublicationListsWhatTheWholePartsGive) {
  PartsSource live;
  SnapshotSource snapshot(&live);
  std::mt19937_64 rng(26112026);
  const std::vector<std::string> namespaces = {"default", "kube-system", "shop"};
  auto node_name = [](size_t n) { return "node-" + std::to_string(10 + n); };
  auto new_pod = [&](const std::string& node) {
    return std::make_shared<const metrics_api::PodMetrics>(
        MakePod(namespaces[rng() % namespaces.size()], "pod-" + std::to_string(rng() % 400), node,
                {{"app", "web"}}, BaseTime(), rng() % 1000));
  };
  auto sort_part = [](NodeObjects& part) {
    std::sort(part.pods.begin(), part.pods.end(), [](const auto& a, const auto& b) {
      return std::tie(a->namespace_name, a->name) < std::tie(b->namespace_name, b->name);
    });
    part.pods.erase(std::unique(part.pods.begin(), part.pods.end(),
                                [](const auto& a, const auto& b) {
                                  return a->namespace_name == b->namespace_name &&
                                         a->name == b->name;
                                }),
                    part.pods.end());
  };
  for (size_t n = 0; n < 12; ++n) {
    NodeObjects& part = live.parts[node_name(n)];
    part.node_name = node_name(n);
    part.node =
        std::make_shared<const metrics_api::NodeMetrics>(MakeNode(node_name(n), {}, BaseTime(), n));
    for (int p = 0; p < 8; ++p) part.pods.push_back(new_pod(node_name(n)));
    sort_part(part);
    snapshot.RefreshNode(node_name(n));
  }
  snapshot.Publish();
  for (int step = 0; step < 400; ++step) {
    const size_t changes = 1 + rng() % 3;
    for (size_t c = 0; c < changes; ++c) {
      const std::string node = node_name(rng() % 12);
      const uint64_t roll = rng() % 10;
      if (roll == 0) {
        live.parts.erase(node);  // the node is gone
      } else {
        NodeObjects& part = live.parts[node];
        part.node_name = node;
        if (!part.node) {
          part.node =
              std::make_shared<const metrics_api::NodeMetrics>(MakeNode(node, {}, BaseTime(), 1));
        }
        if (roll < 4) {
          part.pods.push_back(new_pod(node));  // a pod arrives (maybe a name another has)
        } else if (roll < 6 && !part.pods.empty()) {
          part.pods.erase(part.pods.begin() + static_cast<ptrdiff_t>(rng() % part.pods.size()));
        } else if (!part.pods.empty()) {
          // Scraped again: new views of the same pods.
          for (auto& pod : part.pods) {
            pod = std::make_shared<const metrics_api::PodMetrics>(MakePod(
                pod->namespace_name, pod->name, node, {{"app", "web"}}, BaseTime(), rng() % 1000));
          }
        }
        sort_part(part);
      }
      snapshot.RefreshNode(node);
    }
    if (rng() % 8 == 0) {
      // A pod deleted in the kube API on the node that ran it.
      auto it = std::next(live.parts.begin(),
                          static_cast<ptrdiff_t>(rng() % std::max<size_t>(1, live.parts.size())));
      if (it != live.parts.end() && !it->second.pods.empty()) {
        const std::shared_ptr<const metrics_api::PodMetrics> pod = it->second.pods.front();
        it->second.pods.erase(it->second.pods.begin());
        snapshot.RemovePod(pod->namespace_name, pod->name, it->first);
      }
    }
    snapshot.Publish();

    // What a whole assembly gives.
    std::map<std::pair<std::string, std::string>, std::shared_ptr<const metrics_api::PodMetrics>>
        expected;
    std::vector<std::string> nodes;
    for (const auto& [name, part] : live.parts) {
      nodes.push_back(name);
      for (const auto& pod : part.pods) expected.try_emplace({pod->namespace_name, pod->name}, pod);
    }
    const std::shared_ptr<const MetricsSnapshot> cut = snapshot.Snapshot();
    std::vector<std::string> served_nodes;
    for (const auto& node : cut->nodes) served_nodes.push_back(node->name);
    ASSERT_EQ(served_nodes, nodes) << "step " << step;
    ASSERT_EQ(cut->pods.size(), expected.size()) << "step " << step;
    size_t i = 0;
    for (const auto& [key, pod] : expected) {
      ASSERT_EQ(cut->pods[i].get(), pod.get())
          << "step " << step << ": " << key.first << "/" << key.second;
      ++i;
    }
    size_t indexed = 0;
    for (const auto& part : cut->parts) {
      const std::string& node = part->node_name;
      const std::vector<metrics_api::PodRef> pods = cut->PodsOfNode(node);
      indexed += pods.size();
      for (const auto& pod : pods) ASSERT_EQ(pod->node_name, node);
      ASSERT_TRUE(std::is_sorted(pods.begin(), pods.end(), [](const auto& a, const auto& b) {
        return std::tie(a->namespace_name, a->name) < std::tie(b->namespace_name, b->name);
      }));
    }
    ASSERT_EQ(indexed, cut->pods.size()) << "step " << step;
  }
  const SnapshotStats stats = snapshot.Stats();
  // Most publications were made from the previous one; those after a duplicate, anew.
  EXPECT_GT(stats.incremental_publishes, stats.publishes / 2);
  EXPECT_LT(stats.incremental_publishes, stats.publishes);
  // Nodes read again with the same pods took their places without a sort.
  EXPECT_GT(stats.parts_in_place, 50u);
}

}  // namespace
}  // namespace kubestat::aggregator
