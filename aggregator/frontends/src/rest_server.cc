#include "kubestat/aggregator/frontends/rest_server.h"

#include <string_view>
#include <utility>

#include "kubestat/apimachinery/api_error.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/log.h"
#include "kubestat/http/metrics_endpoint.h"
#include "kubestat/http/server.h"
#include "kubestat/kube/access_gate.h"

namespace kubestat::aggregator {
namespace {

http::Response ToHttp(RestResponse response) {
  http::Response out;
  out.code = response.code;
  out.content_type = std::string(response.content_type);
  out.content_encoding = std::string(response.content_encoding);
  out.body = std::move(response.body);
  out.route = response.route;
  if (response.varies_by_accept) out.headers.emplace_back("Vary", "Accept");
  return out;
}

}  // namespace

http::ServerOptions RestServerOptions::SecureDefaults() {
  http::ServerOptions options;
  options.metrics_name = "secure";
  // Every metrics request is a GET; nothing needs a large body.
  options.limits.max_body_bytes = 64 * 1024;
  return options;
}

absl::Status RestServerOptions::Validate() const {
  if (absl::Status s = secure.Validate(); !s.ok()) return s;
  if (insecure) {
    http::ServerOptions plain = *insecure;
    plain.tls.enabled = false;
    if (absl::Status s = plain.Validate(); !s.ok()) return s;
    if (plain.metrics_name == secure.metrics_name) {
      return absl::InvalidArgumentError("rest insecure.metrics_name must differ from secure's");
    }
  }
  return kube::ValidateAlwaysAllowPaths(always_allow_paths, "rest always_allow_paths");
}

class RestServer::Impl {
 public:
  Impl(RestServerOptions options, const MetricsSource& source, prometheus::Registry& registry,
       const Clock& clock, LivenessCheck liveness, AccessControl access)
      : options_(std::move(options)),
        gate_("REST", options_.always_allow_paths, access.authenticator, access.authorizer),
        handler_(source, clock, std::move(liveness),
                 ResponseCompression{options_.secure.compression.enabled,
                                     options_.secure.compression.min_bytes},
                 options_.metrics_max_age),
        registry_(registry),
        clock_(clock) {
    handler_.health().AttachMetrics(registry);
  }

  ~Impl() { Stop(); }

  absl::Status Start() {
    if (absl::Status s = options_.Validate(); !s.ok()) return s;
    if (absl::Status s = gate_.Validate(); !s.ok()) return s;
    if (secure_) return absl::FailedPreconditionError("the REST server is already started");
    auto serve = [this](const http::Request& request) { return Serve(request); };
    secure_ = std::make_unique<http::Server>(options_.secure, serve, registry_, clock_);
    if (absl::Status s = secure_->Start(); !s.ok()) return s;
    KLOG(INFO) << "REST front end listening on " << secure_->BaseUrl();
    if (options_.insecure) {
      http::ServerOptions plain = *options_.insecure;
      plain.tls.enabled = false;
      insecure_ = std::make_unique<http::Server>(plain, serve, registry_, clock_);
      if (absl::Status s = insecure_->Start(); !s.ok()) {
        secure_->Stop();
        return s;
      }
      KLOG(INFO) << "REST front end also listening, as asked, on plain " << insecure_->BaseUrl();
    }
    return absl::OkStatus();
  }

  void Stop() {
    if (insecure_) insecure_->Stop();
    if (secure_) secure_->Stop();
  }

  RestHandler::Prepared Prepare() { return handler_.Prepare(); }
  http::HealthChecks& health() { return handler_.health(); }
  void SetRecommender(const Recommender* recommender) { handler_.SetRecommender(recommender); }
  const http::Server* secure() const { return secure_.get(); }
  const http::Server* insecure() const { return insecure_.get(); }

 private:
  http::Response Serve(const http::Request& request) {
    kube::AccessDecision access = gate_.Check(request);
    if (access.refusal) return *std::move(access.refusal);
    if (access.always_allowed) return Route(request);
    if (access.attributes.resource_request && access.attributes.verb == "watch") {
      return http::ErrorResponse(ApiError::MethodNotAllowed(access.attributes.api_group,
                                                            access.attributes.resource, "watch"));
    }
    return Route(request);
  }

  http::Response Route(const http::Request& request) {
    if (http::IsMetricsPath(request.path)) return http::MetricsResponse(request, registry_);
    const std::string accept = request.CombinedHeader("Accept");
    return ToHttp(handler_.Handle(
        RestRequest{request.method, request.path, request.query, request.accepts_gzip, accept}));
  }

  const RestServerOptions options_;
  const kube::AccessGate gate_;
  RestHandler handler_;  // non-const only to add health checks before serving
  prometheus::Registry& registry_;
  const Clock& clock_;
  std::unique_ptr<http::Server> secure_;
  std::unique_ptr<http::Server> insecure_;
};

RestServer::RestServer(RestServerOptions options, const MetricsSource& source,
                       prometheus::Registry& registry, const Clock& clock, LivenessCheck liveness,
                       AccessControl access)
    : impl_(std::make_unique<Impl>(std::move(options), source, registry, clock, std::move(liveness),
                                   access)) {}

RestServer::~RestServer() = default;

absl::Status RestServer::Start() { return impl_->Start(); }
void RestServer::Stop() { impl_->Stop(); }
RestHandler::Prepared RestServer::Prepare() { return impl_->Prepare(); }
http::HealthChecks& RestServer::health() { return impl_->health(); }
void RestServer::SetRecommender(const Recommender* recommender) {
  impl_->SetRecommender(recommender);
}
int RestServer::port() const { return impl_->secure() ? impl_->secure()->port() : 0; }
std::string RestServer::BaseUrl() const {
  return impl_->secure() ? impl_->secure()->BaseUrl() : "";
}
int RestServer::insecure_port() const { return impl_->insecure() ? impl_->insecure()->port() : 0; }
std::string RestServer::InsecureBaseUrl() const {
  return impl_->insecure() ? impl_->insecure()->BaseUrl() : "";
}
std::string RestServer::HealthBaseUrl() const {
  return impl_->secure() ? impl_->secure()->HealthBaseUrl() : "";
}

}  // namespace kubestat::aggregator
