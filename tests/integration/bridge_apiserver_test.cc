// The secondary API server end to end, as real processes on loopback: kubestat-sim (the fake
// kube-apiserver proxies metrics.k8s.io to kubestat-apiserver with its front-proxy
// certificate) → kubestat-aggregator → kubestat-bridge (gRPC Watch, bulk writes) →
// kubestat-apiserver, read by kubectl through the sim's front door and directly by curl.
// Checks that the apiserver holds the aggregator's objects (kubectl top reading them in
// protobuf), that a reader allowed only pods is refused nodes, that a token without the push
// permission is refused and counted, that a pod deleted in the cluster leaves the apiserver within
// two scrape rounds, and that a restarted bridge and a restarted apiserver converge again. Every
// test runs against both of the apiserver's stores: memory, and a single-member etcd (skipped
// without etcd).

// cpprestsdk's U() macro collides with GoogleTest's template parameters.
#define _TURN_OFF_PLATFORM_STRING

#include <cpprest/json.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "harness.h"
#include "kubestat/testing/etcd_process.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat {
namespace {

namespace fs = std::filesystem;
using testing::EtcdCluster;
using testing::FindOnPath;
using testing::FreeLoopbackPort;
using testing::HttpsGetReply;
using testing::PollUntil;
using testing::Process;
using testing::ReadAll;
using testing::RunResult;
using testing::TempDir;
using testing::WaitForLog;

constexpr const char* kUsers = testing::kSimUsersYaml;

// The bridge reads the aggregator and writes the apiserver; pod-reader reads pods only;
// the stranger may read but not write.
constexpr char kTokens[] =
    "bridge-token,kubestat-bridge,10\npod-reader-token,pod-reader,11\nstranger-token,stranger,12\n";
constexpr char kAggregatorRules[] = R"(rules:
- users: [kubestat-bridge]
  verbs: [list, watch]
  apiGroups: [metrics.k8s.io, metrics]
  resources: [nodes, pods]
- users: [stranger]
  verbs: [get]
  nonResourceURLs: [/metrics]
)";
constexpr char kApiserverRules[] = R"(rules:
- users: [kubestat-bridge]
  verbs: [get, list, create, update, delete]
  apiGroups: [metrics]
  resources: [nodes, pods, writes]
- users: [pod-reader]
  verbs: [get, list, watch]
  apiGroups: [metrics, metrics.k8s.io]
  resources: [pods]
- users: [stranger]
  verbs: [get, list]
  apiGroups: [metrics]
  resources: [nodes, pods]
- users: [kubestat-bridge, stranger]
  verbs: [get]
  nonResourceURLs: [/metrics]
)";

// The names in a list document ("name":"..." right after "metadata":{).
std::set<std::string> Names(const std::string& list) {
  std::set<std::string> names;
  const std::string key = R"("metadata":{"name":")";
  for (size_t at = list.find(key); at != std::string::npos; at = list.find(key, at + 1)) {
    const size_t start = at + key.size();
    names.insert(list.substr(start, list.find('"', start) - start));
  }
  return names;
}

constexpr char kPodsPath[] = "/apis/metrics.k8s.io/v1beta1/pods";

// The namespace and name of a list document's first item; std::nullopt for no items.
std::optional<std::pair<std::string, std::string>> FirstItem(const std::string& list) {
  std::error_code error;
  const web::json::value parsed = web::json::value::parse(list, error);
  if (error || !parsed.has_array_field("items") || parsed.at("items").as_array().size() == 0) {
    return std::nullopt;
  }
  const web::json::value& metadata = parsed.at("items").at(0).at("metadata");
  return std::make_pair(metadata.at("namespace").as_string(), metadata.at("name").as_string());
}

// Where kubestat-apiserver keeps its objects.
enum class Store { kMemory, kEtcd };

