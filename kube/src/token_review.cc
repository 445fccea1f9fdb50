#include "kubestat/kube/token_review.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/core/str_cat.h"
#include "review_cache.h"
#include "review_json.h"
#include "simdjson.h"

namespace kubestat::kube {

namespace {
constexpr std::string_view kKind = "TokenReview";
constexpr std::string_view kApiVersion = "authentication.k8s.io/v1";
}  // namespace

struct TokenReviewer::State {
  State(const Clock& clock, size_t max_entries) : cache(clock, max_entries) {}
  internal::ReviewCache<TokenReviewResult> cache;
  prometheus::Counter* hits = nullptr;
  prometheus::Counter* misses = nullptr;
  prometheus::Counter* coalesced = nullptr;
};

std::string BuildTokenReviewRequest(std::string_view token,
                                    const std::vector<std::string>& audiences) {
  JsonWriter w;
  w.BeginObject();
  w.Member("apiVersion", kApiVersion).Member("kind", kKind);
  w.Key("spec").BeginObject();
  w.Member("token", token);
  if (!audiences.empty()) {
    w.Key("audiences").BeginArray();
    for (const std::string& audience : audiences) w.String(audience);
    w.EndArray();
  }
  w.EndObject();
  w.EndObject();
  return w.Take();
}

absl::StatusOr<TokenReviewStatus> ParseTokenReviewResponse(std::string_view body) {
  simdjson::dom::parser parser;
  absl::StatusOr<simdjson::dom::object> status =
      internal::ParseReviewStatus(parser, body, kKind, kApiVersion);
  if (!status.ok()) return status.status();
  TokenReviewStatus out;
  absl::Status s = internal::ReadBool(*status, "authenticated", "TokenReview status.authenticated",
                                      &out.authenticated);
  if (s.ok()) s = internal::ReadString(*status, "error", "TokenReview status.error", &out.error);
  if (s.ok()) {
    s = internal::ReadStringList(*status, "audiences", "TokenReview status.audiences",
                                 &out.audiences);
  }
  if (!s.ok()) return s;
  absl::StatusOr<std::optional<simdjson::dom::object>> user =
      internal::ReadObject(*status, "user", "TokenReview status.user");
  if (!user.ok()) return user.status();
  if (user->has_value()) {
    const simdjson::dom::object u = **user;
    s = internal::ReadString(u, "username", "TokenReview status.user.username", &out.user.name);
    if (s.ok()) s = internal::ReadString(u, "uid", "TokenReview status.user.uid", &out.user.uid);
    if (s.ok()) {
      s = internal::ReadStringList(u, "groups", "TokenReview status.user.groups", &out.user.groups);
    }
    if (s.ok()) {
      s = internal::ReadStringListMap(u, "extra", "TokenReview status.user.extra", &out.user.extra);
    }
    if (!s.ok()) return s;
  }
  return out;
}

std::string TokenFingerprint(std::string_view token) {
  return StrCat("sha256:", internal::Hex(internal::Sha256(token)).substr(0, 8));
}

absl::Status TokenReviewOptions::Validate() const {
  if (success_ttl < Duration::zero() || failure_ttl < Duration::zero()) {
    return absl::InvalidArgumentError(
        "--authentication-token-webhook-cache-ttl must not be negative");
  }
  if (max_cache_entries == 0) {
    return absl::InvalidArgumentError("token review cache size must be positive");
  }
  for (const std::string& audience : audiences) {
    if (audience.empty()) {
      return absl::InvalidArgumentError("--authentication-audiences must not hold an empty value");
    }
  }
  return absl::OkStatus();
}

TokenReviewer::TokenReviewer(TokenReviewOptions options, KubeReviewTransport& transport,
                             const Clock& clock, prometheus::Registry* registry)
    : options_(std::move(options)),
      transport_(transport),
      state_(std::make_unique<State>(clock, options_.max_cache_entries)) {
  if (registry != nullptr) {
    auto& family = prometheus::BuildCounter()
                       .Name("kubestat_token_review_cache_lookups_total")
                       .Help(
                           "Bearer-token reviews by cache outcome: hit, miss (a TokenReview "
                           "was sent) or coalesced (waited for an identical review).")
                       .Register(*registry);
    state_->hits = &family.Add({{"result", "hit"}});
    state_->misses = &family.Add({{"result", "miss"}});
    state_->coalesced = &family.Add({{"result", "coalesced"}});
  }
}

TokenReviewer::~TokenReviewer() = default;

TokenReviewResult TokenReviewer::Review(std::string_view token) {
  TokenReviewResult result = state_->cache.Get(
      internal::Sha256(token), [&] { return Fetch(token); },
      [this](const TokenReviewResult& r) {
        switch (r.outcome) {
          case TokenReviewOutcome::kAuthenticated:
            return options_.success_ttl;
          case TokenReviewOutcome::kUnauthenticated:
            return options_.failure_ttl;
          case TokenReviewOutcome::kError:
            break;
        }
        return Duration::zero();
      },
      [this](internal::CacheLookup lookup) {
        prometheus::Counter* counter = lookup == internal::CacheLookup::kHit    ? state_->hits
                                       : lookup == internal::CacheLookup::kMiss ? state_->misses
                                                                                : state_->coalesced;
        if (counter != nullptr) counter->Increment();
      });
  return result;
}

TokenReviewResult TokenReviewer::Fetch(std::string_view token) {
  TokenReviewResult result;
  absl::StatusOr<std::string> body =
      transport_.Create(kTokenReviewPath, BuildTokenReviewRequest(token, options_.audiences));
  if (!body.ok()) {
    result.reason = internal::Redact(
        StrCat("token review failed: ", internal::MessageOf(body.status())), token);
    return result;
  }
  absl::StatusOr<TokenReviewStatus> status = ParseTokenReviewResponse(*body);
  if (!status.ok()) {
    result.reason = StrCat("token review failed: ", internal::MessageOf(status.status()));
    return result;
  }
  if (!status->authenticated) {
    result.outcome = TokenReviewOutcome::kUnauthenticated;
    result.reason =
        status->error.empty()
            ? std::string("token review: token not authenticated")
            : StrCat("token review: ", internal::Redact(status->error, token).substr(0, 512));
    return result;
  }
  if (status->user.name.empty()) {
    result.reason = "token review failed: authenticated response without a username";
    return result;
  }
  if (!options_.audiences.empty()) {
    const bool shared = std::any_of(
        status->audiences.begin(), status->audiences.end(), [this](const std::string& a) {
          return std::find(options_.audiences.begin(), options_.audiences.end(), a) !=
                 options_.audiences.end();
        });
    if (!shared) {
      result.outcome = TokenReviewOutcome::kUnauthenticated;
      result.reason = "token review: token is not valid for the configured audiences";
      return result;
    }
  }
  result.outcome = TokenReviewOutcome::kAuthenticated;
  result.user = std::move(status->user);
  return result;
}

}  // namespace kubestat::kube
