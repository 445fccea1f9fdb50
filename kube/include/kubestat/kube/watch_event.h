// Kubernetes watch events as kube-apiserver streams them: one JSON object per line,
//   {"type":"ADDED","object":{"kind":"Pod","metadata":{...},...}}
// with type ADDED, MODIFIED, DELETED, BOOKMARK (only metadata.resourceVersion is
// meaningful) or ERROR (the object is a metav1.Status, e.g. code 410 reason Expired when
// the watched resourceVersion is too old).
//
// ParseWatchEvent reads one line (untrusted bytes: any input gives a value or an
// InvalidArgument, never a crash) and keeps the object as its JSON text, byte for byte as
// received, so a consumer decodes only the fields it needs with its own parser.
// WriteWatchEvent writes a line in the same form. ParseStatusObject reads the Status of an
// ERROR event (or of a non-2xx answer); ParseObjectMeta reads an object's metadata (its
// resourceVersion is where a watch resumes).
//
// Pure functions on values; thread-safe.
#ifndef KUBESTAT_KUBE_WATCH_EVENT_H_
#define KUBESTAT_KUBE_WATCH_EVENT_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kubestat/apimachinery/api_error.h"
#include "kubestat/apimachinery/object_meta.h"

namespace kubestat::kube {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

// "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR".
std::string_view WatchEventTypeName(WatchEventType type);
// The type named `name` (exact, case-sensitive); nullopt for any other text.
std::optional<WatchEventType> WatchEventTypeFromName(std::string_view name);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  // The event's "object" member as its JSON text, exactly as received (without the
  // whitespace that followed it). Always a JSON object.
  std::string object_json;

  bool operator==(const WatchEvent&) const = default;
};

// Parses one event line (a trailing "\n" or "\r\n" is allowed). The whole line is checked to
// be valid JSON. InvalidArgument, with a message saying which, when the line is not JSON
// ("watch event is not JSON: ..."), not an object, has no "type" or a type that is not a
// string, has an unknown type ("unknown watch event type \"FOO\""), or has no "object" or
// one that is not an object ("watch event without object"). Unknown members are ignored.
[[nodiscard]] absl::StatusOr<WatchEvent> ParseWatchEvent(std::string_view line);

// `{"type":"<TYPE>","object":<object_json>}\n` as kube-apiserver writes it: the object is
// inserted verbatim (the caller vouches that it is one JSON value without a newline).
std::string WriteWatchEvent(WatchEventType type, std::string_view object_json);

// Reads a metav1.Status object (the object of an ERROR event, the body of a non-2xx
// answer): code, reason and message. An unknown or absent reason is kUnknown; an absent code
// is the reason's (HttpCodeForReason: 410 for Expired and Gone, 500 when unknown). Details
// are not read. InvalidArgument when `json` is not a JSON object, its "kind" is present and
// not "Status", or code, reason or message have the wrong JSON type.
[[nodiscard]] absl::StatusOr<ApiError> ParseStatusObject(std::string_view json);

// Whether `error` says the requested resourceVersion is gone (HTTP 410, reason Expired or
// Gone): the watch cannot resume and the collection must be listed again.
bool IsResourceExpired(const ApiError& error);

// Whether `error` is kube-apiserver's "Too large resource version" (HTTP 504, reason
// Timeout): the requested resourceVersion is newer than any the server has, as after it
// was restarted on an older store. Like an expired one, the watch cannot resume and the
// collection must be listed again (client-go's reflector does the same).
bool IsResourceVersionTooLarge(const ApiError& error);

// Reads `metadata` of an object's JSON: name, namespace, uid, resourceVersion, labels and
// creationTimestamp (RFC 3339; kZeroTime when absent or null). Absent fields stay empty, so
// a bookmark's object gives only resource_version. InvalidArgument when `object_json` is not
// a JSON object or a field has the wrong JSON type (or an unreadable timestamp).
[[nodiscard]] absl::StatusOr<ObjectMeta> ParseObjectMeta(std::string_view object_json);

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_WATCH_EVENT_H_
