#include "kubestat/apiserver/api_server.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "kubestat/apimachinery/api_error.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/core/log.h"
#include "kubestat/core/time.h"
#include "kubestat/core/url.h"
#include "kubestat/http/health_checks.h"
#include "kubestat/http/metrics_endpoint.h"
#include "kubestat/http/server.h"
#include "kubestat/kube/watch_event.h"
#include "kubestat/metrics_api/discovery.h"
#include "kubestat/metrics_api/encoding.h"
#include "kubestat/metrics_api/group_version.h"
#include "kubestat/metrics_api/parse.h"
#include "kubestat/metrics_api/query.h"
#include "kubestat/metrics_api/render.h"
#include "kubestat/metrics_api/render_protobuf.h"
#include "kubestat/metrics_api/write_batch.h"

namespace kubestat::apiserver {
namespace {

using metrics_api::Encoding;
using metrics_api::GroupVersion;
using metrics_api::ListQuery;
using metrics_api::NodeMetrics;
using metrics_api::PodMetrics;
using metrics_api::RenderContext;
using metrics_api::Resource;

constexpr std::string_view kWriteVerbs[] = {"get", "list", "watch", "create", "update", "delete"};
constexpr std::string_view kWatchVerbs[] = {"get", "list", "watch"};
constexpr std::string_view kInitialEventsEnd = "k8s.io/initial-events-end";

Resource ResourceOf(ObjectKind kind) {
  return kind == ObjectKind::kNode ? Resource::kNodes : Resource::kPods;
}

// What a request's path names.
struct Target {
  enum class Type {
    kApiVersions,   // /api
    kGroupList,     // /apis
    kGroup,         // /apis/{group}
    kResourceList,  // /apis/{group}/{version}
    kCollection,    // .../nodes, .../pods, .../namespaces/{ns}/pods
    kObject,        // .../nodes/{name}, .../namespaces/{ns}/pods/{name}
    kWriteBatch,    // /apis/metrics/v1alpha1/writes
  };
  Type type = Type::kApiVersions;
  GroupVersion gv = GroupVersion::kV1alpha1;
  ObjectKind kind = ObjectKind::kNode;
  std::string namespace_name;
  std::string name;
  std::string_view route = "other";  // static storage
};

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

}  // namespace

http::ServerOptions ApiServerOptions::SecureDefaults() {
  http::ServerOptions options;
  options.metrics_name = "apiserver";
  options.limits.max_body_bytes = size_t{3} << 20;
  return options;
}

absl::Status ApiServerOptions::Validate() const {
  if (absl::Status s = server.Validate(); !s.ok()) return s;
  if (absl::Status s = kube::ValidateAlwaysAllowPaths(always_allow_paths, "always_allow_paths");
      !s.ok()) {
    return s;
  }
  const std::pair<std::string_view, Duration> positive[] = {
      {"object_ttl", object_ttl},
      {"sweep_interval", sweep_interval},
      {"bookmark_interval", bookmark_interval},
      {"watch_timeout", watch_timeout},
      {"max_watch_timeout", max_watch_timeout}};
  for (const auto& [name, value] : positive) {
    if (value <= Duration::zero()) {
      return absl::InvalidArgumentError(
          absl::StrCat(AbslView(name), ": must be positive, not ", FormatDuration(value)));
    }
  }
  if (watch_timeout > max_watch_timeout) {
    return absl::InvalidArgumentError("watch_timeout: must not exceed max_watch_timeout");
  }
  return absl::OkStatus();
}

class ApiServer::Impl {
 public:
  Impl(ApiServerOptions options, ObjectStore& store, prometheus::Registry& registry,
       const Clock& clock, kube::AccessGate gate)
      : options_(std::move(options)),
        store_(store),
        registry_(registry),
        clock_(clock),
        gate_(std::move(gate)),
        objects_(prometheus::BuildGauge()
                     .Name("kubestat_apiserver_objects")
                     .Help("Objects stored, by resource, at the last sweep.")
                     .Register(registry)),
        writes_(prometheus::BuildCounter()
                    .Name("kubestat_apiserver_writes_total")
                    .Help("Writes by operation and answer code.")
                    .Register(registry)),
        watchers_(prometheus::BuildGauge()
                      .Name("kubestat_apiserver_watchers")
                      .Help("Open watches, by resource.")
                      .Register(registry)),
        events_(prometheus::BuildCounter()
                    .Name("kubestat_apiserver_watch_events_total")
                    .Help("Watch events sent, by type.")
                    .Register(registry)),
        storage_(prometheus::BuildHistogram()
                     .Name("kubestat_apiserver_storage_duration_seconds")
                     .Help("Time spent in store calls, by operation.")
                     .Register(registry)),
        overflows_(prometheus::BuildCounter()
                       .Name("kubestat_apiserver_watch_overflows_total")
                       .Help("Watches ended because their client fell too far behind.")
                       .Register(registry)
                       .Add({})) {
    for (EventType type : {EventType::kAdded, EventType::kModified, EventType::kDeleted}) {
      event_counts_[static_cast<size_t>(type)] =
          &events_.Add({{"type", std::string(EventTypeName(type))}});
    }
    health_.Add(http::HealthEndpoint::kLivez, "ping", [](Timestamp) { return std::nullopt; });
    health_.Add(http::HealthEndpoint::kReadyz, "ping", [](Timestamp) { return std::nullopt; });
    health_.Add(http::HealthEndpoint::kReadyz, "store",
                [this](Timestamp) -> std::optional<std::string> {
                  if (store_.Ready()) return std::nullopt;
                  return "the object store does not answer (no etcd member reachable)";
                });
    health_.AttachMetrics(registry_);
  }

