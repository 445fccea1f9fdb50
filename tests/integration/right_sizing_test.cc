// kubestat-sim and kubestat-aggregator as real processes on loopback: metrics/v1alpha1 pods
// carry each container's requests and limits exactly as the simulated kube-apiserver's pod
// spec declares them, with the usage over them, and limitPressure selects a subset; and
// the recommendations, read with `kubectl get --raw` through the sim's aggregation proxy,
// respect the namespace's LimitRange and follow a change of it within a round.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "harness.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat {
namespace {

using testing::FindOnPath;
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

// One recommended value of a shop Recommendation: "value" in millicores or bytes, and the
// constraints that moved it ("Container min 700m").
struct Recommended {
  int64_t value = 0;
  uint64_t samples = 0;
  std::vector<std::string> bound_by;
};
// name -> {"requests.cpu", "limits.memory", ...} -> value, of a RecommendationList.
using Recommendations = std::map<std::string, std::map<std::string, Recommended>>;

int64_t Amount(std::string_view resource, std::string_view quantity) {
  // Millicores of cpu ("250m", "1"), bytes of memory ("512Mi", "698250855"): the forms
  // Kubernetes prints for these values.
  const auto number = [&](size_t digits) {
    return std::stoll(std::string(quantity.substr(0, digits)));
  };
  size_t digits = 0;
  while (digits < quantity.size() && quantity[digits] >= '0' && quantity[digits] <= '9') ++digits;
  const std::string_view suffix = quantity.substr(digits);
  const int64_t n = number(digits);
  if (resource == "cpu") return suffix == "m" ? n : n * 1000;
  if (suffix == "Ki") return n << 10;
  if (suffix == "Mi") return n << 20;
  if (suffix == "Gi") return n << 30;
  return n;
}

Recommendations ParseRecommendations(const std::string& json) {
  Recommendations out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) return out;
  simdjson::dom::array items;
  if (doc["items"].get(items) != simdjson::SUCCESS) return out;
  for (simdjson::dom::element item : items) {
    const std::string name(std::string_view(item["metadata"]["name"].get_string()));
    for (const char* kind : {"requests", "limits"}) {
      for (const char* resource : {"cpu", "memory"}) {
        simdjson::dom::element v = item[kind][resource].value();
        Recommended r;
        r.value = Amount(resource, std::string_view(v["value"].get_string()));
        r.samples = v["history"]["samples"].get_uint64();
        for (simdjson::dom::element b : v["boundBy"].get_array()) {
          r.bound_by.push_back(std::string(std::string_view(b["type"].get_string())) + " " +
                               std::string(std::string_view(b["constraint"].get_string())) + " " +
                               std::string(std::string_view(b["value"].get_string())));
        }
        out[name][std::string(kind) + "." + resource] = r;
      }
    }
  }
  return out;
}

