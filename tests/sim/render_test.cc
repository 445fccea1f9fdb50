#include "kubestat/sim/render.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <set>
#include <sstream>

#include "kubestat/apimachinery/quantity.h"
#include "kubestat/core/time.h"
#include "kubestat/testing/fixtures.h"

namespace kubestat::sim {
namespace {

const Timestamp kT0 = Timestamp(std::chrono::seconds(1795255200));  // 2026-11-21T10:00:00Z

ClusterModel Make() {
  ClusterModelOptions o;
  o.nodes = 2;
  o.pods_per_node = 5;
  o.containers_per_pod = 2;
  return *ClusterModel::Create(o);
}

std::set<std::string> Keys(simdjson::dom::object o) {
  std::set<std::string> keys;
  for (auto field : o) keys.insert(std::string(field.key));
  return keys;
}

TEST(RenderSummaryTest, FullSummaryHasTheKubeletShapeAndModelValues) {
  const ClusterModel m = Make();
  const NodeSnapshot snap = m.Snapshot(1, kT0);
  const std::string json = RenderSummary(snap, false);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json.substr(0, 200);
  simdjson::dom::object node = doc["node"].get_object();
  EXPECT_EQ(Keys(node), (std::set<std::string>{"nodeName", "systemContainers", "startTime", "cpu",
                                               "memory", "network", "fs", "runtime", "rlimit"}));
  EXPECT_EQ(std::string_view(node["nodeName"].get_string()), "node-0001");
  EXPECT_EQ(uint64_t(node["cpu"]["usageCoreNanoSeconds"]), snap.usage.usage_core_nano_seconds);
  EXPECT_EQ(uint64_t(node["memory"]["workingSetBytes"]), snap.usage.working_set_bytes);
  EXPECT_EQ(std::string_view(node["cpu"]["time"].get_string()), "2026-11-21T10:00:00Z");
  simdjson::dom::array sys = node["systemContainers"].get_array();
  std::vector<std::string> names;
  for (auto c : sys) names.emplace_back(std::string_view(c["name"].get_string()));
  EXPECT_EQ(names, (std::vector<std::string>{"kubelet", "runtime", "pods"}));

  simdjson::dom::array pods = doc["pods"].get_array();
  ASSERT_EQ(pods.size(), 5u);
  simdjson::dom::object pod0 = pods.at(0).get_object();
  EXPECT_EQ(Keys(pod0), (std::set<std::string>{"podRef", "startTime", "containers", "cpu", "memory",
                                               "network", "volume", "ephemeral-storage"}));
  EXPECT_EQ(std::string_view(pod0["podRef"]["name"].get_string()), snap.pods[0].pod.name);
  EXPECT_EQ(std::string_view(pod0["podRef"]["uid"].get_string()), snap.pods[0].pod.uid);
  simdjson::dom::object c1 = pod0["containers"].at(1).get_object();
  EXPECT_EQ(Keys(c1),
            (std::set<std::string>{"name", "startTime", "cpu", "memory", "rootfs", "logs"}));
  EXPECT_EQ(uint64_t(c1["cpu"]["usageNanoCores"]),
            snap.pods[0].containers[1].usage.usage_nano_cores);
  EXPECT_EQ(uint64_t(c1["memory"]["workingSetBytes"]),
            snap.pods[0].containers[1].usage.working_set_bytes);
}

TEST(RenderSummaryTest, OnlyCpuAndMemoryOmitsTheOtherBlocks) {
  const ClusterModel m = Make();
  const std::string json = RenderSummary(m.Snapshot(0, kT0), true);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(Keys(doc["node"].get_object()),
            (std::set<std::string>{"nodeName", "systemContainers", "startTime", "cpu", "memory"}));
  for (auto pod : doc["pods"].get_array()) {
    EXPECT_EQ(Keys(pod.get_object()),
              (std::set<std::string>{"podRef", "startTime", "containers", "cpu", "memory"}));
    for (auto c : pod["containers"].get_array()) {
      EXPECT_EQ(Keys(c.get_object()),
                (std::set<std::string>{"name", "startTime", "cpu", "memory"}));
    }
  }
  EXPECT_LT(json.size(), RenderSummary(m.Snapshot(0, kT0), false).size());
}

TEST(RenderSummaryTest, FieldsAreThoseARealKubeletWrites) {
  KUBESTAT_REQUIRE_FIXTURES();
  const std::string real = kubestat::testing::ReadFixture(
      "summary/nri-kubernetes_k8s-v1.35.0_containerd_stats-summary.json");
  simdjson::dom::parser real_parser, our_parser;
  simdjson::dom::element r, o;
  ASSERT_EQ(real_parser.parse(real).get(r), simdjson::SUCCESS);
  const ClusterModel m = Make();
  const std::string ours = RenderSummary(m.Snapshot(0, kT0), false);
  ASSERT_EQ(our_parser.parse(ours).get(o), simdjson::SUCCESS);
  auto subset = [](const std::set<std::string>& a, const std::set<std::string>& b) {
    for (const auto& k : a) {
      if (!b.count(k)) return k;
    }
    return std::string();
  };
  EXPECT_EQ(subset(Keys(o["node"]), Keys(r["node"])), "");
  EXPECT_EQ(subset(Keys(o["node"]["cpu"]), Keys(r["node"]["cpu"])), "");
  EXPECT_EQ(subset(Keys(o["node"]["memory"]), Keys(r["node"]["memory"])), "");
  EXPECT_EQ(subset(Keys(o["node"]["network"]), Keys(r["node"]["network"])), "");
  EXPECT_EQ(subset(Keys(o["node"]["fs"]), Keys(r["node"]["fs"])), "");
  EXPECT_EQ(subset(Keys(o["node"]["rlimit"]), Keys(r["node"]["rlimit"])), "");
  EXPECT_EQ(
      subset(Keys(o["node"]["systemContainers"].at(0)), Keys(r["node"]["systemContainers"].at(0))),
      "");
  // Pod 2 of the capture has a volume.
  EXPECT_EQ(subset(Keys(o["pods"].at(0)), Keys(r["pods"].at(2))), "");
  EXPECT_EQ(
      subset(Keys(o["pods"].at(0)["containers"].at(0)), Keys(r["pods"].at(2)["containers"].at(0))),
      "");
  EXPECT_EQ(subset(Keys(o["pods"].at(0)["volume"].at(0)), Keys(r["pods"].at(2)["volume"].at(0))),
            "");
}

TEST(RenderResourceMetricsTest, HasStableFamiliesSortedWithTimestamps) {
  const ClusterModel m = Make();
  const NodeSnapshot snap = m.Snapshot(0, kT0);
  const std::string text = RenderResourceMetrics(snap);
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> families;
  int container_cpu = 0, pod_memory = 0, start_times = 0;
  std::string last_container_key;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      families.push_back(line.substr(7, line.find(' ', 7) - 7));
      EXPECT_NE(line.find("[STABLE]"), std::string::npos) << line;
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) continue;
    if (line.rfind("container_cpu_usage_seconds_total{", 0) == 0) {
      ++container_cpu;
      EXPECT_TRUE(line.ends_with(" 1795255200000")) << line;
      const std::string key = line.substr(0, line.find('}'));
      EXPECT_LT(last_container_key, key);
      last_container_key = key;
    }
    if (line.rfind("container_start_time_seconds{", 0) == 0) {
      ++start_times;
      // No timestamp column: exactly one space after the labels.
      EXPECT_EQ(line.find(' ', line.find('}') + 2), std::string::npos) << line;
    }
    if (line.rfind("pod_memory_working_set_bytes{", 0) == 0) ++pod_memory;
  }
  EXPECT_EQ(families, (std::vector<std::string>{
                          "container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
                          "container_start_time_seconds", "node_cpu_usage_seconds_total",
                          "node_memory_working_set_bytes", "pod_cpu_usage_seconds_total",
                          "pod_memory_working_set_bytes", "resource_scrape_error"}));
  EXPECT_EQ(container_cpu, 10);
  EXPECT_EQ(start_times, 10);
  EXPECT_EQ(pod_memory, 5);
  EXPECT_TRUE(text.ends_with("resource_scrape_error 0\n"));
  const std::string node_line =
      "node_memory_working_set_bytes " +
      FormatPrometheusFloat(static_cast<double>(snap.usage.working_set_bytes)) + " 1795255200000\n";
  EXPECT_NE(text.find(node_line), std::string::npos);
  const PodSnapshot& p = snap.pods[3];
  const std::string pod_line = "pod_cpu_usage_seconds_total{namespace=\"" + p.pod.namespace_name +
                               "\",pod=\"" + p.pod.name + "\"} " +
                               FormatPrometheusFloat(p.usage.usage_core_nano_seconds / 1e9);
  EXPECT_NE(text.find(pod_line), std::string::npos) << pod_line;
}