  ~Impl() { Stop(); }

  absl::Status Start() {
    if (absl::Status s = options_.Validate(); !s.ok()) return s;
    if (absl::Status s = gate_.Validate(); !s.ok()) return s;
    if (server_) return absl::FailedPreconditionError("the API server is already started");
    server_ = std::make_unique<http::Server>(
        options_.server, [this](const http::Request& r) { return Serve(r); }, registry_, clock_);
    if (absl::Status s = server_->Start(); !s.ok()) return s;
    KLOG(INFO) << "kubestat-apiserver API listening on " << server_->BaseUrl();
    sweeper_ = std::thread([this] { SweepLoop(); });
    return absl::OkStatus();
  }

  void Stop() {
    {
      std::lock_guard lock(sweep_mu_);
      stopping_ = true;
      sweep_cv_.notify_all();
    }
    if (sweeper_.joinable()) sweeper_.join();
    std::vector<std::shared_ptr<WatchSession>> sessions;
    {
      std::lock_guard lock(sessions_mu_);
      sessions.swap(sessions_);
    }
    for (const std::shared_ptr<WatchSession>& s : sessions) End(*s);
    if (server_) server_->Stop();
  }

  void Sweep() {
    const Timestamp now = clock_.Now();
    Expire(now);
    std::vector<std::shared_ptr<WatchSession>> sessions;
    {
      std::lock_guard lock(sessions_mu_);
      sessions = sessions_;
    }
    std::vector<std::shared_ptr<WatchSession>> ended;
    for (const std::shared_ptr<WatchSession>& s : sessions) {
      bool overflowed;
      {
        std::lock_guard lock(s->mu);
        overflowed = s->ended;
      }
      if (overflowed || s->writer->closed() || now >= s->deadline) {
        End(*s);
        ended.push_back(s);
        continue;
      }
      if (s->bookmarks && now >= s->next_bookmark) {
        std::lock_guard lock(s->mu);
        s->writer->Write(kube::WriteWatchEvent(kube::WatchEventType::kBookmark,
                                               BookmarkObject(s->kind, s->gv, s->last_revision,
                                                              /*initial_events_end=*/false)));
        s->next_bookmark = now + options_.bookmark_interval;
        events_.Add({{"type", "BOOKMARK"}}).Increment();
      }
    }
    if (!ended.empty()) {
      std::lock_guard lock(sessions_mu_);
      std::erase_if(sessions_, [&](const std::shared_ptr<WatchSession>& s) {
        return std::find(ended.begin(), ended.end(), s) != ended.end();
      });
    }
    UpdateGauges();
  }

  size_t watchers() const {
    std::lock_guard lock(sessions_mu_);
    return sessions_.size();
  }
  const http::Server* server() const { return server_.get(); }

 private:
  struct WatchSession {
    ObjectKind kind = ObjectKind::kNode;
    GroupVersion gv = GroupVersion::kV1alpha1;
    ListQuery query;
    std::shared_ptr<http::StreamWriter> writer;
    std::unique_ptr<Subscription> subscription;
    Timestamp deadline;
    bool bookmarks = false;
    Timestamp next_bookmark;
    std::mutex mu;               // orders the writes of events and bookmarks
    uint64_t last_revision = 0;  // guarded by mu: the newest revision written
    bool ended = false;          // guarded by mu
    // Guarded by mu: the bytes of the initial events still allowed on top of the bound,
    // until the client has once caught up to within the bound.
    size_t initial_allowance = 0;
  };

