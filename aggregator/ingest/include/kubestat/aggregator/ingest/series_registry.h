// The store's names for series: SeriesKey <-> the opaque bytes kept in the store's series
// dictionary.
//
// Layout (version 1): a version byte (1), the kind byte, the resource byte, then node,
// namespace, pod and container, each as a varint length followed by the bytes. Decoding
// checks the version, the enum values, the lengths and that the fields a kind needs are
// set (and the others empty); malformed bytes give DataLoss, never a crash.
//
// Plain functions, thread-safe.
#ifndef KUBESTAT_AGGREGATOR_INGEST_SERIES_REGISTRY_H_
#define KUBESTAT_AGGREGATOR_INGEST_SERIES_REGISTRY_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kubestat/windows/series_key.h"
#include "kubestat/windows/window_engine.h"
#include "kubestat/windows/window_stats.h"

namespace kubestat::aggregator {

std::string EncodeSeriesKey(const windows::SeriesKey& key);
[[nodiscard]] absl::StatusOr<windows::SeriesKey> DecodeSeriesKey(std::string_view bytes);

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_INGEST_SERIES_REGISTRY_H_
