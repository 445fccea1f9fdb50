// The node agents as real processes: kubestat-sim serves a podresources socket per node (one
// node's kubelet is too old for GetAllocatableResources) and a fake kube-apiserver that
// reviews tokens and permissions; one kubestat-node-agent per node reads its socket and
// serves /podresources over HTTPS on the node's address, asking the cluster who a caller is
// (TokenReview) and whether it may read the document (SubjectAccessReview), as it would in a
// cluster.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"
#include "kubestat/metrics_api/node_resources.h"
#include "support/files.h"
#include "support/net.h"
#include "support/poll.h"
#include "support/temp_dir.h"
#include "support/test_pki.h"

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

// The sim's users: the aggregator's service account (may read the agents' documents), the
// agents' own (may review tokens and access), alice (may read pod metrics in shop only).
constexpr char kUsers[] = R"(users:
- name: admin
  token: admin-token
  groups: [system:masters]
- name: kubestat-aggregator
  token: aggregator-token
  groups: [kubestat:aggregators]
- name: kubestat-node-agent
  token: node-agent-token
  groups: [kubestat:node-agents]
- name: alice
  token: alice-token
  groups: [shop-team]
rules:
- groups: [kubestat:aggregators]
  verbs: [get, list, watch]
  apiGroups: [""]
  resources: [nodes, pods]
- groups: [kubestat:aggregators]
  verbs: [get]
  nonResourceURLs: [/podresources]
- groups: [kubestat:aggregators, kubestat:node-agents]
  verbs: [create]
  apiGroups: [authentication.k8s.io, authorization.k8s.io]
  resources: [tokenreviews, subjectaccessreviews]
- groups: [shop-team]
  verbs: [get, list]
  apiGroups: [metrics.k8s.io, metrics]
  resources: [pods]
  namespaces: [shop]
- groups: [system:authenticated]
  nonResourceURLs: [/api, /api/*, /apis, /apis/*]
  verbs: [get]
)";

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

}  // namespace
}  // namespace kubestat
