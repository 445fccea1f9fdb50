// Hollow nodes and their pods (sim/src/hollow_nodes.h, hollow_pods.h) against an API server
// of the test's own on loopback (plain HTTP, the product's HTTP server): the Leases are
// renewed by several callers at once, every one of them each interval, and a Node the API
// server marks not Ready is reported Ready again; the pods are listed
// in pages that follow the continue token, reported Running by status writes made in
// parallel, and a pod annotated kubestat.dev/cpu serves that rate, its cumulative counter
// growing at it and never going back once the annotation is removed. It includes the
// simulator's private headers.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api_client.h"
#include "hollow_nodes.h"
#include "hollow_pods.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/http/server.h"
#include "kubestat/sim/model.h"
#include "kubestat/testing/poll.h"
#include "prometheus/registry.h"

namespace kubestat::sim {
namespace {

using testing::PollUntil;
constexpr auto kDeadline = std::chrono::seconds(30);
constexpr char kLeases[] = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";

// What the test's API server was asked, and how many calls it was answering at once.
class FakeApi {
 public:
  // Lease renewals wait in the handler until `hold_renewals` of them are under way together
  // (or kDeadline passes): only callers working in parallel get past that.
  explicit FakeApi(int hold_renewals = 0) : hold_renewals_(hold_renewals) {
    http::ServerOptions options;
    options.address = "127.0.0.1";
    options.tls.enabled = false;
    options.io_threads = 2;
    options.worker_threads = 12;
    server_ = std::make_unique<http::Server>(
        options, [this](const http::Request& r) { return Answer(r); }, registry_, RealClock::Get());
    started_ = server_->Start().ok();
  }
  ~FakeApi() {
    {
      std::lock_guard lock(mu_);
      for (const auto& [path, writer] : watches_) writer->Finish();
    }
    server_->Stop();
  }

  bool started() const { return started_; }
  std::string url() const { return StrCat("http://127.0.0.1:", server_->port()); }

  // The pods the list answers, as pages: each page's items, and the continue token that
  // leads to the next (none after the last).
  void SetPages(std::vector<std::string> pages) {
    std::lock_guard lock(mu_);
    pages_ = std::move(pages);
  }
  // Sends one watch event to every open watch of `path`; false when none is open.
  bool SendEvent(const std::string& type, const std::string& object,
                 const std::string& path = "/api/v1/pods") {
    std::lock_guard lock(mu_);
    bool sent = false;
    for (const auto& [watched, writer] : watches_) {
      if (watched != path) continue;
      sent |= writer->Write(StrCat(R"({"type":")", type, R"(","object":)", object, "}\n"));
    }
    return sent;
  }

  std::vector<std::string> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  size_t Count(std::string_view method, std::string_view path) const {
    std::lock_guard lock(mu_);
    return static_cast<size_t>(
        std::count(requests_.begin(), requests_.end(), StrCat(method, " ", path)));
  }
  size_t watches(const std::string& path = "/api/v1/pods") const {
    std::lock_guard lock(mu_);
    return static_cast<size_t>(std::count_if(watches_.begin(), watches_.end(),
                                             [&](const auto& w) { return w.first == path; }));
  }
  // The Content-Type of the last request to `path`.
  std::string content_type(const std::string& path) const {
    std::lock_guard lock(mu_);
    auto it = content_types_.find(path);
    return it == content_types_.end() ? "" : it->second;
  }
  int most_renewals_at_once() const {
    std::lock_guard lock(mu_);
    return most_renewals_;
  }

