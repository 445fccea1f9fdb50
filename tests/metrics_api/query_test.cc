#include "kubestat/metrics_api/query.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "kubestat/testing/metrics_objects.h"

namespace kubestat::metrics_api {
namespace {

using kubestat::testing::EndTime;
using kubestat::testing::MakeStandardCluster;
using kubestat::testing::Pod;
using kubestat::testing::StandardCluster;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

ListQuery Rest(const std::string& query_string, Resource resource, std::string_view ns = "") {
  absl::StatusOr<ListQuery> query = ParseListQuery(ParseQueryString(query_string), resource, ns);
  EXPECT_TRUE(query.ok()) << query_string << ": " << query.status();
  return query.ok() ? *query : ListQuery{};
}

template <typename Objects>
std::vector<std::string> Keys(const Objects& objects, const Page& page) {
  std::vector<std::string> keys;
  for (size_t i : page.indices) {
    std::string key = ObjectKey(objects[i]);
    std::replace(key.begin(), key.end(), '\0', '/');
    keys.push_back(key);
  }
  return keys;
}

TEST(QueryTest, NamespaceAndSelectorsChooseThePods) {
  const StandardCluster cluster = MakeStandardCluster();
  EXPECT_THAT(Keys(cluster.pods, Select(Rest("", Resource::kPods, "shop"), GroupVersion::kV1alpha1,
                                        cluster.pods)),
              ElementsAre("shop/db-0", "shop/web-1", "shop/web-2"));
  EXPECT_THAT(Keys(cluster.pods, Select(Rest("labelSelector=app%3Dweb&fieldSelector=spec."
                                             "nodeName%3Dnode-2",
                                             Resource::kPods),
                                        GroupVersion::kV1alpha1, cluster.pods)),
              ElementsAre("shop/web-2"));
  EXPECT_THAT(
      Keys(cluster.nodes, Select(Rest("fieldSelector=metadata.name!%3Dnode-1", Resource::kNodes),
                                 GroupVersion::kV1alpha1, cluster.nodes)),
      ElementsAre("node-2", "node-3"));
}

TEST(QueryTest, MetricsK8sIoLeavesOutObjectsWithoutUsage) {
  const StandardCluster cluster = MakeStandardCluster();  // node-3 has no memory
  EXPECT_THAT(Keys(cluster.nodes, Select(ListQuery{}, GroupVersion::kV1beta1, cluster.nodes)),
              ElementsAre("node-1", "node-2"));
  EXPECT_THAT(Keys(cluster.nodes, Select(ListQuery{}, GroupVersion::kV1alpha1, cluster.nodes)),
              ElementsAre("node-1", "node-2", "node-3"));
}

TEST(QueryTest, PagesOfALimitCoverTheListOnceAndEndWithoutAToken) {
  const StandardCluster cluster = MakeStandardCluster();
  std::vector<std::string> all;
  std::string token;
  int pages = 0;
  do {
    ListQuery query =
        Rest("limit=2" + (token.empty() ? "" : "&continue=" + token), Resource::kPods);
    const Page page = Select(query, GroupVersion::kV1beta1, cluster.pods);
    EXPECT_LE(page.indices.size(), 2u);
    for (const std::string& key : Keys(cluster.pods, page)) all.push_back(key);
    token = page.continue_token;
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(pages, 2);
  EXPECT_THAT(all, ElementsAre("kube-system/coredns-1", "shop/db-0", "shop/web-1", "shop/web-2"));
}

TEST(QueryTest, ALimitThatTakesTheLastMatchGivesNoToken) {
  const StandardCluster cluster = MakeStandardCluster();
  const Page page =
      Select(Rest("limit=3", Resource::kPods, "shop"), GroupVersion::kV1alpha1, cluster.pods);
  EXPECT_EQ(page.indices.size(), 3u);
  EXPECT_EQ(page.continue_token, "");
}

TEST(QueryTest, AContinueTokenStaysValidWhenItsObjectIsGone) {
  StandardCluster cluster = MakeStandardCluster();
  const Page first =
      Select(Rest("limit=2", Resource::kPods), GroupVersion::kV1alpha1, cluster.pods);
  ASSERT_THAT(Keys(cluster.pods, first), ElementsAre("kube-system/coredns-1", "shop/db-0"));
  cluster.pods.erase(cluster.pods.begin() + 1);  // shop/db-0 deleted between the pages
  const Page second = Select(Rest("continue=" + first.continue_token, Resource::kPods),
                             GroupVersion::kV1alpha1, cluster.pods);
  EXPECT_THAT(Keys(cluster.pods, second), ElementsAre("shop/web-1", "shop/web-2"));
}

TEST(QueryTest, PodKeysSortAsNamespaceNamePairs) {
  // "a" < "a-b" as namespaces, although "a/" > "a-b/" as text.
  std::vector<PodMetrics> pods = {Pod("a", "z", "n", {}, 1, 1), Pod("a-b", "a", "n", {}, 1, 1)};
  const Page first = Select(Rest("limit=1", Resource::kPods), GroupVersion::kV1alpha1, pods);
  ASSERT_THAT(Keys(pods, first), ElementsAre("a/z"));
  const Page second = Select(Rest("continue=" + first.continue_token, Resource::kPods),
                             GroupVersion::kV1alpha1, pods);
  EXPECT_THAT(Keys(pods, second), ElementsAre("a-b/a"));
}

TEST(QueryTest, ContinueTokensRoundTripAndGarbageIsRefused) {
  EXPECT_EQ(*DecodeContinue(EncodeContinue(std::string("shop\0web-1", 10))),
            std::string("shop\0web-1", 10));
  EXPECT_FALSE(DecodeContinue("not base64!").ok());
  EXPECT_FALSE(DecodeContinue(std::string(2000, 'A')).ok());
  absl::StatusOr<ListQuery> rest =
      ParseListQuery(ParseQueryString("continue=%%%"), Resource::kPods, "");
  ASSERT_FALSE(rest.ok());
  EXPECT_THAT(std::string(rest.status().message()), StartsWith("continue: invalid continue token"));
}

TEST(QueryTest, BadLimitsAreRefusedNamingTheParameter) {
  for (const char* q : {"limit=-1", "limit=abc", "limit=1x", "limit=99999999999999999999"}) {
    absl::StatusOr<ListQuery> query = ParseListQuery(ParseQueryString(q), Resource::kNodes, "");
    ASSERT_FALSE(query.ok()) << q;
    EXPECT_EQ(query.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(query.status().message()), StartsWith("limit: ")) << q;
  }
  EXPECT_EQ(Rest("limit=0", Resource::kNodes).limit, 0u);
  EXPECT_EQ(Rest("limit=1000000000", Resource::kNodes).limit, static_cast<size_t>(kMaxLimit));
}

TEST(QueryTest, GrpcErrorsNameTheRequestField) {
  absl::StatusOr<ListQuery> labels =
      MakeListQuery(Resource::kPods, "", "app in (web", "", 0, "", kGrpcFieldNames);
  ASSERT_FALSE(labels.ok());
  EXPECT_THAT(std::string(labels.status().message()), StartsWith("label_selector: "));
  absl::StatusOr<ListQuery> fields =
      MakeListQuery(Resource::kNodes, "", "", "spec.nodeName=x", 0, "", kGrpcFieldNames);
  ASSERT_FALSE(fields.ok());
  EXPECT_EQ(fields.status().message(), "field_selector: field label not supported: spec.nodeName");
  absl::StatusOr<ListQuery> limit =
      MakeListQuery(Resource::kNodes, "", "", "", -3, "", kGrpcFieldNames);
  ASSERT_FALSE(limit.ok());
  EXPECT_THAT(std::string(limit.status().message()), HasSubstr("limit: must be zero or positive"));
  // REST keeps kube-apiserver's bare selector messages.
  absl::StatusOr<ListQuery> rest =
      ParseListQuery(ParseQueryString("fieldSelector=spec.nodeName%3Dx"), Resource::kNodes, "");
  ASSERT_FALSE(rest.ok());
  EXPECT_EQ(rest.status().message(), "field label not supported: spec.nodeName");
}

TEST(QueryTest, SelectsAllOnlyWithoutNamespaceSelectorsOrPaging) {
  EXPECT_TRUE(Rest("pretty=1", Resource::kPods).SelectsAll());
  EXPECT_FALSE(Rest("", Resource::kPods, "shop").SelectsAll());
  EXPECT_FALSE(Rest("labelSelector=a", Resource::kPods).SelectsAll());
  EXPECT_FALSE(Rest("fieldSelector=metadata.name%3Dx", Resource::kPods).SelectsAll());
  EXPECT_FALSE(Rest("limit=5", Resource::kPods).SelectsAll());
  EXPECT_FALSE(Rest("continue=" + EncodeContinue("x"), Resource::kPods).SelectsAll());
}

TEST(QueryTest, SelectReadsSharedObjectsAsValues) {
  const StandardCluster cluster = MakeStandardCluster();
  std::vector<std::shared_ptr<const PodMetrics>> shared;
  for (const PodMetrics& pod : cluster.pods) shared.push_back(std::make_shared<PodMetrics>(pod));
  const ListQuery query = Rest("labelSelector=app%3Dweb&limit=1", Resource::kPods);
  const Page a = Select(query, GroupVersion::kV1, cluster.pods);
  const Page b = Select(query, GroupVersion::kV1, shared);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.continue_token, b.continue_token);
  EXPECT_NE(a.continue_token, "");
}

}  // namespace
}  // namespace kubestat::metrics_api
