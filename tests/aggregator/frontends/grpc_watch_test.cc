// AggregatorService Watch and WatchHub over a real loopback gRPC connection: the snapshot
// and its end marker, exactly the changes of each round, per-watcher selectors, a slow
// watcher cut off without holding up a fast one, cancellation and shutdown.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kubestat/aggregator/frontends/grpc_service.h"
#include "kubestat/aggregator/query/watch_hub.h"
#include "kubestat/metrics_api/proto.h"
#include "kubestat/testing/aggregator/fake_metrics_source.h"
#include "kubestat/testing/poll.h"
#include "kubestat/v1/aggregator.grpc.pb.h"

namespace kubestat::aggregator {
namespace {

using ::kubestat::aggregator::testing::BaseTime;
using ::kubestat::aggregator::testing::FakeMetricsSource;
using ::kubestat::aggregator::testing::MakeNode;
using ::kubestat::aggregator::testing::MakePod;
using ::kubestat::testing::PollUntil;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A generous deadline for the readiness of another thread.
constexpr std::chrono::seconds kReady(30);

Timestamp Tick(int n) { return BaseTime() + std::chrono::seconds(10) * n; }

// "ADDED pod shop/web-1", "DELETED node node-b", "SNAPSHOT_END".
std::string Describe(const v1::WatchEvent& event) {
  std::string out = v1::WatchEvent::Type_Name(event.type());
  if (event.has_node()) out += " node " + event.node().name();
  if (event.has_pod()) out += " pod " + event.pod().namespace_() + "/" + event.pod().name();
  return out;
}

struct WatchStream {
  std::unique_ptr<grpc::ClientContext> context;
  std::unique_ptr<grpc::ClientReader<v1::WatchEvent>> reader;

  // The next `n` events; fails the test (and returns fewer) when the stream ends early.
  std::vector<v1::WatchEvent> Read(size_t n) {
    std::vector<v1::WatchEvent> events;
    v1::WatchEvent event;
    while (events.size() < n && reader->Read(&event)) events.push_back(event);
    EXPECT_EQ(events.size(), n) << "the stream ended early";
    return events;
  }
  std::vector<std::string> ReadDescribed(size_t n) {
    std::vector<std::string> out;
    for (const v1::WatchEvent& event : Read(n)) out.push_back(Describe(event));
    return out;
  }
};

class GrpcWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    source_.PutNode(MakeNode("node-a", {{"zone", "a"}}, Tick(0), 1000));
    source_.PutNode(MakeNode("node-b", {{"zone", "b"}}, Tick(0), 2000));
    source_.PutPod(MakePod("shop", "web-1", "node-a", {{"app", "web"}}, Tick(0), 100));
    source_.PutPod(MakePod("shop", "web-2", "node-b", {{"app", "web"}}, Tick(0), 200));
    source_.PutPod(MakePod("shop", "db-1", "node-b", {{"app", "db"}}, Tick(0), 300));
    source_.PutPod(MakePod("ops", "agent-1", "node-a", {}, Tick(0), 400));
  }

  void Start(WatchHubOptions hub_options = {}) {
    hub_ = std::make_unique<WatchHub>(&source_, hub_options);
    AggregatorServiceOptions options;
    options.watch_poll_interval = std::chrono::milliseconds(20);
    service_ = std::make_unique<AggregatorService>(&source_, hub_.get(), &registry_, options);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = NewStub();
  }

  // A stub on its own connection, so flow control of one stream cannot touch another's.
  std::unique_ptr<v1::Aggregator::Stub> NewStub() {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return v1::Aggregator::NewStub(grpc::CreateCustomChannel(
        "127.0.0.1:" + std::to_string(port_), grpc::InsecureChannelCredentials(), args));
  }

  void TearDown() override {
    if (service_) service_->Shutdown();
    if (server_) server_->Shutdown();
  }

  WatchStream Open(const v1::WatchRequest& request, v1::Aggregator::Stub* stub = nullptr) {
    WatchStream stream;
    stream.context = std::make_unique<grpc::ClientContext>();
    // A safety net so a broken feature fails the test instead of hanging it.
    stream.context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    stream.reader = (stub != nullptr ? stub : stub_.get())->Watch(stream.context.get(), request);
    return stream;
  }

