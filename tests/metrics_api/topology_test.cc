// Allocatable, utilization and exclusive assignments: the node agent's document renders and
// reads back unchanged; metrics/v1alpha1 shows them with the numbers expected; metrics.k8s.io
// objects (JSON and protobuf) stay exactly as they were without them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

// cpprestsdk's U() macro collides with GoogleTest's template parameters.
#define _TURN_OFF_PLATFORM_STRING
#include <cpprest/json.h>

#include <string>
#include <vector>

#include "kubestat/core/time.h"
#include "kubestat/metrics_api/node_resources.h"
#include "kubestat/metrics_api/parse.h"
#include "kubestat/metrics_api/render.h"
#include "kubestat/metrics_api/render_protobuf.h"
#include "kubestat/testing/metrics_objects.h"

namespace kubestat::metrics_api {
namespace {

using kubestat::testing::EndTime;
using ::testing::HasSubstr;

RenderContext Ctx(GroupVersion gv) {
  return RenderContext{gv, EndTime() + std::chrono::seconds(20), 0};
}

// A node with 8 allocatable cpus, 16 GiB in two NUMA blocks, 1 GiB of 2 MiB hugepages and
// two GPUs; its machine's 10s mean is 2 cores and 4 GiB (support/metrics_objects.h: mean v,
// max 2v, 95th 3v/2).
ResourceSet Allocatable() {
  ResourceSet set;
  for (int64_t cpu = 1; cpu <= 8; ++cpu) set.cpu_ids.push_back(cpu);
  set.memory = {{"memory", uint64_t{8} << 30, {0}},
                {"memory", uint64_t{8} << 30, {1}},
                {"hugepages-2Mi", uint64_t{1} << 30, {0}}};
  set.devices = {{"nvidia.com/gpu", {"GPU-a"}, {0}}, {"nvidia.com/gpu", {"GPU-b"}, {1}}};
  return set;
}

NodeMetrics NodeWithTopology() {
  NodeMetrics node = testing::Node("node-1", {}, 2000000000, uint64_t{4} << 30);
  node.allocatable = Allocatable();
  node.pod_resources = PodResourcesStatus{"Complete", "", EndTime()};
  return node;
}

PodMetrics PodWithTopology() {
  PodMetrics pod = testing::Pod("shop", "db-0", "node-1", {}, 1000000000, 1 << 30);
  pod.containers[0].exclusive = ResourceSet{
      {2, 3}, {{"memory", uint64_t{2} << 30, {0}}}, {{"nvidia.com/gpu", {"GPU-a"}, {0}}}};
  pod.exclusive = ResourceSet{{4}, {}, {}};
  return pod;
}

TEST(NodePodResourcesTest, RendersAndReadsBackUnchanged) {
  NodePodResources doc;
  doc.node_name = "node-0001";
  doc.socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  doc.time = EndTime();
  doc.list = MethodStatus{"OK", "", EndTime(), EndTime()};
  doc.allocatable_call = MethodStatus{"Unimplemented", "unknown method GetAllocatableResources",
                                      EndTime(), std::nullopt};
  doc.allocatable = Allocatable();
  ClaimDevice claim{{"vendor.com/gpu=gpu1"}, "gpu.vendor.com", "pool", "gpu-1", "7d5c"};
  doc.pods = std::vector<PodAssignment>{
      {"db-0",
       "shop",
       ResourceSet{{4}, {}, {}},
       {{"pg", ResourceSet{{2, 3}, {{"memory", 1 << 30, {0}}}, {}}, {{"claim", "shop", {claim}}}},
        {"exporter", {}, {}}}},
      {"web-1", "shop", {}, {{"app", {}, {}}}}};
  const std::string json = RenderNodePodResources(doc);
  absl::StatusOr<NodePodResources> parsed = ParseNodePodResources(json);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, doc);
  EXPECT_EQ(RenderNodePodResources(*parsed), json);
  EXPECT_THAT(json, HasSubstr("\"size\":\"1Gi\""));
  EXPECT_THAT(json, HasSubstr("\"GetAllocatableResources\":{\"code\":\"Unimplemented\""));
  // Get was never called.
  EXPECT_THAT(json, HasSubstr("\"Get\":{\"code\":\"Pending\"}"));
  // Indented, the same document.
  absl::StatusOr<NodePodResources> pretty = ParseNodePodResources(RenderNodePodResources(doc, 2));
  ASSERT_TRUE(pretty.ok());
  EXPECT_EQ(*pretty, doc);
}

TEST(NodePodResourcesTest, NothingKnownYetLeavesAllocatableAndPodsOut) {
  NodePodResources doc;
  doc.node_name = "n";
  doc.list = MethodStatus{"Unavailable", "socket /x is not reachable", EndTime(), std::nullopt};
  const std::string json = RenderNodePodResources(doc);
  EXPECT_EQ(json.find("\"allocatable\""), std::string::npos);
  EXPECT_EQ(json.find("\"pods\""), std::string::npos);
  absl::StatusOr<NodePodResources> parsed = ParseNodePodResources(json);
  ASSERT_TRUE(parsed.ok());
  EXPECT_FALSE(parsed->allocatable.has_value());
  EXPECT_FALSE(parsed->pods.has_value());
  EXPECT_EQ(parsed->list.code, "Unavailable");
}

TEST(NodePodResourcesTest, ErrorsNameTheField) {
  const std::string head = R"({"kind":"NodePodResources",)";
  for (
      const auto& [json, field] : std::vector<std::pair<std::string, std::string>>{
          {"[]", "the document"},
          {R"({"kind":"Pod"})", "kind"},
          {head + R"("nodeName":7})", "nodeName"},
          {head + R"("time":"yesterday"})", "time"},
          {head + R"("methods":{"List":{"code":1}}})", "methods.List.code"},
          {head + R"("allocatable":{"cpuIds":["x"]}})", "allocatable.cpuIds"},
          {head + R"("allocatable":{"memory":[{"size":"-1Gi"}]}})", "allocatable.memory[0].size"},
          {head + R"("allocatable":{"memory":[{"size":"lots"}]}})", "allocatable.memory[0].size"},
          {head + R"("allocatable":{"devices":[{"deviceIds":[1]}]}})",
           "allocatable.devices[0].deviceIds"},
          {head + R"("pods":{}})", "pods"},
          {head + R"("pods":[{"containers":[{"exclusive":[]}]}]})",
           "pods[0].containers[0].exclusive"},
          {head +
               R"("pods":[{"containers":[{"dynamicResources":[{"claimResources":[{"shareId":2}]}]}]}]})",
           "pods[0].containers[0].dynamicResources[0].claimResources[0].shareId"},
          {"{", "invalid JSON"}}) {
    absl::StatusOr<NodePodResources> parsed = ParseNodePodResources(json);
    ASSERT_FALSE(parsed.ok()) << json;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(), HasSubstr(field)) << json;
  }
}

