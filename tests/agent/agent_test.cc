// The wired node agent over HTTPS (self-signed in a cert dir), reading the simulator's
// podresources socket: /podresources for a user the rules allow, 401 without a token, 403
// for another user; health open to anyone and telling the truth about the socket.
#include "kubestat/agent/agent.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>

#include "kubestat/http/client.h"
#include "kubestat/metrics_api/node_resources.h"
#include "kubestat/sim/simulator.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::agent {
namespace {

using ::testing::HasSubstr;

class NodeAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sim::SimulatorOptions o;
    o.model.nodes = 2;
    o.model.pods_per_node = 10;
    o.kubelet_address_mode = sim::KubeletAddressMode::kPorts;
    o.kubelet_port = 0;
    o.tick_interval = Duration::zero();
    o.podresources_dir = dir_.File("podres");
    o.podresources_faults["node-0001"] = sim::PodResourcesFault::kAbsent;
    sim_ = std::make_unique<sim::Simulator>(o, RealClock::Get());
    ASSERT_TRUE(sim_->Start().ok());
    std::ofstream(dir_.File("tokens.csv")) << "aggregator-token,kubestat-aggregator,1\n"
                                              "alice-token,alice,2\n";
    std::ofstream(dir_.File("rules.yaml"))
        << "rules:\n- users: [kubestat-aggregator]\n  verbs: [get]\n"
           "  nonResourceURLs: [/podresources, /metrics]\n";
  }

  // An agent for `node`, started, with a client of its HTTPS port.
  void StartAgent(int node) {
    AgentOptions options;
    options.node_name = sim_->model().node(node).name;
    options.podresources_socket = sim_->podresources_socket(node);
    options.resolution = std::chrono::seconds(1);
    options.call_timeout = std::chrono::milliseconds(300);
    options.serving.listen_address = "127.0.0.1";
    options.serving.secure_port = 0;
    options.serving.cert_dir = dir_.File("certs");
    options.serving.token_auth_file = dir_.File("tokens.csv");
    options.serving.authorization_rules_file = dir_.File("rules.yaml");
    ASSERT_TRUE(options.Validate().ok()) << options.Validate();
    absl::StatusOr<std::unique_ptr<NodeAgent>> agent = NodeAgent::Create(options, RealClock::Get());
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = *std::move(agent);
    agent_->Start();
    http::ClientOptions client;
    client.base_url = agent_->BaseUrl();
    client.insecure_skip_tls_verify = true;  // self-signed in the cert dir
    client_ = *http::Client::Create(client, RealClock::Get());
  }

  http::ClientResponse Get(const std::string& path, const std::string& token = "") {
    http::HeaderList headers;
    if (!token.empty()) headers.emplace_back("Authorization", "Bearer " + token);
    absl::StatusOr<http::ClientResponse> response = client_->Get(path, headers);
    EXPECT_TRUE(response.ok()) << response.status();
    return response.ok() ? *response : http::ClientResponse{};
  }

  testing::TempDir dir_{"kubestat-agent"};
  std::unique_ptr<sim::Simulator> sim_;
  std::unique_ptr<NodeAgent> agent_;
  std::unique_ptr<http::Client> client_;
};

TEST_F(NodeAgentTest, ServesTheDocumentToTheAllowedUserOnly) {
  StartAgent(0);
  ASSERT_TRUE(
      testing::PollUntil([&] { return Get("/readyz").code == 200; }, std::chrono::seconds(20)));
  const http::ClientResponse allowed = Get("/podresources", "aggregator-token");
  ASSERT_EQ(allowed.code, 200) << allowed.body;
  EXPECT_EQ(allowed.content_type, "application/json");
  absl::StatusOr<metrics_api::NodePodResources> doc =
      metrics_api::ParseNodePodResources(allowed.body);
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->node_name, "node-0000");
  ASSERT_TRUE(doc->pods.has_value());
  EXPECT_EQ(doc->pods->size(), 10u);
  EXPECT_TRUE(doc->allocatable.has_value());
  EXPECT_THAT(Get("/podresources?pretty=true", "aggregator-token").body, HasSubstr("\n  "));

  const http::ClientResponse anonymous = Get("/podresources");
  EXPECT_EQ(anonymous.code, 401);
  EXPECT_THAT(anonymous.body, HasSubstr("\"reason\":\"Unauthorized\""));
  const http::ClientResponse other = Get("/podresources", "alice-token");
  EXPECT_EQ(other.code, 403);
  EXPECT_THAT(other.body, HasSubstr("\"reason\":\"Forbidden\""));
  EXPECT_EQ(Get("/metrics").code, 401);
  const http::ClientResponse metrics = Get("/metrics", "aggregator-token");
  EXPECT_EQ(metrics.code, 200);
  EXPECT_THAT(metrics.body, HasSubstr("kubestat_node_agent_calls_total{"));
  EXPECT_EQ(Get("/healthz").code, 200);
  // Authorization comes first: a path nobody is granted is 403, whether or not it exists.
  EXPECT_EQ(Get("/nowhere", "aggregator-token").code, 403);
}

TEST_F(NodeAgentTest, WithoutASocketItIsAliveButNotReadyAndSaysWhy) {
  StartAgent(1);
  ASSERT_TRUE(
      testing::PollUntil([&] { return Get("/readyz").body.find("List") != std::string::npos; },
                         std::chrono::seconds(20)));
  const http::ClientResponse ready = Get("/readyz");
  EXPECT_EQ(ready.code, 503);
  EXPECT_THAT(ready.body, HasSubstr("Unavailable"));
  EXPECT_THAT(ready.body, HasSubstr(sim_->podresources_socket(1)));
  EXPECT_EQ(Get("/healthz").code, 200);
  const http::ClientResponse doc = Get("/podresources", "aggregator-token");
  EXPECT_EQ(doc.code, 200);
  EXPECT_THAT(doc.body, HasSubstr("\"List\":{\"code\":\"Unavailable\""));

  // The kubelet comes (back): the agent follows the new socket and turns ready.
  sim_->podresources_faults().Set("node-0001", sim::PodResourcesFault::kNone);
  ASSERT_TRUE(sim_->ApplyPodResourcesFault(1).ok());
  ASSERT_TRUE(
      testing::PollUntil([&] { return Get("/readyz").code == 200; }, std::chrono::seconds(30)));
}

TEST(AgentOptionsTest, DefaultsAndValidationNameTheFlag) {
  AgentOptions options;
  EXPECT_EQ(options.podresources_socket, "/var/lib/kubelet/pod-resources/kubelet.sock");
  EXPECT_EQ(options.serving.secure_port, kDefaultAgentPort);
  EXPECT_EQ(options.resolution, std::chrono::seconds(10));
  options.serving.token_auth_file = "/x";
  options.serving.authorization_rules_file = "/y";
  options.node_name = "n";
  options.call_timeout = std::chrono::seconds(4);
  EXPECT_THAT(options.Validate().message(), HasSubstr("--call-timeout"));
  options.call_timeout = std::chrono::seconds(1);
  options.podresources_socket = "/" + std::string(120, 's');
  EXPECT_THAT(options.Validate().message(), HasSubstr("--podresources-socket"));
  options.podresources_socket = "/run/kubelet.sock";
  options.node_name.clear();
  EXPECT_THAT(options.Validate().message(), HasSubstr("--node-name"));
}

}  // namespace
}  // namespace kubestat::agent
