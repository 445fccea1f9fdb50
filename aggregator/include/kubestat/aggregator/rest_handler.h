// RestHandler: the REST front end's routing, without a transport.
//
// Takes one request (method, raw path, raw query string) and returns the complete response
// (code, content type, body) and the route template it matched, for the HTTP self-metrics.
// RestServer feeds it from cpprestsdk; tests and benchmarks may call it directly.
//
// Paths served (a trailing '/' is ignored; {x} is one path segment, percent-decoded):
//   /api                                APIVersions (no core versions)
//   /apis                               APIGroupList: metrics.k8s.io/v1beta1, metrics/v1alpha1
//   /apis/{group}                       APIGroup (group: metrics.k8s.io or metrics)
//   /apis/{group}/{version}             APIResourceList: nodes, pods
//   /apis/{group}/{version}/nodes                          NodeMetricsList
//   /apis/{group}/{version}/nodes/{node}                   NodeMetrics
//   /apis/{group}/{version}/pods                           PodMetricsList, all namespaces
//   /apis/{group}/{version}/namespaces/{namespace}/pods        PodMetricsList of one namespace
//   /apis/{group}/{version}/namespaces/{namespace}/pods/{pod}  PodMetrics
//   /healthz   200 "ok"
//   /livez     200 "ok"; 500 with the reason when the last scrape round started more than
//              1.5 resolutions ago (measured from construction until the first round)
//   /readyz    200 "ok" when MetricsSource::Ready(), else 503 with the reason
// Documents are rendered by rest_render.h; JSON is always the answer (a client asking for
// protobuf, or for aggregated discovery, gets the plain JSON form, as metrics-server does).
//
// Errors are Kubernetes Status objects (application/json):
//   400 BadRequest   malformed labelSelector / fieldSelector, unsupported field label
//   404 NotFound     an unknown path ("the server could not find the requested resource"),
//                    including /namespaces and /namespaces/{namespace}; an unknown object
//                    (`nodes.metrics.k8s.io "x" not found`)
//   405 MethodNotAllowed  any method but GET
//   500 InternalError     an exception escaped rendering or the source
//   503 ServiceUnavailable  metric paths while the source is not Ready() (discovery and
//                    health paths answer)
// Size caps (413) are the transport's business (RestServer).
//
// Ownership: borrows the source and the clock, which must outlive the handler.
// Thread-safety: Handle() is const and safe to call concurrently when the source is.
#ifndef KUBESTAT_AGGREGATOR_REST_HANDLER_H_
#define KUBESTAT_AGGREGATOR_REST_HANDLER_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kubestat/aggregator/metrics_source.h"
#include "kubestat/core/clock.h"

namespace kubestat::aggregator {

inline constexpr std::string_view kContentTypeJson = "application/json";
inline constexpr std::string_view kContentTypeText = "text/plain; charset=utf-8";
// The route label of requests that matched no route.
inline constexpr std::string_view kRouteOther = "other";

struct RestRequest {
  std::string_view method;  // "GET", "POST", ... (case-sensitive, as HTTP defines)
  std::string_view path;    // raw, percent-encoded, starting with '/'
  std::string_view query;   // raw query string without the '?'; may be empty
};

struct RestResponse {
  int code = 200;
  std::string_view content_type = kContentTypeJson;
  std::string body;
  // The route template that matched ("/apis/metrics.k8s.io/v1beta1/nodes/{node}"), or
  // kRouteOther; points at static storage.
  std::string_view route = kRouteOther;
};

// What /livez checks.
struct LivenessCheck {
  // The start time of the newest scrape round; any time before the handler was built (e.g.
  // kZeroTime) means "none yet". An empty function disables the check (always live).
  std::function<Timestamp()> last_round_start;
  // The scrape resolution; /livez fails when the newest round started more than 1.5 of
  // these ago. Must be positive when last_round_start is set.
  Duration resolution{0};
};

class RestHandler {
 public:
  RestHandler(const MetricsSource& source, const Clock& clock, LivenessCheck liveness);

  // Never throws: an exception from the source or rendering becomes a 500 Status.
  RestResponse Handle(const RestRequest& request) const;

 private:
  // Sets *matched_route as soon as the path matched a metric route (for errors thrown later).
  RestResponse Dispatch(const RestRequest& request, std::string_view* matched_route) const;

  // The compact metrics/v1alpha1 items of every node of one snapshot (rest_render.h),
  // rendered by the first request that lists nodes after the snapshot changed.
  struct NodeItems {
    std::shared_ptr<const MetricsSnapshot> cut;
    std::vector<std::string> items;
  };
  std::shared_ptr<const NodeItems> NodeItemsOf(std::shared_ptr<const MetricsSnapshot> cut,
                                               Timestamp now) const;

  const MetricsSource& source_;
  const Clock& clock_;
  LivenessCheck liveness_;
  Timestamp started_;
  mutable std::mutex node_items_mu_;  // guards node_items_
  mutable std::shared_ptr<const NodeItems> node_items_;
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_REST_HANDLER_H_
