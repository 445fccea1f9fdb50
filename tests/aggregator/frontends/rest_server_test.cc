#include "kubestat/aggregator/frontends/rest_server.h"

// cpprestsdk's U() macro collides with GoogleTest's template parameters.
#define _TURN_OFF_PLATFORM_STRING

#include <cpprest/http_client.h>
#include <cpprest/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "kubestat/apimachinery/label_selector.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/gzip.h"
#include "kubestat/core/time.h"
#include "kubestat/testing/aggregator/rest_test_access.h"
#include "kubestat/testing/aggregator/standard_cluster_source.h"
#include "kubestat/testing/fixtures.h"
#include "kubestat/testing/metrics_encodings.h"

namespace kubestat::aggregator {
namespace {

using kubestat::testing::Shown;
using kubestat::testing::ShownAlike;
using rest_testing::AllowEveryone;
using rest_testing::EndTime;
using rest_testing::FakeMetricsSource;
using rest_testing::FillStandardCluster;
using rest_testing::PlainOptions;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kV1[] = "/apis/metrics.k8s.io/v1";
constexpr char kV1beta1[] = "/apis/metrics.k8s.io/v1beta1";
constexpr char kV1alpha1[] = "/apis/metrics/v1alpha1";
// What kubectl top and the HPA send (client-go with ContentType protobuf).
constexpr char kClientGoAccept[] = "application/vnd.kubernetes.protobuf, */*";

struct Reply {
  int code = 0;
  std::string content_type;
  std::string body;
  web::json::value Json() const { return web::json::value::parse(body); }
};

// What a client sees: the raw body and the encoding headers (asking for gzip and a media type
// when given).
struct RawReply {
  int code = 0;
  std::string content_type;
  std::string content_encoding;
  std::string vary;
  std::string body;
};

RawReply GetRaw(web::http::client::http_client& client, const std::string& path,
                const std::string& accept_encoding, const std::string& accept = "") {
  web::http::http_request request("GET");
  request.set_request_uri(path);
  if (!accept_encoding.empty()) request.headers().add("Accept-Encoding", accept_encoding);
  if (!accept.empty()) request.headers().add("Accept", accept);
  web::http::http_response response = client.request(request).get();
  RawReply reply;
  reply.code = response.status_code();
  auto header = [&](const std::string& name) {
    auto it = response.headers().find(name);
    return it == response.headers().end() ? std::string() : it->second;
  };
  reply.content_type = header("Content-Type");
  reply.content_encoding = header("Content-Encoding");
  reply.vary = header("Vary");
  const std::vector<unsigned char> bytes = response.extract_vector().get();
  reply.body.assign(bytes.begin(), bytes.end());
  return reply;
}

class RestServerTest : public ::testing::Test {
 protected:
  RestServerTest() : clock_(EndTime() + seconds(20)) {}

  void SetUp() override {
    FillStandardCluster(source_);
    last_round_ = clock_.Now();
    RestServerOptions options = PlainOptions();
    options.secure.limits.max_body_bytes = 1024;
    options.secure.limits.max_header_bytes = 4096;
    options.secure.limits.max_target_bytes = 4096;
    server_ = std::make_unique<RestServer>(
        options, source_, registry_, clock_,
        LivenessCheck{[this] { return last_round_.load(); }, seconds(10)}, access_.Control());
    ASSERT_TRUE(server_->Start().ok());
    client_ = std::make_unique<web::http::client::http_client>(server_->BaseUrl());
  }

  void TearDown() override {
    client_.reset();
    server_.reset();
  }

  Reply Request(const std::string& method, const std::string& path_and_query,
                const std::map<std::string, std::string>& headers = {}, std::string body = "") {
    web::http::http_request request(method);
    request.set_request_uri(path_and_query);
    for (const auto& [name, value] : headers) request.headers().add(name, value);
    if (!body.empty()) request.set_body(std::move(body), "application/octet-stream");
    web::http::http_response response = client_->request(request).get();
    Reply reply;
    reply.code = response.status_code();
    reply.content_type = response.headers().content_type();
    reply.body = response.extract_utf8string(true).get();
    return reply;
  }
  Reply Get(const std::string& path_and_query,
            const std::map<std::string, std::string>& headers = {}) {
    return Request("GET", path_and_query, headers);
  }

  // Checks that `reply` is a Kubernetes Status with `code` and `reason`; returns its message.
  static std::string ExpectStatus(const Reply& reply, int code, const std::string& reason) {
    EXPECT_EQ(reply.code, code) << reply.body;
    EXPECT_EQ(reply.content_type, "application/json");
    web::json::value status = reply.Json();
    EXPECT_EQ(status.at("kind").as_string(), "Status");
    EXPECT_EQ(status.at("apiVersion").as_string(), "v1");
    EXPECT_EQ(status.at("status").as_string(), "Failure");
    EXPECT_EQ(status.at("code").as_integer(), code);
    EXPECT_EQ(status.at("reason").as_string(), reason);
    return status.at("message").as_string();
  }

