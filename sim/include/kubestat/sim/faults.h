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
// FaultTable is thread-safe.
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

class FaultTable {
 public:
  Fault Get(const std::string& node) const;
  // kNone removes the entry.
  void Set(const std::string& node, Fault fault);
  // Every node with a fault other than kNone, by name.
  std::map<std::string, Fault> All() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, Fault> faults_;
};

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_FAULTS_H_