  static v1::WatchRequest AllRequest() {
    v1::WatchRequest request;
    request.mutable_nodes();
    request.mutable_pods();
    return request;
  }

  double MetricValue(const std::string& name) {
    for (const prometheus::MetricFamily& family : registry_.Collect()) {
      if (family.name != name || family.metric.empty()) continue;
      const prometheus::ClientMetric& metric = family.metric.front();
      return family.type == prometheus::MetricType::Gauge ? metric.gauge.value
                                                          : metric.counter.value;
    }
    return -1;
  }

  FakeMetricsSource source_;
  prometheus::Registry registry_;
  std::unique_ptr<WatchHub> hub_;
  std::unique_ptr<AggregatorService> service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Aggregator::Stub> stub_;
};

TEST_F(GrpcWatchTest, SnapshotSendsEveryMatchingObjectAsAddedThenTheEndMarker) {
  Start();
  hub_->OnRound(Tick(0));
  v1::WatchRequest request;
  request.mutable_pods()->set_namespace_("shop");
  WatchStream stream = Open(request);
  std::vector<v1::WatchEvent> events = stream.Read(4);
  ASSERT_EQ(events.size(), 4u);
  std::vector<std::string> described;
  for (const v1::WatchEvent& e : events) described.push_back(Describe(e));
  EXPECT_THAT(described, ElementsAre("ADDED pod shop/db-1", "ADDED pod shop/web-1",
                                     "ADDED pod shop/web-2", "SNAPSHOT_END"));
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].tick_time().seconds(), 1795255200);
    if (i > 0) {
      EXPECT_GT(events[i].revision(), events[i - 1].revision());
    }
  }
  // The objects are complete: every window, statistics and containers.
  const v1::PodMetrics& web1 = events[1].pod();
  EXPECT_EQ(web1.labels().at("app"), "web");
  EXPECT_EQ(web1.node_name(), "node-a");
  ASSERT_EQ(web1.windows_size(), 4);
  EXPECT_EQ(web1.windows(3).name(), "1d");
  EXPECT_EQ(web1.windows(0).cpu_nanocores().max(), 110);
  EXPECT_EQ(web1.containers_size(), 1);
  EXPECT_FALSE(events[3].has_node() || events[3].has_pod());
  EXPECT_EQ(MetricValue("kubestat_grpc_watchers"), 1);
}

TEST_F(GrpcWatchTest, SnapshotBeforeTheFirstRoundIsJustTheMarker) {
  Start();
  WatchStream stream = Open(AllRequest());
  EXPECT_THAT(stream.ReadDescribed(1), ElementsAre("SNAPSHOT_END"));
  hub_->OnRound(Tick(0));
  EXPECT_THAT(stream.ReadDescribed(6),
              ElementsAre("ADDED node node-a", "ADDED node node-b", "ADDED pod ops/agent-1",
                          "ADDED pod shop/db-1", "ADDED pod shop/web-1", "ADDED pod shop/web-2"));
}

