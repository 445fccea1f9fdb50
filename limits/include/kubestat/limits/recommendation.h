// Recommendation: the requests and limits recommended for one container of a workload, with
// where every value comes from, as metrics/v1alpha1 serves it (kind Recommendation).
//
// What it does. Recommend() takes the usage history of each container of a workload (its
// pods' samples merged), asks WantFor (recommend.h) for the wanted values, fits them into the
// namespace's LimitRanges together (Fit, fit.h: Pod items constrain the containers' sums) and
// returns one Recommendation per container. For each of requests.cpu, requests.memory,
// limits.cpu and limits.memory it says:
//   value       what to set (after the LimitRanges), as a Kubernetes quantity;
//   wanted      what the usage asked for, before the LimitRanges;
//   statistic   "95th percentile" (cpu request), "max" (cpu limit, memory request and limit),
//               or "declared" when the container has no usage yet (the pod spec's value is
//               kept, confidence 0);
//   usage       the statistic's value over the history;
//   margin      the fraction added to it;
//   history     samples, from, to and the time covered (to - from);
//   confidence  covered / the configured history, in [0, 1] (0 with fewer than 2 samples):
//               a week of a workload that peaks on Mondays is needed before a week's peak
//               is known, and the number says how much of it was seen;
//   boundBy     every LimitRange constraint that moved the value (empty when none did).
// When the LimitRanges contradict each other no pod is admitted in the namespace at all;
// `conflict` then says which bounds disagree and which one won (a max wins over a min: the
// values never ask for more than the namespace's ceilings).
//
// Units. cpu in millicores, memory in bytes (limit_range.h); times are Timestamps.
// Thread-safety. Values and pure functions.
#ifndef KUBESTAT_LIMITS_RECOMMENDATION_H_
#define KUBESTAT_LIMITS_RECOMMENDATION_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kubestat/core/clock.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/limits/fit.h"
#include "kubestat/limits/limit_range.h"
#include "kubestat/limits/recommend.h"
#include "kubestat/limits/workload.h"

namespace kubestat::limits {

// The samples a statistic is computed from.
struct History {
  uint64_t samples = 0;
  Timestamp from{};  // the oldest sample's time
  Timestamp to{};    // the newest sample's time
  Duration Covered() const { return samples == 0 ? Duration::zero() : to - from; }
  friend bool operator==(const History&, const History&) = default;
};

// One resource's usage of a container over its history.
struct ResourceUsage {
  UsageSummary summary;  // millicores or bytes
  History history;
};

// What is known of one container of a workload.
struct ContainerUsage {
  std::string name;
  std::array<ResourceUsage, 2> usage;  // indexed by Resource
  // The container's requests and limits as its pod spec declares them (kept where there is
  // no usage yet).
  Amounts declared_requests = {};
  Amounts declared_limits = {};
};

struct RecommendedValue {
  int64_t value = 0;   // after the LimitRanges
  int64_t wanted = 0;  // before them
  std::string statistic;
  double usage = 0;
  double margin = 0;
  History history;
  double confidence = 0;
  std::vector<BoundBy> bound_by;
};

struct Recommendation {
  std::string namespace_name;
  Workload workload;
  std::string container;
  size_t pods = 0;                           // pods of the workload seen now
  std::array<RecommendedValue, 2> requests;  // indexed by Resource
  std::array<RecommendedValue, 2> limits;    // indexed by Resource
  std::string conflict;                      // empty when the namespace admits the values

  std::string Name() const { return RecommendationName(workload, container); }
};

// The recommendations of one workload's containers, in the order given. `history` is the
// configured history length (for the confidence).
std::vector<Recommendation> Recommend(std::string namespace_name, const Workload& workload,
                                      size_t pods, std::span<const ContainerUsage> containers,
                                      std::span<const LimitRange> limit_ranges,
                                      const RecommendOptions& options, Duration history);

// The object (kind Recommendation, apiVersion metrics/v1alpha1) into `w`.
void WriteRecommendation(const Recommendation& recommendation, JsonWriter& w);
std::string RenderRecommendation(const Recommendation& recommendation, int indent);
// A RecommendationList.
std::string RenderRecommendationList(std::span<const Recommendation> recommendations, int indent);

}  // namespace kubestat::limits

#endif  // KUBESTAT_LIMITS_RECOMMENDATION_H_
