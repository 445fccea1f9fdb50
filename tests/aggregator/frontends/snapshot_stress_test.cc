// Every cached or pre-rendered answer of the aggregator's front ends, asked for over real
// loopback connections while publications replace the snapshot, and with it the per-snapshot
// caches (node items, whole-list gzip forms), as fast as they can: every REST list path of
// metrics/v1alpha1, metrics.k8s.io/v1 and v1beta1, gzip and identity, JSON and protobuf, a
// few single objects, and the gRPC lists. Each answer must decode, and its objects must be
// exactly the objects of one published snapshot.
//
// Snapshot g holds NodesOf(g) nodes and PodsOf(g) pods whose windows all end at
// BaseTime() + g seconds, so an answer names the snapshot it came from, and the set of names
// it must hold follows from that. Run under AddressSanitizer and ThreadSanitizer by
// scripts/test.sh: a reference into a cache freed by a publication, or a race on one, fails
// there even when the bytes happen to read well.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "kubestat/aggregator/frontends/grpc_service.h"
#include "kubestat/aggregator/frontends/rest_server.h"
#include "kubestat/aggregator/query/snapshot_source.h"
#include "kubestat/aggregator/query/watch_hub.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/gzip.h"
#include "kubestat/core/time.h"
#include "kubestat/http/client.h"
#include "kubestat/testing/aggregator/fake_metrics_source.h"
#include "kubestat/testing/aggregator/rest_test_access.h"
#include "kubestat/testing/metrics_encodings.h"
#include "kubestat/v1/aggregator.grpc.pb.h"

