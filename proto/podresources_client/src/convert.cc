#include "convert.h"

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kubestat::podresources {
namespace {

// Protobuf parses at most INT_MAX bytes at once; gRPC never delivers more.
bool FitsParser(std::string_view bytes) { return bytes.size() <= static_cast<size_t>(INT_MAX); }

std::vector<int64_t> NumaNodes(const v1::TopologyInfo& topology) {
  std::vector<int64_t> nodes;
  nodes.reserve(topology.nodes_size());
  for (const v1::NUMANode& node : topology.nodes()) nodes.push_back(node.id());
  return nodes;
}

std::vector<int64_t> CpuIds(const google::protobuf::RepeatedField<int64_t>& ids) {
  return std::vector<int64_t>(ids.begin(), ids.end());
}

std::vector<Devices> ConvertDevices(
    const google::protobuf::RepeatedPtrField<v1::ContainerDevices>& in) {
  std::vector<Devices> out;
  out.reserve(in.size());
  for (const v1::ContainerDevices& d : in) {
    out.push_back(Devices{.resource_name = d.resource_name(),
                          .device_ids = {d.device_ids().begin(), d.device_ids().end()},
                          .numa_nodes = NumaNodes(d.topology())});
  }
  return out;
}

std::vector<MemoryBlock> ConvertMemory(
    const google::protobuf::RepeatedPtrField<v1::ContainerMemory>& in) {
  std::vector<MemoryBlock> out;
  out.reserve(in.size());
  for (const v1::ContainerMemory& m : in) {
    out.push_back(MemoryBlock{.memory_type = m.memory_type(),
                              .size_bytes = m.size(),
                              .numa_nodes = NumaNodes(m.topology())});
  }
  return out;
}

std::vector<DynamicResource> ConvertDynamic(
    const google::protobuf::RepeatedPtrField<v1::DynamicResource>& in) {
  std::vector<DynamicResource> out;
  out.reserve(in.size());
  for (const v1::DynamicResource& d : in) {
    DynamicResource resource{.claim_name = d.claim_name(),
                             .claim_namespace = d.claim_namespace(),
                             .claim_resources = {}};
    resource.claim_resources.reserve(d.claim_resources_size());
    for (const v1::ClaimResource& c : d.claim_resources()) {
      ClaimResource claim{.cdi_devices = {},
                          .driver_name = c.driver_name(),
                          .pool_name = c.pool_name(),
                          .device_name = c.device_name(),
                          .share_id = std::nullopt};
      claim.cdi_devices.reserve(c.cdi_devices_size());
      for (const v1::CDIDevice& cdi : c.cdi_devices()) claim.cdi_devices.push_back(cdi.name());
      if (c.has_share_id()) claim.share_id = c.share_id();
      resource.claim_resources.push_back(std::move(claim));
    }
    out.push_back(std::move(resource));
  }
  return out;
}

}  // namespace

PodResources FromProto(const v1::PodResources& p) {
  PodResources pod{.name = p.name(),
                   .namespace_name = p.namespace_(),
                   .containers = {},
                   .cpu_ids = CpuIds(p.cpu_ids()),
                   .memory = ConvertMemory(p.memory())};
  pod.containers.reserve(p.containers_size());
  for (const v1::ContainerResources& c : p.containers()) {
    pod.containers.push_back(
        ContainerResources{.name = c.name(),
                           .devices = ConvertDevices(c.devices()),
                           .cpu_ids = CpuIds(c.cpu_ids()),
                           .memory = ConvertMemory(c.memory()),
                           .dynamic_resources = ConvertDynamic(c.dynamic_resources())});
  }
  return pod;
}

std::vector<PodResources> FromProto(const v1::ListPodResourcesResponse& response) {
  std::vector<PodResources> pods;
  pods.reserve(response.pod_resources_size());
  for (const v1::PodResources& p : response.pod_resources()) pods.push_back(FromProto(p));
  return pods;
}

AllocatableResources FromProto(const v1::AllocatableResourcesResponse& response) {
  return AllocatableResources{.devices = ConvertDevices(response.devices()),
                              .cpu_ids = CpuIds(response.cpu_ids()),
                              .memory = ConvertMemory(response.memory())};
}

absl::StatusOr<std::vector<PodResources>> DecodeListResponse(std::string_view bytes) {
  v1::ListPodResourcesResponse response;
  if (!FitsParser(bytes) ||
      !response.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "podresources: ", bytes.size(), " bytes are not a valid v1.ListPodResourcesResponse"));
  }
  return FromProto(response);
}

absl::StatusOr<AllocatableResources> DecodeAllocatableResponse(std::string_view bytes) {
  v1::AllocatableResourcesResponse response;
  if (!FitsParser(bytes) ||
      !response.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "podresources: ", bytes.size(), " bytes are not a valid v1.AllocatableResourcesResponse"));
  }
  return FromProto(response);
}

absl::StatusOr<PodResources> DecodeGetResponse(std::string_view bytes) {
  v1::GetPodResourcesResponse response;
  if (!FitsParser(bytes) ||
      !response.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "podresources: ", bytes.size(), " bytes are not a valid v1.GetPodResourcesResponse"));
  }
  return FromProto(response.pod_resources());
}

}  // namespace kubestat::podresources
