// Checking the sample times of a decoded scrape against the time the scrape was made.
//
// Every cpu, memory and swap reading of a NodeScrape (the node's, its system containers',
// its pods' and their containers') carries the time the kubelet took it. A live kubelet
// stamps its readings within seconds (its stats housekeeping interval) of answering, so a
// reading that lies far from the time the answer arrived is wrong: a timestamp of 0 (the
// Unix epoch, e.g. a /metrics/resource timestamp column of 0), Go's zero time
// ("0001-01-01T00:00:00Z"), a stale cache, or a node clock far off. Filed at its stamped
// time, such a value would land in the wrong windows, and a time far ahead would make every
// later scrape of the node look older than it; so the scrape is refused as a whole (the
// scheduler counts it as a failed scrape with reason bad_timestamp, and the node keeps the
// data it had).
//
// Start times (start_time of the node, a pod, a container) are not readings and are not
// checked; a scrape without any reading passes.
//
// Pure functions; thread-safe.
#ifndef KUBESTAT_SCRAPERS_SAMPLE_TIMES_H_
#define KUBESTAT_SCRAPERS_SAMPLE_TIMES_H_

#include <chrono>

#include "absl/status/status.h"
#include "kubestat/core/clock.h"
#include "kubestat/scrapers/node_scrape.h"

namespace kubestat::scrapers {

// The failure reason (fetch_error.h) of a scrape refused by CheckSampleTimes.
inline constexpr char kBadTimestampReason[] = "bad_timestamp";

struct SampleTimeLimits {
  // A reading taken more than this before the scrape is refused (--max-sample-age).
  // Default: 10m
  Duration max_age = std::chrono::minutes(10);
  // A reading stamped more than this after the scrape is refused (--max-sample-ahead).
  // Default: 10m
  Duration max_ahead = std::chrono::minutes(10);

  // InvalidArgument naming the flag when a limit is not positive.
  [[nodiscard]] absl::Status Validate() const;
};

// OK when every reading of `scrape` was taken within [scrape_time - max_age, scrape_time +
// max_ahead] (both ends included). Otherwise InvalidArgument with failure reason
// kBadTimestampReason, whose message gives the node, how many readings are out of range,
// and the first of them (which object and resource, its time, the scrape's time, the limit
// it broke).
[[nodiscard]] absl::Status CheckSampleTimes(const NodeScrape& scrape, Timestamp scrape_time,
                                            const SampleTimeLimits& limits);

}  // namespace kubestat::scrapers

#endif  // KUBESTAT_SCRAPERS_SAMPLE_TIMES_H_
