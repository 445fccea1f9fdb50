#include "kubestat/kube/authorizer.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/str_cat.h"
#include "review_json.h"

namespace kubestat::kube {
namespace {

constexpr std::array kSources = {DecisionSource::kAlwaysAllowPath, DecisionSource::kRulesFile,
                                 DecisionSource::kSubjectAccessReview, DecisionSource::kDefault};
// Label values of kubestat_authorization_decisions_total{decision}.
constexpr std::array<std::string_view, 3> kDecisionLabels = {"allow", "deny", "error"};

std::string_view TrimLeadingSlash(std::string_view path) {
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  return path;
}

// Go's %q for the plain text kubestat puts in these messages.
std::string Quote(std::string_view text) {
  std::string out;
  JsonWriter::AppendQuoted(out, text);
  return out;
}

}  // namespace

std::string_view DecisionName(Decision decision) {
  switch (decision) {
    case Decision::kAllow:
      return "allow";
    case Decision::kDeny:
      return "deny";
    case Decision::kNoOpinion:
      return "no_opinion";
  }
  return "no_opinion";
}

std::string_view DecisionSourceName(DecisionSource source) {
  switch (source) {
    case DecisionSource::kAlwaysAllowPath:
      return "always_allow_path";
    case DecisionSource::kRulesFile:
      return "rules_file";
    case DecisionSource::kSubjectAccessReview:
      return "subject_access_review";
    case DecisionSource::kDefault:
      return "default";
  }
  return "default";
}

absl::Status AuthorizerOptions::Validate() const {
  for (const std::string& path : always_allow_paths) {
    const std::string_view p = TrimLeadingSlash(path);
    if (!p.empty() && p.substr(0, p.size() - 1).find('*') != std::string_view::npos) {
      return absl::InvalidArgumentError(StrCat(
          "--authorization-always-allow-paths: only a trailing * is allowed in \"", path, "\""));
    }
  }
  if (subject_access_review) {
    if (absl::Status s = subject_access_review_options.Validate(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

struct Authorizer::Parts {
  // Always-allow paths without their leading '/': exact ones and prefixes.
  std::unordered_set<std::string> allow_paths;
  std::vector<std::string> allow_prefixes;
  std::optional<AccessRules> rules;
  std::unique_ptr<SubjectAccessReviewer> reviewer;
  // [source][decision label]; null without a registry.
  std::array<std::array<prometheus::Counter*, kDecisionLabels.size()>, kSources.size()> decisions{};
};

absl::StatusOr<std::unique_ptr<Authorizer>> Authorizer::Create(const AuthorizerOptions& options,
                                                               const Clock& clock,
                                                               KubeReviewTransport* transport,
                                                               prometheus::Registry* registry) {
  std::optional<AccessRules> rules;
  if (!options.rules_file.empty()) {
    absl::StatusOr<AccessRules> loaded = AccessRules::Load(options.rules_file);
    if (!loaded.ok()) return loaded.status();
    rules = std::move(*loaded);
  }
  return Create(options, std::move(rules), clock, transport, registry);
}

absl::StatusOr<std::unique_ptr<Authorizer>> Authorizer::Create(const AuthorizerOptions& options,
                                                               std::optional<AccessRules> rules,
                                                               const Clock& clock,
                                                               KubeReviewTransport* transport,
                                                               prometheus::Registry* registry) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  auto parts = std::make_unique<Parts>();
  for (const std::string& path : options.always_allow_paths) {
    const std::string_view p = TrimLeadingSlash(path);
    if (!p.empty() && p.back() == '*') {
      parts->allow_prefixes.emplace_back(p.substr(0, p.size() - 1));
    } else {
      parts->allow_paths.emplace(p);
    }
  }
  parts->rules = std::move(rules);
  if (options.subject_access_review) {
    if (transport == nullptr) {
      return absl::InvalidArgumentError(
          "--authorization-kubeconfig: subject access review needs a connection to the API "
          "server");
    }
    parts->reviewer = std::make_unique<SubjectAccessReviewer>(options.subject_access_review_options,
                                                              *transport, clock, registry);
  }
  if (registry != nullptr) {
    auto& family = prometheus::BuildCounter()
                       .Name("kubestat_authorization_decisions_total")
                       .Help(
                           "Authorization decisions, by decision (allow, deny, or error: a "
                           "review that failed) and the authorizer that made it.")
                       .Register(*registry);
    for (size_t s = 0; s < kSources.size(); ++s) {
      for (size_t d = 0; d < kDecisionLabels.size(); ++d) {
        parts->decisions[s][d] =
            &family.Add({{"decision", std::string(kDecisionLabels[d])},
                         {"source", std::string(DecisionSourceName(kSources[s]))}});
      }
    }
  }
  return std::unique_ptr<Authorizer>(new Authorizer(std::move(parts)));
}

Authorizer::Authorizer(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}
Authorizer::~Authorizer() = default;

AuthorizationResult Authorizer::Authorize(const UserInfo& user, const RequestAttributes& request) {
  AuthorizationResult result = Decide(user, request);
  const size_t label = result.error ? 2 : result.allowed ? 0 : 1;
  prometheus::Counter* counter = parts_->decisions[static_cast<size_t>(result.source)][label];
  if (counter != nullptr) counter->Increment();
  return result;
}

AuthorizationResult Authorizer::Decide(const UserInfo& user, const RequestAttributes& request) {
  if (!request.resource_request) {
    const std::string_view path = TrimLeadingSlash(request.path);
    bool allowed = parts_->allow_paths.contains(std::string(path));
    for (size_t i = 0; !allowed && i < parts_->allow_prefixes.size(); ++i) {
      allowed = path.starts_with(parts_->allow_prefixes[i]);
    }
    if (allowed) {
      return AuthorizationResult{true, DecisionSource::kAlwaysAllowPath,
                                 "path is in --authorization-always-allow-paths", false};
    }
  }
  if (parts_->rules) {
    AuthorizerAnswer answer = parts_->rules->Evaluate(user, request);
    if (answer.decision == Decision::kAllow) {
      return AuthorizationResult{true, DecisionSource::kRulesFile, std::move(answer.reason), false};
    }
  }
  if (parts_->reviewer) {
    AuthorizerAnswer answer = parts_->reviewer->Review(user, request);
    if (answer.decision != Decision::kNoOpinion) {
      return AuthorizationResult{answer.decision == Decision::kAllow,
                                 DecisionSource::kSubjectAccessReview, std::move(answer.reason),
                                 answer.error};
    }
  }
  return AuthorizationResult{false, DecisionSource::kDefault, "no rule or review allowed it",
                             false};
}

ApiError ForbiddenError(const UserInfo& user, const RequestAttributes& request,
                        std::string_view reason) {
  std::string message;
  if (!request.resource_request) {
    message =
        StrCat("User ", Quote(user.name), " cannot ", request.verb, " path ", Quote(request.path));
  } else {
    const std::string resource = request.subresource.empty()
                                     ? request.resource
                                     : StrCat(request.resource, "/", request.subresource);
    message = StrCat("User ", Quote(user.name), " cannot ", request.verb, " resource ",
                     Quote(resource), " in API group ", Quote(request.api_group));
    message += request.namespace_name.empty()
                   ? std::string(" at the cluster scope")
                   : StrCat(" in the namespace ", Quote(request.namespace_name));
  }
  if (!reason.empty()) message += StrCat(": ", reason);
  if (!request.resource_request) {
    return ApiError(403, StatusReason::kForbidden, StrCat("forbidden: ", message));
  }
  return ApiError::Forbidden(request.api_group, request.resource, request.name, message);
}

}  // namespace kubestat::kube