class BridgeApiserverTest : public ::testing::TestWithParam<Store> {
 protected:
  void SetUp() override {
    std::optional<std::string> kubectl = FindOnPath("kubectl");
    if (!kubectl) GTEST_SKIP() << "kubectl is not installed; skipping";
    kubectl_ = *kubectl;
    if (GetParam() == Store::kEtcd) {
      if (testing::EtcdBinary().empty()) GTEST_SKIP() << testing::kNoEtcdMessage;
      // The bridge writes up to 500 objects in one transaction; EtcdCluster allows 10000.
      etcd_ = std::make_unique<EtcdCluster>(1);
      ASSERT_TRUE(etcd_->ok());
    }
    const fs::path root = dir_.path();
    aggregator_port_ = FreeLoopbackPort();
    grpc_port_ = FreeLoopbackPort();
    apiserver_port_ = FreeLoopbackPort();
    bridge_port_ = FreeLoopbackPort();
    std::ofstream(root / "users.yaml") << kUsers;
    std::ofstream(root / "tokens.csv") << kTokens;
    std::ofstream(root / "aggregator-rules.yaml") << kAggregatorRules;
    std::ofstream(root / "apiserver-rules.yaml") << kApiserverRules;
    std::ofstream(root / "bridge.token") << "bridge-token\n";
    fs::create_directories(root / "kubeconfigs");
    sim_ = std::make_unique<Process>(
        KUBESTAT_SIM_BINARY,
        std::vector<std::string>{
            // The tests compare pod counts: no pod is replaced while they run.
            "--nodes=3", "--pods-per-node=5", "--seed=9", "--pod-lifetime=0",
            "--kubelet-address-mode=ports", "--kubelet-port=0",
            "--users-file=" + (root / "users.yaml").string(), "--apiserver-tls",
            "--tls-dir=" + (root / "sim-tls").string(),
            "--kubeconfig-dir=" + (root / "kubeconfigs").string(),
            "--metrics-backend=https://127.0.0.1:" + std::to_string(apiserver_port_),
            "--metrics-backend-ca-file=" + (root / "apiserver-certs" / "apiserver.crt").string(),
            "--no-authorize-proxied-requests"},
        root / "sim.log");
    ASSERT_TRUE(WaitForLog(root / "sim.log", "READY", std::chrono::seconds(60)))
        << ReadAll(root / "sim.log");
    aggregator_ = std::make_unique<Process>(
        KUBESTAT_AGGREGATOR_BINARY,
        std::vector<std::string>{
            "--kubeconfig=" + (root / "kubeconfigs" / "kubestat-aggregator.kubeconfig").string(),
            "--kubelet-scheme=http", "--kubelet-preferred-address-types=InternalIP",
            "--kubelet-use-node-status-port", "--metric-resolution=2s", "--kubelet-timeout=1s",
            "--listen-address=127.0.0.1", "--secure-port=" + std::to_string(aggregator_port_),
            "--cert-dir=" + (root / "aggregator-certs").string(),
            "--token-auth-file=" + (root / "tokens.csv").string(),
            "--authorization-rules-file=" + (root / "aggregator-rules.yaml").string(),
            "--grpc-address=127.0.0.1", "--grpc-port=" + std::to_string(grpc_port_),
            "--storage-dir=" + (root / "store").string()},
        root / "aggregator.log");
    StartApiserver();
    StartBridge();
    // Ready once the aggregator serves every pod, the apiserver holds them all, and kubectl,
    // through the sim's front door, sees every node with figures (a node without them is
    // listed as <unknown>).
    ASSERT_TRUE(PollUntil(
        [&] {
          const std::set<std::string> pods = AggregatorPods();
          if (pods.size() < 15 || Names(Apiserver(kPodsPath)) != pods) return false;
          RunResult top = Kubectl({"top", "node", "--no-headers"});
          return top.exit_code == 0 && Lines(top.output) == 3 &&
                 top.output.find("unknown") == std::string::npos;
        },
        std::chrono::seconds(90)))
        << Kubectl({"top", "node"}).output << "\n"
        << Logs();
  }

