#include "kubestat/metrics_api/write_batch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "kubestat/testing/metrics_objects.h"

namespace kubestat::metrics_api {
namespace {

using kubestat::testing::MakeStandardCluster;
using kubestat::testing::StandardCluster;
using ::testing::StartsWith;

WriteBatch Sample() {
  const StandardCluster cluster = MakeStandardCluster();
  WriteBatch batch;
  WriteItem node;
  node.resource = Resource::kNodes;
  node.node = cluster.nodes[0];
  batch.items.push_back(node);
  WriteItem pod;
  pod.resource = Resource::kPods;
  pod.pod = cluster.pods[2];
  pod.pod.node_name.clear();  // not carried by the document
  batch.items.push_back(pod);
  WriteItem gone_pod;
  gone_pod.op = WriteItem::Op::kDelete;
  gone_pod.resource = Resource::kPods;
  gone_pod.namespace_name = "shop";
  gone_pod.name = "web-9";
  batch.items.push_back(gone_pod);
  WriteItem gone_node;
  gone_node.op = WriteItem::Op::kDelete;
  gone_node.name = "node-9";
  batch.items.push_back(gone_node);
  return batch;
}

TEST(WriteBatchTest, ABatchReadsBackItemForItem) {
  const WriteBatch batch = Sample();
  const std::string json = RenderWriteBatch(batch);
  EXPECT_THAT(json,
              StartsWith(R"({"kind":"WriteBatch","apiVersion":"metrics/v1alpha1","items":[)"));
  absl::StatusOr<WriteBatch> back = ParseWriteBatch(json);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->items.size(), 4u);
  EXPECT_EQ(back->items[0].op, WriteItem::Op::kPut);
  EXPECT_EQ(back->items[0].resource, Resource::kNodes);
  EXPECT_EQ(back->items[0].node, batch.items[0].node);
  EXPECT_EQ(back->items[1].resource, Resource::kPods);
  EXPECT_EQ(back->items[1].pod, batch.items[1].pod);
  EXPECT_EQ(back->items[2].op, WriteItem::Op::kDelete);
  EXPECT_EQ(back->items[2].resource, Resource::kPods);
  EXPECT_EQ(back->items[2].namespace_name, "shop");
  EXPECT_EQ(back->items[2].name, "web-9");
  EXPECT_EQ(back->items[3].resource, Resource::kNodes);
  EXPECT_EQ(back->items[3].name, "node-9");
  // Item sizes add up to the body, give or take the envelope.
  size_t items = 0;
  for (const WriteItem& item : batch.items) items += RenderWriteItem(item).size() + 1;
  EXPECT_LT(json.size() - items, 80u);
}

TEST(WriteBatchTest, JoiningRenderedItemsGivesTheSameBody) {
  const WriteBatch batch = Sample();
  std::vector<std::string> rendered;
  for (const WriteItem& item : batch.items) rendered.push_back(RenderWriteItem(item));
  const std::vector<std::string_view> views(rendered.begin(), rendered.end());
  EXPECT_EQ(JoinWriteBatch(views), RenderWriteBatch(batch));
  EXPECT_EQ(JoinWriteBatch(std::span<const std::string_view>(views).first(1)),
            RenderWriteBatch(WriteBatch{{batch.items[0]}}));
  EXPECT_EQ(JoinWriteBatch({}), RenderWriteBatch(WriteBatch{}));
}

TEST(WriteBatchTest, APutRenderedFromItsObjectIsTheItemAndCarriesTheObjectWhereItSays) {
  const WriteBatch batch = Sample();
  for (const WriteItem& item : {batch.items[0], batch.items[1]}) {
    const std::string object = RenderWriteObject(item);
    const RenderedPut put = RenderPutItem(object);
    EXPECT_EQ(put.json, RenderWriteItem(item));
    EXPECT_EQ(put.json.substr(put.object_at, object.size()), object);
    EXPECT_THAT(object, StartsWith(item.resource == Resource::kNodes ? R"({"kind":"NodeMetrics",)"
                                                                     : R"({"kind":"PodMetrics",)"));
  }
}

std::string Error(const std::string& json) {
  absl::StatusOr<WriteBatch> batch = ParseWriteBatch(json);
  EXPECT_FALSE(batch.ok()) << json;
  return batch.ok() ? "" : std::string(batch.status().message());
}

TEST(WriteBatchTest, ErrorsNameTheItemAndField) {
  constexpr char kHead[] = R"({"kind":"WriteBatch","apiVersion":"metrics/v1alpha1","items":[)";
  EXPECT_EQ(Error(R"({"kind":"Other","apiVersion":"metrics/v1alpha1","items":[]})"),
            "kind: must be WriteBatch");
  EXPECT_EQ(Error(R"({"kind":"WriteBatch","apiVersion":"metrics/v1alpha1"})"),
            "items: required, an array");
  EXPECT_EQ(Error(std::string(kHead) + R"({"op":"patch"}]})"),
            "items[0].op: must be \"put\" or \"delete\"");
  EXPECT_EQ(Error(std::string(kHead) + R"({"op":"delete","kind":"PodMetrics","name":"p"}]})"),
            "items[0].namespace: required");
  EXPECT_EQ(Error(std::string(kHead) + R"({"op":"delete","kind":"NodeMetrics","name":"n"},)" +
                  R"({"op":"put","object":{"kind":"NodeMetrics","apiVersion":"metrics/v1alpha1",)" +
                  R"("metadata":{"name":"Bad_Name"},"machine":{}}}]})"),
            "items[1].object.metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 "
            "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
            "start and end with an alphanumeric character");
  EXPECT_EQ(
      Error(std::string(kHead) +
            R"({"op":"put","object":{"kind":"NodeMetrics","apiVersion":"metrics.k8s.io/v1",)" +
            R"("metadata":{"name":"n"},"timestamp":"2026-11-21T10:00:10Z","window":"10s",)" +
            R"("usage":{"cpu":"1","memory":"1Ki"}}}]})"),
      "items[0].object.apiVersion: must be metrics/v1alpha1 (every window)");
  EXPECT_THAT(
      Error(std::string(kHead) +
            R"({"op":"put","object":{"kind":"PodMetrics","apiVersion":"metrics/v1alpha1",)" +
            R"("metadata":{"name":"p","namespace":"Shop"},"pod":{}}}]})"),
      StartsWith("items[0].object.metadata.namespace: Invalid value: \"Shop\": a lowercase "
                 "RFC 1123 label"));
}

TEST(WriteBatchTest, TheResultNamesTheRevision) {
  EXPECT_EQ(RenderWriteBatchResult(42, 3),
            R"({"kind":"WriteBatchResult","apiVersion":"metrics/v1alpha1",)"
            R"("resourceVersion":"42","applied":3})");
}

}  // namespace
}  // namespace kubestat::metrics_api
