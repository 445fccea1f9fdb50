// A client of the kubelet PodResources v1 API (the "podresources" socket).
//
// The kubelet serves gRPC in plaintext on a unix socket, by default
// /var/lib/kubelet/pod-resources/kubelet.sock. PodResourcesClient calls List (every pod with
// the exclusive CPUs, devices, memory blocks and DRA resources assigned to it and its
// containers), GetAllocatableResources (what the node can hand out) and Get (one pod), and
// returns plain C++ values; no protobuf type appears in this header.
//
// Units: CPU ids are the kernel's logical CPU numbers; memory sizes are bytes; NUMA nodes
// are the kernel's NUMA node ids.
//
// Errors (absl::Status codes; every message names the socket path):
// - kUnavailable: the socket does not exist, or nothing accepts connections on it.
// - kResourceExhausted: the kubelet's rate limit rejected the call (its message says
//   "rejected by rate limit"; the kubelet allows 100 calls/s with a burst of 10), or the
//   response exceeded ClientOptions::max_receive_message_bytes (the message names the
//   option).
// - kDeadlineExceeded: no answer within ClientOptions::call_timeout.
// - kUnimplemented: the kubelet does not have the method (GetAllocatableResources before
//   1.21, Get before 1.27: UNIMPLEMENTED), or has it switched off by a feature gate (the
//   kubelet then answers UNKNOWN "PodResources API ... disabled"); the message says which.
// - kNotFound: Get of a pod the kubelet does not run (it answers UNKNOWN "pod <name> in
//   namespace <ns> not found").
// - kInvalidArgument: Validate() rejected the options, or DecodeListResponse() got bytes
//   that are not a ListPodResourcesResponse.
// - any other gRPC status, carried over with its code.
//
// Thread-safety: a PodResourcesClient may be used from several threads at once. The
// DecodeXxx functions are pure.
#ifndef KUBESTAT_PODRESOURCES_CLIENT_H_
#define KUBESTAT_PODRESOURCES_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kubestat::podresources {

// The kubelet's default socket on Linux.
inline constexpr char kDefaultSocketPath[] = "/var/lib/kubelet/pod-resources/kubelet.sock";

// The value types below give every member an initializer ({}) so that code may build them
// with designated initializers naming only some fields (-Wmissing-field-initializers).

// Devices of one extended resource (device plugins).
struct Devices {
  std::string resource_name{};            // e.g. "vendor.com/gpu"
  std::vector<std::string> device_ids{};  // as the device plugin names them
  std::vector<int64_t> numa_nodes{};      // NUMA affinity; empty when unknown
  friend bool operator==(const Devices&, const Devices&) = default;
};

// A block of memory of one type (memory manager).
struct MemoryBlock {
  std::string memory_type{};  // a resource name: "memory", "hugepages-2Mi", ...
  uint64_t size_bytes = 0;
  std::vector<int64_t> numa_nodes{};  // NUMA nodes the block comes from
  friend bool operator==(const MemoryBlock&, const MemoryBlock&) = default;
};

// One allocated device of a DRA claim.
struct ClaimResource {
  std::vector<std::string> cdi_devices{};  // fully-qualified CDI names, "vendor.com/gpu=dev1"
  std::string driver_name{};               // kubelet 1.31+; empty before
  std::string pool_name{};                 // kubelet 1.31+
  std::string device_name{};               // kubelet 1.31+
  std::optional<std::string> share_id{};   // kubelet 1.35+; nullopt when not sent
  friend bool operator==(const ClaimResource&, const ClaimResource&) = default;
};

// Resources of one DRA claim used by a container.
struct DynamicResource {
  std::string claim_name{};
  std::string claim_namespace{};
  std::vector<ClaimResource> claim_resources{};
  friend bool operator==(const DynamicResource&, const DynamicResource&) = default;
};

// Resources assigned to one container.
struct ContainerResources {
  std::string name{};
  std::vector<Devices> devices{};
  std::vector<int64_t> cpu_ids{};  // exclusive CPUs; empty for shared-pool containers
  std::vector<MemoryBlock> memory{};
  std::vector<DynamicResource> dynamic_resources{};
  friend bool operator==(const ContainerResources&, const ContainerResources&) = default;
};

