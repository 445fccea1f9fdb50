// Pusher against a real HTTP server on loopback: the bulk body, put mode's paths, retries
// paced by Retry-After or by jittered backoff on a FakeClock, refusals never retried and
// counted, and a refused bulk batch split down to its bad object.
#include "kubestat/bridge/pusher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fake_apiserver.h"
#include "kubestat/apimachinery/api_error.h"
#include "kubestat/core/log.h"
#include "kubestat/http/client.h"
#include "kubestat/metrics_api/parse.h"
#include "kubestat/metrics_api/write_batch.h"
#include "kubestat/testing/captured_log.h"
#include "kubestat/testing/metrics_objects.h"
#include "kubestat/testing/poll.h"

namespace kubestat::bridge {
namespace {

using ::kubestat::bridge::testing::FakeApiServer;
using ::kubestat::bridge::testing::RecordedRequest;
using ::kubestat::testing::BaseTime;
using ::kubestat::testing::MakeNode;
using ::kubestat::testing::MakePod;
using ::kubestat::testing::PollUntil;
using metrics_api::Resource;
using metrics_api::WriteItem;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr std::chrono::seconds kReady(30);

http::Response Answer(int code, std::string body = "{}") {
  http::Response response;
  response.code = code;
  response.body = std::move(body);
  return response;
}

class PusherTest : public ::testing::Test {
 protected:
  void Start(PusherOptions options, double random = 0.5) {
    client_ = server_.NewClient(clock_);
    pusher_ = std::make_unique<Pusher>(options, queue_, *client_, clock_, nullptr,
                                       [random] { return random; });
    pusher_->Start();
  }
  uint64_t Pushed(const std::string& code) {
    PusherStats stats = pusher_->Stats();
    return stats.pushed.contains(code) ? stats.pushed.at(code) : 0;
  }
  uint64_t Failed(const std::string& code) {
    PusherStats stats = pusher_->Stats();
    return stats.failed.contains(code) ? stats.failed.at(code) : 0;
  }
  uint64_t Retries(const std::string& code) {
    PusherStats stats = pusher_->Stats();
    return stats.retries.contains(code) ? stats.retries.at(code) : 0;
  }

  FakeClock clock_;
  FakeApiServer server_;
  PushQueue queue_;
  std::unique_ptr<http::Client> client_;
  std::unique_ptr<Pusher> pusher_;
};

TEST_F(PusherTest, BulkBodyParsesBackWithEveryItem) {
  queue_.Put(MakeNode("node-1", {{"zone", "a"}}, BaseTime(), 1000));
  queue_.Put(MakePod("shop", "web-1", "node-1", {{"app", "web"}}, BaseTime(), 100));
  queue_.Delete({Resource::kPods, "shop", "gone"});
  PusherOptions options;
  options.max_in_flight = 1;
  Start(options);
  ASSERT_TRUE(PollUntil([&] { return Pushed("200") == 3; }, kReady));
  std::vector<RecordedRequest> requests = server_.Requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].path, metrics_api::kWriteBatchPath);
  absl::StatusOr<metrics_api::WriteBatch> batch = metrics_api::ParseWriteBatch(requests[0].body);
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->items.size(), 3u);
  EXPECT_EQ(batch->items[0].op, WriteItem::Op::kPut);
  EXPECT_EQ(batch->items[0].resource, Resource::kNodes);
  EXPECT_EQ(batch->items[0].node.name, "node-1");
  EXPECT_EQ(batch->items[0].node.labels.at("zone"), "a");
  EXPECT_EQ(batch->items[0].node.machine.cpu.size(), 4u);
  EXPECT_EQ(batch->items[0].node.machine.cpu[0].mean, 1000u);
  EXPECT_EQ(batch->items[1].op, WriteItem::Op::kPut);
  EXPECT_EQ(batch->items[1].pod.namespace_name, "shop");
  EXPECT_EQ(batch->items[1].pod.name, "web-1");
  EXPECT_EQ(batch->items[1].pod.containers.size(), 1u);
  EXPECT_EQ(batch->items[2].op, WriteItem::Op::kDelete);
  EXPECT_EQ(batch->items[2].resource, Resource::kPods);
  EXPECT_EQ(batch->items[2].namespace_name, "shop");
  EXPECT_EQ(batch->items[2].name, "gone");
  EXPECT_TRUE(queue_.CompletedThrough(3));
}

