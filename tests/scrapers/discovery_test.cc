// cpprestsdk's U() macro collides with GoogleTest's template parameters.
#define _TURN_OFF_PLATFORM_STRING
#include "kubestat/scrapers/discovery.h"

#include <cpprest/http_listener.h>
#include <cpprest/producerconsumerstream.h>
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "loopback_pki.h"

namespace kubestat::scrapers {
namespace {

using testing::FreeLoopbackPort;
using testing::PollUntil;
using web::http::http_request;
using web::http::status_codes;

std::string NodeJson(const std::string& name, const std::string& rv, const std::string& ip,
                     int port = 10250) {
  return R"({"metadata":{"name":")" + name + R"(","uid":"uid-)" + name +
         R"(","resourceVersion":")" + rv + R"(","labels":{"zone":"a"}},"status":{"addresses":[)" +
         R"({"type":"InternalIP","address":")" + ip + R"("},{"type":"Hostname","address":")" +
         name + R"("}],"daemonEndpoints":{"kubeletEndpoint":{"Port":)" + std::to_string(port) +
         "}}}}";
}

std::string PodJson(const std::string& ns, const std::string& name, const std::string& rv,
                    const std::string& node, const std::string& app = "web",
                    bool terminating = false) {
  return R"({"metadata":{"name":")" + name + R"(","namespace":")" + ns + R"(","uid":"uid-)" + name +
         R"(","resourceVersion":")" + rv + R"(","labels":{"app":")" + app + R"("})" +
         (terminating ? R"(,"deletionTimestamp":"2026-11-21T10:00:00Z")" : "") +
         R"(},"spec":{"nodeName":")" + node + R"("},"status":{"phase":"Running"}})";
}

std::string Event(const std::string& type, const std::string& object) {
  return R"({"type":")" + type + R"(","object":)" + object + "}\n";
}

// A small kube API on loopback: paginated lists of nodes and pods, and watches whose
// streams the test writes to and closes.
class FakeKubeApi {
 public:
  FakeKubeApi() : port_(FreeLoopbackPort()) {
    listener_ = std::make_unique<web::http::experimental::listener::http_listener>(
        "http://127.0.0.1:" + std::to_string(port_));
    listener_->support([this](http_request request) { Handle(request); });
    listener_->open().wait();
  }
  ~FakeKubeApi() {
    std::map<std::string, std::deque<concurrency::streams::producer_consumer_buffer<uint8_t>>> open;
    {
      std::lock_guard<std::mutex> lock(mu_);
      open.swap(watches_);
    }
    for (auto& [resource, streams] : open) {
      for (auto& stream : streams) stream.close(std::ios_base::out).wait();
    }
    listener_->close().wait();
  }

  std::string server() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void SetList(const std::string& resource, std::vector<std::string> items, const std::string& rv) {
    std::lock_guard<std::mutex> lock(mu_);
    items_[resource] = std::move(items);
    rv_[resource] = rv;
  }
  void SetGoneOnWatch(bool gone) {
    std::lock_guard<std::mutex> lock(mu_);
    gone_on_watch_ = gone;
  }
  // The resourceVersions the watches of `resource` asked for, in order.
  std::vector<std::string> WatchVersions(const std::string& resource) {
    std::lock_guard<std::mutex> lock(mu_);
    return watch_versions_[resource];
  }
  std::vector<std::string> Authorizations() {
    std::lock_guard<std::mutex> lock(mu_);
    return authorizations_;
  }
  int ListRequests(const std::string& resource) {
    std::lock_guard<std::mutex> lock(mu_);
    return list_requests_[resource];
  }
  bool WaitForWatches(const std::string& resource, size_t n) {
    return PollUntil([&] {
      std::lock_guard<std::mutex> lock(mu_);
      return watches_[resource].size() >= n;
    });
  }
  void Send(const std::string& resource, const std::string& text) {
    auto stream = Latest(resource);
    stream.putn_nocopy(reinterpret_cast<const uint8_t*>(text.data()), text.size()).wait();
    stream.sync().wait();  // makes the bytes readable now, not when a whole chunk is full
  }
  void CloseWatch(const std::string& resource) {
    Latest(resource).close(std::ios_base::out).wait();
  }

 private:
  concurrency::streams::producer_consumer_buffer<uint8_t> Latest(const std::string& resource) {
    std::lock_guard<std::mutex> lock(mu_);
    return watches_[resource].back();
  }

