// The secure path end to end, with clients nobody here wrote: kubectl talks to kubestat-sim's
// fake kube-apiserver over HTTPS with a user's token; the fake apiserver authenticates the
// user and proxies metrics.k8s.io to the aggregator over HTTPS, presenting its front-proxy
// client certificate and naming the user in X-Remote-User/X-Remote-Group, as the
// aggregation layer does. The fake apiserver here does not authorize proxied requests
// itself, so every refusal below is the aggregator's own decision, which it asks of the
// cluster with SubjectAccessReview (and bearer tokens sent to it directly, with
// TokenReview), as a delegating extension API server does.
#include <grpcpp/grpcpp.h>

// cpprestsdk's U() macro collides with GoogleTest's template parameters.
#define _TURN_OFF_PLATFORM_STRING

#include <cpprest/json.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "harness.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"
#include "kubestat/v1/aggregator.grpc.pb.h"

namespace kubestat {
namespace {

namespace fs = std::filesystem;
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

class SecureAccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::optional<std::string> kubectl = FindOnPath("kubectl");
    if (!kubectl) GTEST_SKIP() << "kubectl is not installed; skipping";
    kubectl_ = *kubectl;
    const fs::path root = dir_.path();
    port_ = FreeLoopbackPort();
    ASSERT_GT(port_, 0);
    grpc_port_ = FreeLoopbackPort();
    ASSERT_GT(grpc_port_, 0);
    std::ofstream(root / "users.yaml") << kUsers;
    fs::create_directories(root / "kubeconfigs");
    sim_ = std::make_unique<Process>(
        KUBESTAT_SIM_BINARY,
        std::vector<std::string>{
            // These tests count every pod: no pod is replaced while they run.
            "--nodes=4", "--pods-per-node=6", "--seed=5", "--pod-lifetime=0",
            "--kubelet-address-mode=ports", "--kubelet-port=0",
            "--users-file=" + (root / "users.yaml").string(), "--apiserver-tls",
            "--tls-dir=" + (root / "sim-tls").string(),
            "--kubeconfig-dir=" + (root / "kubeconfigs").string(),
            "--metrics-backend=https://127.0.0.1:" + std::to_string(port_),
            "--metrics-backend-ca-file=" + (root / "aggregator-certs" / "apiserver.crt").string(),
            "--no-authorize-proxied-requests"},
        root / "sim.log");
    ASSERT_TRUE(WaitForLog(root / "sim.log", "READY", std::chrono::seconds(60)))
        << ReadAll(root / "sim.log");
    const std::string aggregator_kubeconfig =
        (root / "kubeconfigs" / "kubestat-aggregator.kubeconfig").string();
    aggregator_ = std::make_unique<Process>(
        KUBESTAT_AGGREGATOR_BINARY,
        std::vector<std::string>{
            "--kubeconfig=" + aggregator_kubeconfig, "--kubelet-scheme=http",
            "--kubelet-preferred-address-types=InternalIP", "--kubelet-use-node-status-port",
            "--metric-resolution=2s", "--kubelet-timeout=1s", "--listen-address=127.0.0.1",
            // These tests count every pod across pages: none may drop out of metrics.k8s.io
            // for a late round (the default bound is three resolutions, 6 s here).
            "--metrics-max-age=10m", "--secure-port=" + std::to_string(port_),
            "--cert-dir=" + (root / "aggregator-certs").string(),
            "--requestheader-client-ca-file=" + (root / "sim-tls" / "front-proxy-ca.crt").string(),
            "--requestheader-allowed-names=front-proxy-client",
            // Tokens and permissions are the cluster's: TokenReview and SubjectAccessReview.
            "--authentication-kubeconfig=" + aggregator_kubeconfig,
            "--authorization-kubeconfig=" + aggregator_kubeconfig, "--grpc-address=127.0.0.1",
            "--grpc-port=" + std::to_string(grpc_port_),
            "--storage-dir=" + (root / "store").string()},
        root / "aggregator.log");
    // Ready once the admin sees every node with figures (two scrapes for a cpu rate).
    ASSERT_TRUE(PollUntil(
        [&] {
          RunResult top = Kubectl("admin", {"top", "node", "--no-headers"});
          return top.exit_code == 0 && Lines(top.output) == 4 &&
                 top.output.find("<unknown>") == std::string::npos;
        },
        std::chrono::seconds(90)))
        << Kubectl("admin", {"top", "node"}).output << "\naggregator log:\n"
        << ReadAll(root / "aggregator.log") << "\nsim log:\n"
        << ReadAll(root / "sim.log");
  }

  RunResult Kubectl(const std::string& user, std::vector<std::string> args) {
    args.insert(args.begin(),
                "--kubeconfig=" + (dir_.path() / "kubeconfigs" / (user + ".kubeconfig")).string());
    args.push_back("--request-timeout=20s");
    return testing::Run(kubectl_, args, dir_.path() / ("kubectl-" + user + ".log"),
                        std::chrono::seconds(60));
  }

  static int Lines(const std::string& text) {
    int lines = 0;
    for (char c : text) lines += c == '\n';
    return lines;
  }

