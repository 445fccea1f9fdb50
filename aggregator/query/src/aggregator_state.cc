#include "kubestat/aggregator/query/aggregator_state.h"

#include <algorithm>
#include <cassert>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <utility>

namespace kubestat::aggregator {

namespace {

void Assign(metrics_api::ResourceWindows* windows, windows::Resource resource,
            std::span<const windows::WindowStats> stats) {
  (resource == windows::Resource::kCpu ? windows->cpu : windows->memory) = ToApiStatistics(stats);
}

// Series of one kind grouped by container name (series arrive in key order, so the
// containers come out sorted by name).
void AddContainer(std::vector<metrics_api::ContainerMetrics>* containers,
                  const windows::SeriesKey& key, std::span<const windows::WindowStats> stats) {
  if (containers->empty() || containers->back().name != key.container) {
    containers->push_back({key.container, {}});
  }
  Assign(&containers->back().windows, key.resource, stats);
}

// One series of a node into its view: the machine's, or a system container's.
void AddNodeSeries(metrics_api::NodeMetrics* view, const windows::SeriesKey& key,
                   std::span<const windows::WindowStats> windows) {
  if (key.kind == windows::ObjectKind::kNode) {
    Assign(&view->machine, key.resource, windows);
  } else if (key.kind == windows::ObjectKind::kSystemContainer) {
    AddContainer(&view->system_containers, key, windows);
  }
}

// One series of a pod into its view: the pod's own, or a container's.
void AddPodSeries(metrics_api::PodMetrics* view, const windows::SeriesKey& key,
                  std::span<const windows::WindowStats> windows) {
  if (key.kind == windows::ObjectKind::kPod) {
    Assign(&view->pod, key.resource, windows);
  } else if (key.kind == windows::ObjectKind::kContainer) {
    AddContainer(&view->containers, key, windows);
  }
}

// The requests and limits `declared` gives each container view of the same name (cpu from
// millicores to nanocores).
void AddDeclared(std::vector<metrics_api::ContainerMetrics>* containers,
                 const std::vector<limits::ContainerResources>& declared) {
  auto convert = [](const limits::Amounts& in) {
    metrics_api::DeclaredResources out;
    if (in.cpu && *in.cpu >= 0) out.cpu = static_cast<uint64_t>(*in.cpu) * 1000000;
    if (in.memory && *in.memory >= 0) out.memory = static_cast<uint64_t>(*in.memory);
    return out;
  };
  for (metrics_api::ContainerMetrics& view : *containers) {
    for (const limits::ContainerResources& spec : declared) {
      if (spec.name != view.name) continue;
      view.requests = convert(spec.requests);
      view.limits = convert(spec.limits);
    }
  }
}

// A node's views from the visit of its series, windows only: the visit runs under the
// ingestor's lock, so the providers are asked afterwards (JoinNode, JoinPod). Views are made
// shared at once, so that publishing them moves no view.
class NodeViewBuilder final : public NodeObjectsVisitor {
 public:
  explicit NodeViewBuilder(std::string_view node)
      : node(std::make_shared<metrics_api::NodeMetrics>()) {
    this->node->name = std::string(node);
  }
  void NodeSeries(const windows::SeriesKey& key, Timestamp /*endtime*/,
                  std::span<const windows::WindowStats> windows) override {
    AddNodeSeries(node.get(), key, windows);
  }
  void BeginPod(std::string_view namespace_name, std::string_view name) override {
    EndPod();
    auto pod = std::make_shared<metrics_api::PodMetrics>();
    pod->name = std::string(name);
    pod->namespace_name = std::string(namespace_name);
    pod->node_name = node->name;
    pods.push_back(std::move(pod));
  }
  void PodSeries(const windows::SeriesKey& key, Timestamp /*endtime*/,
                 std::span<const windows::WindowStats> windows) override {
    if (key.kind == windows::ObjectKind::kContainer) {
      AddContainer(&containers_, key, windows);
    } else {
      AddPodSeries(pods.back().get(), key, windows);
    }
  }
  // Call after the visit: the last pod gets its containers.
  void Finish() { EndPod(); }

  std::shared_ptr<metrics_api::NodeMetrics> node;
  std::vector<std::shared_ptr<metrics_api::PodMetrics>> pods;  // by (namespace, name)