 private:
  http::Response Answer(const http::Request& r) {
    http::Response response;
    const std::string path(r.path);
    std::unique_lock lock(mu_);
    requests_.push_back(StrCat(r.method, " ", path));
    content_types_[path] = std::string(r.Header("Content-Type").value_or(""));
    if (r.method == "POST" && path == "/api/v1/nodes") {
      response.code = 201;
      response.body = StrCat(R"({"metadata":{"uid":"uid-)", requests_.size(), R"("}})");
    } else if (r.method == "POST" && path == kLeases) {
      response.code = 201;
      response.body = "{}";
    } else if (r.method == "PATCH" && path.starts_with(kLeases)) {
      ++renewing_;
      most_renewals_ = std::max(most_renewals_, renewing_);
      cv_.notify_all();
      cv_.wait_for(lock, kDeadline, [this] { return renewing_ >= hold_renewals_ || released_; });
      released_ = true;
      --renewing_;
      response.body = "{}";
    } else if (r.method == "GET" && r.query.find("watch=true") != std::string_view::npos) {
      response.content_type = "application/json";
      response.stream = [this, path](std::shared_ptr<http::StreamWriter> writer) {
        std::lock_guard lock(mu_);
        watches_.emplace_back(path, std::move(writer));
      };
    } else if (r.method == "GET" && path == "/api/v1/pods") {
      requests_.back() += StrCat("?", r.query);
      // The page the continue token names: "page <n>" percent-encoded.
      size_t page = 0;
      if (const size_t at = r.query.find("continue=page%20"); at != std::string_view::npos) {
        page = std::stoul(std::string(r.query.substr(at + 16)));
      }
      if (page >= pages_.size()) {
        response.code = 410;
        response.body = R"({"kind":"Status","code":410})";
      } else {
        const std::string next =
            page + 1 < pages_.size() ? StrCat(R"(,"continue":"page )", page + 1, R"(")") : "";
        response.body = StrCat(R"({"kind":"PodList","metadata":{"resourceVersion":"7")", next,
                               R"(},"items":[)", pages_[page], "]}");
      }
    } else {
      response.body = "{}";
    }
    return response;
  }

