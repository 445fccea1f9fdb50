// Delegated bearer-token authentication: a TokenReview (authentication.k8s.io/v1) sent to
// the Kubernetes API, answers cached.
//
// The request body is
//   {"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview",
//    "spec":{"token":"<token>","audiences":["…"]}}
// ("audiences" only when configured), POSTed to kTokenReviewPath through a
// KubeReviewTransport. The answer's status.authenticated, status.user {username, uid,
// groups, extra}, status.audiences and status.error are read by ParseTokenReviewResponse.
//
// TokenReviewer::Review caches answers by the SHA-256 of the token (the token itself is not
// kept): authenticated answers for `success_ttl`, unauthenticated ones for `failure_ttl`
// (transport and parse errors are not cached), at most `max_cache_entries` (least recently
// used evicted). Concurrent reviews of the same token are coalesced into one request.
// TTLs are measured with the injected clock's MonotonicNow.
//
// The token never appears in a Status, a reason or a log line; where a token must be told
// apart, the first 8 hex digits of its SHA-256 are used (TokenFingerprint).
//
// Thread-safe; the transport is called without locks held.
#ifndef KUBESTAT_KUBE_TOKEN_REVIEW_H_
#define KUBESTAT_KUBE_TOKEN_REVIEW_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/kube/review_transport.h"
#include "kubestat/kube/user_info.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::kube {

// Responses larger than this are refused by the parsers (InvalidArgument).
inline constexpr size_t kMaxReviewResponseBytes = size_t{1} << 20;

// The status of a TokenReview response.
struct TokenReviewStatus {
  bool authenticated = false;
  UserInfo user;
  std::vector<std::string> audiences;
  std::string error;
  bool operator==(const TokenReviewStatus&) const = default;
};

// The request body for `token` (see the file comment).
std::string BuildTokenReviewRequest(std::string_view token,
                                    const std::vector<std::string>& audiences);

// Parses a TokenReview response body. InvalidArgument (mentioning no content of the body)
// for invalid JSON, a body over kMaxReviewResponseBytes, a "kind" other than "TokenReview"
// or an "apiVersion" other than "authentication.k8s.io/v1" (each checked when present), a
// missing "status", or a field of the wrong type (null reads as absent). Unknown fields are
// ignored. Thread-safe.
[[nodiscard]] absl::StatusOr<TokenReviewStatus> ParseTokenReviewResponse(std::string_view body);

// "sha256:" and the first 8 hex digits of SHA-256(token): safe to log.
std::string TokenFingerprint(std::string_view token);

struct TokenReviewOptions {
  // Cache time of an authenticated answer (--authentication-token-webhook-cache-ttl).
  // Default: 10s
  Duration success_ttl = std::chrono::seconds(10);
  // Cache time of an unauthenticated answer. Default: 10s
  Duration failure_ttl = std::chrono::seconds(10);
  // Cached answers kept at most; the least recently used is evicted. Default: 4096
  size_t max_cache_entries = 4096;
  // Audiences the token must be valid for (--authentication-audiences); when set, a review
  // that returns none of them is unauthenticated. Default: empty (not sent, not checked)
  std::vector<std::string> audiences;

  // InvalidArgument naming the flag: TTLs must be >= 0, max_cache_entries > 0.
  [[nodiscard]] absl::Status Validate() const;
};

enum class TokenReviewOutcome {
  kAuthenticated,    // `user` is set
  kUnauthenticated,  // the API server said no; `reason` from status.error when given
  kError,            // the review could not be made or read; `reason` says why
};

struct TokenReviewResult {
  TokenReviewOutcome outcome = TokenReviewOutcome::kError;
  UserInfo user;
  std::string reason;
};

class TokenReviewer {
 public:
  // `transport` and `clock` (and `registry`, when not null) must outlive the reviewer.
  // With a registry, counts kubestat_token_review_cache_lookups_total{result="hit|miss|
  // coalesced"}. Call options.Validate() first.
  TokenReviewer(TokenReviewOptions options, KubeReviewTransport& transport, const Clock& clock,
                prometheus::Registry* registry = nullptr);
  ~TokenReviewer();
  TokenReviewer(const TokenReviewer&) = delete;
  TokenReviewer& operator=(const TokenReviewer&) = delete;

  // Reviews `token` (non-empty), from the cache when it can.
  TokenReviewResult Review(std::string_view token);

 private:
  struct State;
  TokenReviewResult Fetch(std::string_view token);

  const TokenReviewOptions options_;
  KubeReviewTransport& transport_;
  std::unique_ptr<State> state_;
};

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_TOKEN_REVIEW_H_
