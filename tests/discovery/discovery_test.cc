// cpprestsdk's U() macro collides with GoogleTest's template parameters.
#define _TURN_OFF_PLATFORM_STRING
#include "kubestat/discovery/discovery.h"

#include <arpa/inet.h>
#include <cpprest/base_uri.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kubestat/scrapers/node_address.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"

namespace kubestat::discovery {
namespace {

using scrapers::KubeletAddressOptions;
using scrapers::ScrapeTarget;
using scrapers::SelectKubeletTarget;
using testing::FreeLoopbackPort;
using testing::PollUntil;

// How long a test waits for discovery's threads to get somewhere (only a broken feature
// takes that long).
constexpr std::chrono::seconds kReady(10);

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

// A pod of a ReplicaSet with two containers: "app" with cpu and memory requests and limits,
// "sidecar" with a cpu request only (and a value that is no Quantity).
std::string PodWithResourcesJson(const std::string& rv) {
  return R"({"metadata":{"name":"web-1","namespace":"shop","uid":"u","resourceVersion":")" + rv +
         R"(","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d4b9",)"
         R"("uid":"r","controller":true}]},"spec":{"nodeName":"node-1","containers":[)"
         R"({"name":"app","resources":{"requests":{"cpu":"250m","memory":"64Mi"},)"
         R"("limits":{"cpu":"1","memory":"128Mi","nvidia.com/gpu":"1"}}},)"
         R"({"name":"sidecar","resources":{"requests":{"cpu":"50m","memory":"lots"}}}]},)"
         R"("status":{"phase":"Running"}})";
}

std::string LimitRangeJson(const std::string& ns, const std::string& name, const std::string& rv,
                           const std::string& max_cpu) {
  return R"({"metadata":{"name":")" + name + R"(","namespace":")" + ns +
         R"(","resourceVersion":")" + rv +
         R"("},"spec":{"limits":[)"
         R"({"type":"Container","max":{"cpu":")" +
         max_cpu +
         R"("},"min":{"memory":"4Mi"},"maxLimitRequestRatio":{"cpu":"4"}},)"
         R"({"type":"Pod","max":{"memory":"1Gi"}},)"
         R"({"type":"PersistentVolumeClaim","max":{"storage":"10Gi"}}]}})";
}

std::string Event(const std::string& type, const std::string& object) {
  return R"({"type":")" + type + R"(","object":)" + object + "}\n";
}

