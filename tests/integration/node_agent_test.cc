// The node agents as real processes: kubestat-sim serves a podresources socket per node (one
// node's kubelet is too old for GetAllocatableResources) and a fake kube-apiserver that
// reviews tokens and permissions; one kubestat-node-agent per node reads its socket and
// serves /podresources over HTTPS on the node's address, asking the cluster who a caller is
// (TokenReview) and whether it may read the document (SubjectAccessReview), as it would in a
// cluster; kubestat-aggregator scrapes each agent beside its kubelet (--node-agent-port,
// verifying the agents' certificate, with its service account's token) and serves what they
// told in metrics/v1alpha1.
// cpprestsdk's U() macro collides with GoogleTest's template parameters.
#define _TURN_OFF_PLATFORM_STRING

#include <cpprest/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "harness.h"
#include "kubestat/metrics_api/node_resources.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"
#include "kubestat/testing/test_pki.h"

namespace kubestat {
namespace {

namespace fs = std::filesystem;
using testing::FreeLoopbackPort;
using ::testing::HasSubstr;
using testing::HttpsGetReply;
using testing::PollUntil;
using testing::Process;
using testing::ReadAll;
using testing::TempDir;
using testing::WaitForLog;

constexpr int kNodes = 3;

// The sim's users (harness.h): the aggregator's service account may read the agents'
// documents, the agents' own may review tokens and access, alice may not read them.
constexpr const char* kUsers = testing::kSimUsersYaml;

// node-0000's loopback address in the sim's loopback mode (KubeletLoopbackAddress).
std::string NodeAddress(int node) { return "127.1.0." + std::to_string(node + 1); }

class NodeAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path root = dir_.path();
    std::ofstream(root / "users.yaml") << kUsers;
    fs::create_directories(root / "kubeconfigs");
    // Every agent serves one certificate naming every node's address, signed by a CA the
    // aggregator is given.
    std::vector<std::string> sans = {"IP:127.0.0.1"};
    for (int node = 0; node < kNodes; ++node) sans.push_back("IP:" + NodeAddress(node));
    const testing::TestCertificate serving = pki_.IssueServer("kubestat-node-agent", sans);
    dir_.Write("agent.crt", serving.cert_pem);
    dir_.Write("agent.key", serving.key_pem);
    dir_.Write("agent-ca.crt", pki_.ca_pem());
    sim_ = std::make_unique<Process>(
        KUBESTAT_SIM_BINARY,
        std::vector<std::string>{"--nodes=" + std::to_string(kNodes), "--pods-per-node=12",
                                 "--seed=5", "--kubelet-address-mode=loopback", "--kubelet-port=0",
                                 "--users-file=" + (root / "users.yaml").string(),
                                 "--apiserver-tls", "--tls-dir=" + (root / "sim-tls").string(),
                                 "--kubeconfig-dir=" + (root / "kubeconfigs").string(),
                                 "--podresources-dir=" + (root / "podres").string(),
                                 "--podresources-faults=node-0002=no-allocatable"},
        root / "sim.log");
    ASSERT_TRUE(WaitForLog(root / "sim.log", "READY", std::chrono::seconds(60)))
        << ReadAll(root / "sim.log");
    agent_port_ = FreeLoopbackPort();
    const std::string kubeconfig =
        (root / "kubeconfigs" / "kubestat-node-agent.kubeconfig").string();
    for (int node = 0; node < kNodes; ++node) {
      const std::string name = "node-000" + std::to_string(node);
      agents_.push_back(std::make_unique<Process>(
          KUBESTAT_NODE_AGENT_BINARY,
          std::vector<std::string>{
              "--node-name=" + name,
              "--podresources-socket=" + (root / "podres" / name / "kubelet.sock").string(),
              "--resolution=1s", "--call-timeout=300ms", "--listen-address=" + NodeAddress(node),
              "--secure-port=" + std::to_string(agent_port_),
              "--tls-cert-file=" + dir_.File("agent.crt"),
              "--tls-private-key-file=" + dir_.File("agent.key"),
              "--authentication-kubeconfig=" + kubeconfig,
              "--authorization-kubeconfig=" + kubeconfig},
          root / ("agent-" + name + ".log")));
    }
    for (int node = 0; node < kNodes; ++node) {
      const std::string name = "node-000" + std::to_string(node);
      ASSERT_TRUE(WaitForLog(root / ("agent-" + name + ".log"), "serving /podresources",
                             std::chrono::seconds(30)))
          << ReadAll(root / ("agent-" + name + ".log"));
    }
  }