TEST_F(GrpcWatchTest, EachRoundSendsExactlyItsAddsModificationsAndDeletions) {
  Start();
  hub_->OnRound(Tick(0));
  WatchStream stream = Open(AllRequest());
  std::vector<v1::WatchEvent> snapshot = stream.Read(7);
  ASSERT_EQ(snapshot.size(), 7u);

  source_.PutPod(MakePod("shop", "new", "node-a", {{"app", "web"}}, Tick(1), 500));
  source_.PutPod(MakePod("shop", "web-1", "node-a", {{"app", "web"}}, Tick(1), 150));
  source_.RemovePod("shop", "db-1");
  source_.RemoveNode("node-b");
  // node-a, web-2 and agent-1 are unchanged: no event.
  hub_->OnRound(Tick(1));
  std::vector<v1::WatchEvent> round = stream.Read(4);
  ASSERT_EQ(round.size(), 4u);
  std::vector<std::string> described;
  for (const v1::WatchEvent& e : round) described.push_back(Describe(e));
  EXPECT_THAT(described, ElementsAre("DELETED node node-b", "DELETED pod shop/db-1",
                                     "ADDED pod shop/new", "MODIFIED pod shop/web-1"));
  uint64_t previous = snapshot.back().revision();
  for (const v1::WatchEvent& e : round) {
    EXPECT_GT(e.revision(), previous);
    previous = e.revision();
    EXPECT_EQ(e.tick_time().seconds(), 1795255210);
  }
  // A deletion carries only the key.
  EXPECT_EQ(round[1].pod().namespace_(), "shop");
  EXPECT_EQ(round[1].pod().windows_size(), 0);
  EXPECT_TRUE(round[0].node().machine().empty());
  // A modification carries the new windows.
  EXPECT_EQ(round[3].pod().windows(0).endtime().seconds(), 1795255210);
  EXPECT_EQ(round[3].pod().windows(0).cpu_nanocores().min(), 150);

  // A round without changes sends nothing; the next event belongs to the next change.
  hub_->OnRound(Tick(2));
  source_.PutPod(MakePod("shop", "web-2", "node-b", {{"app", "web"}}, Tick(3), 200));
  hub_->OnRound(Tick(3));
  std::vector<v1::WatchEvent> next = stream.Read(1);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(Describe(next[0]), "MODIFIED pod shop/web-2");
  EXPECT_EQ(next[0].tick_time().seconds(), 1795255230);
  EXPECT_GT(next[0].revision(), previous);
}

// Watchers that ask for every window are sent the hub's serialized form of each object, built
// once and shared: several of them sending the same objects at once each get every object
// whole, as a reader parses it, and the shared forms are intact afterwards (a later
// watcher's snapshot sees the same bytes; a filtered watcher gets its own message).
TEST_F(GrpcWatchTest, ManyWatchersSendTheSameSharedObjectsWhole) {
  Start();
  hub_->OnRound(Tick(0));
  constexpr int kWatchers = 4;
  constexpr int kRounds = 5;
  // Per round: 2 nodes and 4 pods modified.
  constexpr size_t kPerRound = 6;
  std::vector<std::unique_ptr<v1::Aggregator::Stub>> stubs;
  std::vector<WatchStream> streams;
  for (int i = 0; i < kWatchers; ++i) {
    stubs.push_back(NewStub());
    streams.push_back(Open(AllRequest(), stubs.back().get()));
  }
  v1::WatchRequest filtered = AllRequest();
  filtered.add_windows("1h");
  auto filtered_stub = NewStub();
  WatchStream filtered_stream = Open(filtered, filtered_stub.get());
  for (WatchStream& stream : streams) ASSERT_EQ(stream.Read(7).size(), 7u);
  ASSERT_EQ(filtered_stream.Read(7).size(), 7u);

  // Every watcher reads on its own thread while the rounds are published.
  std::vector<std::vector<v1::WatchEvent>> got(kWatchers);
  std::vector<std::thread> readers;
  for (int i = 0; i < kWatchers; ++i) {
    readers.emplace_back([&, i] { got[i] = streams[i].Read(kPerRound * kRounds); });
  }
  for (int r = 1; r <= kRounds; ++r) {
    const uint64_t v = 1000 * static_cast<uint64_t>(r);
    source_.PutNode(MakeNode("node-a", {{"zone", "a"}}, Tick(r), v + 1));
    source_.PutNode(MakeNode("node-b", {{"zone", "b"}}, Tick(r), v + 2));
    source_.PutPod(MakePod("shop", "web-1", "node-a", {{"app", "web"}}, Tick(r), v + 3, 2));
    source_.PutPod(MakePod("shop", "web-2", "node-b", {{"app", "web"}}, Tick(r), v + 4, 2));
    source_.PutPod(MakePod("shop", "db-1", "node-b", {{"app", "db"}}, Tick(r), v + 5, 2));
    source_.PutPod(MakePod("ops", "agent-1", "node-a", {}, Tick(r), v + 6, 2));
    hub_->OnRound(Tick(r));
  }
  for (std::thread& t : readers) t.join();

  for (int i = 0; i < kWatchers; ++i) {
    ASSERT_EQ(got[i].size(), kPerRound * kRounds) << "watcher " << i;
    for (size_t e = 0; e < got[i].size(); ++e) {
      const v1::WatchEvent& event = got[i][e];
      const uint64_t v = 1000 * (e / kPerRound + 1);
      EXPECT_EQ(event.type(), v1::WatchEvent::MODIFIED) << Describe(event);
      if (event.has_pod()) {
        ASSERT_EQ(event.pod().windows_size(), 4) << Describe(event);
        EXPECT_EQ(event.pod().containers_size(), 2) << Describe(event);
        EXPECT_EQ(event.pod().windows(3).name(), "1d");
        EXPECT_GT(event.pod().windows(0).cpu_nanocores().min(), v) << Describe(event);
        EXPECT_LT(event.pod().windows(0).cpu_nanocores().min(), v + 10) << Describe(event);
      } else {
        ASSERT_TRUE(event.has_node());
        EXPECT_EQ(event.node().machine_size(), 4) << Describe(event);
        EXPECT_GT(event.node().machine(0).cpu_nanocores().min(), v) << Describe(event);
      }
      // Every watcher got the very same bytes.
      EXPECT_EQ(event.SerializeAsString(), got[0][e].SerializeAsString()) << "watcher " << i;
    }
  }
  // The filtered watcher's copies carry the last round's values too.
  std::vector<v1::WatchEvent> filtered_events = filtered_stream.Read(kPerRound * kRounds);
  ASSERT_EQ(filtered_events.size(), kPerRound * kRounds);
  const v1::WatchEvent& last_filtered = filtered_events.back();
  ASSERT_TRUE(last_filtered.has_pod());
  ASSERT_EQ(last_filtered.pod().windows_size(), 1);
  EXPECT_EQ(last_filtered.pod().windows(0).name(), "1h");

  // The shared objects were lent, never taken: a new watcher's snapshot holds them whole,
  // equal to what the last round sent.
  WatchStream late = Open(AllRequest());
  std::vector<v1::WatchEvent> snapshot = late.Read(7);
  ASSERT_EQ(snapshot.size(), 7u);
  std::map<std::string, std::string> sent_last;
  for (size_t e = kPerRound * (kRounds - 1); e < got[0].size(); ++e) {
    v1::WatchEvent event = got[0][e];
    event.clear_revision();
    event.clear_tick_time();
    event.set_type(v1::WatchEvent::ADDED);
    sent_last[Describe(event)] = event.SerializeAsString();
  }
  for (size_t e = 0; e + 1 < snapshot.size(); ++e) {
    v1::WatchEvent event = snapshot[e];
    event.clear_revision();
    event.clear_tick_time();
    ASSERT_TRUE(sent_last.contains(Describe(event))) << Describe(event);
    EXPECT_EQ(event.SerializeAsString(), sent_last[Describe(event)]) << Describe(event);
  }
}

