// kubestat-apiserver's API over real loopback HTTP with the in-memory store: writes (PUT,
// POST, DELETE, the bulk write), validation, reads in every group-version, watches (initial
// events, resume, 410), expiry by TTL on a fake clock, and access per resource and verb.
#include "kubestat/apiserver/api_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/plain_server_options.h"
#include "http/raw_client.h"
#include "kubestat/apiserver/memory_store.h"
#include "kubestat/core/clock.h"
#include "kubestat/http/client.h"
#include "kubestat/kube/access_rules.h"
#include "kubestat/kube/authenticator.h"
#include "kubestat/kube/authorizer.h"
#include "kubestat/metrics_api/parse.h"
#include "kubestat/metrics_api/render.h"
#include "kubestat/metrics_api/write_batch.h"
#include "kubestat/testing/metrics_encodings.h"
#include "kubestat/testing/metrics_objects.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"
#include "prometheus/registry.h"

namespace kubestat::apiserver {
namespace {

using kubestat::testing::MakeStandardCluster;
using kubestat::testing::Shown;
using kubestat::testing::ShownAlike;
using kubestat::testing::ShownFromProtobuf;
using kubestat::testing::StandardCluster;
using metrics_api::GroupVersion;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kRules[] = R"(rules:
- users: [writer]
  verbs: [get, list, watch, create, update, delete]
  apiGroups: [metrics, metrics.k8s.io]
  resources: [nodes, pods, writes]
- users: [pod-reader]
  verbs: [get, list, watch]
  apiGroups: [metrics.k8s.io]
  resources: [pods]
- users: [writer]
  verbs: [get]
  nonResourceURLs: [/api, /apis, /apis/*, /metrics]
)";

std::string NodeJson(const metrics_api::NodeMetrics& node) {
  return *metrics_api::RenderNode(node, {GroupVersion::kV1alpha1, {}, 0});
}

std::string PodJson(const metrics_api::PodMetrics& pod) {
  return *metrics_api::RenderPod(pod, {GroupVersion::kV1alpha1, {}, 0});
}

// What kubectl top and the HPA send (client-go with ContentType protobuf).
constexpr char kClientGoAccept[] = "application/vnd.kubernetes.protobuf, */*";

// A MemoryStore whose watch subscriptions the test can end, as a store with a remote back
// end (etcd) ends them when it loses their history or stays unreachable.
class EndableStore final : public ObjectStore {
 public:
  EndableStore(MemoryStoreOptions options, const Clock& clock) : store_(options, clock) {}

  absl::StatusOr<WriteResult> Apply(const std::vector<WriteOp>& ops) override {
    return store_.Apply(ops);
  }
  absl::StatusOr<std::optional<StoredObject>> Get(const ObjectKey& key) const override {
    ++gets;
    return store_.Get(key);
  }
  absl::StatusOr<ListResult> List(ObjectKind kind, std::string_view ns) const override {
    return store_.List(kind, ns);
  }
  absl::StatusOr<std::unique_ptr<Subscription>> Watch(ObjectKind kind, uint64_t after,
                                                      WatchCallback callback) override {
    return store_.Watch(kind, after, std::move(callback));
  }
  absl::StatusOr<std::unique_ptr<Subscription>> WatchWithEnd(
      ObjectKind kind, uint64_t after, WatchCallback callback,
      const WatchEndCallback& on_end) override {
    std::lock_guard lock(mu_);
    ends_.push_back(on_end);
    return store_.Watch(kind, after, std::move(callback));
  }
  absl::StatusOr<size_t> ExpireOlderThan(Timestamp cutoff) override {
    return store_.ExpireOlderThan(cutoff);
  }
  uint64_t Revision() const override { return store_.Revision(); }
  bool Ready() const override { return store_.Ready(); }

  // Waits for a subscription that has not been ended, then ends every one with `why`.
  void EndAll(const absl::Status& why) {
    ASSERT_TRUE(kubestat::testing::PollUntil(
        [&] {
          std::lock_guard lock(mu_);
          return !ends_.empty();
        },
        std::chrono::seconds(20)));
    std::vector<WatchEndCallback> ends;
    {
      std::lock_guard lock(mu_);
      ends.swap(ends_);
    }
    for (const WatchEndCallback& end : ends) end(why);
  }

  mutable std::atomic<int> gets = 0;  // Get calls

 private:
  MemoryStore store_;
  std::mutex mu_;
  std::vector<WatchEndCallback> ends_;
};

class ApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string tokens = dir_.File("tokens.csv");
    std::ofstream(tokens) << "writer-token,writer,1\npod-reader-token,pod-reader,2\n";
    kube::AuthenticatorOptions authn;
    authn.token_auth_file = tokens;
    authenticator_ = *kube::Authenticator::Create(authn, clock_, nullptr);
    authorizer_ =
        *kube::Authorizer::Create(kube::AuthorizerOptions{},
                                  *kube::AccessRules::Parse(kRules, "rules.yaml"), clock_, nullptr);
    ApiServerOptions options;
    options.server = http::PlainOptions();
    options.server.limits.max_body_bytes = ApiServerOptions::SecureDefaults().limits.max_body_bytes;
    options.object_ttl = std::chrono::minutes(5);
    options.sweep_interval = std::chrono::hours(1);  // the test sweeps
    options.max_watch_queue_bytes = max_watch_queue_bytes_;
    server_ =
        std::make_unique<ApiServer>(options, store_, registry_, clock_,
                                    kube::AccessGate("apiserver", {"/healthz", "/livez", "/readyz"},
                                                     authenticator_.get(), authorizer_.get()));
    ASSERT_TRUE(server_->Start().ok());
    http::ClientOptions client;
    client.base_url = server_->BaseUrl();
    client_ = *http::Client::Create(client, clock_);
  }

