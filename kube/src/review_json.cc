#include "review_json.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/kube/token_review.h"
#include "simdjson.h"

namespace kubestat::kube::internal {
namespace {

namespace dom = simdjson::dom;

absl::Status WrongType(std::string_view what, std::string_view expected) {
  return absl::InvalidArgumentError(StrCat(what, " is not ", expected));
}

// The member, or nullopt when absent or null.
std::optional<dom::element> Member(dom::object object, std::string_view key) {
  dom::element value;
  if (object.at_key(key).get(value) != simdjson::SUCCESS) return std::nullopt;
  if (value.is_null()) return std::nullopt;
  return value;
}

}  // namespace

absl::StatusOr<dom::object> ParseReviewStatus(dom::parser& parser, std::string_view body,
                                              std::string_view kind, std::string_view api_version) {
  if (body.size() > kMaxReviewResponseBytes) {
    return absl::InvalidArgumentError(
        StrCat(kind, " response is larger than ", kMaxReviewResponseBytes, " bytes"));
  }
  dom::element root;
  if (auto error = parser.parse(body.data(), body.size()).get(root); error) {
    return absl::InvalidArgumentError(
        StrCat(kind, " response is not valid JSON: ", simdjson::error_message(error)));
  }
  dom::object object;
  if (root.get(object) != simdjson::SUCCESS)
    return WrongType(StrCat(kind, " response"), "an object");
  std::string value;
  if (absl::Status s = ReadString(object, "kind", StrCat(kind, " kind"), &value); !s.ok()) {
    return s;
  }
  if (!value.empty() && value != kind) {
    return absl::InvalidArgumentError(StrCat(kind, " response has another kind"));
  }
  value.clear();
  if (absl::Status s = ReadString(object, "apiVersion", StrCat(kind, " apiVersion"), &value);
      !s.ok()) {
    return s;
  }
  if (!value.empty() && value != api_version) {
    return absl::InvalidArgumentError(
        StrCat(kind, " response has an apiVersion other than ", api_version));
  }
  absl::StatusOr<std::optional<dom::object>> status =
      ReadObject(object, "status", StrCat(kind, " status"));
  if (!status.ok()) return status.status();
  if (!status->has_value())
    return absl::InvalidArgumentError(StrCat(kind, " response has no status"));
  return **status;
}

absl::Status ReadString(dom::object object, std::string_view key, std::string_view what,
                        std::string* out) {
  std::optional<dom::element> value = Member(object, key);
  if (!value) return absl::OkStatus();
  std::string_view text;
  if (value->get(text) != simdjson::SUCCESS) return WrongType(what, "a string");
  out->assign(text);
  return absl::OkStatus();
}

absl::Status ReadBool(dom::object object, std::string_view key, std::string_view what, bool* out) {
  std::optional<dom::element> value = Member(object, key);
  if (!value) return absl::OkStatus();
  bool b = false;
  if (value->get(b) != simdjson::SUCCESS) return WrongType(what, "a boolean");
  *out = b;
  return absl::OkStatus();
}

absl::Status ReadStringList(dom::object object, std::string_view key, std::string_view what,
                            std::vector<std::string>* out) {
  std::optional<dom::element> value = Member(object, key);
  if (!value) return absl::OkStatus();
  dom::array array;
  if (value->get(array) != simdjson::SUCCESS) return WrongType(what, "an array of strings");
  for (dom::element item : array) {
    std::string_view text;
    if (item.get(text) != simdjson::SUCCESS) return WrongType(what, "an array of strings");
    out->emplace_back(text);
  }
  return absl::OkStatus();
}

absl::Status ReadStringListMap(dom::object object, std::string_view key, std::string_view what,
                               std::map<std::string, std::vector<std::string>>* out) {
  absl::StatusOr<std::optional<dom::object>> map = ReadObject(object, key, what);
  if (!map.ok()) return map.status();
  if (!map->has_value()) return absl::OkStatus();
  for (dom::key_value_pair field : **map) {
    std::vector<std::string>& values = (*out)[std::string(field.key)];
    if (field.value.is_null()) continue;
    dom::array array;
    if (field.value.get(array) != simdjson::SUCCESS) {
      return WrongType(what, "a map of string arrays");
    }
    for (dom::element item : array) {
      std::string_view text;
      if (item.get(text) != simdjson::SUCCESS) return WrongType(what, "a map of string arrays");
      values.emplace_back(text);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<dom::object>> ReadObject(dom::object object, std::string_view key,
                                                      std::string_view what) {
  std::optional<dom::element> value = Member(object, key);
  if (!value) return std::optional<dom::object>();
  dom::object inner;
  if (value->get(inner) != simdjson::SUCCESS) return WrongType(what, "an object");
  return std::optional<dom::object>(inner);
}

std::string Redact(std::string message, std::string_view secret) {
  if (secret.empty()) return message;
  constexpr std::string_view kRedacted = "[redacted]";
  size_t pos = 0;
  while ((pos = message.find(secret, pos)) != std::string::npos) {
    message.replace(pos, secret.size(), kRedacted);
    pos += kRedacted.size();
  }
  return message;
}

}  // namespace kubestat::kube::internal
