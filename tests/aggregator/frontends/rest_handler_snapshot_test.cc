// The REST handler over the aggregator's SnapshotSource: answers come from the snapshot of
// the last refresh, narrowed by its namespace and node indexes, and the metrics/v1alpha1
// node items pre-rendered per snapshot are the same bytes as a direct render; gzip answers,
// kept per snapshot for whole metrics/v1alpha1 lists, hold exactly the identity bytes.
#include "kubestat/aggregator/frontends/rest_handler.h"

// cpprestsdk's U() macro collides with GoogleTest's template parameters.
#define _TURN_OFF_PLATFORM_STRING

#include <cpprest/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "kubestat/aggregator/query/snapshot_source.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/gzip.h"
#include "kubestat/core/time.h"
#include "kubestat/metrics_api/query.h"
#include "kubestat/metrics_api/render.h"
#include "kubestat/testing/aggregator/standard_cluster_source.h"

namespace kubestat::aggregator {
namespace {

using metrics_api::GroupVersion;
using metrics_api::ListQuery;
using metrics_api::ParseListQuery;
using metrics_api::ParseQueryString;
using metrics_api::RenderContext;
using metrics_api::RenderNodeList;
using metrics_api::RenderPodList;
using ApiResource = metrics_api::Resource;

using rest_testing::EndTime;
using rest_testing::FakeMetricsSource;
using rest_testing::FillStandardCluster;
using ::testing::ElementsAre;

ListQuery Query(const std::string& query_string, ApiResource resource) {
  absl::StatusOr<ListQuery> query = ParseListQuery(ParseQueryString(query_string), resource, "");
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
  // The same request from a client that accepts gzip, to a handler that compresses from
  // 64 bytes on.
  RestResponse GetGzip(const std::string& path, const std::string& query = "") {
    return gzip_handler_.Handle(RestRequest{"GET", path, query, /*accepts_gzip=*/true});
  }
  // The body of a gzip answer, decompressed.
  static std::string Gunzip(const RestResponse& response) {
    EXPECT_EQ(response.content_encoding, kContentEncodingGzip);
    absl::StatusOr<std::string> body = GzipDecompress(response.body, 1 << 30);
    EXPECT_TRUE(body.ok()) << body.status();
    return body.value_or("");
  }
  RenderContext Ctx(GroupVersion api, int indent = 0) const {
    return RenderContext{api, clock_.Now(), indent};
  }

  FakeClock clock_;
  FakeMetricsSource live_;
  SnapshotSource snapshot_{&live_};
  RestHandler handler_{snapshot_, clock_, LivenessCheck{}};
  RestHandler gzip_handler_{snapshot_, clock_, LivenessCheck{}, ResponseCompression{true, 64}};
};

TEST_F(RestHandlerSnapshotTest, ListsPageWithLimitAndContinueInEveryGroupVersion) {
  for (const std::string path : {"/apis/metrics/v1alpha1/pods", "/apis/metrics.k8s.io/v1/pods",
                                 "/apis/metrics.k8s.io/v1beta1/pods"}) {
    std::vector<std::string> names;
    std::string token;
    int pages = 0;
    do {
      const RestResponse response =
          Get(path, "limit=3" + (token.empty() ? std::string() : "&continue=" + token));
      ASSERT_EQ(response.code, 200) << response.body;
      const web::json::value doc = web::json::value::parse(response.body);
      EXPECT_LE(doc.at("items").size(), 3u);
      for (const web::json::value& item : doc.at("items").as_array()) {
        names.push_back(item.at("metadata").at("namespace").as_string() + "/" +
                        item.at("metadata").at("name").as_string());
      }
      const web::json::value& metadata = doc.at("metadata");
      token = metadata.has_field("continue") ? metadata.at("continue").as_string() : "";
    } while (!token.empty() && ++pages < 5);
    EXPECT_EQ(pages, 1) << path;
    EXPECT_THAT(names,
                ElementsAre("kube-system/coredns-1", "shop/db-0", "shop/web-1", "shop/web-2"))
        << path;
  }
  // The gzip form kept for whole lists is not served for a page.
  const RestResponse page = GetGzip("/apis/metrics/v1alpha1/pods", "limit=1");
  EXPECT_EQ(web::json::value::parse(Gunzip(page)).at("items").size(), 1u);
}

TEST_F(RestHandlerSnapshotTest, ABadLimitOrContinueIsABadRequestStatus) {
  for (const std::string q : {"limit=-2", "limit=x", "continue=%25%25"}) {
    const RestResponse response = Get("/apis/metrics.k8s.io/v1beta1/nodes", q);
    EXPECT_EQ(response.code, 400) << q;
    const web::json::value status = web::json::value::parse(response.body);
    EXPECT_EQ(status.at("kind").as_string(), "Status");
    EXPECT_EQ(status.at("reason").as_string(), "BadRequest");
  }
}

TEST_F(RestHandlerSnapshotTest, V1alpha1NodeListsFromPreRenderedItemsAreTheDirectRender) {
  for (const std::string q : {"", "labelSelector=zone%3Da", "labelSelector=role%3Dworker",
                              "fieldSelector=metadata.name%3Dnode-2", "labelSelector=zone%3Dz"}) {
    // Twice: the first request renders the items, the second reuses them.
    for (int i = 0; i < 2; ++i) {
      const RestResponse response = Get("/apis/metrics/v1alpha1/nodes", q);
      ASSERT_EQ(response.code, 200) << q;
      EXPECT_EQ(response.body, RenderNodeList(live_.ListNodes(), Query(q, ApiResource::kNodes),
                                              Ctx(GroupVersion::kV1alpha1)))
          << q;
    }
  }
  // The pretty form is rendered per request, and holds the same objects.
  const RestResponse pretty = Get("/apis/metrics/v1alpha1/nodes", "pretty=true");
  EXPECT_EQ(pretty.body,
            RenderNodeList(live_.ListNodes(), ListQuery{}, Ctx(GroupVersion::kV1alpha1, 2)));
}

TEST_F(RestHandlerSnapshotTest, AnswersComeFromTheLastRefresh) {
  const std::string before = Get("/apis/metrics/v1alpha1/nodes").body;
  const std::string beta_before = Get("/apis/metrics.k8s.io/v1beta1/nodes").body;
  const std::string v1_before = Get("/apis/metrics.k8s.io/v1/nodes").body;
  EXPECT_NE(before.find("node-1"), std::string::npos);
  live_.RemoveNode("node-1");        // node-1 leaves the live source
  live_.RemovePod("shop", "web-2");  // shop/web-2 too
  EXPECT_EQ(Get("/apis/metrics/v1alpha1/nodes").body, before);
  EXPECT_EQ(Get("/apis/metrics.k8s.io/v1beta1/nodes").body, beta_before);
  EXPECT_EQ(Get("/apis/metrics.k8s.io/v1/nodes").body, v1_before);
  EXPECT_EQ(Get("/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/web-2").code, 200);
  EXPECT_EQ(Get("/apis/metrics.k8s.io/v1/namespaces/shop/pods/web-2").code, 200);

  snapshot_.Refresh();
  const std::string after = Get("/apis/metrics/v1alpha1/nodes").body;
  EXPECT_EQ(after.find("\"node-1\""), std::string::npos);
  EXPECT_NE(after.find("\"node-2\""), std::string::npos);
  EXPECT_EQ(after, RenderNodeList(live_.ListNodes(), ListQuery{}, Ctx(GroupVersion::kV1alpha1)));
  EXPECT_EQ(Get("/apis/metrics.k8s.io/v1beta1/nodes").body,
            RenderNodeList(live_.ListNodes(), ListQuery{}, Ctx(GroupVersion::kV1beta1)));
  EXPECT_EQ(Get("/apis/metrics.k8s.io/v1/nodes").body,
            RenderNodeList(live_.ListNodes(), ListQuery{}, Ctx(GroupVersion::kV1)));
  EXPECT_EQ(Get("/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/web-2").code, 404);
  EXPECT_EQ(Get("/apis/metrics.k8s.io/v1/namespaces/shop/pods/web-2").code, 404);
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
      {"/apis/metrics.k8s.io/v1/pods", "", ""},
      {"/apis/metrics.k8s.io/v1/namespaces/shop/pods", "fieldSelector=spec.nodeName%3Dnode-2",
       "shop"},
      {"/apis/metrics.k8s.io/v1/pods",
       "fieldSelector=metadata.namespace%3Dshop,spec.nodeName%3Dnode-1&labelSelector=app%3Dweb",
       ""},
      {"/apis/metrics/v1alpha1/pods", "fieldSelector=spec.nodeName%3Dnode-9", ""},
      {"/apis/metrics/v1alpha1/pods", "fieldSelector=spec.nodeName!%3Dnode-1", ""},
  };
  for (const Case& c : cases) {
    GroupVersion api = GroupVersion::kV1;
    if (c.path.find("/v1alpha1/") != std::string::npos) api = GroupVersion::kV1alpha1;
    if (c.path.find("/v1beta1/") != std::string::npos) api = GroupVersion::kV1beta1;
    const RestResponse response = Get(c.path, c.query);
    ASSERT_EQ(response.code, 200) << c.path << "?" << c.query;
    EXPECT_EQ(response.body,
              RenderPodList(live_.ListPods(c.ns), Query(c.query, ApiResource::kPods), Ctx(api)))
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

// `text` with every "metrics.k8s.io/v1beta1" made "metrics.k8s.io/v1".
std::string BetaToV1(std::string text) {
  const std::string beta = "metrics.k8s.io/v1beta1";
  for (size_t at = text.find(beta); at != std::string::npos; at = text.find(beta, at)) {
    text.replace(at, beta.size(), "metrics.k8s.io/v1");
  }
  return text;
}

TEST_F(RestHandlerSnapshotTest, V1AnswersEveryV1beta1RequestAlikeUnderItsOwnVersionAndRoute) {
  const struct {
    std::string method;
    std::string path;  // under /apis/metrics.k8s.io/<version>
    std::string query;
    std::string route;  // under /apis/metrics.k8s.io/<version>, or kRouteOther
    int code;
  } cases[] = {
      {"GET", "", "", "", 200},
      {"GET", "/", "pretty=true", "", 200},
      {"GET", "/nodes", "", "/nodes", 200},
      {"GET", "/nodes/", "labelSelector=zone%3Da&pretty", "/nodes", 200},
      {"GET", "/nodes", "fieldSelector=metadata.name%3Dnode-2", "/nodes", 200},
      {"GET", "/nodes/node-1", "", "/nodes/{node}", 200},
      {"GET", "/nodes/node-1", "pretty=1", "/nodes/{node}", 200},
      {"GET", "/nodes/node-3", "", "/nodes/{node}", 404},
      {"GET", "/nodes/ghost", "pretty=true", "/nodes/{node}", 404},
      {"GET", "/pods", "", "/pods", 200},
      {"GET", "/pods", "labelSelector=app+in+(web,db),!tier", "/pods", 200},
      {"GET", "/pods", "fieldSelector=spec.nodeName%3Dnode-2", "/pods", 200},
      {"GET", "/pods", "labelSelector=app%20in%20(web", "/pods", 400},
      {"GET", "/pods", "fieldSelector=status.phase%3DRunning", "/pods", 400},
      {"GET", "/namespaces/shop/pods", "", "/namespaces/{namespace}/pods", 200},
      {"GET", "/namespaces/sh%6Fp/pods", "pretty", "/namespaces/{namespace}/pods", 200},
      {"GET", "/namespaces/shop/pods/web-1", "", "/namespaces/{namespace}/pods/{pod}", 200},
      {"GET", "/namespaces/kube-system/pods/web-1", "", "/namespaces/{namespace}/pods/{pod}", 404},
      {"POST", "/nodes", "", "/nodes", 405},
      {"DELETE", "/namespaces/shop/pods/web-1", "", "/namespaces/{namespace}/pods/{pod}", 405},
      {"GET", "/namespaces", "", "other", 404},
      {"GET", "/namespaces/shop", "", "other", 404},
      {"GET", "/namespaces/shop/pods/web-1/extra", "", "other", 404},
      {"GET", "/deployments", "", "other", 404},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.method + " " + c.path + "?" + c.query);
    const RestResponse beta =
        handler_.Handle({c.method, "/apis/metrics.k8s.io/v1beta1" + c.path, c.query});
    const RestResponse v1 =
        handler_.Handle({c.method, "/apis/metrics.k8s.io/v1" + c.path, c.query});
    EXPECT_EQ(v1.code, c.code);
    EXPECT_EQ(beta.code, c.code);
    EXPECT_EQ(v1.content_type, beta.content_type);
    EXPECT_EQ(v1.body, BetaToV1(beta.body));
    if (c.route == kRouteOther) {
      EXPECT_EQ(v1.route, kRouteOther);
      EXPECT_EQ(beta.route, kRouteOther);
    } else {
      EXPECT_EQ(v1.route, "/apis/metrics.k8s.io/v1" + c.route);
      EXPECT_EQ(beta.route, "/apis/metrics.k8s.io/v1beta1" + c.route);
    }
    // And v1's answer is its own, not v1beta1's.
    if (beta.body.find("metrics.k8s.io/v1beta1") != std::string::npos) {
      EXPECT_NE(v1.body, beta.body);
    }
    // Compressed for a client that accepts gzip, as v1beta1 is.
    const RestResponse packed =
        gzip_handler_.Handle({c.method, "/apis/metrics.k8s.io/v1" + c.path, c.query, true});
    EXPECT_EQ(packed.code, v1.code);
    if (v1.body.size() >= 64) {
      EXPECT_EQ(Gunzip(packed), v1.body);
    }
  }
}

TEST_F(RestHandlerSnapshotTest, V1RouteTemplatesAreStaticAndNameNoObject) {
  const struct {
    std::string path;
    std::string_view route;
  } cases[] = {
      {"/apis/metrics.k8s.io", "/apis/metrics.k8s.io"},
      {"/apis/metrics.k8s.io/v1", "/apis/metrics.k8s.io/v1"},
      {"/apis/metrics.k8s.io/v1/nodes", "/apis/metrics.k8s.io/v1/nodes"},
      {"/apis/metrics.k8s.io/v1/nodes/node-1", "/apis/metrics.k8s.io/v1/nodes/{node}"},
      {"/apis/metrics.k8s.io/v1/pods", "/apis/metrics.k8s.io/v1/pods"},
      {"/apis/metrics.k8s.io/v1/namespaces/shop/pods",
       "/apis/metrics.k8s.io/v1/namespaces/{namespace}/pods"},
      {"/apis/metrics.k8s.io/v1/namespaces/shop/pods/web-1",
       "/apis/metrics.k8s.io/v1/namespaces/{namespace}/pods/{pod}"},
      {"/apis/metrics.k8s.io/v2/nodes", kRouteOther},
      {"/apis/metrics.k8s.io/v1alpha1/nodes", kRouteOther},
      {"/apis/metrics/v1/nodes", kRouteOther},
  };
  for (const auto& c : cases) {
    const RestResponse first = Get(c.path);
    const RestResponse second = Get(c.path);
    EXPECT_EQ(first.route, c.route) << c.path;
    // The same static storage for every request (the label set is bounded).
    EXPECT_EQ(first.route.data(), second.route.data()) << c.path;
    if (c.route == kRouteOther) {
      EXPECT_EQ(first.code, 404) << c.path;
    }
  }
}

TEST_F(RestHandlerSnapshotTest, WholeV1alpha1ListsAreGzippedOncePerSnapshotAndFollowRefreshes) {
  for (const std::string path : {"/apis/metrics/v1alpha1/nodes", "/apis/metrics/v1alpha1/pods"}) {
    const RestResponse first = GetGzip(path);
    ASSERT_EQ(first.code, 200) << path;
    EXPECT_EQ(Gunzip(first), Get(path).body) << path;
    EXPECT_LT(first.body.size(), Get(path).body.size()) << path;
    EXPECT_EQ(GetGzip(path).body, first.body) << path << ": the kept form";
  }

  live_.RemoveNode("node-1");        // node-1 leaves
  live_.RemovePod("shop", "web-2");  // shop/web-2 too
  snapshot_.Refresh();
  const std::string nodes = Gunzip(GetGzip("/apis/metrics/v1alpha1/nodes"));
  EXPECT_EQ(nodes.find("\"node-1\""), std::string::npos);
  EXPECT_EQ(nodes, RenderNodeList(live_.ListNodes(), ListQuery{}, Ctx(GroupVersion::kV1alpha1)));
  const std::string pods = Gunzip(GetGzip("/apis/metrics/v1alpha1/pods"));
  EXPECT_EQ(pods.find("\"web-2\""), std::string::npos);
  EXPECT_EQ(pods, RenderPodList(live_.ListPods(""), ListQuery{}, Ctx(GroupVersion::kV1alpha1)));
}

TEST_F(RestHandlerSnapshotTest, SelectedNamespacedAndV1beta1AnswersAreGzippedPerRequest) {
  const struct {
    std::string path;
    std::string query;
  } cases[] = {
      {"/apis/metrics/v1alpha1/nodes", "labelSelector=zone%3Da"},
      {"/apis/metrics/v1alpha1/nodes", "fieldSelector=metadata.name%3Dnode-2"},
      {"/apis/metrics/v1alpha1/pods", "labelSelector=app%3Dweb"},
      {"/apis/metrics/v1alpha1/namespaces/shop/pods", ""},
      {"/apis/metrics/v1alpha1/nodes", "pretty=true"},
      {"/apis/metrics.k8s.io/v1beta1/nodes", ""},
      {"/apis/metrics.k8s.io/v1beta1/pods", ""},
      {"/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/web-1", ""},
      {"/apis/metrics.k8s.io/v1/nodes", ""},
      {"/apis/metrics.k8s.io/v1/pods", "labelSelector=app%3Dweb"},
      {"/apis/metrics.k8s.io/v1/namespaces/shop/pods/web-1", ""},
  };
  for (const auto& c : cases) {
    const RestResponse identity = Get(c.path, c.query);
    ASSERT_EQ(identity.code, 200) << c.path << "?" << c.query;
    ASSERT_GE(identity.body.size(), 64u) << c.path << "?" << c.query;
    EXPECT_EQ(Gunzip(GetGzip(c.path, c.query)), identity.body) << c.path << "?" << c.query;
  }
  // A Status answer is compressed like any other body.
  const RestResponse missing = GetGzip("/apis/metrics/v1alpha1/nodes/node-9");
  EXPECT_EQ(missing.code, 404);
  EXPECT_NE(Gunzip(missing).find("\"reason\":\"NotFound\""), std::string::npos);
}

TEST_F(RestHandlerSnapshotTest, IdentityWithoutAcceptUnderTheThresholdOrWhenTurnedOff) {
  const std::string path = "/apis/metrics/v1alpha1/nodes";
  const std::string identity = Get(path).body;
  const RestResponse not_accepted = gzip_handler_.Handle(RestRequest{"GET", path, ""});
  EXPECT_TRUE(not_accepted.content_encoding.empty());
  EXPECT_EQ(not_accepted.body, identity);

  const RestHandler high_threshold(snapshot_, clock_, LivenessCheck{},
                                   ResponseCompression{true, identity.size() + 1});
  const RestResponse small = high_threshold.Handle(RestRequest{"GET", path, "", true});
  EXPECT_TRUE(small.content_encoding.empty());
  EXPECT_EQ(small.body, identity);
  const RestHandler at_threshold(snapshot_, clock_, LivenessCheck{},
                                 ResponseCompression{true, identity.size()});
  EXPECT_EQ(Gunzip(at_threshold.Handle(RestRequest{"GET", path, "", true})), identity);

  const RestHandler off(snapshot_, clock_, LivenessCheck{}, ResponseCompression{false, 0});
  const RestResponse plain = off.Handle(RestRequest{"GET", path, "", true});
  EXPECT_TRUE(plain.content_encoding.empty());
  EXPECT_EQ(plain.body, identity);
}

TEST_F(RestHandlerSnapshotTest, ConcurrentFirstGzipRequestsGetOneAndTheSameBody) {
  const std::string identity = Get("/apis/metrics/v1alpha1/pods").body;
  constexpr int kThreads = 8;
  std::vector<std::string> bodies(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] { bodies[i] = GetGzip("/apis/metrics/v1alpha1/pods").body; });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& body : bodies) {
    EXPECT_EQ(body, bodies[0]);
    absl::StatusOr<std::string> unpacked = GzipDecompress(body, 1 << 30);
    ASSERT_TRUE(unpacked.ok()) << unpacked.status();
    EXPECT_EQ(*unpacked, identity);
  }
}