  http::ClientResponse Send(std::string method, std::string path, std::string body = "",
                            std::string token = "writer-token", std::string accept = "") {
    http::ClientRequest request;
    request.method = std::move(method);
    request.path_and_query = std::move(path);
    request.body = std::move(body);
    if (!token.empty()) request.headers.push_back({"Authorization", "Bearer " + token});
    if (!accept.empty()) request.headers.push_back({"Accept", accept});
    absl::StatusOr<http::ClientResponse> response = client_->Do(request);
    EXPECT_TRUE(response.ok()) << response.status();
    return response.value_or(http::ClientResponse{});
  }

  // The first `count` lines of a watch of `path_and_query` (started before `then` runs).
  std::vector<std::string> WatchLines(const std::string& path_and_query, size_t count,
                                      const std::function<void()>& then = {},
                                      const std::string& accept = "") {
    std::vector<std::string> lines;
    std::string pending;
    std::atomic<bool> open = false;
    std::thread watcher([&] {
      http::ClientRequest request;
      request.path_and_query = path_and_query;
      request.headers.push_back({"Authorization", "Bearer writer-token"});
      if (!accept.empty()) request.headers.push_back({"Accept", accept});
      int code = 0;
      std::string error;
      absl::Status s = client_->Stream(
          request, std::chrono::seconds(30),
          [&](std::string_view chunk) {
            open = true;
            pending.append(chunk);
            for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
              lines.push_back(pending.substr(0, nl));
              pending.erase(0, nl + 1);
            }
            return lines.size() < count;
          },
          &code, &error);
      EXPECT_TRUE(s.ok()) << s;
    });
    if (then) {
      EXPECT_TRUE(kubestat::testing::PollUntil([&] { return server_->watchers() > 0; },
                                               std::chrono::seconds(20)));
      then();
    }
    watcher.join();
    return lines;
  }

  size_t max_watch_queue_bytes_ = size_t{16} << 20;
  kubestat::testing::TempDir dir_;
  FakeClock clock_;
  prometheus::Registry registry_;
  EndableStore store_{MemoryStoreOptions{.history_events = 4}, clock_};
  std::unique_ptr<kube::Authenticator> authenticator_;
  std::unique_ptr<kube::Authorizer> authorizer_;
  std::unique_ptr<ApiServer> server_;
  std::unique_ptr<http::Client> client_;
  StandardCluster cluster_ = MakeStandardCluster();
};

