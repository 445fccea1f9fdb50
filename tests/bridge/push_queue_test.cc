// PushQueue: the newest write per object, batches within an item count and a byte budget,
// in-flight keys, returns after a retryable failure, and the settled-through mark.
#include "kubestat/bridge/push_queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <string>
#include <vector>

#include "kubestat/testing/metrics_objects.h"
#include "push_items.h"

namespace kubestat::bridge {
namespace {

using ::kubestat::bridge::testing::Describe;
using ::kubestat::bridge::testing::kAnyBytes;
using ::kubestat::bridge::testing::NodeKey;
using ::kubestat::bridge::testing::PodKey;
using ::kubestat::bridge::testing::PushedNode;
using ::kubestat::testing::BaseTime;
using ::kubestat::testing::MakeNode;
using ::kubestat::testing::MakePod;
using metrics_api::Resource;
using metrics_api::WriteItem;
using ::testing::ElementsAre;

double GaugeValue(prometheus::Registry& registry, const std::string& name) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name == name && !family.metric.empty()) return family.metric[0].gauge.value;
  }
  return -1;
}

TEST(PushQueueTest, NewerPutReplacesPendingPutOfTheSameKey) {
  PushQueue queue;
  queue.Put(MakeNode("node-1", {}, BaseTime(), 100));
  queue.Put(MakeNode("node-2", {}, BaseTime(), 200));
  queue.Put(MakeNode("node-1", {}, BaseTime() + std::chrono::seconds(10), 300));
  EXPECT_EQ(queue.depth(), 2u);
  std::vector<PushItem> batch = queue.TryTake(10, kAnyBytes);
  // node-1 keeps its place (first) and carries the newest object.
  ASSERT_THAT(Describe(batch), ElementsAre("put node node-1", "put node node-2"));
  EXPECT_EQ(PushedNode(batch[0]).machine.cpu[0].min, 300u);
  EXPECT_EQ(batch[0].newest_endtime, BaseTime() + std::chrono::seconds(10));
  EXPECT_EQ(batch[0].sequence, 3u);
}

TEST(PushQueueTest, DeleteReplacesPutAndPutReplacesDelete) {
  PushQueue queue;
  queue.Put(MakePod("shop", "web-1", "node-1", {}, BaseTime(), 100));
  queue.Delete(PodKey("shop", "web-1"));
  queue.Delete(NodeKey("node-9"));
  queue.Put(MakeNode("node-9", {}, BaseTime(), 100));
  EXPECT_EQ(queue.depth(), 2u);
  EXPECT_THAT(Describe(queue.TryTake(10, kAnyBytes)),
              ElementsAre("delete pod shop/web-1", "put node node-9"));
  EXPECT_EQ(queue.depth(), 0u);
}

TEST(PushQueueTest, ManyRoundsOfOneObjectCostOneItem) {
  PushQueue queue;
  for (int round = 0; round < 1000; ++round) {
    queue.Put(MakePod("shop", "web-1", "node-1", {}, BaseTime(), 100 + round));
  }
  EXPECT_EQ(queue.depth(), 1u);
  EXPECT_EQ(queue.last_sequence(), 1000u);
}

TEST(PushQueueTest, BatchStopsAtTheItemCountAndTheByteBudget) {
  PushQueue queue;
  for (int i = 0; i < 5; ++i) queue.Put(MakeNode("node-" + std::to_string(i), {}, BaseTime(), 100));
  // Same shape, same size: each item's size is what RenderWriteItem writes.
  WriteItem first;
  first.node = MakeNode("node-0", {}, BaseTime(), 100);
  const size_t item_bytes = metrics_api::RenderWriteItem(first).size();
  const std::vector<PushItem> one = queue.TryTake(1, kAnyBytes);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].rendered, metrics_api::RenderWriteItem(first));
  EXPECT_EQ(one[0].bytes, item_bytes);
  EXPECT_EQ(queue.depth(), 4u);
  std::vector<PushItem> two = queue.TryTake(10, 2 * item_bytes + item_bytes / 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].bytes, item_bytes);
  EXPECT_EQ(queue.TryTake(1, kAnyBytes).size(), 1u);
  // One item over the budget still goes, alone.
  EXPECT_EQ(queue.TryTake(10, 1).size(), 1u);
  EXPECT_EQ(queue.depth(), 0u);
}

