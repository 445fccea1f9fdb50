// kubestat-sim (20 nodes, six of them faulty) and kubestat-aggregator as real processes on
// loopback: every healthy node is scraped every round with exactly the values the
// simulator's model gives at the scraped timestamps, and every faulty node is counted as a
// failure with the right reason, in the counters and in each round's log line.
#define _TURN_OFF_PLATFORM_STRING
#include <arpa/inet.h>
#include <cpprest/http_client.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "kubestat/core/heap.h"
#include "kubestat/core/time.h"
#include "kubestat/sim/flags.h"
#include "kubestat/sim/model.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat {
namespace {

using testing::FreeLoopbackPort;
using testing::MetricValue;
using testing::OpenPlainAccessFlags;
using testing::PollUntil;
using testing::Process;
using testing::ReadAll;
using testing::TempDir;
using testing::WaitForLog;

std::string HttpGet(int port, const std::string& path) {
  return testing::HttpGet(port, path).value_or("");
}

struct Usage {
  std::optional<uint64_t> cumulative, nano_cores, working_set;
  std::optional<std::string> start;
};

Usage UsageOf(simdjson::dom::element object) {
  Usage usage;
  uint64_t value;
  std::string_view text;
  if (object.at_pointer("/cpu/usageCoreNanoSeconds").get(value) == simdjson::SUCCESS)
    usage.cumulative = value;
  if (object.at_pointer("/cpu/usageNanoCores").get(value) == simdjson::SUCCESS)
    usage.nano_cores = value;
  if (object.at_pointer("/memory/workingSetBytes").get(value) == simdjson::SUCCESS)
    usage.working_set = value;
  if (object["startTime"].get(text) == simdjson::SUCCESS) usage.start = std::string(text);
  return usage;
}

void ExpectUsage(const Usage& got, const sim::ResourceUsage& want, const std::string& what) {
  EXPECT_EQ(got.cumulative, want.usage_core_nano_seconds) << what;
  EXPECT_EQ(got.nano_cores, want.usage_nano_cores) << what;
  EXPECT_EQ(got.working_set, want.working_set_bytes) << what;
  EXPECT_EQ(got.start, FormatRfc3339Nano(want.start_time)) << what;
}

// The aggregator against the simulator in `dir` (plain-HTTP kubelets by InternalIP, its
// scrape dump in dir/dump.jsonl, open plain access on `port`) with `extra` flags.
std::vector<std::string> AggregatorArgs(const std::filesystem::path& dir, int port,
                                        const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"--kubeconfig=" + (dir / "kubeconfig").string(),
                                   "--kubelet-scheme=http",
                                   "--kubelet-preferred-address-types=InternalIP",
                                   "--kubelet-use-node-status-port",
                                   "--listen-address=127.0.0.1",
                                   "--scrape-dump=" + (dir / "dump.jsonl").string(),
                                   "--grpc-port=0",
                                   "--storage-dir=" + (dir / "store").string()};
  args.insert(args.end(), extra.begin(), extra.end());
  for (std::string& flag : OpenPlainAccessFlags(port, dir)) args.push_back(flag);
  return args;
}