  void StartApiserver() {
    const fs::path root = dir_.path();
    const std::string kubeconfig =
        (root / "kubeconfigs" / "kubestat-aggregator.kubeconfig").string();
    std::vector<std::string> args = {
        "--listen-address=127.0.0.1", "--secure-port=" + std::to_string(apiserver_port_),
        "--cert-dir=" + (root / "apiserver-certs").string(),
        "--token-auth-file=" + (root / "tokens.csv").string(),
        "--authorization-rules-file=" + (root / "apiserver-rules.yaml").string(),
        "--requestheader-client-ca-file=" + (root / "sim-tls" / "front-proxy-ca.crt").string(),
        "--requestheader-allowed-names=front-proxy-client",
        // Users of the cluster (kubectl's) are the cluster's to review.
        "--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig};
    if (etcd_) {
      args.push_back("--etcd-servers=" + etcd_->ClientUrl(0));
      args.push_back("--etcd-prefix=/kubestat-bridge-it/");
    }
    apiserver_ = std::make_unique<Process>(KUBESTAT_APISERVER_BINARY, args, root / "apiserver.log");
    // The bridge reads the apiserver's self-signed certificate as its CA: wait for it.
    ASSERT_TRUE(WaitForLog(root / "apiserver.log", "serving on", std::chrono::seconds(30)))
        << ReadAll(root / "apiserver.log");
  }

  void StartBridge() {
    const fs::path root = dir_.path();
    bridge_ = std::make_unique<Process>(
        KUBESTAT_BRIDGE_BINARY,
        std::vector<std::string>{
            "--aggregator-address=127.0.0.1:" + std::to_string(grpc_port_),
            "--aggregator-token-file=" + (root / "bridge.token").string(),
            "--apiserver-url=https://127.0.0.1:" + std::to_string(apiserver_port_),
            "--apiserver-ca-file=" + (root / "apiserver-certs" / "apiserver.crt").string(),
            "--apiserver-token-file=" + (root / "bridge.token").string(),
            "--listen-address=127.0.0.1", "--secure-port=" + std::to_string(bridge_port_),
            "--cert-dir=" + (root / "bridge-certs").string(),
            "--token-auth-file=" + (root / "tokens.csv").string(),
            "--authorization-rules-file=" + (root / "apiserver-rules.yaml").string(),
            "--retry-base=100ms", "--retry-max=1s"},
        root / "bridge.log");
  }

  RunResult Kubectl(std::vector<std::string> args) {
    args.insert(args.begin(),
                "--kubeconfig=" + (dir_.path() / "kubeconfigs" / "admin.kubeconfig").string());
    args.push_back("--request-timeout=20s");
    return testing::Run(kubectl_, args, dir_.path() / "kubectl.log", std::chrono::seconds(60));
  }

  // A GET of the apiserver with `token`; the body of a 200, else "".
  std::string Apiserver(const std::string& path, const std::string& token = "pod-reader-token") {
    std::optional<testing::HttpReply> reply = HttpsGetReply(apiserver_port_, path, token);
    return reply && reply->code == 200 ? reply->body : "";
  }

  // The names of the pods the aggregator serves; empty when it does not answer.
  std::set<std::string> AggregatorPods() {
    std::optional<testing::HttpReply> pods =
        HttpsGetReply(aggregator_port_, kPodsPath, "bridge-token");
    return pods && pods->code == 200 ? Names(pods->body) : std::set<std::string>();
  }

  // Whether the apiserver holds the pods the aggregator serves, no more and no fewer.
  bool ApiserverHoldsTheAggregatorsPods() {
    const std::set<std::string> aggregated = AggregatorPods();
    return !aggregated.empty() && Names(Apiserver(kPodsPath)) == aggregated;
  }

  // The aggregator's completed scrape rounds (kubestat_scrape_rounds_total), -1 unread.
  double ScrapeRounds() {
    std::optional<testing::HttpReply> metrics =
        HttpsGetReply(aggregator_port_, "/metrics", "stranger-token");
    if (!metrics || metrics->code != 200) return -1;
    return testing::MetricValue(metrics->body, "kubestat_scrape_rounds_total");
  }

  // The names of the pods the simulated kube-apiserver lists in `ns`.
  std::set<std::string> ClusterPods(const std::string& ns) {
    RunResult list = Kubectl({"get", "--raw", "/api/v1/namespaces/" + ns + "/pods"});
    EXPECT_EQ(list.exit_code, 0) << list.output;
    return Names(list.output);
  }

  std::string Logs() {
    return "aggregator log:\n" + ReadAll(dir_.path() / "aggregator.log") + "\nbridge log:\n" +
           ReadAll(dir_.path() / "bridge.log") + "\napiserver log:\n" +
           ReadAll(dir_.path() / "apiserver.log");
  }

  // The apiserver's denied authorization decisions, from every source.
  double Denied() {
    std::optional<testing::HttpReply> metrics =
        HttpsGetReply(apiserver_port_, "/metrics", "stranger-token");
    if (!metrics || metrics->code != 200) return -1;
    double total = 0;
    for (const char* source :
         {"always_allow_path", "rules_file", "subject_access_review", "default"}) {
      const double v = testing::MetricValue(
          metrics->body,
          std::string(R"(kubestat_authorization_decisions_total{decision="deny",source=")") +
              source + "\"}");
      if (v > 0) total += v;
    }
    return total;
  }

  static int Lines(const std::string& text) {
    int lines = 0;
    for (char c : text) lines += c == '\n';
    return lines;
  }

  TempDir dir_{"kubestat-bridge"};
  std::string kubectl_;
  int aggregator_port_ = 0;
  int grpc_port_ = 0;
  int apiserver_port_ = 0;
  int bridge_port_ = 0;
  std::unique_ptr<EtcdCluster> etcd_;  // with Store::kEtcd; outlives the apiserver
  std::unique_ptr<Process> sim_;
  std::unique_ptr<Process> aggregator_;
  std::unique_ptr<Process> apiserver_;
  std::unique_ptr<Process> bridge_;
};

TEST_P(BridgeApiserverTest, TheApiserverHoldsTheAggregatorsObjectsForKubectlAndCurl) {
  // The same pods as the aggregator serves (the bridge pushes every round's changes).
  const std::set<std::string> pods = AggregatorPods();
  ASSERT_GE(pods.size(), 15u);  // 3 nodes x 5 workload pods, and the nodes' system pods
  EXPECT_TRUE(
      PollUntil([&] { return Names(Apiserver(kPodsPath)) == pods; }, std::chrono::seconds(20)));
  RunResult top = Kubectl({"top", "pod", "-A", "--no-headers"});
  EXPECT_EQ(top.exit_code, 0) << top.output;
  EXPECT_EQ(static_cast<size_t>(Lines(top.output)), pods.size()) << top.output;
  // kubectl asked for protobuf (1.22 and later; JSON before), and what it printed was decoded
  // from the apiserver's answer in that encoding.
  const std::string wanted = testing::KubectlTopAsksProtobuf(kubectl_, dir_.path())
                                 ? "application/vnd.kubernetes.protobuf"
                                 : "application/json";
  std::optional<testing::HttpReply> metrics =
      HttpsGetReply(apiserver_port_, "/metrics", "stranger-token");
  ASSERT_TRUE(metrics && metrics->code == 200);
  EXPECT_GE(testing::MetricValue(metrics->body,
                                 R"(kubestat_http_responses_total{content_type=")" + wanted +
                                     R"(",route="/apis/metrics.k8s.io/v1beta1/pods",)"
                                     R"(server="apiserver"})"),
            1)
      << metrics->body.substr(0, 4000);
  // kubectl get --raw through the front door, every group-version.
  for (const char* path : {"/apis/metrics.k8s.io/v1/nodes", "/apis/metrics.k8s.io/v1beta1/pods",
                           "/apis/metrics/v1alpha1/nodes?limit=1"}) {
    RunResult raw = Kubectl({"get", "--raw", path});
    EXPECT_EQ(raw.exit_code, 0) << path << ": " << raw.output;
    EXPECT_NE(raw.output.find("\"resourceVersion\""), std::string::npos) << raw.output;
  }
}