TEST(PushQueueTest, InFlightKeyIsNotTakenAgainUntilSettled) {
  PushQueue queue;
  queue.Put(MakeNode("node-1", {}, BaseTime(), 100));
  std::vector<PushItem> first = queue.TryTake(10, kAnyBytes);
  ASSERT_EQ(first.size(), 1u);
  queue.Put(MakeNode("node-1", {}, BaseTime(), 200));
  EXPECT_TRUE(queue.TryTake(10, kAnyBytes).empty());
  queue.Complete(first);
  std::vector<PushItem> second = queue.TryTake(10, kAnyBytes);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(PushedNode(second[0]).machine.cpu[0].min, 200u);
}

TEST(PushQueueTest, ReturnedItemGoesBackFirstUnlessANewerOneArrived) {
  PushQueue queue;
  queue.Put(MakeNode("node-1", {}, BaseTime(), 100));
  queue.Put(MakeNode("node-2", {}, BaseTime(), 100));
  std::vector<PushItem> batch = queue.TryTake(2, kAnyBytes);
  queue.Put(MakeNode("node-3", {}, BaseTime(), 100));
  queue.Put(MakeNode("node-2", {}, BaseTime(), 222));
  queue.Return(std::move(batch));
  EXPECT_EQ(queue.in_flight(), 0u);
  std::vector<PushItem> again = queue.TryTake(10, kAnyBytes);
  // node-1 back at the front; the failed node-2 dropped for its newer write.
  ASSERT_THAT(Describe(again),
              ElementsAre("put node node-1", "put node node-3", "put node node-2"));
  EXPECT_EQ(PushedNode(again[2]).machine.cpu[0].min, 222u);
}

TEST(PushQueueTest, CompletedThroughWaitsForEveryWriteUpToTheMark) {
  PushQueue queue;
  queue.Put(MakeNode("node-1", {}, BaseTime(), 100));  // 1
  queue.Put(MakeNode("node-2", {}, BaseTime(), 100));  // 2
  EXPECT_FALSE(queue.CompletedThrough(2));
  std::vector<PushItem> batch = queue.TryTake(1, kAnyBytes);  // node-1
  queue.Put(MakeNode("node-1", {}, BaseTime(), 200));         // 3, waits behind the flight
  queue.Complete(batch);
  EXPECT_TRUE(queue.CompletedThrough(1));
  EXPECT_FALSE(queue.CompletedThrough(2));
  std::vector<PushItem> rest = queue.TryTake(10, kAnyBytes);  // node-2, node-1
  ASSERT_EQ(rest.size(), 2u);
  queue.Return(rest);
  EXPECT_FALSE(queue.CompletedThrough(2));
  rest = queue.TryTake(10, kAnyBytes);
  queue.Complete(rest);
  EXPECT_TRUE(queue.CompletedThrough(3));
}

TEST(PushQueueTest, ReplacedWriteIsSettledOnlyWithItsReplacement) {
  PushQueue queue;
  queue.Put(MakeNode("node-1", {}, BaseTime(), 100));  // 1
  std::vector<PushItem> first = queue.TryTake(1, kAnyBytes);
  queue.Put(MakeNode("node-1", {}, BaseTime(), 200));  // 2
  // The push of 1 fails; 2 now stands for it.
  queue.Return(std::move(first));
  EXPECT_FALSE(queue.CompletedThrough(1));
  queue.Complete(queue.TryTake(1, kAnyBytes));
  EXPECT_TRUE(queue.CompletedThrough(2));
}

TEST(PushQueueTest, DepthGaugeCountsWaitingItems) {
  prometheus::Registry registry;
  PushQueue queue(&registry);
  queue.Put(MakeNode("node-1", {}, BaseTime(), 100));
  queue.Put(MakeNode("node-2", {}, BaseTime(), 100));
  queue.Put(MakeNode("node-1", {}, BaseTime(), 100));
  EXPECT_EQ(GaugeValue(registry, "kubestat_bridge_queue_depth"), 2);
  std::vector<PushItem> batch = queue.TryTake(1, kAnyBytes);
  EXPECT_EQ(GaugeValue(registry, "kubestat_bridge_queue_depth"), 1);
  EXPECT_EQ(GaugeValue(registry, "kubestat_bridge_queue_in_flight"), 1);
}

TEST(PushQueueTest, TakeReturnsEmptyWhenStopped) {
  PushQueue queue;
  std::stop_source stop;
  stop.request_stop();
  EXPECT_TRUE(queue.Take(10, kAnyBytes, stop.get_token()).empty());
}

}  // namespace
}  // namespace kubestat::bridge