TEST_F(GrpcWatchTest, WatchersWithDifferentSelectorsSeeTheirOwnEvents) {
  Start();
  hub_->OnRound(Tick(0));
  v1::WatchRequest web_request;
  web_request.mutable_pods()->set_label_selector("app=web");
  web_request.add_windows("10s");
  WatchStream web = Open(web_request);
  v1::WatchRequest node_b_request;
  node_b_request.mutable_pods()->set_field_selector("spec.nodeName=node-b");
  node_b_request.mutable_nodes()->set_field_selector("metadata.name=node-a");
  WatchStream node_b = Open(node_b_request);

  std::vector<v1::WatchEvent> web_snapshot = web.Read(3);
  ASSERT_EQ(web_snapshot.size(), 3u);
  EXPECT_EQ(Describe(web_snapshot[0]), "ADDED pod shop/web-1");
  EXPECT_EQ(web_snapshot[0].pod().windows_size(), 1);  // only "10s"
  EXPECT_EQ(Describe(web_snapshot[1]), "ADDED pod shop/web-2");
  EXPECT_EQ(Describe(web_snapshot[2]), "SNAPSHOT_END");
  EXPECT_THAT(node_b.ReadDescribed(4), ElementsAre("ADDED node node-a", "ADDED pod shop/db-1",
                                                   "ADDED pod shop/web-2", "SNAPSHOT_END"));

  // web-1 stops matching app=web; web-2 and db-1 get new samples; web-3 appears on node-a.
  source_.PutPod(MakePod("shop", "web-1", "node-a", {{"app", "api"}}, Tick(0), 100));
  source_.PutPod(MakePod("shop", "web-2", "node-b", {{"app", "web"}}, Tick(1), 210));
  source_.PutPod(MakePod("shop", "db-1", "node-b", {{"app", "db"}}, Tick(1), 310));
  source_.PutPod(MakePod("shop", "web-3", "node-a", {{"app", "web"}}, Tick(1), 600));
  hub_->OnRound(Tick(1));
  // A sentinel that both see, to show nothing else was queued for round 1.
  source_.PutPod(MakePod("shop", "zz", "node-b", {{"app", "web"}}, Tick(2), 1));
  hub_->OnRound(Tick(2));

  EXPECT_THAT(web.ReadDescribed(4), ElementsAre("DELETED pod shop/web-1", "MODIFIED pod shop/web-2",
                                                "ADDED pod shop/web-3", "ADDED pod shop/zz"));
  EXPECT_THAT(node_b.ReadDescribed(3), ElementsAre("MODIFIED pod shop/db-1",
                                                   "MODIFIED pod shop/web-2", "ADDED pod shop/zz"));
  EXPECT_EQ(MetricValue("kubestat_grpc_watchers"), 2);
}

