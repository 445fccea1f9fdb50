#include "kubestat/kube/authenticator.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/kube/token_file.h"
#include "review_json.h"

namespace kubestat::kube {
namespace {

constexpr std::array kMethods = {
    AuthenticationMethod::kNone,
    AuthenticationMethod::kFrontProxy,
    AuthenticationMethod::kClientCertificate,
    AuthenticationMethod::kTokenFile,
    AuthenticationMethod::kTokenReview,
    AuthenticationMethod::kAnonymous,
};
constexpr std::array kOutcomes = {
    AuthenticationOutcome::kAuthenticated,
    AuthenticationOutcome::kNoCredentials,
    AuthenticationOutcome::kRejected,
    AuthenticationOutcome::kError,
};

// ASCII case-insensitive equality (header names, auth schemes).
bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return absl::EqualsIgnoreCase(AbslView(a), AbslView(b));
}

// What the Authorization header holds.
struct BearerCredential {
  enum class Kind { kNone, kMalformed, kToken } kind = Kind::kNone;
  std::string_view token;
};

BearerCredential ReadBearer(const RequestHeaders& headers) {
  BearerCredential out;
  std::optional<std::string_view> header = headers.First("Authorization");
  if (!header) return out;
  std::string_view value = *header;
  const size_t space = value.find(' ');
  const std::string_view scheme = value.substr(0, space);
  if (!EqualsIgnoreCase(scheme, "Bearer")) return out;  // another scheme: not ours
  out.kind = BearerCredential::Kind::kMalformed;
  if (space == std::string_view::npos) return out;
  const std::string_view token = value.substr(space + 1);
  if (token.empty() || token.find_first_of(" \t") != std::string_view::npos) return out;
  out.kind = BearerCredential::Kind::kToken;
  out.token = token;
  return out;
}

}  // namespace

std::string_view AuthenticationMethodName(AuthenticationMethod method) {
  switch (method) {
    case AuthenticationMethod::kNone:
      return "none";
    case AuthenticationMethod::kFrontProxy:
      return "front_proxy";
    case AuthenticationMethod::kClientCertificate:
      return "client_certificate";
    case AuthenticationMethod::kTokenFile:
      return "token_file";
    case AuthenticationMethod::kTokenReview:
      return "token_review";
    case AuthenticationMethod::kAnonymous:
      return "anonymous";
  }
  return "none";
}

std::string_view AuthenticationOutcomeName(AuthenticationOutcome outcome) {
  switch (outcome) {
    case AuthenticationOutcome::kAuthenticated:
      return "authenticated";
    case AuthenticationOutcome::kNoCredentials:
      return "no_credentials";
    case AuthenticationOutcome::kRejected:
      return "rejected";
    case AuthenticationOutcome::kError:
      return "error";
  }
  return "error";
}