  void Handle(http_request request) {
    const std::string path = request.relative_uri().path();
    std::string resource = path == "/api/v1/nodes" ? "nodes" : path == "/api/v1/pods" ? "pods" : "";
    auto query = web::uri::split_query(request.relative_uri().query());
    std::unique_lock<std::mutex> lock(mu_);
    authorizations_.push_back(
        request.headers().has("Authorization") ? request.headers()["Authorization"] : "");
    if (resource.empty()) {
      lock.unlock();
      request.reply(status_codes::NotFound);
      return;
    }
    if (query["watch"] == "true") {
      watch_versions_[resource].push_back(query["resourceVersion"]);
      if (gone_on_watch_) {
        lock.unlock();
        request.reply(status_codes::Gone,
                      std::string(R"({"kind":"Status","apiVersion":"v1","status":"Failure",)"
                                  R"("reason":"Expired","code":410})"),
                      "application/json");
        return;
      }
      concurrency::streams::producer_consumer_buffer<uint8_t> stream;
      watches_[resource].push_back(stream);
      lock.unlock();
      request.reply(status_codes::OK, stream.create_istream(), "application/json");
      return;
    }
    ++list_requests_[resource];
    const std::vector<std::string>& items = items_[resource];
    size_t limit = query.count("limit") ? std::stoul(query["limit"]) : items.size();
    size_t start = query.count("continue") ? std::stoul(web::uri::decode(query["continue"])) : 0;
    std::string body = R"({"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":")" +
                       rv_[resource] + "\"";
    size_t end = std::min(items.size(), start + limit);
    if (end < items.size()) body += R"(,"continue":")" + std::to_string(end) + "\"";
    body += R"(},"items":[)";
    for (size_t i = start; i < end; ++i) body += (i > start ? "," : "") + items[i];
    body += "]}";
    lock.unlock();
    request.reply(status_codes::OK, body, "application/json");
  }

  int port_;
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
  std::mutex mu_;
  std::map<std::string, std::vector<std::string>> items_;
  std::map<std::string, std::string> rv_;
  std::map<std::string, std::vector<std::string>> watch_versions_;
  std::map<std::string, int> list_requests_;
  std::map<std::string, std::deque<concurrency::streams::producer_consumer_buffer<uint8_t>>>
      watches_;
  std::vector<std::string> authorizations_;
  bool gone_on_watch_ = false;
};

class RecordingListener final : public ClusterListener {
 public:
  void OnNodeChange(ChangeType type, const NodeInfo& node) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::string(ChangeTypeName(type)) + " node " + node.name);
  }
  void OnPodChange(ChangeType type, const PodInfo& pod) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::string(ChangeTypeName(type)) + " pod " + pod.Key());
  }
  void OnSynced() override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back("SYNCED");
  }
  std::vector<std::string> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  bool Has(const std::string& event) {
    auto all = events();
    return std::find(all.begin(), all.end(), event) != all.end();
  }

 private:
  std::mutex mu_;
  std::vector<std::string> events_;
};

class KubeApiDiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.SetList("nodes",
                 {NodeJson("node-1", "5", "10.0.0.1"), NodeJson("node-2", "6", "10.0.0.2", 10255)},
                 "10");
    api_.SetList("pods",
                 {PodJson("shop", "web-1", "7", "node-1"), PodJson("shop", "web-2", "8", "node-2"),
                  PodJson("payments", "api-1", "9", "node-1", "api")},
                 "20");
  }
  std::unique_ptr<KubeApiDiscovery> Start(int page_size = 500) {
    KubeApiConfig config;
    config.server = api_.server();
    config.token = "api-token";
    KubeApiDiscoveryOptions options;
    options.retry_backoff = std::chrono::milliseconds(10);
    options.list_page_size = page_size;
    auto discovery = KubeApiDiscovery::Create(config, options, clock_);
    EXPECT_TRUE(discovery.ok()) << discovery.status();
    (*discovery)->AddListener(&listener_);
    (*discovery)->Start();
    EXPECT_TRUE((*discovery)->WaitForSync(std::chrono::seconds(10)));
    return *std::move(discovery);
  }

  FakeClock clock_;
  FakeKubeApi api_;
  RecordingListener listener_;
};