TEST_P(BridgeApiserverTest, ReadersAndWritersAreAuthorizedApart) {
  std::optional<testing::HttpReply> nodes =
      HttpsGetReply(apiserver_port_, "/apis/metrics.k8s.io/v1beta1/nodes", "pod-reader-token");
  ASSERT_TRUE(nodes);
  EXPECT_EQ(nodes->code, 403) << nodes->body;
  EXPECT_FALSE(Apiserver("/apis/metrics.k8s.io/v1beta1/pods").empty());
  // A token without the push permission: the write is refused and counted.
  const double denied_before = Denied();
  RunResult refused = testing::Run(
      "/usr/bin/curl",
      {"-sk", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H",
       "Authorization: Bearer stranger-token", "-H", "Content-Type: application/json", "--data",
       R"({"kind":"WriteBatch","apiVersion":"metrics/v1alpha1","items":[]})",
       "https://127.0.0.1:" + std::to_string(apiserver_port_) + "/apis/metrics/v1alpha1/writes"},
      dir_.path() / "curl.log", std::chrono::seconds(30));
  EXPECT_EQ(refused.output, "403");
  EXPECT_EQ(Denied(), denied_before + 1);
  std::optional<testing::HttpReply> metrics =
      HttpsGetReply(apiserver_port_, "/metrics", "stranger-token");
  ASSERT_TRUE(metrics && metrics->code == 200);
  EXPECT_NE(metrics->body.find("kubestat_apiserver_writes_total{code=\"200\",operation=\"batch\"}"),
            std::string::npos)
      << metrics->body.substr(0, 2000);
}