  // GET https://<node address>:<agent port><path>; the certificate is not verified here
  // (the aggregator's test verifies it).
  std::optional<testing::HttpReply> AgentGet(int node, const std::string& path,
                                             const std::string& token = "") {
    return HttpsGetReply(agent_port_, path, token, {}, NodeAddress(node));
  }

  TempDir dir_{"kubestat-agents"};
  testing::TestPki pki_;
  int agent_port_ = 0;
  std::unique_ptr<Process> sim_;
  std::vector<std::unique_ptr<Process>> agents_;
};

TEST_F(NodeAgentTest, OnlyTheAggregatorsServiceAccountReadsTheDocument) {
  // The aggregator's token: TokenReview names kubestat-aggregator, and SubjectAccessReview
  // allows it get on /podresources.
  std::optional<testing::HttpReply> allowed;
  ASSERT_TRUE(PollUntil(
      [&] {
        allowed = AgentGet(0, "/podresources", "aggregator-token");
        return allowed && allowed->code == 200 &&
               allowed->body.find("\"List\":{\"code\":\"OK\"") != std::string::npos;
      },
      std::chrono::seconds(30)))
      << (allowed ? allowed->body : "no answer") << ReadAll(dir_.path() / "agent-node-0000.log");
  absl::StatusOr<metrics_api::NodePodResources> doc =
      metrics_api::ParseNodePodResources(allowed->body);
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->node_name, "node-0000");
  ASSERT_TRUE(doc->pods.has_value());
  EXPECT_EQ(doc->pods->size(), 12u);
  EXPECT_TRUE(doc->allocatable.has_value());

  // A token the cluster knows, of a user not granted /podresources: 403.
  std::optional<testing::HttpReply> alice = AgentGet(0, "/podresources", "alice-token");
  ASSERT_TRUE(alice.has_value());
  EXPECT_EQ(alice->code, 403) << alice->body;
  EXPECT_THAT(alice->body, HasSubstr("\"reason\":\"Forbidden\""));
  EXPECT_THAT(alice->body, HasSubstr("alice"));
  // A token nobody knows, and no token at all: 401.
  std::optional<testing::HttpReply> unknown = AgentGet(0, "/podresources", "made-up-token");
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->code, 401) << unknown->body;
  std::optional<testing::HttpReply> anonymous = AgentGet(0, "/podresources");
  ASSERT_TRUE(anonymous.has_value());
  EXPECT_EQ(anonymous->code, 401) << anonymous->body;
  EXPECT_THAT(anonymous->body, HasSubstr("\"reason\":\"Unauthorized\""));
  // Health is open to the kubelet's probes.
  std::optional<testing::HttpReply> ready = AgentGet(0, "/readyz");
  ASSERT_TRUE(ready.has_value());
  EXPECT_EQ(ready->code, 200) << ready->body;

  // The node whose kubelet lacks GetAllocatableResources says so, and is still ready (List
  // answers).
  std::optional<testing::HttpReply> old;
  ASSERT_TRUE(PollUntil(
      [&] {
        old = AgentGet(2, "/podresources", "aggregator-token");
        return old && old->body.find("\"code\":\"Unimplemented\"") != std::string::npos;
      },
      std::chrono::seconds(30)))
      << (old ? old->body : "no answer");
  EXPECT_THAT(old->body, HasSubstr("does not implement GetAllocatableResources"));
  EXPECT_EQ(AgentGet(2, "/readyz")->code, 200);
}