TEST(ScrapeIntegrationTest, HealthyNodesScrapedExactlyAndFaultyNodesCountedByReason) {
  const TempDir scratch("kubestat-scrape-it");
  const std::filesystem::path& dir = scratch.path();
  const std::map<std::string, std::string> faults = {
      {"node-0003", "timeout"}, {"node-0005", "bad_timestamp"}, {"node-0007", "http_500"},
      {"node-0011", "decode"},  {"node-0015", "too_large"},     {"node-0018", "timeout"}};
  const std::vector<std::string> sim_args = {
      "--nodes=20",
      "--pods-per-node=6",
      "--seed=7",
      "--kubelet-address-mode=ports",
      "--kubelet-port=0",
      "--kubeconfig-out=" + (dir / "kubeconfig").string(),
      "--faults=node-0003=timeout,node-0005=zero-timestamp,node-0007=http500,node-0011=garbage,"
      "node-0015=oversized,node-0018=slowdrip"};
  absl::StatusOr<sim::SimulatorFlags> sim_flags = sim::ParseSimulatorFlags(sim_args);
  ASSERT_TRUE(sim_flags.ok()) << sim_flags.status();
  absl::StatusOr<sim::ClusterModel> model = sim::ClusterModel::Create(sim_flags->options.model);
  ASSERT_TRUE(model.ok()) << model.status();

  Process simulator(KUBESTAT_SIM_BINARY, sim_args, (dir / "sim.log").string());
  ASSERT_TRUE(WaitForLog(dir / "sim.log", "READY", std::chrono::seconds(60)))
      << ReadAll((dir / "sim.log").string());

  const int port = FreeLoopbackPort();
  const std::string dump = (dir / "dump.jsonl").string();
  const std::vector<std::string> aggregator_args = AggregatorArgs(
      dir, port,
      {"--metric-resolution=2s", "--kubelet-timeout=1s", "--kubelet-max-response-bytes=4194304"});
  Process aggregator(KUBESTAT_AGGREGATOR_BINARY, aggregator_args,
                     (dir / "aggregator.log").string());
  // /livez is asked between polls: two nodes time out every round, which keeps each round
  // running until the kubelet timeout, yet rounds keep starting on time, so it must never
  // fail once the first round has completed.
  std::string metrics;
  int livez_checked = 0;
  std::vector<std::string> livez_failures;
  ASSERT_TRUE(PollUntil(
      [&] {
        metrics = HttpGet(port, "/metrics");
        if (MetricValue(metrics, "kubestat_scrape_rounds_total") >= 1) {
          std::optional<testing::HttpReply> live = testing::HttpGetReply(port, "/livez");
          ++livez_checked;
          if (!live || live->code != 200) livez_failures.push_back(live ? live->body : "no answer");
        }
        return MetricValue(metrics, "kubestat_scrape_rounds_total") >= 4;
      },
      std::chrono::seconds(60)))
      << ReadAll((dir / "aggregator.log").string());
  EXPECT_GT(livez_checked, 10);
  EXPECT_TRUE(livez_failures.empty())
      << livez_failures.size() << " of " << livez_checked
      << " /livez checks failed, the first: " << livez_failures.front();
  EXPECT_EQ(HttpGet(port, "/healthz"), "ok");
  const double rounds = MetricValue(metrics, "kubestat_scrape_rounds_total");
  // The window memory is counted after the first round (then once a minute): every series
  // holds at least its ring buffers.
  const double series = MetricValue(metrics, "kubestat_series");
  EXPECT_GT(series, 0);
  const double window_memory = MetricValue(metrics, "kubestat_window_memory_bytes");
  EXPECT_GE(window_memory, 100 * series) << metrics;
  // The store's memtables hold the rounds written since start; the allocator's blocks in use
  // hold the windows and everything else (absent where a sanitizer's allocator stands in).
  EXPECT_GT(MetricValue(metrics, "kubestat_store_memory_bytes"), 0) << metrics;
  if (ReadHeapFigures()) {
    EXPECT_GT(MetricValue(metrics, "kubestat_heap_in_use_bytes"), window_memory) << metrics;
  }
  // The resident set is read with them, after the allocator's free pages are given back.
  EXPECT_GT(MetricValue(metrics, "kubestat_resident_memory_bytes"), window_memory) << metrics;
  EXPECT_GE(MetricValue(metrics, "kubestat_heap_released_bytes_total"), 0) << metrics;
  ASSERT_EQ(aggregator.Signal(SIGTERM, std::chrono::seconds(20)), 0) << "no clean shutdown";
  ASSERT_TRUE(simulator.Running());

  // Failures: each faulty node with its reason, and no healthy node failing.
  for (const auto& [node, reason] : faults) {
    // A node that fails fast fails every round. One that times out can still be in flight
    // when the next round starts (the kubelet timeout plus the stagger may pass the
    // resolution on a slow machine); that round skips it as in flight, so it fails at
    // least every other round.
    const double at_least =
        reason == "timeout" ? std::max(1.0, std::floor((rounds - 1) / 2)) : rounds - 1;
    EXPECT_GE(MetricValue(metrics, "kubestat_node_scrape_failures_total{node=\"" + node +
                                       "\",reason=\"" + reason + "\"}"),
              at_least)
        << node << "\n"
        << metrics;
  }
  // The node whose kubelet stamps its readings 0 is a failure of every round's log line.
  const std::string log = ReadAll((dir / "aggregator.log").string());
  std::regex round_line(R"re(round \d+: \d+/20 nodes ok, [^\n]*)re");
  int round_lines = 0, bad_timestamp_lines = 0;
  for (std::sregex_iterator it(log.begin(), log.end(), round_line), end; it != end; ++it) {
    ++round_lines;
    if (it->str().find("bad_timestamp=1") != std::string::npos) ++bad_timestamp_lines;
  }
  EXPECT_GE(round_lines, rounds) << log;
  EXPECT_EQ(bad_timestamp_lines, round_lines) << log;
  std::regex failure_line(
      R"re(kubestat_node_scrape_failures_total\{node="([^"]+)",reason="([^"]+)"\})re");
  for (std::sregex_iterator it(metrics.begin(), metrics.end(), failure_line), end; it != end;
       ++it) {
    EXPECT_TRUE(faults.count((*it)[1].str())) << "healthy node failed: " << (*it)[0].str();
  }

  // Every healthy node was scraped every round, with exactly the model's values.
  std::map<std::string, int> scrapes;
  simdjson::dom::parser parser;
  std::ifstream lines(dump);
  std::string line;
  int pods_checked = 0;
  while (std::getline(lines, line)) {
    simdjson::dom::element scrape;
    ASSERT_EQ(parser.parse(line).get(scrape), simdjson::SUCCESS) << line;
    std::string node_name(scrape["node"].get_string().value());
    ++scrapes[node_name];
    ASSERT_FALSE(faults.count(node_name)) << "faulty node scraped: " << node_name;
    const int node = model->NodeIndex(node_name);
    ASSERT_GE(node, 0) << node_name;
    absl::StatusOr<Timestamp> time =
        ParseRfc3339(std::string(scrape.at_pointer("/cpu/time").get_string().value()));
    ASSERT_TRUE(time.ok());
    sim::NodeSnapshot want = model->Snapshot(node, *time);
    ExpectUsage(UsageOf(scrape), want.usage, node_name);
    simdjson::dom::array system_containers = scrape["systemContainers"].get_array();
    ASSERT_EQ(system_containers.size(), 3u);
    for (simdjson::dom::element c : system_containers) {
      std::string_view name = c["name"].get_string().value();
      size_t which =
          std::find(sim::kSystemContainerNames.begin(), sim::kSystemContainerNames.end(), name) -
          sim::kSystemContainerNames.begin();
      ASSERT_LT(which, 3u) << name;
      ExpectUsage(UsageOf(c), want.system_containers[which], node_name + "/" + std::string(name));
    }
    std::map<std::string, const sim::PodSnapshot*> want_pods;
    for (const sim::PodSnapshot& pod : want.pods)
      want_pods[pod.pod.namespace_name + "/" + pod.pod.name] = &pod;
    simdjson::dom::array pods = scrape["pods"].get_array();
    ASSERT_EQ(pods.size(), want.pods.size()) << node_name;
    for (simdjson::dom::element pod : pods) {
      std::string key = std::string(pod["namespace"].get_string().value()) + "/" +
                        std::string(pod["name"].get_string().value());
      auto it = want_pods.find(key);
      ASSERT_NE(it, want_pods.end()) << key;
      const sim::PodSnapshot& want_pod = *it->second;
      EXPECT_EQ(pod["uid"].get_string().value(), want_pod.pod.uid);
      simdjson::dom::array containers = pod["containers"].get_array();
      ASSERT_EQ(containers.size(), want_pod.containers.size()) << key;
      for (simdjson::dom::element c : containers) {
        std::string_view name = c["name"].get_string().value();
        const sim::ContainerSnapshot* match = nullptr;
        for (const sim::ContainerSnapshot& wc : want_pod.containers) {
          if (want_pod.pod.containers[wc.index].name == name) match = &wc;
        }
        ASSERT_NE(match, nullptr) << key << "/" << name;
        ExpectUsage(UsageOf(c), match->usage, key + "/" + std::string(name));
      }
      ++pods_checked;
    }
  }
  for (int i = 0; i < 20; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "node-%04d", i);
    if (faults.count(name)) continue;
    EXPECT_GE(scrapes[name], rounds) << name << " missed a round";
    EXPECT_EQ(MetricValue(metrics, "kubestat_last_successful_scrape_timestamp_seconds{node=\"" +
                                       std::string(name) + "\"}") > 0,
              true)
        << name;
  }
  EXPECT_GE(pods_checked, static_cast<int>(rounds * (20 - faults.size()) * 6));
  simulator.Signal(SIGTERM, std::chrono::seconds(20));
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