  TempDir dir_{"kubestat-secure"};
  std::string kubectl_;
  int port_ = 0;
  int grpc_port_ = 0;
  std::unique_ptr<Process> sim_;
  std::unique_ptr<Process> aggregator_;
};

TEST_F(SecureAccessTest, KubectlTopAsAUserAllowedEverything) {
  RunResult nodes = Kubectl("admin", {"top", "node"});
  EXPECT_EQ(nodes.exit_code, 0) << nodes.output;
  EXPECT_NE(nodes.output.find("node-0003"), std::string::npos) << nodes.output;
  RunResult pods = Kubectl("admin", {"top", "pod", "-A", "--no-headers"});
  EXPECT_EQ(pods.exit_code, 0) << pods.output;
  EXPECT_EQ(Lines(pods.output), 24) << pods.output;
}

TEST_F(SecureAccessTest, AUserAllowedOneNamespaceSeesItAndIsRefusedTheRest) {
  RunResult shop = Kubectl("alice", {"top", "pod", "-n", "shop", "--no-headers"});
  EXPECT_EQ(shop.exit_code, 0) << shop.output;
  EXPECT_GT(Lines(shop.output), 0) << shop.output;
  RunResult nodes = Kubectl("alice", {"top", "node"});
  EXPECT_NE(nodes.exit_code, 0);
  EXPECT_NE(nodes.output.find("Forbidden"), std::string::npos) << nodes.output;
  EXPECT_NE(nodes.output.find("User \"alice\" cannot list resource \"nodes\""), std::string::npos)
      << nodes.output;
  RunResult payments = Kubectl("alice", {"top", "pod", "-n", "payments"});
  EXPECT_NE(payments.exit_code, 0);
  EXPECT_NE(payments.output.find("Forbidden"), std::string::npos) << payments.output;
}

TEST_F(SecureAccessTest, TokensSentStraightToTheAggregatorAreReviewedByTheCluster) {
  std::optional<testing::HttpReply> shop =
      HttpsGetReply(port_, "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods", "alice-token");
  ASSERT_TRUE(shop);
  EXPECT_EQ(shop->code, 200) << shop->body;
  EXPECT_NE(shop->body.find("\"kind\":\"PodMetricsList\""), std::string::npos) << shop->body;
  std::optional<testing::HttpReply> nodes =
      HttpsGetReply(port_, "/apis/metrics.k8s.io/v1beta1/nodes", "alice-token");
  ASSERT_TRUE(nodes);
  EXPECT_EQ(nodes->code, 403) << nodes->body;
  std::optional<testing::HttpReply> unknown =
      HttpsGetReply(port_, "/apis/metrics.k8s.io/v1beta1/nodes", "not-a-token");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->code, 401) << unknown->body;
  std::optional<testing::HttpReply> admin =
      HttpsGetReply(port_, "/apis/metrics.k8s.io/v1beta1/nodes", "admin-token");
  ASSERT_TRUE(admin);
  EXPECT_EQ(admin->code, 200) << admin->body;
}

// The official Kubernetes Python client (python3-kubernetes), through the fake apiserver:
// pages of PodMetrics with limit and continue cover every pod once, and a user allowed one
// namespace reads it and is refused the nodes with 403.
constexpr char kPythonClient[] = R"(import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException

def api(user):
    return client.CustomObjectsApi(
        config.new_client_from_config(config_file=sys.argv[1] + "/" + user + ".kubeconfig"))

out = {"pages": [], "names": []}
token = None
while len(out["pages"]) < 20:
    page = api("admin").list_cluster_custom_object(
        "metrics.k8s.io", "v1beta1", "pods", limit=5, _continue=token)
    out["pages"].append(len(page["items"]))
    out["names"] += [i["metadata"]["namespace"] + "/" + i["metadata"]["name"] for i in page["items"]]
    token = page["metadata"].get("continue")
    if not token:
        break
shop = api("alice").list_namespaced_custom_object("metrics.k8s.io", "v1beta1", "shop", "pods")
out["shop"] = len(shop["items"])
try:
    api("alice").list_cluster_custom_object("metrics.k8s.io", "v1beta1", "nodes")
    out["nodes"] = 200
except ApiException as e:
    out["nodes"] = e.status
print(json.dumps(out))
)";

