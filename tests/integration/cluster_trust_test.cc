// The aggregator given no --requestheader-* flags: it reads the front proxy's CA, allowed
// names and headers from the ConfigMap kube-system/extension-apiserver-authentication that
// the cluster publishes (kubestat-sim publishes it as kube-apiserver does), believes
// kubectl's requests proxied through the aggregation layer, and follows the ConfigMap as it
// changes; a cluster whose ConfigMap it may not read stops it at start with the fix.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat {
namespace {

namespace fs = std::filesystem;
using testing::FindOnPath;
using testing::FreeLoopbackPort;
using testing::HttpsGetReply;
using testing::MetricValue;
using testing::PollUntil;
using testing::Process;
using testing::ReadAll;
using testing::RunResult;
using testing::TempDir;
using testing::WaitForLog;

constexpr char kConfigMapPath[] =
    "/sim/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication";

class ClusterTrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::optional<std::string> kubectl = FindOnPath("kubectl");
    if (!kubectl) GTEST_SKIP() << "kubectl is not installed; skipping";
    kubectl_ = *kubectl;
    const fs::path root = dir_.path();
    port_ = FreeLoopbackPort();
    ASSERT_GT(port_, 0);
    std::ofstream(root / "users.yaml") << testing::kSimUsersYaml;
    fs::create_directories(root / "kubeconfigs");
    sim_ = std::make_unique<Process>(
        KUBESTAT_SIM_BINARY,
        std::vector<std::string>{
            "--nodes=2", "--pods-per-node=3", "--seed=9", "--kubelet-address-mode=ports",
            "--kubelet-port=0", "--users-file=" + (root / "users.yaml").string(), "--apiserver-tls",
            "--tls-dir=" + (root / "sim-tls").string(),
            "--kubeconfig-dir=" + (root / "kubeconfigs").string(),
            "--metrics-backend=https://127.0.0.1:" + std::to_string(port_),
            "--metrics-backend-ca-file=" + (root / "aggregator-certs" / "apiserver.crt").string()},
        root / "sim.log");
    ASSERT_TRUE(WaitForLog(root / "sim.log", "READY", std::chrono::seconds(60)))
        << ReadAll(root / "sim.log");
  }

  // The aggregator, its tokens and permissions reviewed by the cluster as `user`, and no
  // front-proxy flag.
  std::unique_ptr<Process> StartAggregator(const std::string& user,
                                           std::vector<std::string> extra = {}) {
    const fs::path root = dir_.path();
    const std::string kubeconfig = (root / "kubeconfigs" / (user + ".kubeconfig")).string();
    std::vector<std::string> args = {
        "--kubeconfig=" + (root / "kubeconfigs" / "kubestat-aggregator.kubeconfig").string(),
        "--kubelet-scheme=http",
        "--kubelet-preferred-address-types=InternalIP",
        "--kubelet-use-node-status-port",
        "--metric-resolution=2s",
        "--kubelet-timeout=1s",
        "--listen-address=127.0.0.1",
        "--secure-port=" + std::to_string(port_),
        "--cert-dir=" + (root / "aggregator-certs").string(),
        "--authentication-kubeconfig=" + kubeconfig,
        "--authorization-kubeconfig=" + kubeconfig,
        "--grpc-port=0",
        "--storage-dir=" + (root / "store").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<Process>(KUBESTAT_AGGREGATOR_BINARY, args, root / "aggregator.log");
  }

  RunResult Kubectl(std::vector<std::string> args) {
    args.insert(args.begin(),
                "--kubeconfig=" + (dir_.path() / "kubeconfigs" / "admin.kubeconfig").string());
    args.push_back("--request-timeout=20s");
    return testing::Run(kubectl_, args, dir_.path() / "kubectl.log", std::chrono::seconds(60));
  }

  // Whether kubectl top node, proxied by the sim's aggregation layer, gets figures.
  bool TopWorks() { return Kubectl({"top", "node", "--no-headers"}).exit_code == 0; }
  // Whether the aggregator refuses it as not authenticated (kubectl's words for a 401).
  bool TopIsUnauthorized() {
    return Kubectl({"top", "node"}).output.find("You must be logged in to the server") !=
           std::string::npos;
  }

  // The aggregator's counter of ConfigMap versions that came to `result`.
  double Updates(const std::string& result) {
    std::optional<testing::HttpReply> metrics = HttpsGetReply(port_, "/metrics", "admin-token");
    if (!metrics || metrics->code != 200) return -1;
    return MetricValue(metrics->body, "kubestat_extension_authentication_updates_total{result=\"" +
                                          result + "\"}");
  }

  // Replaces the ConfigMap's data through the sim.
  void PutTrust(const std::string& allowed_names) {
    const std::string ca = ReadAll(dir_.path() / "sim-tls" / "front-proxy-ca.crt");
    std::string escaped;
    for (char c : ca) escaped += c == '\n' ? std::string("\\n") : std::string(1, c);
    const fs::path body = dir_.path() / "configmap.json";
    std::ofstream(body) << R"({"data":{"requestheader-allowed-names":")" << allowed_names
                        << R"(","requestheader-client-ca-file":")" << escaped
                        << R"(","requestheader-username-headers":"[\"X-Remote-User\"]",)"
                        << R"("requestheader-group-headers":"[\"X-Remote-Group\"]",)"
                        << R"("requestheader-extra-headers-prefix":"[\"X-Remote-Extra-\"]"}})";
    RunResult put =
        Kubectl({"replace", "--raw", kConfigMapPath, "--validate=false", "-f", body.string()});
    ASSERT_EQ(put.exit_code, 0) << put.output;
  }

  TempDir dir_{"kubestat-cluster-trust"};
  std::string kubectl_;
  int port_ = 0;
  std::unique_ptr<Process> sim_;
};