// A small kube API on loopback: paginated lists of nodes and pods, and watches whose
// chunked streams the test writes to and ends.
//
// A plain socket server with a thread per connection, not cpprest's http_listener: that
// listener's close() is not safe against a connection arriving meanwhile (the accept
// completion then runs on the freed listener and crashes the process), and a discovery
// that has just been stopped may still be connecting (the requests it cancelled wind down
// on cpprest's threads). Here the destructor shuts every socket down and joins every
// thread, so nothing of the server outlives it.
class FakeKubeApi {
 public:
  FakeKubeApi() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listen_fd_, 64) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error("fake kube API: cannot listen on loopback");
    }
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  ~FakeKubeApi() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
      // Wakes the blocked accept() and recv()s; their threads then end.
      ::shutdown(listen_fd_, SHUT_RDWR);
      for (int fd : connections_) ::shutdown(fd, SHUT_RDWR);
    }
    watch_ended_.notify_all();  // and the connections waiting on an open watch
    acceptor_.join();
    // The acceptor has ended: no connection thread is added any more.
    for (std::thread& thread : connection_threads_) thread.join();
    ::close(listen_fd_);
  }

  std::string server() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void SetList(const std::string& resource, std::vector<std::string> items, const std::string& rv) {
    std::lock_guard<std::mutex> lock(mu_);
    items_[resource] = std::move(items);
    rv_[resource] = rv;
  }
  // While on, list requests are counted and then left unanswered until it is turned off or
  // the server closes.
  void SetListsHang(bool hang) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      hang_lists_ = hang;
    }
    watch_ended_.notify_all();
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
    return PollUntil(
        [&] {
          std::lock_guard<std::mutex> lock(mu_);
          return watches_[resource].size() >= n;
        },
        kReady);
  }
  // Writes `text` to the latest watch of `resource` as one chunk (readable at once).
  void Send(const std::string& resource, const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    Watch& watch = Latest(resource);
    if (watch.ended) return;
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", text.size());
    WriteAll(watch.fd, std::string(size) + text + "\r\n");
  }
  // Ends the latest watch of `resource` (the last chunk); the connection is kept.
  void CloseWatch(const std::string& resource) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      Watch& watch = Latest(resource);
      if (watch.ended) return;
      WriteAll(watch.fd, "0\r\n\r\n");
      watch.ended = true;
    }
    watch_ended_.notify_all();
  }

 private:
  struct Watch {
    int fd = -1;
    bool ended = false;
  };

  // Requires mu_ and a watch of `resource`.
  Watch& Latest(const std::string& resource) {
    auto& watches = watches_[resource];
    if (watches.empty()) throw std::logic_error("fake kube API: no watch of " + resource);
    return *watches.back();
  }

  static bool WriteAll(int fd, std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  static std::string Response(int code, std::string_view reason, const std::string& body) {
    return "HTTP/1.1 " + std::to_string(code) + " " + std::string(reason) +
           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body;
  }

  void AcceptLoop() {
    while (true) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_) {
        if (fd >= 0) ::close(fd);
        return;
      }
      if (fd < 0) continue;  // e.g. a connection reset before it was accepted
      connections_.insert(fd);
      connection_threads_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  // Answers the requests of one connection (GETs: no body) until it or the server closes.
  void Serve(int fd) {
    std::string received;
    while (true) {
      size_t end;
      while ((end = received.find("\r\n\r\n")) == std::string::npos) {
        char buffer[4096];
        ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        received.append(buffer, static_cast<size_t>(n));
      }
      if (end == std::string::npos || !Handle(fd, received.substr(0, end))) break;
      received.erase(0, end + 4);
    }
    std::lock_guard<std::mutex> lock(mu_);
    connections_.erase(fd);
    ::close(fd);
  }

  // Answers one request; false when the connection should close.
  bool Handle(int fd, const std::string& head) {
    // "GET /api/v1/pods?limit=500 HTTP/1.1", then header lines.
    const size_t target_start = head.find(' ') + 1;
    const std::string target =
        head.substr(target_start, head.find(' ', target_start) - target_start);
    const size_t question = target.find('?');
    const std::string path = target.substr(0, question);
    auto query =
        web::uri::split_query(question == std::string::npos ? "" : target.substr(question + 1));
    std::string authorization;
    for (size_t line = head.find("\r\n"); line != std::string::npos;) {
      size_t next = head.find("\r\n", line + 2);
      std::string header =
          head.substr(line + 2, next == std::string::npos ? next : next - line - 2);
      const size_t colon = header.find(':');
      std::string name = header.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      if (name == "authorization" && colon != std::string::npos) {
        authorization =
            header.substr(std::min(header.find_first_not_of(' ', colon + 1), header.size()));
      }
      line = next;
    }
    std::string resource = path == "/api/v1/nodes"         ? "nodes"
                           : path == "/api/v1/pods"        ? "pods"
                           : path == "/api/v1/limitranges" ? "limitranges"
                                                           : "";

    std::unique_lock<std::mutex> lock(mu_);
    if (closing_) return false;
    authorizations_.push_back(authorization);
    if (resource.empty()) return WriteAll(fd, Response(404, "Not Found", ""));
    if (query["watch"] == "true") {
      watch_versions_[resource].push_back(query["resourceVersion"]);
      if (gone_on_watch_) {
        return WriteAll(fd, Response(410, "Gone",
                                     R"({"kind":"Status","apiVersion":"v1","status":"Failure",)"
                                     R"("reason":"Expired","code":410})"));
      }
      // Registered and answered under one lock: Send() and CloseWatch() come after the head.
      auto watch = std::make_shared<Watch>();
      watch->fd = fd;
      watches_[resource].push_back(watch);
      if (!WriteAll(fd,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n")) {
        watch->ended = true;
        return false;
      }
      watch_ended_.wait(lock, [&] { return watch->ended || closing_; });
      return !closing_;
    }
    ++list_requests_[resource];
    watch_ended_.wait(lock, [&] { return !hang_lists_ || closing_; });
    if (closing_) return false;
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
    return WriteAll(fd, Response(200, "OK", body));
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  std::vector<std::thread> connection_threads_;  // added by the acceptor only
  std::mutex mu_;
  std::condition_variable watch_ended_;
  bool closing_ = false;
  std::set<int> connections_;  // open connection sockets
  std::map<std::string, std::vector<std::string>> items_;
  std::map<std::string, std::string> rv_;
  std::map<std::string, std::vector<std::string>> watch_versions_;
  std::map<std::string, int> list_requests_;
  std::map<std::string, std::vector<std::shared_ptr<Watch>>> watches_;
  std::vector<std::string> authorizations_;
  bool gone_on_watch_ = false;
  bool hang_lists_ = false;
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
  void OnLimitRangeChange(ChangeType type, const LimitRangeInfo& limit_range) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::string(ChangeTypeName(type)) + " limitrange " + limit_range.Key());
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
    kube::KubeApiConfig config;
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

TEST_F(KubeApiDiscoveryTest, KeepsContainersRequestsLimitsAndTheControllingOwner) {
  api_.SetList("pods", {PodWithResourcesJson("7")}, "20");
  auto discovery = Start();
  std::optional<PodInfo> pod = discovery->Pod("shop", "web-1");
  ASSERT_TRUE(pod);
  EXPECT_EQ(pod->owner_kind, "ReplicaSet");
  EXPECT_EQ(pod->owner_name, "web-7d4b9");
  ASSERT_EQ(pod->containers.size(), 2u);
  EXPECT_EQ(pod->containers[0].name, "app");
  EXPECT_EQ(pod->containers[0].requests, (limits::Amounts{250, 64 << 20}));
  EXPECT_EQ(pod->containers[0].limits, (limits::Amounts{1000, 128 << 20}));
  // A value that is no Quantity is left out and counted.
  EXPECT_EQ(pod->containers[1].requests, (limits::Amounts{50, std::nullopt}));
  EXPECT_EQ(pod->containers[1].limits, limits::Amounts{});
  EXPECT_EQ(discovery->stats().bad_quantities, 1u);
}

// The batch read gives each known pod's labels, node and containers (as Pod() has them),
// in the order asked, and nothing for a pod it does not know.
TEST_F(KubeApiDiscoveryTest, PodLabelsOfGivesLabelsNodeAndContainersOfEachKnownPod) {
  api_.SetList("pods",
               {PodWithResourcesJson("7"), PodJson("shop", "web-2", "8", "node-2"),
                PodJson("payments", "api-1", "9", "node-1", "api")},
               "20");
  auto discovery = Start();
  const std::vector<PodNameRef> asked = {{"shop", "web-2"},     {"shop", "absent"},
                                         {"shop", "web-1"},     {"payments", "api-1"},
                                         {"payments", "web-2"}, {"", ""}};
  std::vector<std::optional<PodLabelsInfo>> found = discovery->PodLabelsOf(asked);
  ASSERT_EQ(found.size(), asked.size());
  for (size_t i : {0, 2, 3}) {
    SCOPED_TRACE(std::string(asked[i].namespace_name) + "/" + std::string(asked[i].name));
    std::optional<PodInfo> pod = discovery->Pod(asked[i].namespace_name, asked[i].name);
    ASSERT_TRUE(pod);
    ASSERT_TRUE(found[i]);
    EXPECT_EQ(found[i]->labels, pod->labels);
    EXPECT_EQ(found[i]->node_name, pod->node_name);
    EXPECT_EQ(found[i]->containers, pod->containers);
  }
  EXPECT_EQ(found[0]->labels, (std::map<std::string, std::string>{{"app", "web"}}));
  EXPECT_EQ(found[0]->node_name, "node-2");
  EXPECT_EQ(found[3]->labels, (std::map<std::string, std::string>{{"app", "api"}}));
  ASSERT_EQ(found[2]->containers.size(), 2u);
  EXPECT_EQ(found[2]->node_name, "node-1");
  EXPECT_EQ(found[2]->containers[0].name, "app");
  EXPECT_EQ(found[2]->containers[0].requests, (limits::Amounts{250, 64 << 20}));
  EXPECT_EQ(found[2]->containers[1].name, "sidecar");
  EXPECT_FALSE(found[1]);
  EXPECT_FALSE(found[4]);
  EXPECT_FALSE(found[5]);
  EXPECT_TRUE(discovery->PodLabelsOf({}).empty());
}

TEST_F(KubeApiDiscoveryTest, ListsAndWatchesLimitRangesByNamespace) {
  api_.SetList(
      "limitranges",
      {LimitRangeJson("shop", "limits", "3", "2"), LimitRangeJson("payments", "limits", "4", "1")},
      "30");
  auto discovery = Start();
  std::vector<LimitRangeInfo> shop = discovery->LimitRanges("shop");
  ASSERT_EQ(shop.size(), 1u);
  const limits::LimitRange& lr = shop[0].limit_range;
  EXPECT_EQ(lr.name, "limits");
  // The Container and Pod items; the PersistentVolumeClaim item is not about cpu or memory.
  ASSERT_EQ(lr.items.size(), 2u);
  EXPECT_EQ(lr.items[0].max.cpu, 2000);
  EXPECT_EQ(lr.items[0].min.memory, 4 << 20);
  EXPECT_EQ(lr.items[0].max_limit_request_ratio.cpu, 4000);
  // As the API server stores it: default from max, defaultRequest from default or min.
  EXPECT_EQ(lr.items[0].default_limit.cpu, 2000);
  EXPECT_EQ(lr.items[0].default_request.memory, 4 << 20);
  EXPECT_EQ(lr.items[1].type, limits::LimitType::kPod);
  EXPECT_EQ(lr.items[1].max.memory, 1 << 30);
  EXPECT_TRUE(discovery->LimitRanges("search").empty());
  EXPECT_EQ(discovery->limit_range_resource_version(), "30");

  ASSERT_TRUE(api_.WaitForWatches("limitranges", 1));
  api_.Send("limitranges", Event("MODIFIED", LimitRangeJson("shop", "limits", "31", "500m")));
  api_.Send("limitranges", Event("DELETED", LimitRangeJson("payments", "limits", "32", "1")));
  ASSERT_TRUE(PollUntil([&] { return discovery->limit_range_resource_version() == "32"; }, kReady));
  EXPECT_EQ(discovery->LimitRanges("shop")[0].limit_range.items[0].max.cpu, 500);
  EXPECT_TRUE(discovery->LimitRanges("payments").empty());
  EXPECT_TRUE(listener_.Has("ADDED limitrange shop/limits"));
  EXPECT_TRUE(listener_.Has("MODIFIED limitrange shop/limits"));
  EXPECT_TRUE(listener_.Has("DELETED limitrange payments/limits"));
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
  // The resume point moves once an event has been applied, counted and told to listeners.
  ASSERT_TRUE(PollUntil([&] { return discovery->pod_resource_version() == "23"; }, kReady));
  ASSERT_TRUE(PollUntil([&] { return discovery->node_resource_version() == "11"; }, kReady));
  EXPECT_EQ(discovery->node_count(), 3u);
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
  ASSERT_TRUE(PollUntil([&] { return discovery->pod_resource_version() == "32"; }, kReady));
  api_.CloseWatch("pods");
  ASSERT_TRUE(api_.WaitForWatches("pods", 2));
  // A bookmark moves the resume point without changing anything.
  api_.Send("pods",
            R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"40"}}})"
            "\n");
  ASSERT_TRUE(PollUntil([&] { return discovery->pod_resource_version() == "40"; }, kReady));
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
  ASSERT_TRUE(PollUntil([&] { return api_.ListRequests("nodes") >= 2; }, kReady));
  api_.SetGoneOnWatch(false);
  // The snapshot changes before the listeners hear of it: wait for what they were told.
  ASSERT_TRUE(PollUntil([&] { return listener_.Has("DELETED node node-2"); }, kReady));
  EXPECT_EQ(discovery->node_count(), 1u);
  EXPECT_GE(discovery->stats().relists_after_gone, 1u);
}