  // Ends a watch: its subscription is cancelled (outside the store's delivery) and its
  // stream finished.
  void End(WatchSession& s) {
    {
      std::lock_guard lock(s.mu);
      s.ended = true;
    }
    if (s.subscription) s.subscription->Cancel();  // idempotent
    s.writer->Finish();
  }

  // Whether the client of `s` has fallen so far behind that its watch must end (s.mu held):
  // its unsent events are bounded, not buffered without end. The client lists and watches
  // again, as after a 410. The initial events of a watch without a resourceVersion (the
  // whole state, as large as a LIST answer) come on top of the bound until the client has
  // read down to it once, so that a watch of a large cluster is not ended at its start.
  bool Overflowed(WatchSession& s) {
    const size_t queued = s.writer->queued_bytes();
    if (queued <= options_.max_watch_queue_bytes) {
      s.initial_allowance = 0;
      return false;
    }
    if (queued - options_.max_watch_queue_bytes <= s.initial_allowance) return false;
    s.ended = true;
    s.writer->Finish();
    overflows_.Increment();
    KLOG(WARNING) << "a watch of " << ObjectKindName(s.kind) << " fell more than "
                  << options_.max_watch_queue_bytes << " bytes behind and was ended";
    return true;
  }

  void SweepLoop() {
    std::unique_lock lock(sweep_mu_);
    while (!stopping_) {
      sweep_cv_.wait_for(lock, options_.sweep_interval);
      if (stopping_) break;
      lock.unlock();
      Sweep();
      lock.lock();
    }
  }

  void Expire(Timestamp now) {
    absl::StatusOr<size_t> expired = store_.ExpireOlderThan(now - options_.object_ttl);
    if (!expired.ok()) {
      KLOG(WARNING) << "expiring objects older than " << FormatDuration(options_.object_ttl) << ": "
                    << expired.status().message();
      return;
    }
    if (*expired > 0) {
      writes_.Add({{"operation", "expire"}, {"code", "200"}})
          .Increment(static_cast<double>(*expired));
      KLOG(INFO) << "expired " << *expired << " objects not written for "
                 << FormatDuration(options_.object_ttl);
    }
  }

  void UpdateGauges() {
    size_t by_kind[2] = {0, 0};
    {
      std::lock_guard lock(sessions_mu_);
      for (const auto& s : sessions_) ++by_kind[s->kind == ObjectKind::kNode ? 0 : 1];
    }
    watchers_.Add({{"resource", "nodes"}}).Set(static_cast<double>(by_kind[0]));
    watchers_.Add({{"resource", "pods"}}).Set(static_cast<double>(by_kind[1]));
    for (ObjectKind kind : {ObjectKind::kNode, ObjectKind::kPod}) {
      absl::StatusOr<size_t> count = store_.Count(kind);
      if (count.ok()) {
        objects_.Add({{"resource", std::string(ObjectKindName(kind))}})
            .Set(static_cast<double>(*count));
      }
    }
  }

  template <typename F>
  auto Timed(std::string_view operation, F call) {
    const Timestamp start = clock_.MonotonicNow();
    auto result = call();
    storage_
        .Add({{"operation", std::string(operation)}},
             prometheus::Histogram::BucketBoundaries{0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1})
        .Observe(std::chrono::duration<double>(clock_.MonotonicNow() - start).count());
    return result;
  }

  http::Response Serve(const http::Request& request) {
    kube::AccessDecision access = gate_.Check(request);
    if (access.refusal) return *std::move(access.refusal);
    if (request.path == "/healthz") return http::TextResponse(200, "ok", "/healthz");
    if (request.path == "/livez" || request.path == "/readyz") {
      const bool livez = request.path == "/livez";
      const http::HealthAnswer answer = health_.Answer(
          livez ? http::HealthEndpoint::kLivez : http::HealthEndpoint::kReadyz, request.query);
      return http::TextResponse(answer.code, answer.body, livez ? "/livez" : "/readyz");
    }
    if (http::IsMetricsPath(request.path)) return http::MetricsResponse(request, registry_);
    std::optional<Target> target = Parse(request.path);
    if (!target) return NotFoundPath();
    const metrics_api::QueryParams params = metrics_api::ParseQueryString(request.query);
    const int indent = metrics_api::PrettyRequested(params) ? 2 : 0;
    http::Response response = Route(request, *target, params, indent);
    response.route = target->route;
    // What an object or collection answers depends on Accept (its encoding, or a 406).
    if (target->type == Target::Type::kCollection || target->type == Target::Type::kObject) {
      response.headers.emplace_back("Vary", "Accept");
    }
    return response;
  }

