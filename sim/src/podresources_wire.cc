#include "kubestat/sim/podresources_wire.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kubestat/core/varint.h"

namespace kubestat::sim {
namespace {

// Wire types.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kFixed32 = 5;

// Field numbers (fixture: podresources-v1-wire.md).
namespace field {
// AllocatableResourcesResponse
constexpr uint32_t kAllocatableDevices = 1;
constexpr uint32_t kAllocatableCpuIds = 2;
constexpr uint32_t kAllocatableMemory = 3;
// ListPodResourcesResponse, GetPodResourcesResponse
constexpr uint32_t kPodResources = 1;
// PodResources
constexpr uint32_t kPodName = 1;
constexpr uint32_t kPodNamespace = 2;
constexpr uint32_t kPodContainers = 3;
// ContainerResources
constexpr uint32_t kContainerName = 1;
constexpr uint32_t kContainerDevices = 2;
constexpr uint32_t kContainerCpuIds = 3;
constexpr uint32_t kContainerMemory = 4;
// ContainerMemory
constexpr uint32_t kMemoryType = 1;
constexpr uint32_t kMemorySize = 2;
constexpr uint32_t kMemoryTopology = 3;
// ContainerDevices
constexpr uint32_t kDeviceResourceName = 1;
constexpr uint32_t kDeviceIds = 2;
constexpr uint32_t kDeviceTopology = 3;
// TopologyInfo
constexpr uint32_t kTopologyNodes = 1;
// NUMANode
constexpr uint32_t kNumaId = 1;
// GetPodResourcesRequest
constexpr uint32_t kRequestPodName = 1;
constexpr uint32_t kRequestPodNamespace = 2;
}  // namespace field

void PutTag(std::string& out, uint32_t number, uint32_t wire_type) {
  PutVarint(&out, (uint64_t{number} << 3) | wire_type);
}

void PutBytes(std::string& out, uint32_t number, std::string_view bytes) {
  PutTag(out, number, kLengthDelimited);
  PutVarint(&out, bytes.size());
  out.append(bytes);
}

// A proto3 singular string: left out when empty.
void PutString(std::string& out, uint32_t number, std::string_view text) {
  if (!text.empty()) PutBytes(out, number, text);
}

// A proto3 singular int64/uint64: left out when 0; negative int64 as ten bytes.
void PutInt(std::string& out, uint32_t number, uint64_t v) {
  if (v == 0) return;
  PutTag(out, number, kVarint);
  PutVarint(&out, v);
}

// A packed repeated int64: left out when empty.
void PutPacked(std::string& out, uint32_t number, const std::vector<int64_t>& values) {
  if (values.empty()) return;
  std::string packed;
  for (int64_t v : values) PutVarint(&packed, static_cast<uint64_t>(v));
  PutBytes(out, number, packed);
}

std::string Topology(const std::vector<int64_t>& numa_nodes) {
  std::string out;
  for (int64_t id : numa_nodes) {
    std::string node;
    PutInt(node, field::kNumaId, static_cast<uint64_t>(id));
    PutBytes(out, field::kTopologyNodes, node);
  }
  return out;
}

std::string Memory(const NumaMemory& m) {
  std::string out;
  PutString(out, field::kMemoryType, m.memory_type);
  PutInt(out, field::kMemorySize, m.size_bytes);
  PutBytes(out, field::kMemoryTopology, Topology(m.numa_nodes));
  return out;
}

std::string Devices(const DeviceGroup& d) {
  std::string out;
  PutString(out, field::kDeviceResourceName, d.resource_name);
  // Repeated strings keep empty elements.
  for (const std::string& id : d.device_ids) PutBytes(out, field::kDeviceIds, id);
  PutBytes(out, field::kDeviceTopology, Topology({d.numa_node}));
  return out;
}

std::string Pod(const PodResourcesEntry& pod) {
  std::string out;
  PutString(out, field::kPodName, pod.name);
  PutString(out, field::kPodNamespace, pod.namespace_name);
  for (const auto& [name, a] : pod.containers) {
    std::string container;
    PutString(container, field::kContainerName, name);
    for (const DeviceGroup& d : a.devices)
      PutBytes(container, field::kContainerDevices, Devices(d));
    PutPacked(container, field::kContainerCpuIds, a.cpu_ids);
    for (const NumaMemory& m : a.memory) PutBytes(container, field::kContainerMemory, Memory(m));
    PutBytes(out, field::kPodContainers, container);
  }
  return out;
}

// Reads a varint at `*pos`; false when it runs past the end or over ten bytes.
bool ReadVarint(std::string_view bytes, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (*pos >= bytes.size()) return false;
    const auto b = static_cast<uint8_t>(bytes[(*pos)++]);
    *v |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

}  // namespace

std::string EncodeAllocatableResponse(const NodeTopology& topology) {
  std::string out;
  for (const DeviceGroup& d : topology.devices) {
    PutBytes(out, field::kAllocatableDevices, Devices(d));
  }
  PutPacked(out, field::kAllocatableCpuIds, topology.allocatable_cpus);
  for (const NumaMemory& m : topology.memory) PutBytes(out, field::kAllocatableMemory, Memory(m));
  return out;
}

std::string EncodeListResponse(const std::vector<PodResourcesEntry>& pods) {
  std::string out;
  for (const PodResourcesEntry& pod : pods) PutBytes(out, field::kPodResources, Pod(pod));
  return out;
}

std::string EncodeGetResponse(const PodResourcesEntry& pod) {
  std::string out;
  PutBytes(out, field::kPodResources, Pod(pod));
  return out;
}

absl::StatusOr<GetPodRequest> DecodeGetRequest(std::string_view bytes) {
  GetPodRequest request;
  size_t pos = 0;
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a v1.GetPodResourcesRequest: ", why, " at byte ", pos));
  };
  while (pos < bytes.size()) {
    uint64_t tag;
    if (!ReadVarint(bytes, &pos, &tag)) return bad("truncated tag");
    const uint64_t number = tag >> 3;
    const auto wire_type = static_cast<uint32_t>(tag & 7);
    if (number == 0 || number > 0x1fffffff) return bad("field number out of range");
    std::string_view payload;
    switch (wire_type) {
      case kVarint: {
        uint64_t ignored;
        if (!ReadVarint(bytes, &pos, &ignored)) return bad("truncated varint");
        break;
      }
      case kFixed64:
      case kFixed32: {
        const size_t width = wire_type == kFixed64 ? 8 : 4;
        if (bytes.size() - pos < width) return bad("truncated fixed-width field");
        pos += width;
        break;
      }
      case kLengthDelimited: {
        uint64_t length;
        if (!ReadVarint(bytes, &pos, &length)) return bad("truncated length");
        if (length > bytes.size() - pos) return bad("length past the end");
        payload = bytes.substr(pos, static_cast<size_t>(length));
        pos += static_cast<size_t>(length);
        break;
      }
      default:
        return bad(absl::StrCat("wire type ", wire_type));
    }
    if (number == field::kRequestPodName || number == field::kRequestPodNamespace) {
      if (wire_type != kLengthDelimited) return bad("a name that is not length-delimited");
      (number == field::kRequestPodName ? request.pod_name : request.pod_namespace) =
          std::string(payload);
    }
  }
  return request;
}

}  // namespace kubestat::sim
