// Faults a fake kubelet can be told to exhibit, per node.
//
//  none       answer normally
//  timeout    accept the request and never answer (until the client gives up or the
//             simulator stops)
//  http500    500 with a short text body
//  garbage    200 with seeded random bytes
//  truncated  200 whose body is the first half of the real payload (Content-Length
//             matches what is sent, so the client sees a complete but cut document)
//  oversized  200 with a 64 MiB body, streamed in chunks, never held in memory
//  slowdrip   200 whose real payload is sent a few bytes per second
//  zero-timestamp
//             200 with the real values, every reading stamped 0 (the Unix epoch): summary
//             times "1970-01-01T00:00:00Z", /metrics/resource timestamp column 0
//
// Faults of a node's podresources socket (SimulatorOptions::podresources_dir), apart from
// the kubelet's HTTP faults:
//
//  none            List, GetAllocatableResources and Get answer (a kubelet 1.27+)
//  absent          no socket: the file is removed (a kubelet without the endpoint, or not
//                  running); set back to another fault, a new socket is made, as a
//                  restarted kubelet makes one
//  no-allocatable  GetAllocatableResources and Get answer UNIMPLEMENTED, as a kubelet 1.20
//                  (List only) does
//  no-get          Get answers UNIMPLEMENTED, as a kubelet 1.21-1.26 does
//  slow            every answer is held for SimulatorOptions::podresources_slow_delay
//
// The fault tables are thread-safe.
#ifndef KUBESTAT_SIM_FAULTS_H_
#define KUBESTAT_SIM_FAULTS_H_

#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kubestat::sim {

enum class Fault {
  kNone,
  kTimeout,
  kHttp500,
  kGarbage,
  kTruncated,
  kOversized,
  kSlowdrip,
  kZeroTimestamp,
};

std::string_view FaultName(Fault f);
// Accepts the names above (surrounding whitespace ignored); InvalidArgument otherwise.
[[nodiscard]] absl::StatusOr<Fault> ParseFault(std::string_view text);
// "node-0003=timeout,node-0007=http500"; empty text gives an empty map.
[[nodiscard]] absl::StatusOr<std::map<std::string, Fault>> ParseFaultList(std::string_view text);

enum class PodResourcesFault {
  kNone,
  kAbsent,
  kNoAllocatable,
  kNoGet,
  kSlow,
};

std::string_view PodResourcesFaultName(PodResourcesFault f);
// Accepts the names above (surrounding whitespace ignored); InvalidArgument otherwise.
[[nodiscard]] absl::StatusOr<PodResourcesFault> ParsePodResourcesFault(std::string_view text);
// "node-0003=absent,node-0007=no-allocatable"; empty text gives an empty map.
[[nodiscard]] absl::StatusOr<std::map<std::string, PodResourcesFault>> ParsePodResourcesFaultList(
    std::string_view text);

// The fault of each node; a node not listed has the fault F{} (none).
template <typename F>
class NodeFaultTable {
 public:
  F Get(const std::string& node) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = faults_.find(node);
    return it == faults_.end() ? F{} : it->second;
  }
  // F{} (none) removes the entry.
  void Set(const std::string& node, F fault) {
    std::lock_guard<std::mutex> lock(mu_);
    if (fault == F{}) {
      faults_.erase(node);
    } else {
      faults_[node] = fault;
    }
  }
  // Every node with a fault other than none, by name.
  std::map<std::string, F> All() const {
    std::lock_guard<std::mutex> lock(mu_);
    return faults_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, F> faults_;
};

using FaultTable = NodeFaultTable<Fault>;
using PodResourcesFaultTable = NodeFaultTable<PodResourcesFault>;

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_FAULTS_H_