namespace kubestat::aggregator {
namespace {

using testing::BaseTime;
using testing::FakeMetricsSource;
using testing::MakeNode;
using testing::MakePod;

// Client threads and the requests each sends. Bounded by count: the publisher publishes for
// as long as the clients ask.
constexpr int kHttpClients = 4;
constexpr int kRequestsPerHttpClient = 300;
constexpr int kGrpcRequests = 300;
constexpr int kNamespaces = 3;

size_t NodesOf(int64_t g) { return 6 + static_cast<size_t>(g % 3); }
size_t PodsOf(int64_t g) { return 90 + static_cast<size_t>(g % 7); }

std::string NodeName(size_t i) { return absl::StrCat("node-", i / 10, i % 10); }
std::string PodName(size_t i) { return absl::StrCat("pod-", i / 100, i / 10 % 10, i % 10); }
std::string PodNamespace(size_t i) { return absl::StrCat("ns-", i % kNamespaces); }

Timestamp EndOf(int64_t g) { return BaseTime() + std::chrono::seconds(g); }

// Snapshot g's objects, in the fake source's form.
void SetGeneration(FakeMetricsSource& source, int64_t g) {
  std::vector<metrics_api::NodeMetrics> nodes;
  for (size_t i = 0; i < NodesOf(g); ++i) {
    nodes.push_back(MakeNode(NodeName(i), {{"half", std::to_string(i % 2)}}, EndOf(g),
                             1000000 + static_cast<uint64_t>(g) * 10 + i));
  }
  std::vector<metrics_api::PodMetrics> pods;
  for (size_t i = 0; i < PodsOf(g); ++i) {
    pods.push_back(MakePod(PodNamespace(i), PodName(i), NodeName(i % NodesOf(g)),
                           {{"half", std::to_string(i % 2)}}, EndOf(g), 5000 + i,
                           1 + static_cast<int>(i % 2)));
  }
  source.Set(std::move(nodes), std::move(pods));
}

// What an answer must hold: nodes or pods, of one namespace or all, those labelled half=0
// only or all, or one object by name.
struct Selection {
  bool pods = false;
  std::string namespace_name;  // "": every namespace
  bool half_zero = false;
  std::string name;  // one object
};

// The "namespace/name" (pods) or names (nodes) snapshot g shows for `selection`, sorted.
std::vector<std::string> Expected(const Selection& selection, int64_t g) {
  std::vector<std::string> names;
  const size_t count = selection.pods ? PodsOf(g) : NodesOf(g);
  for (size_t i = 0; i < count; ++i) {
    if (selection.half_zero && i % 2 != 0) continue;
    std::string name = selection.pods ? PodNamespace(i) + "/" + PodName(i) : NodeName(i);
    if (selection.pods && !selection.namespace_name.empty() &&
        PodNamespace(i) != selection.namespace_name) {
      continue;
    }
    if (!selection.name.empty() && name != selection.name) continue;
    names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The objects one answer shows: "namespace/name" or name, and the snapshot its windows end in.
struct ShownItem {
  std::string key;
  int64_t generation = 0;
};

int64_t GenerationOfSeconds(int64_t unix_seconds) {
  return unix_seconds -
         std::chrono::duration_cast<std::chrono::seconds>(BaseTime().time_since_epoch()).count();
}
int64_t GenerationOf(Timestamp endtime) {
  return GenerationOfSeconds(
      std::chrono::duration_cast<std::chrono::seconds>(endtime.time_since_epoch()).count());
}

// A metrics/v1alpha1 answer (a list or one object): each object's key and the end of its
// newest window ("machine" of a node, "pod" of a pod, both keyed "10s").
absl::StatusOr<std::vector<ShownItem>> ReadV1alpha1(std::string_view body, bool pods) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(body.data(), body.size()).get(root) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("the body is not JSON");
  }
  std::vector<simdjson::dom::element> objects;
  simdjson::dom::array items;
  if (root["items"].get(items) == simdjson::SUCCESS) {
    for (simdjson::dom::element item : items) objects.push_back(item);
  } else {
    objects.push_back(root);
  }
  std::vector<ShownItem> shown;
  for (simdjson::dom::element object : objects) {
    std::string_view name;
    std::string_view namespace_name;
    std::string_view endtime;
    if (object["metadata"]["name"].get(name) != simdjson::SUCCESS ||
        (pods && object["metadata"]["namespace"].get(namespace_name) != simdjson::SUCCESS) ||
        object[pods ? "pod" : "machine"]["10s"]["endtime"].get(endtime) != simdjson::SUCCESS) {
      return absl::InvalidArgumentError(
          absl::StrCat("an object without name or endtime: ", simdjson::to_string(object)));
    }
    absl::StatusOr<Timestamp> end = ParseRfc3339(endtime);
    if (!end.ok()) return end.status();
    std::string key(name);
    if (pods) key = std::string(namespace_name) + "/" + key;
    shown.push_back({std::move(key), GenerationOf(*end)});
  }
  return shown;
}

// A metrics.k8s.io answer in either encoding.
absl::StatusOr<std::vector<ShownItem>> ReadMetricsK8sIo(std::string_view body, bool protobuf,
                                                        bool pods) {
  absl::StatusOr<kubestat::testing::Shown> answer = protobuf
                                                        ? kubestat::testing::ShownFromProtobuf(body)
                                                        : kubestat::testing::ShownFromJson(body);
  if (!answer.ok()) return answer.status();
  std::vector<ShownItem> shown;
  for (const kubestat::testing::ShownObject& object : answer->items) {
    shown.push_back({pods ? object.namespace_name + "/" + object.name : object.name,
                     GenerationOfSeconds(object.timestamp_seconds)});
  }
  return shown;
}

// Empty when `shown` is exactly what one snapshot shows for `selection`, else what is wrong.
std::string CheckOneSnapshot(const Selection& selection, std::vector<ShownItem> shown,
                             std::set<int64_t>* generations) {
  if (shown.empty()) return "no object";
  const int64_t g = shown.front().generation;
  std::vector<std::string> keys;
  for (const ShownItem& item : shown) {
    if (item.generation != g) {
      return absl::StrCat("objects of snapshots ", g, " and ", item.generation, " in one answer");
    }
    keys.push_back(item.key);
  }
  if (g < 1) return absl::StrCat("snapshot ", g, " was never published");
  std::sort(keys.begin(), keys.end());
  const std::vector<std::string> expected = Expected(selection, g);
  if (keys != expected) {
    return absl::StrCat(keys.size(), " objects where snapshot ", g, " has ", expected.size(),
                        " for this selection");
  }
  generations->insert(g);
  return "";
}

// One REST request of the matrix.
struct RestCase {
  std::string path;
  Selection selection;
  bool v1alpha1 = false;
  bool protobuf = false;
  bool gzip = false;
};

std::vector<RestCase> RestCases() {
  std::vector<RestCase> cases;
  const std::vector<std::pair<std::string, Selection>> routes = {
      {"/nodes", {false, "", false, ""}},
      {"/nodes?labelSelector=half%3D0", {false, "", true, ""}},
      {"/nodes/" + NodeName(1), {false, "", false, NodeName(1)}},
      {"/pods", {true, "", false, ""}},
      {"/pods?labelSelector=half%3D0", {true, "", true, ""}},
      {"/namespaces/ns-1/pods", {true, "ns-1", false, ""}},
      {"/namespaces/ns-2/pods/" + PodName(5), {true, "", false, "ns-2/" + PodName(5)}},
  };
  for (const std::string& group :
       {std::string("/apis/metrics/v1alpha1"), std::string("/apis/metrics.k8s.io/v1"),
        std::string("/apis/metrics.k8s.io/v1beta1")}) {
    const bool v1alpha1 = group == "/apis/metrics/v1alpha1";
    for (const auto& [route, selection] : routes) {
      for (bool gzip : {false, true}) {
        for (bool protobuf : {false, true}) {
          if (protobuf && v1alpha1) continue;
          cases.push_back({group + route, selection, v1alpha1, protobuf, gzip});
        }
      }
    }
  }
  return cases;
}

class SnapshotStressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetGeneration(live_, 1);
    snapshot_.Refresh();
    published_.store(1);