TEST(TopologyRenderTest, V1alpha1NodeShowsAllocatableUtilizationAndStatus) {
  const std::string json = *RenderNode(NodeWithTopology(), Ctx(GroupVersion::kV1alpha1));
  const web::json::value doc = web::json::value::parse(json);
  const web::json::value& allocatable = doc.at("allocatable");
  EXPECT_EQ(allocatable.at("cpu").as_string(), "8");
  EXPECT_EQ(allocatable.at("memory").as_string(), "16Gi");
  EXPECT_EQ(allocatable.at("hugepages-2Mi").as_string(), "1Gi");
  EXPECT_EQ(allocatable.at("nvidia.com/gpu").as_string(), "2");
  EXPECT_EQ(doc.at("allocatableTopology").at("cpuIds").size(), 8u);
  EXPECT_EQ(doc.at("allocatableTopology").at("devices").at(1).at("numaNodes").at(0).as_integer(),
            1);
  // 10s: mean 2 cores of 8, 4 GiB of 16; 95th 3 cores, 6 GiB; max 4 cores, 8 GiB.
  const web::json::value& tens = doc.at("utilization").at("10s");
  EXPECT_DOUBLE_EQ(tens.at("mean").at("cpu").as_double(), 0.25);
  EXPECT_DOUBLE_EQ(tens.at("mean").at("memory").as_double(), 0.25);
  EXPECT_DOUBLE_EQ(tens.at("95th").at("cpu").as_double(), 0.375);
  EXPECT_DOUBLE_EQ(tens.at("max").at("memory").as_double(), 0.5);
  EXPECT_EQ(doc.at("utilization").size(), 4u);  // every window
  EXPECT_FALSE(tens.has_field("min"));
  EXPECT_EQ(doc.at("podResources").at("state").as_string(), "Complete");
  EXPECT_EQ(doc.at("podResources").at("time").as_string(), FormatRfc3339(EndTime()));
}

TEST(TopologyRenderTest, UtilizationRoundsToFourDecimals) {
  NodeMetrics node = NodeWithTopology();
  node.allocatable->cpu_ids = {1, 2, 3};  // 2 cores of 3
  const web::json::value doc =
      web::json::value::parse(*RenderNode(node, Ctx(GroupVersion::kV1alpha1)));
  EXPECT_DOUBLE_EQ(doc.at("utilization").at("10s").at("mean").at("cpu").as_double(), 0.6667);
}

