// kubestat-sim and kubestat-aggregator as real processes, the sim's kube API over HTTPS with
// a CA it makes at each start: the sim is stopped and started again on the same port with
// a new CA, written into the kubeconfig the aggregator reads, and its kubelets on new
// ports. The aggregator trusts the new CA from its next connection (it says so in its log),
// discovers the kubelets' new ports and serves fresh metrics through kubectl, without a
// restart.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat {
namespace {

using testing::FreeLoopbackPort;
using testing::PollUntil;
using testing::Process;
using testing::ReadAll;
using testing::TempDir;
using testing::WaitForLog;

TEST(KubeApiCaChangeTest, ASimRestartedWithANewCaIsTrustedWithoutRestartingTheAggregator) {
  if (!testing::FindOnPath("kubectl")) GTEST_SKIP() << "kubectl is not installed; skipping";
  const TempDir scratch("kubestat-ca-change-it");
  const std::filesystem::path& dir = scratch.path();
  const int port = FreeLoopbackPort();
  std::vector<std::string> sim = testing::SimFlags(dir, 3, 21, FreeLoopbackPort());
  sim.push_back("--apiserver-tls");
  sim.push_back("--metrics-backend=http://127.0.0.1:" + std::to_string(port));
  const auto kubeconfig = [&dir] { return ReadAll((dir / "kubeconfig").string()); };

  std::optional<Process> simulator;
  simulator.emplace(KUBESTAT_SIM_BINARY, sim, dir / "sim-1.log");
  ASSERT_TRUE(WaitForLog(dir / "sim-1.log", "READY", std::chrono::seconds(60)))
      << ReadAll((dir / "sim-1.log").string());
  const std::string first_config = kubeconfig();
  ASSERT_NE(first_config.find("https://"), std::string::npos) << first_config;

  Process aggregator(KUBESTAT_AGGREGATOR_BINARY,
                     testing::SimAggregatorFlags(dir, port, dir / "store", "1s", "500ms"),
                     dir / "aggregator.log");
  const auto log = [&dir] { return ReadAll((dir / "aggregator.log").string()); };
  ASSERT_TRUE(testing::ServesFreshThroughKubectl(dir, std::chrono::seconds(60))) << log();

  // The same port, a new CA and new kubelet ports.
  ASSERT_EQ(simulator->Signal(SIGTERM, std::chrono::seconds(20)), 0);
  simulator.reset();
  simulator.emplace(KUBESTAT_SIM_BINARY, sim, dir / "sim-2.log");
  ASSERT_TRUE(WaitForLog(dir / "sim-2.log", "READY", std::chrono::seconds(60)))
      << ReadAll((dir / "sim-2.log").string());
  ASSERT_NE(kubeconfig(), first_config) << "the restarted sim should present a new CA";

  EXPECT_TRUE(WaitForLog(dir / "aggregator.log",
                         "the CA or client certificate changed on disk; new connections use it",
                         std::chrono::seconds(60)))
      << log();
  EXPECT_TRUE(testing::ServesFreshThroughKubectl(dir, std::chrono::seconds(60))) << log();
  EXPECT_EQ(aggregator.Signal(SIGTERM, std::chrono::seconds(20)), 0) << log();
  EXPECT_EQ(simulator->Signal(SIGTERM, std::chrono::seconds(20)), 0);
}

}  // namespace
}  // namespace kubestat