TEST_F(ApiServerTest, PutCreatesThenReplacesAndEveryGroupVersionReadsIt) {
  const std::string path = "/apis/metrics/v1alpha1/nodes/node-1";
  http::ClientResponse created = Send("PUT", path, NodeJson(cluster_.nodes[0]));
  EXPECT_EQ(created.code, 201) << created.body;
  EXPECT_THAT(created.body, HasSubstr(R"("name":"node-1","resourceVersion":"1")"));
  http::ClientResponse replaced = Send("PUT", path, NodeJson(cluster_.nodes[0]));
  EXPECT_EQ(replaced.code, 200) << replaced.body;
  EXPECT_THAT(replaced.body, HasSubstr(R"("resourceVersion":"2")"));
  EXPECT_EQ(store_.gets.load(), 0) << "a PUT is one write, without a read first";
  http::ClientResponse alpha = Send("GET", path);
  ASSERT_EQ(alpha.code, 200);
  absl::StatusOr<metrics_api::Parsed<metrics_api::NodeMetrics>> back =
      metrics_api::ParseNodeMetrics(alpha.body);
  ASSERT_TRUE(back.ok()) << back.status();
  back->object.resource_version.clear();
  EXPECT_EQ(back->object, cluster_.nodes[0]);
  http::ClientResponse beta = Send("GET", "/apis/metrics.k8s.io/v1beta1/nodes");
  EXPECT_THAT(beta.body, HasSubstr(R"("metadata":{"resourceVersion":"2"},"items":[)"));
  EXPECT_THAT(beta.body, HasSubstr(R"("usage":{"cpu":"120m","memory":"302Mi"})"));
  EXPECT_EQ(Send("GET", "/apis/metrics.k8s.io/v1/nodes/node-9").code, 404);
}

TEST_F(ApiServerTest, ListsAndGetsReadResourceVersionAsKubeApiserverDoes) {
  const std::string nodes = "/apis/metrics/v1alpha1/nodes";
  ASSERT_EQ(Send("PUT", nodes + "/node-1", NodeJson(cluster_.nodes[0])).code, 201);
  ASSERT_EQ(Send("PUT", nodes + "/node-1", NodeJson(cluster_.nodes[0])).code, 200);
  for (const std::string_view query :
       {"resourceVersion=0", "resourceVersion=2", "resourceVersion=1",
        "resourceVersion=2&resourceVersionMatch=NotOlderThan",
        "resourceVersion=2&resourceVersionMatch=Exact"}) {
    http::ClientResponse list = Send("GET", nodes + "?" + std::string(query));
    EXPECT_EQ(list.code, 200) << query << ": " << list.body;
    EXPECT_THAT(list.body, HasSubstr(R"("metadata":{"resourceVersion":"2"},"items":[)")) << query;
  }
  for (const std::string_view query : {"resourceVersion=0", "resourceVersion=2"}) {
    EXPECT_EQ(Send("GET", nodes + "/node-1?" + std::string(query)).code, 200) << query;
  }
  // A revision not reached: 504 Timeout, as kube-apiserver's "Too large resource version".
  for (const std::string& path : {nodes + "?resourceVersion=9", nodes + "/node-1?resourceVersion=9",
                                  nodes + "?resourceVersion=9&resourceVersionMatch=Exact"}) {
    http::ClientResponse late = Send("GET", path);
    EXPECT_EQ(late.code, 504) << path;
    EXPECT_THAT(late.body, HasSubstr(R"("reason":"Timeout")")) << path;
    EXPECT_THAT(late.body, HasSubstr("Too large resource version: 9, current: 2")) << path;
    EXPECT_THAT(late.body, HasSubstr("ResourceVersionTooLarge")) << path;
  }
  // An exact revision the memory store no longer holds: 410 Expired.
  http::ClientResponse old = Send("GET", nodes + "?resourceVersion=1&resourceVersionMatch=Exact");
  EXPECT_EQ(old.code, 410) << old.body;
  EXPECT_THAT(old.body, HasSubstr(R"("reason":"Expired")"));
  // Values kube-apiserver refuses: 400 naming the parameter.
  const std::pair<std::string, std::string> refused[] = {
      {nodes + "?resourceVersion=abc", "resourceVersion: must be a decimal revision"},
      {nodes + "?resourceVersion=-1", "resourceVersion: must be a decimal revision"},
      {nodes + "/node-1?resourceVersion=x", "resourceVersion: must be a decimal revision"},
      {nodes + "?resourceVersionMatch=Exact", "resourceVersionMatch: forbidden unless"},
      {nodes + "?resourceVersion=1&resourceVersionMatch=Newest",
       "resourceVersionMatch: must be NotOlderThan or Exact"},
      {nodes + "?resourceVersion=0&resourceVersionMatch=Exact",
       R"(resourceVersionMatch: \"Exact\" is forbidden for resourceVersion \"0\")"},
      {nodes + "/node-1?resourceVersion=1&resourceVersionMatch=NotOlderThan",
       "resourceVersionMatch: only lists take it"},
  };
  for (const auto& [path, message] : refused) {
    http::ClientResponse bad = Send("GET", path);
    EXPECT_EQ(bad.code, 400) << path;
    EXPECT_THAT(bad.body, HasSubstr(R"("reason":"BadRequest")")) << path;
    EXPECT_THAT(bad.body, HasSubstr(message)) << path << ": " << bad.body;
  }
}

