// WatchClient against a fake kubestat.v1.Aggregator over loopback gRPC and a fake metrics
// API server: events become queue writes, SNAPSHOT_END resyncs (deleting what the API
// server holds and the snapshot lacks, through every list page), a stream that ends is
// watched again with a fresh snapshot and resync, the bearer token rides each call, and
// readiness waits for the first snapshot to be settled.
#include "kubestat/bridge/watch_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fake_aggregator.h"
#include "fake_apiserver.h"
#include "kubestat/metrics_api/write_batch.h"
#include "kubestat/testing/metrics_objects.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"
#include "push_items.h"

namespace kubestat::bridge {
namespace {

using ::kubestat::bridge::testing::Describe;
using ::kubestat::bridge::testing::Event;
using ::kubestat::bridge::testing::FakeAggregator;
using ::kubestat::bridge::testing::FakeApiServer;
using ::kubestat::bridge::testing::kAnyBytes;
using ::kubestat::bridge::testing::NodeKey;
using ::kubestat::bridge::testing::PodKey;
using ::kubestat::bridge::testing::PushedNode;
using ::kubestat::bridge::testing::RecordedRequest;
using ::kubestat::bridge::testing::SnapshotEnd;
using ::kubestat::bridge::testing::WatchScript;
using ::kubestat::testing::BaseTime;
using ::kubestat::testing::MakeNode;
using ::kubestat::testing::MakePod;
using ::kubestat::testing::PollUntil;
using metrics_api::Resource;
using metrics_api::WriteItem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

constexpr std::chrono::seconds kReady(30);
class WatchClientTest : public ::testing::Test {
 protected:
  void Start(WatchClientOptions options = {}) {
    options.address = aggregator_.Address();
    options.list_page_size = 1;  // every list takes several pages
    client_ = apiserver_.NewClient(clock_);
    absl::StatusOr<std::unique_ptr<WatchClient>> watch =
        WatchClient::Create(options, queue_, *client_, clock_, nullptr, [] { return 1.0; });
    ASSERT_TRUE(watch.ok()) << watch.status();
    watch_ = *std::move(watch);
    watch_->Start();
  }

