// Decoding the kubelet's GET /metrics/resource (Prometheus text exposition format 0.0.4)
// into a NodeScrape.
//
// What is read (both the older `[ALPHA]`/`scrape_error` and the newer
// `[STABLE]`/`resource_scrape_error` forms):
//   node_cpu_usage_seconds_total, node_memory_working_set_bytes, node_swap_usage_bytes,
//   container_cpu_usage_seconds_total{container,namespace,pod},
//   container_memory_working_set_bytes{…}, container_swap_usage_bytes{…},
//   container_start_time_seconds{…},
//   pod_cpu_usage_seconds_total{namespace,pod}, pod_memory_working_set_bytes{…},
//   pod_swap_usage_bytes{…}, scrape_error, resource_scrape_error.
// Every other metric, `#` line (HELP, TYPE, `# EOF`, comments) and blank line is skipped.
// Lines may end in "\n" or "\r\n"; the last line needs no newline. Label values may hold
// the escapes \" \\ \n. Each sample's time is its millisecond timestamp column, or
// `scrape_time` when the column is absent. cpu seconds become core-nanoseconds (rounded to
// the nearest nanosecond); container_start_time_seconds becomes a Timestamp. The format has
// no pod uid (PodScrape::uid stays empty) and no nano-cores (usage_nano_cores stays
// nullopt). Pods and containers appear in the order they are first seen.
//
// Errors: a line that is not valid exposition syntax (unterminated label value, missing
// value, unparseable number or timestamp, …) → InvalidArgument naming the line number, as
// a Prometheus scraper would reject it. A well-formed sample with an unusable value only
// drops that series and is counted in NodeScrape::issues: negative, NaN, ±Inf or above 2^63
// (kAbsurdValue; this catches the 1.8446743709127774e+19 uint64 underflow some kubelets
// write for swap), a timestamp out of range (kBadTimestamp), a container/pod series without
// its pod, namespace or container label (kMissingField), a series seen twice (kDuplicate;
// the first is kept). A scrape_error / resource_scrape_error of 1 is counted as
// kKubeletScrapeError (the samples that were present are still returned).
//
// Performance: one pass, no regex, no allocation per line beyond the strings kept in the
// result. Thread-safety: a pure function; call it from any thread.
#ifndef KUBESTAT_SCRAPERS_RESOURCE_METRICS_DECODER_H_
#define KUBESTAT_SCRAPERS_RESOURCE_METRICS_DECODER_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/scrapers/node_scrape.h"

namespace kubestat::scrapers {

// Decodes a /metrics/resource body scraped from node `node_name` at `scrape_time` (the
// format carries neither; both are copied into the result: node_name as
// NodeScrape::node_name, scrape_time for samples without a timestamp column).
[[nodiscard]] absl::StatusOr<NodeScrape> DecodeResourceMetrics(std::string_view text,
                                                               std::string_view node_name,
                                                               Timestamp scrape_time);

}  // namespace kubestat::scrapers

#endif  // KUBESTAT_SCRAPERS_RESOURCE_METRICS_DECODER_H_
