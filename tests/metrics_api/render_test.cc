#include "kubestat/metrics_api/render.h"

// cpprestsdk's U() macro collides with GoogleTest's template parameters.
#define _TURN_OFF_PLATFORM_STRING

#include <cpprest/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kubestat/apimachinery/label_selector.h"
#include "kubestat/apimachinery/quantity.h"
#include "kubestat/core/time.h"
#include "kubestat/metrics_api/discovery.h"
#include "kubestat/metrics_api/query.h"
#include "kubestat/testing/fixtures.h"
#include "kubestat/testing/metrics_objects.h"

namespace kubestat::metrics_api {
namespace {

using kubestat::testing::EndTime;
using kubestat::testing::MakeStandardCluster;
using kubestat::testing::StandardCluster;
using kubestat::testing::Window;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

Timestamp Now() { return EndTime() + seconds(20); }  // 2026-11-21T10:00:30Z

RenderContext Beta(int indent = 0) { return RenderContext{GroupVersion::kV1beta1, Now(), indent}; }
RenderContext V1(int indent = 0) { return RenderContext{GroupVersion::kV1, Now(), indent}; }
RenderContext Alpha(int indent = 0) {
  return RenderContext{GroupVersion::kV1alpha1, Now(), indent};
}

web::json::value Parse(const std::string& text) { return web::json::value::parse(text); }

// `text` with every "metrics.k8s.io/v1beta1" made "metrics.k8s.io/v1".
std::string BetaToV1(std::string text) {
  const std::string beta = "\"metrics.k8s.io/v1beta1\"";
  for (size_t at = text.find(beta); at != std::string::npos; at = text.find(beta, at)) {
    text.replace(at, beta.size(), "\"metrics.k8s.io/v1\"");
  }
  return text;
}

// "namespace/name" (or "name") of every item of a rendered list.
std::vector<std::string> ItemNames(const std::string& list) {
  std::vector<std::string> names;
  web::json::value doc = Parse(list);
  for (const web::json::value& item : doc.at("items").as_array()) {
    const web::json::value& meta = item.at("metadata");
    std::string name = meta.at("name").as_string();
    if (meta.has_field("namespace")) name = meta.at("namespace").as_string() + "/" + name;
    names.push_back(name);
  }
  return names;
}

ListQuery Query(const std::string& query_string, Resource resource) {
  absl::StatusOr<ListQuery> query = ParseListQuery(ParseQueryString(query_string), resource, "");
  EXPECT_TRUE(query.ok()) << query_string << ": " << query.status();
  return query.ok() ? *query : ListQuery{};
}

// The objects of `cluster` as shared pointers, as a snapshot holds them.
struct Shared {
  std::vector<std::shared_ptr<const NodeMetrics>> nodes;
  std::vector<std::shared_ptr<const PodMetrics>> pods;
};
Shared Share(const StandardCluster& cluster) {
  Shared out;
  for (const NodeMetrics& n : cluster.nodes) out.nodes.push_back(std::make_shared<NodeMetrics>(n));
  for (const PodMetrics& p : cluster.pods) out.pods.push_back(std::make_shared<PodMetrics>(p));
  return out;
}

std::vector<PodMetrics> PodsOf(const std::vector<PodMetrics>& pods, std::string_view ns) {
  std::vector<PodMetrics> out;
  for (const PodMetrics& pod : pods) {
    if (pod.namespace_name == ns) out.push_back(pod);
  }
  return out;
}

class RenderTest : public ::testing::Test {
 protected:
  std::vector<std::string> PodNames(const std::string& query_string) {
    return ItemNames(RenderPodList(source_.pods, Query(query_string, Resource::kPods), Beta()));
  }
  std::vector<std::string> NodeNames(const std::string& query_string,
                                     GroupVersion api = GroupVersion::kV1alpha1) {
    return ItemNames(RenderNodeList(source_.nodes, Query(query_string, Resource::kNodes),
                                    RenderContext{api, Now(), 0}));
  }