// Resources assigned to one pod.
struct PodResources {
  std::string name{};
  std::string namespace_name{};
  std::vector<ContainerResources> containers{};
  std::vector<int64_t> cpu_ids{};     // pod-level exclusive CPUs (newest kubelets only)
  std::vector<MemoryBlock> memory{};  // pod-level memory blocks (newest kubelets only)
  friend bool operator==(const PodResources&, const PodResources&) = default;
};

// What the node can allocate to containers.
struct AllocatableResources {
  std::vector<Devices> devices{};
  std::vector<int64_t> cpu_ids{};
  std::vector<MemoryBlock> memory{};
  friend bool operator==(const AllocatableResources&, const AllocatableResources&) = default;
};

struct ClientOptions {
  // Path of the kubelet's podresources unix socket. Must fit a unix socket address
  // (at most 107 bytes). Default: /var/lib/kubelet/pod-resources/kubelet.sock
  std::string socket_path = kDefaultSocketPath;
  // Deadline of each call, from the moment it starts. Positive and finite. Default: 10s
  absl::Duration call_timeout = absl::Seconds(10);
  // Largest response accepted, in bytes. Larger than gRPC's 4 MiB default because nodes
  // with many pods and devices answer List with more. At least 4096. Default: 16 MiB
  int max_receive_message_bytes = 16 * 1024 * 1024;

  // OK, or InvalidArgument naming the offending field.
  [[nodiscard]] absl::Status Validate() const;
};

// Counts of calls and failures since the client was created.
struct ClientStats {
  uint64_t calls = 0;              // List, GetAllocatableResources and Get calls started
  uint64_t failures = 0;           // calls that returned an error (every kind below included)
  uint64_t rate_limited = 0;       // failures because the kubelet's rate limit rejected the call
  uint64_t unavailable = 0;        // failures because no kubelet answered on the socket
  uint64_t deadline_exceeded = 0;  // failures because call_timeout passed
  uint64_t unimplemented = 0;      // failures because the kubelet lacks the method
};

class PodResourcesClient {
 public:
  // A client for options.socket_path. Does not connect yet (the kubelet may start later);
  // each call connects as needed. InvalidArgument when the options are invalid.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<PodResourcesClient>> Create(
      ClientOptions options);

  ~PodResourcesClient();
  PodResourcesClient(const PodResourcesClient&) = delete;
  PodResourcesClient& operator=(const PodResourcesClient&) = delete;

  // Every pod on the node, in the kubelet's order.
  [[nodiscard]] absl::StatusOr<std::vector<PodResources>> List();

  // What the node can allocate.
  [[nodiscard]] absl::StatusOr<AllocatableResources> GetAllocatableResources();

  // One pod (kubelet 1.27+).
  [[nodiscard]] absl::StatusOr<PodResources> Get(std::string_view namespace_name,
                                                 std::string_view name);

  ClientStats stats() const;
  const ClientOptions& options() const { return options_; }

 private:
  struct Rpc;  // gRPC channel and stub
  PodResourcesClient(ClientOptions options, std::unique_ptr<Rpc> rpc);

  // Counts a call to `method` and checks that the socket exists (Unavailable, counted as a
  // failure, when it does not).
  absl::Status BeginCall(const char* method);
  // Turns a failed call into the status described at the top of this header and counts it.
  absl::Status CallFailed(const char* method, int grpc_code, const std::string& message);

  ClientOptions options_;
  std::unique_ptr<Rpc> rpc_;
  std::atomic<uint64_t> calls_{0};
  std::atomic<uint64_t> failures_{0};
  std::atomic<uint64_t> rate_limited_{0};
  std::atomic<uint64_t> unavailable_{0};
  std::atomic<uint64_t> deadline_exceeded_{0};
  std::atomic<uint64_t> unimplemented_{0};
};

// Decoders of serialized responses (the bytes of a gRPC message body), apart from the
// transport so they can be tested and fuzzed alone. InvalidArgument when the bytes are not
// a valid message of that type; unknown fields (e.g. the removed DynamicResource.class_name)
// are skipped.
[[nodiscard]] absl::StatusOr<std::vector<PodResources>> DecodeListResponse(std::string_view bytes);
[[nodiscard]] absl::StatusOr<AllocatableResources> DecodeAllocatableResponse(
    std::string_view bytes);
[[nodiscard]] absl::StatusOr<PodResources> DecodeGetResponse(std::string_view bytes);

}  // namespace kubestat::podresources

#endif  // KUBESTAT_PODRESOURCES_CLIENT_H_
