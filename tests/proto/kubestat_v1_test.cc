// The kubestat.v1 messages round-trip, keep their field numbers, and the generated
// Aggregator service works end to end over a real loopback gRPC connection.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "google/protobuf/util/message_differencer.h"
#include "kubestat/v1/aggregator.grpc.pb.h"
#include "kubestat/v1/aggregator.pb.h"
#include "kubestat/v1/metrics.pb.h"

namespace kubestat::v1 {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Bytes(std::initializer_list<uint8_t> bytes) {
  return std::string(bytes.begin(), bytes.end());
}

constexpr int64_t kTick = 1795082410;  // 2026-11-19T10:00:10Z

ResourceStats Stats(int64_t mean, int64_t max, int64_t min, int64_t count) {
  ResourceStats stats;
  stats.set_mean(mean);
  stats.set_max(max);
  stats.set_min(min);
  stats.set_p50(mean);
  stats.set_p95(max - 1);
  stats.set_p99(max);
  stats.set_sample_count(count);
  return stats;
}

void AddWindow(google::protobuf::RepeatedPtrField<Window>* windows, const std::string& name,
               int64_t seconds, bool with_cpu) {
  Window* window = windows->Add();
  window->set_name(name);
  window->mutable_duration()->set_seconds(seconds);
  window->mutable_endtime()->set_seconds(kTick);
  window->mutable_endtime()->set_nanos(500000000);
  window->set_sample_count(seconds / 10 + 1);
  if (with_cpu)
    *window->mutable_cpu_nanocores() = Stats(120000000, 250000000, 5000000, seconds / 10);
  *window->mutable_memory_bytes() = Stats(316669952, 330000000, 300000000, seconds / 10 + 1);
}

PodMetrics WebPod(const std::string& name) {
  PodMetrics pod;
  pod.set_name(name);
  pod.set_namespace_("shop");
  (*pod.mutable_labels())["app"] = "web";
  (*pod.mutable_labels())["tier"] = "frontend";
  pod.set_node_name("node-a");
  AddWindow(pod.mutable_windows(), "10s", 10, /*with_cpu=*/false);
  AddWindow(pod.mutable_windows(), "1m", 60, /*with_cpu=*/true);
  ContainerMetrics* app = pod.add_containers();
  app->set_name("app");
  AddWindow(app->mutable_windows(), "1h", 3600, /*with_cpu=*/true);
  return pod;
}

NodeMetrics NodeA() {
  NodeMetrics node;
  node.set_name("node-a");
  (*node.mutable_labels())["kubernetes.io/os"] = "linux";
  AddWindow(node.mutable_machine(), "1d", 86400, /*with_cpu=*/true);
  ContainerMetrics* kubelet = node.add_system_containers();
  kubelet->set_name("kubelet");
  AddWindow(kubelet->mutable_windows(), "10s", 10, /*with_cpu=*/true);
  return node;
}

TEST(KubestatV1ProtoTest, PodMetricsRoundTripsWithAbsentResourcesStayingAbsent) {
  const PodMetrics pod = WebPod("web-1");
  PodMetrics parsed;
  ASSERT_TRUE(parsed.ParseFromString(pod.SerializeAsString()));
  EXPECT_TRUE(MessageDifferencer::Equals(pod, parsed)) << parsed.DebugString();
  EXPECT_EQ(parsed.labels().at("tier"), "frontend");
  EXPECT_EQ(parsed.node_name(), "node-a");
  ASSERT_EQ(parsed.windows_size(), 2);
  EXPECT_FALSE(parsed.windows(0).has_cpu_nanocores());  // a single scrape gives no rate
  EXPECT_TRUE(parsed.windows(1).has_cpu_nanocores());
  EXPECT_EQ(parsed.windows(1).cpu_nanocores().max(), 250000000);
  EXPECT_EQ(parsed.windows(1).memory_bytes().mean(), 316669952);
  EXPECT_EQ(parsed.windows(1).endtime().nanos(), 500000000);
  EXPECT_EQ(parsed.containers(0).windows(0).duration().seconds(), 3600);
}

TEST(KubestatV1ProtoTest, NodeMetricsAndWatchEventsRoundTrip) {
  WatchEvent modified;
  modified.set_type(WatchEvent::MODIFIED);
  modified.set_revision(42);
  modified.mutable_tick_time()->set_seconds(kTick);
  *modified.mutable_node() = NodeA();
  WatchEvent parsed;
  ASSERT_TRUE(parsed.ParseFromString(modified.SerializeAsString()));
  EXPECT_TRUE(MessageDifferencer::Equals(modified, parsed));
  EXPECT_EQ(parsed.object_case(), WatchEvent::kNode);
  EXPECT_EQ(parsed.node().system_containers(0).name(), "kubelet");

  WatchEvent deleted;
  deleted.set_type(WatchEvent::DELETED);
  deleted.set_revision(43);
  deleted.mutable_pod()->set_name("web-1");
  deleted.mutable_pod()->set_namespace_("shop");
  ASSERT_TRUE(parsed.ParseFromString(deleted.SerializeAsString()));
  EXPECT_EQ(parsed.object_case(), WatchEvent::kPod);
  EXPECT_EQ(parsed.pod().namespace_(), "shop");
  EXPECT_EQ(parsed.pod().windows_size(), 0);

  WatchEvent marker;
  marker.set_type(WatchEvent::SNAPSHOT_END);
  ASSERT_TRUE(parsed.ParseFromString(marker.SerializeAsString()));
  EXPECT_EQ(parsed.object_case(), WatchEvent::OBJECT_NOT_SET);
}

TEST(KubestatV1ProtoTest, FieldNumbersArePinned) {
  // These bytes are the contract with every deployed reader; a renumbered field fails here.
  ResourceStats stats;
  stats.set_mean(1);
  stats.set_max(2);
  stats.set_min(3);
  stats.set_p50(4);
  stats.set_p95(5);
  stats.set_p99(6);
  stats.set_sample_count(7);
  EXPECT_EQ(stats.SerializeAsString(),
            Bytes({0x08, 1, 0x10, 2, 0x18, 3, 0x20, 4, 0x28, 5, 0x30, 6, 0x38, 7}));

  Window window;
  window.set_name("1m");
  window.mutable_duration()->set_seconds(60);
  window.set_sample_count(6);
  window.mutable_cpu_nanocores()->set_max(1);
  window.mutable_memory_bytes()->set_min(2);
  EXPECT_EQ(window.SerializeAsString(), Bytes({0x0a, 0x02, '1', 'm', 0x12, 0x02, 0x08, 60, 0x20, 6,
                                               0x2a, 0x02, 0x10, 1, 0x32, 0x02, 0x18, 2}));

  PodMetrics pod;
  pod.set_name("p");
  pod.set_namespace_("n");
  pod.set_node_name("x");
  EXPECT_EQ(pod.SerializeAsString(), Bytes({0x0a, 0x01, 'p', 0x12, 0x01, 'n', 0x22, 0x01, 'x'}));

  WatchEvent event;
  event.set_type(WatchEvent::SNAPSHOT_END);
  event.set_revision(300);
  EXPECT_EQ(event.SerializeAsString(), Bytes({0x08, 0x04, 0x10, 0xac, 0x02}));
}

// A tiny in-process Aggregator: fixed objects, a one-rule selector check, a scripted watch.
class FakeAggregator final : public Aggregator::Service {
 public:
  grpc::Status ListNodes(grpc::ServerContext*, const ListNodesRequest* request,
                         ListNodesResponse* response) override {
    if (!request->field_selector().empty() && request->field_selector() != "metadata.name=node-a") {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "field_selector \"" + request->field_selector() + "\": unsupported");
    }
    *response->add_items() = NodeA();
    response->set_revision(7);
    return grpc::Status::OK;
  }

