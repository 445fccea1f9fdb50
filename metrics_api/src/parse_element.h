// The object readers of parse.h over a document that is already parsed, for readers of
// documents that hold objects (the bulk write body): same checks and messages as
// ParseNodeMetrics / ParsePodMetrics, without rendering and parsing each object again.
#ifndef KUBESTAT_METRICS_API_SRC_PARSE_ELEMENT_H_
#define KUBESTAT_METRICS_API_SRC_PARSE_ELEMENT_H_

#include <simdjson.h>

#include "absl/status/statusor.h"
#include "kubestat/metrics_api/parse.h"

namespace kubestat::metrics_api {

[[nodiscard]] absl::StatusOr<Parsed<NodeMetrics>> NodeMetricsFrom(simdjson::dom::element doc);
[[nodiscard]] absl::StatusOr<Parsed<PodMetrics>> PodMetricsFrom(simdjson::dom::element doc);

}  // namespace kubestat::metrics_api

#endif  // KUBESTAT_METRICS_API_SRC_PARSE_ELEMENT_H_
