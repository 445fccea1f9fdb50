// AggregatorService list calls over a real loopback gRPC connection: conversion of every
// window and statistic, each selector form, bad selectors and windows, readiness, and the
// request metrics.
#include "kubestat/aggregator/frontends/grpc_service.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kubestat/aggregator/query/watch_hub.h"
#include "kubestat/testing/aggregator/fake_metrics_source.h"
#include "kubestat/v1/aggregator.grpc.pb.h"

namespace kubestat::aggregator {
namespace {

using ::kubestat::aggregator::testing::BaseTime;
using ::kubestat::aggregator::testing::FakeMetricsSource;
using ::kubestat::aggregator::testing::MakeNode;
using ::kubestat::aggregator::testing::MakePod;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class GrpcListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    source_.PutNode(MakeNode("node-a", {{"zone", "a"}, {"gpu", "yes"}}, BaseTime(), 1000));
    source_.PutNode(MakeNode("node-b", {{"zone", "b"}}, BaseTime(), 2000));
    source_.PutNode(MakeNode("node-c", {}, BaseTime(), 3000));
    source_.PutPod(MakePod("shop", "web-1", "node-a", {{"app", "web"}}, BaseTime(), 100));
    source_.PutPod(MakePod("shop", "web-2", "node-b", {{"app", "web"}}, BaseTime(), 200));
    source_.PutPod(MakePod("shop", "db-1", "node-b", {{"app", "db"}}, BaseTime(), 300));
    source_.PutPod(MakePod("ops", "agent-1", "node-a", {}, BaseTime(), 400));

    service_ = std::make_unique<AggregatorService>(&source_, &hub_, &registry_);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    stub_ = v1::Aggregator::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                        grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    service_->Shutdown();
    server_->Shutdown();
  }

  std::vector<std::string> NodeNames(const std::string& labels, const std::string& fields) {
    v1::ListNodesRequest request;
    request.set_label_selector(labels);
    request.set_field_selector(fields);
    v1::ListNodesResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->ListNodes(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    std::vector<std::string> names;
    for (const v1::NodeMetrics& node : response.items()) names.push_back(node.name());
    return names;
  }

  std::vector<std::string> PodNames(const std::string& ns, const std::string& labels,
                                    const std::string& fields) {
    v1::ListPodsRequest request;
    request.set_namespace_(ns);
    request.set_label_selector(labels);
    request.set_field_selector(fields);
    v1::ListPodsResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->ListPods(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    std::vector<std::string> names;
    for (const v1::PodMetrics& pod : response.items()) {
      names.push_back(pod.namespace_() + "/" + pod.name());
    }
    return names;
  }

  // The value of kubestat_grpc_requests_total{method,code}; 0 when absent.
  double Requests(const std::string& method, const std::string& code) {
    for (const prometheus::MetricFamily& family : registry_.Collect()) {
      if (family.name != "kubestat_grpc_requests_total") continue;
      for (const prometheus::ClientMetric& metric : family.metric) {
        bool method_ok = false;
        bool code_ok = false;
        for (const prometheus::ClientMetric::Label& label : metric.label) {
          if (label.name == "method" && label.value == method) method_ok = true;
          if (label.name == "code" && label.value == code) code_ok = true;
        }
        if (method_ok && code_ok) return metric.counter.value;
      }
    }
    return 0;
  }

  FakeMetricsSource source_;
  WatchHub hub_{&source_};
  prometheus::Registry registry_;
  std::unique_ptr<AggregatorService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Aggregator::Stub> stub_;
};

TEST_F(GrpcListTest, ListNodesConvertsEveryWindowAndStatistic) {
  v1::ListNodesRequest request;
  request.set_field_selector("metadata.name=node-a");
  v1::ListNodesResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->ListNodes(&context, request, &response).ok());
  ASSERT_EQ(response.items_size(), 1);
  const v1::NodeMetrics& node = response.items(0);
  EXPECT_EQ(node.name(), "node-a");
  EXPECT_EQ(node.labels().at("zone"), "a");
  EXPECT_EQ(node.labels().at("gpu"), "yes");
  ASSERT_EQ(node.machine_size(), 4);
  std::vector<std::string> names;
  for (const v1::Window& w : node.machine()) names.push_back(w.name());
  EXPECT_THAT(names, ElementsAre("10s", "1m", "1h", "1d"));
  EXPECT_EQ(node.machine(0).duration().seconds(), 10);
  EXPECT_EQ(node.machine(3).duration().seconds(), 86400);

  // Window 2 (1h) of a series with v = 1000 (cpu) and 1000000 (memory).
  const v1::Window& hour = node.machine(2);
  EXPECT_EQ(hour.endtime().seconds(), 1795255200);
  EXPECT_EQ(hour.endtime().nanos(), 0);
  EXPECT_EQ(hour.sample_count(), 3);
  const v1::ResourceStats& cpu = hour.cpu_nanocores();
  EXPECT_EQ(cpu.min(), 1000);
  EXPECT_EQ(cpu.mean(), 1002);
  EXPECT_EQ(cpu.p50(), 1001);
  EXPECT_EQ(cpu.p95(), 1005);
  EXPECT_EQ(cpu.p99(), 1009);
  EXPECT_EQ(cpu.max(), 1012);
  EXPECT_EQ(cpu.sample_count(), 3);
  EXPECT_EQ(hour.memory_bytes().min(), 1000000);
  EXPECT_EQ(hour.memory_bytes().max(), 1000012);

  ASSERT_EQ(node.system_containers_size(), 1);
  EXPECT_EQ(node.system_containers(0).name(), "kubelet");
  ASSERT_EQ(node.system_containers(0).windows_size(), 4);
  EXPECT_EQ(node.system_containers(0).windows(0).cpu_nanocores().min(), 100);
}

TEST_F(GrpcListTest, ResourceWithoutSamplesIsLeftUnset) {
  metrics_api::PodMetrics pod = MakePod("shop", "fresh", "node-a", {}, BaseTime(), 7);
  pod.pod.cpu.clear();  // one scrape: memory only, no rate yet
  source_.PutPod(pod);
  v1::ListPodsRequest request;
  request.set_field_selector("metadata.name=fresh");
  v1::ListPodsResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->ListPods(&context, request, &response).ok());
  ASSERT_EQ(response.items_size(), 1);
  const v1::PodMetrics& item = response.items(0);
  EXPECT_EQ(item.node_name(), "node-a");
  ASSERT_EQ(item.windows_size(), 4);
  EXPECT_FALSE(item.windows(0).has_cpu_nanocores());
  EXPECT_TRUE(item.windows(0).has_memory_bytes());
  EXPECT_EQ(item.windows(0).memory_bytes().min(), 7000);
  ASSERT_EQ(item.containers_size(), 1);
  EXPECT_TRUE(item.containers(0).windows(0).has_cpu_nanocores());
}

