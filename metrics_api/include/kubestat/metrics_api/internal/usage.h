// What metrics.k8s.io shows of an object (usage, its window and timestamp), shared by the
// JSON and the protobuf renderers so that both encodings say the same. Internal to
// metrics_api: only metrics_api/ and the tests' reference renderer include it (tests/layout
// checks).
#ifndef KUBESTAT_METRICS_API_INTERNAL_USAGE_H_
#define KUBESTAT_METRICS_API_INTERNAL_USAGE_H_

#include <algorithm>
#include <cstdint>
#include <limits>

#include "kubestat/core/clock.h"
#include "kubestat/metrics_api/objects.h"

namespace kubestat::metrics_api::internal {

// Engine values are unsigned; a quantity is built from an int64. Values beyond int64 are
// not physical (9.2 exabytes, 9.2e9 cores), so clamping loses nothing real.
inline int64_t ClampToInt64(uint64_t value) {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  return static_cast<int64_t>(std::min(value, kMax));
}

// The newest end of the shortest windows (HasUsage must hold).
inline Timestamp UsageTimestamp(const ResourceWindows& windows) {
  return std::max(windows.cpu.front().endtime, windows.memory.front().endtime);
}

// The length of the shortest cpu window: metrics.k8s.io's `window` (HasUsage must hold).
inline Duration UsageWindow(const ResourceWindows& windows) { return windows.cpu.front().window; }

// A pod's timestamp: the newest of its containers' (Servable must hold).
inline Timestamp PodUsageTimestamp(const PodMetrics& pod) {
  Timestamp timestamp = UsageTimestamp(pod.containers.front().windows);
  for (const ContainerMetrics& container : pod.containers) {
    timestamp = std::max(timestamp, UsageTimestamp(container.windows));
  }
  return timestamp;
}

}  // namespace kubestat::metrics_api::internal

#endif  // KUBESTAT_METRICS_API_INTERNAL_USAGE_H_
