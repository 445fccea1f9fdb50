// The REST handler over the aggregator's SnapshotSource: answers come from the snapshot of
// the last refresh, narrowed by its namespace and node indexes, and the metrics/v1alpha1
// node items pre-rendered per snapshot are the same bytes as a direct render.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kubestat/aggregator/rest_handler.h"
#include "kubestat/aggregator/rest_render.h"
#include "kubestat/aggregator/snapshot_source.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/time.h"
#include "rest_fake_source.h"

namespace kubestat::aggregator {
namespace {

using rest_testing::EndTime;
using rest_testing::FakeMetricsSource;
using rest_testing::FillStandardCluster;

MetricsQuery Query(const std::string& query_string, MetricsResource resource) {
  absl::StatusOr<MetricsQuery> query = ParseMetricsQuery(ParseQueryString(query_string), resource);
  EXPECT_TRUE(query.ok()) << query.status();
  return *query;
}

class RestHandlerSnapshotTest : public ::testing::Test {
 protected:
  RestHandlerSnapshotTest() : clock_(EndTime() + std::chrono::seconds(20)) {
    FillStandardCluster(live_);
    snapshot_.Refresh();
  }

  RestResponse Get(const std::string& path, const std::string& query = "") {
    return handler_.Handle(RestRequest{"GET", path, query});
  }
  RenderContext Ctx(MetricsApi api, int indent = 0) const {
    return RenderContext{api, clock_.Now(), indent};
  }

  FakeClock clock_;
  FakeMetricsSource live_;
  SnapshotSource snapshot_{&live_};
  RestHandler handler_{snapshot_, clock_, LivenessCheck{}};
};

TEST_F(RestHandlerSnapshotTest, V1alpha1NodeListsFromPreRenderedItemsAreTheDirectRender) {
  for (const std::string q : {"", "labelSelector=zone%3Da", "labelSelector=role%3Dworker",
                              "fieldSelector=metadata.name%3Dnode-2", "labelSelector=zone%3Dz"}) {
    // Twice: the first request renders the items, the second reuses them.
    for (int i = 0; i < 2; ++i) {
      const RestResponse response = Get("/apis/metrics/v1alpha1/nodes", q);
      ASSERT_EQ(response.code, 200) << q;
      EXPECT_EQ(response.body, RenderNodeList(live_.ListNodes(), Query(q, MetricsResource::kNodes),
                                              Ctx(MetricsApi::kV1alpha1)))
          << q;
    }
  }
  // The pretty form is rendered per request, and holds the same objects.
  const RestResponse pretty = Get("/apis/metrics/v1alpha1/nodes", "pretty=true");
  EXPECT_EQ(pretty.body,
            RenderNodeList(live_.ListNodes(), MetricsQuery{}, Ctx(MetricsApi::kV1alpha1, 2)));
}

TEST_F(RestHandlerSnapshotTest, AnswersComeFromTheLastRefresh) {
  const std::string before = Get("/apis/metrics/v1alpha1/nodes").body;
  const std::string beta_before = Get("/apis/metrics.k8s.io/v1beta1/nodes").body;
  EXPECT_NE(before.find("node-1"), std::string::npos);
  live_.nodes.erase(live_.nodes.begin());  // node-1 leaves the live source
  live_.pods.pop_back();                   // shop/web-2 too
  EXPECT_EQ(Get("/apis/metrics/v1alpha1/nodes").body, before);
  EXPECT_EQ(Get("/apis/metrics.k8s.io/v1beta1/nodes").body, beta_before);
  EXPECT_EQ(Get("/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/web-2").code, 200);

  snapshot_.Refresh();
  const std::string after = Get("/apis/metrics/v1alpha1/nodes").body;
  EXPECT_EQ(after.find("\"node-1\""), std::string::npos);
  EXPECT_NE(after.find("\"node-2\""), std::string::npos);
  EXPECT_EQ(after, RenderNodeList(live_.ListNodes(), MetricsQuery{}, Ctx(MetricsApi::kV1alpha1)));
  EXPECT_EQ(Get("/apis/metrics.k8s.io/v1beta1/nodes").body,
            RenderNodeList(live_.ListNodes(), MetricsQuery{}, Ctx(MetricsApi::kV1beta1)));
  EXPECT_EQ(Get("/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/web-2").code, 404);
}

TEST_F(RestHandlerSnapshotTest, PodListsNarrowedByNamespaceAndNodeAreTheDirectRender) {
  struct Case {
    std::string path;
    std::string query;
    std::string ns;  // the path's namespace
  };
  const Case cases[] = {
      {"/apis/metrics.k8s.io/v1beta1/pods", "", ""},
      {"/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods", "", "shop"},
      {"/apis/metrics.k8s.io/v1beta1/pods", "fieldSelector=spec.nodeName%3Dnode-1", ""},
      {"/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods", "fieldSelector=spec.nodeName%3Dnode-2",
       "shop"},
      {"/apis/metrics.k8s.io/v1beta1/namespaces/kube-system/pods",
       "fieldSelector=spec.nodeName%3Dnode-1", "kube-system"},
      {"/apis/metrics.k8s.io/v1beta1/pods", "fieldSelector=metadata.namespace%3Dshop", ""},
      {"/apis/metrics.k8s.io/v1beta1/pods",
       "fieldSelector=metadata.namespace%3Dshop,spec.nodeName%3Dnode-1&labelSelector=app%3Dweb",
       ""},
      {"/apis/metrics/v1alpha1/pods", "fieldSelector=spec.nodeName%3Dnode-9", ""},
      {"/apis/metrics/v1alpha1/pods", "fieldSelector=spec.nodeName!%3Dnode-1", ""},
  };
  for (const Case& c : cases) {
    const MetricsApi api =
        c.path.find("v1alpha1") != std::string::npos ? MetricsApi::kV1alpha1 : MetricsApi::kV1beta1;
    const RestResponse response = Get(c.path, c.query);
    ASSERT_EQ(response.code, 200) << c.path << "?" << c.query;
    EXPECT_EQ(response.body,
              RenderPodList(live_.ListPods(c.ns), Query(c.query, MetricsResource::kPods), Ctx(api)))
        << c.path << "?" << c.query;
  }
  // And the narrowed answers hold what they should.
  const std::string on_node_1 =
      Get("/apis/metrics.k8s.io/v1beta1/pods", "fieldSelector=spec.nodeName%3Dnode-1").body;
  EXPECT_NE(on_node_1.find("\"db-0\""), std::string::npos);
  EXPECT_NE(on_node_1.find("\"web-1\""), std::string::npos);
  EXPECT_EQ(on_node_1.find("\"web-2\""), std::string::npos);
  EXPECT_EQ(on_node_1.find("coredns"), std::string::npos);
}

}  // namespace
}  // namespace kubestat::aggregator