TEST(TopologyRenderTest, NodeWithoutAllocatableCpuOrMemoryHasNoUtilization) {
  NodeMetrics node = NodeWithTopology();
  node.allocatable = ResourceSet{{}, {}, {{"nvidia.com/gpu", {"GPU-a"}, {}}}};
  node.pod_resources = PodResourcesStatus{"AllocatableUnsupported", "the kubelet ...", EndTime()};
  const web::json::value doc =
      web::json::value::parse(*RenderNode(node, Ctx(GroupVersion::kV1alpha1)));
  EXPECT_FALSE(doc.at("allocatable").has_field("cpu"));
  EXPECT_FALSE(doc.has_field("utilization"));
  EXPECT_EQ(doc.at("podResources").at("message").as_string(), "the kubelet ...");
}

TEST(TopologyRenderTest, V1alpha1PodShowsExclusiveAssignments) {
  const web::json::value doc =
      web::json::value::parse(*RenderPod(PodWithTopology(), Ctx(GroupVersion::kV1alpha1)));
  const web::json::value& exclusive = doc.at("containers").at(0).at("exclusive");
  EXPECT_EQ(exclusive.at("cpuIds").at(1).as_integer(), 3);
  EXPECT_EQ(exclusive.at("memory").at(0).at("size").as_string(), "2Gi");
  EXPECT_EQ(exclusive.at("devices").at(0).at("deviceIds").at(0).as_string(), "GPU-a");
  EXPECT_EQ(doc.at("exclusive").at("cpuIds").at(0).as_integer(), 4);
}

TEST(TopologyRenderTest, V1alpha1TopologyReadsBack) {
  const NodeMetrics node = NodeWithTopology();
  const std::string json = *RenderNode(node, Ctx(GroupVersion::kV1alpha1));
  absl::StatusOr<Parsed<NodeMetrics>> parsed = ParseNodeMetrics(json);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->object, node);
  EXPECT_EQ(*RenderNode(parsed->object, Ctx(GroupVersion::kV1alpha1)), json);
  PodMetrics pod = PodWithTopology();
  const std::string pod_json = *RenderPod(pod, Ctx(GroupVersion::kV1alpha1));
  absl::StatusOr<Parsed<PodMetrics>> parsed_pod = ParsePodMetrics(pod_json);
  ASSERT_TRUE(parsed_pod.ok()) << parsed_pod.status();
  pod.node_name.clear();  // not part of the document
  EXPECT_EQ(parsed_pod->object, pod);
}

TEST(TopologyRenderTest, MetricsK8sIoObjectsKeepTheirStandardShape) {
  NodeMetrics plain_node = NodeWithTopology();
  plain_node.allocatable.reset();
  plain_node.pod_resources.reset();
  PodMetrics plain_pod = PodWithTopology();
  plain_pod.exclusive = {};
  plain_pod.containers[0].exclusive = {};
  for (GroupVersion gv : {GroupVersion::kV1, GroupVersion::kV1beta1}) {
    EXPECT_EQ(*RenderNode(NodeWithTopology(), Ctx(gv)), *RenderNode(plain_node, Ctx(gv)));
    EXPECT_EQ(*RenderPod(PodWithTopology(), Ctx(gv)), *RenderPod(plain_pod, Ctx(gv)));
    EXPECT_EQ(RenderNodeProtobuf(NodeWithTopology(), Ctx(gv)),
              RenderNodeProtobuf(plain_node, Ctx(gv)));
    EXPECT_EQ(RenderPodProtobuf(PodWithTopology(), Ctx(gv)), RenderPodProtobuf(plain_pod, Ctx(gv)));
  }
}

// A view's exclusive resources: nothing held for the many objects without any, one block
// shared by copies for those with some, and read, compared and cleared like a ResourceSet.
TEST(SharedResourceSetTest, EmptyHoldsNothingAndCopiesShareOneSet) {
  static_assert(sizeof(SharedResourceSet) < sizeof(ResourceSet));
  const SharedResourceSet none;
  EXPECT_TRUE(none.empty());
  EXPECT_TRUE(none->cpu_ids.empty());
  EXPECT_EQ(none, SharedResourceSet(ResourceSet{}));
  EXPECT_TRUE(SharedResourceSet(ResourceSet{}).empty());

  const SharedResourceSet pinned = ResourceSet{{2, 3}, {{"memory", 1 << 30, {0}}}, {}};
  EXPECT_FALSE(pinned.empty());
  const SharedResourceSet copy = pinned;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(&copy.get(), &pinned.get());
  EXPECT_EQ(copy->cpu_ids, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(pinned, SharedResourceSet(ResourceSet{{2, 3}, {{"memory", 1 << 30, {0}}}, {}}));
  EXPECT_FALSE(pinned == none);
  const ResourceSet& read = pinned;
  EXPECT_EQ(read.MemoryBytes(), uint64_t{1} << 30);

  PodMetrics pod;
  pod.exclusive = ResourceSet{{4}, {}, {}};
  EXPECT_EQ(pod.exclusive->cpu_ids, std::vector<int64_t>{4});
  pod.exclusive = {};
  EXPECT_TRUE(pod.exclusive.empty());
}

}  // namespace
}  // namespace kubestat::metrics_api