TEST(RenderResourceMetricsTest, FloatsAreWrittenAsGoWritesThem) {
  EXPECT_EQ(FormatPrometheusFloat(0), "0");
  EXPECT_EQ(FormatPrometheusFloat(1), "1");
  EXPECT_EQ(FormatPrometheusFloat(4.710169), "4.710169");
  EXPECT_EQ(FormatPrometheusFloat(12533760), "1.253376e+07");
  EXPECT_EQ(FormatPrometheusFloat(1616273408), "1.616273408e+09");
  EXPECT_EQ(FormatPrometheusFloat(357.35491), "357.35491");
  EXPECT_EQ(FormatPrometheusFloat(123456), "123456");
  EXPECT_EQ(FormatPrometheusFloat(0.0001), "0.0001");
  EXPECT_EQ(FormatPrometheusFloat(0.00001), "1e-05");
}

TEST(RenderObjectsTest, NodeAndPodHaveTheFieldsClientsRead) {
  const ClusterModel m = Make();
  std::string node_json;
  AppendNodeJson(node_json, m.node(1), {"127.1.0.2", 10250}, 1234);
  simdjson::dom::parser parser;
  simdjson::dom::element node;
  ASSERT_EQ(parser.parse(node_json).get(node), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(node["kind"].get_string()), "Node");
  EXPECT_EQ(std::string_view(node["status"]["addresses"].at(0)["type"].get_string()), "InternalIP");
  EXPECT_EQ(std::string_view(node["status"]["addresses"].at(0)["address"].get_string()),
            "127.1.0.2");
  EXPECT_EQ(std::string_view(node["status"]["addresses"].at(1)["type"].get_string()), "Hostname");
  EXPECT_EQ(int64_t(node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]), 10250);
  EXPECT_EQ(std::string_view(node["metadata"]["resourceVersion"].get_string()), "1234");
  // Capacity and allocatable are the model's, in the canonical form a kube-apiserver prints.
  const NodeInfo& spec = m.node(1);
  for (const char* field : {"capacity", "allocatable"}) {
    const bool cap = std::string_view(field) == "capacity";
    const int64_t cpu_millis = cap ? spec.cpu_capacity_millis : spec.cpu_allocatable_millis;
    const int64_t memory_bytes = cap ? spec.memory_capacity_bytes : spec.memory_allocatable_bytes;
    EXPECT_EQ(std::string_view(node["status"][field]["cpu"].get_string()),
              FormatCpuNanoCores(cpu_millis * 1'000'000));
    EXPECT_EQ(std::string_view(node["status"][field]["memory"].get_string()),
              FormatMemoryBytes(memory_bytes));
  }

  std::string pod_json;
  const PodInfo pod = m.Pod(0, 3, kT0);
  AppendPodJson(pod_json, m, pod, kT0, 77);
  simdjson::dom::parser parser2;
  simdjson::dom::element p;
  ASSERT_EQ(parser2.parse(pod_json).get(p), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(p["metadata"]["name"].get_string()), pod.name);
  EXPECT_EQ(std::string_view(p["metadata"]["uid"].get_string()), pod.uid);
  EXPECT_EQ(std::string_view(p["metadata"]["labels"]["app"].get_string()), pod.app);
  EXPECT_EQ(std::string_view(p["spec"]["nodeName"].get_string()), "node-0000");
  EXPECT_EQ(std::string_view(p["status"]["phase"].get_string()), "Running");
  EXPECT_EQ(p["spec"]["containers"].get_array().size(), 2u);

  const std::string event = RenderWatchEvent("ADDED", pod_json);
  EXPECT_TRUE(event.ends_with("}\n"));
  simdjson::dom::parser parser3;
  simdjson::dom::element e;
  ASSERT_EQ(parser3.parse(event).get(e), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(e["type"].get_string()), "ADDED");
}

