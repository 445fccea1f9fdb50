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
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kubestat/aggregator/frontends/rest_server.h"
#include "kubestat/apimachinery/label_selector.h"
#include "kubestat/core/clock.h"
#include "kubestat/testing/aggregator/rest_test_access.h"
#include "kubestat/testing/aggregator/standard_cluster_source.h"

namespace kubestat::aggregator {
namespace {

using rest_testing::EndTime;
using rest_testing::FakeMetricsSource;
using rest_testing::FillStandardCluster;
using ::testing::HasSubstr;

constexpr char kKubectl[] = "/usr/bin/kubectl";

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

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
  CommandResult GetRaw(const std::string& path) { return Kubectl("get --raw '" + path + "'"); }

  // `kubectl --server=<ours> <args>` with a clean environment (no kubeconfig); stderr goes
  // to `stderr_file`, or with stdout into the output when it is empty.
  CommandResult Kubectl(const std::string& args, const std::string& stderr_file = "") {
    const std::string command =
        "env -i PATH=/usr/bin:/bin HOME='" + home_.string() + "' KUBECONFIG='" +
        (home_ / "no-kubeconfig").string() + "' " + kKubectl + " --server=" + server_->BaseUrl() +
        " --request-timeout=20s " + args +
        (stderr_file.empty() ? std::string(" 2>&1") : " 2>'" + stderr_file + "'");
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

  // Reads every object path of metrics.k8s.io/<version> and checks the objects.
  void ReadMetricsK8sIoObjects(const std::string& version) {
    const std::string base = "/apis/metrics.k8s.io/" + version;
    const std::string api_version = "metrics.k8s.io/" + version;
    web::json::value nodes = GetJson(base + "/nodes");
    ASSERT_EQ(nodes.at("items").size(), 2u);
    EXPECT_EQ(nodes.at("items").at(1).at("usage").at("memory").as_string(), "2Gi");
    EXPECT_EQ(nodes.at("apiVersion").as_string(), api_version);
    web::json::value node = GetJson(base + "/nodes/node-1");
    EXPECT_EQ(node.at("apiVersion").as_string(), api_version);
    EXPECT_EQ(node.at("usage").at("cpu").as_string(), "120m");
    EXPECT_EQ(node.at("usage").at("memory").as_string(), "302Mi");
    EXPECT_EQ(node.at("window").as_string(), "10s");
    EXPECT_EQ(node.at("timestamp").as_string(), "2026-11-21T10:00:10Z");
    EXPECT_EQ(GetJson(base + "/pods").at("items").size(), 4u);
    web::json::value shop = GetJson(base + "/namespaces/shop/pods?labelSelector=app%3Dweb");
    ASSERT_EQ(shop.at("items").size(), 2u);
    EXPECT_EQ(shop.at("items").at(0).at("metadata").at("name").as_string(), "web-1");
    web::json::value pod = GetJson(base + "/namespaces/shop/pods/db-0");
    EXPECT_EQ(pod.at("apiVersion").as_string(), api_version);
    EXPECT_EQ(pod.at("containers").at(0).at("usage").at("cpu").as_string(), "250m");
    EXPECT_EQ(pod.at("containers").at(0).at("usage").at("memory").as_string(), "512Mi");
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
  EXPECT_EQ(apis.at("groups").at(0).at("preferredVersion").at("version").as_string(), "v1");
  web::json::value group = GetJson("/apis/metrics.k8s.io");
  EXPECT_EQ(group.at("preferredVersion").at("version").as_string(), "v1");
  ASSERT_EQ(group.at("versions").size(), 2u);
  EXPECT_EQ(group.at("versions").at(0).at("groupVersion").as_string(), "metrics.k8s.io/v1");
  EXPECT_EQ(group.at("versions").at(1).at("groupVersion").as_string(), "metrics.k8s.io/v1beta1");
  EXPECT_EQ(GetJson("/apis/metrics").at("preferredVersion").at("version").as_string(), "v1alpha1");
  for (const std::string group_version :
       {"metrics.k8s.io/v1", "metrics.k8s.io/v1beta1", "metrics/v1alpha1"}) {
    web::json::value list = GetJson("/apis/" + group_version + "/");
    EXPECT_EQ(list.at("kind").as_string(), "APIResourceList");
    EXPECT_EQ(list.at("groupVersion").as_string(), group_version);
    ASSERT_EQ(list.at("resources").size(), 2u);
    EXPECT_EQ(list.at("resources").at(0).at("kind").as_string(), "NodeMetrics");
    EXPECT_EQ(list.at("resources").at(1).at("kind").as_string(), "PodMetrics");
  }
}

TEST_F(RestKubectlTest, ReadsMetricsK8sIoObjectsOfBothVersions) {
  for (const std::string version : {"v1", "v1beta1"}) {
    SCOPED_TRACE(version);
    ReadMetricsK8sIoObjects(version);
  }
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
  for (const std::string version : {"v1", "v1beta1"}) {
    CommandResult result =
        GetRaw("/apis/metrics.k8s.io/" + version + "/pods?labelSelector=app%20in%20(web");
    EXPECT_NE(result.exit_code, 0) << version << ": " << result.output;
    EXPECT_THAT(result.output, HasSubstr("Error from server (BadRequest)"));
    EXPECT_THAT(result.output,
                HasSubstr(std::string(LabelSelector::Parse("app in (web").status().message())));
  }
}

TEST_F(RestKubectlTest, UnknownObjectMakesKubectlReportNotFound) {
  for (const std::string version : {"v1", "v1beta1"}) {
    CommandResult result = GetRaw("/apis/metrics.k8s.io/" + version + "/nodes/ghost");
    EXPECT_NE(result.exit_code, 0) << version;
    EXPECT_THAT(result.output, HasSubstr("Error from server (NotFound)"));
    EXPECT_THAT(result.output, HasSubstr("nodes.metrics.k8s.io \"ghost\" not found"));
  }
}

// Discovery prefers v1; kubectl top reads whichever version of metrics.k8s.io it supports
// (kubectl 1.32 still asks for v1beta1 whatever is preferred) and prints our figures.
TEST_F(RestKubectlTest, TopPodReadsTheMetricsWhenDiscoveryPrefersV1) {
  const std::string log = (home_ / "top-pod.log").string();
  CommandResult top = Kubectl("-v=6 top pod -A --no-headers", log);
  const std::string requests = ReadFile(log);
  ASSERT_EQ(top.exit_code, 0) << top.output << requests;
  // Column widths are kubectl's business: compare the words of each row.
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(top.output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    rows.emplace_back(std::istream_iterator<std::string>(words),
                      std::istream_iterator<std::string>());
  }
  using Row = std::vector<std::string>;
  EXPECT_THAT(rows, ::testing::ElementsAre(Row{"kube-system", "coredns-1", "3m", "15Mi"},
                                           Row{"shop", "db-0", "250m", "512Mi"},
                                           Row{"shop", "web-1", "120m", "302Mi"},
                                           Row{"shop", "web-2", "80m", "100Mi"}))
      << top.output << requests;
  // It asked for the pods of a version our discovery lists.
  const std::string prefix = server_->BaseUrl() + "/apis/metrics.k8s.io/";
  const size_t at = requests.find("GET " + prefix);
  ASSERT_NE(at, std::string::npos) << requests;
  const size_t version_at = at + 4 + prefix.size();
  const std::string asked =
      requests.substr(version_at, requests.find('/', version_at) - version_at);
  EXPECT_THAT(asked, ::testing::AnyOf("v1", "v1beta1")) << requests;
  EXPECT_THAT(requests, HasSubstr("GET " + prefix + asked + "/pods 200 OK")) << requests;
}

}  // namespace
}  // namespace kubestat::aggregator
