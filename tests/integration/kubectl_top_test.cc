// `kubectl top` against the simulated cluster, end to end: kubestat-sim's fake
// kube-apiserver proxies metrics.k8s.io to a real kubestat-aggregator (as the aggregation
// layer does), and the real kubectl reads nodes and pods through it. What kubectl prints
// must be the aggregator's own figures, for every node and pod, with label selection. The
// aggregator gzips every answer for clients that accept it, as kubectl does, so kubectl
// decodes the gzip form through the proxy. kubectl asks metrics.k8s.io for the Kubernetes
// protobuf encoding first ("Accept: application/vnd.kubernetes.protobuf, */*"), so what it
// prints was decoded from protobuf: its -v=8 log shows the Accept it sent and the
// Content-Type it got, the aggregator counts the answers by content type, and curl's copy of
// the same answer decodes with the generated classes to the nodes the JSON lists.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/metrics_encodings.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat {
namespace {

using testing::FindOnPath;
using testing::FreeLoopbackPort;
using testing::HttpGet;
using testing::MetricValue;
using testing::OpenPlainAccessFlags;
using testing::PollUntil;
using testing::Process;
using testing::ReadAll;
using testing::TempDir;
using testing::WaitForLog;

struct Usage {
  int64_t millicores = 0;  // as kubectl prints cpu: rounded up to whole millicores
  int64_t mebibytes = 0;   // as kubectl prints memory: whole MiB, rounded down
};

// Parses a Quantity the aggregator writes in canonical form ("544300039n", "120m", "2",
// "1458049Ki", "314058342") into nanounits. Enough for this test's values.
double QuantityValue(std::string_view q) {
  static const std::map<std::string, double> kSuffix = {
      {"n", 1e-9}, {"u", 1e-6}, {"m", 1e-3},  {"", 1},           {"k", 1e3},
      {"M", 1e6},  {"G", 1e9},  {"Ki", 1024}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}};
  size_t end = 0;
  while (end < q.size() && (std::isdigit(static_cast<unsigned char>(q[end])) || q[end] == '.')) {
    ++end;
  }
  auto it = kSuffix.find(std::string(q.substr(end)));
  if (end == 0 || it == kSuffix.end()) return -1;
  return std::stod(std::string(q.substr(0, end))) * it->second;
}

Usage UsageOf(simdjson::dom::element usage) {
  std::string_view cpu, memory;
  Usage u;
  if (usage["cpu"].get(cpu) == simdjson::SUCCESS) {
    u.millicores = static_cast<int64_t>(std::ceil(QuantityValue(cpu) * 1000 - 1e-6));
  }
  if (usage["memory"].get(memory) == simdjson::SUCCESS) {
    u.mebibytes = static_cast<int64_t>(QuantityValue(memory) / 1048576.0);
  }
  return u;
}

// The aggregator's view through metrics.k8s.io: name (or namespace/name) → usage, and pod
// labels.
struct MetricsView {
  std::map<std::string, Usage> nodes;
  std::map<std::string, Usage> pods;  // "namespace/name" → sum of containers
  std::map<std::string, std::map<std::string, std::string>> pod_labels;
};

std::optional<MetricsView> FetchView(int port) {
  std::optional<std::string> nodes = HttpGet(port, "/apis/metrics.k8s.io/v1beta1/nodes");
  std::optional<std::string> pods = HttpGet(port, "/apis/metrics.k8s.io/v1beta1/pods");
  if (!nodes || !pods) return std::nullopt;
  MetricsView view;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(*nodes).get(doc) != simdjson::SUCCESS) return std::nullopt;
  for (simdjson::dom::element item : doc["items"].get_array()) {
    std::string_view name = item["metadata"]["name"].get_string();
    view.nodes[std::string(name)] = UsageOf(item["usage"]);
  }
  simdjson::dom::parser pod_parser;
  if (pod_parser.parse(*pods).get(doc) != simdjson::SUCCESS) return std::nullopt;
  for (simdjson::dom::element item : doc["items"].get_array()) {
    std::string key = std::string(item["metadata"]["namespace"].get_string().value()) + "/" +
                      std::string(item["metadata"]["name"].get_string().value());
    Usage sum;
    // kubectl sums the containers' quantities before rounding.
    double cpu_cores = 0, memory_bytes = 0;
    for (simdjson::dom::element c : item["containers"].get_array()) {
      std::string_view cpu, memory;
      if (c["usage"]["cpu"].get(cpu) == simdjson::SUCCESS) cpu_cores += QuantityValue(cpu);
      if (c["usage"]["memory"].get(memory) == simdjson::SUCCESS) {
        memory_bytes += QuantityValue(memory);
      }
    }
    sum.millicores = static_cast<int64_t>(std::ceil(cpu_cores * 1000 - 1e-6));
    sum.mebibytes = static_cast<int64_t>(memory_bytes / 1048576.0);
    view.pods[key] = sum;
    simdjson::dom::object labels;
    if (item["metadata"]["labels"].get(labels) == simdjson::SUCCESS) {
      for (auto [k, v] : labels) {
        view.pod_labels[key][std::string(k)] = std::string(v.get_string().value());
      }
    }
  }
  return view;
}

