// kubestat's /metrics against the real Prometheus tools: kubestat-sim (a few nodes) and
// kubestat-aggregator run as real processes on loopback; `promtool check metrics` must find
// nothing to report in the aggregator's exposition; a real `prometheus` server scrapes the
// aggregator every second until its API shows up == 1 for the job and a kubestat_ series
// with a value. The gRPC service's own metrics are linted the same way. Skips when
// prometheus or promtool is not installed.
#define _TURN_OFF_PLATFORM_STRING
#include <arpa/inet.h>
#include <cpprest/http_client.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "kubestat/aggregator/frontends/grpc_service.h"
#include "kubestat/aggregator/query/watch_hub.h"
#include "kubestat/testing/aggregator/fake_metrics_source.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat {
namespace {

namespace fs = std::filesystem;

using testing::FindOnPath;
using testing::FreeLoopbackPort;
using testing::HttpGet;
using testing::HttpsGetReply;
using testing::PollUntil;
using testing::Process;
using testing::ReadAll;
using testing::TempDir;

struct PromtoolResult {
  int exit_code = -1;
  std::string output;
};

// `promtool check metrics` on `exposition`.
PromtoolResult CheckMetrics(const std::string& promtool, const std::string& exposition,
                            const fs::path& dir) {
  fs::path input = dir / "exposition.prom";
  std::ofstream(input) << exposition;
  fs::path log = dir / "promtool.log";
  Process process(promtool, {"check", "metrics"}, log, input.string());
  PromtoolResult result;
  result.exit_code = process.Wait(std::chrono::seconds(60));
  result.output = ReadAll(log);
  return result;
}

// The instant vector of a Prometheus /api/v1/query answer: (labels as JSON text, value).
std::vector<std::pair<std::string, std::string>> QueryResult(const std::string& body) {
  std::vector<std::pair<std::string, std::string>> out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(body).get(doc) != simdjson::SUCCESS) return out;
  std::string_view status;
  if (doc["status"].get(status) != simdjson::SUCCESS || status != "success") return out;
  simdjson::dom::array result;
  if (doc["data"]["result"].get(result) != simdjson::SUCCESS) return out;
  for (simdjson::dom::element sample : result) {
    simdjson::dom::array value;
    std::string_view number;
    if (sample["value"].get(value) != simdjson::SUCCESS || value.size() != 2 ||
        value.at(1).get(number) != simdjson::SUCCESS) {
      continue;
    }
    out.emplace_back(simdjson::to_string(sample["metric"]), std::string(number));
  }
  return out;
}

struct Tools {
  std::string prometheus;
  std::string promtool;
};

std::optional<Tools> FindTools() {
  std::optional<std::string> prometheus = FindOnPath("prometheus");
  std::optional<std::string> promtool = FindOnPath("promtool");
  if (!prometheus || !promtool) return std::nullopt;
  return Tools{*prometheus, *promtool};
}

constexpr char kMissingTools[] =
    "prometheus and promtool are not installed (Debian package `prometheus`); skipping";