TEST(RenderObjectsTest, ANodeToRegisterHasNoServerFieldsAndANewHeartbeat) {
  const ClusterModel m = Make();
  std::string node_json;
  const Timestamp now = kT0 + std::chrono::hours(3);
  AppendNodeForRegistration(node_json, m.node(1), {"127.0.0.1", 41234}, now);
  simdjson::dom::parser parser;
  simdjson::dom::element node;
  ASSERT_EQ(parser.parse(node_json).get(node), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(node["metadata"]["name"].get_string()), m.node(1).name);
  // A create with a uid or resourceVersion is refused; creationTimestamp is the server's.
  for (const char* field : {"uid", "resourceVersion", "creationTimestamp"}) {
    EXPECT_EQ(node["metadata"][field].error(), simdjson::NO_SUCH_FIELD) << field;
  }
  EXPECT_EQ(int64_t(node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]), 41234);
  EXPECT_EQ(std::string_view(node["status"]["conditions"].at(0)["lastHeartbeatTime"].get_string()),
            FormatRfc3339(now));
  // The rest is the node the fake API server serves.
  std::string served;
  AppendNodeJson(served, m.node(1), {"127.0.0.1", 41234}, 5);
  simdjson::dom::parser parser2;
  simdjson::dom::element served_node;
  ASSERT_EQ(parser2.parse(served).get(served_node), simdjson::SUCCESS);
  EXPECT_EQ(simdjson::minify(node["status"]["capacity"]),
            simdjson::minify(served_node["status"]["capacity"]));
  EXPECT_EQ(simdjson::minify(node["status"]["addresses"]),
            simdjson::minify(served_node["status"]["addresses"]));
}

