#include "kubestat/metrics_api/render_protobuf.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "k8s/apimachinery/pkg/runtime/generated.pb.h"
#include "k8s/metrics/pkg/apis/metrics/v1beta1/generated.pb.h"
#include "kubestat/apimachinery/quantity.h"
#include "kubestat/core/time.h"
#include "kubestat/metrics_api/render.h"
#include "kubestat/testing/metrics_encodings.h"
#include "kubestat/testing/metrics_objects.h"

namespace kubestat::metrics_api {
namespace {

namespace metrics = k8s::io::metrics::pkg::apis::metrics::v1beta1;
namespace runtime = k8s::io::apimachinery::pkg::runtime;

using kubestat::testing::EndTime;
using kubestat::testing::MakeStandardCluster;
using kubestat::testing::Shown;
using kubestat::testing::ShownFromJson;
using kubestat::testing::ShownFromProtobuf;
using kubestat::testing::StandardCluster;
using std::chrono::milliseconds;
using std::chrono::seconds;

Timestamp Now() { return EndTime() + seconds(20); }

RenderContext Beta() { return RenderContext{GroupVersion::kV1beta1, Now(), 0}; }
RenderContext V1() { return RenderContext{GroupVersion::kV1, Now(), 0}; }

int64_t UnixSeconds(Timestamp t) {
  return std::chrono::duration_cast<seconds>(t.time_since_epoch()).count();
}

// The Unknown of a body, after checking the magic.
runtime::Unknown Envelope(const std::string& body) {
  runtime::Unknown unknown;
  EXPECT_EQ(body.substr(0, 4), std::string("k8s\0", 4));
  EXPECT_TRUE(unknown.ParseFromArray(body.data() + 4, static_cast<int>(body.size() - 4)));
  return unknown;
}

ListQuery Query(const std::string& query_string, Resource resource) {
  absl::StatusOr<ListQuery> query = ParseListQuery(ParseQueryString(query_string), resource, "");
  EXPECT_TRUE(query.ok()) << query_string << ": " << query.status();
  return query.ok() ? *query : ListQuery{};
}

Shown FromProtobuf(const std::string& body) {
  absl::StatusOr<Shown> shown = ShownFromProtobuf(body);
  EXPECT_TRUE(shown.ok()) << shown.status();
  return shown.ok() ? *shown : Shown{};
}

Shown FromJson(const std::string& body) {
  absl::StatusOr<Shown> shown = ShownFromJson(body);
  EXPECT_TRUE(shown.ok()) << shown.status();
  return shown.ok() ? *shown : Shown{};
}

class RenderProtobufTest : public ::testing::Test {
 protected:
  StandardCluster source_ = MakeStandardCluster();
};

TEST_F(RenderProtobufTest, NodeDecodesToEveryFieldOfItsValues) {
  NodeMetrics node = source_.nodes[0];  // node-1 {role=worker, zone=a}, 120m, 316669952 bytes
  node.resource_version = "17";
  const std::optional<std::string> body = RenderNodeProtobuf(node, Beta());
  ASSERT_TRUE(body);
  const runtime::Unknown unknown = Envelope(*body);
  EXPECT_EQ(unknown.typemeta().apiversion(), "metrics.k8s.io/v1beta1");
  EXPECT_EQ(unknown.typemeta().kind(), "NodeMetrics");
  EXPECT_TRUE(unknown.has_contentencoding());
  EXPECT_EQ(unknown.contentencoding(), "");
  EXPECT_TRUE(unknown.has_contenttype());
  EXPECT_EQ(unknown.contenttype(), "");

  metrics::NodeMetrics decoded;
  ASSERT_TRUE(decoded.ParseFromString(unknown.raw()));
  EXPECT_EQ(decoded.metadata().name(), "node-1");
  EXPECT_EQ(decoded.metadata().namespace_(), "");
  EXPECT_EQ(decoded.metadata().resourceversion(), "17");
  EXPECT_EQ(decoded.metadata().labels().size(), 2u);
  EXPECT_EQ(decoded.metadata().labels().at("role"), "worker");
  EXPECT_EQ(decoded.metadata().labels().at("zone"), "a");
  EXPECT_EQ(decoded.metadata().creationtimestamp().seconds(), UnixSeconds(Now()));
  EXPECT_EQ(decoded.metadata().creationtimestamp().nanos(), 0);
  EXPECT_EQ(decoded.timestamp().seconds(), UnixSeconds(EndTime()));
  EXPECT_EQ(decoded.timestamp().nanos(), 0);
  EXPECT_EQ(decoded.window().duration(), 10'000'000'000);
  ASSERT_EQ(decoded.usage().size(), 2u);
  EXPECT_EQ(decoded.usage().at("cpu").string(), "120m");
  EXPECT_EQ(decoded.usage().at("memory").string(), FormatMemoryBytes(316669952));
  EXPECT_EQ(decoded.usage().at("memory").string(), "302Mi");
}

TEST_F(RenderProtobufTest, PodDecodesToEveryFieldOfItsValues) {
  PodMetrics pod = source_.pods[2];  // shop/web-1 on node-1 {app=web, tier=frontend}
  pod.containers.push_back(ContainerMetrics{"sidecar", testing::Usage(2000000, 1048576)});
  pod.containers.back().windows.memory[0].endtime = EndTime() + seconds(3);
  const std::optional<std::string> body = RenderPodProtobuf(pod, V1());
  ASSERT_TRUE(body);
  const runtime::Unknown unknown = Envelope(*body);
  EXPECT_EQ(unknown.typemeta().apiversion(), "metrics.k8s.io/v1");
  EXPECT_EQ(unknown.typemeta().kind(), "PodMetrics");
  metrics::PodMetrics decoded;
  ASSERT_TRUE(decoded.ParseFromString(unknown.raw()));
  EXPECT_EQ(decoded.metadata().name(), "web-1");
  EXPECT_EQ(decoded.metadata().namespace_(), "shop");
  EXPECT_EQ(decoded.metadata().resourceversion(), "");
  EXPECT_EQ(decoded.metadata().labels().at("app"), "web");
  EXPECT_EQ(decoded.metadata().labels().at("tier"), "frontend");
  // The newest end among the containers' shortest windows, as the JSON's timestamp.
  EXPECT_EQ(decoded.timestamp().seconds(), UnixSeconds(EndTime()) + 3);
  EXPECT_EQ(decoded.window().duration(), 10'000'000'000);
  ASSERT_EQ(decoded.containers_size(), 2);
  EXPECT_EQ(decoded.containers(0).name(), "app");
  EXPECT_EQ(decoded.containers(0).usage().at("cpu").string(), "120m");
  EXPECT_EQ(decoded.containers(0).usage().at("memory").string(), "302Mi");
  EXPECT_EQ(decoded.containers(1).name(), "sidecar");
  EXPECT_EQ(decoded.containers(1).usage().at("cpu").string(), "2m");
  EXPECT_EQ(decoded.containers(1).usage().at("memory").string(), "1Mi");
}

// The exact bytes of one small object, computed by hand from the field numbers of
// k8s.io/apimachinery's runtime.Unknown, TypeMeta, ObjectMeta, Time, Duration, Quantity and
// k8s.io/metrics' NodeMetrics, so that a wrong field number or wire type fails here.
TEST_F(RenderProtobufTest, SmallNodeIsExactlyTheHandComputedBytes) {
  NodeMetrics node;
  node.name = "n";
  // cpu 1m, memory 1Ki over a window of 100ns ending at 90s after the epoch.
  node.machine.cpu.push_back(testing::Window(std::chrono::nanoseconds(100), 1, 1000000, 0, 0, 0, 0,
                                             0, Timestamp(seconds(90))));
  node.machine.memory.push_back(testing::Window(std::chrono::nanoseconds(100), 1, 1024, 0, 0, 0, 0,
                                                0, Timestamp(seconds(90))));
  const RenderContext ctx{GroupVersion::kV1beta1, Timestamp(seconds(100)), 0};
  const std::optional<std::string> body = RenderNodeProtobuf(node, ctx);
  ASSERT_TRUE(body);

  const std::string object_meta =                  // ObjectMeta, 21 bytes
      std::string("\x0a\x01n", 3) +                // 1 name "n"
      std::string("\x12\x00", 2) +                 // 2 generateName ""
      std::string("\x1a\x00", 2) +                 // 3 namespace ""
      std::string("\x22\x00", 2) +                 // 4 selfLink ""
      std::string("\x2a\x00", 2) +                 // 5 uid ""
      std::string("\x32\x00", 2) +                 // 6 resourceVersion ""
      std::string("\x38\x00", 2) +                 // 7 generation 0
      std::string("\x42\x04\x08\x64\x10\x00", 6);  // 8 creationTimestamp {seconds 100, nanos 0}
  ASSERT_EQ(object_meta.size(), 0x15u);
  const std::string raw =                           // NodeMetrics, 63 bytes
      std::string("\x0a\x15", 2) + object_meta +    // 1 metadata
      std::string("\x12\x04\x08\x5a\x10\x00", 6) +  // 2 timestamp {seconds 90, nanos 0}
      std::string("\x1a\x02\x08\x64", 4) +          // 3 window {duration 100}
      std::string(
          "\x22\x0b\x0a\x03"
          "cpu"
          "\x12\x04\x0a\x02"
          "1m",
          13) +  // 4 usage["cpu"]
      std::string(
          "\x22\x0f\x0a\x06"
          "memory"
          "\x12\x05\x0a\x03"
          "1Ki",
          17);  // 4 usage["memory"]
  ASSERT_EQ(raw.size(), 0x3fu);
  const std::string expected = std::string("k8s\x00", 4) +
                               // Unknown 1 typeMeta {1 apiVersion, 2 kind}
                               std::string("\x0a\x25\x0a\x16", 4) + "metrics.k8s.io/v1beta1" +
                               std::string("\x12\x0b", 2) + "NodeMetrics" +
                               std::string("\x12\x3f", 2) + raw +  // Unknown 2 raw
                               std::string("\x1a\x00", 2) +        // Unknown 3 contentEncoding ""
                               std::string("\x22\x00", 2);         // Unknown 4 contentType ""
  EXPECT_EQ(*body, expected);
}

TEST_F(RenderProtobufTest, BothEncodingsShowTheSameObjects) {
  for (const RenderContext& ctx : {Beta(), V1()}) {
    for (const NodeMetrics& node : source_.nodes) {
      const std::optional<std::string> json = RenderNode(node, ctx);
      const std::optional<std::string> pb = RenderNodeProtobuf(node, ctx);
      ASSERT_EQ(json.has_value(), pb.has_value()) << node.name;
      if (json) {
        EXPECT_EQ(FromProtobuf(*pb), FromJson(*json));
      }
    }
    for (const PodMetrics& pod : source_.pods) {
      const std::optional<std::string> json = RenderPod(pod, ctx);
      const std::optional<std::string> pb = RenderPodProtobuf(pod, ctx);
      ASSERT_TRUE(json && pb) << pod.name;
      EXPECT_EQ(FromProtobuf(*pb), FromJson(*json));
    }
    for (const char* q :
         {"", "labelSelector=role%3Dworker", "fieldSelector=metadata.name%3Dnode-2", "limit=1"}) {
      const ListQuery nodes = Query(q, Resource::kNodes);
      EXPECT_EQ(FromProtobuf(RenderNodeListProtobuf(source_.nodes, nodes, ctx)),
                FromJson(RenderNodeList(source_.nodes, nodes, ctx)))
          << q;
    }
    for (const char* q :
         {"", "labelSelector=app%3Dweb", "fieldSelector=spec.nodeName%3Dnode-1", "limit=2"}) {
      const ListQuery pods = Query(q, Resource::kPods);
      EXPECT_EQ(FromProtobuf(RenderPodListProtobuf(source_.pods, pods, ctx)),
                FromJson(RenderPodList(source_.pods, pods, ctx)))
          << q;
    }
  }
}

TEST_F(RenderProtobufTest, ListsCarryTheirKindResourceVersionAndContinue) {
  std::vector<std::shared_ptr<const PodMetrics>> pods;
  for (const PodMetrics& p : source_.pods) pods.push_back(std::make_shared<PodMetrics>(p));
  const std::vector<metrics_api::PodRef> refs = metrics_api::RefsTo(pods);
  const SharedPods shared(refs);
  Page page = Select(Query("limit=2", Resource::kPods), GroupVersion::kV1beta1, shared);
  page.resource_version = "42";
  ASSERT_FALSE(page.continue_token.empty());

  const runtime::Unknown unknown = Envelope(RenderPodListProtobuf(shared, page, Beta()));
  EXPECT_EQ(unknown.typemeta().kind(), "PodMetricsList");
  EXPECT_EQ(unknown.typemeta().apiversion(), "metrics.k8s.io/v1beta1");
  metrics::PodMetricsList list;
  ASSERT_TRUE(list.ParseFromString(unknown.raw()));
  EXPECT_EQ(list.metadata().resourceversion(), "42");
  EXPECT_EQ(list.metadata().continue_(), page.continue_token);
  EXPECT_TRUE(list.metadata().has_selflink());
  EXPECT_FALSE(list.metadata().has_remainingitemcount());
  ASSERT_EQ(list.items_size(), 2);
  EXPECT_EQ(list.items(0).metadata().name(), "coredns-1");
  EXPECT_EQ(list.items(1).metadata().name(), "db-0");

  // The next page continues after db-0, as the JSON's would.
  const ListQuery next = Query("limit=2&continue=" + list.metadata().continue_(), Resource::kPods);
  metrics::PodMetricsList second;
  ASSERT_TRUE(second.ParseFromString(Envelope(RenderPodListProtobuf(shared, next, Beta())).raw()));
  ASSERT_EQ(second.items_size(), 2);
  EXPECT_EQ(second.items(0).metadata().name(), "web-1");
  EXPECT_EQ(second.items(1).metadata().name(), "web-2");
  EXPECT_EQ(second.metadata().continue_(), "");
  EXPECT_EQ(second.metadata().resourceversion(), "");
}

TEST_F(RenderProtobufTest, ObjectsWithoutUsageAreLeftOut) {
  // node-3 has cpu only.
  EXPECT_FALSE(RenderNodeProtobuf(source_.nodes[2], Beta()));
  metrics::NodeMetricsList list;
  ASSERT_TRUE(list.ParseFromString(
      Envelope(RenderNodeListProtobuf(source_.nodes, ListQuery{}, Beta())).raw()));
  ASSERT_EQ(list.items_size(), 2);
  EXPECT_EQ(list.items(0).metadata().name(), "node-1");
  EXPECT_EQ(list.items(1).metadata().name(), "node-2");
  PodMetrics empty = source_.pods[0];
  empty.containers.clear();
  EXPECT_FALSE(RenderPodProtobuf(empty, Beta()));
}

TEST_F(RenderProtobufTest, TimesAreWholeSecondsTruncatedTowardThePastAsInJson) {
  NodeMetrics node = source_.nodes[0];
  for (Statistics& s : node.machine.cpu) s.endtime = EndTime() + milliseconds(700);
  for (Statistics& s : node.machine.memory) s.endtime = EndTime() + milliseconds(700);
  const RenderContext late{GroupVersion::kV1beta1, Now() + milliseconds(999), 0};
  Shown pb = FromProtobuf(*RenderNodeProtobuf(node, late));
  EXPECT_EQ(pb, FromJson(*RenderNode(node, late)));
  ASSERT_EQ(pb.items.size(), 1u);
  EXPECT_EQ(pb.items[0].timestamp_seconds, UnixSeconds(EndTime()));
  EXPECT_EQ(pb.items[0].creation_seconds, UnixSeconds(Now()));

  // Before the epoch: -1.5s is 1969-12-31T23:59:58Z, seconds -2.
  const RenderContext early{GroupVersion::kV1beta1, Timestamp(milliseconds(-1500)), 0};
  metrics::NodeMetrics decoded;
  ASSERT_TRUE(decoded.ParseFromString(Envelope(*RenderNodeProtobuf(node, early)).raw()));
  EXPECT_EQ(decoded.metadata().creationtimestamp().seconds(), -2);
  EXPECT_EQ(decoded.metadata().creationtimestamp().nanos(), 0);
  EXPECT_EQ(FormatRfc3339(early.now), "1969-12-31T23:59:58Z");

  // The zero time is the empty message, as Go writes it.
  const RenderContext zero{GroupVersion::kV1beta1, kZeroTime, 0};
  ASSERT_TRUE(decoded.ParseFromString(Envelope(*RenderNodeProtobuf(node, zero)).raw()));
  EXPECT_TRUE(decoded.metadata().has_creationtimestamp());
  EXPECT_FALSE(decoded.metadata().creationtimestamp().has_seconds());
  EXPECT_FALSE(decoded.metadata().creationtimestamp().has_nanos());
}

TEST_F(RenderProtobufTest, EqualObjectsGiveEqualBytes) {
  // Labels are a map: their order on the wire must not depend on insertion or hashing.
  NodeMetrics a = source_.nodes[0];
  for (int i = 0; i < 20; ++i) a.labels = a.labels.With("k" + std::to_string(i), std::to_string(i));
  const NodeMetrics b = a;
  EXPECT_EQ(*RenderNodeProtobuf(a, Beta()), *RenderNodeProtobuf(b, Beta()));
  const std::string list =
      RenderNodeListProtobuf(std::vector<NodeMetrics>{a, source_.nodes[1]}, ListQuery{}, Beta());
  EXPECT_EQ(list, RenderNodeListProtobuf(std::vector<NodeMetrics>{b, source_.nodes[1]}, ListQuery{},
                                         Beta()));
}

}  // namespace
}  // namespace kubestat::metrics_api