// Returns node `name`'s "timestamp" in a metrics.k8s.io NodeMetricsList, if it is there.
std::optional<Timestamp> NodeTimestampInList(const std::string& list, const std::string& name) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(list).get(root) != simdjson::SUCCESS) return std::nullopt;
  simdjson::dom::array items;
  if (root["items"].get(items) != simdjson::SUCCESS) return std::nullopt;
  for (simdjson::dom::element item : items) {
    std::string_view item_name, timestamp;
    if (item.at_pointer("/metadata/name").get(item_name) != simdjson::SUCCESS) continue;
    if (item_name != name || item["timestamp"].get(timestamp) != simdjson::SUCCESS) continue;
    absl::StatusOr<Timestamp> t = ParseRfc3339(timestamp);
    if (t.ok()) return *t;
  }
  return std::nullopt;
}

// The sample times of `node`'s scrapes in the scrape dump, in scrape order.
std::vector<Timestamp> ScrapeTimesInDump(const std::string& dump, const std::string& node) {
  std::vector<Timestamp> times;
  simdjson::dom::parser parser;
  std::istringstream lines(ReadAll(dump));
  std::string line;
  while (std::getline(lines, line)) {
    simdjson::dom::element scrape;
    std::string_view name, time;
    if (parser.parse(line).get(scrape) != simdjson::SUCCESS) continue;
    if (scrape["node"].get(name) != simdjson::SUCCESS || name != node) continue;
    if (scrape.at_pointer("/cpu/time").get(time) != simdjson::SUCCESS) continue;
    if (absl::StatusOr<Timestamp> t = ParseRfc3339(time); t.ok()) times.push_back(*t);
  }
  return times;
}

