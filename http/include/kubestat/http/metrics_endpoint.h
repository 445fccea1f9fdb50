// The /metrics answer of every kubestat server: the Prometheus text exposition (format
// 0.0.4) of a registry, for GET and HEAD; any other method is a 405 Status.
//
// Thread-safety: safe from any thread (prometheus-cpp's registries are).
#ifndef KUBESTAT_HTTP_METRICS_ENDPOINT_H_
#define KUBESTAT_HTTP_METRICS_ENDPOINT_H_

#include <string_view>

#include "kubestat/http/server.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::http {

inline constexpr std::string_view kMetricsPath = "/metrics";
inline constexpr std::string_view kContentTypePrometheus = "text/plain; version=0.0.4";

// Whether `path` is the metrics path ("/metrics", or "/metrics/").
bool IsMetricsPath(std::string_view path);

Response MetricsResponse(const Request& request, prometheus::Registry& registry);

}  // namespace kubestat::http

#endif  // KUBESTAT_HTTP_METRICS_ENDPOINT_H_
