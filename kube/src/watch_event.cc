#include "kubestat/kube/watch_event.h"

#include <array>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/core/time.h"
#include "review_json.h"
#include "simdjson.h"
#include "watch_event_json.h"

namespace kubestat::kube {
namespace {

namespace dom = simdjson::dom;
namespace ondemand = simdjson::ondemand;

constexpr std::array<std::pair<WatchEventType, std::string_view>, 5> kTypeNames = {{
    {WatchEventType::kAdded, "ADDED"},
    {WatchEventType::kModified, "MODIFIED"},
    {WatchEventType::kDeleted, "DELETED"},
    {WatchEventType::kBookmark, "BOOKMARK"},
    {WatchEventType::kError, "ERROR"},
}};

// The root object of `json` parsed into `parser`; `what` names the input in errors.
absl::StatusOr<dom::object> ParseRootObject(dom::parser& parser,
                                            const simdjson::padded_string& json,
                                            std::string_view what) {
  dom::element root;
  if (auto error = parser.parse(json).get(root); error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        StrCat(what, " is not JSON: ", simdjson::error_message(error)));
  }
  dom::object object;
  if (root.get(object) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(StrCat(what, " is not a JSON object"));
  }
  return object;
}

// The text of the root object's member `key` (an object) as it stands in `json`; the
// caller has already checked with the DOM that `json` is valid and the member an object.
absl::StatusOr<std::string_view> RawMemberObject(const simdjson::padded_string& json,
                                                 std::string_view key) {
  ondemand::parser parser;
  ondemand::document doc;
  ondemand::object member;
  std::optional<std::string_view> raw;
  if (parser.iterate(json).get(doc) == simdjson::SUCCESS &&
      doc[key].get_object().get(member) == simdjson::SUCCESS) {
    raw = internal::RawObjectText(member);
  }
  if (!raw) return absl::InvalidArgumentError(StrCat("watch event: cannot locate \"", key, "\""));
  return *raw;
}

}  // namespace

std::string_view WatchEventTypeName(WatchEventType type) {
  for (const auto& [value, name] : kTypeNames) {
    if (value == type) return name;
  }
  return "";
}

std::optional<WatchEventType> WatchEventTypeFromName(std::string_view name) {
  for (const auto& [value, type_name] : kTypeNames) {
    if (type_name == name) return value;
  }
  return std::nullopt;
}

absl::StatusOr<WatchEvent> ParseWatchEvent(std::string_view line) {
  const simdjson::padded_string padded(line);
  dom::parser parser;
  absl::StatusOr<dom::object> event = ParseRootObject(parser, padded, "watch event");
  if (!event.ok()) return event.status();
  std::string type_name;
  if (absl::Status s = internal::ReadString(*event, "type", "watch event type", &type_name);
      !s.ok()) {
    return s;
  }
  if (type_name.empty()) return absl::InvalidArgumentError("watch event without type");
  std::optional<WatchEventType> type = WatchEventTypeFromName(type_name);
  if (!type) {
    return absl::InvalidArgumentError(StrCat("unknown watch event type \"", type_name, "\""));
  }
  dom::object object;
  if ((*event)["object"].get(object) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("watch event without object");
  }
  absl::StatusOr<std::string_view> raw = RawMemberObject(padded, "object");
  if (!raw.ok()) return raw.status();
  return WatchEvent{*type, std::string(*raw)};
}

std::string WriteWatchEvent(WatchEventType type, std::string_view object_json) {
  const std::string_view name = WatchEventTypeName(type);
  std::string out;
  out.reserve(object_json.size() + name.size() + 24);
  out.append(R"({"type":")").append(name).append(R"(","object":)");
  out.append(object_json).append("}\n");
  return out;
}

absl::StatusOr<ApiError> ParseStatusObject(std::string_view json) {
  const simdjson::padded_string padded(json);
  dom::parser parser;
  absl::StatusOr<dom::object> status = ParseRootObject(parser, padded, "Status");
  if (!status.ok()) return status.status();
  std::string kind;
  std::string reason;
  std::string message;
  for (const auto& [key, out] :
       {std::pair{"kind", &kind}, std::pair{"reason", &reason}, std::pair{"message", &message}}) {
    if (absl::Status s = internal::ReadString(*status, key, StrCat("Status ", key), out); !s.ok()) {
      return s;
    }
  }
  if (!kind.empty() && kind != "Status") {
    return absl::InvalidArgumentError(StrCat("Status has kind \"", kind, "\""));
  }
  const StatusReason status_reason = StatusReasonFromName(reason);
  int64_t code = HttpCodeForReason(status_reason);
  dom::element code_value;
  if ((*status)["code"].get(code_value) == simdjson::SUCCESS && !code_value.is_null() &&
      code_value.get(code) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("Status code is not an integer");
  }
  if (code < 0 || code > 999) return absl::InvalidArgumentError("Status code is out of range");
  return ApiError(static_cast<int>(code), status_reason, std::move(message));
}

bool IsResourceExpired(const ApiError& error) {
  return error.code() == 410 || error.reason() == StatusReason::kExpired ||
         error.reason() == StatusReason::kGone;
}

bool IsResourceVersionTooLarge(const ApiError& error) {
  if (error.code() != 504 && error.reason() != StatusReason::kTimeout) return false;
  // kube-apiserver's message: "Too large resource version: <asked>, current: <newest>".
  std::string message = error.message();
  for (char& c : message) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return message.find("too large resource version") != std::string::npos;
}

absl::StatusOr<ObjectMeta> ParseObjectMeta(std::string_view object_json) {
  const simdjson::padded_string padded(object_json);
  dom::parser parser;
  absl::StatusOr<dom::object> object = ParseRootObject(parser, padded, "object");
  if (!object.ok()) return object.status();
  absl::StatusOr<std::optional<dom::object>> metadata =
      internal::ReadObject(*object, "metadata", "metadata");
  if (!metadata.ok()) return metadata.status();
  ObjectMeta meta;
  if (!metadata->has_value()) return meta;
  const dom::object fields = **metadata;
  std::string created;
  for (const auto& [key, out] :
       {std::pair{"name", &meta.name}, std::pair{"namespace", &meta.namespace_name},
        std::pair{"uid", &meta.uid}, std::pair{"resourceVersion", &meta.resource_version},
        std::pair{"creationTimestamp", &created}}) {
    if (absl::Status s = internal::ReadString(fields, key, StrCat("metadata.", key), out);
        !s.ok()) {
      return s;
    }
  }
  if (!created.empty()) {
    absl::StatusOr<Timestamp> time = ParseRfc3339(created);
    if (!time.ok()) {
      return absl::InvalidArgumentError("metadata.creationTimestamp is not an RFC 3339 time");
    }
    meta.creation_timestamp = *time;
  }
  absl::StatusOr<std::optional<dom::object>> labels =
      internal::ReadObject(fields, "labels", "metadata.labels");
  if (!labels.ok()) return labels.status();
  if (labels->has_value()) {
    for (dom::key_value_pair label : **labels) {
      std::string_view value;
      if (label.value.get(value) != simdjson::SUCCESS) {
        return absl::InvalidArgumentError("metadata.labels is not a map of strings");
      }
      meta.labels.emplace(std::string(label.key), std::string(value));
    }
  }
  return meta;
}

}  // namespace kubestat::kube