// Where node `name` is scraped according to the discovery's snapshot now.
std::optional<ScrapeTarget> TargetOf(const Discovery& discovery, const std::string& name) {
  KubeletAddressOptions options;
  options.preferred_address_types = {"InternalIP"};
  options.use_node_status_port = true;
  for (const NodeInfo& node : discovery.Nodes()) {
    if (node.name != name) continue;
    absl::StatusOr<ScrapeTarget> target = SelectKubeletTarget(node, options);
    if (target.ok()) return *target;
  }
  return std::nullopt;
}

TEST_F(KubeApiDiscoveryTest, ModifiedNodeWithANewAddressAndPortMovesItsScrapeTarget) {
  auto discovery = Start();
  ASSERT_TRUE(api_.WaitForWatches("nodes", 1));
  ASSERT_EQ(TargetOf(*discovery, "node-1"), (ScrapeTarget{"node-1", "10.0.0.1", 10250}));
  api_.Send("nodes", Event("MODIFIED", NodeJson("node-1", "12", "10.0.0.9", 41001)));
  ASSERT_TRUE(PollUntil([&] { return discovery->node_resource_version() == "12"; }, kReady));
  EXPECT_EQ(TargetOf(*discovery, "node-1"), (ScrapeTarget{"node-1", "10.0.0.9", 41001}));
  EXPECT_TRUE(listener_.Has("MODIFIED node node-1"));
}