  const int hold_renewals_;
  prometheus::Registry registry_;
  std::unique_ptr<http::Server> server_;
  bool started_ = false;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> requests_;  // "METHOD /path", a list with its query
  std::vector<std::string> pages_;
  std::map<std::string, std::string> content_types_;
  std::vector<std::pair<std::string, std::shared_ptr<http::StreamWriter>>> watches_;  // by path
  int renewing_ = 0;
  int most_renewals_ = 0;
  bool released_ = false;
};

std::unique_ptr<ApiClient> ClientOf(const FakeApi& api, int connections) {
  ApiClientOptions options;
  options.url = api.url();
  options.connections = connections;
  absl::StatusOr<std::unique_ptr<ApiClient>> client = ApiClient::Create(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

TEST(HollowNodesTest, RenewsEveryLeaseEachIntervalWithSeveralCallersAtOnce) {
  FakeApi api(/*hold_renewals=*/4);
  ASSERT_TRUE(api.started());
  std::unique_ptr<ApiClient> client = ClientOf(api, 4);
  ASSERT_NE(client, nullptr);
  std::vector<HollowNode> nodes;
  for (int i = 0; i < 10; ++i) {
    const std::string name = StrCat("node-", i);
    nodes.push_back({name, StrCat(R"({"metadata":{"name":")", name, R"("}})")});
  }
  HollowNodes hollow(*client, nodes, RealClock::Get(), std::chrono::milliseconds(200),
                     /*parallel=*/4);
  ASSERT_TRUE(hollow.Register().ok());
  EXPECT_EQ(api.Count("POST", "/api/v1/nodes"), 10u);
  EXPECT_EQ(api.Count("POST", kLeases), 10u);
  hollow.Start();
  const auto renewed_twice = [&] {
    for (const HollowNode& node : nodes) {
      if (api.Count("PATCH", StrCat(kLeases, "/", node.name)) < 2) return false;
    }
    return true;
  };
  EXPECT_TRUE(PollUntil(renewed_twice, kDeadline));
  hollow.Stop();
  // Four callers were in the server together, and never more than the four asked for.
  EXPECT_EQ(api.most_renewals_at_once(), 4);
  EXPECT_EQ(hollow.failed_renewals(), 0u);
  EXPECT_GE(hollow.renewals(), 20u);
  size_t patched = 0;
  for (const HollowNode& node : nodes)
    patched += api.Count("PATCH", StrCat(kLeases, "/", node.name));
  EXPECT_EQ(hollow.renewals(), patched);
}

// A Node as the watch gives it, with its Ready condition's status.
std::string NodeJson(const std::string& name, const std::string& ready) {
  return StrCat(R"({"metadata":{"name":")", name,
                R"("},"status":{"conditions":[{"type":"MemoryPressure","status":"False"},)",
                R"({"type":"Ready","status":")", ready, R"("}]}})");
}

TEST(HollowNodesTest, ANodeMarkedNotReadyIsReportedReadyAgain) {
  FakeApi api;
  ASSERT_TRUE(api.started());
  std::unique_ptr<ApiClient> client = ClientOf(api, 2);
  ASSERT_NE(client, nullptr);
  HollowNodes hollow(*client, {{"node-0", "{}"}, {"node-1", "{}"}}, RealClock::Get(),
                     std::chrono::minutes(10), /*parallel=*/1);
  ASSERT_TRUE(hollow.Register().ok());
  hollow.Start();
  ASSERT_TRUE(PollUntil([&] { return api.watches("/api/v1/nodes") == 1; }, kDeadline));
  ASSERT_TRUE(api.SendEvent("ADDED", NodeJson("node-0", "True"), "/api/v1/nodes"));
  ASSERT_TRUE(api.SendEvent("MODIFIED", NodeJson("other-node", "Unknown"), "/api/v1/nodes"));
  ASSERT_TRUE(api.SendEvent("MODIFIED", NodeJson("node-1", "Unknown"), "/api/v1/nodes"));
  ASSERT_TRUE(PollUntil([&] { return hollow.readied() == 1; }, kDeadline));
  hollow.Stop();
  EXPECT_EQ(api.Count("PATCH", "/api/v1/nodes/node-1/status"), 1u);
  EXPECT_EQ(api.content_type("/api/v1/nodes/node-1/status"),
            "application/strategic-merge-patch+json");
  // The Node that is Ready and the one that is not a hollow node are left alone.
  EXPECT_EQ(api.Count("PATCH", "/api/v1/nodes/node-0/status"), 0u);
  EXPECT_EQ(api.Count("PATCH", "/api/v1/nodes/other-node/status"), 0u);
}

TEST(HollowNodesTest, ARegistrationThatFailsNamesTheNode) {
  FakeApi api;
  ASSERT_TRUE(api.started());
  std::unique_ptr<ApiClient> client = ClientOf(api, 2);
  ASSERT_NE(client, nullptr);
  ApiClientOptions elsewhere;
  elsewhere.url = "http://127.0.0.1:1";  // nothing listens on port 1
  elsewhere.timeout = std::chrono::seconds(5);
  absl::StatusOr<std::unique_ptr<ApiClient>> nowhere = ApiClient::Create(elsewhere);
  ASSERT_TRUE(nowhere.ok());
  HollowNodes hollow(**nowhere, {{"node-0", "{}"}, {"node-1", "{}"}}, RealClock::Get(),
                     std::chrono::seconds(10), /*parallel=*/2);
  const absl::Status registered = hollow.Register();
  EXPECT_EQ(registered.code(), absl::StatusCode::kUnavailable) << registered;
  EXPECT_NE(registered.message().find("POST /api/v1/nodes"), std::string_view::npos) << registered;
}

// A hollow pod as the API server lists it: bound to `node`, in `phase`, Ready or not, with
// kubestat.dev/cpu when `cpu` is not empty.
std::string PodJson(const std::string& name, const std::string& node, const std::string& phase,
                    bool ready, const std::string& cpu = "") {
  const std::string annotations =
      cpu.empty() ? "" : StrCat(R"(,"annotations":{"kubestat.dev/cpu":")", cpu, R"("})");
  return StrCat(R"({"metadata":{"name":")", name, R"(","namespace":"shop","uid":"uid-)", name,
                R"(","labels":{"app":"web","kubestat.dev/hollow":"true"})", annotations,
                R"(},"spec":{"nodeName":")", node,
                R"(","containers":[{"name":"app"},{"name":"sidecar"}]},)", R"("status":{"phase":")",
                phase, R"(","conditions":[{"type":"Ready","status":")", ready ? "True" : "False",
                R"("}]}})");
}

