#include "kubestat/metrics_api/parse.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "kubestat/core/time.h"
#include "kubestat/metrics_api/query.h"
#include "kubestat/metrics_api/render.h"
#include "kubestat/testing/metrics_objects.h"

namespace kubestat::metrics_api {
namespace {

using kubestat::testing::EndTime;
using kubestat::testing::MakeStandardCluster;
using kubestat::testing::StandardCluster;
using ::testing::HasSubstr;
using ::testing::StartsWith;

RenderContext Ctx(GroupVersion gv) {
  return RenderContext{gv, EndTime() + std::chrono::seconds(20), 0};
}

TEST(ParseTest, V1alpha1ObjectsReadBackToTheSameDocument) {
  const StandardCluster cluster = MakeStandardCluster();
  for (const NodeMetrics& node : cluster.nodes) {
    const std::string json = *RenderNode(node, Ctx(GroupVersion::kV1alpha1));
    absl::StatusOr<Parsed<NodeMetrics>> parsed = ParseNodeMetrics(json);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->gv, GroupVersion::kV1alpha1);
    EXPECT_EQ(*RenderNode(parsed->object, Ctx(GroupVersion::kV1alpha1)), json);
    // The standard objects keep one endtime and count per window: nothing is lost.
    EXPECT_EQ(parsed->object, node) << node.name;
  }
  for (const PodMetrics& pod : cluster.pods) {
    const std::string json = *RenderPod(pod, Ctx(GroupVersion::kV1alpha1));
    absl::StatusOr<Parsed<PodMetrics>> parsed = ParsePodMetrics(json);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*RenderPod(parsed->object, Ctx(GroupVersion::kV1alpha1)), json);
    PodMetrics expected = pod;
    expected.node_name.clear();  // not part of the document
    EXPECT_EQ(parsed->object, expected) << pod.name;
  }
}

TEST(ParseTest, MetricsK8sIoUsageReadsAsOneSampleOfTheWindow) {
  const StandardCluster cluster = MakeStandardCluster();
  for (GroupVersion gv : {GroupVersion::kV1, GroupVersion::kV1beta1}) {
    const std::string json = *RenderPod(cluster.pods[2], Ctx(gv));  // shop/web-1
    absl::StatusOr<Parsed<PodMetrics>> parsed = ParsePodMetrics(json);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->gv, gv);
    const PodMetrics& pod = parsed->object;
    EXPECT_EQ(pod.namespace_name, "shop");
    EXPECT_EQ(pod.labels, cluster.pods[2].labels);
    ASSERT_EQ(pod.containers.size(), 1u);
    ASSERT_EQ(pod.containers[0].windows.cpu.size(), 1u);
    const Statistics& cpu = pod.containers[0].windows.cpu[0];
    EXPECT_EQ(cpu.window, std::chrono::seconds(10));
    EXPECT_EQ(cpu.endtime, EndTime());
    EXPECT_EQ(cpu.count, 1u);
    EXPECT_EQ(cpu.mean, 120000000u);
    EXPECT_EQ(cpu.max, 120000000u);
    EXPECT_EQ(pod.containers[0].windows.memory[0].mean, 316669952u);
    // Rendered again in its own version, it is the same document.
    EXPECT_EQ(*RenderPod(pod, Ctx(gv)), json);
  }
  const std::string node_json = *RenderNode(cluster.nodes[1], Ctx(GroupVersion::kV1));
  absl::StatusOr<Parsed<NodeMetrics>> node = ParseNodeMetrics(node_json);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(*RenderNode(node->object, Ctx(GroupVersion::kV1)), node_json);
}

// The error of parsing `json` as a node.
std::string NodeError(const std::string& json) {
  absl::StatusOr<Parsed<NodeMetrics>> parsed = ParseNodeMetrics(json);
  EXPECT_FALSE(parsed.ok()) << json;
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(parsed.status().message());
}

constexpr char kHead[] = R"({"kind":"NodeMetrics","apiVersion":"metrics/v1alpha1",)";