// The lines of a `kubectl -v=8` log about the request for `path`: from its "GET <url><path>"
// line up to the next request's; "" when there is none.
std::string RequestLog(const std::string& log, const std::string& path) {
  const size_t get = log.find(path + "\n");
  if (get == std::string::npos) return "";
  const size_t start = log.rfind("GET ", get);
  const size_t next = log.find("] GET ", get);
  return log.substr(start, next == std::string::npos ? std::string::npos : next - start);
}

// A metrics.k8s.io answer's series of `counter` with content_type and route, on "insecure".
std::string CounterSeries(const std::string& counter, const std::string& content_type,
                          const std::string& route) {
  return counter + "{content_type=\"" + content_type + "\",route=\"" + route +
         "\",server=\"insecure\"}";
}

std::vector<std::vector<std::string>> Rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::vector<std::string> row;
    for (std::string w; words >> w;) row.push_back(w);
    if (!row.empty()) rows.push_back(row);
  }
  return rows;
}

int64_t Number(const std::string& text, const std::string& suffix) {
  EXPECT_TRUE(text.size() > suffix.size() &&
              text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0)
      << text;
  return std::stoll(text.substr(0, text.size() - suffix.size()));
}

// kubectl's figure must be the aggregator's, before or after the command ran (a scrape
// round may complete in between).
void ExpectUsageMatches(const std::string& what, int64_t millicores, int64_t mebibytes,
                        const std::optional<Usage>& before, const std::optional<Usage>& after) {
  ASSERT_TRUE(before || after) << what << " is not in the aggregator's answer";
  bool matches = (before && before->millicores == millicores && before->mebibytes == mebibytes) ||
                 (after && after->millicores == millicores && after->mebibytes == mebibytes);
  EXPECT_TRUE(matches) << what << ": kubectl printed " << millicores << "m " << mebibytes
                       << "Mi; aggregator: " << (before ? before->millicores : -1) << "m "
                       << (before ? before->mebibytes : -1) << "Mi before, "
                       << (after ? after->millicores : -1) << "m "
                       << (after ? after->mebibytes : -1) << "Mi after";
}

template <typename Map>
std::optional<Usage> Find(const Map& map, const std::string& key) {
  auto it = map.find(key);
  if (it == map.end()) return std::nullopt;
  return it->second;
}