// With node_topology, the objects say what the podresources sockets report: the node's
// GPUs, Guaranteed pinned pods, and GPU requests equal to their limits.
TEST(RenderObjectsTest, TopologyShowsInNodesAndPods) {
  ClusterModelOptions o;
  o.nodes = 2;
  o.pods_per_node = 30;
  o.node_topology = true;
  const ClusterModel m = *ClusterModel::Create(o);
  std::string node_json;
  AppendNodeJson(node_json, m.node(0), {"127.1.0.1", 10250}, 1);
  simdjson::dom::parser parser;
  simdjson::dom::element node;
  ASSERT_EQ(parser.parse(node_json).get(node), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(node["status"]["allocatable"]["nvidia.com/gpu"].get_string()), "4");
  EXPECT_EQ(std::string_view(node["status"]["capacity"]["nvidia.com/gpu"].get_string()), "4");
  int guaranteed = 0;
  int gpus = 0;
  for (int slot = 0; slot < 30; ++slot) {
    const PodInfo pod = m.Pod(0, slot, kT0);
    std::string pod_json;
    AppendPodJson(pod_json, m, pod, kT0, 1);
    simdjson::dom::parser pod_parser;
    simdjson::dom::element p;
    ASSERT_EQ(pod_parser.parse(pod_json).get(p), simdjson::SUCCESS);
    const std::string_view qos = p["status"]["qosClass"].get_string();
    EXPECT_EQ(qos, IsGuaranteed(pod) ? "Guaranteed" : "Burstable") << pod.name;
    if (qos == "Guaranteed") {
      ++guaranteed;
      simdjson::dom::object resources = p["spec"]["containers"].at(0)["resources"];
      EXPECT_EQ(std::string_view(resources["requests"]["cpu"].get_string()),
                std::string_view(resources["limits"]["cpu"].get_string()));
    }
    if (pod.containers[0].gpus > 0) {
      ++gpus;
      simdjson::dom::object resources = p["spec"]["containers"].at(0)["resources"];
      EXPECT_EQ(std::string_view(resources["requests"]["nvidia.com/gpu"].get_string()), "1");
      EXPECT_EQ(std::string_view(resources["limits"]["nvidia.com/gpu"].get_string()), "1");
    }
  }
  EXPECT_GT(guaranteed, 0);
  EXPECT_GT(gpus, 0);
}

}  // namespace
}  // namespace kubestat::sim