TEST_F(GrpcListTest, ListNodesAppliesEveryLabelSelectorForm) {
  EXPECT_THAT(NodeNames("", ""), ElementsAre("node-a", "node-b", "node-c"));
  EXPECT_THAT(NodeNames("zone=a", ""), ElementsAre("node-a"));
  EXPECT_THAT(NodeNames("zone==b", ""), ElementsAre("node-b"));
  EXPECT_THAT(NodeNames("zone!=a", ""), ElementsAre("node-b", "node-c"));
  EXPECT_THAT(NodeNames("zone in (a,b)", ""), ElementsAre("node-a", "node-b"));
  EXPECT_THAT(NodeNames("zone notin (a)", ""), ElementsAre("node-b", "node-c"));
  EXPECT_THAT(NodeNames("gpu", ""), ElementsAre("node-a"));
  EXPECT_THAT(NodeNames("!zone", ""), ElementsAre("node-c"));
  EXPECT_THAT(NodeNames("zone,!gpu", ""), ElementsAre("node-b"));
}

TEST_F(GrpcListTest, ListNodesAppliesFieldSelectors) {
  EXPECT_THAT(NodeNames("", "metadata.name=node-b"), ElementsAre("node-b"));
  EXPECT_THAT(NodeNames("", "metadata.name!=node-b"), ElementsAre("node-a", "node-c"));
  EXPECT_THAT(NodeNames("zone", "metadata.name!=node-a"), ElementsAre("node-b"));
  // Nodes have no namespace: "metadata.namespace=" selects them all.
  EXPECT_THAT(NodeNames("", "metadata.namespace="), ElementsAre("node-a", "node-b", "node-c"));
}