    RestServerOptions options = rest_testing::PlainOptions();
    options.secure.compression.min_bytes = 64;  // every list and object has a gzip form
    rest_ = std::make_unique<RestServer>(options, snapshot_, registry_, RealClock::Get(),
                                         LivenessCheck{}, access_.Control());
    ASSERT_TRUE(rest_->Start().ok());

    grpc_service_ = std::make_unique<AggregatorService>(&snapshot_, &hub_, &registry_);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(grpc_service_.get());
    grpc_server_ = builder.BuildAndStart();
    ASSERT_NE(grpc_server_, nullptr);
    grpc_target_ = "127.0.0.1:" + std::to_string(port);
  }

  void TearDown() override {
    if (grpc_service_) grpc_service_->Shutdown();
    if (grpc_server_) grpc_server_->Shutdown();
    hub_.Shutdown();
    if (rest_) rest_->Stop();
  }

  // Publishes snapshot after snapshot, each followed by the preparation the aggregator makes
  // after a publication, until `stop`.
  void Publish(const std::atomic<bool>& stop) {
    int64_t g = published_.load();
    while (!stop.load()) {
      ++g;
      SetGeneration(live_, g);
      snapshot_.Refresh();
      rest_->Prepare();
      published_.store(g);
    }
  }

  void Fail(std::string message) {
    std::lock_guard lock(mu_);
    ++failures_;
    if (messages_.size() < 10) messages_.push_back(std::move(message));
  }
  void Seen(const std::set<int64_t>& generations) {
    std::lock_guard lock(mu_);
    generations_.insert(generations.begin(), generations.end());
  }

  void AskRest(int client_index) {
    http::ClientOptions options;
    options.base_url = rest_->BaseUrl();
    absl::StatusOr<std::unique_ptr<http::Client>> client =
        http::Client::Create(options, RealClock::Get());
    if (!client.ok()) return Fail(client.status().ToString());
    const std::vector<RestCase> cases = RestCases();
    std::set<int64_t> generations;
    for (int i = 0; i < kRequestsPerHttpClient; ++i) {
      const RestCase& c =
          cases[(static_cast<size_t>(i) * kHttpClients + client_index) % cases.size()];
      http::HeaderList headers;
      if (c.gzip) headers.emplace_back("Accept-Encoding", "gzip");
      if (c.protobuf) headers.emplace_back("Accept", "application/vnd.kubernetes.protobuf, */*");
      absl::StatusOr<http::ClientResponse> response = (*client)->Get(c.path, headers);
      const std::string what =
          absl::StrCat(c.path, c.gzip ? " gzip" : "", c.protobuf ? " protobuf" : "", ": ");
      if (!response.ok()) {
        Fail(what + response.status().ToString());
        continue;
      }
      if (response->code != 200) {
        Fail(absl::StrCat(what, "code ", response->code, " ", response->body.substr(0, 200)));
        continue;
      }
      std::string body = std::move(response->body);
      const std::string encoding = response->Header("Content-Encoding");
      if (encoding == "gzip") {
        absl::StatusOr<std::string> plain = GzipDecompress(body, size_t{64} << 20);
        if (!plain.ok()) {
          Fail(what + "the gzip body does not decompress: " + plain.status().ToString());
          continue;
        }
        body = *std::move(plain);
      } else if (c.gzip || !encoding.empty()) {
        Fail(what + "Content-Encoding \"" + encoding + "\"");
        continue;
      }
      const bool protobuf_answer =
          response->content_type.starts_with("application/vnd.kubernetes.protobuf");
      if (protobuf_answer != c.protobuf) {
        Fail(what + "Content-Type " + response->content_type);
        continue;
      }
      absl::StatusOr<std::vector<ShownItem>> shown =
          c.v1alpha1 ? ReadV1alpha1(body, c.selection.pods)
                     : ReadMetricsK8sIo(body, c.protobuf, c.selection.pods);
      if (!shown.ok()) {
        Fail(what + shown.status().ToString());
        continue;
      }
      if (std::string wrong = CheckOneSnapshot(c.selection, *std::move(shown), &generations);
          !wrong.empty()) {
        Fail(what + wrong);
      }
    }
    Seen(generations);
  }

