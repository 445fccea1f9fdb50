// kubestat-sim and kubestat-aggregator as real processes on loopback, when the simulated
// kube-apiserver goes away and comes back: the simulator exits promptly on SIGTERM while
// clients hold watches and keep-alive connections open, and after it is restarted on the
// same apiserver port with its kubelets on new ports, the aggregator's discovery lists the
// nodes again (its resumed watches get 410 Expired) and every node is scraped at its new
// port within two rounds. While the simulator is away, the aggregator's /readyz fails and says
// why (kube-api, scrapes), metrics.k8s.io stops serving the stale nodes that
// metrics/v1alpha1 keeps, /livez stays 200, and all of it turns back when it returns.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "harness.h"
#include "http/raw_client.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat {
namespace {

using testing::FreeLoopbackPort;
using testing::MetricValue;
using testing::PollUntil;
using testing::Process;
using testing::RawClient;
using testing::ReadAll;
using testing::TempDir;
using testing::WaitForLog;

constexpr int kNodes = 5;

// A small simulated cluster whose fake kube-apiserver listens on `apiserver_port`.
std::vector<std::string> SimArgs(const std::filesystem::path& dir, int apiserver_port) {
  return testing::SimFlags(dir, kNodes, 7, apiserver_port);
}

// The port of node `node`'s kubelet as the simulator logged it ("kubelet node-000N
// http://127.0.0.1:PORT"), or 0.
int LoggedPort(const std::string& log, int node) {
  std::smatch match;
  const std::regex line("kubelet node-0*" + std::to_string(node) +
                        " http://127\\.0\\.0\\.1:(\\d+)\n");
  if (!std::regex_search(log, match, line)) return 0;
  return std::stoi(match[1].str());
}

// Round number -> nodes ok, from the aggregator's "round N: K/T nodes ok" log lines.
std::map<int, int> RoundsOk(const std::string& log) {
  std::map<int, int> rounds;
  const std::regex line(R"re(round (\d+): (\d+)/(\d+) nodes ok)re");
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it) {
    rounds[std::stoi((*it)[1].str())] = std::stoi((*it)[2].str());
  }
  return rounds;
}

