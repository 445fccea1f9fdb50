#include "api_request.h"

#include <algorithm>
#include <charconv>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/core/url.h"
#include "kubestat/metrics_api/render.h"
#include "kubestat/metrics_api/render_protobuf.h"
#include "kubestat/metrics_api/write_batch.h"

namespace kubestat::apiserver::internal {
namespace {

constexpr std::string_view kInitialEventsEnd = "k8s.io/initial-events-end";

// Route templates (the metrics' route label), per group-version.
struct Routes {
  std::string_view group, resources, nodes, node, pods, namespace_pods, namespace_pod;
};
constexpr Routes kAlphaRoutes = {"/apis/metrics",
                                 "/apis/metrics/v1alpha1",
                                 "/apis/metrics/v1alpha1/nodes",
                                 "/apis/metrics/v1alpha1/nodes/{node}",
                                 "/apis/metrics/v1alpha1/pods",
                                 "/apis/metrics/v1alpha1/namespaces/{namespace}/pods",
                                 "/apis/metrics/v1alpha1/namespaces/{namespace}/pods/{pod}"};
constexpr Routes kBetaRoutes = {"/apis/metrics.k8s.io",
                                "/apis/metrics.k8s.io/v1beta1",
                                "/apis/metrics.k8s.io/v1beta1/nodes",
                                "/apis/metrics.k8s.io/v1beta1/nodes/{node}",
                                "/apis/metrics.k8s.io/v1beta1/pods",
                                "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods",
                                "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods/{pod}"};
constexpr Routes kV1Routes = {"/apis/metrics.k8s.io",
                              "/apis/metrics.k8s.io/v1",
                              "/apis/metrics.k8s.io/v1/nodes",
                              "/apis/metrics.k8s.io/v1/nodes/{node}",
                              "/apis/metrics.k8s.io/v1/pods",
                              "/apis/metrics.k8s.io/v1/namespaces/{namespace}/pods",
                              "/apis/metrics.k8s.io/v1/namespaces/{namespace}/pods/{pod}"};

const Routes& RoutesOf(GroupVersion gv) {
  switch (gv) {
    case GroupVersion::kV1alpha1:
      return kAlphaRoutes;
    case GroupVersion::kV1beta1:
      return kBetaRoutes;
    case GroupVersion::kV1:
      return kV1Routes;
  }
  return kAlphaRoutes;
}

// The decoded segments of `path` without the leading '/' and one trailing '/'.
std::vector<std::string> Segments(std::string_view path) {
  std::vector<std::string> out;
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  if (!path.empty() && path.back() == '/') path.remove_suffix(1);
  while (!path.empty()) {
    const size_t slash = path.find('/');
    out.push_back(PercentDecodeLenient(path.substr(0, slash), /*plus_is_space=*/false));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

}  // namespace

Resource ResourceOf(ObjectKind kind) {
  return kind == ObjectKind::kNode ? Resource::kNodes : Resource::kPods;
}

std::optional<Target> Parse(std::string_view path) {
  const std::vector<std::string> s = Segments(path);
  Target t;
  if (s.size() == 1 && s[0] == "api") return t;
  if (s.empty() || s[0] != "apis") return std::nullopt;
  if (s.size() == 1) {
    t.type = Target::Type::kGroupList;
    t.route = "/apis";
    return t;
  }
  if (s[1] == metrics_api::kGroupMetrics) {
    t.gv = GroupVersion::kV1alpha1;
  } else if (s[1] == metrics_api::kGroupMetricsK8sIo) {
    t.gv = GroupVersion::kV1;
  } else {
    return std::nullopt;
  }
  if (s.size() == 2) {
    t.type = Target::Type::kGroup;
    t.route = RoutesOf(t.gv).group;
    return t;
  }
  const std::span<const GroupVersion> versions = metrics_api::GroupVersions(t.gv);
  const auto version = std::find_if(versions.begin(), versions.end(), [&](GroupVersion gv) {
    return s[2] == metrics_api::VersionName(gv);
  });
  if (version == versions.end()) return std::nullopt;
  t.gv = *version;
  const Routes& routes = RoutesOf(t.gv);
  if (s.size() == 3) {
    t.type = Target::Type::kResourceList;
    t.route = routes.resources;
    return t;
  }
  const std::span<const std::string> rest(s.data() + 3, s.size() - 3);
  if (t.gv == GroupVersion::kV1alpha1 && rest.size() == 1 && rest[0] == "writes") {
    t.type = Target::Type::kWriteBatch;
    t.route = metrics_api::kWriteBatchPath;
    return t;
  }
  if (rest[0] == "nodes" && rest.size() <= 2) {
    t.kind = ObjectKind::kNode;
    t.type = rest.size() == 1 ? Target::Type::kCollection : Target::Type::kObject;
    t.route = rest.size() == 1 ? routes.nodes : routes.node;
    if (rest.size() == 2) t.name = rest[1];
  } else if (rest[0] == "pods" && rest.size() == 1) {
    t.kind = ObjectKind::kPod;
    t.type = Target::Type::kCollection;
    t.route = routes.pods;
  } else if (rest[0] == "namespaces" && rest.size() >= 3 && rest[2] == "pods" && rest.size() <= 4 &&
             !rest[1].empty()) {
    t.kind = ObjectKind::kPod;
    t.namespace_name = rest[1];
    t.type = rest.size() == 3 ? Target::Type::kCollection : Target::Type::kObject;
    t.route = rest.size() == 3 ? routes.namespace_pods : routes.namespace_pod;
    if (rest.size() == 4) t.name = rest[3];
  } else {
    return std::nullopt;
  }
  if (t.type == Target::Type::kObject && t.name.empty()) return std::nullopt;
  return t;
}

http::Response Json(int code, std::string body, std::string_view route) {
  http::Response response;
  response.code = code;
  response.body = std::move(body);
  response.route = route;
  return response;
}

// A 200 answer of `body` in `encoding`.
http::Response Encoded(Encoding encoding, std::string body, std::string_view route) {
  http::Response response = Json(200, std::move(body), route);
  response.content_type = std::string(metrics_api::ContentType(encoding));
  return response;
}

http::Response NotFoundPath() {
  return http::ErrorResponse(ApiError(404, StatusReason::kNotFound,
                                      "the server could not find the requested resource",
                                      StatusDetails{}));
}

bool TrueParam(const metrics_api::QueryParams& params, std::string_view name) {
  auto it = params.find(name);
  return it != params.end() && (it->second == "1" || it->second == "true" || it->second == "True");
}

// A decimal resourceVersion; std::nullopt for anything else.
std::optional<uint64_t> ParseRevision(std::string_view text) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// 400 for a resourceVersion that is not a decimal revision.
ApiError BadResourceVersion(std::string_view text) {
  return ApiError::BadRequest(absl::StrCat("resourceVersion: must be a decimal revision, not \"",
                                           AbslView(text.substr(0, 32)), "\""));
}

// The ReadVersion (object_store.h) of a GET's or LIST's resourceVersion and
// resourceVersionMatch as kube-apiserver reads them: unset is the newest state, "0" any state,
// N a state not older than N, or (lists, resourceVersionMatch=Exact) the state at N. A 400
// naming the parameter for a value it refuses.
std::variant<ReadVersion, ApiError> ReadVersionOf(const metrics_api::QueryParams& params,
                                                  bool list) {
  auto param = [&](std::string_view name) -> std::string_view {
    auto it = params.find(name);
    return it == params.end() ? std::string_view() : std::string_view(it->second);
  };
  const std::string_view rv = param("resourceVersion");
  const std::string_view match = param("resourceVersionMatch");
  if (!match.empty() && !list) {
    return ApiError::BadRequest("resourceVersionMatch: only lists take it, not a get");
  }
  if (!match.empty() && match != "NotOlderThan" && match != "Exact") {
    return ApiError::BadRequest(
        absl::StrCat("resourceVersionMatch: must be NotOlderThan or Exact, not \"",
                     AbslView(match.substr(0, 32)), "\""));
  }
  if (rv.empty()) {
    if (!match.empty()) {
      return ApiError::BadRequest(
          "resourceVersionMatch: forbidden unless resourceVersion is provided");
    }
    return ReadVersion{};
  }
  std::optional<uint64_t> revision = ParseRevision(rv);
  if (!revision) return BadResourceVersion(rv);
  if (match == "Exact") {
    if (*revision == 0) {
      return ApiError::BadRequest(
          "resourceVersionMatch: \"Exact\" is forbidden for resourceVersion \"0\"");
    }
    return ReadVersion{ReadVersion::Match::kExact, *revision};
  }
  if (*revision == 0) return ReadVersion{ReadVersion::Match::kAny, 0};
  return ReadVersion{ReadVersion::Match::kNotOlderThan, *revision};
}

// The stored object with metadata.resourceVersion set (a copy only when it is not yet).
std::shared_ptr<const NodeMetrics> StampedNode(const StoredObject& o) {
  const std::string rv = std::to_string(o.resource_version);
  if (o.node->resource_version == rv) return o.node;
  auto copy = std::make_shared<NodeMetrics>(*o.node);
  copy->resource_version = rv;
  return copy;
}
std::shared_ptr<const PodMetrics> StampedPod(const StoredObject& o) {
  const std::string rv = std::to_string(o.resource_version);
  if (o.pod->resource_version == rv) return o.pod;
  auto copy = std::make_shared<PodMetrics>(*o.pod);
  copy->resource_version = rv;
  return copy;
}

bool Matches(const ListQuery& query, GroupVersion gv, const StoredObject& o) {
  if (o.key.kind == ObjectKind::kNode) {
    return metrics_api::Servable(gv, *o.node) && query.Matches(*o.node);
  }
  return metrics_api::Servable(gv, *o.pod) && query.Matches(*o.pod);
}

// The object's JSON (with kind and apiVersion) in `ctx`'s group-version; it must be servable.
std::string RenderStored(const StoredObject& o, const RenderContext& ctx) {
  if (o.key.kind == ObjectKind::kNode) return *metrics_api::RenderNode(*StampedNode(o), ctx);
  return *metrics_api::RenderPod(*StampedPod(o), ctx);
}

// The same in `encoding` (protobuf: metrics.k8s.io only).
std::string RenderStored(const StoredObject& o, const RenderContext& ctx, Encoding encoding) {
  if (encoding == Encoding::kJson) return RenderStored(o, ctx);
  if (o.key.kind == ObjectKind::kNode) {
    return *metrics_api::RenderNodeProtobuf(*StampedNode(o), ctx);
  }
  return *metrics_api::RenderPodProtobuf(*StampedPod(o), ctx);
}

std::string BookmarkObject(ObjectKind kind, GroupVersion gv, uint64_t revision,
                           bool initial_events_end) {
  JsonWriter w;
  w.BeginObject();
  w.Key("kind").String(metrics_api::KindName(ResourceOf(kind)));
  w.Key("apiVersion").String(metrics_api::ApiVersion(gv));
  w.Key("metadata").BeginObject();
  w.Key("resourceVersion").String(std::to_string(revision));
  if (initial_events_end) {
    w.Key("annotations").BeginObject().Key(kInitialEventsEnd).String("true").EndObject();
  }
  w.EndObject();
  w.EndObject();
  return w.Take();
}

kube::WatchEventType ToWatchType(EventType type) {
  switch (type) {
    case EventType::kAdded:
      return kube::WatchEventType::kAdded;
    case EventType::kModified:
      return kube::WatchEventType::kModified;
    case EventType::kDeleted:
      return kube::WatchEventType::kDeleted;
  }
  return kube::WatchEventType::kModified;
}

// A 422 Invalid from a reader's "<field>: <reason>" error.
ApiError InvalidObject(std::string_view kind, std::string_view name, const absl::Status& error) {
  const std::string_view message = StdView(error.message());
  const size_t colon = message.find(": ");
  StatusCause cause;
  cause.reason = "FieldValueInvalid";
  if (colon == std::string_view::npos) {
    cause.message = std::string(message);
  } else {
    cause.field = std::string(message.substr(0, colon));
    cause.message = std::string(message.substr(colon + 2));
  }
  return ApiError::Invalid(metrics_api::kGroupMetrics, kind, name, {std::move(cause)});
}

StoreTimer::StoreTimer(prometheus::Registry& registry, const Clock& clock)
    : clock_(clock),
      family_(prometheus::BuildHistogram()
                  .Name("kubestat_apiserver_storage_duration_seconds")
                  .Help("Time spent in store calls, by operation.")
                  .Register(registry)) {}

void StoreTimer::Observe(std::string_view operation, Timestamp start) {
  family_
      .Add({{"operation", std::string(operation)}},
           prometheus::Histogram::BucketBoundaries{0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1})
      .Observe(std::chrono::duration<double>(clock_.MonotonicNow() - start).count());
}

}  // namespace kubestat::apiserver::internal
