#include "kubestat/apiserver/api_server.h"

#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "api_reads.h"
#include "api_request.h"
#include "api_watches.h"
#include "api_writes.h"
#include "kubestat/apimachinery/api_error.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/log.h"
#include "kubestat/core/time.h"
#include "kubestat/http/health_checks.h"
#include "kubestat/http/metrics_endpoint.h"
#include "kubestat/http/server.h"
#include "kubestat/metrics_api/discovery.h"
#include "kubestat/metrics_api/encoding.h"
#include "kubestat/metrics_api/group_version.h"
#include "kubestat/metrics_api/query.h"

namespace kubestat::apiserver {

using internal::ApiReads;
using internal::ApiWatches;
using internal::ApiWrites;
using internal::Encoding;
using internal::GroupVersion;
using internal::Json;
using internal::NotFoundPath;
using internal::Parse;
using internal::Target;
using internal::TrueParam;

namespace {

// The verbs the API's resource lists name: metrics/v1alpha1 takes writes, metrics.k8s.io not.
constexpr std::string_view kWriteVerbs[] = {"get", "list", "watch", "create", "update", "delete"};
constexpr std::string_view kWatchVerbs[] = {"get", "list", "watch"};

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

// The API server: its listener, health, the routing of each request to the reads
// (api_reads.cc), the watches (api_watches.cc) or the writes (api_writes.cc), and the sweep
// that expires objects and ends finished watches.
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
        timer_(registry, clock),
        reads_(store, clock, timer_),
        watches_(options_, store, clock, timer_, registry),
        writes_(store, clock, timer_, registry) {
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
    watches_.EndAll();
    if (server_) server_->Stop();
  }

  void Sweep() {
    const Timestamp now = clock_.Now();
    writes_.Expire(now, options_.object_ttl);
    watches_.Sweep(now);
    for (ObjectKind kind : {ObjectKind::kNode, ObjectKind::kPod}) {
      absl::StatusOr<size_t> count = store_.Count(kind);
      if (count.ok()) {
        objects_.Add({{"resource", std::string(ObjectKindName(kind))}})
            .Set(static_cast<double>(*count));
      }
    }
  }

  size_t watchers() const { return watches_.count(); }
  const http::Server* server() const { return server_.get(); }

 private:
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
        if (request.method == "POST") return writes_.WriteBatch(request);
        break;
      case Target::Type::kCollection:
        if (get) {
          const bool watch = TrueParam(params, "watch");
          const std::optional<Encoding> encoding = ReadEncoding(request, t, watch);
          if (!encoding) return NotAcceptable(t, watch);
          return watch ? watches_.Watch(t, params) : reads_.List(t, params, indent, *encoding);
        }
        if (request.method == "POST" && t.gv == GroupVersion::kV1alpha1) {
          return writes_.WriteOne(request, t, WriteOp::Type::kCreate);
        }
        break;
      case Target::Type::kObject:
        if (get) {
          const std::optional<Encoding> encoding = ReadEncoding(request, t, /*watch=*/false);
          if (!encoding) return NotAcceptable(t, /*watch=*/false);
          return reads_.GetOne(t, params, indent, *encoding);
        }
        if (t.gv == GroupVersion::kV1alpha1 && request.method == "PUT") {
          return writes_.WriteOne(request, t, WriteOp::Type::kPut);
        }
        if (t.gv == GroupVersion::kV1alpha1 && request.method == "DELETE") {
          return writes_.Delete(t);
        }
        break;
    }
    return http::ErrorResponse(ApiError::MethodNotAllowed(metrics_api::GroupName(t.gv),
                                                          ObjectKindName(t.kind), request.method));
  }

  const ApiServerOptions options_;
  ObjectStore& store_;
  prometheus::Registry& registry_;
  const Clock& clock_;
  http::HealthChecks health_{clock_};
  const kube::AccessGate gate_;
  prometheus::Family<prometheus::Gauge>& objects_;
  internal::StoreTimer timer_;
  ApiReads reads_;
  ApiWatches watches_;
  ApiWrites writes_;

  std::unique_ptr<http::Server> server_;
  std::thread sweeper_;
  std::mutex sweep_mu_;
  std::condition_variable sweep_cv_;
  bool stopping_ = false;  // guarded by sweep_mu_
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