// The official Kubernetes Python client (python3-kubernetes) watching the apiserver: the
// namespace's pods ADDED first, a pod deleted meanwhile DELETED, the changes in
// resourceVersion order; then a watch resumed from the last version seen gets only later
// events (no second list of ADDED).
constexpr char kPythonWatch[] = R"(import json, sys
from kubernetes import client, config, watch

reader = client.CustomObjectsApi(config.new_client_from_config(config_file=sys.argv[1]))
writer = client.CustomObjectsApi(config.new_client_from_config(config_file=sys.argv[2]))
ns = sys.argv[3]
out = {"first": [], "second": [], "victim": None}
for ev in watch.Watch().stream(reader.list_namespaced_custom_object, "metrics", "v1alpha1", ns,
                               "pods", timeout_seconds=4):
    md = ev["object"]["metadata"]
    out["first"].append([ev["type"], md["name"], int(md["resourceVersion"])])
    if out["victim"] is None:
        out["victim"] = md["name"]
        writer.delete_namespaced_custom_object("metrics", "v1alpha1", ns, "pods", md["name"])
last = out["first"][-1][2]
for ev in watch.Watch().stream(reader.list_namespaced_custom_object, "metrics", "v1alpha1", ns,
                               "pods", resource_version=str(last), timeout_seconds=3):
    md = ev["object"]["metadata"]
    out["second"].append([ev["type"], md["name"], int(md["resourceVersion"])])
print(json.dumps(out))
)";

TEST_P(BridgeApiserverTest, TheOfficialPythonClientWatchesInOrderAndResumes) {
  const fs::path python = "/usr/bin/python3";
  RunResult probe = testing::Run(python.string(), {"-c", "import kubernetes"},
                                 dir_.path() / "python-probe.log", std::chrono::seconds(60));
  if (probe.exit_code != 0) GTEST_SKIP() << "python3-kubernetes is not installed; skipping";
  const fs::path root = dir_.path();
  const auto kubeconfig = [&](const std::string& user, const std::string& token) {
    const fs::path path = root / (user + "-apiserver.kubeconfig");
    std::ofstream(path) << "apiVersion: v1\nkind: Config\nclusters:\n- name: apiserver\n"
                        << "  cluster:\n    server: https://127.0.0.1:" << apiserver_port_
                        << "\n    certificate-authority: "
                        << (root / "apiserver-certs" / "apiserver.crt").string()
                        << "\nusers:\n- name: " << user << "\n  user:\n    token: " << token
                        << "\ncontexts:\n- name: c\n  context:\n    cluster: apiserver\n"
                        << "    user: " << user << "\ncurrent-context: c\n";
    return path.string();
  };
  const std::string reader = kubeconfig("pod-reader", "pod-reader-token");
  const std::string writer = kubeconfig("kubestat-bridge", "bridge-token");
  // The namespace of the first pod the apiserver holds.
  const std::optional<std::pair<std::string, std::string>> held = FirstItem(Apiserver(kPodsPath));
  ASSERT_TRUE(held);
  const std::string& ns = held->first;
  std::ofstream(root / "watch.py") << kPythonWatch;
  RunResult run = testing::Run(python.string(), {(root / "watch.py").string(), reader, writer, ns},
                               root / "python.log", std::chrono::seconds(120));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const web::json::value out = web::json::value::parse(run.output.substr(run.output.find('{')));
  const std::string victim = out.at("victim").as_string();
  const web::json::array& first = out.at("first").as_array();
  ASSERT_GT(first.size(), 0u);
  EXPECT_EQ(first.at(0).at(0).as_string(), "ADDED");
  // The initial ADDED events carry each object's own version (objects in name order, as
  // kube-apiserver sends them); from the first change on, versions only grow.
  bool deleted = false;
  bool initial = true;
  int previous = 0;
  for (const web::json::value& ev : first) {
    const int rv = ev.at(2).as_integer();
    initial = initial && ev.at(0).as_string() == "ADDED";
    if (!initial) {
      EXPECT_GE(rv, previous) << run.output;
      previous = rv;
    }
    deleted = deleted || (ev.at(0).as_string() == "DELETED" && ev.at(1).as_string() == victim);
  }
  EXPECT_TRUE(deleted) << run.output;
  const int last = first.at(first.size() - 1).at(2).as_integer();
  const web::json::array& second = out.at("second").as_array();
  EXPECT_GT(second.size(), 0u) << run.output;  // rounds keep modifying the pods
  for (const web::json::value& ev : second) {
    EXPECT_GT(ev.at(2).as_integer(), last) << run.output;
  }
}