TEST_F(GrpcWatchTest, SlowWatcherIsCutOffWithoutHoldingUpTheFastOne) {
  constexpr int kPods = 100;
  constexpr int kMaxRounds = 400;
  for (int i = 0; i < kPods; ++i) {
    source_.PutPod(MakePod("bulk", "p-" + std::to_string(1000 + i), "node-a", {{"app", "bulk"}},
                           Tick(0), 1000 + static_cast<uint64_t>(i), /*containers=*/5));
  }
  WatchHubOptions hub_options;
  hub_options.max_pending_rounds = 2;
  Start(hub_options);
  hub_->OnRound(Tick(0));

  v1::WatchRequest request;
  request.mutable_pods()->set_namespace_("bulk");
  std::unique_ptr<v1::Aggregator::Stub> slow_stub = NewStub();
  WatchStream slow = Open(request, slow_stub.get());  // never read until the end
  ASSERT_TRUE(PollUntil([&] { return hub_->Stats().watchers == 1; }, kReady));
  WatchStream fast = Open(request);
  ASSERT_EQ(fast.Read(kPods + 1).size(), static_cast<size_t>(kPods + 1));

  int rounds = 0;
  while (hub_->Stats().watchers_overflowed == 0 && rounds < kMaxRounds) {
    ++rounds;
    for (int i = 0; i < kPods; ++i) {
      source_.PutPod(MakePod("bulk", "p-" + std::to_string(1000 + i), "node-a", {{"app", "bulk"}},
                             Tick(rounds), 1000 + static_cast<uint64_t>(i), 5));
    }
    hub_->OnRound(Tick(rounds));  // returns although the slow reader reads nothing
    std::vector<v1::WatchEvent> events = fast.Read(kPods);
    ASSERT_EQ(events.size(), static_cast<size_t>(kPods));
    EXPECT_EQ(Describe(events.front()), "MODIFIED pod bulk/p-1000");
    EXPECT_EQ(Describe(events.back()), "MODIFIED pod bulk/p-1099");
    EXPECT_EQ(events.back().tick_time().seconds(), 1795255200 + 10 * rounds);
  }
  ASSERT_EQ(hub_->Stats().watchers_overflowed, 1u) << "after " << rounds << " rounds";

  // The fast watcher keeps going.
  source_.RemovePod("bulk", "p-1000");
  hub_->OnRound(Tick(rounds + 1));
  EXPECT_THAT(fast.ReadDescribed(1), ElementsAre("DELETED pod bulk/p-1000"));

  // The slow one gets what was already in flight, then RESOURCE_EXHAUSTED.
  v1::WatchEvent event;
  size_t drained = 0;
  while (slow.reader->Read(&event)) ++drained;
  grpc::Status status = slow.reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(), HasSubstr("fell too far behind"));
  EXPECT_LT(drained, static_cast<size_t>(kPods) * (rounds + 1) + 1);
  EXPECT_EQ(MetricValue("kubestat_grpc_watchers_overflowed_total"), 1);
  EXPECT_TRUE(PollUntil([&] { return hub_->Stats().watchers == 1; }, kReady));
}