TEST_F(ApiServerTest, PostConflictsDeleteRemovesAndMetricsK8sIoIsReadOnly) {
  const std::string pods = "/apis/metrics/v1alpha1/namespaces/shop/pods";
  const std::string pod =
      *metrics_api::RenderPod(cluster_.pods[1], {GroupVersion::kV1alpha1, {}, 0});
  EXPECT_EQ(Send("POST", pods, pod).code, 201);
  http::ClientResponse again = Send("POST", pods, pod);
  EXPECT_EQ(again.code, 409);
  EXPECT_THAT(again.body, HasSubstr(R"("reason":"AlreadyExists")"));
  EXPECT_EQ(Send("POST", "/apis/metrics/v1alpha1/namespaces/other/pods", pod).code, 400);
  EXPECT_EQ(Send("PUT", "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/db-0", pod).code, 405);
  EXPECT_EQ(Send("DELETE", pods + "/db-0").code, 200);
  EXPECT_EQ(Send("DELETE", pods + "/db-0").code, 404);
  EXPECT_EQ(Send("GET", pods + "/db-0").code, 404);
}

TEST_F(ApiServerTest, InvalidBodiesAre422NamingTheFieldAndNothingIsStored) {
  metrics_api::NodeMetrics bad = cluster_.nodes[0];
  bad.name = "Node_1";
  http::ClientResponse named = Send("PUT", "/apis/metrics/v1alpha1/nodes/Node_1", NodeJson(bad));
  EXPECT_EQ(named.code, 422) << named.body;
  EXPECT_THAT(named.body, HasSubstr(R"("field":"metadata.name")"));
  http::ClientResponse quantity =
      Send("PUT", "/apis/metrics/v1alpha1/nodes/node-1",
           R"({"kind":"NodeMetrics","apiVersion":"metrics/v1alpha1","metadata":{"name":"node-1"},)"
           R"("machine":{"1m":{"endtime":"2026-11-21T10:00:10Z","mean":{"cpu":"lots"},"max":{},)"
           R"("95th":{},"min":{},"50th":{},"99th":{}}}})");
  EXPECT_EQ(quantity.code, 422);
  EXPECT_THAT(quantity.body, HasSubstr(R"("field":"machine[\"1m\"].mean.cpu")"));
  EXPECT_EQ(Send("PUT", "/apis/metrics/v1alpha1/nodes/node-2", NodeJson(cluster_.nodes[0])).code,
            400);  // the body names node-1
  // A body over 3 MiB is refused from its Content-Length, before it is read.
  kubestat::testing::RawClient raw(server_->port());
  ASSERT_TRUE(
      raw.Send("PUT /apis/metrics/v1alpha1/nodes/node-1 HTTP/1.1\r\nHost: x\r\n"
               "Authorization: Bearer writer-token\r\nContent-Type: application/json\r\n"
               "Content-Length: 3145729\r\n\r\n{"));
  EXPECT_EQ(raw.Read().code, 413);
  EXPECT_EQ(store_.Revision(), 0u);
}

TEST_F(ApiServerTest, ABulkWriteIsOneRevisionAndABadItemRefusesTheWholeBatch) {
  metrics_api::WriteBatch batch;
  for (const metrics_api::NodeMetrics& node : cluster_.nodes) {
    metrics_api::WriteItem item;
    item.node = node;
    batch.items.push_back(item);
  }
  for (metrics_api::PodMetrics pod : cluster_.pods) {
    pod.node_name.clear();
    metrics_api::WriteItem item;
    item.resource = metrics_api::Resource::kPods;
    item.pod = pod;
    batch.items.push_back(item);
  }
  metrics_api::WriteItem gone;
  gone.op = metrics_api::WriteItem::Op::kDelete;
  gone.name = "node-gone";
  batch.items.push_back(gone);
  http::ClientResponse applied =
      Send("POST", std::string(metrics_api::kWriteBatchPath), metrics_api::RenderWriteBatch(batch));
  ASSERT_EQ(applied.code, 200) << applied.body;
  EXPECT_EQ(applied.body, metrics_api::RenderWriteBatchResult(1, 8));
  http::ClientResponse pods = Send("GET", "/apis/metrics/v1alpha1/pods?limit=3");
  EXPECT_THAT(pods.body, HasSubstr(R"("metadata":{"resourceVersion":"1","continue":")"));
  batch.items[0].node.name = "BAD";
  http::ClientResponse refused =
      Send("POST", std::string(metrics_api::kWriteBatchPath), metrics_api::RenderWriteBatch(batch));
  EXPECT_EQ(refused.code, 422);
  EXPECT_THAT(refused.body, HasSubstr(R"("field":"items[0].object.metadata.name")"));
  EXPECT_EQ(store_.Revision(), 1u);
}

TEST_F(ApiServerTest, AWatchListGetsTheObjectsTheEndBookmarkThenChangesInOrder) {
  ASSERT_EQ(Send("PUT", "/apis/metrics/v1alpha1/nodes/node-1", NodeJson(cluster_.nodes[0])).code,
            201);
  const std::vector<std::string> lines = WatchLines(
      "/apis/metrics/v1alpha1/nodes?watch=1&sendInitialEvents=true&allowWatchBookmarks=true", 4,
      [&] {
        EXPECT_EQ(
            Send("PUT", "/apis/metrics/v1alpha1/nodes/node-1", NodeJson(cluster_.nodes[0])).code,
            200);
        EXPECT_EQ(Send("DELETE", "/apis/metrics/v1alpha1/nodes/node-1").code, 200);
      });
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_THAT(lines[0], StartsWith(R"({"type":"ADDED","object":{"kind":"NodeMetrics")"));
  EXPECT_THAT(lines[1], HasSubstr(R"("type":"BOOKMARK")"));
  EXPECT_THAT(
      lines[1],
      HasSubstr(R"("resourceVersion":"1","annotations":{"k8s.io/initial-events-end":"true"})"));
  EXPECT_THAT(lines[2], StartsWith(R"({"type":"MODIFIED")"));
  EXPECT_THAT(lines[2], HasSubstr(R"("resourceVersion":"2")"));
  EXPECT_THAT(lines[3], StartsWith(R"({"type":"DELETED")"));
  EXPECT_THAT(lines[3], HasSubstr(R"("resourceVersion":"3")"));
}

TEST_F(ApiServerTest, AWatchResumesAfterItsVersionAndATooOldOneIsExpired) {
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(Send("PUT", "/apis/metrics/v1alpha1/nodes/node-1", NodeJson(cluster_.nodes[0])).code,
              i == 0 ? 201 : 200);
  }
  // Revisions 1..6; the store keeps the last 4 events (3..6).
  const std::vector<std::string> resumed =
      WatchLines("/apis/metrics.k8s.io/v1beta1/nodes?watch=1&resourceVersion=4", 2);
  ASSERT_EQ(resumed.size(), 2u);
  EXPECT_THAT(resumed[0], HasSubstr(R"("resourceVersion":"5")"));
  EXPECT_THAT(resumed[0], HasSubstr(R"("apiVersion":"metrics.k8s.io/v1beta1")"));
  EXPECT_THAT(resumed[1], HasSubstr(R"("resourceVersion":"6")"));
  const std::vector<std::string> expired =
      WatchLines("/apis/metrics/v1alpha1/nodes?watch=1&resourceVersion=1", 1);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_THAT(expired[0], StartsWith(R"({"type":"ERROR","object":{"kind":"Status")"));
  EXPECT_THAT(expired[0], HasSubstr(R"("reason":"Expired")"));
  EXPECT_THAT(expired[0], HasSubstr(R"("code":410)"));
}

TEST_F(ApiServerTest, AWatchTheStoreEndsGetsItsErrorAndCloses) {
  ASSERT_EQ(Send("PUT", "/apis/metrics/v1alpha1/nodes/node-1", NodeJson(cluster_.nodes[0])).code,
            201);
  // The store lost the history the watch needs: 410, so the client lists again.
  const std::vector<std::string> expired =
      WatchLines("/apis/metrics/v1alpha1/nodes?watch=1&resourceVersion=1", 5,
                 [&] { store_.EndAll(absl::OutOfRangeError("too old resource version: 1 (7)")); });
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_THAT(expired[0], StartsWith(R"({"type":"ERROR","object":{"kind":"Status")"));
  EXPECT_THAT(expired[0], HasSubstr(R"("code":410)"));
  EXPECT_THAT(expired[0], HasSubstr("too old resource version: 1 (7)"));
  // The back end stayed unreachable: the store's error.
  const std::vector<std::string> unavailable =
      WatchLines("/apis/metrics/v1alpha1/nodes?watch=1&resourceVersion=1", 5,
                 [&] { store_.EndAll(absl::UnavailableError("no etcd member answered")); });
  ASSERT_EQ(unavailable.size(), 1u);
  EXPECT_THAT(unavailable[0], HasSubstr(R"("code":503)"));
  EXPECT_THAT(unavailable[0], HasSubstr("no etcd member answered"));
  server_->Sweep();  // ended watches are let go at the sweep
  EXPECT_EQ(server_->watchers(), 0u);
}

TEST_F(ApiServerTest, WatchersOfEachGroupVersionGetTheirOwnShapeOfOneChange) {
  ASSERT_EQ(Send("PUT", "/apis/metrics/v1alpha1/nodes/node-1", NodeJson(cluster_.nodes[0])).code,
            201);
  std::vector<std::string> alpha;
  std::vector<std::string> beta;
  std::vector<std::string> alpha_too;
  std::thread a(
      [&] { alpha = WatchLines("/apis/metrics/v1alpha1/nodes?watch=1&resourceVersion=1", 1); });
  std::thread b([&] {
    beta = WatchLines("/apis/metrics.k8s.io/v1beta1/nodes?watch=1&resourceVersion=1", 1);
  });
  std::thread c(
      [&] { alpha_too = WatchLines("/apis/metrics/v1alpha1/nodes?watch=1&resourceVersion=1", 1); });
  ASSERT_TRUE(kubestat::testing::PollUntil([&] { return server_->watchers() == 3; },
                                           std::chrono::seconds(20)));
  metrics_api::NodeMetrics changed = cluster_.nodes[0];
  changed.labels = changed.labels.With("zone", "b");
  EXPECT_EQ(Send("PUT", "/apis/metrics/v1alpha1/nodes/node-1", NodeJson(changed)).code, 200);
  a.join();
  b.join();
  c.join();
  ASSERT_EQ(alpha.size(), 1u);
  ASSERT_EQ(beta.size(), 1u);
  ASSERT_EQ(alpha_too.size(), 1u);
  EXPECT_THAT(alpha[0], HasSubstr(R"("apiVersion":"metrics/v1alpha1")"));
  EXPECT_THAT(alpha[0], HasSubstr(R"("zone":"b")"));
  EXPECT_THAT(beta[0], HasSubstr(R"("apiVersion":"metrics.k8s.io/v1beta1")"));
  EXPECT_THAT(beta[0], HasSubstr(R"("usage":)"));
  EXPECT_EQ(alpha_too[0], alpha[0]);
}

class ApiServerSmallQueueTest : public ApiServerTest {
 protected:
  ApiServerSmallQueueTest() { max_watch_queue_bytes_ = 64 * 1024; }
};

TEST_F(ApiServerSmallQueueTest, AWatcherThatDoesNotReadIsEndedNotBufferedWithoutBound) {
  // A client that asks for a watch and never reads (a tiny receive buffer).
  kubestat::testing::RawClient stalled(server_->port(), 4096);
  ASSERT_TRUE(
      stalled.Send("GET /apis/metrics/v1alpha1/nodes?watch=1 HTTP/1.1\r\nHost: x\r\n"
                   "Authorization: Bearer writer-token\r\n\r\n"));
  ASSERT_TRUE(kubestat::testing::PollUntil([&] { return server_->watchers() == 1; },
                                           std::chrono::seconds(20)));
  metrics_api::NodeMetrics node = cluster_.nodes[0];
  int writes = 0;
  for (; writes < 5000 && server_->watchers() > 0; ++writes) {
    node.labels = node.labels.With("round", std::to_string(writes));
    ASSERT_LT(Send("PUT", "/apis/metrics/v1alpha1/nodes/node-1", NodeJson(node)).code, 300);
    if (writes % 50 == 0) server_->Sweep();
  }
  server_->Sweep();
  EXPECT_EQ(server_->watchers(), 0u) << writes << " writes";
  http::ClientResponse metrics = Send("GET", "/metrics");
  EXPECT_THAT(metrics.body, HasSubstr("kubestat_apiserver_watch_overflows_total 1"));
}

TEST_F(ApiServerSmallQueueTest, TheInitialEventsOfAWatchComeOnTopOfItsBound) {
  // A state larger than the 64 KiB bound: 300 nodes of about 400 bytes each.
  metrics_api::NodeMetrics node = cluster_.nodes[0];
  node.labels = node.labels.With("padding", std::string(60, 'p'));
  for (int i = 0; i < 300; ++i) {
    node.name = "node-" + std::to_string(1000 + i);
    ASSERT_EQ(Send("PUT", "/apis/metrics/v1alpha1/nodes/" + node.name, NodeJson(node)).code, 201);
  }
  // A client that reads nothing yet: the whole state is queued for it.
  kubestat::testing::RawClient slow(server_->port(), 4096);
  ASSERT_TRUE(
      slow.Send("GET /apis/metrics/v1alpha1/nodes?watch=1&timeoutSeconds=60 HTTP/1.1\r\n"
                "Host: x\r\nAuthorization: Bearer writer-token\r\n\r\n"));
  ASSERT_TRUE(kubestat::testing::PollUntil([&] { return server_->watchers() == 1; },
                                           std::chrono::seconds(20)));
  server_->Sweep();
  EXPECT_EQ(server_->watchers(), 1u);
  // Once its time is up it ends after everything queued: every object, ADDED.
  clock_.Advance(std::chrono::seconds(61));
  server_->Sweep();
  bool clean = false;
  const std::string stream = slow.ReadToEnd(&clean);
  size_t added = 0;
  for (size_t at = 0; (at = stream.find(R"({"type":"ADDED")", at)) != std::string::npos; ++at) {
    ++added;
  }
  EXPECT_EQ(added, 300u);
  EXPECT_THAT(Send("GET", "/metrics").body,
              HasSubstr("kubestat_apiserver_watch_overflows_total 0"));
}

TEST_F(ApiServerTest, AnObjectNotWrittenWithinTheTtlIsRemovedAtTheSweep) {
  ASSERT_EQ(Send("PUT", "/apis/metrics/v1alpha1/nodes/node-1", NodeJson(cluster_.nodes[0])).code,
            201);
  clock_.Advance(std::chrono::minutes(3));
  ASSERT_EQ(Send("PUT", "/apis/metrics/v1alpha1/nodes/node-2", NodeJson(cluster_.nodes[1])).code,
            201);
  clock_.Advance(std::chrono::minutes(3));  // node-1 is 6 minutes old, node-2 3
  server_->Sweep();
  EXPECT_EQ(Send("GET", "/apis/metrics/v1alpha1/nodes/node-1").code, 404);
  EXPECT_EQ(Send("GET", "/apis/metrics/v1alpha1/nodes/node-2").code, 200);
}

TEST_F(ApiServerTest, AccessIsPerResourceAndVerb) {
  EXPECT_EQ(Send("GET", "/apis/metrics.k8s.io/v1beta1/pods", "", "").code, 401);
  EXPECT_EQ(Send("GET", "/apis/metrics.k8s.io/v1beta1/pods", "", "pod-reader-token").code, 200);
  EXPECT_EQ(Send("GET", "/apis/metrics.k8s.io/v1beta1/nodes", "", "pod-reader-token").code, 403);
  EXPECT_EQ(Send("POST", std::string(metrics_api::kWriteBatchPath),
                 metrics_api::RenderWriteBatch({}), "pod-reader-token")
                .code,
            403);
  EXPECT_EQ(Send("GET", "/readyz", "", "").code, 200);
}

TEST_F(ApiServerTest, ProtobufReadsDecodeToTheObjectsOfTheJsonReads) {
  for (const metrics_api::NodeMetrics& node : cluster_.nodes) {
    ASSERT_EQ(Send("PUT", "/apis/metrics/v1alpha1/nodes/" + node.name, NodeJson(node)).code, 201);
  }
  for (const metrics_api::PodMetrics& pod : cluster_.pods) {
    ASSERT_EQ(
        Send("PUT", "/apis/metrics/v1alpha1/namespaces/" + pod.namespace_name + "/pods/" + pod.name,
             PodJson(pod))
            .code,
        201);
  }
  for (const char* gv : {"/apis/metrics.k8s.io/v1beta1", "/apis/metrics.k8s.io/v1"}) {
    for (const char* path :
         {"/nodes", "/nodes/node-2", "/pods", "/namespaces/shop/pods", "/namespaces/shop/pods/db-0",
          "/pods?labelSelector=app%3Dweb", "/pods?limit=2", "/nodes?limit=1"}) {
      const std::string target = std::string(gv) + path;
      SCOPED_TRACE(target);
      const http::ClientResponse pb = Send("GET", target, "", "writer-token", kClientGoAccept);
      ASSERT_EQ(pb.code, 200) << pb.body;
      EXPECT_EQ(pb.content_type, "application/vnd.kubernetes.protobuf");
      EXPECT_EQ(pb.Header("Vary"), "Accept-Encoding, Accept");
      const http::ClientResponse json = Send("GET", target, "", "writer-token", "application/json");
      ASSERT_EQ(json.code, 200);
      EXPECT_EQ(json.content_type, "application/json");
      absl::StatusOr<Shown> from_pb = ShownAlike(pb.body, json.body);
      ASSERT_TRUE(from_pb.ok()) << from_pb.status();
      ASSERT_FALSE(from_pb->items.empty());
      // Objects carry their resourceVersion, lists the store's revision.
      EXPECT_FALSE(from_pb->items[0].resource_version.empty());
    }
  }
  const absl::StatusOr<Shown> list = ShownFromProtobuf(
      Send("GET", "/apis/metrics.k8s.io/v1/pods?limit=2", "", "writer-token", kClientGoAccept)
          .body);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->kind, "PodMetricsList");
  EXPECT_EQ(list->resource_version, "7");  // 3 nodes and 4 pods written
  EXPECT_FALSE(list->continue_token.empty());
  EXPECT_EQ(list->items.size(), 2u);
}

TEST_F(ApiServerTest, WatchesV1alpha1AndErrorsStayJsonAndAnUnfitAcceptIs406) {
  ASSERT_EQ(Send("PUT", "/apis/metrics/v1alpha1/nodes/node-1", NodeJson(cluster_.nodes[0])).code,
            201);
  const http::ClientResponse alpha =
      Send("GET", "/apis/metrics/v1alpha1/nodes/node-1", "", "writer-token", kClientGoAccept);
  EXPECT_EQ(alpha.code, 200);
  EXPECT_EQ(alpha.content_type, "application/json");
  const http::ClientResponse missing =
      Send("GET", "/apis/metrics.k8s.io/v1/nodes/node-9", "", "writer-token", kClientGoAccept);
  EXPECT_EQ(missing.code, 404);
  EXPECT_EQ(missing.content_type, "application/json");
  EXPECT_THAT(missing.body, HasSubstr(R"("reason":"NotFound")"));

  const std::vector<std::string> lines =
      WatchLines("/apis/metrics.k8s.io/v1beta1/nodes?watch=1", 1, {}, kClientGoAccept);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], StartsWith(R"({"type":"ADDED","object":{"kind":"NodeMetrics")"));

  const http::ClientResponse yaml =
      Send("GET", "/apis/metrics.k8s.io/v1beta1/nodes", "", "writer-token", "application/yaml");
  EXPECT_EQ(yaml.code, 406);
  EXPECT_EQ(yaml.content_type, "application/json");
  EXPECT_THAT(yaml.body, HasSubstr(R"("message":"only the following media types are accepted: )"
                                   R"(application/json, application/vnd.kubernetes.protobuf")"));
  EXPECT_THAT(yaml.body, HasSubstr(R"("reason":"NotAcceptable","code":406)"));
  // A watch stream and metrics/v1alpha1 are JSON only.
  for (const char* target :
       {"/apis/metrics.k8s.io/v1beta1/nodes?watch=1", "/apis/metrics/v1alpha1/nodes/node-1"}) {
    const http::ClientResponse only_pb =
        Send("GET", target, "", "writer-token", "application/vnd.kubernetes.protobuf");
    EXPECT_EQ(only_pb.code, 406) << target;
    EXPECT_THAT(only_pb.body,
                HasSubstr(R"("message":"only the following media types are accepted: )"
                          R"(application/json")"))
        << target;
  }
}

TEST_F(ApiServerTest, DiscoveryNamesTheVerbsOfEachGroupVersion) {
  EXPECT_THAT(Send("GET", "/apis/metrics/v1alpha1").body,
              HasSubstr(R"("verbs":["get","list","watch","create","update","delete"])"));
  EXPECT_THAT(Send("GET", "/apis/metrics.k8s.io/v1").body,
              HasSubstr(R"("verbs":["get","list","watch"])"));
}

}  // namespace
}  // namespace kubestat::apiserver
