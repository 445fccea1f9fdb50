// kubestat-sim (200 nodes × 10 pods, pods churning; 20 nodes under the sanitizers) and
// kubestat-aggregator as real processes on loopback, 2 s resolution, 1 s kubelet timeout: over
// several rounds, what metrics.k8s.io serves is fresh and whole.
//   - Fresh: every node and pod served is at most one resolution plus the kubelet timeout
//     older than its node's newest scrape (the scrape dump, written after each ingest, names
//     the sample times the aggregator took in). A snapshot that stopped being published
//     fails at once: its objects fall further behind every round.
//   - Whole: the lists hold every node scraped, and every pod that a GET answers.
// The bound is on the data's age against the aggregator's own scrapes, not on how long the
// test takes: a slow machine scrapes later, and the answers must follow.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness.h"
#include "kubestat/core/time.h"
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
using testing::ReadAll;
using testing::TempDir;
using testing::WaitForLog;

// 200 nodes; fewer in a sanitized build (tests/integration/CMakeLists.txt), whose aggregator
// runs several times slower.
#ifndef KUBESTAT_FRESHNESS_NODES
#define KUBESTAT_FRESHNESS_NODES 200
#endif
constexpr int kNodes = KUBESTAT_FRESHNESS_NODES;
constexpr int kPodsPerNode = 10;
constexpr auto kResolution = std::chrono::seconds(2);
constexpr auto kKubeletTimeout = std::chrono::seconds(1);
constexpr int kSamples = 5;
constexpr int kGetEvery = std::max(1, kNodes* kPodsPerNode / 20);  // about 20 GETs a sample

using PodKey = std::pair<std::string, std::string>;  // (namespace, name)

// What the scrape dump says: each node's newest sample time, and the node of each pod (as of
// its newest scrape).
struct Scraped {
  std::map<std::string, Timestamp> newest;
  std::map<PodKey, std::string> pod_node;
};

Scraped ReadDump(const std::filesystem::path& path) {
  Scraped scraped;
  std::ifstream in(path);
  simdjson::dom::parser parser;
  for (std::string line; std::getline(in, line);) {
    simdjson::dom::element scrape;
    // The last line may still be being written.
    if (parser.parse(line).get(scrape) != simdjson::SUCCESS) continue;
    std::string_view node, time;
    if (scrape["node"].get(node) != simdjson::SUCCESS) continue;
    if (scrape.at_pointer("/cpu/time").get(time) != simdjson::SUCCESS) continue;
    absl::StatusOr<Timestamp> at = ParseRfc3339(time);
    if (!at.ok()) continue;
    Timestamp& newest = scraped.newest[std::string(node)];
    newest = std::max(newest, *at);
    simdjson::dom::array pods;
    if (scrape["pods"].get(pods) != simdjson::SUCCESS) continue;
    for (simdjson::dom::element pod : pods) {
      std::string_view ns, name;
      if (pod["namespace"].get(ns) == simdjson::SUCCESS &&
          pod["name"].get(name) == simdjson::SUCCESS) {
        scraped.pod_node[{std::string(ns), std::string(name)}] = std::string(node);
      }
    }
  }
  return scraped;
}

// One list answer: each item's key and timestamp.
struct Served {
  std::map<std::string, Timestamp> nodes;
  std::map<PodKey, Timestamp> pods;
};

void ReadItems(const std::string& body, bool pods, Served* served) {
  simdjson::dom::parser parser;
  simdjson::dom::element list;
  ASSERT_EQ(parser.parse(body).get(list), simdjson::SUCCESS) << body.substr(0, 300);
  simdjson::dom::array items;
  ASSERT_EQ(list["items"].get(items), simdjson::SUCCESS);
  for (simdjson::dom::element item : items) {
    std::string_view name, ns, time;
    ASSERT_EQ(item.at_pointer("/metadata/name").get(name), simdjson::SUCCESS);
    ASSERT_EQ(item["timestamp"].get(time), simdjson::SUCCESS);
    absl::StatusOr<Timestamp> at = ParseRfc3339(time);
    ASSERT_TRUE(at.ok()) << time;
    if (pods) {
      ASSERT_EQ(item.at_pointer("/metadata/namespace").get(ns), simdjson::SUCCESS);
      served->pods[{std::string(ns), std::string(name)}] = *at;
    } else {
      served->nodes[std::string(name)] = *at;
    }
  }
}