  FakeClock clock_;
  FakeMetricsSource source_;
  prometheus::Registry registry_;
  AllowEveryone access_{clock_};
  std::atomic<Timestamp> last_round_;
  std::unique_ptr<RestServer> server_;
  std::unique_ptr<web::http::client::http_client> client_;
};

TEST_F(RestServerTest, StartOnPortZeroReportsTheBoundPort) {
  EXPECT_GT(server_->port(), 0);
  EXPECT_EQ(server_->BaseUrl(), "http://127.0.0.1:" + std::to_string(server_->port()));
  EXPECT_EQ(Get("/healthz").code, 200);
}

TEST_F(RestServerTest, StartOnAPortInUseIsUnavailable) {
  RestServerOptions options = PlainOptions();
  options.secure.port = server_->port();
  prometheus::Registry registry;
  RestServer second(options, source_, registry, clock_, LivenessCheck{}, access_.Control());
  absl::Status status = second.Start();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
}

TEST_F(RestServerTest, OptionsValidateNamesTheBadField) {
  RestServerOptions options;
  EXPECT_TRUE(options.Validate().ok());
  options.secure.port = 70000;
  EXPECT_THAT(std::string(options.Validate().message()), HasSubstr("port"));
  options = RestServerOptions{};
  options.always_allow_paths = {"healthz"};
  EXPECT_THAT(std::string(options.Validate().message()), HasSubstr("always_allow_paths"));
  options = RestServerOptions{};
  options.insecure = options.secure;
  EXPECT_THAT(std::string(options.Validate().message()), HasSubstr("metrics_name"));
  options = RestServerOptions{};
  options.secure.address = "";
  EXPECT_FALSE(options.Validate().ok());
  prometheus::Registry registry;
  RestServer bad(options, source_, registry, clock_, LivenessCheck{}, access_.Control());
  EXPECT_EQ(bad.Start().code(), absl::StatusCode::kInvalidArgument);
  RestServer unguarded(PlainOptions(), source_, registry, clock_, LivenessCheck{}, {});
  EXPECT_EQ(unguarded.Start().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RestServerTest, V1beta1NodeOverHttpIsExactJson) {
  Reply reply = Get(std::string(kV1beta1) + "/nodes/node-1");
  EXPECT_EQ(reply.code, 200);
  EXPECT_EQ(reply.content_type, "application/json");
  EXPECT_EQ(reply.body, R"({"kind":"NodeMetrics","apiVersion":"metrics.k8s.io/v1beta1",)"
                        R"("metadata":{"name":"node-1","creationTimestamp":"2026-11-21T10:00:30Z",)"
                        R"("labels":{"role":"worker","zone":"a"}},)"
                        R"("timestamp":"2026-11-21T10:00:10Z","window":"10s",)"
                        R"("usage":{"cpu":"120m","memory":"302Mi"}})");
}

TEST_F(RestServerTest, V1NodeOverHttpIsExactJson) {
  Reply reply = Get(std::string(kV1) + "/nodes/node-1");
  EXPECT_EQ(reply.code, 200);
  EXPECT_EQ(reply.content_type, "application/json");
  EXPECT_EQ(reply.body, R"({"kind":"NodeMetrics","apiVersion":"metrics.k8s.io/v1",)"
                        R"("metadata":{"name":"node-1","creationTimestamp":"2026-11-21T10:00:30Z",)"
                        R"("labels":{"role":"worker","zone":"a"}},)"
                        R"("timestamp":"2026-11-21T10:00:10Z","window":"10s",)"
                        R"("usage":{"cpu":"120m","memory":"302Mi"}})");
}

TEST_F(RestServerTest, EveryListPathServesItsObjects) {
  for (const std::string version : {kV1, kV1beta1}) {
    SCOPED_TRACE(version);
    const std::string api_version = version.substr(std::string("/apis/").size());
    web::json::value nodes = Get(version + "/nodes").Json();
    EXPECT_EQ(nodes.at("kind").as_string(), "NodeMetricsList");
    EXPECT_EQ(nodes.at("apiVersion").as_string(), api_version);
    EXPECT_EQ(nodes.at("items").size(), 2u);
    web::json::value pods = Get(version + "/pods").Json();
    EXPECT_EQ(pods.at("apiVersion").as_string(), api_version);
    EXPECT_EQ(pods.at("items").size(), 4u);
    web::json::value shop = Get(version + "/namespaces/shop/pods").Json();
    EXPECT_EQ(shop.at("kind").as_string(), "PodMetricsList");
    EXPECT_EQ(shop.at("items").size(), 3u);
    web::json::value pod = Get(version + "/namespaces/shop/pods/web-2").Json();
    EXPECT_EQ(pod.at("apiVersion").as_string(), api_version);
    EXPECT_EQ(pod.at("containers").at(0).at("usage").at("memory").as_string(), "100Mi");
    web::json::value node = Get(version + "/nodes/node-2/").Json();
    EXPECT_EQ(node.at("apiVersion").as_string(), api_version);
    EXPECT_EQ(node.at("usage").at("cpu").as_string(), "1500m");
  }

  web::json::value alpha_nodes = Get(std::string(kV1alpha1) + "/nodes/").Json();
  EXPECT_EQ(alpha_nodes.at("apiVersion").as_string(), "metrics/v1alpha1");
  EXPECT_EQ(alpha_nodes.at("items").size(), 3u);
  web::json::value alpha_node = Get(std::string(kV1alpha1) + "/nodes/node-2").Json();
  EXPECT_EQ(alpha_node.at("systemContainers").at(0).at("metadata").at("name").as_string(),
            "kubelet");
  EXPECT_EQ(alpha_node.at("machine").at("1d").at("max").at("cpu").as_string(), "3");
  web::json::value alpha_pods = Get(std::string(kV1alpha1) + "/pods").Json();
  EXPECT_EQ(alpha_pods.at("items").size(), 4u);
  web::json::value alpha_ns = Get(std::string(kV1alpha1) + "/namespaces/kube-system/pods").Json();
  ASSERT_EQ(alpha_ns.at("items").size(), 1u);
  web::json::value alpha_pod =
      Get(std::string(kV1alpha1) + "/namespaces/kube-system/pods/coredns-1").Json();
  EXPECT_EQ(alpha_pod.at("pod").at("10s").at("mean").at("memory").as_string(), "15Mi");
}

TEST_F(RestServerTest, SelectorsInTheQueryString) {
  for (const std::string version : {kV1, kV1beta1}) {
    web::json::value pods =
        Get(version + "/pods?labelSelector=app%20in%20(web)&fieldSelector=spec.nodeName%3Dnode-2")
            .Json();
    ASSERT_EQ(pods.at("items").size(), 1u) << version;
    EXPECT_EQ(pods.at("items").at(0).at("metadata").at("name").as_string(), "web-2") << version;
    web::json::value nodes = Get(version + "/nodes?labelSelector=role%3Dworker").Json();
    ASSERT_EQ(nodes.at("items").size(), 1u) << version;  // node-3 has no memory
    EXPECT_EQ(nodes.at("items").at(0).at("metadata").at("name").as_string(), "node-1") << version;
  }
  web::json::value nodes = Get(std::string(kV1alpha1) + "/nodes?labelSelector=!zone").Json();
  ASSERT_EQ(nodes.at("items").size(), 1u);
  EXPECT_EQ(nodes.at("items").at(0).at("metadata").at("name").as_string(), "node-3");
}

TEST_F(RestServerTest, BadLabelSelectorIs400WithTheParsersMessage) {
  for (const std::string version : {kV1, kV1beta1}) {
    const std::string message =
        ExpectStatus(Get(version + "/pods?labelSelector=app%20in%20(web"), 400, "BadRequest");
    EXPECT_EQ(message, std::string(LabelSelector::Parse("app in (web").status().message()))
        << version;
  }
}

TEST_F(RestServerTest, BadFieldSelectorIs400) {
  ExpectStatus(Get(std::string(kV1alpha1) + "/nodes?fieldSelector=a%3Db%3Dc"), 400, "BadRequest");
}

TEST_F(RestServerTest, UnsupportedFieldLabelIs400) {
  for (const std::string version : {kV1, kV1beta1}) {
    const std::string message = ExpectStatus(
        Get(version + "/pods?fieldSelector=status.phase%3DRunning"), 400, "BadRequest");
    EXPECT_EQ(message, "field label not supported: status.phase") << version;
  }
}

TEST_F(RestServerTest, UnknownPathsAre404Status) {
  for (const std::string& path :
       {std::string(kV1beta1) + "/namespaces/", std::string(kV1beta1) + "/namespaces/shop",
        std::string(kV1alpha1) + "/namespaces/", std::string(kV1alpha1) + "/namespaces/shop",
        std::string(kV1beta1) + "/namespaces/shop/pods/web-1/extra",
        std::string(kV1beta1) + "/deployments", std::string(kV1) + "/namespaces/",
        std::string(kV1) + "/namespaces/shop", std::string(kV1) + "/deployments",
        std::string("/apis/metrics.k8s.io/v2"), std::string("/apis/metrics.k8s.io/v1alpha1/nodes"),
        std::string("/apis/metrics/v1"), std::string("/apis/metrics/v1beta1/nodes"),
        std::string("/apis/other.io"), std::string("/nope"), std::string("/")}) {
    SCOPED_TRACE(path);
    EXPECT_EQ(ExpectStatus(Get(path), 404, "NotFound"),
              "the server could not find the requested resource");
  }
}

TEST_F(RestServerTest, UnknownObjectsAre404WithTheirQualifiedResource) {
  EXPECT_EQ(ExpectStatus(Get(std::string(kV1beta1) + "/nodes/x"), 404, "NotFound"),
            "nodes.metrics.k8s.io \"x\" not found");
  EXPECT_EQ(
      ExpectStatus(Get(std::string(kV1beta1) + "/namespaces/shop/pods/nope"), 404, "NotFound"),
      "pods.metrics.k8s.io \"nope\" not found");
  EXPECT_EQ(ExpectStatus(Get(std::string(kV1) + "/nodes/x"), 404, "NotFound"),
            "nodes.metrics.k8s.io \"x\" not found");
  EXPECT_EQ(ExpectStatus(Get(std::string(kV1) + "/namespaces/shop/pods/nope"), 404, "NotFound"),
            "pods.metrics.k8s.io \"nope\" not found");
  ExpectStatus(Get(std::string(kV1) + "/nodes/node-3"), 404, "NotFound");
  EXPECT_EQ(Get(std::string(kV1) + "/nodes/x").body, Get(std::string(kV1beta1) + "/nodes/x").body);
  EXPECT_EQ(ExpectStatus(Get(std::string(kV1alpha1) + "/nodes/x"), 404, "NotFound"),
            "nodes.metrics \"x\" not found");
  // A pod of another namespace is not found in this one.
  ExpectStatus(Get(std::string(kV1beta1) + "/namespaces/kube-system/pods/web-1"), 404, "NotFound");
  // node-3 has no memory samples: metrics.k8s.io does not serve it.
  ExpectStatus(Get(std::string(kV1beta1) + "/nodes/node-3"), 404, "NotFound");
  web::json::value details = Get(std::string(kV1beta1) + "/nodes/x").Json().at("details");
  EXPECT_EQ(details.at("name").as_string(), "x");
  EXPECT_EQ(details.at("group").as_string(), "metrics.k8s.io");
  EXPECT_EQ(details.at("kind").as_string(), "nodes");
}

TEST_F(RestServerTest, MethodsOtherThanGetAre405) {
  EXPECT_EQ(
      ExpectStatus(Request("POST", std::string(kV1beta1) + "/nodes"), 405, "MethodNotAllowed"),
      "create is not supported on resources of kind \"nodes.metrics.k8s.io\"");
  EXPECT_EQ(ExpectStatus(Request("DELETE", std::string(kV1beta1) + "/namespaces/shop/pods/web-1"),
                         405, "MethodNotAllowed"),
            "delete is not supported on resources of kind \"pods.metrics.k8s.io\"");
  EXPECT_EQ(ExpectStatus(Request("POST", std::string(kV1) + "/nodes"), 405, "MethodNotAllowed"),
            "create is not supported on resources of kind \"nodes.metrics.k8s.io\"");
  EXPECT_EQ(ExpectStatus(Request("DELETE", std::string(kV1) + "/namespaces/shop/pods/web-1"), 405,
                         "MethodNotAllowed"),
            "delete is not supported on resources of kind \"pods.metrics.k8s.io\"");
  ExpectStatus(Request("PUT", std::string(kV1) + "/nodes/node-1"), 405, "MethodNotAllowed");
  ExpectStatus(Request("PUT", std::string(kV1alpha1) + "/nodes/node-1"), 405, "MethodNotAllowed");
  ExpectStatus(Request("PATCH", "/apis"), 405, "MethodNotAllowed");
  ExpectStatus(Request("POST", "/metrics"), 405, "MethodNotAllowed");
  ExpectStatus(Request("DELETE", "/healthz"), 405, "MethodNotAllowed");
}

TEST_F(RestServerTest, BodyOverTheCapIs413) {
  const std::string message =
      ExpectStatus(Request("GET", std::string(kV1beta1) + "/nodes", {}, std::string(2048, 'x')),
                   413, "RequestEntityTooLarge");
  EXPECT_THAT(message, HasSubstr("1024"));
  // A body under the cap is ignored.
  EXPECT_EQ(Request("GET", std::string(kV1beta1) + "/nodes", {}, std::string(100, 'x')).code, 200);
}

TEST_F(RestServerTest, HeadersOverTheCapAre431AndLongTargets414) {
  const Reply headers =
      Get(std::string(kV1beta1) + "/nodes", {{"X-Padding", std::string(5000, 'p')}});
  EXPECT_EQ(headers.code, 431) << headers.body;
  EXPECT_THAT(headers.body, HasSubstr("\"kind\":\"Status\""));
  const Reply target =
      Get(std::string(kV1beta1) + "/nodes?labelSelector=" + std::string(5000, 'a'));
  EXPECT_EQ(target.code, 414) << target.body;
  EXPECT_EQ(Get("/healthz").code, 200);
}

TEST_F(RestServerTest, MetricPathsAre503UntilTheSourceIsReady) {
  source_.SetReady(false);
  for (const std::string& path :
       {std::string(kV1beta1) + "/nodes", std::string(kV1beta1) + "/nodes/node-1",
        std::string(kV1beta1) + "/namespaces/shop/pods", std::string(kV1alpha1) + "/pods",
        std::string(kV1) + "/nodes", std::string(kV1) + "/namespaces/shop/pods/web-1"}) {
    SCOPED_TRACE(path);
    ExpectStatus(Get(path), 503, "ServiceUnavailable");
  }
  // Discovery and health answer.
  EXPECT_EQ(Get(kV1beta1).code, 200);
  EXPECT_EQ(Get(kV1).code, 200);
  EXPECT_EQ(Get("/apis/metrics.k8s.io").code, 200);
  EXPECT_EQ(Get("/apis").code, 200);
  EXPECT_EQ(Get("/healthz").code, 200);
  Reply readyz = Get("/readyz?verbose");
  EXPECT_EQ(readyz.code, 503);
  EXPECT_EQ(readyz.body,
            "[+]ping ok\n[-]startup failed: the metrics source is not ready (store rebuild or "
            "discovery sync in progress)\nreadyz check failed");
  // Without ?verbose the reason is withheld (health paths need no credentials).
  EXPECT_EQ(Get("/readyz").body,
            "[+]ping ok\n[-]startup failed: reason withheld\nreadyz check failed");

  source_.SetReady(true);
  EXPECT_EQ(Get(std::string(kV1beta1) + "/nodes").code, 200);
  EXPECT_EQ(Get(std::string(kV1) + "/nodes").code, 200);
  EXPECT_EQ(Get("/readyz").body, "ok");
  EXPECT_EQ(Get("/readyz?verbose").body, "[+]ping ok\n[+]startup ok\nreadyz check passed\n");
  // The failure was noticed once, and is over.
  const std::string metrics = Get("/metrics").body;
  EXPECT_THAT(
      metrics,
      HasSubstr("kubestat_health_check_failures_total{check=\"startup\",endpoint=\"readyz\"} 1"));
  EXPECT_THAT(metrics,
              HasSubstr("kubestat_health_check_failing{check=\"startup\",endpoint=\"readyz\"} 0"));
}

TEST_F(RestServerTest, SourceExceptionsAre500AndTheServerKeepsServing) {
  source_.SetThrowOnRead(true);
  const std::string message =
      ExpectStatus(Get(std::string(kV1beta1) + "/nodes"), 500, "InternalError");
  EXPECT_THAT(message, HasSubstr("store read failed"));
  ExpectStatus(Get(std::string(kV1alpha1) + "/namespaces/shop/pods/web-1"), 500, "InternalError");
  source_.SetThrowOnRead(false);
  EXPECT_EQ(Get(std::string(kV1beta1) + "/nodes").code, 200);
}

TEST_F(RestServerTest, PrettyIndentsObjectsListsDiscoveryAndErrors) {
  for (const std::string& path :
       {std::string(kV1beta1) + "/nodes/node-1?pretty=true",
        std::string(kV1beta1) + "/pods?pretty=1", std::string(kV1beta1) + "?pretty=true",
        std::string(kV1beta1) + "/nodes/x?pretty=true",
        std::string(kV1) + "/nodes/node-1?pretty=true", std::string(kV1) + "/pods?pretty=1",
        std::string(kV1) + "?pretty=true", std::string(kV1) + "/nodes/x?pretty=true",
        std::string("/apis/metrics.k8s.io?pretty=true"), std::string("/apis?pretty")}) {
    SCOPED_TRACE(path);
    Reply reply = Get(path);
    EXPECT_THAT(reply.body, StartsWith("{\n  \"kind\": "));
    const std::string compact_path = path.substr(0, path.find('?'));
    EXPECT_EQ(reply.Json(), Get(compact_path).Json());
  }
  EXPECT_THAT(Get(std::string(kV1beta1) + "/nodes?pretty=false").body, StartsWith("{\"kind\":"));
  EXPECT_THAT(Get(std::string(kV1) + "/nodes?pretty=false").body, StartsWith("{\"kind\":"));
}

TEST_F(RestServerTest, MetricsK8sIoAnswersProtobufThatDecodesToTheJsonObjects) {
  web::http::client::http_client client(server_->BaseUrl());
  for (const char* gv : {kV1beta1, kV1}) {
    for (const char* path : {"/nodes", "/nodes/node-1", "/pods", "/namespaces/shop/pods",
                             "/namespaces/shop/pods/web-1", "/pods?labelSelector=app%3Dweb",
                             "/nodes?limit=1", "/pods?fieldSelector=spec.nodeName%3Dnode-1"}) {
      const std::string target = std::string(gv) + path;
      SCOPED_TRACE(target);
      const RawReply pb = GetRaw(client, target, "", kClientGoAccept);
      ASSERT_EQ(pb.code, 200);
      EXPECT_EQ(pb.content_type, "application/vnd.kubernetes.protobuf");
      EXPECT_EQ(pb.vary, "Accept-Encoding, Accept");
      const RawReply json = GetRaw(client, target, "", "application/json");
      ASSERT_EQ(json.code, 200);
      EXPECT_EQ(json.content_type, "application/json");
      absl::StatusOr<Shown> from_pb = ShownAlike(pb.body, json.body);
      ASSERT_TRUE(from_pb.ok()) << from_pb.status();
      EXPECT_FALSE(from_pb->items.empty());
      EXPECT_EQ(from_pb->api_version, std::string(gv).substr(std::string("/apis/").size()));
    }
  }
  // As client-go's other form of the header, and protobuf alone.
  for (const char* accept : {"application/vnd.kubernetes.protobuf,application/json",
                             "application/vnd.kubernetes.protobuf"}) {
    EXPECT_EQ(GetRaw(client, std::string(kV1beta1) + "/nodes/node-1", "", accept).content_type,
              "application/vnd.kubernetes.protobuf")
        << accept;
  }
  // Without Accept, with */* or JSON first: JSON.
  for (const char* accept : {"", "*/*", "application/json, application/vnd.kubernetes.protobuf"}) {
    EXPECT_EQ(GetRaw(client, std::string(kV1beta1) + "/nodes/node-1", "", accept).content_type,
              "application/json")
        << accept;
  }
}

TEST_F(RestServerTest, ProtobufClientsGetJsonForV1alpha1DiscoveryAndErrors) {
  web::http::client::http_client client(server_->BaseUrl());
  const RawReply alpha = GetRaw(client, std::string(kV1alpha1) + "/nodes", "", kClientGoAccept);
  EXPECT_EQ(alpha.code, 200);
  EXPECT_EQ(alpha.content_type, "application/json");
  EXPECT_EQ(alpha.vary, "Accept-Encoding, Accept");
  for (const char* path : {"/api", "/apis", "/apis/metrics.k8s.io", kV1beta1}) {
    const RawReply discovery = GetRaw(client, path, "", kClientGoAccept);
    EXPECT_EQ(discovery.code, 200) << path;
    EXPECT_EQ(discovery.content_type, "application/json") << path;
    EXPECT_EQ(discovery.vary, "Accept-Encoding") << path;
  }
  // Status errors are JSON: client-go decodes a body by its Content-Type.
  const Reply missing =
      Get(std::string(kV1beta1) + "/nodes/nope", {{"Accept", std::string(kClientGoAccept)}});
  EXPECT_EQ(ExpectStatus(missing, 404, "NotFound"), "nodes.metrics.k8s.io \"nope\" not found");
  const Reply bad = Get(std::string(kV1) + "/pods?labelSelector=app+in+(x",
                        {{"Accept", std::string(kClientGoAccept)}});
  ExpectStatus(bad, 400, "BadRequest");
}

TEST_F(RestServerTest, AnAcceptNothingOfferedFitsIs406NotAcceptable) {
  EXPECT_EQ(ExpectStatus(Get(std::string(kV1beta1) + "/nodes", {{"Accept", "application/yaml"}}),
                         406, "NotAcceptable"),
            "only the following media types are accepted: application/json, "
            "application/vnd.kubernetes.protobuf");
  EXPECT_EQ(ExpectStatus(Get(std::string(kV1) + "/namespaces/shop/pods/web-1",
                             {{"Accept", "application/json;q=0, text/html"}}),
                         406, "NotAcceptable"),
            "only the following media types are accepted: application/json, "
            "application/vnd.kubernetes.protobuf");
  // metrics/v1alpha1 has no protobuf form.
  EXPECT_EQ(ExpectStatus(Get(std::string(kV1alpha1) + "/nodes",
                             {{"Accept", "application/vnd.kubernetes.protobuf"}}),
                         406, "NotAcceptable"),
            "only the following media types are accepted: application/json");
  // Discovery answers JSON whatever is asked, as before.
  EXPECT_EQ(Get("/apis", {{"Accept", "application/yaml"}}).code, 200);
}

TEST_F(RestServerTest, AnswersAreCountedByContentType) {
  web::http::client::http_client client(server_->BaseUrl());
  ASSERT_EQ(GetRaw(client, std::string(kV1beta1) + "/nodes", "", kClientGoAccept).code, 200);
  ASSERT_EQ(GetRaw(client, std::string(kV1beta1) + "/nodes", "", kClientGoAccept).code, 200);
  ASSERT_EQ(GetRaw(client, std::string(kV1beta1) + "/nodes", "", "").code, 200);
  const std::string text = Get("/metrics").body;
  EXPECT_THAT(text, HasSubstr("kubestat_http_responses_total{content_type=\"application/"
                              "vnd.kubernetes.protobuf\",route=\"/apis/metrics.k8s.io/v1beta1/"
                              "nodes\",server=\"secure\"} 2"));
  EXPECT_THAT(text, HasSubstr("kubestat_http_responses_total{content_type=\"application/json\","
                              "route=\"/apis/metrics.k8s.io/v1beta1/nodes\",server=\"secure\"} 1"));
}

TEST_F(RestServerTest, AggregatedDiscoveryAcceptGetsThePlainForm) {
  const std::map<std::string, std::string> accept = {
      {"Accept",
       "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
       "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
       "application/json"}};
  Reply apis = Get("/apis", accept);
  EXPECT_EQ(apis.code, 200);
  EXPECT_EQ(apis.content_type, "application/json");
  EXPECT_EQ(apis.Json().at("kind").as_string(), "APIGroupList");
  EXPECT_EQ(Get("/api", accept).Json().at("kind").as_string(), "APIVersions");
}

TEST_F(RestServerTest, DiscoveryDocuments) {
  const Reply apis_reply = Get("/apis");
  EXPECT_EQ(apis_reply.body,
            R"({"kind":"APIGroupList","apiVersion":"v1","groups":[)"
            R"({"name":"metrics.k8s.io","versions":[)"
            R"({"groupVersion":"metrics.k8s.io/v1","version":"v1"},)"
            R"({"groupVersion":"metrics.k8s.io/v1beta1","version":"v1beta1"}],)"
            R"("preferredVersion":{"groupVersion":"metrics.k8s.io/v1","version":"v1"}},)"
            R"({"name":"metrics","versions":[{"groupVersion":"metrics/v1alpha1",)"
            R"("version":"v1alpha1"}],"preferredVersion":{"groupVersion":"metrics/v1alpha1",)"
            R"("version":"v1alpha1"}}]})");
  web::json::value apis = apis_reply.Json();
  ASSERT_EQ(apis.at("groups").size(), 2u);
  EXPECT_EQ(apis.at("groups").at(0).at("name").as_string(), "metrics.k8s.io");
  EXPECT_EQ(apis.at("groups").at(1).at("preferredVersion").at("groupVersion").as_string(),
            "metrics/v1alpha1");
  const Reply group_reply = Get("/apis/metrics.k8s.io");
  EXPECT_EQ(group_reply.body,
            R"({"kind":"APIGroup","apiVersion":"v1","name":"metrics.k8s.io","versions":[)"
            R"({"groupVersion":"metrics.k8s.io/v1","version":"v1"},)"
            R"({"groupVersion":"metrics.k8s.io/v1beta1","version":"v1beta1"}],)"
            R"("preferredVersion":{"groupVersion":"metrics.k8s.io/v1","version":"v1"}})");
  EXPECT_EQ(Get("/apis/metrics.k8s.io/").body, group_reply.body);
  web::json::value group = group_reply.Json();
  EXPECT_EQ(group.at("kind").as_string(), "APIGroup");
  EXPECT_EQ(group.at("versions").at(0).at("version").as_string(), "v1");
  EXPECT_EQ(group.at("versions").at(1).at("version").as_string(), "v1beta1");
  EXPECT_EQ(group.at("preferredVersion").at("version").as_string(), "v1");
  EXPECT_EQ(Get("/apis/metrics/").Json().at("name").as_string(), "metrics");
  EXPECT_EQ(Get("/api").Json().at("kind").as_string(), "APIVersions");
  web::json::value alpha = Get(std::string(kV1alpha1) + "/").Json();
  EXPECT_EQ(alpha.at("kind").as_string(), "APIResourceList");
  EXPECT_EQ(alpha.at("groupVersion").as_string(), "metrics/v1alpha1");

  KUBESTAT_REQUIRE_FIXTURES();
  const web::json::value fixture = web::json::value::parse(kubestat::testing::ReadFixture(
      "metrics-k8s-io/keda-issue-210_APIResourceList_metrics.k8s.io-v1beta1.json"));
  const web::json::value beta = Get(std::string(kV1beta1) + "/").Json();
  for (const auto& [key, value] : fixture.as_object()) {
    EXPECT_EQ(beta.at(key), value) << key;
  }
  EXPECT_EQ(beta, fixture);
  // v1's APIResourceList is v1beta1's under its own group version.
  web::json::value v1 = Get(std::string(kV1) + "/").Json();
  EXPECT_EQ(v1.at("groupVersion").as_string(), "metrics.k8s.io/v1");
  v1["groupVersion"] = fixture.at("groupVersion");
  EXPECT_EQ(v1, fixture);
}

TEST_F(RestServerTest, HealthzIsOk) {
  Reply reply = Get("/healthz");
  EXPECT_EQ(reply.code, 200);
  EXPECT_EQ(reply.body, "ok");
  EXPECT_THAT(reply.content_type, StartsWith("text/plain"));
}

TEST_F(RestServerTest, LivezFailsWhenTheLastRoundStartedOverOneAndAHalfResolutionsAgo) {
  EXPECT_EQ(Get("/livez").code, 200);
  clock_.Advance(seconds(15));  // exactly 1.5 resolutions: still live
  EXPECT_EQ(Get("/livez").body, "ok");
  clock_.Advance(seconds(1));
  Reply reply = Get("/livez?verbose");
  EXPECT_EQ(reply.code, 500);
  EXPECT_THAT(reply.body,
              HasSubstr("[-]scrape-rounds failed: the last scrape round started 16s ago"));
  EXPECT_THAT(reply.body, HasSubstr("15s"));
  last_round_ = clock_.Now();  // a new round started
  EXPECT_EQ(Get("/livez").code, 200);
}

TEST_F(RestServerTest, LivezCountsFromStartUntilTheFirstRound) {
  last_round_ = kZeroTime;
  EXPECT_EQ(Get("/livez").code, 200);
  clock_.Advance(seconds(16));
  EXPECT_EQ(Get("/livez").code, 500);
}

TEST_F(RestServerTest, MetricsExposesHttpCountersByRouteTemplate) {
  ASSERT_EQ(Get(std::string(kV1beta1) + "/namespaces/shop/pods").code, 200);
  ASSERT_EQ(Get(std::string(kV1beta1) + "/namespaces/shop/pods").code, 200);
  ASSERT_EQ(Get(std::string(kV1beta1) + "/namespaces/shop/pods/nope").code, 404);
  ASSERT_EQ(Get(std::string(kV1) + "/namespaces/shop/pods").code, 200);
  ASSERT_EQ(Get(std::string(kV1) + "/nodes/node-1").code, 200);
  ASSERT_EQ(Get(std::string(kV1) + "/nodes/node-1").code, 200);
  ASSERT_EQ(Get(std::string(kV1) + "/nodes/node-2").code, 200);
  ASSERT_EQ(Get(std::string(kV1) + "/namespaces/kube-system/pods/nope").code, 404);
  ASSERT_EQ(Get(std::string(kV1)).code, 200);
  ASSERT_EQ(Get("/definitely/unknown").code, 404);
  ASSERT_EQ(Request("POST", std::string(kV1beta1) + "/nodes").code, 405);
  ASSERT_EQ(Request("BREW", "/healthz").code, 405);
  Reply reply = Get("/metrics");
  EXPECT_EQ(reply.code, 200);
  EXPECT_EQ(reply.content_type, "text/plain; version=0.0.4");
  const std::string& text = reply.body;
  EXPECT_THAT(text, HasSubstr("# TYPE kubestat_http_requests_total counter"));
  EXPECT_THAT(text, HasSubstr("kubestat_http_requests_total{code=\"200\",method=\"GET\","
                              "route=\"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/"
                              "pods\",server=\"secure\"} 2"));
  EXPECT_THAT(text, HasSubstr("kubestat_http_requests_total{code=\"404\",method=\"GET\","
                              "route=\"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/"
                              "pods/{pod}\",server=\"secure\"} 1"));
  EXPECT_THAT(text, HasSubstr("kubestat_http_requests_total{code=\"200\",method=\"GET\","
                              "route=\"/apis/metrics.k8s.io/v1/namespaces/{namespace}/"
                              "pods\",server=\"secure\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("kubestat_http_requests_total{code=\"200\",method=\"GET\","
                        "route=\"/apis/metrics.k8s.io/v1/nodes/{node}\",server=\"secure\"} 3"));
  EXPECT_THAT(text, HasSubstr("kubestat_http_requests_total{code=\"404\",method=\"GET\","
                              "route=\"/apis/metrics.k8s.io/v1/namespaces/{namespace}/"
                              "pods/{pod}\",server=\"secure\"} 1"));
  EXPECT_THAT(text, HasSubstr("kubestat_http_requests_total{code=\"200\",method=\"GET\","
                              "route=\"/apis/metrics.k8s.io/v1\",server=\"secure\"} 1"));
  EXPECT_THAT(text, HasSubstr("kubestat_http_requests_total{code=\"404\",method=\"GET\","
                              "route=\"other\",server=\"secure\"} 1"));
  EXPECT_THAT(text, HasSubstr("kubestat_http_requests_total{code=\"405\",method=\"POST\","
                              "route=\"/apis/metrics.k8s.io/v1beta1/nodes\",server=\"secure\"} 1"));
  // An unknown method is refused by the transport itself, counted by reason.
  EXPECT_THAT(text, HasSubstr("kubestat_http_rejected_requests_total{reason=\"method_not_allowed\","
                              "server=\"secure\"} 1"));
  EXPECT_THAT(text, HasSubstr("# TYPE kubestat_http_request_duration_seconds histogram"));
  EXPECT_THAT(
      text, HasSubstr("kubestat_http_request_duration_seconds_count{route=\"/apis/"
                      "metrics.k8s.io/v1beta1/namespaces/{namespace}/pods\",server=\"secure\"} 2"));
  // Raw paths never become label values.
  EXPECT_THAT(text, Not(HasSubstr("/namespaces/shop")));
  EXPECT_THAT(text, Not(HasSubstr("/nodes/node-")));
  EXPECT_THAT(text, Not(HasSubstr("/kube-system")));
  EXPECT_THAT(text, Not(HasSubstr("definitely")));
}

TEST_F(RestServerTest, GzipOverHttpForClientsThatAcceptIt) {
  RestServerOptions options = PlainOptions();
  options.secure.compression.min_bytes = 64;
  prometheus::Registry registry;
  RestServer server(options, source_, registry, clock_, LivenessCheck{}, access_.Control());
  ASSERT_TRUE(server.Start().ok());
  web::http::client::http_client client(server.BaseUrl());

  const std::string path = std::string(kV1alpha1) + "/nodes";
  const RawReply identity = GetRaw(client, path, "");
  ASSERT_EQ(identity.code, 200);
  EXPECT_EQ(identity.content_encoding, "");
  EXPECT_EQ(identity.vary, "Accept-Encoding, Accept");
  const RawReply packed = GetRaw(client, path, "deflate, gzip;q=0.8");
  ASSERT_EQ(packed.code, 200);
  EXPECT_EQ(packed.content_encoding, "gzip");
  EXPECT_EQ(packed.vary, "Accept-Encoding, Accept");
  absl::StatusOr<std::string> unpacked = GzipDecompress(packed.body, 1 << 24);
  ASSERT_TRUE(unpacked.ok()) << unpacked.status();
  EXPECT_EQ(*unpacked, identity.body);
  EXPECT_EQ(GetRaw(client, path, "gzip;q=0").content_encoding, "");
  // metrics.k8s.io/v1 too, with the identity bytes inside.
  const std::string v1_path = std::string(kV1) + "/pods";
  const RawReply v1_identity = GetRaw(client, v1_path, "");
  const RawReply v1_packed = GetRaw(client, v1_path, "gzip");
  ASSERT_EQ(v1_packed.code, 200);
  EXPECT_EQ(v1_packed.content_encoding, "gzip");
  EXPECT_EQ(v1_packed.vary, "Accept-Encoding, Accept");
  absl::StatusOr<std::string> v1_unpacked = GzipDecompress(v1_packed.body, 1 << 24);
  ASSERT_TRUE(v1_unpacked.ok()) << v1_unpacked.status();
  EXPECT_EQ(*v1_unpacked, v1_identity.body);
  EXPECT_THAT(*v1_unpacked, HasSubstr("\"apiVersion\":\"metrics.k8s.io/v1\""));
  // The protobuf answers too.
  const RawReply pb_identity = GetRaw(client, v1_path, "", kClientGoAccept);
  const RawReply pb_packed = GetRaw(client, v1_path, "gzip", kClientGoAccept);
  ASSERT_EQ(pb_packed.code, 200);
  EXPECT_EQ(pb_packed.content_type, "application/vnd.kubernetes.protobuf");
  EXPECT_EQ(pb_packed.content_encoding, "gzip");
  absl::StatusOr<std::string> pb_unpacked = GzipDecompress(pb_packed.body, 1 << 24);
  ASSERT_TRUE(pb_unpacked.ok()) << pb_unpacked.status();
  EXPECT_EQ(*pb_unpacked, pb_identity.body);
  EXPECT_EQ(pb_unpacked->substr(0, 4), std::string("k8s\0", 4));
  // Bodies under the threshold go as they are.
  const RawReply ok = GetRaw(client, "/healthz", "gzip");
  EXPECT_EQ(ok.content_encoding, "");
  EXPECT_EQ(ok.body, "ok");

  // /metrics too, and it counts the bytes as sent, by encoding.
  const RawReply metrics = GetRaw(client, "/metrics", "gzip");
  ASSERT_EQ(metrics.content_encoding, "gzip");
  absl::StatusOr<std::string> text = GzipDecompress(metrics.body, 1 << 24);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("kubestat_http_response_bytes_total{content_encoding=\"gzip\","
                               "route=\"/apis/metrics/v1alpha1/nodes\",server=\"secure\"} " +
                               std::to_string(packed.body.size())));
  EXPECT_THAT(*text, HasSubstr("kubestat_http_response_bytes_total{content_encoding=\"identity\","
                               "route=\"/apis/metrics/v1alpha1/nodes\",server=\"secure\"} " +
                               std::to_string(2 * identity.body.size())));
}

TEST_F(RestServerTest, CompressionTurnedOffSendsIdentityWithoutVary) {
  RestServerOptions options = PlainOptions();
  options.secure.compression.enabled = false;
  options.secure.compression.min_bytes = 0;
  prometheus::Registry registry;
  RestServer server(options, source_, registry, clock_, LivenessCheck{}, access_.Control());
  ASSERT_TRUE(server.Start().ok());
  web::http::client::http_client client(server.BaseUrl());
  const RawReply reply = GetRaw(client, std::string(kV1alpha1) + "/nodes", "gzip");
  EXPECT_EQ(reply.code, 200);
  EXPECT_EQ(reply.content_encoding, "");
  EXPECT_EQ(reply.vary, "Accept");  // the encoding still depends on Accept
  EXPECT_EQ(GetRaw(client, "/healthz", "gzip").vary, "");
  EXPECT_EQ(reply.body, Get(std::string(kV1alpha1) + "/nodes").body);
}

}  // namespace
}  // namespace kubestat::aggregator

namespace kubestat::aggregator {
namespace {

// metrics.k8s.io leaves out what the last scrapes did not refresh, as metrics-server does;
// metrics/v1alpha1 keeps every object (its windows say how old they are). Ages count from the
// newest sample any node gave, so a late publication hides nothing.
TEST(RestHandlerFreshnessTest, MetricsK8sIoLeavesOutObjectsOlderThanTheMaxAgeBehindTheNewest) {
  FakeMetricsSource source;
  // node-1 and web-1 were last scraped at `newest`, everything else at EndTime().
  const auto scraped = [&](Timestamp newest) {
    kubestat::testing::StandardCluster cluster = kubestat::testing::MakeStandardCluster();
    for (metrics_api::Statistics* w :
         {&cluster.nodes[0].machine.cpu[0], &cluster.nodes[0].machine.memory[0]}) {
      w->endtime = newest;
    }
    for (metrics_api::ContainerMetrics& c : cluster.pods[2].containers)
      c.windows.cpu[0].endtime = newest;
    source.Set(std::move(cluster.nodes), std::move(cluster.pods));
  };
  scraped(EndTime() + seconds(20));
  FakeClock clock(EndTime() + seconds(20));
  const RestHandler handler(source, clock, LivenessCheck{}, ResponseCompression{}, seconds(20));
  const auto get = [&](std::string_view path) {
    return handler.Handle(RestRequest{"GET", path, ""});
  };
  const auto count = [](const std::string& body, std::string_view needle) {
    int n = 0;
    for (size_t at = body.find(needle); at != std::string::npos; at = body.find(needle, at + 1))
      ++n;
    return n;
  };
  // Exactly the max age behind node-1: every servable object is there (node-3 has no memory:
  // never).
  EXPECT_EQ(count(get("/apis/metrics.k8s.io/v1beta1/nodes").body, "\"usage\""), 2);
  EXPECT_EQ(count(get("/apis/metrics.k8s.io/v1/pods").body, "\"containers\""), 4);

  // node-1 moves on a second: the others are now older than the max age behind it.
  scraped(EndTime() + seconds(21));
  clock.Advance(seconds(1));
  const auto only_the_newest_are_served = [&] {
    const std::string nodes = get("/apis/metrics.k8s.io/v1beta1/nodes").body;
    EXPECT_EQ(count(nodes, "\"usage\""), 1) << nodes;
    EXPECT_THAT(nodes, HasSubstr("\"name\":\"node-1\""));
    EXPECT_EQ(get("/apis/metrics.k8s.io/v1beta1/nodes/node-1").code, 200);
    EXPECT_EQ(get("/apis/metrics.k8s.io/v1beta1/nodes/node-2").code, 404);
    const std::string pods = get("/apis/metrics.k8s.io/v1/pods").body;
    EXPECT_EQ(count(pods, "\"containers\""), 1) << pods;
    EXPECT_THAT(pods, HasSubstr("\"name\":\"web-1\""));
    EXPECT_EQ(get("/apis/metrics.k8s.io/v1/namespaces/shop/pods/web-1").code, 200);
    EXPECT_EQ(get("/apis/metrics.k8s.io/v1/namespaces/shop/pods/db-0").code, 404);
  };
  only_the_newest_are_served();
  // The protobuf form selects alike.
  RestRequest protobuf{"GET", "/apis/metrics.k8s.io/v1beta1/nodes", ""};
  protobuf.accept = "application/vnd.kubernetes.protobuf";
  const RestResponse packed = handler.Handle(protobuf);
  EXPECT_EQ(packed.content_type, "application/vnd.kubernetes.protobuf");
  EXPECT_THAT(packed.body, HasSubstr("node-1"));
  EXPECT_THAT(packed.body, Not(HasSubstr("node-2")));
  // metrics/v1alpha1 keeps them all.
  EXPECT_EQ(count(get("/apis/metrics/v1alpha1/nodes").body, "\"machine\""), 3);
  EXPECT_EQ(get("/apis/metrics/v1alpha1/nodes/node-2").code, 200);

  // Nothing newer for another 40 s (node-1 is then 40 s old, twice the max age): the
  // objects are as old as each other as before, so the same ones are served.
  clock.Advance(seconds(40));
  only_the_newest_are_served();
  // One second more and no node has been scraped for over twice the max age: nothing is
  // served.
  clock.Advance(seconds(1));
  EXPECT_EQ(count(get("/apis/metrics.k8s.io/v1beta1/nodes").body, "\"usage\""), 0);
  EXPECT_EQ(get("/apis/metrics.k8s.io/v1beta1/nodes/node-1").code, 404);
  EXPECT_EQ(count(get("/apis/metrics.k8s.io/v1/pods").body, "\"containers\""), 0);
}

// A kubelet whose clock runs ahead does not hide the others: the newest sample counts at most
// up to now.
TEST(RestHandlerFreshnessTest, ASampleFromTheFutureCountsAsNow) {
  kubestat::testing::StandardCluster cluster = kubestat::testing::MakeStandardCluster();
  for (metrics_api::Statistics* w :
       {&cluster.nodes[0].machine.cpu[0], &cluster.nodes[0].machine.memory[0]}) {
    w->endtime = EndTime() + std::chrono::minutes(5);
  }
  FakeMetricsSource source;
  source.Set(std::move(cluster.nodes), std::move(cluster.pods));
  FakeClock clock(EndTime() + seconds(20));
  const RestHandler handler(source, clock, LivenessCheck{}, ResponseCompression{}, seconds(20));
  EXPECT_EQ(handler.Handle(RestRequest{"GET", "/apis/metrics.k8s.io/v1/nodes/node-2", ""}).code,
            200);
  EXPECT_EQ(FreshSince(EndTime() + std::chrono::minutes(5), EndTime() + seconds(20), seconds(20)),
            EndTime());
  EXPECT_EQ(FreshSince(kZeroTime, EndTime() + seconds(40), seconds(20)), EndTime());
  EXPECT_EQ(FreshSince(EndTime() + seconds(30), EndTime() + seconds(40), seconds(20)),
            EndTime() + seconds(10));
}

}  // namespace
}  // namespace kubestat::aggregator
