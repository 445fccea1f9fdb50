// The REST front end read by a client nobody on the team wrote: the real kubectl binary.
#include <sys/wait.h>

// cpprestsdk's U() macro collides with GoogleTest's template parameters.
#define _TURN_OFF_PLATFORM_STRING

#include <cpprest/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "kubestat/aggregator/rest_server.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/label_selector.h"
#include "rest_fake_source.h"
#include "rest_test_access.h"

namespace kubestat::aggregator {
namespace {

using rest_testing::EndTime;
using rest_testing::FakeMetricsSource;
using rest_testing::FillStandardCluster;
using ::testing::HasSubstr;

constexpr char kKubectl[] = "/usr/bin/kubectl";

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
  web::json::value Json() const { return web::json::value::parse(output); }
};

class RestKubectlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kKubectl)) {
      GTEST_SKIP() << kKubectl << " is not installed; the kubectl interoperability test needs it";
    }
    FillStandardCluster(source_);
    home_ = std::filesystem::path(::testing::TempDir()) / "rest_kubectl_home";
    std::filesystem::create_directories(home_);
    server_ = std::make_unique<RestServer>(rest_testing::PlainOptions(), source_, registry_, clock_,
                                           LivenessCheck{}, access_.Control());
    ASSERT_TRUE(server_->Start().ok());
  }

  // `kubectl --server=<ours> get --raw <path>` with a clean environment (no kubeconfig).
  CommandResult GetRaw(const std::string& path) {
    const std::string command = "env -i PATH=/usr/bin:/bin HOME='" + home_.string() +
                                "' KUBECONFIG='" + (home_ / "no-kubeconfig").string() + "' " +
                                kKubectl + " --server=" + server_->BaseUrl() +
                                " --request-timeout=20s get --raw '" + path + "' 2>&1";
    CommandResult result;
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) {
      ADD_FAILURE() << "popen failed: " << command;
      return result;
    }
    std::array<char, 4096> buffer;
    size_t n;
    while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
      result.output.append(buffer.data(), n);
    const int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
  }

  // Runs GetRaw, expects success and returns the parsed output.
  web::json::value GetJson(const std::string& path) {
    CommandResult result = GetRaw(path);
    EXPECT_EQ(result.exit_code, 0) << path << ": " << result.output;
    if (result.exit_code != 0) return web::json::value::null();
    return result.Json();
  }

  FakeClock clock_{EndTime() + std::chrono::seconds(20)};
  FakeMetricsSource source_;
  prometheus::Registry registry_;
  rest_testing::AllowEveryone access_{clock_};
  std::filesystem::path home_;
  std::unique_ptr<RestServer> server_;
};

TEST_F(RestKubectlTest, ReadsDiscoveryOfBothGroups) {
  web::json::value api = GetJson("/api");
  EXPECT_EQ(api.at("kind").as_string(), "APIVersions");
  web::json::value apis = GetJson("/apis");
  ASSERT_EQ(apis.at("groups").size(), 2u);
  EXPECT_EQ(apis.at("groups").at(0).at("name").as_string(), "metrics.k8s.io");
  EXPECT_EQ(apis.at("groups").at(1).at("name").as_string(), "metrics");
  EXPECT_EQ(GetJson("/apis/metrics.k8s.io").at("preferredVersion").at("version").as_string(),
            "v1beta1");
  EXPECT_EQ(GetJson("/apis/metrics").at("preferredVersion").at("version").as_string(), "v1alpha1");
  for (const std::string group_version : {"metrics.k8s.io/v1beta1", "metrics/v1alpha1"}) {
    web::json::value list = GetJson("/apis/" + group_version + "/");
    EXPECT_EQ(list.at("kind").as_string(), "APIResourceList");
    EXPECT_EQ(list.at("groupVersion").as_string(), group_version);
    ASSERT_EQ(list.at("resources").size(), 2u);
    EXPECT_EQ(list.at("resources").at(0).at("kind").as_string(), "NodeMetrics");
    EXPECT_EQ(list.at("resources").at(1).at("kind").as_string(), "PodMetrics");
  }
}

TEST_F(RestKubectlTest, ReadsMetricsK8sIoObjects) {
  const std::string base = "/apis/metrics.k8s.io/v1beta1";
  web::json::value nodes = GetJson(base + "/nodes");
  ASSERT_EQ(nodes.at("items").size(), 2u);
  EXPECT_EQ(nodes.at("items").at(1).at("usage").at("memory").as_string(), "2Gi");
  web::json::value node = GetJson(base + "/nodes/node-1");
  EXPECT_EQ(node.at("usage").at("cpu").as_string(), "120m");
  EXPECT_EQ(node.at("usage").at("memory").as_string(), "302Mi");
  EXPECT_EQ(node.at("window").as_string(), "10s");
  EXPECT_EQ(node.at("timestamp").as_string(), "2026-11-21T10:00:10Z");
  EXPECT_EQ(GetJson(base + "/pods").at("items").size(), 4u);
  web::json::value shop = GetJson(base + "/namespaces/shop/pods?labelSelector=app%3Dweb");
  ASSERT_EQ(shop.at("items").size(), 2u);
  EXPECT_EQ(shop.at("items").at(0).at("metadata").at("name").as_string(), "web-1");
  web::json::value pod = GetJson(base + "/namespaces/shop/pods/db-0");
  EXPECT_EQ(pod.at("containers").at(0).at("usage").at("cpu").as_string(), "250m");
  EXPECT_EQ(pod.at("containers").at(0).at("usage").at("memory").as_string(), "512Mi");
}

TEST_F(RestKubectlTest, ReadsMetricsV1alpha1Objects) {
  const std::string base = "/apis/metrics/v1alpha1";
  EXPECT_EQ(GetJson(base + "/nodes").at("items").size(), 3u);
  web::json::value node = GetJson(base + "/nodes/node-2");
  EXPECT_EQ(node.at("machine").at("1m").at("95th").at("cpu").as_string(), "2250m");
  EXPECT_EQ(
      node.at("systemContainers").at(0).at("metrics").at("10s").at("mean").at("cpu").as_string(),
      "150m");
  EXPECT_EQ(GetJson(base + "/pods?fieldSelector=spec.nodeName%3Dnode-1").at("items").size(), 2u);
  EXPECT_EQ(GetJson(base + "/namespaces/kube-system/pods").at("items").size(), 1u);
  web::json::value pod = GetJson(base + "/namespaces/shop/pods/web-1");
  EXPECT_EQ(pod.at("pod").at("1d").at("count").as_integer(), 5);
  EXPECT_EQ(pod.at("containers").at(0).at("metrics").at("10s").at("mean").at("memory").as_string(),
            "302Mi");
}

TEST_F(RestKubectlTest, BadSelectorMakesKubectlFailWithTheStatusMessage) {
  CommandResult result = GetRaw("/apis/metrics.k8s.io/v1beta1/pods?labelSelector=app%20in%20(web");
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("Error from server (BadRequest)"));
  EXPECT_THAT(result.output,
              HasSubstr(std::string(LabelSelector::Parse("app in (web").status().message())));
}

TEST_F(RestKubectlTest, UnknownObjectMakesKubectlReportNotFound) {
  CommandResult result = GetRaw("/apis/metrics.k8s.io/v1beta1/nodes/ghost");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("Error from server (NotFound)"));
  EXPECT_THAT(result.output, HasSubstr("nodes.metrics.k8s.io \"ghost\" not found"));
}

}  // namespace
}  // namespace kubestat::aggregator