TEST_F(PusherTest, BulkBatchesKeepToTheObjectCount) {
  for (int i = 0; i < 5; ++i) queue_.Put(MakeNode("node-" + std::to_string(i), {}, BaseTime(), 10));
  PusherOptions options;
  options.max_in_flight = 1;
  options.max_batch_objects = 2;
  Start(options);
  ASSERT_TRUE(PollUntil([&] { return Pushed("200") == 5; }, kReady));
  std::vector<size_t> sizes;
  for (const RecordedRequest& r : server_.Requests()) {
    sizes.push_back(metrics_api::ParseWriteBatch(r.body)->items.size());
  }
  EXPECT_THAT(sizes, ElementsAre(2, 2, 1));
}

TEST_F(PusherTest, PutModeWritesEachObjectAtItsPath) {
  server_.SetAnswer([](const RecordedRequest& r) -> std::optional<http::Response> {
    if (r.method == "DELETE") return Answer(404);
    return Answer(200);
  });
  queue_.Put(MakeNode("node-1", {}, BaseTime(), 1000));
  queue_.Put(MakePod("shop", "web-1", "node-1", {}, BaseTime(), 100));
  queue_.Delete({Resource::kPods, "shop", "gone"});
  queue_.Delete({Resource::kNodes, "", "node-9"});
  PusherOptions options;
  options.mode = PushMode::kPut;
  options.max_in_flight = 1;
  Start(options);
  ASSERT_TRUE(PollUntil([&] { return Pushed("200") + Pushed("404") == 4; }, kReady));
  EXPECT_EQ(Pushed("404"), 2u);  // a DELETE of an absent object is done
  std::vector<std::string> lines;
  for (const RecordedRequest& r : server_.Requests()) lines.push_back(r.method + " " + r.path);
  EXPECT_THAT(lines, ElementsAre("PUT /apis/metrics/v1alpha1/nodes/node-1",
                                 "PUT /apis/metrics/v1alpha1/namespaces/shop/pods/web-1",
                                 "DELETE /apis/metrics/v1alpha1/namespaces/shop/pods/gone",
                                 "DELETE /apis/metrics/v1alpha1/nodes/node-9"));
  std::vector<RecordedRequest> requests = server_.Requests();
  absl::StatusOr<metrics_api::Parsed<metrics_api::PodMetrics>> pod =
      metrics_api::ParsePodMetrics(requests[1].body);
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->gv, metrics_api::GroupVersion::kV1alpha1);
  EXPECT_EQ(pod->object.name, "web-1");
  EXPECT_EQ(pod->object.pod.cpu[0].mean, 100u);
  EXPECT_THAT(requests[2].body, IsEmpty());
}

TEST_F(PusherTest, RetryAfterOf429IsHonoured) {
  // Shared with the answer, which the fake server may still call after the test body.
  auto calls = std::make_shared<std::atomic<int>>(0);
  server_.SetAnswer([calls](const RecordedRequest&) -> std::optional<http::Response> {
    if ((*calls)++ > 0) return std::nullopt;
    http::Response response = Answer(429, ApiError::TooManyRequests("slow down", 7).ToJson());
    response.headers.emplace_back("Retry-After", "7");
    return response;
  });
  queue_.Put(MakeNode("node-1", {}, BaseTime(), 1000));
  PusherOptions options;
  options.retry_base = seconds(1);
  options.retry_max = seconds(60);
  Start(options, /*random=*/0.5);
  ASSERT_TRUE(PollUntil([&] { return Retries("429") == 1 && queue_.depth() == 1; }, kReady));
  const Timestamp failed_at = clock_.MonotonicNow();
  // The server's 7s, not the jittered 0.5 x 1s.
  EXPECT_EQ(pusher_->Stats().retry_not_before, failed_at + seconds(7));
  EXPECT_EQ(server_.RequestCount(), 1u);
  clock_.Advance(seconds(7));
  ASSERT_TRUE(PollUntil([&] { return Pushed("200") == 1; }, kReady));
  EXPECT_EQ(server_.RequestCount(), 2u);
  EXPECT_EQ(pusher_->Stats().consecutive_failures, 0u);
}

