#include "kubestat/http/metrics_endpoint.h"

#include <string>

#include "kubestat/apimachinery/api_error.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace kubestat::http {

bool IsMetricsPath(std::string_view path) { return path == kMetricsPath || path == "/metrics/"; }

Response MetricsResponse(const Request& request, prometheus::Registry& registry) {
  if (request.method != "GET" && request.method != "HEAD") {
    return ErrorResponse(
        ApiError(405, StatusReason::kMethodNotAllowed,
                 "the server does not allow this method on the requested resource"),
        kMetricsPath);
  }
  Response response;
  response.route = kMetricsPath;
  response.content_type = std::string(kContentTypePrometheus);
  response.body = prometheus::TextSerializer().Serialize(registry.Collect());
  return response;
}

}  // namespace kubestat::http