TEST(PrometheusTest, RealPrometheusScrapesTheAggregatorAndPromtoolFindsNothing) {
  std::optional<Tools> tools = FindTools();
  if (!tools) GTEST_SKIP() << kMissingTools;
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());

  // A small simulated cluster; its kubelets answer over plain HTTP on consecutive ports.
  fs::path sim_log = dir.path() / "sim.log";
  fs::path kubeconfig = dir.path() / "kubeconfig";
  Process sim(KUBESTAT_SIM_BINARY,
              {"--nodes=3", "--pods-per-node=4", "--kubelet-address-mode=ports", "--kubelet-port=0",
               "--kubeconfig-out=" + kubeconfig.string()},
              sim_log);
  ASSERT_TRUE(PollUntil(
      [&] { return ReadAll(sim_log).find("READY") != std::string::npos || !sim.Running(); },
      std::chrono::seconds(60)));
  ASSERT_TRUE(sim.Running()) << "kubestat-sim exited:\n" << ReadAll(sim_log);

  const int aggregator_port = FreeLoopbackPort();
  ASSERT_GT(aggregator_port, 0);
  fs::path aggregator_log = dir.path() / "aggregator.log";
  std::vector<std::string> aggregator_args = {
      "--kubeconfig=" + kubeconfig.string(), "--kubelet-scheme=http",
      "--kubelet-preferred-address-types=InternalIP", "--kubelet-use-node-status-port",
      "--metric-resolution=1s", "--kubelet-timeout=500ms", "--listen-address=127.0.0.1",
      "--grpc-address=127.0.0.1", "--grpc-port=" + std::to_string(FreeLoopbackPort()),
      // Every answer gzip-compressed for clients that ask for it, as Prometheus does.
      "--gzip-min-bytes=0", "--storage-dir=" + (dir.path() / "store").string()};
  // HTTPS with its self-signed pair, and access as in production: Prometheus has a token of
  // its own, in a group the rules allow to read /metrics and nothing else.
  const fs::path cert_dir = dir.path() / "certs";
  std::ofstream(dir.path() / "tokens.csv") << "prometheus-token,prometheus,1,monitoring\n"
                                              "reader-token,reader,2\n";
  std::ofstream(dir.path() / "rules.yaml") << "rules:\n"
                                              "- groups: [monitoring]\n"
                                              "  verbs: [get]\n"
                                              "  nonResourceURLs: [/metrics]\n";
  std::ofstream(dir.path() / "prometheus.token") << "prometheus-token\n";
  for (const std::string& flag :
       {"--secure-port=" + std::to_string(aggregator_port), "--cert-dir=" + cert_dir.string(),
        "--token-auth-file=" + (dir.path() / "tokens.csv").string(),
        "--authorization-rules-file=" + (dir.path() / "rules.yaml").string()}) {
    aggregator_args.push_back(flag);
  }
  Process aggregator(KUBESTAT_AGGREGATOR_BINARY, aggregator_args, aggregator_log);

  // Wait until the aggregator has finished a scrape, so the exposition has every family.
  std::string exposition;
  ASSERT_TRUE(PollUntil(
      [&] {
        if (!aggregator.Running()) return true;
        std::optional<testing::HttpReply> reply =
            HttpsGetReply(aggregator_port, "/metrics", "prometheus-token");
        if (!reply || reply->code != 200) return false;
        exposition = reply->body;
        return exposition.find("\nkubestat_scrapes_total{") != std::string::npos;
      },
      std::chrono::seconds(60)))
      << "no kubestat_scrapes_total in /metrics:\n"
      << exposition << "\naggregator log:\n"
      << ReadAll(aggregator_log);
  ASSERT_TRUE(aggregator.Running()) << "kubestat-aggregator exited:\n" << ReadAll(aggregator_log);

  PromtoolResult lint = CheckMetrics(tools->promtool, exposition, dir.path());
  EXPECT_EQ(lint.exit_code, 0) << "promtool check metrics:\n" << lint.output;
  EXPECT_EQ(lint.output, "") << "promtool check metrics:\n" << lint.output;
  // Without a token, or with one whose user may not read /metrics, there is nothing to see.
  std::optional<testing::HttpReply> anonymous = HttpsGetReply(aggregator_port, "/metrics");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->code, 401) << anonymous->body;
  std::optional<testing::HttpReply> reader =
      HttpsGetReply(aggregator_port, "/metrics", "reader-token");
  ASSERT_TRUE(reader);
  EXPECT_EQ(reader->code, 403) << reader->body;

  // A real Prometheus scraping the aggregator every second over HTTPS, verifying its
  // serving certificate and sending its own token.
  const int prometheus_port = FreeLoopbackPort();
  ASSERT_GT(prometheus_port, 0);
  fs::path config = dir.path() / "prometheus.yml";
  std::ofstream(config) << "global:\n"
                           "  scrape_interval: 1s\n"
                           "  evaluation_interval: 1s\n"
                           "scrape_configs:\n"
                           "  - job_name: kubestat-aggregator\n"
                           "    scrape_interval: 1s\n"
                           "    scrape_timeout: 1s\n"
                           "    scheme: https\n"
                           "    tls_config:\n"
                           "      ca_file: "
                        << (cert_dir / "apiserver.crt").string()
                        << "\n"
                           "    authorization:\n"
                           "      credentials_file: "
                        << (dir.path() / "prometheus.token").string()
                        << "\n"
                           "    static_configs:\n"
                           "      - targets: ['127.0.0.1:"
                        << aggregator_port << "']\n";
  PromtoolResult config_check = [&] {
    fs::path log = dir.path() / "promtool-config.log";
    Process check(tools->promtool, {"check", "config", config.string()}, log);
    return PromtoolResult{check.Wait(std::chrono::seconds(60)), ReadAll(log)};
  }();
  ASSERT_EQ(config_check.exit_code, 0) << config_check.output;

  fs::path prometheus_log = dir.path() / "prometheus.log";
  Process prometheus(
      tools->prometheus,
      {"--config.file=" + config.string(), "--storage.tsdb.path=" + (dir.path() / "tsdb").string(),
       "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port)},
      prometheus_log);

  std::string last_up;
  bool up = PollUntil(
      [&] {
        if (!prometheus.Running()) return true;
        std::optional<std::string> body = HttpGet(prometheus_port, "/api/v1/query?query=up");
        if (!body) return false;
        last_up = *body;
        for (const auto& [labels, value] : QueryResult(*body)) {
          if (labels.find("\"job\":\"kubestat-aggregator\"") != std::string::npos && value == "1") {
            return true;
          }
        }
        return false;
      },
      std::chrono::seconds(90));
  ASSERT_TRUE(prometheus.Running()) << "prometheus exited:\n" << ReadAll(prometheus_log);
  ASSERT_TRUE(up) << "up never became 1 for the aggregator; last answer: " << last_up
                  << "\nprometheus log:\n"
                  << ReadAll(prometheus_log);

  std::string last_scrapes;
  bool scraped = PollUntil(
      [&] {
        std::optional<std::string> body =
            HttpGet(prometheus_port, "/api/v1/query?query=kubestat_scrapes_total");
        if (!body) return false;
        last_scrapes = *body;
        for (const auto& [labels, value] : QueryResult(*body)) {
          if (labels.find("\"job\":\"kubestat-aggregator\"") != std::string::npos &&
              std::strtod(value.c_str(), nullptr) > 0) {
            return true;
          }
        }
        return false;
      },
      std::chrono::seconds(60));
  EXPECT_TRUE(scraped) << "kubestat_scrapes_total never had a positive value; last answer: "
                       << last_scrapes;

  // Prometheus (the only client here that asks for gzip) read /metrics gzip-compressed.
  std::string last_gzip;
  bool gzipped = PollUntil(
      [&] {
        std::optional<std::string> body = HttpGet(
            prometheus_port,
            "/api/v1/query?query=kubestat_http_response_bytes_total%7Broute%3D%22%2Fmetrics%22%2C"
            "content_encoding%3D%22gzip%22%7D");
        if (!body) return false;
        last_gzip = *body;
        for (const auto& [labels, value] : QueryResult(*body)) {
          if (std::strtod(value.c_str(), nullptr) > 0) return true;
        }
        return false;
      },
      std::chrono::seconds(60));
  EXPECT_TRUE(gzipped) << "no gzip /metrics answer was counted; last answer: " << last_gzip;
  EXPECT_TRUE(aggregator.Running()) << ReadAll(aggregator_log);
  // Every process is stopped by the Process destructors, also when an assertion failed.
}

