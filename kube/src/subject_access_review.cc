#include "kubestat/kube/subject_access_review.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/core/str_cat.h"
#include "review_cache.h"
#include "review_json.h"
#include "simdjson.h"

namespace kubestat::kube {
namespace {

constexpr std::string_view kKind = "SubjectAccessReview";
constexpr std::string_view kApiVersion = "authorization.k8s.io/v1";

void MemberIfSet(JsonWriter& w, std::string_view key, std::string_view value) {
  if (!value.empty()) w.Member(key, value);
}

}  // namespace

struct SubjectAccessReviewer::State {
  State(const Clock& clock, size_t max_entries) : cache(clock, max_entries) {}
  internal::ReviewCache<AuthorizerAnswer> cache;
  prometheus::Counter* hits = nullptr;
  prometheus::Counter* misses = nullptr;
  prometheus::Counter* coalesced = nullptr;
};

std::string BuildSubjectAccessReviewRequest(const UserInfo& user,
                                            const RequestAttributes& request) {
  JsonWriter w;
  w.BeginObject();
  w.Member("apiVersion", kApiVersion).Member("kind", kKind);
  w.Key("spec").BeginObject();
  if (request.resource_request) {
    w.Key("resourceAttributes").BeginObject();
    MemberIfSet(w, "namespace", request.namespace_name);
    w.Member("verb", request.verb);
    MemberIfSet(w, "group", request.api_group);
    MemberIfSet(w, "version", request.api_version);
    MemberIfSet(w, "resource", request.resource);
    MemberIfSet(w, "subresource", request.subresource);
    MemberIfSet(w, "name", request.name);
    w.EndObject();
  } else {
    w.Key("nonResourceAttributes").BeginObject();
    MemberIfSet(w, "path", request.path);
    w.Member("verb", request.verb);
    w.EndObject();
  }
  MemberIfSet(w, "user", user.name);
  if (!user.groups.empty()) {
    w.Key("groups").BeginArray();
    for (const std::string& group : user.groups) w.String(group);
    w.EndArray();
  }
  if (!user.extra.empty()) {
    w.Key("extra").BeginObject();
    for (const auto& [key, values] : user.extra) {
      w.Key(key).BeginArray();
      for (const std::string& value : values) w.String(value);
      w.EndArray();
    }
    w.EndObject();
  }
  MemberIfSet(w, "uid", user.uid);
  w.EndObject();
  w.EndObject();
  return w.Take();
}

absl::StatusOr<SubjectAccessReviewStatus> ParseSubjectAccessReviewResponse(std::string_view body) {
  simdjson::dom::parser parser;
  absl::StatusOr<simdjson::dom::object> status =
      internal::ParseReviewStatus(parser, body, kKind, kApiVersion);
  if (!status.ok()) return status.status();
  SubjectAccessReviewStatus out;
  absl::Status s =
      internal::ReadBool(*status, "allowed", "SubjectAccessReview status.allowed", &out.allowed);
  if (s.ok()) {
    s = internal::ReadBool(*status, "denied", "SubjectAccessReview status.denied", &out.denied);
  }
  if (s.ok()) {
    s = internal::ReadString(*status, "reason", "SubjectAccessReview status.reason", &out.reason);
  }
  if (s.ok()) {
    s = internal::ReadString(*status, "evaluationError",
                             "SubjectAccessReview status.evaluationError", &out.evaluation_error);
  }
  if (!s.ok()) return s;
  if (out.allowed && out.denied) {
    return absl::InvalidArgumentError("SubjectAccessReview status is both allowed and denied");
  }
  return out;
}

AuthorizerAnswer AnswerFromStatus(const SubjectAccessReviewStatus& status) {
  AuthorizerAnswer answer;
  answer.decision = status.allowed  ? Decision::kAllow
                    : status.denied ? Decision::kDeny
                                    : Decision::kNoOpinion;
  answer.reason = status.reason;
  if (!status.evaluation_error.empty()) {
    if (!answer.reason.empty()) answer.reason += "; ";
    answer.reason += status.evaluation_error;
  }
  return answer;
}

absl::Status SubjectAccessReviewOptions::Validate() const {
  if (allowed_ttl < Duration::zero()) {
    return absl::InvalidArgumentError(
        "--authorization-webhook-cache-authorized-ttl must not be negative");
  }
  if (denied_ttl < Duration::zero()) {
    return absl::InvalidArgumentError(
        "--authorization-webhook-cache-unauthorized-ttl must not be negative");
  }
  if (max_cache_entries == 0) {
    return absl::InvalidArgumentError("subject access review cache size must be positive");
  }
  return absl::OkStatus();
}

SubjectAccessReviewer::SubjectAccessReviewer(SubjectAccessReviewOptions options,
                                             KubeReviewTransport& transport, const Clock& clock,
                                             prometheus::Registry* registry)
    : options_(options),
      transport_(transport),
      state_(std::make_unique<State>(clock, options_.max_cache_entries)) {
  if (registry != nullptr) {
    auto& family =
        prometheus::BuildCounter()
            .Name("kubestat_subject_access_review_cache_lookups_total")
            .Help(
                "Authorization reviews by cache outcome: hit, miss (a SubjectAccessReview was "
                "sent) or coalesced (waited for an identical review).")
            .Register(*registry);
    state_->hits = &family.Add({{"result", "hit"}});
    state_->misses = &family.Add({{"result", "miss"}});
    state_->coalesced = &family.Add({{"result", "coalesced"}});
  }
}

SubjectAccessReviewer::~SubjectAccessReviewer() = default;

AuthorizerAnswer SubjectAccessReviewer::Review(const UserInfo& user,
                                               const RequestAttributes& request) {
  std::string body = BuildSubjectAccessReviewRequest(user, request);
  AuthorizerAnswer answer = state_->cache.Get(
      internal::Sha256(body), [&] { return Fetch(std::move(body)); },
      [this](const AuthorizerAnswer& a) {
        if (a.error) return Duration::zero();
        return a.decision == Decision::kAllow ? options_.allowed_ttl : options_.denied_ttl;
      },
      [this](internal::CacheLookup lookup) {
        prometheus::Counter* counter = lookup == internal::CacheLookup::kHit    ? state_->hits
                                       : lookup == internal::CacheLookup::kMiss ? state_->misses
                                                                                : state_->coalesced;
        if (counter != nullptr) counter->Increment();
      });
  return answer;
}

AuthorizerAnswer SubjectAccessReviewer::Fetch(std::string body) {
  absl::StatusOr<std::string> response =
      transport_.Create(kSubjectAccessReviewPath, std::move(body));
  if (!response.ok()) {
    return AuthorizerAnswer{
        Decision::kDeny,
        StrCat("subject access review failed: ", internal::MessageOf(response.status())), true};
  }
  absl::StatusOr<SubjectAccessReviewStatus> status = ParseSubjectAccessReviewResponse(*response);
  if (!status.ok()) {
    return AuthorizerAnswer{
        Decision::kDeny,
        StrCat("subject access review failed: ", internal::MessageOf(status.status())), true};
  }
  return AnswerFromStatus(*status);
}

}  // namespace kubestat::kube
