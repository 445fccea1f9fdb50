#include "kubestat/aggregator/query/metrics_source.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "kubestat/metrics_api/query.h"

namespace kubestat::aggregator {

metrics_api::StatisticsList ToApiStatistics(std::span<const windows::WindowStats> windows) {
  metrics_api::StatisticsList out;
  out.reserve(windows.size());
  for (const windows::WindowStats& w : windows) {
    out.push_back({w.window, w.endtime, w.count, w.mean, w.min, w.max, w.p50, w.p95, w.p99});
  }
  return out;
}

std::pair<size_t, size_t> MetricsSnapshot::NamespaceRange(std::string_view namespace_name) const {
  if (namespace_name.empty()) return {0, pods.size()};
  auto first = std::lower_bound(
      pods.begin(), pods.end(), namespace_name,
      [](const metrics_api::PodRef& pod, std::string_view ns) { return pod->namespace_name < ns; });
  auto last = std::upper_bound(
      first, pods.end(), namespace_name,
      [](std::string_view ns, const metrics_api::PodRef& pod) { return ns < pod->namespace_name; });
  return {static_cast<size_t>(first - pods.begin()), static_cast<size_t>(last - pods.begin())};
}

std::optional<size_t> MetricsSnapshot::FindPod(std::string_view namespace_name,
                                               std::string_view name) const {
  return FindPodIn(pods, namespace_name, name);
}

std::vector<metrics_api::PodRef> MetricsSnapshot::PodsOfNode(std::string_view node) const {
  std::vector<metrics_api::PodRef> on_node;
  auto part = std::lower_bound(parts.begin(), parts.end(), node,
                               [](const std::shared_ptr<const NodeObjects>& p, std::string_view n) {
                                 return p->node_name < n;
                               });
  if (part == parts.end() || (*part)->node_name != node) return on_node;
  // A pod of the part is the node's when `pods` lists that very view (not another node's
  // pod of the same key, and not one removed since).
  for (const std::shared_ptr<const metrics_api::PodMetrics>& pod : (*part)->pods) {
    std::optional<size_t> index = FindPod(pod->namespace_name, pod->name);
    if (index && pods[*index].get() == pod.get()) on_node.emplace_back(pod);
  }
  return on_node;
}

std::shared_ptr<const MetricsSnapshot> MetricsSource::Snapshot() const {
  auto snapshot = std::make_shared<MetricsSnapshot>();
  // Ready() is read first: if it is true, the lists read after it are complete.
  snapshot->complete = Ready();
  std::vector<metrics_api::NodeMetrics> nodes = ListNodes();
  std::vector<metrics_api::PodMetrics> pods = ListPods("");
  snapshot->nodes.reserve(nodes.size());
  for (metrics_api::NodeMetrics& node : nodes) {
    snapshot->nodes.push_back(std::make_shared<const metrics_api::NodeMetrics>(std::move(node)));
  }
  // The contract says sorted; a source that is not must not break the lookups.
  auto node_less = [](const auto& a, const auto& b) { return a->name < b->name; };
  auto pod_less = [](const auto& a, const auto& b) {
    return std::tie(a->namespace_name, a->name) < std::tie(b->namespace_name, b->name);
  };
  if (!std::is_sorted(snapshot->nodes.begin(), snapshot->nodes.end(), node_less)) {
    std::sort(snapshot->nodes.begin(), snapshot->nodes.end(), node_less);
  }
  // The pods grouped into one part per node (in node-name order), which own them.
  std::map<std::string, NodeObjects, std::less<>> by_node;
  for (metrics_api::PodMetrics& pod : pods) {
    NodeObjects& objects = by_node[pod.node_name];
    objects.node_name = pod.node_name;
    objects.pods.push_back(std::make_shared<const metrics_api::PodMetrics>(std::move(pod)));
  }
  snapshot->parts.reserve(by_node.size());
  for (auto& [name, objects] : by_node) {
    std::sort(objects.pods.begin(), objects.pods.end(), pod_less);
    snapshot->parts.push_back(std::make_shared<const NodeObjects>(std::move(objects)));
  }
  snapshot->pods.reserve(pods.size());
  for (const auto& part : snapshot->parts) {
    for (const std::shared_ptr<const metrics_api::PodMetrics>& pod : part->pods)
      snapshot->pods.emplace_back(pod);
  }
  std::sort(snapshot->pods.begin(), snapshot->pods.end(), pod_less);
  snapshot->newest_usage = metrics_api::NewestUsage(snapshot->nodes);
  return snapshot;
}

NodeObjectsList MetricsSource::AllNodeObjects() const {
  std::shared_ptr<const MetricsSnapshot> snapshot = Snapshot();
  NodeObjectsList list;
  list.complete = snapshot->complete;
  std::map<std::string_view, NodeObjects> by_node;
  for (const std::shared_ptr<const metrics_api::NodeMetrics>& node : snapshot->nodes) {
    NodeObjects& objects = by_node[node->name];
    objects.node_name = node->name;
    objects.node = node;
  }
  for (const metrics_api::PodRef& pod : snapshot->pods) {
    NodeObjects& objects = by_node[pod->node_name];
    objects.node_name = pod->node_name;
    objects.pods.push_back(pod.shared());
  }
  list.nodes.reserve(by_node.size());
  for (auto& [name, objects] : by_node) list.nodes.push_back(std::move(objects));
  return list;
}

std::optional<NodeObjects> MetricsSource::ObjectsOfNode(std::string_view node) const {
  for (NodeObjects& objects : AllNodeObjects().nodes) {
    if (objects.node_name == node) return std::move(objects);
  }
  return std::nullopt;
}

}  // namespace kubestat::aggregator