TEST_F(ClusterTrustTest, TheFrontProxyIsBelievedFromTheClustersConfigMapAndFollowed) {
  std::unique_ptr<Process> aggregator = StartAggregator("kubestat-aggregator");
  const fs::path log = dir_.path() / "aggregator.log";
  ASSERT_TRUE(PollUntil([&] { return TopWorks(); }, std::chrono::seconds(90)))
      << Kubectl({"top", "node"}).output << "\naggregator log:\n"
      << ReadAll(log);
  // The CA it trusts is the one the cluster published.
  EXPECT_EQ(
      ReadAll(dir_.path() / "aggregator-certs" / "cluster-trust" / "requestheader-client-ca.crt"),
      ReadAll(dir_.path() / "sim-tls" / "front-proxy-ca.crt"));
  EXPECT_EQ(Updates("applied"), 1) << ReadAll(log);

  // The cluster now names another front proxy: the sim's certificate is no longer believed.
  PutTrust(R"([\"someone-else\"])");
  ASSERT_TRUE(PollUntil([&] { return TopIsUnauthorized(); }, std::chrono::seconds(60)))
      << Kubectl({"top", "node"}).output << "\naggregator log:\n"
      << ReadAll(log);
  EXPECT_EQ(Updates("applied"), 2);

  // Deleted, the last trust stays (and the deletion is counted and logged).
  RunResult deleted = Kubectl({"delete", "--raw", kConfigMapPath});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
  ASSERT_TRUE(PollUntil([&] { return Updates("rejected") >= 1; }, std::chrono::seconds(60)))
      << ReadAll(log);
  EXPECT_TRUE(TopIsUnauthorized());
  EXPECT_NE(ReadAll(log).find("was deleted; keeping the trust applied before"), std::string::npos)
      << ReadAll(log);

  // Published again with the sim's name: believed again.
  PutTrust(R"([\"front-proxy-client\"])");
  ASSERT_TRUE(PollUntil([&] { return TopWorks(); }, std::chrono::seconds(60)))
      << Kubectl({"top", "node"}).output << "\naggregator log:\n"
      << ReadAll(log);
  EXPECT_EQ(Updates("applied"), 3);
}

TEST_F(ClusterTrustTest, AConfigMapItMayNotReadStopsItAtStartWithTheFix) {
  // alice may not read kube-system's ConfigMaps.
  std::unique_ptr<Process> aggregator = StartAggregator("alice");
  EXPECT_NE(aggregator->Wait(std::chrono::seconds(60)), 0);
  const std::string log = ReadAll(dir_.path() / "aggregator.log");
  EXPECT_NE(log.find("cannot read the front-proxy trust from the cluster"), std::string::npos)
      << log;
  EXPECT_NE(log.find("--role=extension-apiserver-authentication-reader"), std::string::npos) << log;
}

TEST_F(ClusterTrustTest, ToleratedTheProxyIsNotBelievedUntilTheTrustCanBeRead) {
  std::unique_ptr<Process> aggregator =
      StartAggregator("alice", {"--authentication-tolerate-lookup-failure"});
  ASSERT_TRUE(PollUntil([&] { return TopIsUnauthorized(); }, std::chrono::seconds(90)))
      << Kubectl({"top", "node"}).output << "\naggregator log:\n"
      << ReadAll(dir_.path() / "aggregator.log");
  EXPECT_NE(ReadAll(dir_.path() / "aggregator.log").find("starting without it and following it"),
            std::string::npos);
}

}  // namespace
}  // namespace kubestat