TEST_F(KubeApiDiscoveryTest, ListsNodesAndPodsAndBecomesSynced) {
  auto discovery = Start();
  EXPECT_TRUE(discovery->synced());
  ASSERT_EQ(discovery->node_count(), 2u);
  std::optional<NodeInfo> node = discovery->Node("node-2");
  ASSERT_TRUE(node);
  EXPECT_EQ(node->kubelet_port, 10255);
  EXPECT_EQ(node->resource_version, "6");
  EXPECT_EQ(node->labels, (std::map<std::string, std::string>{{"zone", "a"}}));
  EXPECT_EQ(node->addresses,
            (std::vector<NodeAddress>{{"InternalIP", "10.0.0.2"}, {"Hostname", "node-2"}}));
  ASSERT_EQ(discovery->pod_count(), 3u);
  std::optional<PodInfo> pod = discovery->Pod("payments", "api-1");
  ASSERT_TRUE(pod);
  EXPECT_EQ(pod->uid, "uid-api-1");
  EXPECT_EQ(pod->node_name, "node-1");
  EXPECT_EQ(pod->phase, "Running");
  EXPECT_EQ(pod->labels, (std::map<std::string, std::string>{{"app", "api"}}));
  EXPECT_FALSE(pod->terminating);
  EXPECT_TRUE(listener_.Has("ADDED node node-1"));
  EXPECT_TRUE(listener_.Has("ADDED pod shop/web-2"));
  EXPECT_EQ(listener_.events().back(), "SYNCED");
  EXPECT_EQ(discovery->node_resource_version(), "10");
  EXPECT_EQ(discovery->pod_resource_version(), "20");
  for (const std::string& auth : api_.Authorizations()) EXPECT_EQ(auth, "Bearer api-token");
}

TEST_F(KubeApiDiscoveryTest, FollowsListPagination) {
  auto discovery = Start(/*page_size=*/1);
  EXPECT_EQ(discovery->node_count(), 2u);
  EXPECT_EQ(discovery->pod_count(), 3u);
  EXPECT_EQ(api_.ListRequests("pods"), 3);
}

TEST_F(KubeApiDiscoveryTest, WatchEventsUpdateTheSnapshotAndNotifyListeners) {
  auto discovery = Start();
  ASSERT_TRUE(api_.WaitForWatches("pods", 1));
  ASSERT_TRUE(api_.WaitForWatches("nodes", 1));
  api_.Send("nodes", Event("ADDED", NodeJson("node-3", "11", "10.0.0.3")));
  api_.Send("pods", Event("MODIFIED", PodJson("shop", "web-1", "21", "node-1", "web", true)));
  api_.Send("pods", Event("DELETED", PodJson("shop", "web-2", "22", "node-2")));
  api_.Send("pods", Event("ADDED", PodJson("shop", "web-3", "23", "node-3")));
  ASSERT_TRUE(PollUntil([&] { return discovery->pod_resource_version() == "23"; }));
  ASSERT_TRUE(PollUntil([&] { return discovery->node_count() == 3; }));
  EXPECT_TRUE(discovery->Pod("shop", "web-1")->terminating);
  EXPECT_FALSE(discovery->Pod("shop", "web-2").has_value());
  EXPECT_EQ(discovery->Pod("shop", "web-3")->node_name, "node-3");
  EXPECT_TRUE(listener_.Has("MODIFIED pod shop/web-1"));
  EXPECT_TRUE(listener_.Has("DELETED pod shop/web-2"));
  EXPECT_TRUE(listener_.Has("ADDED node node-3"));
  EXPECT_EQ(discovery->stats().events, 4u);
}

TEST_F(KubeApiDiscoveryTest, DroppedWatchResumesFromTheLastResourceVersionSeen) {
  auto discovery = Start();
  ASSERT_TRUE(api_.WaitForWatches("pods", 1));
  api_.Send("pods", Event("ADDED", PodJson("shop", "web-9", "31", "node-1")));
  api_.Send("pods", Event("MODIFIED", PodJson("shop", "web-9", "32", "node-1")));
  ASSERT_TRUE(PollUntil([&] { return discovery->pod_resource_version() == "32"; }));
  api_.CloseWatch("pods");
  ASSERT_TRUE(api_.WaitForWatches("pods", 2));
  // A bookmark moves the resume point without changing anything.
  api_.Send("pods",
            R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"40"}}})"
            "\n");
  ASSERT_TRUE(PollUntil([&] { return discovery->pod_resource_version() == "40"; }));
  api_.CloseWatch("pods");
  ASSERT_TRUE(api_.WaitForWatches("pods", 3));
  EXPECT_EQ(api_.WatchVersions("pods"), (std::vector<std::string>{"20", "32", "40"}));
  EXPECT_EQ(api_.ListRequests("pods"), 1);  // resumed, never relisted
  EXPECT_EQ(discovery->pod_count(), 4u);
}

