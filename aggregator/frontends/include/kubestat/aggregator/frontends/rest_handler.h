// RestHandler: the REST front end's routing, without a transport.
//
// Takes one request (method, raw path, raw query string) and returns the complete response
// (code, content type, body) and the route template it matched, for the HTTP self-metrics.
// RestServer feeds it from cpprestsdk; tests and benchmarks may call it directly.
//
// Paths served (a trailing '/' is ignored; {x} is one path segment, percent-decoded):
//   /api                                APIVersions (no core versions)
//   /apis                               APIGroupList: metrics.k8s.io (v1 preferred, v1beta1),
//                                       metrics (v1alpha1)
//   /apis/{group}                       APIGroup (group: metrics.k8s.io or metrics)
//   /apis/{group}/{version}             APIResourceList: nodes, pods
//   /apis/{group}/{version}/nodes                          NodeMetricsList
//   /apis/{group}/{version}/nodes/{node}                   NodeMetrics
//   /apis/{group}/{version}/pods                           PodMetricsList, all namespaces
//   /apis/{group}/{version}/namespaces/{namespace}/pods        PodMetricsList of one namespace
//   /apis/{group}/{version}/namespaces/{namespace}/pods/{pod}  PodMetrics
//   /apis/metrics/v1alpha1/recommendations                         RecommendationList, every
//                                       namespace (with a Recommender; see recommender.h)
//   /apis/metrics/v1alpha1/namespaces/{namespace}/recommendations   RecommendationList of one
//                                       namespace; 404 for a namespace without pods
//   /apis/metrics/v1alpha1/namespaces/{namespace}/recommendations/{name}  Recommendation
//       Lists take `pretty`, `labelSelector` (workloads with a pod whose labels match) and
//       `minConfidence` (a number in [0, 1]: recommendations whose lowest confidence is at
//       least that); a bad value is 400 BadRequest. Authorized as the resource
//       `recommendations` of group `metrics` in the namespace (get, list).
//   /healthz   200 "ok"
//   /livez     the livez checks (http/health_checks.h: 200 "ok", or 500 listing them, with
//              the reasons under ?verbose): ping, and scrape-rounds, failing when the last
//              scrape round started more than 1.5 resolutions ago (measured from construction
//              until the first round)
//   /readyz    the readyz checks (503 when one fails): ping, and startup, failing until
//              MetricsSource::Ready(); the owner adds its own with health() before serving
// {group}/{version} is metrics.k8s.io/v1, metrics.k8s.io/v1beta1 (the same objects and
// answers, each under its own apiVersion and route) or metrics/v1alpha1.
// Documents are rendered by metrics_api (render.h, render_protobuf.h, discovery.h) and lists
// selected and paged by its ListQuery (query.h: namespace, selectors, limit/continue).
//
// Encodings (metrics_api/encoding.h, from RestRequest::accept): metrics.k8s.io objects and
// lists are answered in the Kubernetes protobuf encoding (application/vnd.kubernetes.protobuf)
// to a client that prefers it, as client-go and kubectl top do
// ("application/vnd.kubernetes.protobuf, */*"), else in JSON; metrics/v1alpha1 in JSON. An
// Accept that admits nothing a metric route offers is 406 NotAcceptable. Every answer of a
// metric route carries `Vary: Accept`. Discovery documents (a client asking for protobuf or for
// aggregated discovery gets the plain JSON form, as metrics-server does), health answers and
// Status errors are written as before, whatever the Accept.
//
// Errors are Kubernetes Status objects (application/json):
//   400 BadRequest   malformed labelSelector / fieldSelector, unsupported field label
//   404 NotFound     an unknown path ("the server could not find the requested resource"),
//                    including /namespaces and /namespaces/{namespace}; an unknown object
//                    (`nodes.metrics.k8s.io "x" not found`)
//   405 MethodNotAllowed  any method but GET
//   406 NotAcceptable     an Accept that admits neither JSON nor (metrics.k8s.io) protobuf
//   500 InternalError     an exception escaped rendering or the source
//   503 ServiceUnavailable  metric paths while the source is not Ready() (discovery and
//                    health paths answer)
// Size caps (413) are the transport's business (RestServer).
//
// Compression: when the request accepts gzip (RestRequest::accepts_gzip, from its
// Accept-Encoding header) and compression is on, a body of at least
// ResponseCompression::min_bytes is sent gzip-compressed (level 1, as the kube-apiserver
// does; Go clients such as kubectl and the HPA controller ask for it). The gzip form of a
// whole metrics/v1alpha1 list (every node, or every pod, with no selector) depends only on
// the snapshot, so it is made once per snapshot, by the first request that needs it, and
// served to every later one.
//
// Ownership: borrows the source and the clock, which must outlive the handler.
// Thread-safety: Handle() is const and safe to call concurrently when the source is.
#ifndef KUBESTAT_AGGREGATOR_FRONTENDS_REST_HANDLER_H_
#define KUBESTAT_AGGREGATOR_FRONTENDS_REST_HANDLER_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kubestat/aggregator/query/metrics_source.h"
#include "kubestat/aggregator/query/recommender.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/time.h"
#include "kubestat/http/health_checks.h"
#include "kubestat/metrics_api/encoding.h"
#include "kubestat/metrics_api/query.h"
#include "kubestat/metrics_api/render.h"