  void AskGrpc() {
    std::unique_ptr<v1::Aggregator::Stub> stub = v1::Aggregator::NewStub(
        grpc::CreateChannel(grpc_target_, grpc::InsecureChannelCredentials()));
    std::set<int64_t> generations;
    for (int i = 0; i < kGrpcRequests; ++i) {
      grpc::ClientContext context;
      std::vector<ShownItem> shown;
      Selection selection;
      grpc::Status status;
      if (i % 3 == 0) {
        v1::ListNodesRequest request;
        v1::ListNodesResponse response;
        status = stub->ListNodes(&context, request, &response);
        for (const v1::NodeMetrics& node : response.items()) {
          shown.push_back(
              {node.name(), node.machine().empty()
                                ? -1
                                : GenerationOfSeconds(node.machine(0).endtime().seconds())});
        }
      } else {
        v1::ListPodsRequest request;
        if (i % 3 == 2) {
          request.set_namespace_("ns-1");
          selection.namespace_name = "ns-1";
        }
        selection.pods = true;
        v1::ListPodsResponse response;
        status = stub->ListPods(&context, request, &response);
        for (const v1::PodMetrics& pod : response.items()) {
          shown.push_back({pod.namespace_() + "/" + pod.name(),
                           pod.windows().empty()
                               ? -1
                               : GenerationOfSeconds(pod.windows(0).endtime().seconds())});
        }
      }
      const std::string what = absl::StrCat("gRPC ", selection.pods ? "ListPods" : "ListNodes", " ",
                                            selection.namespace_name, ": ");
      if (!status.ok()) {
        Fail(what + status.error_message());
        continue;
      }
      if (std::string wrong = CheckOneSnapshot(selection, std::move(shown), &generations);
          !wrong.empty()) {
        Fail(what + wrong);
      }
    }
    Seen(generations);
  }

  FakeMetricsSource live_;
  SnapshotSource snapshot_{&live_};
  WatchHub hub_{&snapshot_};
  prometheus::Registry registry_;
  rest_testing::AllowEveryone access_{RealClock::Get()};
  std::unique_ptr<RestServer> rest_;
  std::unique_ptr<AggregatorService> grpc_service_;
  std::unique_ptr<grpc::Server> grpc_server_;
  std::string grpc_target_;
  std::atomic<int64_t> published_{0};

  std::mutex mu_;
  int failures_ = 0;
  std::vector<std::string> messages_;
  std::set<int64_t> generations_;
};

TEST_F(SnapshotStressTest, EveryAnswerDecodesAndShowsOneSnapshotWhilePublicationsReplaceIt) {
  std::atomic<bool> stop{false};
  std::thread publisher([&] { Publish(stop); });
  std::vector<std::thread> clients;
  for (int i = 0; i < kHttpClients; ++i) clients.emplace_back([this, i] { AskRest(i); });
  clients.emplace_back([this] { AskGrpc(); });
  for (std::thread& client : clients) client.join();
  stop.store(true);
  publisher.join();

  std::lock_guard lock(mu_);
  std::string listed;
  for (const std::string& message : messages_) listed += "\n  " + message;
  EXPECT_EQ(failures_, 0) << "answers that do not show one snapshot:" << listed;
  // The answers came from several snapshots: publications raced the requests.
  EXPECT_GE(generations_.size(), 3u) << "the publisher published " << published_.load();
}

}  // namespace
}  // namespace kubestat::aggregator