TEST_P(BridgeApiserverTest, ARestartedApiserverAndARestartedBridgeConvergeAgain) {
  ASSERT_GE(Names(Apiserver(kPodsPath)).size(), 15u);
  // SIGTERM: the memory store's objects are gone with it; etcd keeps its own, and the
  // bridge's next pushes bring either up to date.
  apiserver_.reset();
  EXPECT_TRUE(Apiserver(kPodsPath).empty());
  StartApiserver();
  EXPECT_TRUE(
      PollUntil([&] { return ApiserverHoldsTheAggregatorsPods(); }, std::chrono::seconds(30)))
      << Logs();
  bridge_.reset();
  StartBridge();
  EXPECT_TRUE(PollUntil(
      [&] { return ReadAll(dir_.path() / "bridge.log").find("resync:") != std::string::npos; },
      std::chrono::seconds(30)))
      << ReadAll(dir_.path() / "bridge.log");
  EXPECT_TRUE(
      PollUntil([&] { return ApiserverHoldsTheAggregatorsPods(); }, std::chrono::seconds(30)))
      << Logs();
}

// Rounds are counted by the aggregator itself, so "within two rounds" needs no clock: the
// counter read when the pod is deleted, and again as soon as the apiserver no longer lists
// it, differ by at most two.
TEST_P(BridgeApiserverTest, APodDeletedInTheClusterLeavesTheApiserverWithinTwoRounds) {
  // A pod of the first pod's namespace that both the cluster and the apiserver list.
  const std::optional<std::pair<std::string, std::string>> first = FirstItem(Apiserver(kPodsPath));
  ASSERT_TRUE(first);
  const std::string& ns = first->first;
  const std::set<std::string> listed_before = ClusterPods(ns);
  const std::set<std::string> held_before = Names(Apiserver(kPodsPath));
  const auto victim_at =
      std::find_if(listed_before.begin(), listed_before.end(),
                   [&](const std::string& name) { return held_before.contains(name); });
  ASSERT_NE(victim_at, listed_before.end()) << "no pod of " << ns << " is held";
  const std::string victim = *victim_at;

  const double start = ScrapeRounds();
  ASSERT_GE(start, 1);
  RunResult deleted = Kubectl({"delete", "--raw", "/sim/v1/namespaces/" + ns + "/pods/" + victim});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
  double rounds = -1;
  ASSERT_TRUE(PollUntil(
      [&] {
        const std::string list = Apiserver(kPodsPath);
        if (list.empty() || Names(list).contains(victim)) return false;
        rounds = ScrapeRounds();
        return true;
      },
      std::chrono::seconds(60)))
      << victim << " is still held\n"
      << Logs();
  RecordProperty("rounds_until_gone", static_cast<int>(rounds - start));
  EXPECT_GE(rounds, start);
  EXPECT_LE(rounds, start + 2) << victim << " left the apiserver only after " << rounds - start
                               << " rounds";

  // Its replacement, a new pod in the same slot (with any churn that came meanwhile).
  std::set<std::string> added;
  for (const std::string& name : ClusterPods(ns)) {
    if (!listed_before.contains(name)) added.insert(name);
  }
  ASSERT_FALSE(added.empty()) << "no replacement for " << victim;
  EXPECT_TRUE(PollUntil(
      [&] {
        const std::set<std::string> held = Names(Apiserver(kPodsPath));
        return std::includes(held.begin(), held.end(), added.begin(), added.end());
      },
      std::chrono::seconds(30)))
      << *added.begin() << " never reached the apiserver\n"
      << Logs();
}

INSTANTIATE_TEST_SUITE_P(Stores, BridgeApiserverTest,
                         ::testing::Values(Store::kMemory, Store::kEtcd),
                         [](const ::testing::TestParamInfo<Store>& info) {
                           return info.param == Store::kMemory ? "Memory" : "Etcd";
                         });

}  // namespace
}  // namespace kubestat