  // The encoding of a read of `t` for the request's Accept: protobuf is offered for
  // metrics.k8s.io objects and lists, never for watch streams; std::nullopt when Accept
  // admits nothing offered.
  static std::optional<Encoding> ReadEncoding(const http::Request& request, const Target& t,
                                              bool watch) {
    return metrics_api::NegotiateEncoding(request.CombinedHeader("Accept"),
                                          !watch && metrics_api::HasProtobuf(t.gv));
  }
  static http::Response NotAcceptable(const Target& t, bool watch) {
    return http::ErrorResponse(
        metrics_api::NotAcceptable(!watch && metrics_api::HasProtobuf(t.gv)));
  }

  http::Response Route(const http::Request& request, const Target& t,
                       const metrics_api::QueryParams& params, int indent) {
    const bool get = request.method == "GET" || request.method == "HEAD";
    switch (t.type) {
      case Target::Type::kApiVersions:
        if (get) return Json(200, metrics_api::RenderApiVersions(indent), "/api");
        break;
      case Target::Type::kGroupList:
        if (get) return Json(200, metrics_api::RenderApiGroupList(indent), t.route);
        break;
      case Target::Type::kGroup:
        if (get) return Json(200, metrics_api::RenderApiGroup(t.gv, indent), t.route);
        break;
      case Target::Type::kResourceList:
        if (get) {
          return Json(
              200,
              metrics_api::RenderApiResourceList(
                  t.gv, indent,
                  t.gv == GroupVersion::kV1alpha1 ? std::span<const std::string_view>(kWriteVerbs)
                                                  : std::span<const std::string_view>(kWatchVerbs)),
              t.route);
        }
        break;
      case Target::Type::kWriteBatch:
        if (request.method == "POST") return WriteBatch(request);
        break;
      case Target::Type::kCollection:
        if (get) {
          const bool watch = TrueParam(params, "watch");
          const std::optional<Encoding> encoding = ReadEncoding(request, t, watch);
          if (!encoding) return NotAcceptable(t, watch);
          return watch ? Watch(t, params) : List(t, params, indent, *encoding);
        }
        if (request.method == "POST" && t.gv == GroupVersion::kV1alpha1) {
          return WriteOne(request, t, WriteOp::Type::kCreate);
        }
        break;
      case Target::Type::kObject:
        if (get) {
          const std::optional<Encoding> encoding = ReadEncoding(request, t, /*watch=*/false);
          if (!encoding) return NotAcceptable(t, /*watch=*/false);
          return GetOne(t, params, indent, *encoding);
        }
        if (t.gv == GroupVersion::kV1alpha1 && request.method == "PUT") {
          return WriteOne(request, t, WriteOp::Type::kPut);
        }
        if (t.gv == GroupVersion::kV1alpha1 && request.method == "DELETE") return Delete(t);
        break;
    }
    return http::ErrorResponse(ApiError::MethodNotAllowed(metrics_api::GroupName(t.gv),
                                                          ObjectKindName(t.kind), request.method));
  }

  http::Response GetOne(const Target& t, const metrics_api::QueryParams& params, int indent,
                        Encoding encoding) {
    std::variant<ReadVersion, ApiError> version = ReadVersionOf(params, /*list=*/false);
    if (auto* error = std::get_if<ApiError>(&version)) return http::ErrorResponse(*error);
    const ObjectKey key{t.kind, t.namespace_name, t.name};
    absl::StatusOr<std::optional<StoredObject>> found =
        Timed("get", [&] { return store_.GetAt(key, std::get<ReadVersion>(version)); });
    if (!found.ok()) return http::ErrorResponse(ApiError::FromStatus(found.status()));
    const RenderContext ctx{t.gv, clock_.Now(), indent};
    if (!*found || !Matches(ListQuery{}, t.gv, **found)) {
      return http::ErrorResponse(
          ApiError::NotFound(metrics_api::GroupName(t.gv), ObjectKindName(t.kind), t.name));
    }
    return Encoded(encoding, RenderStored(**found, ctx, encoding), t.route);
  }