TEST_F(PusherTest, FailuresWithoutRetryAfterBackOffWithFullJitter) {
  // Shared with the answer, which the fake server may still call after the test body.
  auto calls = std::make_shared<std::atomic<int>>(0);
  server_.SetAnswer([calls](const RecordedRequest&) -> std::optional<http::Response> {
    if ((*calls)++ < 2) return Answer(503, ApiError::ServiceUnavailable("starting").ToJson());
    return std::nullopt;
  });
  queue_.Put(MakeNode("node-1", {}, BaseTime(), 1000));
  PusherOptions options;
  options.max_in_flight = 2;
  options.retry_base = seconds(4);
  options.retry_max = seconds(60);
  Start(options, /*random=*/0.25);
  ASSERT_TRUE(PollUntil([&] { return Retries("503") == 1; }, kReady));
  // First failure: 0.25 x 4s.
  EXPECT_EQ(pusher_->Stats().retry_not_before, clock_.MonotonicNow() + seconds(1));
  clock_.Advance(seconds(1));
  ASSERT_TRUE(PollUntil([&] { return Retries("503") == 2; }, kReady));
  // Second in a row: 0.25 x 8s.
  EXPECT_EQ(pusher_->Stats().retry_not_before, clock_.MonotonicNow() + seconds(2));
  EXPECT_EQ(server_.RequestCount(), 2u);
  clock_.Advance(seconds(2));
  ASSERT_TRUE(PollUntil([&] { return Pushed("200") == 1; }, kReady));
  EXPECT_EQ(server_.RequestCount(), 3u);
}

TEST_F(PusherTest, UnreachableServerIsRetried) {
  // A server that stopped: connections are refused.
  FakeClock clock;
  http::ClientOptions client_options;
  {
    FakeApiServer gone;
    client_options.base_url = gone.BaseUrl();
  }
  client_options.timeout = std::chrono::hours(1);
  std::unique_ptr<http::Client> client = *http::Client::Create(client_options, clock);
  PushQueue queue;
  queue.Put(MakeNode("node-1", {}, BaseTime(), 1000));
  Pusher pusher(PusherOptions(), queue, *client, clock, nullptr, [] { return 0.5; });
  pusher.Start();
  ASSERT_TRUE(PollUntil([&] { return pusher.Stats().retries.contains("connect"); }, kReady));
  pusher.Stop();
  EXPECT_EQ(queue.depth(), 1u);
  EXPECT_TRUE(pusher.Stats().pushed.empty());
}