// A node's new samples are listed while its round still scrapes (a node that times out keeps
// every round open until the kubelet timeout), not only when the round completes. The proof
// needs no clock: node-0000 is scraped once per round, so its k-th sample in the scrape dump
// belongs to round k or a later one; a list that holds it, followed by a read of
// kubestat_scrape_rounds_total below k, was served before round k completed. (A round is
// counted before its end-of-round publication starts.)
TEST(ScrapeIntegrationTest, NewSamplesAreListedWhileTheirRoundStillScrapes) {
  const TempDir scratch("kubestat-publish-it");
  const std::filesystem::path& dir = scratch.path();
  Process simulator(KUBESTAT_SIM_BINARY,
                    {"--nodes=4", "--pods-per-node=3", "--seed=3", "--kubelet-address-mode=ports",
                     "--kubelet-port=0", "--kubeconfig-out=" + (dir / "kubeconfig").string(),
                     "--faults=node-0003=timeout"},
                    (dir / "sim.log").string());
  ASSERT_TRUE(WaitForLog(dir / "sim.log", "READY", std::chrono::seconds(60)))
      << ReadAll((dir / "sim.log").string());
  const int port = FreeLoopbackPort();
  const std::string dump = (dir / "dump.jsonl").string();
  // Rounds every 8 s whose scrapes start within 2 s; node-0003 holds each one open for 4 s.
  const std::vector<std::string> aggregator_args =
      AggregatorArgs(dir, port,
                     {"--metric-resolution=8s", "--kubelet-timeout=4s", "--scrape-stagger=0.25",
                      "--publish-interval=100ms"});
  Process aggregator(KUBESTAT_AGGREGATOR_BINARY, aggregator_args,
                     (dir / "aggregator.log").string());

  int lists_read = 0;
  std::string seen;
  const bool listed_early = PollUntil(
      [&] {
        const std::string list = HttpGet(port, "/apis/metrics.k8s.io/v1beta1/nodes");
        const double rounds =
            MetricValue(HttpGet(port, "/metrics"), "kubestat_scrape_rounds_total");
        const std::optional<Timestamp> listed = NodeTimestampInList(list, "node-0000");
        if (!listed || rounds < 1) return false;
        ++lists_read;
        // The dump line is written just after the node's views are queued for reading.
        std::vector<Timestamp> times;
        PollUntil(
            [&] {
              times = ScrapeTimesInDump(dump, "node-0000");
              return std::find(times.begin(), times.end(), *listed) != times.end();
            },
            std::chrono::seconds(5));
        const auto at = std::find(times.begin(), times.end(), *listed);
        if (at == times.end()) return false;
        const double k = static_cast<double>(at - times.begin()) + 1;
        seen = "sample " + std::to_string(static_cast<int>(k)) + " listed with " +
               std::to_string(static_cast<int>(rounds)) + " rounds complete";
        return rounds < k;
      },
      std::chrono::seconds(90), std::chrono::milliseconds(50));
  EXPECT_TRUE(listed_early) << "after " << lists_read << " lists, last: " << seen << "\n"
                            << ReadAll((dir / "aggregator.log").string());
  EXPECT_GE(MetricValue(HttpGet(port, "/metrics"),
                        "kubestat_query_snapshot_publishes_total{trigger=\"paced\"}"),
            1);
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kubestat