TEST(KubectlTopTest, TopNodeAndPodThroughTheApiserverShowTheAggregatorsFigures) {
  std::optional<std::string> kubectl = FindOnPath("kubectl");
  if (!kubectl) GTEST_SKIP() << "kubectl is not installed; skipping";
  TempDir dir("kubestat-kubectl");
  ASSERT_FALSE(dir.path().empty());
  const int port = FreeLoopbackPort();
  ASSERT_GT(port, 0);
  const std::string kubeconfig = (dir.path() / "kubeconfig").string();

  Process sim(KUBESTAT_SIM_BINARY,
              // 30 pods counted below: none is replaced while the test runs.
              {"--nodes=6", "--pods-per-node=5", "--seed=11", "--pod-lifetime=0",
               "--kubelet-address-mode=ports", "--kubelet-port=0", "--kubeconfig-out=" + kubeconfig,
               "--metrics-backend=http://127.0.0.1:" + std::to_string(port)},
              dir.path() / "sim.log");
  ASSERT_TRUE(WaitForLog(dir.path() / "sim.log", "READY", std::chrono::seconds(60)))
      << ReadAll(dir.path() / "sim.log");

  std::vector<std::string> aggregator_args = {"--kubeconfig=" + kubeconfig,
                                              "--kubelet-scheme=http",
                                              "--kubelet-preferred-address-types=InternalIP",
                                              "--kubelet-use-node-status-port",
                                              "--metric-resolution=4s",
                                              "--kubelet-timeout=2s",
                                              "--listen-address=127.0.0.1",
                                              "--grpc-port=0",
                                              "--gzip-min-bytes=0",
                                              "--storage-dir=" + (dir.path() / "store").string()};
  for (std::string& flag : OpenPlainAccessFlags(port, dir.path())) aggregator_args.push_back(flag);
  Process aggregator(KUBESTAT_AGGREGATOR_BINARY, aggregator_args, dir.path() / "aggregator.log");

  // Ready, and every node and pod has a cpu rate (two scrapes) and memory.
  ASSERT_TRUE(PollUntil(
      [&] {
        std::optional<MetricsView> view = FetchView(port);
        if (!view || view->nodes.size() != 6 || view->pods.size() != 30) return false;
        for (const auto& [name, usage] : view->nodes) {
          if (usage.millicores == 0) return false;
        }
        return true;
      },
      std::chrono::seconds(90)))
      << ReadAll(dir.path() / "aggregator.log");

  auto kubectl_run = [&](std::vector<std::string> args, const std::string& log) {
    args.insert(args.begin(), "--kubeconfig=" + kubeconfig);
    return testing::Run(*kubectl, args, dir.path() / log, std::chrono::seconds(60));
  };

  // kubectl top node: every node, with the aggregator's cpu and memory.
  std::optional<MetricsView> before = FetchView(port);
  testing::RunResult nodes = kubectl_run({"top", "node", "--no-headers"}, "top-node.log");
  std::optional<MetricsView> after = FetchView(port);
  ASSERT_EQ(nodes.exit_code, 0) << nodes.output;
  ASSERT_TRUE(before && after);
  std::set<std::string> node_names;
  for (const std::vector<std::string>& row : Rows(nodes.output)) {
    ASSERT_EQ(row.size(), 5u) << nodes.output;  // NAME CPU CPU% MEMORY MEMORY%
    node_names.insert(row[0]);
    ExpectUsageMatches("node " + row[0], Number(row[1], "m"), Number(row[3], "Mi"),
                       Find(before->nodes, row[0]), Find(after->nodes, row[0]));
  }
  EXPECT_EQ(node_names, (std::set<std::string>{"node-0000", "node-0001", "node-0002", "node-0003",
                                               "node-0004", "node-0005"}));
  // kubectl asked for gzip and got it (this test's own reads do not ask for it).
  std::optional<std::string> self_metrics = HttpGet(port, "/metrics");
  ASSERT_TRUE(self_metrics);
  EXPECT_GT(MetricValue(*self_metrics,
                        "kubestat_http_response_bytes_total{content_encoding=\"gzip\",route=\"/"
                        "apis/metrics.k8s.io/v1beta1/nodes\",server=\"insecure\"}"),
            0)
      << *self_metrics;

  // kubectl asked for protobuf and got it (its log, and the aggregator's counter); a kubectl
  // older than 1.22 asks for JSON and gets JSON.
  const bool asks_protobuf = testing::KubectlTopAsksProtobuf(*kubectl, dir.path());
  testing::RunResult verbose = kubectl_run({"top", "node", "-v=8"}, "top-node-v8.log");
  ASSERT_EQ(verbose.exit_code, 0) << verbose.output;
  const std::string node_request = RequestLog(verbose.output, "/apis/metrics.k8s.io/v1beta1/nodes");
  ASSERT_FALSE(node_request.empty()) << verbose.output;
  EXPECT_NE(node_request.find("Response Status: 200 OK"), std::string::npos) << node_request;
  const std::string wanted =
      asks_protobuf ? "application/vnd.kubernetes.protobuf" : "application/json";
  if (asks_protobuf) {
    EXPECT_NE(node_request.find("Accept: application/vnd.kubernetes.protobuf, */*"),
              std::string::npos)
        << node_request;
  }
  EXPECT_NE(node_request.find("Content-Type: " + wanted), std::string::npos) << node_request;
  self_metrics = HttpGet(port, "/metrics");
  ASSERT_TRUE(self_metrics);
  EXPECT_GE(MetricValue(*self_metrics, CounterSeries("kubestat_http_responses_total", wanted,
                                                     "/apis/metrics.k8s.io/v1beta1/nodes")),
            2)
      << *self_metrics;

  // The same answer as curl gets it, decoded with the generated classes: every node the JSON
  // lists, with cpu and memory.
  if (std::optional<std::string> curl = FindOnPath("curl")) {
    const std::filesystem::path body = dir.path() / "nodes.pb";
    testing::RunResult fetched = testing::Run(
        *curl,
        {"-sf", "-H", "Accept: application/vnd.kubernetes.protobuf, */*", "-o", body.string(),
         "http://127.0.0.1:" + std::to_string(port) + "/apis/metrics.k8s.io/v1beta1/nodes"},
        dir.path() / "curl.log", std::chrono::seconds(30));
    ASSERT_EQ(fetched.exit_code, 0) << fetched.output;
    absl::StatusOr<testing::Shown> shown = testing::ShownFromProtobuf(ReadAll(body));
    ASSERT_TRUE(shown.ok()) << shown.status();
    EXPECT_EQ(shown->kind, "NodeMetricsList");
    EXPECT_EQ(shown->api_version, "metrics.k8s.io/v1beta1");
    std::set<std::string> decoded;
    for (const testing::ShownObject& node : shown->items) {
      decoded.insert(node.name);
      EXPECT_EQ(node.usage.count("cpu") + node.usage.count("memory"), 2u) << node.name;
      EXPECT_GT(node.window_nanos, 0) << node.name;
    }
    EXPECT_EQ(decoded, node_names);
  }

  // kubectl top pod -A: every pod, with the sum of its containers.
  before = FetchView(port);
  testing::RunResult pods = kubectl_run({"top", "pod", "-A", "--no-headers"}, "top-pod.log");
  after = FetchView(port);
  ASSERT_EQ(pods.exit_code, 0) << pods.output;
  ASSERT_TRUE(before && after);
  std::set<std::string> pod_keys;
  for (const std::vector<std::string>& row : Rows(pods.output)) {
    ASSERT_EQ(row.size(), 4u) << pods.output;  // NAMESPACE NAME CPU MEMORY
    const std::string key = row[0] + "/" + row[1];
    pod_keys.insert(key);
    ExpectUsageMatches("pod " + key, Number(row[2], "m"), Number(row[3], "Mi"),
                       Find(before->pods, key), Find(after->pods, key));
  }
  std::set<std::string> expected_pods;
  for (const auto& [key, usage] : after->pods) expected_pods.insert(key);
  EXPECT_EQ(pod_keys.size(), 30u);
  EXPECT_EQ(pod_keys, expected_pods);
  self_metrics = HttpGet(port, "/metrics");
  ASSERT_TRUE(self_metrics);
  EXPECT_GE(MetricValue(*self_metrics, CounterSeries("kubestat_http_responses_total", wanted,
                                                     "/apis/metrics.k8s.io/v1beta1/pods")),
            1)
      << *self_metrics;

  // kubectl top pod -A -l app=<the first pod's app>: exactly the pods with that label.
  ASSERT_FALSE(after->pod_labels.empty());
  const std::string app = after->pod_labels.begin()->second.at("app");
  std::set<std::string> with_app;
  for (const auto& [key, labels] : after->pod_labels) {
    auto it = labels.find("app");
    if (it != labels.end() && it->second == app) with_app.insert(key);
  }
  testing::RunResult selected =
      kubectl_run({"top", "pod", "-A", "-l", "app=" + app, "--no-headers"}, "top-pod-l.log");
  ASSERT_EQ(selected.exit_code, 0) << selected.output;
  std::set<std::string> selected_keys;
  for (const std::vector<std::string>& row : Rows(selected.output)) {
    ASSERT_EQ(row.size(), 4u) << selected.output;
    selected_keys.insert(row[0] + "/" + row[1]);
  }
  EXPECT_FALSE(selected_keys.empty());
  EXPECT_EQ(selected_keys, with_app);
  EXPECT_LT(selected_keys.size(), pod_keys.size());

  // A selector the aggregator rejects reaches kubectl as the Status message, non-zero exit.
  testing::RunResult bad = kubectl_run(
      {"get", "--raw", "/apis/metrics.k8s.io/v1beta1/pods?labelSelector=app%20in%20((x"},
      "bad-selector.log");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("BadRequest"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace kubestat
