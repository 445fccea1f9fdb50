// The simulator's LimitRanges (core/v1): what the fake kube-apiserver stores of one, how a
// PUT body becomes one, and its JSON. The simulator keeps each LimitRange's `spec` as the
// JSON it was given (minified), without interpreting it: what a LimitRange means is the
// business of the code under test, not of the simulator.
#ifndef KUBESTAT_SIM_SRC_LIMIT_RANGES_H_
#define KUBESTAT_SIM_SRC_LIMIT_RANGES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"

namespace kubestat::sim {

struct SimLimitRange {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string spec_json;  // {"limits":[...]}, minified
  Timestamp created;
};

// The LimitRanges a simulated cluster starts with: "limits" in namespace shop (Container
// cpu 50m..1, memory 64Mi..512Mi, cpu limit/request at most 4; Pod memory at most 1Gi).
std::vector<SimLimitRange> DefaultLimitRanges(Timestamp created);

// A UUID-shaped uid made from a hash.
std::string LimitRangeUid(uint64_t hash);

// The `spec` of a PUT body: a LimitRange object ({"spec":{"limits":[...]}, ...}) or its spec
// alone ({"limits":[...]}). InvalidArgument for a body that is not JSON or has no `limits`
// array; the spec comes back minified.
[[nodiscard]] absl::StatusOr<std::string> ParseLimitRangeSpec(std::string_view body);

// The object as kube-apiserver serves it.
void AppendLimitRangeJson(std::string& out, const SimLimitRange& lr, uint64_t resource_version);

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_LIMIT_RANGES_H_
