// SeriesKey: which object and which resource a series of samples belongs to.
//
// A series is one resource (cpu or memory) of one object: a node's machine, a system
// container of a node (kubelet, runtime, ...), a pod, or a container of a pod. Every key
// carries the node name, so all series of one node are adjacent in key order (a node's
// scrape, a node's query and a node's deletion touch one contiguous range).
//
// Units of the values recorded under a key: cpu in nanocores (a rate, computed by the
// ingest pipeline from the cumulative counter), memory in working-set bytes. Both are
// unsigned integers, so sums and comparisons are exact.
//
// Plain value type; thread-compatible (no shared state).
#ifndef KUBESTAT_WINDOWS_SERIES_KEY_H_
#define KUBESTAT_WINDOWS_SERIES_KEY_H_

#include <compare>
#include <cstddef>
#include <string>
#include <string_view>

namespace kubestat::windows {

enum class ObjectKind : unsigned char {
  kNode = 0,             // the node's machine
  kSystemContainer = 1,  // a system container of the node: `container` is its name
  kPod = 2,              // a pod: `pod_namespace` and `pod`
  kContainer = 3,        // a container of a pod: `pod_namespace`, `pod` and `container`
};

enum class Resource : unsigned char {
  kCpu = 0,     // nanocores
  kMemory = 1,  // working-set bytes
};

std::string_view ObjectKindName(ObjectKind kind);  // "node", "system-container", ...
std::string_view ResourceName(Resource resource);  // "cpu", "memory"

struct SeriesKey {
  std::string node;  // node name; set for every kind
  ObjectKind kind = ObjectKind::kNode;
  std::string pod_namespace;  // kPod, kContainer; empty otherwise
  std::string pod;            // kPod, kContainer; empty otherwise
  std::string container;      // kSystemContainer, kContainer; empty otherwise
  Resource resource = Resource::kCpu;

  static SeriesKey Node(std::string node, Resource resource);
  static SeriesKey SystemContainer(std::string node, std::string name, Resource resource);
  static SeriesKey Pod(std::string node, std::string pod_namespace, std::string pod,
                       Resource resource);
  static SeriesKey Container(std::string node, std::string pod_namespace, std::string pod,
                             std::string container, Resource resource);

  // "node/n1/cpu", "syscontainer/n1/kubelet/memory", "pod/n1/ns/web-1/cpu",
  // "container/n1/ns/web-1/app/cpu": for logs and error messages.
  std::string ToString() const;

  // Ordered by node, then: the machine, system containers, then per pod (namespace, name)
  // the pod's own series followed by its containers'; resource last.
  friend std::strong_ordering operator<=>(const SeriesKey& a, const SeriesKey& b);
  friend bool operator==(const SeriesKey& a, const SeriesKey& b) = default;
};

struct SeriesKeyHash {
  std::size_t operator()(const SeriesKey& key) const;
};

}  // namespace kubestat::windows

#endif  // KUBESTAT_WINDOWS_SERIES_KEY_H_
