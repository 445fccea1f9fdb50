// Internal: reading the review responses (TokenReview, SubjectAccessReview) with simdjson's
// DOM API. Every error is InvalidArgument naming the review kind and the field, never the
// field's content (a response may echo the token under review).
#ifndef KUBESTAT_KUBE_SRC_REVIEW_JSON_H_
#define KUBESTAT_KUBE_SRC_REVIEW_JSON_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "simdjson.h"

namespace kubestat::kube::internal {

// Parses `body` into `parser` and returns the root object's "status" object, after checking
// the size limit and, when present, "kind" and "apiVersion".
[[nodiscard]] absl::StatusOr<simdjson::dom::object> ParseReviewStatus(simdjson::dom::parser& parser,
                                                                      std::string_view body,
                                                                      std::string_view kind,
                                                                      std::string_view api_version);

// The member `key` of `object` as the given type; nullopt when absent or null.
// `what` names the field in errors ("TokenReview status.user.username").
[[nodiscard]] absl::Status ReadString(simdjson::dom::object object, std::string_view key,
                                      std::string_view what, std::string* out);
[[nodiscard]] absl::Status ReadBool(simdjson::dom::object object, std::string_view key,
                                    std::string_view what, bool* out);
[[nodiscard]] absl::Status ReadStringList(simdjson::dom::object object, std::string_view key,
                                          std::string_view what, std::vector<std::string>* out);
[[nodiscard]] absl::Status ReadStringListMap(simdjson::dom::object object, std::string_view key,
                                             std::string_view what,
                                             std::map<std::string, std::vector<std::string>>* out);
// The member `key` as an object; absent or null gives nullopt.
[[nodiscard]] absl::StatusOr<std::optional<simdjson::dom::object>> ReadObject(
    simdjson::dom::object object, std::string_view key, std::string_view what);

// `message` with every occurrence of `secret` replaced by "[redacted]".
std::string Redact(std::string message, std::string_view secret);

// absl::Status message as std::string_view (Debian's abseil has its own string_view).
inline std::string_view MessageOf(const absl::Status& status) {
  return {status.message().data(), status.message().size()};
}

}  // namespace kubestat::kube::internal

#endif  // KUBESTAT_KUBE_SRC_REVIEW_JSON_H_
