// MetricsSource: what the query front ends (REST, gRPC) read.
//
// A read-only view of the aggregator's state joined with discovery: every node and pod the
// aggregator holds windows for, with the labels discovery gave, and each object's windows
// per resource. Front ends apply selectors and render; they never touch the engine or the
// store directly, so they are tested against a fake source with exact numbers.
//
// Consistency: each returned object is a consistent snapshot of that object (all its
// series read under one lock); a list is a sequence of such snapshots, not one atomic cut.
// Objects are returned sorted: nodes by name, pods by (namespace, name), containers by name.
//
// Thread-safety: implementations are safe to call from any thread, concurrently with ingest.
#ifndef KUBESTAT_AGGREGATOR_QUERY_METRICS_SOURCE_H_
#define KUBESTAT_AGGREGATOR_QUERY_METRICS_SOURCE_H_

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "kubestat/core/time.h"
#include "kubestat/metrics_api/objects.h"
#include "kubestat/metrics_api/query.h"
#include "kubestat/windows/window_stats.h"

namespace kubestat::aggregator {

// The objects a source returns are metrics_api's plain values (see objects.h there).

// The engine's statistics of one series as the API's values (same fields, same order).
metrics_api::StatisticsList ToApiStatistics(std::span<const windows::WindowStats> windows);

// The objects one node reported, the unit a source re-reads after that node's scrape: the
// node's own view (null when the source has pods of the node but no node object) and the
// pods it reported, sorted by (namespace, name).
struct NodeObjects {
  std::string node_name;
  std::shared_ptr<const metrics_api::NodeMetrics> node;
  std::vector<std::shared_ptr<const metrics_api::PodMetrics>> pods;
};

// The index in `pods` (sorted by (namespace, name); shared_ptrs to pod views or
// PodViewRefs) of the pod with this key; std::nullopt when absent.
template <typename Pods>
std::optional<size_t> FindPodIn(const Pods& pods, std::string_view namespace_name,
                                std::string_view name) {
  auto it = std::lower_bound(pods.begin(), pods.end(), 0, [&](const auto& pod, int) {
    const std::string_view pod_namespace = pod->namespace_name;
    if (pod_namespace != namespace_name) return pod_namespace < namespace_name;
    return std::string_view(pod->name) < name;
  });
  if (it == pods.end() || (*it)->namespace_name != namespace_name || (*it)->name != name) {
    return std::nullopt;
  }
  return static_cast<size_t>(it - pods.begin());
}

// Every node and pod of a source at one time, as shared immutable views: what a front end
// that reads everything (the watch hub) takes without copying the objects. The pods are
// references into the per-node parts the snapshot holds, so making one (and freeing it)
// copies pointers, not reference counts, per pod.
struct MetricsSnapshot {
  bool complete = false;  // taken while the source was Ready()
  std::vector<std::shared_ptr<const metrics_api::NodeMetrics>> nodes;  // sorted by name
  std::vector<metrics_api::PodRef> pods;  // sorted by (namespace, name)
  // What `pods` refer to, in node-name order (each node once); they keep the pods alive. A
  // part may hold pods `pods` does not list (a pod another node also reported, or one
  // removed since the part was read).
  std::vector<std::shared_ptr<const NodeObjects>> parts;
  // The newest usage timestamp of its nodes (metrics_api::NewestUsage; kZeroTime when none
  // has usage): how far the scrapes it shows had got. Ages are counted from it, so objects
  // are not taken for stale while a publication is late.
  Timestamp newest_usage = kZeroTime;

  // The index range [first, last) of `pods` in `namespace_name` (all pods when empty).
  std::pair<size_t, size_t> NamespaceRange(std::string_view namespace_name) const;
  // The pods of `pods` that node `node` reported, in (namespace, name) order.
  std::vector<metrics_api::PodRef> PodsOfNode(std::string_view node) const
      ABSL_ATTRIBUTE_LIFETIME_BOUND;
  // The index in `pods` of the pod with this key; std::nullopt when absent.
  std::optional<size_t> FindPod(std::string_view namespace_name, std::string_view name) const;
};

// Every object of a source grouped by node, nodes sorted by name.
struct NodeObjectsList {
  bool complete = false;  // read while the source was Ready()
  std::vector<NodeObjects> nodes;
};

class MetricsSource {
 public:
  virtual ~MetricsSource() = default;

  // False until the store is rebuilt and discovery has synced (then /readyz is 200).
  virtual bool Ready() const = 0;

  virtual std::vector<metrics_api::NodeMetrics> ListNodes() const = 0;
  virtual std::optional<metrics_api::NodeMetrics> GetNode(std::string_view name) const = 0;
  // Every pod, or only those of `namespace_name` when it is non-empty.
  virtual std::vector<metrics_api::PodMetrics> ListPods(std::string_view namespace_name) const = 0;
  virtual std::optional<metrics_api::PodMetrics> GetPod(std::string_view namespace_name,
                                                        std::string_view name) const = 0;

  // Every object at once (never null). This default reads Ready(), then ListNodes() and
  // ListPods("") (sorting them if they are not), and indexes the pods by node; a source
  // that keeps such a snapshot returns it without copying.
  virtual std::shared_ptr<const MetricsSnapshot> Snapshot() const;

  // Every object grouped by the node that reported it. This default groups Snapshot() by
  // metrics_api::PodMetrics::node_name.
  virtual NodeObjectsList AllNodeObjects() const;
  // The objects of one node; std::nullopt when the source knows nothing of it. This default
  // reads AllNodeObjects(), a pass over everything: a source serving a large cluster
  // overrides it with a read of that node alone.
  virtual std::optional<NodeObjects> ObjectsOfNode(std::string_view node) const;
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_QUERY_METRICS_SOURCE_H_
