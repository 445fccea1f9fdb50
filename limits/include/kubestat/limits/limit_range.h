// LimitRange: what a namespace admits, as Kubernetes' LimitRanger admission plugin decides it.
//
// What it does. A LimitRange holds items of type Container or Pod, each with min, max,
// default (limit), defaultRequest and maxLimitRequestRatio per resource. For a pod created
// in the namespace Kubernetes
//  1. defaults the pod: a container that gives a limit but no request gets the limit as
//     its request (the API server's own defaulting, before admission);
//  2. applies, LimitRange by LimitRange, each Container item's default and defaultRequest
//     to every container whose limit or request of that resource is absent;
//  3. checks every item of every LimitRange (all are enforced, in any order): per container
//     for Container items, and on the sums over the containers for Pod items (a sum exists
//     only when every container gives the resource):
//       min:   a request is required, min <= request, and min <= limit when a limit is given;
//       max:   a limit is required, limit <= max, and request <= max when one is given;
//       maxLimitRequestRatio: request and limit both required and non-zero,
//              limit / request <= ratio.
// A LimitRange item as stored has been defaulted by the API server (WithApiDefaults): a
// Container item without a default takes its max, a defaultRequest absent takes the default,
// or else the min. ApplyDefaults, Check and Admit do exactly the above; Validate is the API
// server's validation of a LimitRange. Init containers and pod-level resources are not
// modelled (kubestat recommends for a pod's containers).
//
// Units. Only cpu and memory are held: cpu in millicores (a Quantity's MilliValue, rounded
// up as Kubernetes rounds), memory in bytes (Value, rounded up); a ratio in thousandths
// (4 is 4000). Other resources of a LimitRange (ephemeral-storage, extended resources) do
// not concern cpu and memory and are dropped when read. Kubernetes compares ratios as
// doubles; here the comparison is exact (limit * 1000 <= ratio_milli * request).
//
// Thread-safety. Values and pure functions: call them from any thread.
//
// Errors. Validate returns InvalidArgument naming the LimitRange, the item and the rule.
// Check returns violations as values, worded as LimitRanger words its errors.
#ifndef KUBESTAT_LIMITS_LIMIT_RANGE_H_
#define KUBESTAT_LIMITS_LIMIT_RANGE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kubestat::limits {

enum class Resource : uint8_t { kCpu = 0, kMemory = 1 };
inline constexpr std::array<Resource, 2> kResources = {Resource::kCpu, Resource::kMemory};

// "cpu", "memory".
std::string_view ResourceName(Resource resource);
// A value in the unit of `resource` as a Kubernetes Quantity: "250m", "1Gi".
std::string FormatAmount(Resource resource, int64_t value);
// A Kubernetes Quantity in the unit of `resource` (rounded up), or of a ratio (thousandths);
// InvalidArgument for text that is no Quantity, OutOfRange beyond int64.
[[nodiscard]] absl::StatusOr<int64_t> ParseAmount(Resource resource, std::string_view text);
[[nodiscard]] absl::StatusOr<int64_t> ParseRatio(std::string_view text);

// An amount per resource (millicores, bytes); nullopt when not given.
struct Amounts {
  std::optional<int64_t> cpu = {};
  std::optional<int64_t> memory = {};

  std::optional<int64_t>& operator[](Resource r) { return r == Resource::kCpu ? cpu : memory; }
  const std::optional<int64_t>& operator[](Resource r) const {
    return r == Resource::kCpu ? cpu : memory;
  }
  friend bool operator==(const Amounts&, const Amounts&) = default;
};

enum class LimitType : uint8_t { kContainer, kPod };
// "Container", "Pod".
std::string_view LimitTypeName(LimitType type);

// The fields of an item, as named in the API.
enum class Constraint : uint8_t { kMin, kMax, kMaxLimitRequestRatio };
// "min", "max", "maxLimitRequestRatio".
std::string_view ConstraintName(Constraint constraint);

struct LimitRangeItem {
  LimitType type = LimitType::kContainer;
  Amounts min = {};
  Amounts max = {};
  Amounts default_limit = {};            // `default`
  Amounts default_request = {};          // `defaultRequest`
  Amounts max_limit_request_ratio = {};  // thousandths: 4 is 4000
  friend bool operator==(const LimitRangeItem&, const LimitRangeItem&) = default;
};

struct LimitRange {
  std::string name;
  std::vector<LimitRangeItem> items;
  friend bool operator==(const LimitRange&, const LimitRange&) = default;
};

// One container's resources in a pod spec.
struct ContainerResources {
  std::string name;
  Amounts requests = {};
  Amounts limits = {};
  friend bool operator==(const ContainerResources&, const ContainerResources&) = default;
};

// The API server's defaulting of a stored item (SetDefaults_LimitRangeItem): for Container
// items, default := max where absent, then defaultRequest := default, or else min, where
// absent. Pod items are returned as they are. Idempotent.
LimitRangeItem WithApiDefaults(LimitRangeItem item);

// The API server's validation of a LimitRange (ValidateLimitRange, cpu and memory): every
// value >= 0; min <= max; default and defaultRequest only in Container items, each within
// [min, max], defaultRequest <= default; a ratio >= 1 and, with min and max, <= max/min.
[[nodiscard]] absl::Status Validate(const LimitRange& limit_range);

// Steps 1 and 2 above: the pod's containers as LimitRanger leaves them, LimitRanges taken in
// the order given, each item as the API server stores it (WithApiDefaults).
std::vector<ContainerResources> ApplyDefaults(std::span<const LimitRange> limit_ranges,
                                              std::vector<ContainerResources> containers);

// A reason the pod is refused.
struct Violation {
  std::string limit_range;
  LimitType type = LimitType::kContainer;
  Constraint constraint = Constraint::kMin;
  Resource resource = Resource::kCpu;
  std::string container;  // empty for a Pod item
  std::string message;    // as LimitRanger says it: "maximum cpu usage per Container is 2,
                          // but limit is 3"
};

// Step 3 on containers already defaulted: every violation, empty when admitted.
std::vector<Violation> Check(std::span<const LimitRange> limit_ranges,
                             std::span<const ContainerResources> containers);

// ApplyDefaults then Check: what LimitRanger refuses of a pod as it was written.
std::vector<Violation> Admit(std::span<const LimitRange> limit_ranges,
                             std::vector<ContainerResources> containers);

}  // namespace kubestat::limits

#endif  // KUBESTAT_LIMITS_LIMIT_RANGE_H_
