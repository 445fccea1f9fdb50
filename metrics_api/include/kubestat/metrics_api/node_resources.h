// NodePodResources: what kubestat-node-agent read from its node's kubelet podresources API,
// as the agent serves it at /podresources and the aggregator reads it. Render and parse are
// apart from any transport; RenderNodePodResources(ParseNodePodResources(x)) == x for any x
// it rendered (tested).
//
// JSON (compact, or indented):
//   {"kind": "NodePodResources", "apiVersion": "kubestat.io/v1alpha1",
//    "nodeName": "node-0001", "socket": "/var/lib/kubelet/pod-resources/kubelet.sock",
//    "time": "2026-11-21T10:00:10Z",            // when the newest poll ended
//    "methods": {"List": <status>, "GetAllocatableResources": <status>, "Get": <status>},
//    "allocatable": <ResourceSet>,              // left out until one answer came
//    "pods": [{"name", "namespace", "exclusive": <ResourceSet>?,
//              "containers": [{"name", "exclusive": <ResourceSet>?,
//                              "dynamicResources": [{"claimName", "claimNamespace",
//                                 "claimResources": [{"cdiDevices": [..], "driverName",
//                                   "poolName", "deviceName", "shareId"?}]}]?}]}]
//                                              // left out until one List answer came
//   }
//   <status> = {"code": "OK" | "Unimplemented" | "Unavailable" | "DeadlineExceeded" | ... |
//               "Pending", "message"?, "time"?, "lastSuccess"?}
//   <ResourceSet> = {"cpuIds": [..], "memory": [{"memoryType", "size" (a quantity),
//                    "numaNodes"}], "devices": [{"resourceName", "deviceIds", "numaNodes"}]}
// `allocatable` and `pods` are the newest answers that succeeded; each method's status is
// its newest call's, so a client sees both what is known and how fresh it is.
//
// Parsing is strict about types and lenient about absence (every member optional, unknown
// ones ignored); `kind` must be NodePodResources. InvalidArgument "<path>: <reason>"
// otherwise. The caller bounds the input's size.
//
// Thread-safety: plain values and pure functions.
#ifndef KUBESTAT_METRICS_API_NODE_RESOURCES_H_
#define KUBESTAT_METRICS_API_NODE_RESOURCES_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/metrics_api/objects.h"

namespace kubestat::metrics_api {

inline constexpr std::string_view kNodePodResourcesKind = "NodePodResources";
inline constexpr std::string_view kNodePodResourcesApiVersion = "kubestat.io/v1alpha1";

// One allocated device of a DRA claim.
struct ClaimDevice {
  std::vector<std::string> cdi_devices{};
  std::string driver_name{};
  std::string pool_name{};
  std::string device_name{};
  std::optional<std::string> share_id{};

  friend bool operator==(const ClaimDevice&, const ClaimDevice&) = default;
};

// Resources of one DRA claim used by a container.
struct DynamicResource {
  std::string claim_name{};
  std::string claim_namespace{};
  std::vector<ClaimDevice> claim_resources{};

  friend bool operator==(const DynamicResource&, const DynamicResource&) = default;
};

struct ContainerAssignment {
  std::string name{};
  ResourceSet exclusive{};
  std::vector<DynamicResource> dynamic_resources{};

  friend bool operator==(const ContainerAssignment&, const ContainerAssignment&) = default;
};

struct PodAssignment {
  std::string name{};
  std::string namespace_name{};
  ResourceSet exclusive{};  // pod-level (newest kubelets)
  std::vector<ContainerAssignment> containers{};

  friend bool operator==(const PodAssignment&, const PodAssignment&) = default;
};

// The outcome of a method's newest call.
struct MethodStatus {
  // "OK", a status code name in CamelCase ("Unimplemented", "Unavailable",
  // "DeadlineExceeded", ...; StatusCodeName), or "Pending" before the first call.
  std::string code = "Pending";
  std::string message{};
  std::optional<Timestamp> time{};          // when the newest call ended
  std::optional<Timestamp> last_success{};  // when the newest call that succeeded ended

  bool ok() const { return code == "OK"; }
  friend bool operator==(const MethodStatus&, const MethodStatus&) = default;
};

struct NodePodResources {
  std::string node_name{};
  std::string socket{};
  std::optional<Timestamp> time{};
  MethodStatus list{};
  MethodStatus allocatable_call{};  // GetAllocatableResources
  MethodStatus get{};
  std::optional<ResourceSet> allocatable{};
  std::optional<std::vector<PodAssignment>> pods{};

  friend bool operator==(const NodePodResources&, const NodePodResources&) = default;
};

// "OK", "Cancelled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
// "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted",
// "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated".
std::string_view StatusCodeName(absl::StatusCode code);

std::string RenderNodePodResources(const NodePodResources& doc, int indent = 0);
[[nodiscard]] absl::StatusOr<NodePodResources> ParseNodePodResources(std::string_view json);

}  // namespace kubestat::metrics_api

#endif  // KUBESTAT_METRICS_API_NODE_RESOURCES_H_