 private:
  // The containers read for the newest pod go to it in one list of their exact number (one
  // allocation, where growing the list as they come took one per container).
  void EndPod() {
    if (pods.empty() || containers_.empty()) return;
    std::vector<metrics_api::ContainerMetrics>& out = pods.back()->containers;
    out.reserve(out.size() + containers_.size());
    std::move(containers_.begin(), containers_.end(), std::back_inserter(out));
    containers_.clear();
  }
  std::vector<metrics_api::ContainerMetrics> containers_;  // of the newest pod, not given to it yet
};

}  // namespace

std::vector<std::optional<PodLabels>> LabelProvider::PodInfos(
    std::span<const PodNameRef> pods) const {
  std::vector<std::optional<PodLabels>> infos;
  infos.reserve(pods.size());
  for (const PodNameRef& pod : pods) infos.push_back(PodInfo(pod.namespace_name, pod.name));
  return infos;
}

bool AggregatorState::Ready() const { return ingestor_->ready() && labels_->HasSynced(); }

void AggregatorState::JoinNode(metrics_api::NodeMetrics* view) const {
  view->labels = labels_->NodeLabels(view->name).value_or(SharedLabels{});
  if (topology_ != nullptr) {
    if (std::optional<NodeTopology> topology = topology_->Node(view->name)) {
      view->allocatable = std::move(topology->allocatable);
      view->pod_resources = std::move(topology->status);
    }
  }
}

void AggregatorState::JoinPod(metrics_api::PodMetrics* view, std::optional<PodLabels> info) const {
  // The agent beside the kubelet that reported the pod knows its assignments: asked before
  // the node name is replaced by discovery's.
  std::optional<metrics_api::PodAssignment> assigned;
  if (topology_ != nullptr) {
    assigned = topology_->Pod(view->node_name, view->namespace_name, view->name);
  }
  if (info) {
    view->labels = std::move(info->labels);
    if (!info->node_name.empty()) view->node_name = std::move(info->node_name);
    AddDeclared(&view->containers, info->containers);
  }
  if (assigned) {
    view->exclusive = std::move(assigned->exclusive);
    for (metrics_api::ContainerMetrics& container : view->containers) {
      for (metrics_api::ContainerAssignment& c : assigned->containers) {
        if (c.name == container.name) container.exclusive = std::move(c.exclusive);
      }
    }
  }
}

metrics_api::NodeMetrics AggregatorState::MakeNodeView(NodeSnapshot snapshot) const {
  metrics_api::NodeMetrics view;
  view.name = std::move(snapshot.name);
  for (const windows::SeriesWindows& series : snapshot.series) {
    AddNodeSeries(&view, series.key, series.windows);
  }
  JoinNode(&view);
  return view;
}

metrics_api::PodMetrics AggregatorState::MakePodView(PodSnapshot snapshot) const {
  metrics_api::PodMetrics view;
  view.name = std::move(snapshot.pod.name);
  view.namespace_name = std::move(snapshot.pod.namespace_name);
  view.node_name = std::move(snapshot.pod.node);
  for (const windows::SeriesWindows& series : snapshot.series) {
    AddPodSeries(&view, series.key, series.windows);
  }
  JoinPod(&view, labels_->PodInfo(view.namespace_name, view.name));
  return view;
}

std::vector<metrics_api::NodeMetrics> AggregatorState::ListNodes() const {
  std::vector<metrics_api::NodeMetrics> views;
  for (NodeSnapshot& snapshot : ingestor_->QueryNodes()) {
    views.push_back(MakeNodeView(std::move(snapshot)));
  }
  return views;
}

std::optional<metrics_api::NodeMetrics> AggregatorState::GetNode(std::string_view name) const {
  std::optional<NodeSnapshot> snapshot = ingestor_->QueryNode(name);
  if (!snapshot) return std::nullopt;
  return MakeNodeView(std::move(*snapshot));
}

std::vector<metrics_api::PodMetrics> AggregatorState::ListPods(
    std::string_view namespace_name) const {
  std::vector<metrics_api::PodMetrics> views;
  for (PodSnapshot& snapshot : ingestor_->QueryPods(namespace_name)) {
    // A pod reported by two nodes at once (it moved) is listed once.
    if (!views.empty() && views.back().namespace_name == snapshot.pod.namespace_name &&
        views.back().name == snapshot.pod.name) {
      continue;
    }
    views.push_back(MakePodView(std::move(snapshot)));
  }
  return views;
}

std::optional<metrics_api::PodMetrics> AggregatorState::GetPod(std::string_view namespace_name,
                                                               std::string_view name) const {
  std::optional<PodSnapshot> snapshot = ingestor_->QueryPod(namespace_name, name);
  if (!snapshot) return std::nullopt;
  return MakePodView(std::move(*snapshot));
}

std::optional<NodeObjects> AggregatorState::ObjectsOfNode(std::string_view node) const {
  NodeViewBuilder views(node);
  if (!ingestor_->VisitNodeObjects(node, views)) return std::nullopt;
  views.Finish();
  // The ingestor's lock is released: the providers are asked now.
  JoinNode(views.node.get());
  std::vector<PodNameRef> names;
  names.reserve(views.pods.size());
  for (const std::shared_ptr<metrics_api::PodMetrics>& pod : views.pods) {
    names.push_back({pod->namespace_name, pod->name});
  }
  std::vector<std::optional<PodLabels>> infos = labels_->PodInfos(names);
  assert(infos.size() == names.size() && "PodInfos answers each pod asked");
  NodeObjects objects;
  objects.node_name = views.node->name;
  objects.node = std::move(views.node);
  objects.pods.reserve(views.pods.size());
  for (size_t i = 0; i < views.pods.size(); ++i) {
    JoinPod(views.pods[i].get(), i < infos.size() ? std::move(infos[i]) : std::nullopt);
    objects.pods.push_back(std::move(views.pods[i]));
  }
  return objects;
}

NodeObjectsList AggregatorState::AllNodeObjects() const {
  NodeObjectsList list;
  // Ready() is read first: if it is true, what is read after it is complete.
  list.complete = Ready();
  for (const std::string& name : ingestor_->ListNodes()) {
    // A node deleted since the listing is skipped.
    if (std::optional<NodeObjects> objects = ObjectsOfNode(name)) {
      list.nodes.push_back(std::move(*objects));
    }
  }
  return list;
}

}  // namespace kubestat::aggregator
