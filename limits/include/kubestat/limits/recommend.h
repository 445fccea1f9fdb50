// Recommend: the requests and limits a container's usage asks for, before the LimitRanges.
//
// What it does. From a summary of a container's usage over its history (the median, a chosen
// percentile of cpu, the peaks), with the statistic and margin of RecommendOptions:
//   cpu request    = cpu percentile x (1 + cpu margin)
//   cpu limit      = cpu max x (1 + cpu margin)
//   memory request = memory limit = memory max x (1 + memory margin)
// rounded up to whole millicores and bytes. Fit() (fit.h) then moves these into what the
// namespace admits. The defaults and why they are what they are: docs/recommendations.md.
//
// Thread-safety. Pure functions.
#ifndef KUBESTAT_LIMITS_RECOMMEND_H_
#define KUBESTAT_LIMITS_RECOMMEND_H_

#include <string>

#include "absl/status/status.h"
#include "kubestat/limits/fit.h"

namespace kubestat::limits {

struct RecommendOptions {
  // The percentile of cpu usage a cpu request covers, in (0, 100]. Default: 95
  double cpu_percentile = 95;
  // Added to the cpu statistic, a fraction. Default: 0.15
  double cpu_margin = 0.15;
  // Added to the memory peak, a fraction. Default: 0.15
  double memory_margin = 0.15;

  // InvalidArgument naming the flag (--recommend-cpu-percentile, ...) of a bad value.
  [[nodiscard]] absl::Status Validate() const;
};

// One resource's usage over a history: millicores or bytes.
struct UsageSummary {
  double p50 = 0;
  double percentile = 0;  // cpu: RecommendOptions::cpu_percentile; memory: unused
  double max = 0;
};

// The wanted request and limit of each resource, indexed by Resource.
ContainerWant WantFor(std::string name, const UsageSummary& cpu, const UsageSummary& memory,
                      const RecommendOptions& options);

}  // namespace kubestat::limits

#endif  // KUBESTAT_LIMITS_RECOMMEND_H_
