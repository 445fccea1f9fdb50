// AggregatorState: the MetricsSource the front ends read, over the ingest pipeline's
// windows joined with discovery's labels.
//
// Nodes and pods are those the engine holds series for. Labels (and a pod's node) come from
// a LabelProvider, which discovery implements; an object the provider does not know (yet)
// is still listed, with empty labels, and a pod's node is then the node that reported it.
// With a TopologyProvider (the nodes' agents), node views carry allocatable and the status
// of that knowledge, and pod views their containers' (and the pod's) exclusive resources,
// looked up on the node that reported the pod.
// Ready() is true once the ingestor's rebuild is done and the provider has synced.
//
// Ownership: borrows the Ingestor and the LabelProvider, which must outlive it.
// Thread-safety: every method is safe to call from any thread, concurrently with ingest,
// provided the LabelProvider's methods are.
#ifndef KUBESTAT_AGGREGATOR_QUERY_AGGREGATOR_STATE_H_
#define KUBESTAT_AGGREGATOR_QUERY_AGGREGATOR_STATE_H_

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/aggregator/query/metrics_source.h"
#include "kubestat/core/shared_value.h"
#include "kubestat/discovery/cluster_objects.h"
#include "kubestat/limits/limit_range.h"
#include "kubestat/metrics_api/node_resources.h"

namespace kubestat::aggregator {

// What discovery knows of a pod: its labels, node and containers' declared resources.
using PodLabels = discovery::PodLabelsInfo;

// A pod by namespace and name; the strings are the caller's.
using PodNameRef = discovery::PodNameRef;

// Labels from discovery. Implementations must be thread-safe.
class LabelProvider {
 public:
  virtual ~LabelProvider() = default;
  // True once discovery has listed every watched resource once.
  virtual bool HasSynced() const = 0;
  // Labels of a node (shared with discovery); std::nullopt when discovery does not know it.
  virtual std::optional<SharedLabels> NodeLabels(std::string_view name) const = 0;
  virtual std::optional<PodLabels> PodInfo(std::string_view namespace_name,
                                           std::string_view name) const = 0;
  // PodInfo of each of `pods`, in the same order (std::nullopt for a pod not known): what
  // the read of one node's pods asks at once. This default calls PodInfo per pod; a
  // provider that pays a lock or a lookup key per call overrides it to pay them once.
  virtual std::vector<std::optional<PodLabels>> PodInfos(std::span<const PodNameRef> pods) const;
};

// ---- Topology from the nodes' agents (podresources; node_agent.h) ----

// What a node's agent told of the node.
struct NodeTopology {
  std::optional<metrics_api::ResourceSet> allocatable;  // std::nullopt: not known
  metrics_api::PodResourcesStatus status;
};

// Allocatable and exclusive assignments by node. Implementations must be thread-safe.
class TopologyProvider {
 public:
  virtual ~TopologyProvider() = default;
  // std::nullopt when no agent answer or failure is known for the node.
  virtual std::optional<NodeTopology> Node(std::string_view node) const = 0;
  // The pod's assignments as its node's agent reported them; std::nullopt when not known.
  virtual std::optional<metrics_api::PodAssignment> Pod(std::string_view node,
                                                        std::string_view namespace_name,
                                                        std::string_view name) const = 0;
};

class AggregatorState final : public MetricsSource {
 public:
  // `topology` may be null (no agents are scraped): the views then carry none.
  AggregatorState(const Ingestor* ingestor, const LabelProvider* labels,
                  const TopologyProvider* topology = nullptr)
      : ingestor_(ingestor), labels_(labels), topology_(topology) {}

  bool Ready() const override;
  std::vector<metrics_api::NodeMetrics> ListNodes() const override;
  std::optional<metrics_api::NodeMetrics> GetNode(std::string_view name) const override;
  std::vector<metrics_api::PodMetrics> ListPods(std::string_view namespace_name) const override;
  std::optional<metrics_api::PodMetrics> GetPod(std::string_view namespace_name,
                                                std::string_view name) const override;
  // ObjectsOfNode of every node: one pass over each node's series, grouped by the node that
  // reported them; nodes in name order.
  NodeObjectsList AllNodeObjects() const override;
  // The node's view and a view of each pod it reported, joined with labels, declared
  // resources and topology as GetNode and GetPod join them, built from one visit of its
  // series (Ingestor::VisitNodeObjects). The providers are asked after the ingestor's lock
  // is released, the pods' labels in one LabelProvider::PodInfos call.
  std::optional<NodeObjects> ObjectsOfNode(std::string_view node) const override;

 private:
  metrics_api::NodeMetrics MakeNodeView(NodeSnapshot snapshot) const;
  metrics_api::PodMetrics MakePodView(PodSnapshot snapshot) const;
  // What the providers add to a view that holds the windows: a node's labels and topology;
  // a pod's labels, node (discovery's, when known), declared resources (from `info`, the
  // labels provider's answer for it) and exclusive resources.
  void JoinNode(metrics_api::NodeMetrics* view) const;
  void JoinPod(metrics_api::PodMetrics* view, std::optional<PodLabels> info) const;

  const Ingestor* ingestor_;
  const LabelProvider* labels_;
  const TopologyProvider* topology_;
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_QUERY_AGGREGATOR_STATE_H_