TEST(ParseTest, ErrorsNameTheField) {
  EXPECT_THAT(NodeError("{"), StartsWith("invalid JSON"));
  EXPECT_EQ(NodeError("[]"), "the document must be a JSON object");
  EXPECT_EQ(NodeError(R"({"apiVersion":"metrics/v1alpha1"})"), "kind: required");
  EXPECT_EQ(NodeError(R"({"kind":"PodMetrics","apiVersion":"metrics/v1alpha1"})"),
            "kind: must be NodeMetrics, not \"PodMetrics\"");
  EXPECT_THAT(NodeError(R"({"kind":"NodeMetrics","apiVersion":"v1"})"), StartsWith("apiVersion: "));
  EXPECT_EQ(NodeError(std::string(kHead) + R"("metadata":{},"machine":{}})"),
            "metadata.name: required");
  EXPECT_EQ(NodeError(std::string(kHead) + R"("metadata":{"name":"n"}})"), "machine: required");
  EXPECT_THAT(NodeError(std::string(kHead) + R"("metadata":{"name":"n"},"machine":{"5x":{}}})"),
              StartsWith("machine[\"5x\"]: the key must be a positive duration"));
  const std::string window =
      R"("endtime":"2026-11-21T10:00:10Z","max":{},"95th":{},"min":{},"50th":{},"99th":{})";
  EXPECT_THAT(NodeError(std::string(kHead) + R"("metadata":{"name":"n"},"machine":{"1m":{)" +
                        window + R"(,"mean":{"cpu":"12q"}}}})"),
              StartsWith("machine[\"1m\"].mean.cpu: "));
  EXPECT_EQ(NodeError(std::string(kHead) + R"("metadata":{"name":"n"},"machine":{"1m":{)" + window +
                      R"(,"mean":{"memory":"-1Ki"}}}})"),
            "machine[\"1m\"].mean.memory: must not be negative");
  EXPECT_EQ(NodeError(std::string(kHead) + R"("metadata":{"name":"n"},"machine":{"1m":{)" + window +
                      R"(,"mean":{}}}, "systemContainers":[{"metrics":{}}]})"),
            "systemContainers[0].metadata: required");
  EXPECT_THAT(NodeError(std::string(kHead) + R"("metadata":{"name":"n"},"machine":{"1m":{)" +
                        R"("endtime":"yesterday","mean":{}}}})"),
              StartsWith("machine[\"1m\"].endtime: "));
  EXPECT_EQ(NodeError(std::string(kHead) + R"("metadata":{"name":"n","labels":{"a":1}},)" +
                      R"("machine":{}})"),
            "metadata.labels[a]: must be a string");
}

TEST(ParseTest, ResourceVersionsAreRenderedAndReadBack) {
  StandardCluster cluster = MakeStandardCluster();
  cluster.pods[0].resource_version = "17";
  const std::string json = *RenderPod(cluster.pods[0], Ctx(GroupVersion::kV1alpha1));
  EXPECT_THAT(json, HasSubstr(R"("namespace":"kube-system","resourceVersion":"17")"));
  absl::StatusOr<Parsed<PodMetrics>> parsed = ParsePodMetrics(json);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->object.resource_version, "17");
  std::vector<std::shared_ptr<const PodMetrics>> shared;
  for (const PodMetrics& pod : cluster.pods) shared.push_back(std::make_shared<PodMetrics>(pod));
  Page page = Select(ListQuery{}, GroupVersion::kV1, shared);
  page.resource_version = "99";
  EXPECT_THAT(RenderPodList(SharedPods(metrics_api::RefsTo(shared)), page, Ctx(GroupVersion::kV1)),
              HasSubstr(R"("metadata":{"resourceVersion":"99"},"items")"));
}

TEST(ParseTest, NamesFollowKubernetesRules) {
  const auto node = [](const std::string& name) {
    return ParseNodeMetrics(std::string(kHead) + R"("metadata":{"name":")" + name +
                            R"("},"machine":{}})");
  };
  EXPECT_TRUE(node("node-1.zone-a").ok());
  EXPECT_TRUE(node(std::string(253, 'a')).ok());
  EXPECT_THAT(std::string(node(std::string(254, 'a')).status().message()),
              StartsWith("metadata.name: Invalid value: \"aaaa"));
  EXPECT_THAT(std::string(node(std::string(254, 'a')).status().message()),
              HasSubstr("must be no more than 253 characters"));
  for (const char* bad : {"Node", "-node", "node-", "no_de", "a..b"}) {
    EXPECT_FALSE(node(bad).ok()) << bad;
  }
  absl::StatusOr<Parsed<PodMetrics>> long_namespace = ParsePodMetrics(
      R"({"kind":"PodMetrics","apiVersion":"metrics/v1alpha1","metadata":{"name":"p",)"
      R"("namespace":")" +
      std::string(64, 'n') + R"("},"pod":{}})");
  ASSERT_FALSE(long_namespace.ok());
  EXPECT_THAT(std::string(long_namespace.status().message()),
              HasSubstr("must be no more than 63 characters"));
  absl::StatusOr<Parsed<PodMetrics>> dotted_container = ParsePodMetrics(
      R"({"kind":"PodMetrics","apiVersion":"metrics/v1alpha1","metadata":{"name":"p",)"
      R"("namespace":"ns"},"pod":{},"containers":[{"metadata":{"name":"a.b"},"metrics":{}}]})");
  ASSERT_FALSE(dotted_container.ok());
  EXPECT_THAT(std::string(dotted_container.status().message()),
              StartsWith("containers[0].metadata.name: Invalid value: \"a.b\""));
}

TEST(ParseTest, PodsNeedANamespace) {
  absl::StatusOr<Parsed<PodMetrics>> parsed = ParsePodMetrics(
      R"({"kind":"PodMetrics","apiVersion":"metrics/v1alpha1","metadata":{"name":"p"},"pod":{}})");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(), "metadata.namespace: required");
}

TEST(ParseTest, UnknownFieldsAreIgnoredAndAnEmptyObjectParses) {
  absl::StatusOr<Parsed<NodeMetrics>> parsed = ParseNodeMetrics(
      std::string(kHead) + R"("metadata":{"name":"n","uid":"x"},"machine":{},"extra":[1]})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->object.name, "n");
  EXPECT_TRUE(parsed->object.machine.cpu.empty());
  EXPECT_THAT(*RenderNode(parsed->object, Ctx(GroupVersion::kV1alpha1)),
              HasSubstr(R"("machine":{},"systemContainers":[])"));
}

}  // namespace
}  // namespace kubestat::metrics_api
