// Fit: moves the requests and limits wanted for a pod's containers to the nearest values the
// namespace's LimitRanges admit, and says which constraint moved each value.
//
// What it does. For each resource (cpu and memory are checked independently by LimitRanger)
// the tightest bound of all LimitRanges is taken (the highest min, the lowest max, the
// lowest maxLimitRequestRatio, per Container and per Pod), then:
//  1. each container's request and limit are raised to the Container min and lowered to
//     the Container max;
//  2. a limit over maxLimitRequestRatio x request raises the request (limit / ratio,
//     rounded up), never lowers the limit: a lower limit would throttle cpu or kill on
//     memory below what the container was seen to use, a higher request only costs;
//  3. Pod items, on the sums: below the Pod min, requests are raised (first up to their
//     limits, then requests and limits together), in proportion to the room each has; over
//     the Pod max, limits are lowered (first down to their requests, then both toward the
//     Container min); over the Pod ratio, requests are raised toward their limits.
// The values written into a pod spec (AsPodSpec: both requests and limits, so no default
// applies) then pass Check() of limit_range.h, unless the LimitRanges contradict each other
// (a min above a max, the Containers' mins summing over the Pod max, ...), when no pod can
// be admitted at all: `conflict` then says which bounds disagree, and a max wins over a min
// (a max is applied after a min), so the values never ask for more than the namespace's
// ceilings, which are what keep its pods within its nodes and quota.
//
// Every value is at least 1 (1m of cpu, one byte): a ratio needs a non-zero request. A
// wanted limit below the wanted request is taken as the request.
//
// Thread-safety. Pure functions.
#ifndef KUBESTAT_LIMITS_FIT_H_
#define KUBESTAT_LIMITS_FIT_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kubestat/limits/limit_range.h"

namespace kubestat::limits {

// A constraint that moved a value.
struct BoundBy {
  std::string limit_range;
  LimitType type = LimitType::kContainer;
  Constraint constraint = Constraint::kMin;
  int64_t value = 0;  // the enforced value: millicores, bytes, or a ratio in thousandths
  friend bool operator==(const BoundBy&, const BoundBy&) = default;
};

// "Container max 2 (limits)": for messages.
std::string Describe(Resource resource, const BoundBy& bound);

struct Wanted {
  int64_t request = 0;
  int64_t limit = 0;
};

struct ContainerWant {
  std::string name;
  std::array<Wanted, 2> want;  // indexed by Resource
};

struct FittedValue {
  int64_t value = 0;
  std::vector<BoundBy> bound_by;  // empty when the wanted value was admitted as it was
};

struct FittedResource {
  FittedValue request;
  FittedValue limit;
};

struct FittedContainer {
  std::string name;
  std::array<FittedResource, 2> resources;  // indexed by Resource

  const FittedResource& operator[](Resource r) const { return resources[static_cast<size_t>(r)]; }
};

struct FittedPod {
  std::vector<FittedContainer> containers;
  // Empty when the values are admitted; otherwise why no pod is admitted in the namespace.
  std::string conflict;
};

FittedPod Fit(std::span<const LimitRange> limit_ranges, std::span<const ContainerWant> wants);

// The fitted values as a pod spec's containers: requests and limits of cpu and memory.
std::vector<ContainerResources> AsPodSpec(const FittedPod& pod);

}  // namespace kubestat::limits

#endif  // KUBESTAT_LIMITS_FIT_H_
