// Metrics objects (metrics_api values) with known statistics, for the tests of everything
// that renders, selects, converts or serves them. Header-only: a test that includes it links
// kubestat::metrics_api.
#ifndef KUBESTAT_TESTING_METRICS_OBJECTS_H_
#define KUBESTAT_TESTING_METRICS_OBJECTS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kubestat/core/clock.h"
#include "kubestat/metrics_api/objects.h"

namespace kubestat::testing {

using metrics_api::ContainerMetrics;
using metrics_api::Labels;
using metrics_api::NodeMetrics;
using metrics_api::PodMetrics;
using metrics_api::ResourceWindows;
using metrics_api::Statistics;
using metrics_api::StatisticsList;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

// Builders of the REST and rendering tests.

// 2026-11-21T10:00:10Z, the end of every fake window.
inline Timestamp EndTime() { return Timestamp(seconds(1795255210)); }

// One window with explicit statistics.
inline Statistics Window(Duration length, uint64_t count, uint64_t mean, uint64_t max, uint64_t p95,
                         uint64_t min, uint64_t p50, uint64_t p99, Timestamp endtime = EndTime()) {
  Statistics w;
  w.window = length;
  w.endtime = endtime;
  w.count = count;
  w.mean = mean;
  w.max = max;
  w.p95 = p95;
  w.min = min;
  w.p50 = p50;
  w.p99 = p99;
  return w;
}

// The four default windows (10s, 1m, 1h, 1d) of one series: window i has count 2+i,
// mean v, max 2v, p95 3v/2, min v/2, p50 v, p99 2v (so the newest window's mean is v).
inline StatisticsList Series(uint64_t v, Timestamp endtime = EndTime()) {
  StatisticsList series;
  const Duration lengths[] = {seconds(10), minutes(1), hours(1), hours(24)};
  uint64_t count = 2;
  for (Duration length : lengths) {
    series.push_back(Window(length, count++, v, 2 * v, 3 * v / 2, v / 2, v, 2 * v, endtime));
  }
  return series;
}

inline ResourceWindows Usage(uint64_t nanocores, uint64_t bytes) {
  return ResourceWindows{Series(nanocores), Series(bytes)};
}

inline NodeMetrics Node(std::string name, Labels labels, uint64_t nanocores, uint64_t bytes) {
  NodeMetrics node;
  node.name = std::move(name);
  node.labels = std::move(labels);
  node.machine = Usage(nanocores, bytes);
  node.system_containers.push_back(ContainerMetrics{"kubelet", Usage(nanocores / 10, bytes / 10)});
  return node;
}

inline PodMetrics Pod(std::string namespace_name, std::string name, std::string node_name,
                      Labels labels, uint64_t nanocores, uint64_t bytes) {
  PodMetrics pod;
  pod.namespace_name = std::move(namespace_name);
  pod.name = std::move(name);
  pod.node_name = std::move(node_name);
  pod.labels = std::move(labels);
  pod.pod = Usage(nanocores, bytes);
  pod.containers.push_back(ContainerMetrics{"app", Usage(nanocores, bytes)});
  return pod;
}

// The cluster the REST and rendering tests serve:
//   nodes: node-1 {role=worker, zone=a}, node-2 {role=control-plane, zone=b},
//          node-3 {role=worker} with cpu only (not served by v1beta1)
//   pods:  kube-system/coredns-1 on node-2 {k8s-app=kube-dns}
//          shop/db-0 on node-1 {app=db, tier=backend}
//          shop/web-1 on node-1 {app=web, tier=frontend}
//          shop/web-2 on node-2 {app=web}
struct StandardCluster {
  std::vector<NodeMetrics> nodes;  // sorted by name
  std::vector<PodMetrics> pods;    // sorted by (namespace, name)
};
inline StandardCluster MakeStandardCluster() {
  StandardCluster source;
  source.nodes = {
      Node("node-1", {{"role", "worker"}, {"zone", "a"}}, 120000000, 316669952),
      Node("node-2", {{"role", "control-plane"}, {"zone", "b"}}, 1500000000, 2147483648),
      Node("node-3", {{"role", "worker"}}, 5000000, 0),
  };
  source.nodes[2].machine.memory.clear();
  source.pods = {
      Pod("kube-system", "coredns-1", "node-2", {{"k8s-app", "kube-dns"}}, 3000000, 15728640),
      Pod("shop", "db-0", "node-1", {{"app", "db"}, {"tier", "backend"}}, 250000000, 536870912),
      Pod("shop", "web-1", "node-1", {{"app", "web"}, {"tier", "frontend"}}, 120000000, 316669952),
      Pod("shop", "web-2", "node-2", {{"app", "web"}}, 80000000, 104857600),
  };
  return source;
}

// Builders of the gRPC tests.

// 2026-11-21T10:00:00Z.
inline Timestamp BaseTime() { return Timestamp(std::chrono::seconds(1795255200)); }

inline const std::vector<Duration>& DefaultWindows() {
  static const std::vector<Duration> windows = {std::chrono::seconds(10), std::chrono::minutes(1),
                                                std::chrono::hours(1), std::chrono::hours(24)};
  return windows;
}

// One series' windows: for window i, count 1+i, min v, mean v+i, p50 v+1, p95 v+5,
// p99 v+9, max v+10+i, all ending at `endtime`.
inline StatisticsList MakeSeries(Timestamp endtime, uint64_t v) {
  StatisticsList series;
  const std::vector<Duration>& windows = DefaultWindows();
  for (size_t i = 0; i < windows.size(); ++i) {
    Statistics w;
    w.window = windows[i];
    w.endtime = endtime;
    w.count = 1 + i;
    w.min = v;
    w.mean = v + i;
    w.p50 = v + 1;
    w.p95 = v + 5;
    w.p99 = v + 9;
    w.max = v + 10 + i;
    series.push_back(w);
  }
  return series;
}

// cpu = cpu_value nanocores, memory = cpu_value * 1000 bytes.
inline ResourceWindows MakeWindows(Timestamp endtime, uint64_t cpu_value) {
  return ResourceWindows{MakeSeries(endtime, cpu_value), MakeSeries(endtime, cpu_value * 1000)};
}

inline NodeMetrics MakeNode(std::string name, Labels labels, Timestamp endtime, uint64_t v) {
  NodeMetrics node;
  node.name = std::move(name);
  node.labels = std::move(labels);
  node.machine = MakeWindows(endtime, v);
  node.system_containers.push_back(ContainerMetrics{"kubelet", MakeWindows(endtime, v / 10)});
  return node;
}

inline PodMetrics MakePod(std::string namespace_name, std::string name, std::string node_name,
                          Labels labels, Timestamp endtime, uint64_t v, int containers = 1) {
  PodMetrics pod;
  pod.namespace_name = std::move(namespace_name);
  pod.name = std::move(name);
  pod.node_name = std::move(node_name);
  pod.labels = std::move(labels);
  pod.pod = MakeWindows(endtime, v);
  for (int i = 0; i < containers; ++i) {
    pod.containers.push_back(ContainerMetrics{"c" + std::to_string(i),
                                              MakeWindows(endtime, v + static_cast<uint64_t>(i))});
  }
  return pod;
}

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTING_METRICS_OBJECTS_H_