TEST_F(GrpcListTest, ListPodsAppliesNamespaceAndSelectors) {
  EXPECT_THAT(PodNames("", "", ""),
              ElementsAre("ops/agent-1", "shop/db-1", "shop/web-1", "shop/web-2"));
  EXPECT_THAT(PodNames("shop", "", ""), ElementsAre("shop/db-1", "shop/web-1", "shop/web-2"));
  EXPECT_THAT(PodNames("shop", "app=web", ""), ElementsAre("shop/web-1", "shop/web-2"));
  EXPECT_THAT(PodNames("", "app notin (web)", ""), ElementsAre("ops/agent-1", "shop/db-1"));
  EXPECT_THAT(PodNames("", "", "spec.nodeName=node-a"), ElementsAre("ops/agent-1", "shop/web-1"));
  EXPECT_THAT(PodNames("", "", "metadata.namespace=ops"), ElementsAre("ops/agent-1"));
  EXPECT_THAT(PodNames("", "", "metadata.name=web-2"), ElementsAre("shop/web-2"));
  EXPECT_THAT(PodNames("shop", "app=web", "spec.nodeName!=node-a"), ElementsAre("shop/web-2"));
  EXPECT_THAT(PodNames("ops", "app=web", ""), ElementsAre());
}

TEST_F(GrpcListTest, ListPodsPagesWithLimitAndContinueLikeTheRestApi) {
  std::vector<std::string> names;
  std::string token;
  int pages = 0;
  do {
    v1::ListPodsRequest request;
    request.set_limit(3);
    request.set_continue_(token);
    v1::ListPodsResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->ListPods(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_LE(response.items_size(), 3);
    for (const v1::PodMetrics& pod : response.items()) {
      names.push_back(pod.namespace_() + "/" + pod.name());
    }
    token = response.continue_();
  } while (!token.empty() && ++pages < 5);
  EXPECT_EQ(pages, 1);  // two pages: the first with a token, the second without
  EXPECT_THAT(names, ElementsAre("ops/agent-1", "shop/db-1", "shop/web-1", "shop/web-2"));

  v1::ListNodesRequest bad;
  bad.set_continue_("***");
  v1::ListNodesResponse response;
  grpc::ClientContext context;
  grpc::Status status = stub_->ListNodes(&context, bad, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("continue: invalid continue token"));
}

TEST_F(GrpcListTest, BadSelectorsAreInvalidArgumentWithTheParsersMessage) {
  {
    v1::ListPodsRequest request;
    request.set_label_selector("app in (web");
    v1::ListPodsResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->ListPods(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr("label_selector: "));
    EXPECT_EQ(response.items_size(), 0);
  }
  {
    v1::ListPodsRequest request;
    request.set_field_selector("spec.restartPolicy=Always");
    v1::ListPodsResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->ListPods(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr("field label not supported: spec.restartPolicy"));
  }
  {
    // spec.nodeName is a pod field only.
    v1::ListNodesRequest request;
    request.set_field_selector("spec.nodeName=node-a");
    v1::ListNodesResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->ListNodes(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr("field label not supported: spec.nodeName"));
  }
  {
    v1::ListNodesRequest request;
    request.set_field_selector("metadata.name");
    v1::ListNodesResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->ListNodes(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr("field_selector: "));
  }
  EXPECT_EQ(Requests("ListPods", "INVALID_ARGUMENT"), 2);
  EXPECT_EQ(Requests("ListNodes", "INVALID_ARGUMENT"), 2);
}

TEST_F(GrpcListTest, WindowsFieldKeepsOnlyTheNamedWindows) {
  v1::ListPodsRequest request;
  request.add_windows("1d");
  request.add_windows("10s");
  v1::ListPodsResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->ListPods(&context, request, &response).ok());
  ASSERT_EQ(response.items_size(), 4);
  for (const v1::PodMetrics& pod : response.items()) {
    ASSERT_EQ(pod.windows_size(), 2);
    EXPECT_EQ(pod.windows(0).name(), "10s");
    EXPECT_EQ(pod.windows(1).name(), "1d");
    ASSERT_EQ(pod.containers_size(), 1);
    EXPECT_EQ(pod.containers(0).windows_size(), 2);
  }
}

TEST_F(GrpcListTest, UnknownWindowIsInvalidArgument) {
  v1::ListNodesRequest request;
  request.add_windows("5m");
  v1::ListNodesResponse response;
  grpc::ClientContext context;
  grpc::Status status = stub_->ListNodes(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("unknown window \"5m\""));
  EXPECT_THAT(status.error_message(), HasSubstr("10s, 1m, 1h, 1d"));
}