namespace kubestat::aggregator {

inline constexpr std::string_view kContentTypeJson = "application/json";
inline constexpr std::string_view kContentTypeText = "text/plain; charset=utf-8";
// The route label of requests that matched no route.
inline constexpr std::string_view kRouteOther = "other";

struct RestRequest {
  std::string_view method;       // "GET", "POST", ... (case-sensitive, as HTTP defines)
  std::string_view path;         // raw, percent-encoded, starting with '/'
  std::string_view query;        // raw query string without the '?'; may be empty
  bool accepts_gzip = false;     // the client's Accept-Encoding admits gzip (AcceptsGzip)
  std::string_view accept = {};  // the client's Accept (every field, comma-joined); "" when absent
};

inline constexpr std::string_view kContentEncodingGzip = "gzip";

struct RestResponse {
  int code = 200;
  std::string_view content_type = kContentTypeJson;
  // The body's Content-Encoding: kContentEncodingGzip, or empty for the bytes as they are.
  std::string_view content_encoding;
  std::string body;
  // The route template that matched ("/apis/metrics.k8s.io/v1beta1/nodes/{node}"), or
  // kRouteOther; points at static storage.
  std::string_view route = kRouteOther;
  // The answer depends on the request's Accept: sent with `Vary: Accept`.
  bool varies_by_accept = false;
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

// When answers are gzip-compressed for clients that accept it.
struct ResponseCompression {
  // Compress bodies for clients that accept gzip. Default: true
  bool enabled = true;
  // Smallest body compressed: below it compression saves too little to pay for itself (the
  // kube-apiserver's threshold). Default: 131072
  size_t min_bytes = size_t{128} * 1024;
};

// Compresses response->body in place (and sets content_encoding) when compression is
// enabled, the client accepts gzip, the body is not already encoded and has at least
// min_bytes; otherwise leaves the response as it is.
void CompressResponse(const ResponseCompression& compression, bool accepts_gzip,
                      RestResponse* response);

// The oldest usage timestamp metrics.k8s.io serves with `max_age`: max_age before the newest
// usage the snapshot shows (`newest_usage`), so a node whose scrapes fail, and a pod its node
// no longer reports, leave within max_age of the other nodes' newer samples, while a late
// publication, which ages every object alike, hides none. The reference is kept within
// [now - max_age, now]: a kubelet whose clock runs ahead cannot hide the others, and when no
// node is scraped at all, everything leaves within twice max_age.
Timestamp FreshSince(Timestamp newest_usage, Timestamp now, Duration max_age);

namespace internal {
struct MetricsRequest;
}  // namespace internal

class RestHandler {
 public:
  // metrics.k8s.io leaves out (lists) and answers NotFound for (gets) the objects whose
  // newest sample is more than `metrics_max_age` older than the newest sample of any node
  // (FreshSince), as metrics-server drops what its last scrapes did not refresh;
  // metrics/v1alpha1 serves them. Zero: nothing is left out.
  RestHandler(const MetricsSource& source, const Clock& clock, LivenessCheck liveness,
              ResponseCompression compression = {}, Duration metrics_max_age = Duration::zero());

  // Never throws: an exception from the source or rendering becomes a 500 Status.
  RestResponse Handle(const RestRequest& request) const;

  // Serves the recommendations from `recommender` (not owned; must outlive the handler);
  // without one they are 404. Call before serving.
  void SetRecommender(const Recommender* recommender) { recommender_ = recommender; }

  // The checks /livez and /readyz answer with; add more before serving.
  http::HealthChecks& health() { return health_; }
  const http::HealthChecks& health() const { return health_; }

