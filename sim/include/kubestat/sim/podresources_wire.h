// The kubelet's podresources v1 messages as bytes, written by hand from the protobuf
// encoding rules and the API's field numbers (../shared/fixtures/podresources-v1-wire.md),
// so that the simulator shares no generated code or decoder with the clients it tests.
//
// Encoding as a proto3 encoder writes it: fields in number order, scalars equal to their
// default (0, "") left out (so NUMANode{ID: 0} is an empty message), repeated int64 packed.
// Only what the simulator reports is written: no dynamic resources, no pod-level cpus or
// memory.
//
// Pure functions; thread-safe.
#ifndef KUBESTAT_SIM_PODRESOURCES_WIRE_H_
#define KUBESTAT_SIM_PODRESOURCES_WIRE_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "kubestat/sim/topology.h"

namespace kubestat::sim {

// One pod as List and Get report it.
struct PodResourcesEntry {
  std::string name;
  std::string namespace_name;
  // (container name, what it was given), in the pod's container order.
  std::vector<std::pair<std::string, ContainerAssignment>> containers;
};

// v1.AllocatableResourcesResponse {devices = 1, cpu_ids = 2, memory = 3}.
std::string EncodeAllocatableResponse(const NodeTopology& topology);
// v1.ListPodResourcesResponse {pod_resources = 1}.
std::string EncodeListResponse(const std::vector<PodResourcesEntry>& pods);
// v1.GetPodResourcesResponse {pod_resources = 1}.
std::string EncodeGetResponse(const PodResourcesEntry& pod);

// v1.GetPodResourcesRequest {pod_name = 1, pod_namespace = 2}.
struct GetPodRequest {
  std::string pod_name;
  std::string pod_namespace;
};
// Reads a GetPodResourcesRequest; unknown fields are skipped. InvalidArgument for bytes that
// are not a protobuf message (a length or varint running past the end, wire types 3 and 4,
// a field number 0) or whose fields 1 and 2 are not length-delimited.
[[nodiscard]] absl::StatusOr<GetPodRequest> DecodeGetRequest(std::string_view bytes);

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_PODRESOURCES_WIRE_H_
