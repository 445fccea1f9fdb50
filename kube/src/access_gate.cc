#include "kubestat/kube/access_gate.h"

#include <functional>
#include <utility>

#include "kubestat/apimachinery/api_error.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/log.h"
#include "kubestat/kube/request_credentials.h"

namespace kubestat::kube {
namespace {

// The request's headers as the authenticator reads them.
class RequestHeaderView final : public RequestHeaders {
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

}  // namespace

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

absl::Status ValidateAlwaysAllowPaths(const std::vector<std::string>& paths,
                                      std::string_view what) {
  for (const std::string& path : paths) {
    if (path.empty() || path[0] != '/') {
      return absl::InvalidArgumentError(std::string(what) + ": \"" + path +
                                        "\" does not start with '/'");
    }
  }
  return absl::OkStatus();
}

AccessGate::AccessGate(std::string server_name, std::vector<std::string> always_allow_paths,
                       Authenticator* authenticator, Authorizer* authorizer)
    : server_name_(std::move(server_name)),
      always_allow_paths_(std::move(always_allow_paths)),
      authenticator_(authenticator),
      authorizer_(authorizer) {}

absl::Status AccessGate::Validate() const {
  if (authenticator_ == nullptr || authorizer_ == nullptr) {
    return absl::InvalidArgumentError(server_name_ + " needs an authenticator and an authorizer");
  }
  return ValidateAlwaysAllowPaths(always_allow_paths_, server_name_ + " always_allow_paths");
}

AccessDecision AccessGate::Check(const http::Request& request) const {
  AccessDecision decision;
  if (PathMatches(always_allow_paths_, request.path)) {
    decision.always_allowed = true;
    return decision;
  }
  RequestHeaderView headers(request);
  ClientCertificate certificate;
  const ClientCertificate* presented = nullptr;
  if (request.peer_certificate != nullptr) {
    certificate.verified_by = request.peer_certificate->verified_by;
    certificate.common_name = request.peer_certificate->common_name;
    certificate.organizations = request.peer_certificate->organizations;
    presented = &certificate;
  }
  AuthenticationResult identity =
      authenticator_->Authenticate(RequestCredentials{headers, presented});
  if (!identity.authenticated()) {
    KVLOG(1) << server_name_ << " " << request.remote_address << ": 401 ("
             << AuthenticationOutcomeName(identity.outcome) << ": " << identity.reason << ")";
    decision.refusal = http::ErrorResponse(ApiError::Unauthorized());
    return decision;
  }
  absl::StatusOr<RequestAttributes> attributes =
      ParseRequestAttributes(request.method, request.path, request.query);
  if (!attributes.ok()) {
    decision.refusal =
        http::ErrorResponse(ApiError::BadRequest(StdView(attributes.status().message())));
    return decision;
  }
  const AuthorizationResult verdict = authorizer_->Authorize(identity.user, *attributes);
  if (!verdict.allowed) {
    KVLOG(1) << server_name_ << " " << request.remote_address << ": 403 for " << identity.user.name
             << " (" << DecisionSourceName(verdict.source) << ": " << verdict.reason << ")";
    decision.refusal =
        http::ErrorResponse(ForbiddenError(identity.user, *attributes, verdict.reason));
    return decision;
  }
  decision.user = std::move(identity.user);
  decision.attributes = *std::move(attributes);
  return decision;
}

}  // namespace kubestat::kube