  http::Response List(const Target& t, const metrics_api::QueryParams& params, int indent,
                      Encoding encoding) {
    absl::StatusOr<ListQuery> query =
        metrics_api::ParseListQuery(params, ResourceOf(t.kind), t.namespace_name);
    if (!query.ok()) {
      return http::ErrorResponse(ApiError::BadRequest(StdView(query.status().message())));
    }
    std::variant<ReadVersion, ApiError> version = ReadVersionOf(params, /*list=*/true);
    if (auto* error = std::get_if<ApiError>(&version)) return http::ErrorResponse(*error);
    absl::StatusOr<ListResult> list = Timed("list", [&] {
      return store_.ListAt(t.kind, t.namespace_name, std::get<ReadVersion>(version));
    });
    if (!list.ok()) return http::ErrorResponse(ApiError::FromStatus(list.status()));
    const RenderContext ctx{t.gv, clock_.Now(), indent};
    if (t.kind == ObjectKind::kNode) {
      std::vector<std::shared_ptr<const NodeMetrics>> nodes;
      nodes.reserve(list->items.size());
      for (const StoredObject& o : list->items) nodes.push_back(StampedNode(o));
      metrics_api::Page page = metrics_api::Select(*query, t.gv, nodes);
      page.resource_version = std::to_string(list->revision);
      return Encoded(encoding,
                     encoding == Encoding::kProtobuf
                         ? metrics_api::RenderNodeListProtobuf(nodes, page, ctx)
                         : metrics_api::RenderNodeList(nodes, page, ctx),
                     t.route);
    }
    std::vector<std::shared_ptr<const PodMetrics>> pods;
    pods.reserve(list->items.size());
    for (const StoredObject& o : list->items) pods.push_back(StampedPod(o));
    metrics_api::Page page = metrics_api::Select(*query, t.gv, pods);
    page.resource_version = std::to_string(list->revision);
    const std::vector<metrics_api::PodRef> refs = metrics_api::RefsTo(pods);
    return Encoded(encoding,
                   encoding == Encoding::kProtobuf
                       ? metrics_api::RenderPodListProtobuf(refs, page, ctx)
                       : metrics_api::RenderPodList(refs, page, ctx),
                   t.route);
  }

  http::Response Watch(const Target& t, const metrics_api::QueryParams& params) {
    absl::StatusOr<ListQuery> query =
        metrics_api::ParseListQuery(params, ResourceOf(t.kind), t.namespace_name);
    if (!query.ok())
      return http::ErrorResponse(ApiError::BadRequest(StdView(query.status().message())));
    query->limit = 0;  // a watch has no pages
    query->after.clear();
    std::optional<uint64_t> from;  // std::nullopt: start with a list
    // The list a watch without a revision starts with: the newest state (unset), or any state
    // the store holds ("0", as kube-apiserver serves it from its cache).
    ReadVersion start;
    if (auto it = params.find("resourceVersion"); it != params.end() && !it->second.empty()) {
      if (it->second == "0") {
        start.match = ReadVersion::Match::kAny;
      } else {
        from = ParseRevision(it->second);
        if (!from) return http::ErrorResponse(BadResourceVersion(it->second));
      }
    }
    Duration timeout = options_.watch_timeout;
    if (auto it = params.find("timeoutSeconds"); it != params.end() && !it->second.empty()) {
      std::optional<uint64_t> seconds = ParseRevision(it->second);
      if (!seconds)
        return http::ErrorResponse(ApiError::BadRequest("timeoutSeconds: must be a number"));
      timeout = std::min<Duration>(std::chrono::seconds(*seconds), options_.max_watch_timeout);
    }
    auto session = std::make_shared<WatchSession>();
    session->kind = t.kind;
    session->gv = t.gv;
    session->query = *std::move(query);
    session->deadline = clock_.Now() + timeout;
    session->bookmarks = TrueParam(params, "allowWatchBookmarks");
    session->next_bookmark = clock_.Now() + options_.bookmark_interval;
    const bool initial_end_bookmark = TrueParam(params, "sendInitialEvents") && !from;
    http::Response response;
    response.route = t.route;
    response.stream = [this, session, from, start,
                       initial_end_bookmark](std::shared_ptr<http::StreamWriter> writer) {
      session->writer = std::move(writer);
      StartWatch(session, from, start, initial_end_bookmark);
    };
    return response;
  }

  // Writes one event line of `session` (its mutex held).
  void Send(WatchSession& s, kube::WatchEventType type, std::string_view object_json,
            std::string_view type_name) {
    s.writer->Write(kube::WriteWatchEvent(type, object_json));
    events_.Add({{"type", std::string(type_name)}}).Increment();
  }