TEST_F(KubeApiDiscoveryTest, GoneEventRelistsAndEmitsTheDifferencesIncludingDeletions) {
  auto discovery = Start();
  ASSERT_TRUE(api_.WaitForWatches("pods", 1));
  // While the watch was away: web-2 and api-1 were deleted, web-1 changed, web-5 appeared.
  api_.SetList("pods",
               {PodJson("shop", "web-1", "50", "node-2"), PodJson("shop", "web-5", "51", "node-1")},
               "55");
  api_.Send(
      "pods",
      R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1",)"
      R"("status":"Failure","message":"too old resource version","reason":"Expired","code":410}})"
      "\n");
  ASSERT_TRUE(api_.WaitForWatches("pods", 2));
  EXPECT_EQ(api_.ListRequests("pods"), 2);
  EXPECT_EQ(api_.WatchVersions("pods").back(), "55");
  EXPECT_EQ(discovery->pod_count(), 2u);
  EXPECT_TRUE(listener_.Has("DELETED pod shop/web-2"));
  EXPECT_TRUE(listener_.Has("DELETED pod payments/api-1"));
  EXPECT_TRUE(listener_.Has("MODIFIED pod shop/web-1"));
  EXPECT_TRUE(listener_.Has("ADDED pod shop/web-5"));
  EXPECT_EQ(discovery->Pod("shop", "web-1")->node_name, "node-2");
  EXPECT_EQ(discovery->stats().relists_after_gone, 1u);
}

TEST_F(KubeApiDiscoveryTest, GoneStatusOnTheWatchRequestRelists) {
  auto discovery = Start();
  ASSERT_TRUE(api_.WaitForWatches("nodes", 1));
  api_.SetList("nodes", {NodeJson("node-1", "60", "10.0.0.1")}, "61");
  api_.SetGoneOnWatch(true);
  api_.CloseWatch("nodes");
  ASSERT_TRUE(PollUntil([&] { return api_.ListRequests("nodes") >= 2; }));
  api_.SetGoneOnWatch(false);
  ASSERT_TRUE(PollUntil([&] { return discovery->node_count() == 1; }));
  EXPECT_TRUE(listener_.Has("DELETED node node-2"));
  EXPECT_GE(discovery->stats().relists_after_gone, 1u);
}

TEST(KubeApiDiscoveryStandaloneTest, UnreachableApiIsRetriedUntilItAppears) {
  FakeClock clock;
  KubeApiConfig config;
  const int port = FreeLoopbackPort();
  config.server = "http://127.0.0.1:" + std::to_string(port);
  KubeApiDiscoveryOptions options;
  options.retry_backoff = std::chrono::milliseconds(10);
  auto discovery = KubeApiDiscovery::Create(config, options, clock);
  ASSERT_TRUE(discovery.ok());
  (*discovery)->Start();
  ASSERT_TRUE(PollUntil([&] { return (*discovery)->stats().errors >= 2; }));
  EXPECT_FALSE((*discovery)->synced());
  (*discovery)->Stop();
}

TEST(StaticDiscoveryTest, ParsesNodesAndIsSyncedAtStart) {
  absl::StatusOr<std::vector<NodeInfo>> nodes =
      ParseStaticNodes("node-a=127.1.0.1:10250, node-b=kubelet.local,node-c=[::1]:11000");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[0].addresses, (std::vector<NodeAddress>{{"InternalIP", "127.1.0.1"}}));
  EXPECT_EQ((*nodes)[0].kubelet_port, 10250);
  EXPECT_EQ((*nodes)[1].addresses, (std::vector<NodeAddress>{{"Hostname", "kubelet.local"}}));
  EXPECT_EQ((*nodes)[1].kubelet_port, 0);
  EXPECT_EQ((*nodes)[2].addresses, (std::vector<NodeAddress>{{"InternalIP", "::1"}}));
  EXPECT_EQ((*nodes)[2].kubelet_port, 11000);

  StaticDiscovery discovery(*nodes);
  RecordingListener listener;
  discovery.AddListener(&listener);
  EXPECT_FALSE(discovery.synced());
  discovery.Start();
  EXPECT_TRUE(discovery.synced());
  EXPECT_EQ(discovery.node_count(), 3u);
  EXPECT_EQ(listener.events().back(), "SYNCED");
}

TEST(StaticDiscoveryTest, RejectsMalformedEntriesNamingThem) {
  for (const char* bad : {"", "node-a", "=1.2.3.4", "a=1.2.3.4:0", "a=1.2.3.4:x", "a=::1:10",
                          "a=[::1", "a=h:1,a=h:2"}) {
    absl::StatusOr<std::vector<NodeInfo>> nodes = ParseStaticNodes(bad);
    EXPECT_FALSE(nodes.ok()) << bad;
    EXPECT_NE(nodes.status().message().find("--static-nodes"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace kubestat::scrapers
