// kubestat-sim and kubestat-aggregator as real processes on loopback: metrics/v1alpha1 pods
// carry each container's requests and limits exactly as the simulated kube-apiserver's pod
// spec declares them, with the usage over them, and limitPressure selects a subset.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "harness.h"
#include "support/files.h"
#include "support/net.h"
#include "support/poll.h"
#include "support/temp_dir.h"

namespace kubestat {
namespace {

using testing::FreeLoopbackPort;
using testing::HttpGet;
using testing::PollUntil;
using testing::Process;
using testing::ReadAll;
using testing::TempDir;
using testing::WaitForLog;

// "pod/container" -> "requests cpu memory | limits cpu memory" of a list of Pods (the kube
// API's spec.containers[].resources) or of PodMetrics (metrics/v1alpha1 containers[]).
std::map<std::string, std::string> Declared(const std::string& json, bool pod_spec) {
  std::map<std::string, std::string> out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) return out;
  for (simdjson::dom::element item : doc["items"].get_array()) {
    const std::string pod(std::string_view(item["metadata"]["name"].get_string()));
    simdjson::dom::array containers = pod_spec ? item["spec"]["containers"].get_array().value()
                                               : item["containers"].get_array().value();
    for (simdjson::dom::element c : containers) {
      const std::string name(std::string_view(
          pod_spec ? c["name"].get_string().value() : c["metadata"]["name"].get_string().value()));
      simdjson::dom::element holder = pod_spec ? c["resources"].value() : c;
      std::string text;
      for (const char* kind : {"requests", "limits"}) {
        text += kind;
        for (const char* resource : {"cpu", "memory"}) {
          std::string_view value = "-";
          if (holder[kind][resource].get(value) != simdjson::SUCCESS) value = "-";
          text += " " + std::string(value);
        }
        text += " | ";
      }
      out[pod + "/" + name] = text;
    }
  }
  return out;
}

TEST(RightSizingTest, PodMetricsCarryTheSpecsRequestsAndLimits) {
  const TempDir scratch("kubestat-right-sizing-it");
  const std::filesystem::path& dir = scratch.path();
  const int apiserver_port = FreeLoopbackPort();
  Process simulator(KUBESTAT_SIM_BINARY,
                    {"--nodes=3", "--pods-per-node=8", "--seed=11", "--kubelet-address-mode=ports",
                     "--kubelet-port=0", "--apiserver-port=" + std::to_string(apiserver_port),
                     "--kubeconfig-out=" + (dir / "kubeconfig").string()},
                    dir / "sim.log");
  ASSERT_TRUE(WaitForLog(dir / "sim.log", "READY", std::chrono::seconds(60)))
      << ReadAll((dir / "sim.log").string());
  const int port = FreeLoopbackPort();
  const std::vector<std::string> args =
      testing::SimAggregatorFlags(dir, port, dir / "store", "2s", "1s");
  Process aggregator(KUBESTAT_AGGREGATOR_BINARY, args, dir / "aggregator.log");

  const std::string spec = HttpGet(apiserver_port, "/api/v1/namespaces/shop/pods").value_or("");
  const std::map<std::string, std::string> declared = Declared(spec, true);
  ASSERT_FALSE(declared.empty()) << spec;
  std::map<std::string, std::string> shown;
  ASSERT_TRUE(PollUntil(
      [&] {
        shown = Declared(HttpGet(port, "/apis/metrics/v1alpha1/namespaces/shop/pods").value_or(""),
                         false);
        return shown.size() == declared.size();
      },
      std::chrono::seconds(60)))
      << ReadAll((dir / "aggregator.log").string());
  EXPECT_EQ(shown, declared);

  const std::string metrics =
      HttpGet(port, "/apis/metrics/v1alpha1/namespaces/shop/pods").value_or("");
  EXPECT_NE(metrics.find("\"usage/request\""), std::string::npos) << metrics;
  // limitPressure is a selection of the same pods.
  const std::optional<std::string> pressed =
      HttpGet(port, "/apis/metrics/v1alpha1/namespaces/shop/pods?limitPressure=any");
  ASSERT_TRUE(pressed.has_value());
  for (const auto& [key, value] : Declared(*pressed, false)) {
    EXPECT_TRUE(shown.contains(key)) << key;
    EXPECT_NE(value.find("limits"), std::string::npos);
  }
  const std::optional<testing::HttpReply> bad =
      testing::HttpGetReply(port, "/apis/metrics/v1alpha1/pods?limitPressure=disk");
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->code, 400);
  EXPECT_NE(bad->body.find("limitPressure"), std::string::npos);
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kubestat