  void StartWatch(const std::shared_ptr<WatchSession>& session, std::optional<uint64_t> from,
                  const ReadVersion& start, bool initial_end_bookmark) {
    WatchSession& s = *session;
    uint64_t after = from.value_or(0);
    if (!from) {
      absl::StatusOr<ListResult> list =
          Timed("list", [&] { return store_.ListAt(s.kind, s.query.namespace_name, start); });
      if (!list.ok()) {
        std::lock_guard lock(s.mu);
        Send(s, kube::WatchEventType::kError, ApiError::FromStatus(list.status()).ToJson(),
             "ERROR");
        s.writer->Finish();
        return;
      }
      const RenderContext ctx{s.gv, clock_.Now(), 0};
      std::lock_guard lock(s.mu);
      for (const StoredObject& o : list->items) {
        if (s.writer->closed()) return;
        if (Matches(s.query, s.gv, o))
          Send(s, kube::WatchEventType::kAdded, RenderStored(o, ctx), "ADDED");
      }
      s.initial_allowance = s.writer->queued_bytes();
      after = list->revision;
      s.last_revision = after;
      if (initial_end_bookmark) {
        Send(s, kube::WatchEventType::kBookmark,
             BookmarkObject(s.kind, s.gv, after, /*initial_events_end=*/true), "BOOKMARK");
      }
    } else {
      std::lock_guard lock(s.mu);
      s.last_revision = after;
    }
    std::weak_ptr<WatchSession> weak = session;
    absl::StatusOr<std::unique_ptr<Subscription>> subscription = store_.WatchWithEnd(
        s.kind, after, [this, weak](const StoreEvent& event) { Deliver(weak, event); },
        [this, weak](const absl::Status& why) { EndedByStore(weak, why); });
    if (!subscription.ok()) {
      std::lock_guard lock(s.mu);
      Send(s, kube::WatchEventType::kError, WatchError(subscription.status()).ToJson(), "ERROR");
      s.writer->Finish();
      return;
    }
    s.subscription = *std::move(subscription);
    std::lock_guard lock(sessions_mu_);
    sessions_.push_back(session);
  }

  // 410 Expired when the store no longer has the history a watch needs (the client lists
  // again), else the store's error.
  static ApiError WatchError(const absl::Status& status) {
    return status.code() == absl::StatusCode::kOutOfRange
               ? ApiError::Expired(StdView(status.message()))
               : ApiError::FromStatus(status);
  }

  // The store ended a watch's subscription on its own (etcd compacted past it, or stayed
  // unreachable): the client gets an ERROR event and the stream ends, instead of a watch
  // that silently stalls.
  void EndedByStore(const std::weak_ptr<WatchSession>& weak, const absl::Status& why) {
    std::shared_ptr<WatchSession> session = weak.lock();
    if (!session) return;
    WatchSession& s = *session;
    std::lock_guard lock(s.mu);
    if (s.ended || s.writer->closed()) return;
    s.ended = true;
    Send(s, kube::WatchEventType::kError, WatchError(why).ToJson(), "ERROR");
    s.writer->Finish();
  }

  // A store event for one watch: sent when it matches, and the resume point moves.
  void Deliver(const std::weak_ptr<WatchSession>& weak, const StoreEvent& event) {
    std::shared_ptr<WatchSession> session = weak.lock();
    if (!session) return;
    WatchSession& s = *session;
    std::lock_guard lock(s.mu);
    if (s.ended || s.writer->closed() || Overflowed(s)) return;
    // An object the watch never showed (other namespace, selector, no usage) is not shown
    // leaving either.
    if (Matches(s.query, s.gv, event.object)) {
      s.writer->Write(EventLine(event, s.gv));
      event_counts_[static_cast<size_t>(event.type)]->Increment();
    }
    s.last_revision = std::max(s.last_revision, event.object.resource_version);
  }

  // The watch line of `event` in `gv`. The store hands one event to every subscription in
  // turn, so the line rendered for the first watcher of each group-version is kept and
  // copied to the others instead of rendered again.
  std::string EventLine(const StoreEvent& event, GroupVersion gv) {
    std::lock_guard lock(line_mu_);
    RenderedLine& last = last_lines_[static_cast<size_t>(gv)];
    const void* object = event.object.node ? static_cast<const void*>(event.object.node.get())
                                           : static_cast<const void*>(event.object.pod.get());
    if (!last.valid || last.type != event.type || last.revision != event.object.resource_version ||
        last.object != object || last.key != event.object.key) {
      last.valid = true;
      last.object = object;
      last.type = event.type;
      last.revision = event.object.resource_version;
      last.key = event.object.key;
      last.line = kube::WriteWatchEvent(
          ToWatchType(event.type), RenderStored(event.object, RenderContext{gv, clock_.Now(), 0}));
    }
    return last.line;
  }

