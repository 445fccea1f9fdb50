#include "kubestat/aggregator/aggregator_state.h"

#include <utility>

namespace kubestat::aggregator {

namespace {

void Assign(ResourceWindows* windows, const SeriesWindows& series) {
  (series.key.resource == Resource::kCpu ? windows->cpu : windows->memory) =
      ToApiStatistics(series.windows);
}

// Series of one kind grouped by container name (series arrive in key order, so the
// containers come out sorted by name).
void AddContainer(std::vector<ContainerView>* containers, const SeriesWindows& series) {
  if (containers->empty() || containers->back().name != series.key.container) {
    containers->push_back({series.key.container, {}});
  }
  Assign(&containers->back().windows, series);
}

// The requests and limits `declared` gives each container view of the same name (cpu from
// millicores to nanocores).
void AddDeclared(std::vector<ContainerView>* containers,
                 const std::vector<limits::ContainerResources>& declared) {
  auto convert = [](const limits::Amounts& in) {
    metrics_api::DeclaredResources out;
    if (in.cpu && *in.cpu >= 0) out.cpu = static_cast<uint64_t>(*in.cpu) * 1000000;
    if (in.memory && *in.memory >= 0) out.memory = static_cast<uint64_t>(*in.memory);
    return out;
  };
  for (ContainerView& view : *containers) {
    for (const limits::ContainerResources& spec : declared) {
      if (spec.name != view.name) continue;
      view.requests = convert(spec.requests);
      view.limits = convert(spec.limits);
    }
  }
}

}  // namespace

bool AggregatorState::Ready() const { return ingestor_->ready() && labels_->HasSynced(); }

NodeView AggregatorState::MakeNodeView(NodeSnapshot snapshot) const {
  NodeView view;
  view.name = std::move(snapshot.name);
  view.labels = labels_->NodeLabels(view.name).value_or(Labels{});
  for (const SeriesWindows& series : snapshot.series) {
    if (series.key.kind == ObjectKind::kNode) {
      Assign(&view.machine, series);
    } else if (series.key.kind == ObjectKind::kSystemContainer) {
      AddContainer(&view.system_containers, series);
    }
  }
  if (topology_ != nullptr) {
    if (std::optional<NodeTopology> topology = topology_->Node(view.name)) {
      view.allocatable = std::move(topology->allocatable);
      view.pod_resources = std::move(topology->status);
    }
  }
  return view;
}

PodView AggregatorState::MakePodView(PodSnapshot snapshot) const {
  PodView view;
  view.name = std::move(snapshot.pod.name);
  view.namespace_name = std::move(snapshot.pod.namespace_name);
  view.node_name = std::move(snapshot.pod.node);
  std::optional<std::vector<limits::ContainerResources>> declared;
  // The agent beside the kubelet that reported the pod knows its assignments.
  std::optional<metrics_api::PodAssignment> assigned;
  if (topology_ != nullptr) {
    assigned = topology_->Pod(view.node_name, view.namespace_name, view.name);
  }
  if (std::optional<PodLabels> info = labels_->PodInfo(view.namespace_name, view.name)) {
    view.labels = std::move(info->labels);
    if (!info->node_name.empty()) view.node_name = std::move(info->node_name);
    declared = std::move(info->containers);
  }
  for (const SeriesWindows& series : snapshot.series) {
    if (series.key.kind == ObjectKind::kPod) {
      Assign(&view.pod, series);
    } else if (series.key.kind == ObjectKind::kContainer) {
      AddContainer(&view.containers, series);
    }
  }
  if (declared) AddDeclared(&view.containers, *declared);
  if (assigned) {
    view.exclusive = std::move(assigned->exclusive);
    for (ContainerView& container : view.containers) {
      for (metrics_api::ContainerAssignment& c : assigned->containers) {
        if (c.name == container.name) container.exclusive = std::move(c.exclusive);
      }
    }
  }
  return view;
}

std::vector<NodeView> AggregatorState::ListNodes() const {
  std::vector<NodeView> views;
  for (NodeSnapshot& snapshot : ingestor_->QueryNodes()) {
    views.push_back(MakeNodeView(std::move(snapshot)));
  }
  return views;
}

std::optional<NodeView> AggregatorState::GetNode(std::string_view name) const {
  std::optional<NodeSnapshot> snapshot = ingestor_->QueryNode(name);
  if (!snapshot) return std::nullopt;
  return MakeNodeView(std::move(*snapshot));
}

std::vector<PodView> AggregatorState::ListPods(std::string_view namespace_name) const {
  std::vector<PodView> views;
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

std::optional<PodView> AggregatorState::GetPod(std::string_view namespace_name,
                                               std::string_view name) const {
  std::optional<PodSnapshot> snapshot = ingestor_->QueryPod(namespace_name, name);
  if (!snapshot) return std::nullopt;
  return MakePodView(std::move(*snapshot));
}

std::optional<NodeObjects> AggregatorState::ObjectsOfNode(std::string_view node) const {
  std::optional<NodeObjectsSnapshot> snapshot = ingestor_->QueryNodeObjects(node);
  if (!snapshot) return std::nullopt;
  NodeObjects objects;
  objects.node_name = snapshot->node.name;
  objects.node = std::make_shared<const NodeView>(MakeNodeView(std::move(snapshot->node)));
  objects.pods.reserve(snapshot->pods.size());
  for (PodSnapshot& pod : snapshot->pods) {
    objects.pods.push_back(std::make_shared<const PodView>(MakePodView(std::move(pod))));
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