  grpc::Status ListPods(grpc::ServerContext*, const ListPodsRequest* request,
                        ListPodsResponse* response) override {
    if (request->label_selector().find("==!") != std::string::npos) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "label_selector \"" + request->label_selector() + "\": bad operator");
    }
    if (request->namespace_() == "shop") {
      *response->add_items() = WebPod("web-1");
      *response->add_items() = WebPod("web-2");
    }
    response->set_revision(7);
    return grpc::Status::OK;
  }

  grpc::Status Watch(grpc::ServerContext*, const WatchRequest* request,
                     grpc::ServerWriter<WatchEvent>* writer) override {
    if (!request->has_nodes() && !request->has_pods()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "choose nodes and/or pods");
    }
    uint64_t revision = 100;
    auto send = [&](WatchEvent::Type type, int64_t tick, const PodMetrics* pod) {
      WatchEvent event;
      event.set_type(type);
      event.set_revision(revision++);
      event.mutable_tick_time()->set_seconds(tick);
      if (pod != nullptr) *event.mutable_pod() = *pod;
      return writer->Write(event);
    };
    const PodMetrics web1 = WebPod("web-1");
    const PodMetrics web2 = WebPod("web-2");
    PodMetrics web2_key;
    web2_key.set_name("web-2");
    web2_key.set_namespace_("shop");
    if (!send(WatchEvent::ADDED, kTick, &web1) || !send(WatchEvent::ADDED, kTick, &web2) ||
        !send(WatchEvent::SNAPSHOT_END, kTick, nullptr) ||
        !send(WatchEvent::MODIFIED, kTick + 10, &web1) ||
        !send(WatchEvent::DELETED, kTick + 10, &web2_key)) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
    }
    return grpc::Status::OK;
  }
};

class AggregatorServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    stub_ = Aggregator::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                    grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  FakeAggregator service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Aggregator::Stub> stub_;
};

TEST_F(AggregatorServiceTest, ListPodsReturnsTheServersObjects) {
  grpc::ClientContext context;
  ListPodsRequest request;
  request.set_namespace_("shop");
  request.set_label_selector("app=web");
  ListPodsResponse response;
  grpc::Status status = stub_->ListPods(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.items_size(), 2);
  EXPECT_EQ(response.items(1).name(), "web-2");
  EXPECT_TRUE(MessageDifferencer::Equals(response.items(0), WebPod("web-1")));
  EXPECT_EQ(response.revision(), 7u);
}

TEST_F(AggregatorServiceTest, BadSelectorComesBackAsInvalidArgument) {
  grpc::ClientContext pods_context;
  ListPodsRequest pods_request;
  pods_request.set_label_selector("app==!web");
  ListPodsResponse pods_response;
  grpc::Status status = stub_->ListPods(&pods_context, pods_request, &pods_response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("app==!web"));

  grpc::ClientContext nodes_context;
  ListNodesRequest nodes_request;
  nodes_request.set_field_selector("spec.unschedulable=true");
  ListNodesResponse nodes_response;
  status = stub_->ListNodes(&nodes_context, nodes_request, &nodes_response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(AggregatorServiceTest, ListNodesReturnsMachineAndSystemContainers) {
  grpc::ClientContext context;
  ListNodesRequest request;
  request.set_field_selector("metadata.name=node-a");
  ListNodesResponse response;
  grpc::Status status = stub_->ListNodes(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.items_size(), 1);
  EXPECT_EQ(response.items(0).machine(0).name(), "1d");
  EXPECT_EQ(response.items(0).system_containers(0).name(), "kubelet");
}

TEST_F(AggregatorServiceTest, WatchStreamsSnapshotMarkerThenChangesWithRisingRevisions) {
  grpc::ClientContext context;
  WatchRequest request;
  request.mutable_pods()->set_namespace_("shop");
  std::unique_ptr<grpc::ClientReader<WatchEvent>> reader = stub_->Watch(&context, request);
  std::vector<WatchEvent::Type> types;
  std::vector<std::string> names;
  std::vector<uint64_t> revisions;
  WatchEvent event;
  while (reader->Read(&event)) {
    types.push_back(event.type());
    names.push_back(event.has_pod() ? event.pod().name() : "");
    revisions.push_back(event.revision());
  }
  grpc::Status status = reader->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_THAT(types, ElementsAre(WatchEvent::ADDED, WatchEvent::ADDED, WatchEvent::SNAPSHOT_END,
                                 WatchEvent::MODIFIED, WatchEvent::DELETED));
  EXPECT_THAT(names, ElementsAre("web-1", "web-2", "", "web-1", "web-2"));
  EXPECT_THAT(revisions, ElementsAre(100, 101, 102, 103, 104));
}

TEST_F(AggregatorServiceTest, WatchWithoutAnySelectionIsInvalidArgument) {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<WatchEvent>> reader = stub_->Watch(&context, WatchRequest());
  WatchEvent event;
  EXPECT_FALSE(reader->Read(&event));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace kubestat::v1