// A kube-apiserver restarted with its nodes' kubelets elsewhere, which does not know the
// resume point: the relist moves every target.
TEST_F(KubeApiDiscoveryTest, RelistAfterAnApiserverRestartMovesTheScrapeTargets) {
  auto discovery = Start();
  ASSERT_TRUE(api_.WaitForWatches("nodes", 1));
  api_.SetList(
      "nodes",
      {NodeJson("node-1", "3", "10.0.0.1", 42001), NodeJson("node-2", "3", "10.0.0.2", 42002)},
      "4");
  api_.Send(
      "nodes",
      R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",)"
      R"("message":"Too large resource version: 10, current: 4","reason":"Timeout","code":504}})"
      "\n");
  ASSERT_TRUE(PollUntil([&] { return listener_.Has("MODIFIED node node-2"); }, kReady));
  EXPECT_EQ(TargetOf(*discovery, "node-1"), (ScrapeTarget{"node-1", "10.0.0.1", 42001}));
  EXPECT_EQ(TargetOf(*discovery, "node-2"), (ScrapeTarget{"node-2", "10.0.0.2", 42002}));
  EXPECT_TRUE(listener_.Has("MODIFIED node node-1"));
  EXPECT_EQ(discovery->stats().relists_after_gone, 1u);
}