ClusterModel SmallModel() {
  ClusterModelOptions options;
  options.nodes = 2;
  options.pods_per_node = 3;
  absl::StatusOr<ClusterModel> model = ClusterModel::Create(options);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

// The served pod named `name` in node `node`'s snapshot at `t`, rewritten by `pods`.
std::optional<PodSnapshot> Served(const HollowPods& pods, const ClusterModel& model, int node,
                                  Timestamp t, const std::string& name) {
  NodeSnapshot snapshot = model.Snapshot(node, t);
  pods.Rewrite(node, snapshot);
  for (PodSnapshot& pod : snapshot.pods) {
    if (pod.pod.name == name) return std::move(pod);
  }
  return std::nullopt;
}

TEST(HollowPodsTest, ListsInPagesReportsPendingPodsRunningAndServesTheAnnotatedCpu) {
  FakeApi api;
  ASSERT_TRUE(api.started());
  std::unique_ptr<ApiClient> client = ClientOf(api, 5);
  ASSERT_NE(client, nullptr);
  const ClusterModel model = SmallModel();
  const std::string node0 = model.node(0).name;
  const std::string node1 = model.node(1).name;
  api.SetPages({PodJson("web-a", node0, "Pending", false) + "," +
                    PodJson("web-b", node1, "Pending", false, "1500m"),
                PodJson("web-c", node0, "Running", true)});
  FakeClock clock;
  HollowPods pods(*client, model, clock, /*parallel=*/4);
  pods.Start();
  ASSERT_TRUE(PollUntil([&] { return api.watches() == 1; }, kDeadline));
  // Both pages, the second asked for with the first's continue token, then a watch from the
  // list's resourceVersion.
  const std::vector<std::string> asked = api.requests();
  std::vector<std::string> lists;
  for (const std::string& r : asked) {
    if (r.starts_with("GET /api/v1/pods?")) lists.push_back(r);
  }
  ASSERT_EQ(lists.size(), 2u);
  EXPECT_NE(lists[0].find("limit=500"), std::string::npos) << lists[0];
  EXPECT_EQ(lists[0].find("continue="), std::string::npos) << lists[0];
  EXPECT_NE(lists[1].find("continue=page%201"), std::string::npos) << lists[1];
  EXPECT_EQ(pods.running(), 3u);
  // The two that were not Running are reported so; the Ready one is left as it is.
  const std::string status = "/api/v1/namespaces/shop/pods/";
  ASSERT_TRUE(PollUntil(
      [&] {
        return api.Count("PATCH", status + "web-a/status") == 1 &&
               api.Count("PATCH", status + "web-b/status") == 1 && pods.pending_calls() == 0;
      },
      kDeadline));
  EXPECT_EQ(api.Count("PATCH", status + "web-c/status"), 0u);

  // web-b serves 1.5 cpu, its counter growing at that rate.
  const Timestamp t0 = clock.Now();
  const std::optional<PodSnapshot> first = Served(pods, model, 1, t0, "web-b");
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(first->containers.size(), 2u);
  EXPECT_EQ(first->pod.uid, "uid-web-b");
  EXPECT_EQ(first->pod.containers[0].name, "app");
  EXPECT_EQ(first->containers[0].usage.usage_nano_cores, 1'500'000'000u);
  const std::optional<PodSnapshot> later =
      Served(pods, model, 1, t0 + std::chrono::seconds(10), "web-b");
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(later->containers[0].usage.usage_core_nano_seconds -
                first->containers[0].usage.usage_core_nano_seconds,
            15'000'000'000u);

  // The annotation removed: the slot's rate again, the counter never back.
  ASSERT_TRUE(api.SendEvent("MODIFIED", PodJson("web-b", node1, "Running", true)));
  const Timestamp t1 = t0 + std::chrono::seconds(20);
  ASSERT_TRUE(PollUntil(
      [&] {
        const std::optional<PodSnapshot> now = Served(pods, model, 1, t1, "web-b");
        return now && now->containers[0].usage.usage_nano_cores != 1'500'000'000u;
      },
      kDeadline));
  const std::optional<PodSnapshot> back = Served(pods, model, 1, t1, "web-b");
  ASSERT_TRUE(back.has_value());
  // The rate of one of the node's slots in the model.
  const NodeSnapshot slots = model.Snapshot(1, t1);
  EXPECT_TRUE(std::any_of(slots.pods.begin(), slots.pods.end(), [&](const PodSnapshot& slot) {
    return slot.containers[0].usage.usage_nano_cores == back->containers[0].usage.usage_nano_cores;
  }));
  EXPECT_GE(back->containers[0].usage.usage_core_nano_seconds,
            later->containers[0].usage.usage_core_nano_seconds);

  // A pod deleted from the watch is no longer served; one being deleted is deleted for good.
  ASSERT_TRUE(api.SendEvent("DELETED", PodJson("web-c", node0, "Running", true)));
  ASSERT_TRUE(PollUntil([&] { return pods.running() == 2; }, kDeadline));
  std::string terminating = PodJson("web-a", node0, "Running", true);
  terminating.insert(terminating.find(R"("name":"web-a")"),
                     R"("deletionTimestamp":"2026-12-07T20:00:00Z",)");
  ASSERT_TRUE(api.SendEvent("MODIFIED", terminating));
  ASSERT_TRUE(PollUntil([&] { return api.Count("DELETE", status + "web-a") == 1; }, kDeadline));
  EXPECT_EQ(pods.running(), 1u);
  pods.Stop();
}

}  // namespace
}  // namespace kubestat::sim