TEST(FreshnessIntegrationTest, EveryObjectServedIsWithinARoundOfItsNewestScrapeAndListsAreWhole) {
  const TempDir scratch("kubestat-freshness-it");
  const std::filesystem::path& dir = scratch.path();
  Process simulator(
      KUBESTAT_SIM_BINARY,
      {"--nodes=" + std::to_string(kNodes), "--pods-per-node=" + std::to_string(kPodsPerNode),
       "--seed=11", "--pod-lifetime=10m", "--kubelet-address-mode=ports", "--kubelet-port=0",
       "--kubeconfig-out=" + (dir / "kubeconfig").string()},
      dir / "sim.log");
  ASSERT_TRUE(WaitForLog(dir / "sim.log", "READY", std::chrono::seconds(60)))
      << ReadAll((dir / "sim.log").string());

  const int port = FreeLoopbackPort();
  const std::vector<std::string> args = testing::SimAggregatorFlags(
      dir, port, dir / "store", "2s", "1s", {"--scrape-dump=" + (dir / "dump.jsonl").string()});
  Process aggregator(KUBESTAT_AGGREGATOR_BINARY, args, dir / "aggregator.log");
  auto aggregator_log = [&] { return ReadAll((dir / "aggregator.log").string()); };
  auto rounds = [&] {
    return MetricValue(testing::HttpGet(port, "/metrics").value_or(""),
                       "kubestat_scrape_rounds_total");
  };
  // Two rounds: every node has a cpu rate, so every node is servable.
  ASSERT_TRUE(PollUntil([&] { return rounds() >= 3; }, std::chrono::seconds(120)))
      << aggregator_log();

  // metrics.k8s.io gives timestamps to the second (RFC 3339 without a fraction, as
  // metrics-server does): one second more for the truncation.
  const Duration bound = kResolution + kKubeletTimeout + std::chrono::seconds(1);
  int pods_checked = 0;
  int gets_checked = 0;
  for (int sample = 0; sample < kSamples; ++sample) {
    const double round = rounds();
    ASSERT_TRUE(PollUntil([&] { return rounds() > round; }, std::chrono::seconds(60)))
        << aggregator_log();
    // A few single GETs first: whatever they return, the lists taken after must hold.
    std::set<PodKey> got;
    const Scraped before = ReadDump(dir / "dump.jsonl");
    int asked = 0;
    for (const auto& [pod, node] : before.pod_node) {
      if (asked++ % kGetEvery != 0) continue;
      std::optional<testing::HttpReply> reply = testing::HttpGetReply(
          port, "/apis/metrics.k8s.io/v1beta1/namespaces/" + pod.first + "/pods/" + pod.second);
      ASSERT_TRUE(reply.has_value());
      if (reply->code == 200) got.insert(pod);
    }
    Served served;
    std::optional<std::string> nodes = testing::HttpGet(port, "/apis/metrics.k8s.io/v1beta1/nodes");
    std::optional<std::string> pods = testing::HttpGet(port, "/apis/metrics.k8s.io/v1beta1/pods");
    ASSERT_TRUE(nodes.has_value() && pods.has_value());
    ReadItems(*nodes, false, &served);
    ReadItems(*pods, true, &served);
    // The dump read after the answers: it holds at least every scrape they could show.
    const Scraped scraped = ReadDump(dir / "dump.jsonl");

    EXPECT_EQ(served.nodes.size(), static_cast<size_t>(kNodes)) << "sample " << sample;
    for (const auto& [node, at] : served.nodes) {
      auto newest = scraped.newest.find(node);
      ASSERT_NE(newest, scraped.newest.end()) << node;
      EXPECT_GE(at + bound, newest->second)
          << "sample " << sample << ": node " << node << " served at " << FormatRfc3339Nano(at)
          << ", newest scrape " << FormatRfc3339Nano(newest->second);
    }
    for (const auto& [pod, at] : served.pods) {
      auto node = scraped.pod_node.find(pod);
      ASSERT_NE(node, scraped.pod_node.end()) << pod.first << "/" << pod.second;
      EXPECT_GE(at + bound, scraped.newest.at(node->second))
          << "sample " << sample << ": pod " << pod.first << "/" << pod.second << " served at "
          << FormatRfc3339Nano(at) << ", newest scrape of " << node->second << " "
          << FormatRfc3339Nano(scraped.newest.at(node->second));
      ++pods_checked;
    }
    for (const PodKey& pod : got) {
      if (served.pods.contains(pod)) {
        ++gets_checked;
        continue;
      }
      // Only a pod deleted between the GET and the list may be missing: it is gone now.
      std::optional<testing::HttpReply> again = testing::HttpGetReply(
          port, "/apis/metrics.k8s.io/v1beta1/namespaces/" + pod.first + "/pods/" + pod.second);
      ASSERT_TRUE(again.has_value());
      EXPECT_EQ(again->code, 404) << pod.first << "/" << pod.second
                                  << " is served alone but missing from the list";
    }
  }
  // Most pods are servable every time (a new pod needs two scrapes for a rate).
  EXPECT_GT(pods_checked, kSamples * kNodes * kPodsPerNode * 9 / 10);
  EXPECT_GT(gets_checked, kSamples * 10);
}

}  // namespace
}  // namespace kubestat
