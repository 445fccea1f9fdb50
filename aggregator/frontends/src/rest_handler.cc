#include "kubestat/aggregator/frontends/rest_handler.h"

#include <algorithm>
#include <cassert>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "kubestat/apimachinery/api_error.h"
#include "kubestat/core/gzip.h"
#include "kubestat/core/log.h"
#include "kubestat/core/time.h"
#include "kubestat/core/url.h"
#include "kubestat/metrics_api/discovery.h"
#include "kubestat/metrics_api/encoding.h"
#include "kubestat/metrics_api/group_version.h"
#include "kubestat/metrics_api/query.h"
#include "kubestat/metrics_api/render.h"
#include "kubestat/metrics_api/render_protobuf.h"

namespace kubestat::aggregator {
namespace {

using metrics_api::Encoding;
using metrics_api::Fresh;
using metrics_api::GroupName;
using metrics_api::GroupVersion;
using metrics_api::GroupVersions;
using metrics_api::HasProtobuf;
using metrics_api::kGroupMetrics;
using metrics_api::kGroupMetricsK8sIo;
using metrics_api::ListQuery;
using metrics_api::NegotiateEncoding;
using metrics_api::ParseListQuery;
using metrics_api::ParseQueryString;
using metrics_api::PrettyRequested;
using metrics_api::QueryParams;
using metrics_api::RenderApiGroup;
using metrics_api::RenderApiGroupList;
using metrics_api::RenderApiResourceList;
using metrics_api::RenderApiVersions;
using metrics_api::RenderContext;
using metrics_api::RenderNode;
using metrics_api::RenderNodeList;
using metrics_api::RenderNodeListItem;
using metrics_api::RenderNodeListProtobuf;
using metrics_api::RenderNodeProtobuf;
using metrics_api::RenderPod;
using metrics_api::RenderPodList;
using metrics_api::RenderPodListProtobuf;
using metrics_api::RenderPodProtobuf;
using metrics_api::ResourceName;
using metrics_api::Select;
using metrics_api::VersionName;
using ApiResource = metrics_api::Resource;

// Route templates of one group version, for the self-metrics' `route` label.
struct ApiRoutes {
  std::string_view group;
  std::string_view resource_list;
  std::string_view nodes;
  std::string_view node;
  std::string_view pods;
  std::string_view namespace_pods;
  std::string_view namespace_pod;
};

constexpr ApiRoutes kV1Routes = {
    "/apis/metrics.k8s.io",
    "/apis/metrics.k8s.io/v1",
    "/apis/metrics.k8s.io/v1/nodes",
    "/apis/metrics.k8s.io/v1/nodes/{node}",
    "/apis/metrics.k8s.io/v1/pods",
    "/apis/metrics.k8s.io/v1/namespaces/{namespace}/pods",
    "/apis/metrics.k8s.io/v1/namespaces/{namespace}/pods/{pod}",
};

constexpr ApiRoutes kV1beta1Routes = {
    "/apis/metrics.k8s.io",
    "/apis/metrics.k8s.io/v1beta1",
    "/apis/metrics.k8s.io/v1beta1/nodes",
    "/apis/metrics.k8s.io/v1beta1/nodes/{node}",
    "/apis/metrics.k8s.io/v1beta1/pods",
    "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods",
    "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods/{pod}",
};

constexpr ApiRoutes kV1alpha1Routes = {
    "/apis/metrics",
    "/apis/metrics/v1alpha1",
    "/apis/metrics/v1alpha1/nodes",
    "/apis/metrics/v1alpha1/nodes/{node}",
    "/apis/metrics/v1alpha1/pods",
    "/apis/metrics/v1alpha1/namespaces/{namespace}/pods",
    "/apis/metrics/v1alpha1/namespaces/{namespace}/pods/{pod}",
};

const ApiRoutes& RoutesOf(GroupVersion api) {
  switch (api) {
    case GroupVersion::kV1alpha1:
      return kV1alpha1Routes;
    case GroupVersion::kV1beta1:
      return kV1beta1Routes;
    case GroupVersion::kV1:
      return kV1Routes;
  }
  assert(false && "unknown GroupVersion");
  return kV1alpha1Routes;
}

// The decoded segments of `path` without its leading '/' and one trailing '/'.
std::vector<std::string> SplitPath(std::string_view path) {
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  if (!path.empty() && path.back() == '/') path.remove_suffix(1);
  std::vector<std::string> segments;
  if (path.empty()) return segments;
  while (true) {
    const size_t slash = path.find('/');
    segments.push_back(PercentDecodeLenient(path.substr(0, slash), /*plus_is_space=*/false));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return segments;
}

// Kubernetes' verb for an HTTP method, for the 405 message.
std::string VerbOf(std::string_view method, bool collection) {
  if (method == "POST") return "create";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return collection ? "deletecollection" : "delete";
  std::string verb(method);
  for (char& c : verb) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return verb;
}

RestResponse ErrorResponse(const ApiError& error, int indent = 0) {
  RestResponse response;
  response.code = error.code();
  response.content_type = kContentTypeJson;
  response.body = error.ToJson(indent);
  return response;
}

RestResponse NotFoundPath() {
  return ErrorResponse(
      ApiError(404, StatusReason::kNotFound, "the server could not find the requested resource"));
}

RestResponse JsonResponse(std::string body) {
  RestResponse response;
  response.body = std::move(body);
  return response;
}

RestResponse TextResponse(int code, std::string body) {
  RestResponse response;
  response.code = code;
  response.content_type = kContentTypeText;
  response.body = std::move(body);
  return response;
}

}  // namespace

namespace internal {

// A request for metric objects, after routing.
struct MetricsRequest {
  GroupVersion api;
  ApiResource resource;
  bool collection;             // a list (nodes, pods) rather than one object
  std::string namespace_name;  // pods of one namespace; empty for all
  std::string name;            // the object of a GET; empty for lists
  std::string_view route;
};

}  // namespace internal

namespace {

using internal::MetricsRequest;

// Routes the segments after /apis/{group}/{version}; std::nullopt for an unknown path.
std::optional<MetricsRequest> RouteMetrics(GroupVersion api, std::vector<std::string>& rest) {
  const ApiRoutes& routes = RoutesOf(api);
  MetricsRequest request{api, ApiResource::kNodes, true, {}, {}, {}};
  if (rest.size() == 1 && rest[0] == "nodes") {
    request.route = routes.nodes;
  } else if (rest.size() == 2 && rest[0] == "nodes" && !rest[1].empty()) {
    request.collection = false;
    request.name = std::move(rest[1]);
    request.route = routes.node;
  } else if (rest.size() == 1 && rest[0] == "pods") {
    request.resource = ApiResource::kPods;
    request.route = routes.pods;
  } else if ((rest.size() == 3 || rest.size() == 4) && rest[0] == "namespaces" &&
             !rest[1].empty() && rest[2] == "pods") {
    request.resource = ApiResource::kPods;
    request.namespace_name = std::move(rest[1]);
    request.route = routes.namespace_pods;
    if (rest.size() == 4) {
      if (rest[3].empty()) return std::nullopt;
      request.collection = false;
      request.name = std::move(rest[3]);
      request.route = routes.namespace_pod;
    }
  } else {
    return std::nullopt;
  }
  return request;
}

// The pod list in `encoding` (protobuf only for metrics.k8s.io).
std::string RenderPodListAs(Encoding encoding, std::span<const metrics_api::PodRef> pods,
                            const ListQuery& query, const RenderContext& ctx) {
  return encoding == Encoding::kProtobuf ? RenderPodListProtobuf(pods, query, ctx)
                                         : RenderPodList(pods, query, ctx);
}

// Renders the pods of `namespace_name` (all when empty) that match `query`, reading only
// the candidates the snapshot's indexes give for the query's exact namespace or node; the
// renderer still applies the whole query.
std::string RenderPods(const MetricsSnapshot& cut, const ListQuery& query, const RenderContext& ctx,
                       Encoding encoding = Encoding::kJson) {
  std::string_view ns = query.namespace_name;
  if (ns.empty()) ns = query.fields.RequiresExactMatch("metadata.namespace").value_or("");
  if (std::optional<std::string_view> node = query.fields.RequiresExactMatch("spec.nodeName")) {
    std::vector<metrics_api::PodRef> on_node = cut.PodsOfNode(*node);
    if (!ns.empty()) {
      std::erase_if(on_node,
                    [&](const metrics_api::PodRef& pod) { return pod->namespace_name != ns; });
    }
    return RenderPodListAs(encoding, on_node, query, ctx);
  }
  const auto [first, last] = cut.NamespaceRange(ns);
  return RenderPodListAs(
      encoding, std::span<const metrics_api::PodRef>(cut.pods.data() + first, last - first), query,
      ctx);
}

// A query for every pod.
ListQuery PodQuery() {
  ListQuery query;
  query.resource = ApiResource::kPods;
  return query;
}

// gzip level 1: the kube-apiserver's choice; higher levels cost several times the CPU for
// a few percent less on these JSON documents.
constexpr int kGzipLevel = 1;

// Makes the gzip body in `cache` from `render()`, once (the first caller renders, others
// wait); `cache` stays empty when the rendered body is under the compression threshold.
template <typename Render>
void GzipOnce(std::once_flag& once, std::string& cache, size_t min_bytes, Render render) {
  std::call_once(once, [&] {
    const std::string body = render();
    if (body.size() >= min_bytes) cache = GzipCompress(body, kGzipLevel);
  });
}

RestResponse GzipJsonResponse(std::string body) {
  RestResponse response = JsonResponse(std::move(body));
  response.content_encoding = kContentEncodingGzip;
  return response;
}

}  // namespace

Timestamp FreshSince(Timestamp newest_usage, Timestamp now, Duration max_age) {
  const Timestamp reference = std::clamp(newest_usage, now - max_age, now);
  return reference - max_age;
}

void CompressResponse(const ResponseCompression& compression, bool accepts_gzip,
                      RestResponse* response) {
  if (!compression.enabled || !accepts_gzip || !response->content_encoding.empty() ||
      response->body.size() < compression.min_bytes) {
    return;
  }
  response->body = GzipCompress(response->body, kGzipLevel);
  response->content_encoding = kContentEncodingGzip;
}

std::shared_ptr<RestHandler::SnapshotCache> RestHandler::CacheOf(
    std::shared_ptr<const MetricsSnapshot> cut) const {
  {
    std::lock_guard lock(cache_mu_);
    if (cache_ != nullptr && cache_->cut == cut) return cache_;
  }
  const bool newest = source_.Snapshot() == cut;
  std::lock_guard lock(cache_mu_);
  // Another request may have made it meanwhile.
  if (cache_ != nullptr && cache_->cut == cut) return cache_;
  auto cache = std::make_shared<SnapshotCache>();
  cache->cut = std::move(cut);
  if (newest) cache_ = cache;
  return cache;
}

std::shared_ptr<const std::vector<std::string>> RestHandler::NodeItems(
    const std::shared_ptr<SnapshotCache>& cache, Timestamp now) const {
  std::call_once(cache->node_items_once, [&] {
    cache->node_items.reserve(cache->cut->nodes.size());
    const RenderContext ctx{GroupVersion::kV1alpha1, now, 0};
    for (const std::shared_ptr<const metrics_api::NodeMetrics>& node : cache->cut->nodes) {
      cache->node_items.push_back(RenderNodeListItem(*node, ctx));
    }
  });
  return {cache, &cache->node_items};
}

std::shared_ptr<const std::string> RestHandler::WholeNodeListGzip(
    const std::shared_ptr<SnapshotCache>& cache, Timestamp now) const {
  GzipOnce(cache->nodes_gzip_once, cache->nodes_gzip, compression_.min_bytes, [&] {
    const std::span<const std::shared_ptr<const metrics_api::NodeMetrics>> nodes(cache->cut->nodes);
    return RenderNodeList(nodes, *NodeItems(cache, now),
                          Select(ListQuery{}, GroupVersion::kV1alpha1, nodes),
                          RenderContext{GroupVersion::kV1alpha1, now, 0});
  });
  return {cache, &cache->nodes_gzip};
}

std::shared_ptr<const std::string> RestHandler::WholePodListGzip(
    const std::shared_ptr<SnapshotCache>& cache, Timestamp now) const {
  GzipOnce(cache->pods_gzip_once, cache->pods_gzip, compression_.min_bytes, [&] {
    return RenderPods(*cache->cut, PodQuery(), RenderContext{GroupVersion::kV1alpha1, now, 0});
  });
  return {cache, &cache->pods_gzip};
}

RestHandler::Prepared RestHandler::Prepare() const {
  Prepared prepared;
  std::shared_ptr<const MetricsSnapshot> cut = source_.Snapshot();
  {
    std::lock_guard lock(cache_mu_);
    if (cache_ != nullptr && cache_->cut == cut) return prepared;  // prepared, or asked for
  }
  const Timestamp now = clock_.Now();
  const auto recently = [now](const std::atomic<Timestamp>& asked) {
    const Timestamp at = asked.load(std::memory_order_relaxed);
    return at != kZeroTime && now - at <= kPrepareIfAskedWithin;
  };
  prepared.node_items = recently(node_items_asked_);
  prepared.nodes_gzip = compression_.enabled && recently(nodes_gzip_asked_);
  prepared.pods_gzip = compression_.enabled && recently(pods_gzip_asked_);
  if (!prepared.node_items && !prepared.nodes_gzip && !prepared.pods_gzip) return prepared;
  // Kept first, so requests arriving meanwhile wait for these parts instead of making them.
  const std::shared_ptr<SnapshotCache> cache = CacheOf(std::move(cut));
  if (prepared.node_items) NodeItems(cache, now);
  if (prepared.nodes_gzip) WholeNodeListGzip(cache, now);
  if (prepared.pods_gzip) WholePodListGzip(cache, now);
  return prepared;
}

RestHandler::RestHandler(const MetricsSource& source, const Clock& clock, LivenessCheck liveness,
                         ResponseCompression compression, Duration metrics_max_age)
    : source_(source),
      clock_(clock),
      liveness_(std::move(liveness)),
      compression_(compression),
      metrics_max_age_(metrics_max_age),
      started_(clock.Now()),
      health_(clock) {
  health_.Add(http::HealthEndpoint::kLivez, "ping", [](Timestamp) { return std::nullopt; });
  if (liveness_.last_round_start) {
    health_.Add(http::HealthEndpoint::kLivez, "scrape-rounds",
                [this](Timestamp now) -> std::optional<std::string> {
                  const Timestamp last = std::max(liveness_.last_round_start(), started_);
                  const Duration limit = liveness_.resolution * 3 / 2;
                  if (now - last <= limit) return std::nullopt;
                  return absl::StrCat("the last scrape round started ", FormatDuration(now - last),
                                      " ago, more than 1.5 resolutions (", FormatDuration(limit),
                                      ")");
                });
  }
  health_.Add(http::HealthEndpoint::kReadyz, "ping", [](Timestamp) { return std::nullopt; });
  health_.Add(http::HealthEndpoint::kReadyz, "startup",
              [this](Timestamp) -> std::optional<std::string> {
                if (source_.Ready()) return std::nullopt;
                return "the metrics source is not ready (store rebuild or discovery sync in "
                       "progress)";
              });
}

RestResponse RestHandler::Handle(const RestRequest& request) const {
  std::string_view route = kRouteOther;
  RestResponse response;
  try {
    response = Dispatch(request, &route);
    // Every answer of a metric route depends on Accept (its encoding, or a 406).
    response.varies_by_accept = route != kRouteOther;
    CompressResponse(compression_, request.accepts_gzip, &response);
    return response;
  } catch (const std::exception& e) {
    KLOG(ERROR) << "REST " << request.method << " " << request.path << ": " << e.what();
    response = ErrorResponse(ApiError::InternalError(e.what()));
  } catch (...) {
    KLOG(ERROR) << "REST " << request.method << " " << request.path << ": unknown exception";
    response = ErrorResponse(ApiError::InternalError("unknown exception"));
  }
  response.route = route;
  response.varies_by_accept = route != kRouteOther;
  return response;
}

std::optional<RestResponse> RestHandler::HandleRecommendations(
    const RestRequest& request, std::vector<std::string>& rest) const {
  std::string namespace_name;
  std::string name;
  std::string_view route;
  if (rest.size() == 1 && rest[0] == "recommendations") {
    route = "/apis/metrics/v1alpha1/recommendations";
  } else if ((rest.size() == 3 || rest.size() == 4) && rest[0] == "namespaces" &&
             !rest[1].empty() && rest[2] == "recommendations") {
    namespace_name = rest[1];
    route = "/apis/metrics/v1alpha1/namespaces/{namespace}/recommendations";
    if (rest.size() == 4) {
      if (rest[3].empty()) return std::nullopt;
      name = rest[3];
      route = "/apis/metrics/v1alpha1/namespaces/{namespace}/recommendations/{name}";
    }
  } else {
    return std::nullopt;
  }
  const QueryParams params = ParseQueryString(request.query);
  const int indent = PrettyRequested(params) ? 2 : 0;
  const auto answer = [&](RestResponse response) {
    response.route = route;
    return response;
  };
  const auto error = [&](const ApiError& e) { return answer(ErrorResponse(e, indent)); };
  if (request.method != "GET") {
    return error(ApiError::MethodNotAllowed(kGroupMetrics, "recommendations",
                                            VerbOf(request.method, name.empty())));
  }
  if (!source_.Ready()) {
    return error(ApiError::ServiceUnavailable(
        "recommendations are not available yet: the aggregator is starting (store rebuild or "
        "discovery sync in progress)"));
  }
  RecommendationFilter filter;
  for (const auto& [key, value] : params) {
    if (key == "labelSelector") {
      absl::StatusOr<LabelSelector> selector = LabelSelector::Parse(value);
      if (!selector.ok()) {
        return error(ApiError::BadRequest(std::string(selector.status().message())));
      }
      filter.pods = *std::move(selector);
    } else if (key == "minConfidence") {
      double parsed = 0;
      if (!absl::SimpleAtod(value, &parsed) || !(parsed >= 0 && parsed <= 1)) {
        return error(ApiError::BadRequest(
            absl::StrCat("minConfidence: \"", value, "\" is not a number in [0, 1]")));
      }
      filter.min_confidence = parsed;
    }
  }
  const auto not_found = [&](const absl::Status& s) {
    if (absl::IsNotFound(s)) {
      return error(name.empty() ? ApiError::NotFound("", "namespaces", namespace_name)
                                : ApiError::NotFound(kGroupMetrics, "recommendations", name));
    }
    return error(ApiError::InternalError(std::string(s.message())));
  };
  if (!name.empty()) {
    absl::StatusOr<limits::Recommendation> one = recommender_->Get(namespace_name, name);
    if (!one.ok()) return not_found(one.status());
    return answer(JsonResponse(limits::RenderRecommendation(*one, indent)));
  }
  absl::StatusOr<std::vector<limits::Recommendation>> list =
      recommender_->List(namespace_name, filter);
  if (!list.ok()) return not_found(list.status());
  return answer(JsonResponse(limits::RenderRecommendationList(*list, indent)));
}

namespace {

RestResponse MethodNotAllowedAt(std::string_view route) {
  RestResponse response =
      ErrorResponse(ApiError(405, StatusReason::kMethodNotAllowed,
                             "the server does not allow this method on the requested resource"));
  response.route = route;
  return response;
}

// A discovery document, which does not depend on the source.
template <typename Render>
RestResponse Document(const RestRequest& request, std::string_view route, Render render) {
  if (request.method != "GET") return MethodNotAllowedAt(route);
  const int indent = PrettyRequested(ParseQueryString(request.query)) ? 2 : 0;
  RestResponse response = JsonResponse(render(indent));
  response.route = route;
  return response;
}

}  // namespace

RestResponse RestHandler::Dispatch(const RestRequest& request,
                                   std::string_view* matched_route) const {
  std::vector<std::string> segments = SplitPath(request.path);
  if (segments.size() == 1) return ServeTopLevel(request, segments[0]);
  if (segments.size() < 2 || segments[0] != "apis") return NotFoundPath();

  // The group's preferred version, until the path names one.
  GroupVersion api;
  if (segments[1] == kGroupMetricsK8sIo) {
    api = GroupVersion::kV1;
  } else if (segments[1] == kGroupMetrics) {
    api = GroupVersion::kV1alpha1;
  } else {
    return NotFoundPath();
  }
  if (segments.size() == 2) {
    return Document(request, RoutesOf(api).group,
                    [api](int indent) { return RenderApiGroup(api, indent); });
  }
  const std::span<const GroupVersion> versions = GroupVersions(api);
  const auto version = std::find_if(versions.begin(), versions.end(),
                                    [&](GroupVersion v) { return segments[2] == VersionName(v); });
  if (version == versions.end()) return NotFoundPath();
  api = *version;
  if (segments.size() == 3) {
    const bool recommendations = api == GroupVersion::kV1alpha1 && recommender_ != nullptr;
    return Document(request, RoutesOf(api).resource_list, [api, recommendations](int indent) {
      return RenderApiResourceList(api, indent, metrics_api::kReadVerbs, recommendations);
    });
  }

  std::vector<std::string> rest(std::make_move_iterator(segments.begin() + 3),
                                std::make_move_iterator(segments.end()));
  if (api == GroupVersion::kV1alpha1 && recommender_ != nullptr) {
    if (std::optional<RestResponse> answer = HandleRecommendations(request, rest)) {
      *matched_route = answer->route;
      return *std::move(answer);
    }
  }
  std::optional<MetricsRequest> metrics = RouteMetrics(api, rest);
  if (!metrics) return NotFoundPath();
  *matched_route = metrics->route;
  RestResponse response = ServeMetrics(request, *metrics);
  response.route = metrics->route;
  return response;
}

RestResponse RestHandler::ServeTopLevel(const RestRequest& request, std::string_view first) const {
  if (first == "api") {
    return Document(request, "/api", [](int indent) { return RenderApiVersions(indent); });
  }
  if (first == "apis") {
    return Document(request, "/apis", [](int indent) { return RenderApiGroupList(indent); });
  }
  if (first == "healthz" || first == "livez" || first == "readyz") {
    const std::string_view route =
        first == "healthz" ? "/healthz" : (first == "livez" ? "/livez" : "/readyz");
    if (request.method != "GET") return MethodNotAllowedAt(route);
    RestResponse response = TextResponse(200, "ok");
    if (first != "healthz") {
      const http::HealthAnswer answer = health_.Answer(
          first == "livez" ? http::HealthEndpoint::kLivez : http::HealthEndpoint::kReadyz,
          request.query);
      response = TextResponse(answer.code, answer.body);
    }
    response.route = route;
    return response;
  }
  return NotFoundPath();
}

RestResponse RestHandler::ServeMetrics(const RestRequest& request,
                                       const MetricsRequest& metrics) const {
  const GroupVersion api = metrics.api;
  if (request.method != "GET") {
    return ErrorResponse(ApiError::MethodNotAllowed(GroupName(api), ResourceName(metrics.resource),
                                                    VerbOf(request.method, metrics.collection)));
  }
  const QueryParams params = ParseQueryString(request.query);
  const int indent = PrettyRequested(params) ? 2 : 0;
  const std::optional<Encoding> encoding = NegotiateEncoding(request.accept, HasProtobuf(api));
  if (!encoding) return ErrorResponse(metrics_api::NotAcceptable(HasProtobuf(api)), indent);
  if (!source_.Ready()) {
    return ErrorResponse(
        ApiError::ServiceUnavailable("the metrics are not available yet: the aggregator is "
                                     "starting (store rebuild or discovery sync in progress)"),
        indent);
  }
  absl::StatusOr<ListQuery> query =
      ParseListQuery(params, metrics.resource, metrics.namespace_name);
  if (!query.ok()) {
    return ErrorResponse(ApiError::BadRequest(std::string(query.status().message())), indent);
  }
  const RenderContext ctx{api, clock_.Now(), indent};
  if (metrics_max_age_ > Duration::zero() && metrics_api::IsMetricsK8sIo(api)) {
    query->fresh_since = FreshSince(source_.Snapshot()->newest_usage, ctx.now, metrics_max_age_);
  }
  // A whole metrics/v1alpha1 list depends on the snapshot alone, so its gzip form is kept.
  const bool whole_list_gzip = api == GroupVersion::kV1alpha1 && indent == 0 &&
                               metrics.collection && query->SelectsAll() && request.accepts_gzip &&
                               compression_.enabled;
  return metrics.resource == ApiResource::kNodes
             ? ServeNodes(metrics, *query, ctx, *encoding, whole_list_gzip)
             : ServePods(metrics, *query, ctx, *encoding, whole_list_gzip);
}

namespace {

// The answer of `body` in `encoding`, or NotFound when there is none.
RestResponse BodyOrNotFound(std::optional<std::string> body, Encoding encoding,
                            const MetricsRequest& metrics, int indent) {
  if (!body) {
    return ErrorResponse(
        ApiError::NotFound(GroupName(metrics.api), ResourceName(metrics.resource), metrics.name),
        indent);
  }
  RestResponse response = JsonResponse(*std::move(body));
  response.content_type = metrics_api::ContentType(encoding);
  return response;
}

}  // namespace

RestResponse RestHandler::ServeNodes(const MetricsRequest& metrics, const ListQuery& query,
                                     const RenderContext& ctx, Encoding encoding,
                                     bool whole_list_gzip) const {
  const GroupVersion api = metrics.api;
  std::optional<std::string> body;
  if (metrics.collection) {
    const std::shared_ptr<const MetricsSnapshot> cut = source_.Snapshot();
    const std::span<const std::shared_ptr<const metrics_api::NodeMetrics>> nodes(cut->nodes);
    if (api == GroupVersion::kV1alpha1 && ctx.indent == 0) {
      // Every window of every node: rendered once per snapshot, then copied.
      const std::shared_ptr<SnapshotCache> cache = CacheOf(cut);
      node_items_asked_.store(ctx.now, std::memory_order_relaxed);
      if (whole_list_gzip) {
        nodes_gzip_asked_.store(ctx.now, std::memory_order_relaxed);
        const std::shared_ptr<const std::string> packed = WholeNodeListGzip(cache, ctx.now);
        if (!packed->empty()) return GzipJsonResponse(*packed);
      }
      body = RenderNodeList(nodes, *NodeItems(cache, ctx.now), Select(query, api, nodes), ctx);
    } else if (encoding == Encoding::kProtobuf) {
      body = RenderNodeListProtobuf(nodes, query, ctx);
    } else {
      body = RenderNodeList(nodes, query, ctx);
    }
  } else if (std::optional<metrics_api::NodeMetrics> node = source_.GetNode(metrics.name);
             node && Fresh(api, *node, query.fresh_since)) {
    body =
        encoding == Encoding::kProtobuf ? RenderNodeProtobuf(*node, ctx) : RenderNode(*node, ctx);
  }
  return BodyOrNotFound(std::move(body), encoding, metrics, ctx.indent);
}

RestResponse RestHandler::ServePods(const MetricsRequest& metrics, const ListQuery& query,
                                    const RenderContext& ctx, Encoding encoding,
                                    bool whole_list_gzip) const {
  std::optional<std::string> body;
  if (metrics.collection) {
    const std::shared_ptr<const MetricsSnapshot> cut = source_.Snapshot();
    if (whole_list_gzip) {
      pods_gzip_asked_.store(ctx.now, std::memory_order_relaxed);
      const std::shared_ptr<const std::string> packed = WholePodListGzip(CacheOf(cut), ctx.now);
      if (!packed->empty()) return GzipJsonResponse(*packed);
    }
    body = RenderPods(*cut, query, ctx, encoding);
  } else if (std::optional<metrics_api::PodMetrics> pod =
                 source_.GetPod(metrics.namespace_name, metrics.name);
             pod && Fresh(metrics.api, *pod, query.fresh_since)) {
    body = encoding == Encoding::kProtobuf ? RenderPodProtobuf(*pod, ctx) : RenderPod(*pod, ctx);
  }
  return BodyOrNotFound(std::move(body), encoding, metrics, ctx.indent);
}

}  // namespace kubestat::aggregator