TEST_F(SecureAccessTest, TheOfficialPythonClientPagesAndIsAuthorizedPerNamespace) {
  // Debian's interpreter, where python3-kubernetes is installed (not a PATH shim).
  const fs::path python = "/usr/bin/python3";
  const fs::path script = dir_.path() / "client.py";
  std::ofstream(script) << kPythonClient;
  RunResult probe = testing::Run(python.string(), {"-c", "import kubernetes"},
                                 dir_.path() / "python-probe.log", std::chrono::seconds(60));
  if (probe.exit_code != 0) GTEST_SKIP() << "python3-kubernetes is not installed; skipping";
  // Every pod has figures before the pages are counted (a pod needs two scrapes, as a node).
  ASSERT_TRUE(PollUntil(
      [&] {
        return Lines(Kubectl("admin", {"top", "pod", "-A", "--no-headers"}).output) == 24;
      },
      std::chrono::seconds(60)))
      << Kubectl("admin", {"top", "pod", "-A"}).output;
  RunResult run =
      testing::Run(python.string(), {script.string(), (dir_.path() / "kubeconfigs").string()},
                   dir_.path() / "python.log", std::chrono::seconds(300));
  ASSERT_EQ(run.exit_code, 0) << run.output << "\naggregator log:\n"
                              << ReadAll(dir_.path() / "aggregator.log");
  // The answer is the script's last line; warnings the client prints may come before it.
  std::string last_line = run.output;
  while (!last_line.empty() && last_line.back() == '\n') last_line.pop_back();
  last_line = last_line.substr(last_line.rfind('\n') + 1);
  ASSERT_FALSE(last_line.empty() || last_line.front() != '{') << run.output;
  const web::json::value out = web::json::value::parse(last_line);
  std::vector<int> pages;
  for (const web::json::value& n : out.at("pages").as_array()) pages.push_back(n.as_integer());
  EXPECT_EQ(pages, (std::vector<int>{5, 5, 5, 5, 4})) << run.output;
  std::set<std::string> names;
  for (const web::json::value& n : out.at("names").as_array()) names.insert(n.as_string());
  EXPECT_EQ(names.size(), 24u) << run.output;  // every pod once
  EXPECT_GT(out.at("shop").as_integer(), 0) << run.output;
  EXPECT_EQ(out.at("nodes").as_integer(), 403) << run.output;
}

TEST_F(SecureAccessTest, NoTokenOrAWrongOneIsUnauthorized) {
  // Through the apiserver, with a token it does not know.
  RunResult top = Kubectl("alice", {"top", "node", "--token=not-a-token"});
  EXPECT_NE(top.exit_code, 0);
  // kubectl words a 401 so.
  EXPECT_NE(top.output.find("You must be logged in to the server"), std::string::npos)
      << top.output;
  // At the apiserver and at the aggregator, without any credentials.
  const std::string kubeconfig = ReadAll(dir_.path() / "kubeconfigs" / "alice.kubeconfig");
  const size_t at = kubeconfig.find("https://127.0.0.1:");
  ASSERT_NE(at, std::string::npos) << kubeconfig;
  const int apiserver_port = std::stoi(kubeconfig.substr(at + 18));
  for (int port : {apiserver_port, port_}) {
    std::optional<testing::HttpReply> direct =
        HttpsGetReply(port, "/apis/metrics.k8s.io/v1beta1/nodes");
    ASSERT_TRUE(direct) << port;
    EXPECT_EQ(direct->code, 401) << port << ": " << direct->body;
    EXPECT_NE(direct->body.find("\"reason\":\"Unauthorized\""), std::string::npos) << direct->body;
  }
}

TEST_F(SecureAccessTest, AForgedRemoteUserWithoutTheProxyCertificateIsNotBelieved) {
  std::optional<testing::HttpReply> forged =
      HttpsGetReply(port_, "/apis/metrics.k8s.io/v1beta1/nodes", "",
                    {{"X-Remote-User", "admin"}, {"X-Remote-Group", "system:masters"}});
  ASSERT_TRUE(forged);
  EXPECT_EQ(forged->code, 401) << forged->body;
  // With a token, the token's user is the user, whatever the headers say.
  std::optional<testing::HttpReply> token =
      HttpsGetReply(port_, "/apis/metrics.k8s.io/v1beta1/nodes", "alice-token",
                    {{"X-Remote-User", "admin"}, {"X-Remote-Group", "system:masters"}});
  ASSERT_TRUE(token);
  EXPECT_EQ(token->code, 403) << token->body;
}

TEST_F(SecureAccessTest, GrpcCallersAreAuthenticatedAndAuthorizedByTheCluster) {
  auto stub = v1::Aggregator::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_port_),
                                                          grpc::InsecureChannelCredentials()));
  auto list_pods = [&](const std::string& token, const std::string& ns,
                       v1::ListPodsResponse* response) {
    grpc::ClientContext context;
    if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
    v1::ListPodsRequest request;
    request.set_namespace_(ns);
    return stub->ListPods(&context, request, response);
  };
  v1::ListPodsResponse shop;
  grpc::Status allowed = list_pods("alice-token", "shop", &shop);
  EXPECT_TRUE(allowed.ok()) << allowed.error_message();
  EXPECT_GT(shop.items_size(), 0);
  v1::ListPodsResponse all;
  EXPECT_EQ(list_pods("alice-token", "", &all).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(all.items_size(), 0);
  EXPECT_EQ(list_pods("", "shop", &all).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(list_pods("not-a-token", "shop", &all).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer admin-token");
  v1::ListNodesResponse nodes;
  grpc::Status admin = stub->ListNodes(&context, v1::ListNodesRequest(), &nodes);
  EXPECT_TRUE(admin.ok()) << admin.error_message();
  EXPECT_EQ(nodes.items_size(), 4);
}

}  // namespace
}  // namespace kubestat
