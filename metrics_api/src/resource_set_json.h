// The JSON of a ResourceSet (objects.h), shared by the node agent's document
// (node_resources.h) and metrics/v1alpha1 (render.h, parse.h):
//   {"cpuIds": [2, 3],
//    "memory": [{"memoryType": "memory", "size": "1Gi", "numaNodes": [0]}],
//    "devices": [{"resourceName": "nvidia.com/gpu", "deviceIds": ["GPU-1"], "numaNodes": [0]}]}
// Empty lists are left out; sizes are Kubernetes quantities of bytes (canonical, binary SI).
// Reading accepts the members in any order, each optional, and ignores unknown ones; a size
// must be a non-negative quantity of whole bytes that fits an int64.
#ifndef KUBESTAT_METRICS_API_SRC_RESOURCE_SET_JSON_H_
#define KUBESTAT_METRICS_API_SRC_RESOURCE_SET_JSON_H_

#include <simdjson.h>

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/metrics_api/objects.h"

namespace kubestat::metrics_api::internal {

void WriteResourceSet(JsonWriter& w, const ResourceSet& set);

// InvalidArgument "<path>.<member>: <reason>" for a member of the wrong type or a bad value.
[[nodiscard]] absl::StatusOr<ResourceSet> ReadResourceSet(simdjson::dom::element e,
                                                          const std::string& path);

}  // namespace kubestat::metrics_api::internal

#endif  // KUBESTAT_METRICS_API_SRC_RESOURCE_SET_JSON_H_