TEST_F(GrpcListTest, NotReadyIsUnavailableUntilReady) {
  source_.SetReady(false);
  {
    v1::ListNodesResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->ListNodes(&context, {}, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_THAT(status.error_message(), HasSubstr("not ready"));
  }
  {
    v1::ListPodsResponse response;
    grpc::ClientContext context;
    EXPECT_EQ(stub_->ListPods(&context, {}, &response).error_code(), grpc::StatusCode::UNAVAILABLE);
  }
  {
    v1::WatchRequest request;
    request.mutable_pods();
    grpc::ClientContext context;
    auto reader = stub_->Watch(&context, request);
    v1::WatchEvent event;
    EXPECT_FALSE(reader->Read(&event));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  }
  source_.SetReady(true);
  EXPECT_THAT(NodeNames("", ""), ElementsAre("node-a", "node-b", "node-c"));
  EXPECT_EQ(Requests("ListNodes", "UNAVAILABLE"), 1);
  EXPECT_EQ(Requests("ListPods", "UNAVAILABLE"), 1);
  EXPECT_EQ(Requests("Watch", "UNAVAILABLE"), 1);
  EXPECT_EQ(Requests("ListNodes", "OK"), 1);
}

TEST_F(GrpcListTest, ListReportsTheHubsRevisionAndTick) {
  hub_.OnRound(BaseTime());
  v1::ListNodesResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->ListNodes(&context, {}, &response).ok());
  // One change per object of the first round: 3 nodes and 4 pods.
  EXPECT_EQ(response.revision(), 7u);
  EXPECT_EQ(response.tick_time().seconds(), 1795255200);
}

TEST(AggregatorServiceOptionsTest, ValidateRejectsUnsortedOrEmptyWindows) {
  AggregatorServiceOptions options;
  EXPECT_TRUE(options.Validate().ok());
  options.windows = {std::chrono::minutes(1), std::chrono::seconds(10)};
  EXPECT_FALSE(options.Validate().ok());
  options.windows = {};
  EXPECT_FALSE(options.Validate().ok());
  options = {};
  options.watch_poll_interval = Duration::zero();
  EXPECT_FALSE(options.Validate().ok());
}

}  // namespace
}  // namespace kubestat::aggregator

namespace kubestat::aggregator {
namespace {

// The access check sees what each call reads and the caller's metadata, and its refusal ends
// the call before anything is read.
TEST(GrpcAccessTest, EveryCallIsCheckedWithWhatItReadsAndRefusalsEndIt) {
  FakeMetricsSource source;
  source.PutNode(MakeNode("node-a", {}, BaseTime(), 1000));
  source.PutPod(MakePod("shop", "web-1", "node-a", {}, BaseTime(), 100));
  WatchHub hub(&source);
  prometheus::Registry registry;
  std::mutex mu;
  std::vector<std::string> asked;
  AggregatorServiceOptions options;
  options.access_check = [&](const grpc::ServerContext& context, const GrpcAccessRequest& call) {
    std::string token;
    auto it = context.client_metadata().find("authorization");
    if (it != context.client_metadata().end()) token.assign(it->second.data(), it->second.size());
    {
      std::lock_guard<std::mutex> lock(mu);
      asked.push_back(std::string(call.verb) + " " + std::string(call.resource) + " " +
                      std::string(call.namespace_name) + " " + token);
    }
    if (token.empty()) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "Unauthorized");
    if (call.resource == "nodes") return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "no");
    return grpc::Status::OK;
  };
  AggregatorService service(&source, &hub, &registry, options);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = v1::Aggregator::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  {
    grpc::ClientContext context;
    v1::ListNodesResponse response;
    EXPECT_EQ(stub->ListNodes(&context, v1::ListNodesRequest(), &response).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(response.items_size(), 0);
  }
  {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer t");
    v1::ListNodesResponse response;
    EXPECT_EQ(stub->ListNodes(&context, v1::ListNodesRequest(), &response).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(response.items_size(), 0);
  }
  {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer t");
    v1::ListPodsRequest request;
    request.set_namespace_("shop");
    v1::ListPodsResponse response;
    EXPECT_TRUE(stub->ListPods(&context, request, &response).ok());
    EXPECT_EQ(response.items_size(), 1);
  }
  {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer t");
    v1::WatchRequest request;
    request.mutable_nodes();
    request.mutable_pods()->set_namespace_("shop");
    std::unique_ptr<grpc::ClientReader<v1::WatchEvent>> reader = stub->Watch(&context, request);
    v1::WatchEvent event;
    EXPECT_FALSE(reader->Read(&event));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
  service.Shutdown();
  server->Shutdown();
  EXPECT_EQ(asked, (std::vector<std::string>{"list nodes  ", "list nodes  Bearer t",
                                             "list pods shop Bearer t", "watch nodes  Bearer t"}));
}

}  // namespace
}  // namespace kubestat::aggregator