  // The object in a write's body, checked against the URL. 422 for a body that does not
  // read as a metrics/v1alpha1 object, 400 for a name or namespace other than the URL's.
  std::variant<WriteOp, ApiError> ReadObject(const http::Request& request, const Target& t,
                                             WriteOp::Type type) {
    const std::string_view kind = metrics_api::KindName(ResourceOf(t.kind));
    std::optional<std::string_view> content_type = request.Header("Content-Type");
    if (content_type && content_type->find("json") == std::string_view::npos) {
      return ApiError::UnsupportedMediaType(
          absl::StrCat("the body must be application/json, not ", AbslView(*content_type)));
    }
    WriteOp op;
    op.type = type;
    op.key.kind = t.kind;
    std::string name;
    std::string namespace_name;
    if (t.kind == ObjectKind::kNode) {
      absl::StatusOr<metrics_api::Parsed<NodeMetrics>> node =
          metrics_api::ParseNodeMetrics(request.body);
      if (!node.ok()) return InvalidObject(kind, t.name, node.status());
      if (node->gv != GroupVersion::kV1alpha1) {
        return InvalidObject(kind, t.name,
                             absl::InvalidArgumentError("apiVersion: must be metrics/v1alpha1"));
      }
      name = node->object.name;
      node->object.resource_version.clear();
      op.node = std::make_shared<const NodeMetrics>(std::move(node->object));
    } else {
      absl::StatusOr<metrics_api::Parsed<PodMetrics>> pod =
          metrics_api::ParsePodMetrics(request.body);
      if (!pod.ok()) return InvalidObject(kind, t.name, pod.status());
      if (pod->gv != GroupVersion::kV1alpha1) {
        return InvalidObject(kind, t.name,
                             absl::InvalidArgumentError("apiVersion: must be metrics/v1alpha1"));
      }
      name = pod->object.name;
      namespace_name = pod->object.namespace_name;
      pod->object.resource_version.clear();
      op.pod = std::make_shared<const PodMetrics>(std::move(pod->object));
    }
    if (!t.name.empty() && name != t.name) {
      return ApiError::BadRequest(absl::StrCat(
          "the name of the object (", name, ") does not match the name on the URL (", t.name, ")"));
    }
    if (t.kind == ObjectKind::kPod && namespace_name != t.namespace_name) {
      return ApiError::BadRequest(absl::StrCat("the namespace of the object (", namespace_name,
                                               ") does not match the namespace on the URL (",
                                               t.namespace_name, ")"));
    }
    op.key.name = name;
    op.key.namespace_name = namespace_name;
    return op;
  }

  http::Response Counted(std::string_view operation, http::Response response) {
    writes_.Add({{"operation", std::string(operation)}, {"code", std::to_string(response.code)}})
        .Increment();
    return response;
  }

  http::Response WriteOne(const http::Request& request, const Target& t, WriteOp::Type type) {
    const std::string_view operation = type == WriteOp::Type::kCreate ? "create" : "put";
    std::variant<WriteOp, ApiError> read = ReadObject(request, t, type);
    if (auto* error = std::get_if<ApiError>(&read)) {
      return Counted(operation, http::ErrorResponse(*error));
    }
    const WriteOp& op = std::get<WriteOp>(read);
    // One store call: the write tells whether it made the key (201) or replaced it (200).
    absl::StatusOr<WriteResult> result = Timed("apply", [&] { return store_.Apply({op}); });
    if (!result.ok()) {
      if (result.status().code() == absl::StatusCode::kAlreadyExists) {
        return Counted(operation,
                       http::ErrorResponse(ApiError::AlreadyExists(
                           metrics_api::kGroupMetrics, ObjectKindName(t.kind), op.key.name)));
      }
      return Counted(operation, http::ErrorResponse(ApiError::FromStatus(result.status())));
    }
    const RenderContext ctx{GroupVersion::kV1alpha1, clock_.Now(), 0};
    return Counted(operation, Json(result->created.front() ? 201 : 200,
                                   RenderStored(result->objects.front(), ctx), t.route));
  }

  http::Response Delete(const Target& t) {
    WriteOp op;
    op.type = WriteOp::Type::kDelete;
    op.key = ObjectKey{t.kind, t.namespace_name, t.name};
    absl::StatusOr<WriteResult> result = Timed("apply", [&] { return store_.Apply({op}); });
    if (!result.ok()) {
      if (result.status().code() == absl::StatusCode::kNotFound) {
        return Counted("delete", http::ErrorResponse(ApiError::NotFound(
                                     metrics_api::kGroupMetrics, ObjectKindName(t.kind), t.name)));
      }
      return Counted("delete", http::ErrorResponse(ApiError::FromStatus(result.status())));
    }
    JsonWriter w;
    w.BeginObject();
    w.Key("kind").String("Status");
    w.Key("apiVersion").String("v1");
    w.Key("metadata").BeginObject().EndObject();
    w.Key("status").String("Success");
    w.Key("details").BeginObject();
    w.Key("name").String(t.name);
    w.Key("group").String(metrics_api::kGroupMetrics);
    w.Key("kind").String(ObjectKindName(t.kind));
    w.EndObject();
    w.EndObject();
    return Counted("delete", Json(200, w.Take(), t.route));
  }