TEST_F(RestHandlerSnapshotTest, PrepareMakesWhatWasAskedForLatelyForTheNewSnapshot) {
  // Nothing asked for yet: nothing to prepare.
  RestHandler::Prepared prepared = gzip_handler_.Prepare();
  EXPECT_FALSE(prepared.node_items || prepared.nodes_gzip || prepared.pods_gzip);

  // A gzip client asks for every node.
  ASSERT_EQ(GetGzip("/apis/metrics/v1alpha1/nodes").code, 200);
  // The same snapshot is already prepared (the request made its parts).
  prepared = gzip_handler_.Prepare();
  EXPECT_FALSE(prepared.node_items || prepared.nodes_gzip || prepared.pods_gzip);

  live_.RemoveNode("node-1");  // node-1 leaves
  snapshot_.Refresh();
  clock_.Advance(std::chrono::seconds(10));
  prepared = gzip_handler_.Prepare();
  EXPECT_TRUE(prepared.node_items);
  EXPECT_TRUE(prepared.nodes_gzip);
  EXPECT_FALSE(prepared.pods_gzip);
  // Prepared once per snapshot.
  prepared = gzip_handler_.Prepare();
  EXPECT_FALSE(prepared.node_items || prepared.nodes_gzip);
  // What was prepared is the new snapshot's answer.
  const std::string nodes = Gunzip(GetGzip("/apis/metrics/v1alpha1/nodes"));
  EXPECT_EQ(nodes.find("\"node-1\""), std::string::npos);
  EXPECT_EQ(nodes, RenderNodeList(live_.ListNodes(), ListQuery{}, Ctx(GroupVersion::kV1alpha1)));

  // A selected list uses the node items, but not the whole list's gzip form.
  clock_.Advance(RestHandler::kPrepareIfAskedWithin + std::chrono::seconds(1));
  ASSERT_EQ(Get("/apis/metrics/v1alpha1/nodes", "labelSelector=zone%3Da").code, 200);
  snapshot_.Refresh();
  prepared = gzip_handler_.Prepare();
  EXPECT_FALSE(prepared.node_items) << "asked of the other handler";
  ASSERT_EQ(
      gzip_handler_.Handle({"GET", "/apis/metrics/v1alpha1/nodes", "labelSelector=zone%3Da"}).code,
      200);
  snapshot_.Refresh();
  prepared = gzip_handler_.Prepare();
  EXPECT_TRUE(prepared.node_items);
  EXPECT_FALSE(prepared.nodes_gzip) << "asked more than a minute ago";

  // Nothing asked for within the last minute: nothing prepared.
  clock_.Advance(RestHandler::kPrepareIfAskedWithin + std::chrono::seconds(1));
  snapshot_.Refresh();
  prepared = gzip_handler_.Prepare();
  EXPECT_FALSE(prepared.node_items || prepared.nodes_gzip || prepared.pods_gzip);
}

TEST_F(RestHandlerSnapshotTest, PrepareMakesTheWholePodListGzipWhenAskedFor) {
  ASSERT_EQ(GetGzip("/apis/metrics/v1alpha1/pods").code, 200);
  live_.RemovePod("shop", "web-2");  // shop/web-2 leaves
  snapshot_.Refresh();
  const RestHandler::Prepared prepared = gzip_handler_.Prepare();
  EXPECT_TRUE(prepared.pods_gzip);
  EXPECT_FALSE(prepared.nodes_gzip);
  const std::string pods = Gunzip(GetGzip("/apis/metrics/v1alpha1/pods"));
  EXPECT_EQ(pods.find("\"web-2\""), std::string::npos);
  EXPECT_EQ(pods, RenderPodList(live_.ListPods(""), ListQuery{}, Ctx(GroupVersion::kV1alpha1)));
}

}  // namespace
}  // namespace kubestat::aggregator