  StandardCluster source_ = MakeStandardCluster();
};

TEST_F(RenderTest, V1beta1NodeIsExactlyMetricsServerShapeWithCanonicalQuantities) {
  std::optional<std::string> json = RenderNode(source_.nodes[0], Beta());
  ASSERT_TRUE(json.has_value());
  EXPECT_EQ(*json, R"({"kind":"NodeMetrics","apiVersion":"metrics.k8s.io/v1beta1",)"
                   R"("metadata":{"name":"node-1","creationTimestamp":"2026-11-21T10:00:30Z",)"
                   R"("labels":{"role":"worker","zone":"a"}},)"
                   R"("timestamp":"2026-11-21T10:00:10Z","window":"10s",)"
                   R"("usage":{"cpu":"120m","memory":"302Mi"}})");
}

TEST_F(RenderTest, V1NodeIsTheV1beta1NodeUnderV1) {
  std::optional<std::string> json = RenderNode(source_.nodes[0], V1());
  ASSERT_TRUE(json.has_value());
  EXPECT_EQ(*json, R"({"kind":"NodeMetrics","apiVersion":"metrics.k8s.io/v1",)"
                   R"("metadata":{"name":"node-1","creationTimestamp":"2026-11-21T10:00:30Z",)"
                   R"("labels":{"role":"worker","zone":"a"}},)"
                   R"("timestamp":"2026-11-21T10:00:10Z","window":"10s",)"
                   R"("usage":{"cpu":"120m","memory":"302Mi"}})");
  EXPECT_EQ(*json, BetaToV1(*RenderNode(source_.nodes[0], Beta())));
  EXPECT_EQ(*RenderNode(source_.nodes[1], V1(2)), BetaToV1(*RenderNode(source_.nodes[1], Beta(2))));
}

TEST_F(RenderTest, V1PodIsTheV1beta1PodUnderV1) {
  std::optional<std::string> json = RenderPod(source_.pods[2], V1());
  ASSERT_TRUE(json.has_value());
  EXPECT_EQ(*json, R"({"kind":"PodMetrics","apiVersion":"metrics.k8s.io/v1",)"
                   R"("metadata":{"name":"web-1","namespace":"shop",)"
                   R"("creationTimestamp":"2026-11-21T10:00:30Z",)"
                   R"("labels":{"app":"web","tier":"frontend"}},)"
                   R"("timestamp":"2026-11-21T10:00:10Z","window":"10s",)"
                   R"("containers":[{"name":"app","usage":{"cpu":"120m","memory":"302Mi"}}]})");
  for (const PodMetrics& pod : source_.pods) {
    EXPECT_EQ(*RenderPod(pod, V1()), BetaToV1(*RenderPod(pod, Beta()))) << pod.name;
  }
}

TEST_F(RenderTest, V1ListsAreTheV1beta1ListsUnderV1) {
  const std::string nodes = RenderNodeList(source_.nodes, ListQuery{}, V1());
  EXPECT_EQ(nodes, BetaToV1(RenderNodeList(source_.nodes, ListQuery{}, Beta())));
  EXPECT_THAT(nodes, StartsWith(R"({"kind":"NodeMetricsList","apiVersion":"metrics.k8s.io/v1",)"
                                R"("metadata":{},"items":[{"metadata":{"name":"node-1",)"));
  EXPECT_THAT(ItemNames(nodes), ElementsAre("node-1", "node-2"));  // node-3 has no memory
  const ListQuery web = Query("labelSelector=app%3Dweb", Resource::kPods);
  const std::string pods = RenderPodList(source_.pods, web, V1(2));
  EXPECT_EQ(pods, BetaToV1(RenderPodList(source_.pods, web, Beta(2))));
  EXPECT_EQ(Parse(pods).at("apiVersion").as_string(), "metrics.k8s.io/v1");
  EXPECT_THAT(ItemNames(pods), ElementsAre("shop/web-1", "shop/web-2"));
}

TEST_F(RenderTest, VersionNamesOfEachApi) {
  EXPECT_EQ(GroupName(GroupVersion::kV1), "metrics.k8s.io");
  EXPECT_EQ(VersionName(GroupVersion::kV1), "v1");
  EXPECT_EQ(ApiVersion(GroupVersion::kV1), "metrics.k8s.io/v1");
  EXPECT_EQ(GroupName(GroupVersion::kV1beta1), "metrics.k8s.io");
  EXPECT_EQ(VersionName(GroupVersion::kV1beta1), "v1beta1");
  EXPECT_EQ(ApiVersion(GroupVersion::kV1beta1), "metrics.k8s.io/v1beta1");
  EXPECT_EQ(GroupName(GroupVersion::kV1alpha1), "metrics");
  EXPECT_EQ(VersionName(GroupVersion::kV1alpha1), "v1alpha1");
  EXPECT_EQ(ApiVersion(GroupVersion::kV1alpha1), "metrics/v1alpha1");
  EXPECT_TRUE(IsMetricsK8sIo(GroupVersion::kV1));
  EXPECT_TRUE(IsMetricsK8sIo(GroupVersion::kV1beta1));
  EXPECT_FALSE(IsMetricsK8sIo(GroupVersion::kV1alpha1));
  EXPECT_THAT(GroupVersions(GroupVersion::kV1beta1),
              ElementsAre(GroupVersion::kV1, GroupVersion::kV1beta1));
  EXPECT_THAT(GroupVersions(GroupVersion::kV1),
              ElementsAre(GroupVersion::kV1, GroupVersion::kV1beta1));
  EXPECT_THAT(GroupVersions(GroupVersion::kV1alpha1), ElementsAre(GroupVersion::kV1alpha1));
}

TEST_F(RenderTest, ListsOverSharedViewsRenderTheSameBytesAsOverValues) {
  // The REST handler renders a snapshot's shared views; tests elsewhere render values.
  const Shared cut = Share(source_);
  ASSERT_EQ(cut.nodes.size(), source_.nodes.size());
  for (GroupVersion api : {GroupVersion::kV1, GroupVersion::kV1beta1, GroupVersion::kV1alpha1}) {
    const RenderContext ctx{api, Now(), 2};
    for (const char* q : {"", "labelSelector=zone%3Da", "fieldSelector=metadata.name%3Dnode-2"}) {
      const ListQuery nodes = Query(q, Resource::kNodes);
      EXPECT_EQ(RenderNodeList(SharedNodes(cut.nodes), nodes, ctx),
                RenderNodeList(source_.nodes, nodes, ctx))
          << q;
    }
    for (const char* q : {"", "labelSelector=app%3Dweb", "fieldSelector=spec.nodeName%3Dnode-1"}) {
      const ListQuery pods = Query(q, Resource::kPods);
      const std::string shared =
          RenderPodList(SharedPods(metrics_api::RefsTo(cut.pods)), pods, ctx);
      EXPECT_EQ(shared, RenderPodList(source_.pods, pods, ctx)) << q;
      EXPECT_NE(ItemNames(shared).size(), 0u) << q;
    }
  }
}

TEST_F(RenderTest, V1beta1PodIsExactlyMetricsServerShape) {
  std::optional<std::string> json = RenderPod(source_.pods[2], Beta());
  ASSERT_TRUE(json.has_value());
  EXPECT_EQ(*json, R"({"kind":"PodMetrics","apiVersion":"metrics.k8s.io/v1beta1",)"
                   R"("metadata":{"name":"web-1","namespace":"shop",)"
                   R"("creationTimestamp":"2026-11-21T10:00:30Z",)"
                   R"("labels":{"app":"web","tier":"frontend"}},)"
                   R"("timestamp":"2026-11-21T10:00:10Z","window":"10s",)"
                   R"("containers":[{"name":"app","usage":{"cpu":"120m","memory":"302Mi"}}]})");
}

TEST_F(RenderTest, V1beta1MatchesTheFieldsOfTheCapturedMetricsServerObjects) {
  KUBESTAT_REQUIRE_FIXTURES();
  const web::json::value node_fixture = Parse(kubestat::testing::ReadFixture(
      "metrics-k8s-io/k8s-website_resource-metrics-pipeline_NodeMetrics_minikube.json"));
  const web::json::value pod_fixture = Parse(kubestat::testing::ReadFixture(
      "metrics-k8s-io/k8s-website_resource-metrics-pipeline_PodMetrics_kube-scheduler-"
      "minikube.json"));
  const web::json::value node = Parse(*RenderNode(source_.nodes[0], Beta()));
  const web::json::value pod = Parse(*RenderPod(source_.pods[2], Beta()));
  // Every field the real objects carry (selfLink is deprecated and left out), same types.
  for (const auto& [key, value] : node_fixture.as_object()) {
    if (key == "metadata") continue;
    ASSERT_TRUE(node.has_field(key)) << key;
    EXPECT_EQ(node.at(key).type(), value.type()) << key;
  }
  EXPECT_EQ(node.at("kind"), node_fixture.at("kind"));
  EXPECT_EQ(node.at("apiVersion"), node_fixture.at("apiVersion"));
  EXPECT_TRUE(node.at("usage").has_field("cpu"));
  EXPECT_TRUE(node.at("usage").has_field("memory"));
  for (const auto& [key, value] : pod_fixture.as_object()) {
    if (key == "metadata") continue;
    ASSERT_TRUE(pod.has_field(key)) << key;
    EXPECT_EQ(pod.at(key).type(), value.type()) << key;
  }
  const web::json::value& container = pod.at("containers").as_array().at(0);
  for (const auto& [key, value] : pod_fixture.at("containers").as_array().at(0).as_object()) {
    ASSERT_TRUE(container.has_field(key)) << key;
  }
  for (const char* key : {"name", "namespace", "creationTimestamp"}) {
    EXPECT_TRUE(pod.at("metadata").has_field(key)) << key;
  }
}

TEST_F(RenderTest, V1alpha1NodeHasEveryWindowAndStatisticExactly) {
  NodeMetrics node;
  node.name = "node-1";
  node.labels = {{"role", "worker"}};
  node.machine.cpu = {
      Window(seconds(10), 3, 120000000, 250000000, 240000000, 100000000, 110000000, 250000000),
      Window(minutes(1), 9, 60000000, 60000000, 60000000, 60000000, 60000000, 60000000),
  };
  node.machine.memory = {Window(seconds(10), 4, 316669952, 1073741824, 536870912, 1000, 316670976,
                                1073741824, EndTime() + seconds(2))};
  ContainerMetrics kubelet{"kubelet", {}};
  kubelet.windows.memory = {
      Window(seconds(10), 2, 10485760, 10485760, 10485760, 10485760, 10485760, 10485760)};
  node.system_containers.push_back(kubelet);

  std::optional<std::string> json = RenderNode(node, Alpha());
  ASSERT_TRUE(json.has_value());
  EXPECT_EQ(*json,
            R"({"kind":"NodeMetrics","apiVersion":"metrics/v1alpha1",)"
            R"("metadata":{"name":"node-1","labels":{"role":"worker"}},)"
            R"("machine":{"10s":{"endtime":"2026-11-21T10:00:12Z",)"
            R"("mean":{"cpu":"120m","memory":"302Mi"},"max":{"cpu":"250m","memory":"1Gi"},)"
            R"("95th":{"cpu":"240m","memory":"512Mi"},"min":{"cpu":"100m","memory":"1k"},)"
            R"("50th":{"cpu":"110m","memory":"309249Ki"},"99th":{"cpu":"250m","memory":"1Gi"},)"
            R"("count":4},)"
            R"("1m":{"endtime":"2026-11-21T10:00:10Z","mean":{"cpu":"60m"},"max":{"cpu":"60m"},)"
            R"("95th":{"cpu":"60m"},"min":{"cpu":"60m"},"50th":{"cpu":"60m"},"99th":{"cpu":"60m"},)"
            R"("count":9}},)"
            R"("systemContainers":[{"metadata":{"name":"kubelet"},"metrics":{"10s":{)"
            R"("endtime":"2026-11-21T10:00:10Z","mean":{"memory":"10Mi"},"max":{"memory":"10Mi"},)"
            R"("95th":{"memory":"10Mi"},"min":{"memory":"10Mi"},"50th":{"memory":"10Mi"},)"
            R"("99th":{"memory":"10Mi"},"count":2}}}]})");
}

TEST_F(RenderTest, V1alpha1PodHasItsOwnWindowsUnderPodAndItsContainers) {
  PodMetrics pod;
  pod.name = "web-1";
  pod.namespace_name = "shop";
  pod.labels = {{"app", "web"}};
  pod.pod.cpu = {Window(seconds(10), 2, 1500000000, 2000000000, 2000000000, 1000000000, 1000000000,
                        2000000000)};
  pod.pod.memory = {Window(seconds(10), 3, 2147483648, 2147483648, 2147483648, 2147483648,
                           2147483648, 2147483648)};
  pod.containers.push_back(ContainerMetrics{"app", pod.pod});

  std::optional<std::string> json = RenderPod(pod, Alpha());
  ASSERT_TRUE(json.has_value());
  const std::string windows =
      R"({"10s":{"endtime":"2026-11-21T10:00:10Z","mean":{"cpu":"1500m","memory":"2Gi"},)"
      R"("max":{"cpu":"2","memory":"2Gi"},"95th":{"cpu":"2","memory":"2Gi"},)"
      R"("min":{"cpu":"1","memory":"2Gi"},"50th":{"cpu":"1","memory":"2Gi"},)"
      R"("99th":{"cpu":"2","memory":"2Gi"},"count":3}})";
  EXPECT_EQ(*json, R"({"kind":"PodMetrics","apiVersion":"metrics/v1alpha1",)"
                   R"("metadata":{"name":"web-1","namespace":"shop","labels":{"app":"web"}},)"
                   R"("pod":)" +
                       windows + R"(,"containers":[{"metadata":{"name":"app"},"metrics":)" +
                       windows + "}]}");
}

TEST_F(RenderTest, V1alpha1WindowsAreKeyedByLengthInAscendingOrder) {
  const std::string json = *RenderNode(source_.nodes[0], Alpha());
  const size_t machine = json.find("\"machine\":");
  const size_t w10s = json.find("\"10s\":", machine);
  const size_t w1m = json.find("\"1m\":", machine);
  const size_t w1h = json.find("\"1h\":", machine);
  const size_t w1d = json.find("\"1d\":", machine);
  const size_t system = json.find("\"systemContainers\":");
  ASSERT_NE(machine, std::string::npos);
  EXPECT_LT(w10s, w1m);
  EXPECT_LT(w1m, w1h);
  EXPECT_LT(w1h, w1d);
  EXPECT_LT(w1d, system);
  web::json::value node = Parse(json);
  EXPECT_EQ(node.at("machine").size(), 4u);
  EXPECT_EQ(node.at("machine").at("1d").at("count").as_integer(), 5);
  EXPECT_EQ(node.at("machine").at("1h").at("95th").at("cpu").as_string(), "180m");
}

TEST_F(RenderTest, ListsHaveKindApiVersionEmptyMetadataAndItemsWithoutKind) {
  const std::string beta = RenderNodeList(source_.nodes, ListQuery{}, Beta());
  web::json::value doc = Parse(beta);
  EXPECT_EQ(doc.at("kind").as_string(), "NodeMetricsList");
  EXPECT_EQ(doc.at("apiVersion").as_string(), "metrics.k8s.io/v1beta1");
  EXPECT_EQ(doc.at("metadata").serialize(), "{}");
  ASSERT_EQ(doc.at("items").size(), 2u);  // node-3 has no memory: not served by v1beta1
  EXPECT_FALSE(doc.at("items").at(0).has_field("kind"));
  EXPECT_EQ(doc.at("items").at(1).at("usage").at("cpu").as_string(), "1500m");
  EXPECT_EQ(doc.at("items").at(1).at("usage").at("memory").as_string(), "2Gi");

  web::json::value alpha = Parse(RenderPodList(PodsOf(source_.pods, "shop"), ListQuery{}, Alpha()));
  EXPECT_EQ(alpha.at("kind").as_string(), "PodMetricsList");
  EXPECT_EQ(alpha.at("apiVersion").as_string(), "metrics/v1alpha1");
  EXPECT_EQ(alpha.at("items").size(), 3u);
  EXPECT_EQ(
      Parse(RenderNodeList(std::span<const NodeMetrics>(), ListQuery{}, Beta())).at("items").size(),
      0u);
}

TEST_F(RenderTest, V1alpha1ServesANodeWithOneResourceLeavingTheOtherOut) {
  EXPECT_THAT(NodeNames(""), ElementsAre("node-1", "node-2", "node-3"));
  EXPECT_FALSE(RenderNode(source_.nodes[2], Beta()).has_value());
  EXPECT_FALSE(RenderNode(source_.nodes[2], V1()).has_value());
  web::json::value node = Parse(*RenderNode(source_.nodes[2], Alpha()));
  EXPECT_EQ(node.at("machine").at("10s").at("mean").serialize(), R"({"cpu":"5m"})");
}

TEST_F(RenderTest, V1beta1LeavesOutPodsWithoutContainerUsage) {
  source_.pods[0].containers.clear();
  source_.pods[1].containers[0].windows.cpu.clear();
  EXPECT_FALSE(RenderPod(source_.pods[0], Beta()).has_value());
  EXPECT_FALSE(RenderPod(source_.pods[1], Beta()).has_value());
  EXPECT_FALSE(RenderPod(source_.pods[0], V1()).has_value());
  EXPECT_FALSE(RenderPod(source_.pods[1], V1()).has_value());
  EXPECT_THAT(PodNames(""), ElementsAre("shop/web-1", "shop/web-2"));
}

TEST_F(RenderTest, PodTimestampIsTheNewestContainerWindowEnd) {
  PodMetrics pod = source_.pods[2];
  ContainerMetrics sidecar = pod.containers[0];
  sidecar.name = "sidecar";
  sidecar.windows.memory[0].endtime = EndTime() + seconds(5);
  pod.containers.push_back(sidecar);
  web::json::value json = Parse(*RenderPod(pod, Beta()));
  EXPECT_EQ(json.at("timestamp").as_string(), "2026-11-21T10:00:15Z");
  EXPECT_EQ(json.at("containers").size(), 2u);
}

TEST_F(RenderTest, LabelSelectorEqualityForms) {
  EXPECT_THAT(PodNames("labelSelector=app%3Dweb"), ElementsAre("shop/web-1", "shop/web-2"));
  EXPECT_THAT(PodNames("labelSelector=app%3D%3Dweb"), ElementsAre("shop/web-1", "shop/web-2"));
  // != also matches objects without the label.
  EXPECT_THAT(PodNames("labelSelector=app!%3Dweb"),
              ElementsAre("kube-system/coredns-1", "shop/db-0"));
}

TEST_F(RenderTest, LabelSelectorSetForms) {
  EXPECT_THAT(PodNames("labelSelector=app+in+(web,db)"),
              ElementsAre("shop/db-0", "shop/web-1", "shop/web-2"));
  EXPECT_THAT(PodNames("labelSelector=app%20notin%20(web)"),
              ElementsAre("kube-system/coredns-1", "shop/db-0"));
}

TEST_F(RenderTest, LabelSelectorExistenceForms) {
  EXPECT_THAT(PodNames("labelSelector=tier"), ElementsAre("shop/db-0", "shop/web-1"));
  EXPECT_THAT(PodNames("labelSelector=!tier"), ElementsAre("kube-system/coredns-1", "shop/web-2"));
  EXPECT_THAT(PodNames("labelSelector=app,!tier"), ElementsAre("shop/web-2"));
  EXPECT_THAT(NodeNames("labelSelector=role%3Dworker"), ElementsAre("node-1", "node-3"));
}

TEST_F(RenderTest, FieldSelectorsOnPods) {
  EXPECT_THAT(PodNames("fieldSelector=metadata.name%3Dweb-1"), ElementsAre("shop/web-1"));
  EXPECT_THAT(PodNames("fieldSelector=metadata.namespace%3Dkube-system"),
              ElementsAre("kube-system/coredns-1"));
  EXPECT_THAT(PodNames("fieldSelector=spec.nodeName%3Dnode-2"),
              ElementsAre("kube-system/coredns-1", "shop/web-2"));
  EXPECT_THAT(PodNames("fieldSelector=spec.nodeName!%3Dnode-2"),
              ElementsAre("shop/db-0", "shop/web-1"));
  EXPECT_THAT(PodNames("fieldSelector=spec.nodeName%3Dnode-1&labelSelector=app%3Dweb"),
              ElementsAre("shop/web-1"));
}

TEST_F(RenderTest, FieldSelectorsOnNodes) {
  EXPECT_THAT(NodeNames("fieldSelector=metadata.name%3Dnode-2"), ElementsAre("node-2"));
  EXPECT_THAT(NodeNames("fieldSelector=metadata.name!%3Dnode-2"), ElementsAre("node-1", "node-3"));
  // Nodes have no namespace: it reads as "".
  EXPECT_THAT(NodeNames("fieldSelector=metadata.namespace%3D"),
              ElementsAre("node-1", "node-2", "node-3"));
  EXPECT_THAT(NodeNames("fieldSelector=metadata.namespace%3Dshop"), ElementsAre());
}

TEST_F(RenderTest, BadLabelSelectorGivesTheParsersMessage) {
  absl::StatusOr<ListQuery> query =
      ParseListQuery(ParseQueryString("labelSelector=app+in+(web"), Resource::kPods, "");
  ASSERT_FALSE(query.ok());
  EXPECT_EQ(query.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(query.status().message(), LabelSelector::Parse("app in (web").status().message());
  EXPECT_FALSE(query.status().message().empty());
}

TEST_F(RenderTest, UnsupportedFieldLabelIsRejected) {
  absl::StatusOr<ListQuery> pods =
      ParseListQuery(ParseQueryString("fieldSelector=status.phase%3DRunning"), Resource::kPods, "");
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.status().message(), "field label not supported: status.phase");
  // spec.nodeName exists for pods only.
  absl::StatusOr<ListQuery> nodes =
      ParseListQuery(ParseQueryString("fieldSelector=spec.nodeName%3Dx"), Resource::kNodes, "");
  ASSERT_FALSE(nodes.ok());
  EXPECT_EQ(nodes.status().message(), "field label not supported: spec.nodeName");
  absl::StatusOr<ListQuery> bad =
      ParseListQuery(ParseQueryString("fieldSelector=nonsense"), Resource::kPods, "");
  EXPECT_FALSE(bad.ok());
}

TEST_F(RenderTest, QueryStringDecodingFollowsGo) {
  QueryParams params = ParseQueryString("a=x%20y+z&b=%zz&a=second&&c&pretty=1");
  EXPECT_EQ(params.at("a"), "x y z");  // the first value wins
  EXPECT_EQ(params.at("b"), "%zz");    // a malformed escape is kept
  EXPECT_EQ(params.at("c"), "");
  EXPECT_TRUE(PrettyRequested(params));
  EXPECT_TRUE(PrettyRequested(ParseQueryString("pretty=true")));
  EXPECT_TRUE(PrettyRequested(ParseQueryString("pretty")));
  EXPECT_TRUE(PrettyRequested(ParseQueryString("labelSelector=app%3Dweb&pretty")));
  EXPECT_TRUE(PrettyRequested(ParseQueryString("pretty=T")));
  EXPECT_FALSE(PrettyRequested(ParseQueryString("pretty=false")));
  EXPECT_FALSE(PrettyRequested(ParseQueryString("pretty=0")));
  EXPECT_FALSE(PrettyRequested(ParseQueryString("")));
  EXPECT_FALSE(PrettyRequested(ParseQueryString("")));
}

TEST_F(RenderTest, PrettyOutputIsIndentedAndEquivalent) {
  const std::string pretty = *RenderNode(source_.nodes[0], Beta(2));
  const std::string compact = *RenderNode(source_.nodes[0], Beta());
  EXPECT_THAT(pretty, HasSubstr("{\n  \"kind\": \"NodeMetrics\",\n  \"apiVersion\""));
  EXPECT_THAT(pretty, HasSubstr("\n    \"cpu\": \"120m\""));
  EXPECT_EQ(Parse(pretty), Parse(compact));
}

TEST_F(RenderTest, ApiResourceListMatchesTheCapturedDiscoveryDocument) {
  KUBESTAT_REQUIRE_FIXTURES();
  const web::json::value fixture = Parse(kubestat::testing::ReadFixture(
      "metrics-k8s-io/keda-issue-210_APIResourceList_metrics.k8s.io-v1beta1.json"));
  const web::json::value ours = Parse(RenderApiResourceList(GroupVersion::kV1beta1, 0));
  ASSERT_EQ(ours.size(), fixture.size());
  for (const auto& [key, value] : fixture.as_object()) {
    ASSERT_TRUE(ours.has_field(key)) << key;
    if (key != "resources") {
      EXPECT_EQ(ours.at(key), value) << key;
    }
  }
  const web::json::array& expected = fixture.at("resources").as_array();
  const web::json::array& actual = ours.at("resources").as_array();
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(actual.at(i).size(), expected.at(i).size()) << i;
    for (const auto& [key, value] : expected.at(i).as_object()) {
      EXPECT_EQ(actual.at(i).at(key), value) << "resources[" << i << "]." << key;
    }
  }
  // v1 and v1alpha1 are the same list under their own group versions.
  EXPECT_EQ(RenderApiResourceList(GroupVersion::kV1, 0),
            R"({"kind":"APIResourceList","apiVersion":"v1","groupVersion":"metrics.k8s.io/v1",)"
            R"("resources":[{"name":"nodes","singularName":"","namespaced":false,)"
            R"("kind":"NodeMetrics","verbs":["get","list"]},)"
            R"({"name":"pods","singularName":"","namespaced":true,"kind":"PodMetrics",)"
            R"("verbs":["get","list"]}]})");
  web::json::value v1 = Parse(RenderApiResourceList(GroupVersion::kV1, 0));
  v1["groupVersion"] = fixture.at("groupVersion");
  EXPECT_EQ(v1, fixture);
  web::json::value alpha = Parse(RenderApiResourceList(GroupVersion::kV1alpha1, 0));
  EXPECT_EQ(alpha.at("groupVersion").as_string(), "metrics/v1alpha1");
  EXPECT_EQ(alpha.at("resources"), fixture.at("resources"));
}

TEST_F(RenderTest, GroupDocumentsNameBothGroupsWithV1Preferred) {
  EXPECT_EQ(RenderApiGroupList(0),
            R"({"kind":"APIGroupList","apiVersion":"v1","groups":[)"
            R"({"name":"metrics.k8s.io","versions":[)"
            R"({"groupVersion":"metrics.k8s.io/v1","version":"v1"},)"
            R"({"groupVersion":"metrics.k8s.io/v1beta1","version":"v1beta1"}],)"
            R"("preferredVersion":{"groupVersion":"metrics.k8s.io/v1","version":"v1"}},)"
            R"({"name":"metrics","versions":[{"groupVersion":"metrics/v1alpha1",)"
            R"("version":"v1alpha1"}],"preferredVersion":{"groupVersion":"metrics/v1alpha1",)"
            R"("version":"v1alpha1"}}]})");
  // The group's document is the same whichever of its versions names it.
  const std::string metrics_k8s_io =
      R"({"kind":"APIGroup","apiVersion":"v1","name":"metrics.k8s.io","versions":[)"
      R"({"groupVersion":"metrics.k8s.io/v1","version":"v1"},)"
      R"({"groupVersion":"metrics.k8s.io/v1beta1","version":"v1beta1"}],)"
      R"("preferredVersion":{"groupVersion":"metrics.k8s.io/v1","version":"v1"}})";
  EXPECT_EQ(RenderApiGroup(GroupVersion::kV1, 0), metrics_k8s_io);
  EXPECT_EQ(RenderApiGroup(GroupVersion::kV1beta1, 0), metrics_k8s_io);
  web::json::value group = Parse(RenderApiGroup(GroupVersion::kV1alpha1, 0));
  EXPECT_EQ(group.at("kind").as_string(), "APIGroup");
  EXPECT_EQ(group.at("name").as_string(), "metrics");
  EXPECT_EQ(group.at("preferredVersion").at("version").as_string(), "v1alpha1");
  web::json::value versions = Parse(RenderApiVersions(0));
  EXPECT_EQ(versions.at("kind").as_string(), "APIVersions");
  EXPECT_EQ(versions.at("versions").size(), 0u);
}

TEST_F(RenderTest, QuantitiesBeyondInt64AreClampedNotWrapped) {
  NodeMetrics node = source_.nodes[0];
  node.machine.memory[0].mean = UINT64_MAX;
  web::json::value json = Parse(*RenderNode(node, Beta()));
  EXPECT_EQ(json.at("usage").at("memory").as_string(), FormatMemoryBytes(INT64_MAX));
}

}  // namespace
}  // namespace kubestat::metrics_api