  http::Response WriteBatch(const http::Request& request) {
    absl::StatusOr<metrics_api::WriteBatch> batch = metrics_api::ParseWriteBatch(request.body);
    if (!batch.ok()) {
      return Counted("batch", http::ErrorResponse(InvalidObject("WriteBatch", "", batch.status())));
    }
    std::vector<WriteOp> ops;
    ops.reserve(batch->items.size());
    for (metrics_api::WriteItem& item : batch->items) {
      WriteOp op;
      const bool node = item.resource == Resource::kNodes;
      op.key.kind = node ? ObjectKind::kNode : ObjectKind::kPod;
      if (item.op == metrics_api::WriteItem::Op::kDelete) {
        op.type = WriteOp::Type::kDeleteIfPresent;
        op.key.name = item.name;
        op.key.namespace_name = node ? "" : item.namespace_name;
      } else if (node) {
        op.key.name = item.node.name;
        item.node.resource_version.clear();
        op.node = std::make_shared<const NodeMetrics>(std::move(item.node));
      } else {
        op.key.name = item.pod.name;
        op.key.namespace_name = item.pod.namespace_name;
        item.pod.resource_version.clear();
        op.pod = std::make_shared<const PodMetrics>(std::move(item.pod));
      }
      ops.push_back(std::move(op));
    }
    absl::StatusOr<WriteResult> result = Timed("apply", [&] { return store_.Apply(ops); });
    if (!result.ok())
      return Counted("batch", http::ErrorResponse(ApiError::FromStatus(result.status())));
    return Counted("batch",
                   Json(200, metrics_api::RenderWriteBatchResult(result->revision, ops.size()),
                        metrics_api::kWriteBatchPath));
  }

  const ApiServerOptions options_;
  ObjectStore& store_;
  prometheus::Registry& registry_;
  const Clock& clock_;
  http::HealthChecks health_{clock_};
  const kube::AccessGate gate_;
  prometheus::Family<prometheus::Gauge>& objects_;
  prometheus::Family<prometheus::Counter>& writes_;
  prometheus::Family<prometheus::Gauge>& watchers_;
  prometheus::Family<prometheus::Counter>& events_;
  // events_ of each EventType, looked up once: every delivered event counts.
  prometheus::Counter* event_counts_[3] = {};
  prometheus::Family<prometheus::Histogram>& storage_;
  prometheus::Counter& overflows_;

  // The last watch line rendered per group-version (EventLine).
  struct RenderedLine {
    bool valid = false;
    EventType type = EventType::kAdded;
    uint64_t revision = 0;
    const void* object = nullptr;  // the stored object's identity (one batch may hold two)
    ObjectKey key;
    std::string line;
  };
  std::mutex line_mu_;
  RenderedLine last_lines_[3];  // guarded by line_mu_; indexed by GroupVersion

  std::unique_ptr<http::Server> server_;
  std::thread sweeper_;
  std::mutex sweep_mu_;
  std::condition_variable sweep_cv_;
  bool stopping_ = false;  // guarded by sweep_mu_
  mutable std::mutex sessions_mu_;
  std::vector<std::shared_ptr<WatchSession>> sessions_;  // guarded by sessions_mu_
};

ApiServer::ApiServer(ApiServerOptions options, ObjectStore& store, prometheus::Registry& registry,
                     const Clock& clock, kube::AccessGate gate)
    : impl_(std::make_unique<Impl>(std::move(options), store, registry, clock, std::move(gate))) {}

ApiServer::~ApiServer() = default;

absl::Status ApiServer::Start() { return impl_->Start(); }
void ApiServer::Stop() { impl_->Stop(); }
void ApiServer::Sweep() { impl_->Sweep(); }
size_t ApiServer::watchers() const { return impl_->watchers(); }
int ApiServer::port() const { return impl_->server() ? impl_->server()->port() : 0; }
std::string ApiServer::BaseUrl() const { return impl_->server() ? impl_->server()->BaseUrl() : ""; }
std::string ApiServer::HealthBaseUrl() const {
  return impl_->server() ? impl_->server()->HealthBaseUrl() : "";
}

}  // namespace kubestat::apiserver