  // What Prepare() made.
  struct Prepared {
    bool node_items = false;  // the metrics/v1alpha1 node items
    bool nodes_gzip = false;  // the gzip form of the whole metrics/v1alpha1 node list
    bool pods_gzip = false;   // the gzip form of the whole metrics/v1alpha1 pod list
  };
  // Makes, for the source's newest snapshot and on the calling thread, the per-snapshot parts
  // that requests used within the last kPrepareIfAskedWithin, so that no request waits for
  // them after a publish. Meant to be called right after each publish (by the thread that
  // publishes); parts nobody asked for are left to the first request that needs them, and
  // a snapshot already prepared is not prepared again. Thread-safe with Handle().
  Prepared Prepare() const;
  static constexpr Duration kPrepareIfAskedWithin = std::chrono::minutes(1);

 private:
  // The recommendations routes (`rest` is the path after /apis/metrics/v1alpha1).
  std::optional<RestResponse> HandleRecommendations(const RestRequest& request,
                                                    std::vector<std::string>& rest) const;
  // Sets *matched_route as soon as the path matched a metric route (for errors thrown later).
  RestResponse Dispatch(const RestRequest& request, std::string_view* matched_route) const;
  // /api, /apis and the health endpoints (`first`: the path's one segment).
  RestResponse ServeTopLevel(const RestRequest& request, std::string_view first) const;
  // A routed request for metric objects (internal::MetricsRequest, rest_handler.cc): checked
  // (method, Accept, readiness, query), then the nodes' or the pods' answer.
  RestResponse ServeMetrics(const RestRequest& request,
                            const internal::MetricsRequest& metrics) const;
  // The answer of a GET of nodes or node, pods or pod; NotFound for an object not served.
  // `whole_list_gzip`: the request may take the kept gzip form of a whole list.
  RestResponse ServeNodes(const internal::MetricsRequest& metrics,
                          const metrics_api::ListQuery& query,
                          const metrics_api::RenderContext& ctx, metrics_api::Encoding encoding,
                          bool whole_list_gzip) const;
  RestResponse ServePods(const internal::MetricsRequest& metrics,
                         const metrics_api::ListQuery& query, const metrics_api::RenderContext& ctx,
                         metrics_api::Encoding encoding, bool whole_list_gzip) const;

  // What is derived from one snapshot alone, each part made once, by Prepare() or the
  // first request that needs it (others wait for it rather than repeat it).
  struct SnapshotCache {
    std::shared_ptr<const MetricsSnapshot> cut;
    // The compact metrics/v1alpha1 item of every node (RenderNodeListItem), in cut's order.
    std::once_flag node_items_once;
    std::vector<std::string> node_items;
    // The gzip form of the whole metrics/v1alpha1 node list and pod list (no selector, not
    // pretty); empty when that list is under the compression threshold.
    std::once_flag nodes_gzip_once;
    std::string nodes_gzip;
    std::once_flag pods_gzip_once;
    std::string pods_gzip;
  };
  // The cache of `cut`: the kept one when it is cut's, else a new one, kept when cut is
  // still the source's newest snapshot (a request that read an older one does not evict it).
  std::shared_ptr<SnapshotCache> CacheOf(std::shared_ptr<const MetricsSnapshot> cut) const;
  // The parts of a cache, made on first use. Each shares the cache's ownership, so that it
  // stays valid after a publication replaces the kept cache and a request held the only
  // other owner.
  std::shared_ptr<const std::vector<std::string>> NodeItems(
      const std::shared_ptr<SnapshotCache>& cache, Timestamp now) const;
  std::shared_ptr<const std::string> WholeNodeListGzip(const std::shared_ptr<SnapshotCache>& cache,
                                                       Timestamp now) const;
  std::shared_ptr<const std::string> WholePodListGzip(const std::shared_ptr<SnapshotCache>& cache,
                                                      Timestamp now) const;

  const MetricsSource& source_;
  const Clock& clock_;
  const Recommender* recommender_ = nullptr;
  LivenessCheck liveness_;
  ResponseCompression compression_;
  Duration metrics_max_age_;
  Timestamp started_;
  http::HealthChecks health_;
  mutable std::mutex cache_mu_;  // guards cache_
  mutable std::shared_ptr<SnapshotCache> cache_;
  // When a request last used each part (kZeroTime: never), for Prepare().
  mutable std::atomic<Timestamp> node_items_asked_{kZeroTime};
  mutable std::atomic<Timestamp> nodes_gzip_asked_{kZeroTime};
  mutable std::atomic<Timestamp> pods_gzip_asked_{kZeroTime};
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_FRONTENDS_REST_HANDLER_H_