TEST(RightSizingTest, RecommendationsRespectTheLimitRangeAndFollowItsChanges) {
  const std::optional<std::string> kubectl = FindOnPath("kubectl");
  if (!kubectl) GTEST_SKIP() << "kubectl is not installed; skipping";
  const TempDir scratch("kubestat-recommendations-it");
  const std::filesystem::path& dir = scratch.path();
  const int port = FreeLoopbackPort();
  const std::string kubeconfig = (dir / "kubeconfig").string();
  Process simulator(KUBESTAT_SIM_BINARY,
                    {"--nodes=3", "--pods-per-node=8", "--seed=11", "--kubelet-address-mode=ports",
                     "--kubelet-port=0", "--kubeconfig-out=" + kubeconfig,
                     "--metrics-backend=http://127.0.0.1:" + std::to_string(port)},
                    dir / "sim.log");
  ASSERT_TRUE(WaitForLog(dir / "sim.log", "READY", std::chrono::seconds(60)))
      << ReadAll((dir / "sim.log").string());
  Process aggregator(KUBESTAT_AGGREGATOR_BINARY,
                     testing::SimAggregatorFlags(dir, port, dir / "store", "2s", "1s"),
                     dir / "aggregator.log");
  int runs = 0;
  const auto kubectl_run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "--kubeconfig=" + kubeconfig);
    return testing::Run(*kubectl, args, dir / ("kubectl-" + std::to_string(++runs) + ".log"),
                        std::chrono::seconds(30));
  };
  const std::string shop = "/apis/metrics/v1alpha1/namespaces/shop/recommendations";
  const auto get_raw = [&](const std::string& path) {
    testing::RunResult r = kubectl_run({"get", "--raw", path});
    return r.exit_code == 0 ? r.output : std::string();
  };

  // Every shop container has usage of both resources (a cpu rate takes two scrapes).
  Recommendations recs;
  ASSERT_TRUE(PollUntil(
      [&] {
        recs = ParseRecommendations(get_raw(shop));
        if (recs.empty()) return false;
        for (const auto& [name, values] : recs) {
          for (const auto& [what, v] : values) {
            if (v.samples == 0) return false;
          }
        }
        return true;
      },
      std::chrono::seconds(90)))
      << ReadAll((dir / "aggregator.log").string());
  // The sim's LimitRange "limits": Container min 50m/64Mi, max 1/512Mi, cpu ratio 4.
  for (const auto& [name, v] : recs) {
    EXPECT_GE(v.at("requests.cpu").value, 50) << name;
    EXPECT_GE(v.at("requests.memory").value, 64 << 20) << name;
    EXPECT_LE(v.at("limits.cpu").value, 1000) << name;
    EXPECT_LE(v.at("limits.memory").value, 512 << 20) << name;
    EXPECT_LE(v.at("limits.cpu").value, 4 * v.at("requests.cpu").value) << name;
    EXPECT_LE(v.at("requests.cpu").value, v.at("limits.cpu").value) << name;
  }
  // Across namespaces: the same shop objects and others beside them.
  const Recommendations all =
      ParseRecommendations(get_raw("/apis/metrics/v1alpha1/recommendations"));
  EXPECT_GT(all.size(), recs.size());
  for (const auto& [name, v] : recs) EXPECT_TRUE(all.contains(name)) << name;
  // Discovery lists the resource; a bad parameter and an unknown namespace are Statuses.
  EXPECT_NE(get_raw("/apis/metrics/v1alpha1").find("\"recommendations\""), std::string::npos);
  testing::RunResult bad = kubectl_run({"get", "--raw", shop + "?minConfidence=x"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("minConfidence"), std::string::npos) << bad.output;
  testing::RunResult missing = kubectl_run(
      {"get", "--raw", "/apis/metrics/v1alpha1/namespaces/no-such-namespace/recommendations"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.output.find("not found"), std::string::npos) << missing.output;

  // Raise the Container cpu min to 700m through the sim: every shop cpu request follows.
  const std::filesystem::path spec = dir / "limitrange.json";
  std::ofstream(spec) << R"({"spec":{"limits":[{"type":"Container","min":{"cpu":"700m",)"
                         R"("memory":"64Mi"},"max":{"cpu":"1","memory":"512Mi"},)"
                         R"("maxLimitRequestRatio":{"cpu":"4"}}]}})";
  testing::RunResult put =
      kubectl_run({"replace", "--raw", "/sim/v1/namespaces/shop/limitranges/limits",
                   "--validate=false", "-f", spec.string()});
  ASSERT_EQ(put.exit_code, 0) << put.output;
  ASSERT_TRUE(PollUntil(
      [&] {
        recs = ParseRecommendations(get_raw(shop));
        if (recs.empty()) return false;
        for (const auto& [name, v] : recs) {
          if (v.at("requests.cpu").value < 700) return false;
        }
        return true;
      },
      std::chrono::seconds(30)))
      << ReadAll((dir / "aggregator.log").string());
  bool named = false;
  for (const auto& [name, v] : recs) {
    EXPECT_LE(v.at("limits.cpu").value, 1000) << name;
    for (const std::string& b : v.at("requests.cpu").bound_by) named |= b == "Container min 700m";
  }
  EXPECT_TRUE(named) << "no cpu request names the new min";
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kubestat