// How many times `needle` occurs in `text`.
int Occurrences(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

TEST(KubeApiRestartTest, SimulatorExitsPromptlyOnSigtermWithWatchesAndKeepAliveOpen) {
  const TempDir scratch("kubestat-sim-sigterm-it");
  const std::filesystem::path& dir = scratch.path();
  const int apiserver_port = FreeLoopbackPort();
  Process simulator(KUBESTAT_SIM_BINARY, SimArgs(dir, apiserver_port), dir / "sim.log");
  ASSERT_TRUE(WaitForLog(dir / "sim.log", "READY", std::chrono::seconds(60)))
      << ReadAll((dir / "sim.log").string());
  const int kubelet_port = LoggedPort(ReadAll((dir / "sim.log").string()), 0);
  ASSERT_GT(kubelet_port, 0);

  // A node watch and a pod watch whose events nobody reads, and an idle keep-alive
  // connection to a kubelet after one answer.
  RawClient node_watch(apiserver_port);
  RawClient pod_watch(apiserver_port);
  RawClient kubelet(kubelet_port);
  ASSERT_TRUE(node_watch.Send("GET /api/v1/nodes?watch=true HTTP/1.1\r\nHost: sim\r\n\r\n"));
  ASSERT_TRUE(pod_watch.Send("GET /api/v1/pods?watch=true HTTP/1.1\r\nHost: sim\r\n\r\n"));
  ASSERT_TRUE(kubelet.Send("GET /healthz HTTP/1.1\r\nHost: kubelet\r\n\r\n"));
  EXPECT_NE(node_watch.ReadHead().find(" 200 "), std::string::npos);
  EXPECT_NE(pod_watch.ReadHead().find(" 200 "), std::string::npos);
  EXPECT_EQ(kubelet.Read().code, 200);

  // A hang shows as -1 after the deadline (then the process is killed).
  EXPECT_EQ(simulator.Signal(SIGTERM, std::chrono::seconds(10)), 0)
      << ReadAll((dir / "sim.log").string());
  // Every connection was ended (what the watches sent before is read and dropped).
  bool clean = false;
  node_watch.ReadToEnd(&clean);
  EXPECT_TRUE(clean);
  pod_watch.ReadToEnd(&clean);
  EXPECT_TRUE(clean);
  EXPECT_TRUE(kubelet.WaitClosed());
}

TEST(KubeApiRestartTest, RestartedSimulatorsNewKubeletPortsAreScrapedWithinTwoRounds) {
  const TempDir scratch("kubestat-kube-api-restart-it");
  const std::filesystem::path& dir = scratch.path();
  const int apiserver_port = FreeLoopbackPort();
  std::optional<Process> simulator;
  simulator.emplace(KUBESTAT_SIM_BINARY, SimArgs(dir, apiserver_port), dir / "sim-1.log");
  ASSERT_TRUE(WaitForLog(dir / "sim-1.log", "READY", std::chrono::seconds(60)))
      << ReadAll((dir / "sim-1.log").string());
  const std::string first_log = ReadAll((dir / "sim-1.log").string());

  const int port = FreeLoopbackPort();
  Process aggregator(KUBESTAT_AGGREGATOR_BINARY,
                     testing::SimAggregatorFlags(dir, port, dir / "store", "2s", "1s"),
                     dir / "aggregator.log");
  const auto aggregator_log = [&dir] { return ReadAll((dir / "aggregator.log").string()); };
  const auto all_ok_rounds = [&] {
    int all_ok = 0;
    for (const auto& [round, ok] : RoundsOk(aggregator_log())) all_ok += ok == kNodes ? 1 : 0;
    return all_ok;
  };
  ASSERT_TRUE(PollUntil([&] { return all_ok_rounds() >= 2; }, std::chrono::seconds(60)))
      << aggregator_log();

  // The first simulator leaves while the aggregator holds its watches and keep-alive
  // connections to its kubelets.
  ASSERT_EQ(simulator->Signal(SIGTERM, std::chrono::seconds(10)), 0)
      << "the simulator did not exit on SIGTERM\n"
      << ReadAll((dir / "sim-1.log").string());
  simulator.reset();
  // Rounds fail while the kubelets are gone.
  ASSERT_TRUE(PollUntil(
      [&] {
        const std::map<int, int> rounds = RoundsOk(aggregator_log());
        return !rounds.empty() && rounds.rbegin()->second == 0;
      },
      std::chrono::seconds(60)))
      << aggregator_log();

  simulator.emplace(KUBESTAT_SIM_BINARY, SimArgs(dir, apiserver_port), dir / "sim-2.log");
  ASSERT_TRUE(WaitForLog(dir / "sim-2.log", "READY", std::chrono::seconds(60)))
      << ReadAll((dir / "sim-2.log").string());
  const std::string second_log = ReadAll((dir / "sim-2.log").string());
  // The aggregator must follow the move: the kubelets are not where they were.
  int moved = 0;
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_NE(LoggedPort(second_log, i), 0) << second_log;
    moved += LoggedPort(second_log, i) != LoggedPort(first_log, i) ? 1 : 0;
  }
  ASSERT_GT(moved, 0) << first_log << second_log;
  // The round logged last may already have started before READY, the one after it did not.
  const std::map<int, int> before = RoundsOk(aggregator_log());
  const int last_before_ready = before.empty() ? 0 : before.rbegin()->first;

  ASSERT_TRUE(PollUntil(
      [&] {
        const std::map<int, int> rounds = RoundsOk(aggregator_log());
        return !rounds.empty() && rounds.rbegin()->first >= last_before_ready + 5;
      },
      std::chrono::seconds(60)))
      << aggregator_log();
  const std::map<int, int> after = RoundsOk(aggregator_log());
  std::optional<int> first_all_ok;
  for (const auto& [round, ok] : after) {
    if (round > last_before_ready && ok == kNodes) {
      first_all_ok = round;
      break;
    }
  }
  ASSERT_TRUE(first_all_ok.has_value()) << aggregator_log();
  // Two rounds that started after READY: last_before_ready + 2 and + 3.
  EXPECT_LE(*first_all_ok, last_before_ready + 3) << aggregator_log();
  for (const auto& [round, ok] : after) {
    if (round > *first_all_ok) {
      EXPECT_EQ(ok, kNodes) << "round " << round << "\n" << aggregator_log();
    }
  }
  const std::string metrics = testing::HttpGet(port, "/metrics").value_or("");
  EXPECT_GE(MetricValue(metrics, "kubestat_scrapes_total{outcome=\"success\",reason=\"none\"}"),
            4 * kNodes)
      << metrics;

  EXPECT_EQ(aggregator.Signal(SIGTERM, std::chrono::seconds(20)), 0) << "no clean shutdown";
  EXPECT_EQ(simulator->Signal(SIGTERM, std::chrono::seconds(10)), 0)
      << ReadAll((dir / "sim-2.log").string());
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

TEST(KubeApiRestartTest, ReadyzSaysWhyWhileTheSimulatorIsAwayAndPassesWhenItIsBack) {
  const TempDir scratch("kubestat-health-it");
  const std::filesystem::path& dir = scratch.path();
  const int apiserver_port = FreeLoopbackPort();
  std::optional<Process> simulator;
  simulator.emplace(KUBESTAT_SIM_BINARY, SimArgs(dir, apiserver_port), dir / "sim-1.log");
  ASSERT_TRUE(WaitForLog(dir / "sim-1.log", "READY", std::chrono::seconds(60)))
      << ReadAll((dir / "sim-1.log").string());

  const int port = FreeLoopbackPort();
  Process aggregator(
      KUBESTAT_AGGREGATOR_BINARY,
      testing::SimAggregatorFlags(
          dir, port, dir / "store", "1s", "500ms",
          {"--kube-api-unready-after=2s", "--scrape-unready-rounds=2", "--metrics-max-age=3s"}),
      dir / "aggregator.log");
  const auto aggregator_log = [&dir] { return ReadAll((dir / "aggregator.log").string()); };
  const auto get = [port](const std::string& path) {
    return testing::HttpGetReply(port, path).value_or(testing::HttpReply{});
  };
  const auto metrics_k8s_io_nodes = [&] {
    return Occurrences(get("/apis/metrics.k8s.io/v1beta1/nodes").body, "\"usage\":");
  };
  const auto v1alpha1_nodes = [&] {
    return Occurrences(get("/apis/metrics/v1alpha1/nodes").body, "\"machine\":");
  };
  const std::string passed =
      "[+]ping ok\n[+]startup ok\n[+]store-writes ok\n[+]kube-api ok\n"
      "[+]scrapes ok\n[+]store-durability ok\nreadyz check passed\n";
  ASSERT_TRUE(PollUntil(
      [&] { return get("/readyz?verbose").body == passed && metrics_k8s_io_nodes() == kNodes; },
      std::chrono::seconds(60)))
      << get("/readyz?verbose").body << aggregator_log();
  EXPECT_EQ(get("/readyz").body, "ok");

  // The kube API and every kubelet go away.
  ASSERT_EQ(simulator->Signal(SIGTERM, std::chrono::seconds(10)), 0);
  simulator.reset();
  testing::HttpReply ready;
  ASSERT_TRUE(PollUntil(
      [&] {
        ready = get("/readyz?verbose");
        return ready.body.find("[-]kube-api failed") != std::string::npos &&
               ready.body.find("[-]scrapes failed") != std::string::npos;
      },
      std::chrono::seconds(60)))
      << ready.body << aggregator_log();
  EXPECT_EQ(ready.code, 503);
  EXPECT_NE(ready.body.find("[-]kube-api failed: the kube API has not answered for "),
            std::string::npos)
      << ready.body;
  EXPECT_NE(ready.body.find("[-]scrapes failed: no node scraped in the last "), std::string::npos)
      << ready.body;
  EXPECT_NE(ready.body.find("[+]store-writes ok\n"), std::string::npos) << ready.body;
  EXPECT_TRUE(ready.body.ends_with("readyz check failed")) << ready.body;
  // Without ?verbose the reasons are withheld, as kube-apiserver withholds them.
  const testing::HttpReply plain = get("/readyz");
  EXPECT_EQ(plain.code, 503);
  EXPECT_NE(plain.body.find("[-]kube-api failed: reason withheld\n"), std::string::npos)
      << plain.body;
  // A restart would not bring the peers back: the process is live.
  const testing::HttpReply live = get("/livez?verbose");
  EXPECT_EQ(live.code, 200) << live.body;
  EXPECT_NE(live.body.find("[+]scrape-rounds ok\nlivez check passed"), std::string::npos)
      << live.body;
  // metrics.k8s.io drops the nodes nobody refreshed; metrics/v1alpha1 keeps them.
  ASSERT_TRUE(PollUntil([&] { return metrics_k8s_io_nodes() == 0; }, std::chrono::seconds(30)))
      << get("/apis/metrics.k8s.io/v1beta1/nodes").body;
  EXPECT_EQ(get("/apis/metrics.k8s.io/v1beta1/nodes/node-0000").code, 404);
  EXPECT_EQ(v1alpha1_nodes(), kNodes);
  EXPECT_NE(aggregator_log().find("readyz check kube-api failed: the kube API has not answered"),
            std::string::npos)
      << aggregator_log();
  EXPECT_NE(aggregator_log().find("readyz check scrapes failed: no node scraped"),
            std::string::npos)
      << aggregator_log();
  const std::string metrics = testing::HttpGet(port, "/metrics").value_or("");
  EXPECT_EQ(MetricValue(metrics,
                        "kubestat_health_check_failures_total{check=\"kube-api\","
                        "endpoint=\"readyz\"}"),
            1)
      << metrics;
  EXPECT_EQ(MetricValue(metrics,
                        "kubestat_health_check_failing{check=\"scrapes\","
                        "endpoint=\"readyz\"}"),
            1)
      << metrics;

  // Back: ready again, with fresh nodes.
  simulator.emplace(KUBESTAT_SIM_BINARY, SimArgs(dir, apiserver_port), dir / "sim-2.log");
  ASSERT_TRUE(WaitForLog(dir / "sim-2.log", "READY", std::chrono::seconds(60)))
      << ReadAll((dir / "sim-2.log").string());
  ASSERT_TRUE(PollUntil(
      [&] { return get("/readyz?verbose").body == passed && metrics_k8s_io_nodes() == kNodes; },
      std::chrono::seconds(60)))
      << get("/readyz?verbose").body << aggregator_log();
  EXPECT_NE(aggregator_log().find("readyz check kube-api passes again, after "), std::string::npos)
      << aggregator_log();
  EXPECT_NE(aggregator_log().find("readyz check scrapes passes again, after "), std::string::npos)
      << aggregator_log();
  EXPECT_EQ(aggregator.Signal(SIGTERM, std::chrono::seconds(20)), 0) << "no clean shutdown";
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kubestat