TEST(PrometheusTest, GrpcServiceMetricsPassPromtool) {
  std::optional<Tools> tools = FindTools();
  if (!tools) GTEST_SKIP() << kMissingTools;
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());

  aggregator::testing::FakeMetricsSource source;
  source.PutNode(aggregator::testing::MakeNode("node-a", {}, aggregator::testing::BaseTime(), 1));
  aggregator::WatchHub hub(&source);
  prometheus::Registry registry;
  aggregator::AggregatorService service(&source, &hub, &registry);
  // A successful and a failed call, so every family has samples.
  grpc::ServerContext context;
  v1::ListNodesRequest all;
  v1::ListNodesResponse nodes;
  ASSERT_TRUE(service.ListNodes(&context, &all, &nodes).ok());
  v1::ListPodsRequest bad;
  bad.set_label_selector("app in (");
  v1::ListPodsResponse pods;
  ASSERT_EQ(service.ListPods(&context, &bad, &pods).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  std::string exposition = prometheus::TextSerializer().Serialize(registry.Collect());
  ASSERT_NE(exposition.find("kubestat_grpc_requests_total{"), std::string::npos) << exposition;
  ASSERT_NE(exposition.find("kubestat_grpc_request_duration_seconds_bucket{"), std::string::npos);
  ASSERT_NE(exposition.find("kubestat_grpc_watchers 0"), std::string::npos) << exposition;
  PromtoolResult lint = CheckMetrics(tools->promtool, exposition, dir.path());
  EXPECT_EQ(lint.exit_code, 0) << lint.output;
  EXPECT_EQ(lint.output, "") << lint.output;
}

}  // namespace
}  // namespace kubestat