TEST_F(PusherTest, RefusalsAreNotRetriedAndAreCountedByCode) {
  ::kubestat::testing::CapturedLog log;
  server_.SetAnswer([](const RecordedRequest& r) -> std::optional<http::Response> {
    if (r.path.ends_with("/bad")) {
      return Answer(422, ApiError::Invalid("metrics", "PodMetrics", "bad",
                                           {{"FieldValueInvalid", "must be canonical", "pod"}})
                             .ToJson());
    }
    if (r.path.ends_with("/secret")) {
      return Answer(403, ApiError::Forbidden("metrics", "pods", "secret", "no").ToJson());
    }
    return Answer(200);
  });
  queue_.Put(MakePod("shop", "bad", "node-1", {}, BaseTime(), 100));
  queue_.Put(MakePod("shop", "secret", "node-1", {}, BaseTime(), 100));
  queue_.Put(MakePod("shop", "good", "node-1", {}, BaseTime(), 100));
  PusherOptions options;
  options.mode = PushMode::kPut;
  options.max_in_flight = 1;
  Start(options);
  ASSERT_TRUE(
      PollUntil([&] { return Pushed("200") == 1 && Failed("422") + Failed("403") == 2; }, kReady));
  // Once more for the bad object: counted again, logged once.
  queue_.Put(MakePod("shop", "bad", "node-1", {}, BaseTime(), 101));
  ASSERT_TRUE(PollUntil([&] { return Failed("422") == 2; }, kReady));
  EXPECT_EQ(Failed("403"), 1u);
  EXPECT_TRUE(pusher_->Stats().retries.empty());
  EXPECT_EQ(server_.RequestCount(), 4u);
  EXPECT_EQ(queue_.depth() + queue_.in_flight(), 0u);
  int bad_lines = 0;
  bool forbidden_logged = false;
  for (const std::string& line : log.Lines()) {
    if (line.find("pod shop/bad") != std::string::npos) {
      ++bad_lines;
      EXPECT_THAT(line, HasSubstr("HTTP 422"));
      EXPECT_THAT(line, HasSubstr("must be canonical"));
    }
    if (line.find("pod shop/secret") != std::string::npos) {
      forbidden_logged = line.find("is forbidden: no") != std::string::npos;
    }
  }
  EXPECT_EQ(bad_lines, 1);
  EXPECT_TRUE(forbidden_logged);
}

TEST_F(PusherTest, RefusedBulkBatchIsSplitDownToTheBadObject) {
  server_.SetAnswer([](const RecordedRequest& r) -> std::optional<http::Response> {
    if (r.body.find("\"bad\"") != std::string::npos) {
      return Answer(422, ApiError::Invalid("metrics", "WriteBatch", "",
                                           {{"FieldValueInvalid", "bad quantity", "items[1]"}})
                             .ToJson());
    }
    return std::nullopt;
  });
  queue_.Put(MakePod("shop", "a", "node-1", {}, BaseTime(), 100));
  queue_.Put(MakePod("shop", "bad", "node-1", {}, BaseTime(), 100));
  queue_.Put(MakePod("shop", "c", "node-1", {}, BaseTime(), 100));
  queue_.Put(MakePod("shop", "d", "node-1", {}, BaseTime(), 100));
  PusherOptions options;
  options.max_in_flight = 1;
  Start(options);
  ASSERT_TRUE(PollUntil([&] { return Pushed("200") == 3 && Failed("422") == 1; }, kReady));
  EXPECT_TRUE(pusher_->Stats().retries.empty());
  // [a bad c d] → [a bad] → [a], [bad]; [c d].
  EXPECT_EQ(server_.RequestCount(), 5u);
  std::set<ObjectKey> held = server_.Held();
  EXPECT_THAT(held, ElementsAre(ObjectKey{Resource::kPods, "shop", "a"},
                                ObjectKey{Resource::kPods, "shop", "c"},
                                ObjectKey{Resource::kPods, "shop", "d"}));
}

TEST(PusherOptionsTest, ValidateNamesTheBadField) {
  PusherOptions options;
  EXPECT_TRUE(options.Validate().ok());
  options.retry_max = std::chrono::milliseconds(100);
  EXPECT_THAT(std::string(options.Validate().message()), HasSubstr("retry_max"));
  options = PusherOptions();
  options.max_in_flight = 0;
  EXPECT_THAT(std::string(options.Validate().message()), HasSubstr("max_in_flight"));
}

TEST(PushModeTest, ParsesBulkAndPutOnly) {
  EXPECT_EQ(*ParsePushMode("bulk"), PushMode::kBulk);
  EXPECT_EQ(*ParsePushMode("put"), PushMode::kPut);
  EXPECT_FALSE(ParsePushMode("post").ok());
}

TEST(ObjectPathTest, EscapesEachSegment) {
  EXPECT_EQ(ObjectPath({Resource::kNodes, "", "node-1"}), "/apis/metrics/v1alpha1/nodes/node-1");
  EXPECT_EQ(ObjectPath({Resource::kPods, "a b", "x/y"}),
            "/apis/metrics/v1alpha1/namespaces/a%20b/pods/x%2Fy");
}

}  // namespace
}  // namespace kubestat::bridge
