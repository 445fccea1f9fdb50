#include "kubestat/windows/series_key.h"

#include <functional>
#include <tuple>
#include <utility>

namespace kubestat::windows {

std::string_view ObjectKindName(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::kNode:
      return "node";
    case ObjectKind::kSystemContainer:
      return "system-container";
    case ObjectKind::kPod:
      return "pod";
    case ObjectKind::kContainer:
      return "container";
  }
  return "unknown";
}

std::string_view ResourceName(Resource resource) {
  switch (resource) {
    case Resource::kCpu:
      return "cpu";
    case Resource::kMemory:
      return "memory";
  }
  return "unknown";
}

SeriesKey SeriesKey::Node(std::string node, Resource resource) {
  SeriesKey key;
  key.node = std::move(node);
  key.kind = ObjectKind::kNode;
  key.resource = resource;
  return key;
}

SeriesKey SeriesKey::SystemContainer(std::string node, std::string name, Resource resource) {
  SeriesKey key;
  key.node = std::move(node);
  key.kind = ObjectKind::kSystemContainer;
  key.container = std::move(name);
  key.resource = resource;
  return key;
}

SeriesKey SeriesKey::Pod(std::string node, std::string pod_namespace, std::string pod,
                         Resource resource) {
  SeriesKey key;
  key.node = std::move(node);
  key.kind = ObjectKind::kPod;
  key.pod_namespace = std::move(pod_namespace);
  key.pod = std::move(pod);
  key.resource = resource;
  return key;
}

SeriesKey SeriesKey::Container(std::string node, std::string pod_namespace, std::string pod,
                               std::string container, Resource resource) {
  SeriesKey key = Pod(std::move(node), std::move(pod_namespace), std::move(pod), resource);
  key.kind = ObjectKind::kContainer;
  key.container = std::move(container);
  return key;
}

std::string SeriesKey::ToString() const {
  std::string out;
  switch (kind) {
    case ObjectKind::kNode:
      out = "node/" + node;
      break;
    case ObjectKind::kSystemContainer:
      out = "syscontainer/" + node + "/" + container;
      break;
    case ObjectKind::kPod:
      out = "pod/" + node + "/" + pod_namespace + "/" + pod;
      break;
    case ObjectKind::kContainer:
      out = "container/" + node + "/" + pod_namespace + "/" + pod + "/" + container;
      break;
  }
  out += "/";
  out += ResourceName(resource);
  return out;
}

std::strong_ordering operator<=>(const SeriesKey& a, const SeriesKey& b) {
  // Kind sorts after the node so that a node's series are contiguous; a pod sorts right
  // before its containers because the pod's own key has an empty container name.
  auto rank = [](const SeriesKey& k) {
    // Pods and containers interleave per pod: both rank 2.
    return k.kind == ObjectKind::kContainer ? 2 : static_cast<int>(k.kind);
  };
  return std::forward_as_tuple(a.node, rank(a), a.pod_namespace, a.pod, a.container, a.kind,
                               a.resource) <=>
         std::forward_as_tuple(b.node, rank(b), b.pod_namespace, b.pod, b.container, b.kind,
                               b.resource);
}

std::size_t SeriesKeyHash::operator()(const SeriesKey& key) const {
  std::hash<std::string> h;
  std::size_t seed = h(key.node);
  auto mix = [&seed](std::size_t v) {
    seed ^= v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
  };
  mix(h(key.pod_namespace));
  mix(h(key.pod));
  mix(h(key.container));
  mix(static_cast<std::size_t>(key.kind) * 4 + static_cast<std::size_t>(key.resource));
  return seed;
}

}  // namespace kubestat::windows