absl::Status AuthenticatorOptions::Validate() const {
  if (absl::Status s = front_proxy.Validate(); !s.ok()) return s;
  if (client_certificates && client_ca_bundle.empty()) {
    return absl::InvalidArgumentError("--client-ca-file: CA bundle name is empty");
  }
  if (!token_auth_file.empty() && token_auth_file_check_interval < Duration::zero()) {
    return absl::InvalidArgumentError("--token-auth-file: check interval must not be negative");
  }
  if (token_review) {
    if (absl::Status s = token_review_options.Validate(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

struct Authenticator::Parts {
  AuthenticatorOptions options;
  // The parts the cluster's published trust may change (SetClusterTrust); options holds the
  // rest. Read once per request.
  mutable std::mutex trust_mu;
  std::shared_ptr<const FrontProxyOptions> front_proxy;  // guarded by trust_mu
  bool client_certificates = false;                      // guarded by trust_mu
  std::unique_ptr<TokenAuthFile> token_file;
  std::unique_ptr<TokenReviewer> token_reviewer;
  // [method][outcome]; null without a registry.
  std::array<std::array<prometheus::Counter*, kOutcomes.size()>, kMethods.size()> attempts{};
};

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::Create(
    AuthenticatorOptions options, const Clock& clock, KubeReviewTransport* transport,
    prometheus::Registry* registry) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  auto parts = std::make_unique<Parts>();
  if (!options.token_auth_file.empty()) {
    absl::StatusOr<std::unique_ptr<TokenAuthFile>> file =
        TokenAuthFile::Open(options.token_auth_file, clock, options.token_auth_file_check_interval);
    if (!file.ok()) {
      return absl::Status(file.status().code(),
                          StrCat("--token-auth-file: ", internal::MessageOf(file.status())));
    }
    parts->token_file = std::move(*file);
  }
  if (options.token_review) {
    if (transport == nullptr) {
      return absl::InvalidArgumentError(
          "--authentication-kubeconfig: token review needs a connection to the API server");
    }
    parts->token_reviewer =
        std::make_unique<TokenReviewer>(options.token_review_options, *transport, clock, registry);
  }
  if (registry != nullptr) {
    auto& family = prometheus::BuildCounter()
                       .Name("kubestat_authentication_attempts_total")
                       .Help("Requests authenticated, by the deciding method and the result.")
                       .Register(*registry);
    for (size_t m = 0; m < kMethods.size(); ++m) {
      for (size_t o = 0; o < kOutcomes.size(); ++o) {
        parts->attempts[m][o] =
            &family.Add({{"method", std::string(AuthenticationMethodName(kMethods[m]))},
                         {"result", std::string(AuthenticationOutcomeName(kOutcomes[o]))}});
      }
    }
  }
  parts->front_proxy = std::make_shared<const FrontProxyOptions>(options.front_proxy);
  parts->client_certificates = options.client_certificates;
  parts->options = std::move(options);
  return std::unique_ptr<Authenticator>(new Authenticator(std::move(parts)));
}

Authenticator::Authenticator(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}
Authenticator::~Authenticator() = default;

absl::Status Authenticator::SetClusterTrust(FrontProxyOptions front_proxy,
                                            bool client_certificates) {
  if (absl::Status s = front_proxy.Validate(); !s.ok()) return s;
  auto shared = std::make_shared<const FrontProxyOptions>(std::move(front_proxy));
  std::lock_guard lock(parts_->trust_mu);
  parts_->front_proxy = std::move(shared);
  parts_->client_certificates = client_certificates;
  return absl::OkStatus();
}

AuthenticationResult Authenticator::Authenticate(const RequestCredentials& credentials) {
  AuthenticationResult result = Decide(credentials);
  if (result.outcome == AuthenticationOutcome::kAuthenticated &&
      result.method != AuthenticationMethod::kAnonymous &&
      !result.user.HasGroup(kAuthenticatedGroup)) {
    result.user.groups.emplace_back(kAuthenticatedGroup);
  }
  prometheus::Counter* counter =
      parts_->attempts[static_cast<size_t>(result.method)][static_cast<size_t>(result.outcome)];
  if (counter != nullptr) counter->Increment();
  return result;
}

AuthenticationResult Authenticator::Decide(const RequestCredentials& credentials) {
  const AuthenticatorOptions& options = parts_->options;
  AuthenticationResult result;
  std::shared_ptr<const FrontProxyOptions> front_proxy;
  bool client_certificates = false;
  {
    std::lock_guard lock(parts_->trust_mu);
    front_proxy = parts_->front_proxy;
    client_certificates = parts_->client_certificates;
  }

  FrontProxyResult proxied = AuthenticateFrontProxy(*front_proxy, credentials);
  if (proxied.outcome == FrontProxyOutcome::kAuthenticated) {
    result.outcome = AuthenticationOutcome::kAuthenticated;
    result.method = AuthenticationMethod::kFrontProxy;
    result.user = std::move(proxied.user);
    return result;
  }

  // A failure of an earlier method, reported only if no later method succeeds.
  std::optional<AuthenticationResult> failure;
  const ClientCertificate* cert = credentials.client_certificate;
  if (client_certificates && cert != nullptr) {
    if (cert->VerifiedBy(options.client_ca_bundle)) {
      if (!cert->common_name.empty()) {
        result.outcome = AuthenticationOutcome::kAuthenticated;
        result.method = AuthenticationMethod::kClientCertificate;
        result.user.name = cert->common_name;
        result.user.groups = cert->organizations;
        return result;
      }
      failure = AuthenticationResult{AuthenticationOutcome::kRejected,
                                     AuthenticationMethod::kClientCertificate,
                                     {},
                                     "client certificate has an empty common name"};
    } else {
      failure = AuthenticationResult{AuthenticationOutcome::kRejected,
                                     AuthenticationMethod::kClientCertificate,
                                     {},
                                     "client certificate is not signed by the client CA"};
    }
  }

  const BearerCredential bearer = ReadBearer(credentials.headers);
  const bool tokens_enabled = parts_->token_file != nullptr || parts_->token_reviewer != nullptr;
  if (tokens_enabled && bearer.kind == BearerCredential::Kind::kMalformed) {
    return AuthenticationResult{AuthenticationOutcome::kRejected,
                                AuthenticationMethod::kNone,
                                {},
                                "malformed Bearer authorization header"};
  }
  if (tokens_enabled && bearer.kind == BearerCredential::Kind::kToken) {
    if (parts_->token_file != nullptr) {
      if (std::optional<UserInfo> user = parts_->token_file->Lookup(bearer.token)) {
        result.outcome = AuthenticationOutcome::kAuthenticated;
        result.method = AuthenticationMethod::kTokenFile;
        result.user = std::move(*user);
        return result;
      }
    }
    if (parts_->token_reviewer != nullptr) {
      TokenReviewResult review = parts_->token_reviewer->Review(bearer.token);
      result.method = AuthenticationMethod::kTokenReview;
      switch (review.outcome) {
        case TokenReviewOutcome::kAuthenticated:
          result.outcome = AuthenticationOutcome::kAuthenticated;
          result.user = std::move(review.user);
          return result;
        case TokenReviewOutcome::kUnauthenticated:
          result.outcome = AuthenticationOutcome::kRejected;
          break;
        case TokenReviewOutcome::kError:
          result.outcome = AuthenticationOutcome::kError;
          break;
      }
      result.reason = StrCat(review.reason, " (token ", TokenFingerprint(bearer.token), ")");
      return result;
    }
    return AuthenticationResult{
        AuthenticationOutcome::kRejected,
        AuthenticationMethod::kTokenFile,
        {},
        StrCat("unknown bearer token (", TokenFingerprint(bearer.token), ")")};
  }

  if (failure) return *failure;
  if (options.anonymous) {
    result.outcome = AuthenticationOutcome::kAuthenticated;
    result.method = AuthenticationMethod::kAnonymous;
    result.user.name = std::string(kAnonymousUser);
    result.user.groups = {std::string(kUnauthenticatedGroup)};
    return result;
  }
  result.outcome = AuthenticationOutcome::kNoCredentials;
  result.reason = "no credentials";
  return result;
}

}  // namespace kubestat::kube