TEST_F(GrpcWatchTest, ClientCancellationEndsTheStream) {
  Start();
  hub_->OnRound(Tick(0));
  WatchStream stream = Open(AllRequest());
  ASSERT_EQ(stream.Read(7).size(), 7u);
  EXPECT_EQ(MetricValue("kubestat_grpc_watchers"), 1);
  stream.context->TryCancel();
  EXPECT_TRUE(PollUntil([&] { return hub_->Stats().watchers == 0; }, kReady));
  EXPECT_TRUE(PollUntil([&] { return MetricValue("kubestat_grpc_watchers") == 0; }, kReady));
  EXPECT_EQ(stream.reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(GrpcWatchTest, ShutdownEndsEveryStreamAndRefusesNewOnes) {
  Start();
  hub_->OnRound(Tick(0));
  WatchStream a = Open(AllRequest());
  v1::WatchRequest pods;
  pods.mutable_pods();
  WatchStream b = Open(pods);
  ASSERT_EQ(a.Read(7).size(), 7u);
  ASSERT_EQ(b.Read(5).size(), 5u);

  service_->Shutdown();
  v1::WatchEvent event;
  EXPECT_FALSE(a.reader->Read(&event));
  EXPECT_FALSE(b.reader->Read(&event));
  grpc::Status status = a.reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("shutting down"));
  EXPECT_EQ(b.reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);

  WatchStream late = Open(AllRequest());
  EXPECT_FALSE(late.reader->Read(&event));
  EXPECT_EQ(late.reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_FALSE(hub_->Subscribe().ok());
  server_->Shutdown();  // returns: no handler is left running
  server_.reset();
}

TEST_F(GrpcWatchTest, WatchWithoutAKindOrWithABadSelectorIsInvalidArgument) {
  Start();
  {
    WatchStream stream = Open(v1::WatchRequest());
    v1::WatchEvent event;
    EXPECT_FALSE(stream.reader->Read(&event));
    grpc::Status status = stream.reader->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr("nodes, pods or both"));
  }
  {
    v1::WatchRequest request;
    request.mutable_pods()->set_label_selector("app in");
    WatchStream stream = Open(request);
    v1::WatchEvent event;
    EXPECT_FALSE(stream.reader->Read(&event));
    grpc::Status status = stream.reader->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr("label_selector: "));
  }
  {
    v1::WatchRequest request;
    request.mutable_nodes()->set_field_selector("spec.nodeName=x");
    WatchStream stream = Open(request);
    v1::WatchEvent event;
    EXPECT_FALSE(stream.reader->Read(&event));
    EXPECT_EQ(stream.reader->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
}

TEST(WatchHubTest, RevisionsAreSharedAndTheSnapshotIsReservedAhead) {
  FakeMetricsSource source;
  source.PutNode(MakeNode("n1", {}, Tick(0), 1));
  source.PutPod(MakePod("ns", "p1", "n1", {}, Tick(0), 1));
  WatchHub hub(&source);
  hub.OnRound(Tick(0));
  EXPECT_EQ(hub.revision(), 2u);
  absl::StatusOr<std::unique_ptr<WatchSubscription>> sub = hub.Subscribe();
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(hub.revision(), 5u);  // two objects and the end marker
  std::shared_ptr<const WatchBatch> batch;
  ASSERT_EQ((*sub)->Next(&batch, Duration::zero()), WatchSubscription::Result::kBatch);
  EXPECT_TRUE(batch->snapshot);
  ASSERT_EQ(batch->changes.size(), 2u);
  EXPECT_EQ(batch->changes[0].revision, 3u);
  EXPECT_EQ(batch->changes[1].revision, 4u);
  EXPECT_EQ(batch->snapshot_end_revision, 5u);
  EXPECT_EQ((*sub)->Next(&batch, Duration::zero()), WatchSubscription::Result::kTimeout);

  source.PutPod(MakePod("ns", "p1", "n1", {}, Tick(1), 2));
  hub.OnRound(Tick(1));
  ASSERT_EQ((*sub)->Next(&batch, Duration::zero()), WatchSubscription::Result::kBatch);
  ASSERT_EQ(batch->changes.size(), 1u);
  EXPECT_EQ(batch->changes[0].revision, 6u);
  EXPECT_EQ(batch->changes[0].kind, WatchChange::Kind::kUpsert);
  EXPECT_EQ(hub.Stats().rounds, 2u);
  EXPECT_EQ(hub.Stats().changes, 3u);

  hub.Shutdown();
  EXPECT_EQ((*sub)->Next(&batch, Duration::zero()), WatchSubscription::Result::kClosed);
}

TEST(WatchHubTest, AFullQueueEndsOnlyThatSubscription) {
  FakeMetricsSource source;
  WatchHubOptions options;
  options.max_pending_rounds = 2;
  ASSERT_TRUE(options.Validate().ok());
  WatchHub hub(&source, options);
  auto slow = hub.Subscribe();  // holds the snapshot: 1 of 2
  auto fast = hub.Subscribe();
  ASSERT_TRUE(slow.ok() && fast.ok());
  std::shared_ptr<const WatchBatch> batch;
  for (int round = 1; round <= 3; ++round) {
    source.PutNode(MakeNode("n1", {}, Tick(round), 1));
    hub.OnRound(Tick(round));
    while ((*fast)->Next(&batch, Duration::zero()) == WatchSubscription::Result::kBatch) {
    }
  }
  EXPECT_EQ(hub.Stats().watchers_overflowed, 1u);
  EXPECT_EQ((*slow)->Next(&batch, Duration::zero()), WatchSubscription::Result::kOverflow);
  EXPECT_EQ((*fast)->Next(&batch, Duration::zero()), WatchSubscription::Result::kTimeout);
  slow->reset();
  EXPECT_EQ(hub.Stats().watchers, 1u);
  options.max_pending_rounds = 0;
  EXPECT_FALSE(options.Validate().ok());
}

// The snapshot batch a new watcher is sent first, and its changes by object name.
struct SnapshotByName {
  std::shared_ptr<const WatchBatch> batch;  // holds what `objects` points to
  std::map<std::string, const WatchChange*> objects;
};

SnapshotByName TakeSnapshot(WatchHub& hub) {
  SnapshotByName out;
  auto subscription = hub.Subscribe();
  if (!subscription.ok() ||
      (*subscription)->Next(&out.batch, Duration::zero()) != WatchSubscription::Result::kBatch) {
    ADD_FAILURE() << "a new subscription got no snapshot batch";
    return out;
  }
  for (const WatchChange& change : out.batch->changes) out.objects[change.name] = &change;
  return out;
}

TEST(WatchHubTest, ARoundKeepsWhatDidNotChangeAndHandsBackWhatItLetGo) {
  FakeMetricsSource source;
  source.PutNode(MakeNode("n1", {}, Tick(0), 1));
  source.PutPod(MakePod("ns", "p1", "n1", {}, Tick(0), 1));
  source.PutPod(MakePod("ns", "p2", "n1", {}, Tick(0), 2));
  WatchHub hub(&source);
  EXPECT_TRUE(hub.OnRound(Tick(0)).empty());
  SnapshotByName before = TakeSnapshot(hub);
  auto& old = before.objects;
  ASSERT_EQ(old.size(), 3u);
  // The serialized proto is built on first use, equal to a direct conversion, and then kept.
  const std::string& node_wire = old["n1"]->node->wire();
  EXPECT_EQ(node_wire, metrics_api::ToProto(old["n1"]->node->view()).SerializeAsString());
  EXPECT_EQ(&old["n1"]->node->wire(), &node_wire);
  EXPECT_EQ(old["n1"]->node->proto().SerializeAsString(), node_wire);

  source.PutPod(MakePod("ns", "p1", "n1", {}, Tick(1), 5));
  source.RemovePod("ns", "p2");
  std::vector<std::shared_ptr<const void>> retired = hub.OnRound(Tick(1));
  // The replaced p1 and the removed p2, nothing else.
  ASSERT_EQ(retired.size(), 2u);
  EXPECT_EQ(retired[0].get(), old["p1"]->pod.get());
  EXPECT_EQ(retired[1].get(), old["p2"]->pod.get());

  SnapshotByName after = TakeSnapshot(hub);
  auto& now = after.objects;
  ASSERT_EQ(now.size(), 2u);
  // The unchanged node keeps its watched form and the serialized proto built for it.
  EXPECT_EQ(now["n1"]->node.get(), old["n1"]->node.get());
  EXPECT_EQ(&now["n1"]->node->wire(), &node_wire);
  EXPECT_NE(now["p1"]->pod.get(), old["p1"]->pod.get());
  v1::PodMetrics p1;
  ASSERT_TRUE(p1.ParseFromString(now["p1"]->pod->wire()));
  EXPECT_EQ(p1.windows(0).cpu_nanocores().max(), 5 + 10);
}

TEST(WatchHubTest, ARoundNobodyWatchesCountsItsChangesAsAWatchedOneWould) {
  FakeMetricsSource source;
  WatchHub watched(&source);
  WatchHub unwatched(&source);
  auto watcher = watched.Subscribe();
  ASSERT_TRUE(watcher.ok());
  const uint64_t reserved = watched.revision();  // the watcher's snapshot took revisions
  std::shared_ptr<const WatchBatch> batch;
  size_t sent = 0;
  auto round = [&](int tick) {
    watched.OnRound(Tick(tick));
    unwatched.OnRound(Tick(tick));
    while ((*watcher)->Next(&batch, Duration::zero()) == WatchSubscription::Result::kBatch) {
      if (!batch->snapshot) sent += batch->changes.size();
    }
  };
  source.PutNode(MakeNode("n1", {}, Tick(0), 1));
  source.PutPod(MakePod("ns", "p1", "n1", {{"app", "a"}}, Tick(0), 1));
  source.PutPod(MakePod("ns", "p2", "n1", {}, Tick(0), 2));
  round(0);
  source.PutPod(MakePod("ns", "p1", "n1", {{"app", "a"}}, Tick(1), 3));  // new usage
  source.PutPod(MakePod("ns", "p3", "n1", {}, Tick(1), 1));              // added
  source.RemovePod("ns", "p2");                                          // removed
  round(1);
  // Only a label changed: the same usage, so told apart by the labels alone.
  source.PutPod(MakePod("ns", "p1", "n1", {{"app", "b"}}, Tick(1), 3));
  round(2);
  round(3);  // nothing changed

  EXPECT_EQ(sent, 3u + 3u + 1u);
  EXPECT_EQ(watched.Stats().changes, sent);
  EXPECT_EQ(unwatched.Stats().changes, sent);
  EXPECT_EQ(unwatched.revision(), watched.revision() - reserved);
  // A watcher that comes later gets the same objects as one that watched all along.
  SnapshotByName late = TakeSnapshot(unwatched);
  SnapshotByName along = TakeSnapshot(watched);
  ASSERT_EQ(late.objects.size(), 3u);
  ASSERT_EQ(along.objects.size(), 3u);
  for (const auto& [name, change] : along.objects) {
    ASSERT_TRUE(late.objects.contains(name)) << name;
    const WatchChange& other = *late.objects[name];
    if (change->pod) {
      EXPECT_EQ(other.pod->view(), change->pod->view()) << name;
    } else {
      EXPECT_EQ(other.node->view(), change->node->view()) << name;
    }
  }
  EXPECT_EQ(late.objects["p1"]->pod->view().labels.at("app"), "b");
  // Changes made after it subscribed reach it as a batch.
  auto late_watcher = unwatched.Subscribe();
  ASSERT_TRUE(late_watcher.ok());
  ASSERT_EQ((*late_watcher)->Next(&batch, Duration::zero()), WatchSubscription::Result::kBatch);
  source.RemovePod("ns", "p3");
  unwatched.OnRound(Tick(4));
  ASSERT_EQ((*late_watcher)->Next(&batch, Duration::zero()), WatchSubscription::Result::kBatch);
  ASSERT_EQ(batch->changes.size(), 1u);
  EXPECT_EQ(batch->changes[0].kind, WatchChange::Kind::kRemove);
  EXPECT_EQ(batch->changes[0].name, "p3");
}

}  // namespace
}  // namespace kubestat::aggregator