  FakeClock clock_;
  FakeAggregator aggregator_;
  FakeApiServer apiserver_;
  PushQueue queue_;
  std::unique_ptr<http::Client> client_;
  std::unique_ptr<WatchClient> watch_;
};

TEST_F(WatchClientTest, ResyncDeletesWhatTheApiServerHoldsAndTheSnapshotLacks) {
  apiserver_.Hold(NodeKey("node-a"));
  apiserver_.Hold(NodeKey("node-old"));
  apiserver_.Hold(NodeKey("node-older"));
  apiserver_.Hold(PodKey("shop", "web-1"));
  apiserver_.Hold(PodKey("shop", "gone"));
  aggregator_.AddScript(
      {{Event(v1::WatchEvent::ADDED, MakeNode("node-a", {}, BaseTime(), 1000)),
        Event(v1::WatchEvent::ADDED, MakePod("shop", "web-1", "node-a", {}, BaseTime(), 100)),
        SnapshotEnd()}});
  Start();
  ASSERT_TRUE(PollUntil([&] { return watch_->Stats().resyncs == 1; }, kReady));
  EXPECT_EQ(watch_->Stats().resync_deletes, 3u);
  EXPECT_THAT(Describe(queue_.TryTake(100, kAnyBytes)),
              ElementsAre("put node node-a", "put pod shop/web-1", "delete node node-old",
                          "delete node node-older", "delete pod shop/gone"));
  // Paged with limit=1: node-a, node-old, node-older; then web-1... through continue tokens.
  std::vector<std::string> lists;
  for (const RecordedRequest& r : apiserver_.Requests()) lists.push_back(r.path + "?" + r.query);
  EXPECT_THAT(lists, ElementsAre("/apis/metrics/v1alpha1/nodes?limit=1",
                                 "/apis/metrics/v1alpha1/nodes?limit=1&continue=1",
                                 "/apis/metrics/v1alpha1/nodes?limit=1&continue=2",
                                 "/apis/metrics/v1alpha1/pods?limit=1",
                                 "/apis/metrics/v1alpha1/pods?limit=1&continue=1"));
}

TEST_F(WatchClientTest, ChangesAfterTheSnapshotBecomeWrites) {
  aggregator_.AddScript(
      {{Event(v1::WatchEvent::ADDED, MakeNode("node-a", {}, BaseTime(), 1000)),
        Event(v1::WatchEvent::ADDED, MakePod("shop", "web-1", "node-a", {}, BaseTime(), 100)),
        SnapshotEnd(),
        Event(v1::WatchEvent::MODIFIED,
              MakeNode("node-a", {}, BaseTime() + std::chrono::seconds(10), 2000)),
        Event(v1::WatchEvent::DELETED, MakePod("shop", "web-1", "", {}, BaseTime(), 0)),
        Event(v1::WatchEvent::ADDED, MakePod("shop", "web-2", "node-a", {}, BaseTime(), 200))}});
  Start();
  ASSERT_TRUE(PollUntil([&] { return watch_->Stats().events == 5 && watch_->Stats().resyncs == 1; },
                        kReady));
  std::vector<PushItem> items = queue_.TryTake(100, kAnyBytes);
  ASSERT_THAT(Describe(items),
              ElementsAre("put node node-a", "delete pod shop/web-1", "put pod shop/web-2"));
  EXPECT_EQ(PushedNode(items[0]).machine.cpu[0].min, 2000u);  // the MODIFIED object
  EXPECT_EQ(items[0].newest_endtime, BaseTime() + std::chrono::seconds(10));
  EXPECT_EQ(watch_->Stats().resync_deletes, 0u);
}

TEST_F(WatchClientTest, EndedStreamIsWatchedAgainAndResyncedAgain) {
  ::kubestat::testing::TempDir dir;
  const std::string token_file = dir.Write("token", "s3cret\n");
  aggregator_.AddScript(
      {{Event(v1::WatchEvent::ADDED, MakeNode("node-a", {}, BaseTime(), 1000)), SnapshotEnd()},
       /*end_stream=*/true});
  aggregator_.AddScript(
      {{Event(v1::WatchEvent::ADDED, MakeNode("node-b", {}, BaseTime(), 1000)), SnapshotEnd()}});
  WatchClientOptions options;
  options.token_file = token_file;
  options.reconnect_base = std::chrono::seconds(2);
  options.reconnect_max = std::chrono::seconds(60);
  Start(options);
  ASSERT_TRUE(PollUntil([&] { return watch_->Stats().resyncs == 1; }, kReady));
  // What the first stream's pushes left on the API server.
  queue_.Complete(queue_.TryTake(100, kAnyBytes));
  apiserver_.Hold(NodeKey("node-a"));
  // The reconnect waits the jittered 2s (random 1.0) on the fake clock.
  ASSERT_TRUE(PollUntil([&] { return aggregator_.watch_calls() == 1; }, kReady));
  ASSERT_TRUE(PollUntil(
      [&] {
        clock_.Advance(std::chrono::milliseconds(500));
        return watch_->Stats().resyncs == 2;
      },
      kReady));
  EXPECT_EQ(aggregator_.watch_calls(), 2);
  EXPECT_EQ(watch_->Stats().streams, 2u);
  EXPECT_EQ(watch_->Stats().snapshots, 2u);
  EXPECT_THAT(aggregator_.authorizations(), ElementsAre("Bearer s3cret", "Bearer s3cret"));
  // The second snapshot has only node-b: node-a, pushed by the first stream, goes.
  EXPECT_THAT(Describe(queue_.TryTake(100, kAnyBytes)),
              ElementsAre("put node node-b", "delete node node-a"));
}

TEST_F(WatchClientTest, FailedResyncListIsRetried) {
  // Shared with the answer, which the fake server may still call after the test body.
  auto lists = std::make_shared<std::atomic<int>>(0);
  apiserver_.SetAnswer([lists](const RecordedRequest&) -> std::optional<http::Response> {
    if ((*lists)++ > 0) return std::nullopt;
    http::Response response;
    response.code = 503;
    response.body = ApiError::ServiceUnavailable("etcd is down").ToJson();
    return response;
  });
  apiserver_.Hold(NodeKey("node-old"));
  aggregator_.AddScript(
      {{Event(v1::WatchEvent::ADDED, MakeNode("node-a", {}, BaseTime(), 1000)), SnapshotEnd()}});
  Start();
  ASSERT_TRUE(PollUntil([&] { return watch_->Stats().resync_failures == 1; }, kReady));
  EXPECT_EQ(watch_->Stats().resyncs, 0u);
  ASSERT_TRUE(PollUntil(
      [&] {
        clock_.Advance(std::chrono::milliseconds(500));
        return watch_->Stats().resyncs == 1;
      },
      kReady));
  EXPECT_THAT(Describe(queue_.TryTake(100, kAnyBytes)),
              ElementsAre("put node node-a", "delete node node-old"));
}

TEST_F(WatchClientTest, SnapshotPushedOnceItsWritesAndResyncDeletesAreSettled) {
  apiserver_.Hold(NodeKey("node-old"));
  aggregator_.AddScript(
      {{Event(v1::WatchEvent::ADDED, MakeNode("node-a", {}, BaseTime(), 1000)), SnapshotEnd()}});
  Start();
  ASSERT_TRUE(PollUntil([&] { return watch_->Stats().resyncs == 1; }, kReady));
  EXPECT_FALSE(watch_->snapshot_pushed());
  std::vector<PushItem> put = queue_.TryTake(1, kAnyBytes);
  queue_.Complete(put);
  EXPECT_FALSE(watch_->snapshot_pushed());  // the resync's delete is still due
  queue_.Complete(queue_.TryTake(1, kAnyBytes));
  EXPECT_TRUE(watch_->snapshot_pushed());
}

TEST(WatchClientOptionsTest, PlainTextOnlyToLoopback) {
  WatchClientOptions options;
  EXPECT_TRUE(options.Validate().ok());
  options.address = "aggregator.kube-system:8081";
  EXPECT_THAT(std::string(options.Validate().message()), HasSubstr("not a loopback address"));
  options.ca_file = "/etc/ca.crt";
  EXPECT_TRUE(options.Validate().ok());
  options.address = "[::1]:8081";
  options.ca_file.clear();
  EXPECT_TRUE(options.Validate().ok());
}

TEST(WatchClientOptionsTest, BackoffMustBeOrdered) {
  WatchClientOptions options;
  options.reconnect_max = std::chrono::milliseconds(1);
  EXPECT_THAT(std::string(options.Validate().message()), HasSubstr("reconnect_max"));
}

}  // namespace
}  // namespace kubestat::bridge