web::json::value Json(const std::string& text) { return web::json::value::parse(text); }

// The exclusive cpu ids of a JSON "exclusive" member of `object`, or none.
std::vector<int64_t> ExclusiveCpus(const web::json::value& object) {
  std::vector<int64_t> cpus;
  if (!object.has_field("exclusive") || !object.at("exclusive").has_field("cpuIds")) return cpus;
  for (const web::json::value& id : object.at("exclusive").at("cpuIds").as_array()) {
    cpus.push_back(id.as_number().to_int64());
  }
  return cpus;
}

TEST_F(NodeAgentTest, AggregatorServesAllocatableAndExclusiveAssignmentsOfEveryNode) {
  const fs::path root = dir_.path();
  const int port = FreeLoopbackPort();
  dir_.Write("aggregator.token", "aggregator-token\n");
  const std::string kubeconfig = (root / "kubeconfigs" / "kubestat-aggregator.kubeconfig").string();
  Process aggregator(
      KUBESTAT_AGGREGATOR_BINARY,
      std::vector<std::string>{
          "--kubeconfig=" + kubeconfig, "--kubelet-scheme=http",
          "--kubelet-preferred-address-types=InternalIP", "--kubelet-use-node-status-port",
          "--metric-resolution=2s", "--kubelet-timeout=1s",
          "--node-agent-port=" + std::to_string(agent_port_),
          "--node-agent-certificate-authority=" + dir_.File("agent-ca.crt"),
          "--node-agent-token-file=" + dir_.File("aggregator.token"), "--listen-address=127.0.0.1",
          "--secure-port=" + std::to_string(port),
          "--cert-dir=" + (root / "aggregator-certs").string(),
          "--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig,
          // This cluster has no aggregation layer, so no front-proxy trust to look up.
          "--authentication-skip-lookup", "--grpc-port=0",
          "--storage-dir=" + (root / "store").string()},
      root / "aggregator.log");

  // Every node's agent answered (or, for node-0002, said what its kubelet lacks).
  web::json::value nodes;
  ASSERT_TRUE(PollUntil(
      [&] {
        std::optional<testing::HttpReply> reply =
            HttpsGetReply(port, "/apis/metrics/v1alpha1/nodes", "admin-token");
        if (!reply || reply->code != 200) return false;
        nodes = Json(reply->body);
        int told = 0;
        for (const web::json::value& node : nodes.at("items").as_array()) {
          // A cpu rate, and so its utilization, needs a second scrape of the kubelet.
          const bool cpu = node.has_field("utilization") &&
                           node.at("utilization").at("10s").at("mean").has_field("cpu");
          told += node.has_field("podResources") &&
                          (cpu || node.at("metadata").at("name").as_string() == "node-0002")
                      ? 1
                      : 0;
        }
        return told == kNodes;
      },
      std::chrono::seconds(60)))
      << ReadAll(root / "aggregator.log");
  for (const web::json::value& node : nodes.at("items").as_array()) {
    const std::string name = node.at("metadata").at("name").as_string();
    const web::json::value& status = node.at("podResources");
    if (name == "node-0002") {
      // The kubelet without GetAllocatableResources is reported as such, with no allocatable.
      EXPECT_EQ(status.at("state").as_string(), "AllocatableUnsupported") << node.serialize();
      EXPECT_THAT(status.at("message").as_string(),
                  HasSubstr("does not implement GetAllocatableResources"));
      EXPECT_FALSE(node.has_field("allocatable"));
      EXPECT_FALSE(node.has_field("utilization"));
      continue;
    }
    EXPECT_EQ(status.at("state").as_string(), "Complete") << node.serialize();
    ASSERT_TRUE(node.has_field("allocatable")) << node.serialize();
    EXPECT_EQ(node.at("allocatable").at("nvidia.com/gpu").as_string(), "4");
    EXPECT_FALSE(node.at("allocatable").at("cpu").as_string().empty());
    EXPECT_EQ(node.at("allocatableTopology").at("memory").size(), 2u);  // two NUMA nodes
    ASSERT_TRUE(node.has_field("utilization")) << node.serialize();
    const double mean = node.at("utilization").at("10s").at("mean").at("cpu").as_double();
    EXPECT_GT(mean, 0);
    EXPECT_LT(mean, 1);
  }

  // Each pod's containers carry the exclusive cpus its node's agent reported, on every node
  // (node-0002's List answers too).
  std::optional<testing::HttpReply> pods_reply;
  ASSERT_TRUE(PollUntil(
      [&] {
        pods_reply = HttpsGetReply(port, "/apis/metrics/v1alpha1/pods", "admin-token");
        return pods_reply && pods_reply->code == 200 &&
               Json(pods_reply->body).at("items").size() == kNodes * 12;
      },
      std::chrono::seconds(60)))
      << (pods_reply ? pods_reply->body.substr(0, 2000) : "no answer");
  std::map<std::string, std::vector<int64_t>> served;  // "pod/container" → cpus
  const web::json::value pods = Json(pods_reply->body);
  for (const web::json::value& pod : pods.at("items").as_array()) {
    for (const web::json::value& container : pod.at("containers").as_array()) {
      std::vector<int64_t> cpus = ExclusiveCpus(container);
      if (!cpus.empty()) {
        served[pod.at("metadata").at("name").as_string() + "/" +
               container.at("metadata").at("name").as_string()] = std::move(cpus);
      }
    }
  }
  std::set<int> nodes_with_pinned;
  size_t pinned = 0;
  for (int node = 0; node < kNodes; ++node) {
    std::optional<testing::HttpReply> agent = AgentGet(node, "/podresources", "aggregator-token");
    ASSERT_TRUE(agent && agent->code == 200);
    absl::StatusOr<metrics_api::NodePodResources> doc =
        metrics_api::ParseNodePodResources(agent->body);
    ASSERT_TRUE(doc.ok() && doc->pods) << agent->body;
    for (const metrics_api::PodAssignment& pod : *doc->pods) {
      for (const metrics_api::ContainerAssignment& container : pod.containers) {
        if (container.exclusive.cpu_ids.empty()) continue;
        ++pinned;
        nodes_with_pinned.insert(node);
        EXPECT_EQ(served[pod.name + "/" + container.name], container.exclusive.cpu_ids)
            << pod.name << "/" << container.name;
      }
    }
  }
  EXPECT_EQ(served.size(), pinned);
  EXPECT_EQ(nodes_with_pinned.size(), static_cast<size_t>(kNodes));

  // metrics.k8s.io keeps its standard shape.
  std::optional<testing::HttpReply> beta =
      HttpsGetReply(port, "/apis/metrics.k8s.io/v1beta1/nodes/node-0000", "admin-token");
  ASSERT_TRUE(beta && beta->code == 200);
  const web::json::value standard = Json(beta->body);
  EXPECT_FALSE(standard.has_field("allocatable"));
  EXPECT_FALSE(standard.has_field("podResources"));
  EXPECT_TRUE(standard.has_field("usage"));

  // Agent scrapes are counted by result.
  std::optional<testing::HttpReply> metrics = HttpsGetReply(port, "/metrics", "admin-token");
  ASSERT_TRUE(metrics && metrics->code == 200);
  EXPECT_GT(
      testing::MetricValue(metrics->body,
                           "kubestat_node_agent_scrapes_total{reason=\"none\",result=\"success\"}"),
      3);
}

}  // namespace
}  // namespace kubestat