TEST(KubeApiDiscoveryStandaloneTest, UnreachableApiIsRetriedUntilItAppears) {
  FakeClock clock;
  kube::KubeApiConfig config;
  const int port = FreeLoopbackPort();
  config.server = "http://127.0.0.1:" + std::to_string(port);
  KubeApiDiscoveryOptions options;
  options.retry_backoff = std::chrono::milliseconds(10);
  auto discovery = KubeApiDiscovery::Create(config, options, clock);
  ASSERT_TRUE(discovery.ok());
  (*discovery)->Start();
  ASSERT_TRUE(PollUntil([&] { return (*discovery)->stats().errors >= 2; }, kReady));
  EXPECT_FALSE((*discovery)->synced());
  (*discovery)->Stop();
}

TEST(KubeApiDiscoveryStandaloneTest, StopAbandonsAListInFlight) {
  FakeKubeApi api;
  api.SetListsHang(true);
  FakeClock clock;
  kube::KubeApiConfig config;
  config.server = api.server();
  KubeApiDiscoveryOptions options;
  // Without cancellation, Stop() would wait this out (and the test's timeout fail it first).
  options.request_timeout = std::chrono::hours(1);
  auto discovery = KubeApiDiscovery::Create(config, options, clock);
  ASSERT_TRUE(discovery.ok()) << discovery.status();
  (*discovery)->Start();
  ASSERT_TRUE(PollUntil([&] { return api.ListRequests("nodes") >= 1; }, kReady));
  (*discovery)->Stop();
  EXPECT_FALSE((*discovery)->synced());
  EXPECT_EQ((*discovery)->stats().errors, 0u) << "a stop is not an error";
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
}  // namespace kubestat::discovery
