#include "kubestat/aggregator/rest_server.h"

#include <string_view>
#include <utility>

#include "kubestat/core/absl_view.h"
#include "kubestat/core/log.h"
#include "kubestat/core/status.h"
#include "kubestat/http/server.h"
#include "kubestat/kube/request_attributes.h"
#include "kubestat/kube/request_credentials.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace kubestat::aggregator {
namespace {

constexpr std::string_view kRouteMetrics = "/metrics";
constexpr std::string_view kContentTypePrometheus = "text/plain; version=0.0.4";

// The request's headers as the authenticator reads them.
class RequestHeaderView final : public kube::RequestHeaders {
 public:
  explicit RequestHeaderView(const http::Request& request) : request_(request) {}
  std::optional<std::string_view> First(std::string_view name) const override {
    return request_.Header(name);
  }
  std::vector<std::string_view> All(std::string_view name) const override {
    return request_.HeaderValues(name);
  }
  void ForEach(
      const std::function<void(std::string_view, std::string_view)>& visit) const override {
    for (const http::HeaderField& field : request_.headers) visit(field.name, field.value);
  }

 private:
  const http::Request& request_;
};

bool PathMatches(const std::vector<std::string>& patterns, std::string_view path) {
  for (const std::string& pattern : patterns) {
    if (!pattern.empty() && pattern.back() == '*') {
      if (path.substr(0, pattern.size() - 1) ==
          std::string_view(pattern).substr(0, pattern.size() - 1)) {
        return true;
      }
    } else if (path == pattern) {
      return true;
    }
  }
  return false;
}

http::Response ToHttp(RestResponse response) {
  http::Response out;
  out.code = response.code;
  out.content_type = std::string(response.content_type);
  out.content_encoding = std::string(response.content_encoding);
  out.body = std::move(response.body);
  out.route = response.route;
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
  for (const std::string& path : always_allow_paths) {
    if (path.empty() || path[0] != '/') {
      return absl::InvalidArgumentError("rest always_allow_paths: \"" + path +
                                        "\" does not start with '/'");
    }
  }
  return absl::OkStatus();
}

class RestServer::Impl {
 public:
  Impl(RestServerOptions options, const MetricsSource& source, prometheus::Registry& registry,
       const Clock& clock, LivenessCheck liveness, AccessControl access)
      : options_(std::move(options)),
        handler_(source, clock, std::move(liveness),
                 ResponseCompression{options_.secure.compression.enabled,
                                     options_.secure.compression.min_bytes}),
        registry_(registry),
        clock_(clock),
        access_(access) {}

  ~Impl() { Stop(); }

  absl::Status Start() {
    if (absl::Status s = options_.Validate(); !s.ok()) return s;
    if (access_.authenticator == nullptr || access_.authorizer == nullptr) {
      return absl::InvalidArgumentError("the REST server needs an authenticator and an authorizer");
    }
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
  const http::Server* secure() const { return secure_.get(); }
  const http::Server* insecure() const { return insecure_.get(); }

 private:
  http::Response Serve(const http::Request& request) {
    if (PathMatches(options_.always_allow_paths, request.path)) return Route(request);

    RequestHeaderView headers(request);
    kube::ClientCertificate certificate;
    const kube::ClientCertificate* presented = nullptr;
    if (request.peer_certificate != nullptr) {
      certificate.verified_by = request.peer_certificate->verified_by;
      certificate.common_name = request.peer_certificate->common_name;
      certificate.organizations = request.peer_certificate->organizations;
      presented = &certificate;
    }
    const kube::AuthenticationResult identity =
        access_.authenticator->Authenticate(kube::RequestCredentials{headers, presented});
    if (!identity.authenticated()) {
      KVLOG(1) << "REST " << request.remote_address << ": 401 ("
               << kube::AuthenticationOutcomeName(identity.outcome) << ": " << identity.reason
               << ")";
      return http::ErrorResponse(ApiError::Unauthorized());
    }
    absl::StatusOr<kube::RequestAttributes> attributes =
        kube::ParseRequestAttributes(request.method, request.path, request.query);
    if (!attributes.ok()) {
      return http::ErrorResponse(ApiError::BadRequest(StdView(attributes.status().message())));
    }
    const kube::AuthorizationResult decision =
        access_.authorizer->Authorize(identity.user, *attributes);
    if (!decision.allowed) {
      KVLOG(1) << "REST " << request.remote_address << ": 403 for " << identity.user.name << " ("
               << kube::DecisionSourceName(decision.source) << ": " << decision.reason << ")";
      return http::ErrorResponse(kube::ForbiddenError(identity.user, *attributes, decision.reason));
    }
    if (attributes->resource_request && attributes->verb == "watch") {
      return http::ErrorResponse(
          ApiError::MethodNotAllowed(attributes->api_group, attributes->resource, "watch"));
    }
    return Route(request);
  }

  http::Response Route(const http::Request& request) {
    if (request.path == kRouteMetrics || request.path == "/metrics/") {
      if (request.method != "GET" && request.method != "HEAD") {
        return http::ErrorResponse(
            ApiError(405, StatusReason::kMethodNotAllowed,
                     "the server does not allow this method on the requested resource"),
            kRouteMetrics);
      }
      http::Response response;
      response.route = kRouteMetrics;
      response.content_type = std::string(kContentTypePrometheus);
      response.body = prometheus::TextSerializer().Serialize(registry_.Collect());
      return response;
    }
    return ToHttp(handler_.Handle(
        RestRequest{request.method, request.path, request.query, request.accepts_gzip}));
  }

  const RestServerOptions options_;
  const RestHandler handler_;
  prometheus::Registry& registry_;
  const Clock& clock_;
  const AccessControl access_;
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
