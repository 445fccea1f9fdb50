#include "kubestat/apiserver/object_store.h"

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "kubestat/apimachinery/api_error.h"
#include "kubestat/core/absl_view.h"

namespace kubestat::apiserver {

std::string_view ObjectKindName(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::kNode:
      return "nodes";
    case ObjectKind::kPod:
      return "pods";
  }
  return "unknown";
}

std::string ObjectKeyString(const ObjectKey& key) {
  const absl::string_view kind = AbslView(ObjectKindName(key.kind));
  if (key.kind == ObjectKind::kPod) {
    return absl::StrCat(kind, "/", key.namespace_name, "/", key.name);
  }
  return absl::StrCat(kind, "/", key.name);
}

std::string_view EventTypeName(EventType type) {
  switch (type) {
    case EventType::kAdded:
      return "ADDED";
    case EventType::kModified:
      return "MODIFIED";
    case EventType::kDeleted:
      return "DELETED";
  }
  return "UNKNOWN";
}

absl::Status TooLargeResourceVersion(uint64_t wanted, uint64_t current) {
  StatusDetails details;
  details.causes.push_back({"ResourceVersionTooLarge", "Too large resource version", ""});
  details.retry_after_seconds = 1;
  return ApiError(504, StatusReason::kTimeout,
                  absl::StrCat("Too large resource version: ", wanted, ", current: ", current),
                  std::move(details))
      .ToStatus();
}

absl::Status CheckReadRevision(const ReadVersion& version, uint64_t revision) {
  switch (version.match) {
    case ReadVersion::Match::kLatest:
    case ReadVersion::Match::kAny:
      return absl::OkStatus();
    case ReadVersion::Match::kNotOlderThan:
      if (revision < version.revision) return TooLargeResourceVersion(version.revision, revision);
      return absl::OkStatus();
    case ReadVersion::Match::kExact:
      if (revision < version.revision) return TooLargeResourceVersion(version.revision, revision);
      if (revision > version.revision) {
        return absl::OutOfRangeError(absl::StrCat("too old resource version: ", version.revision,
                                                  " (the store holds ", revision, ")"));
      }
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<StoredObject>> ObjectStore::GetAt(const ObjectKey& key,
                                                               const ReadVersion& version) const {
  if (version.match == ReadVersion::Match::kNotOlderThan ||
      version.match == ReadVersion::Match::kExact) {
    // The state Get reads is at least as new as the revision read before it.
    if (const uint64_t revision = Revision(); revision < version.revision) {
      return TooLargeResourceVersion(version.revision, revision);
    }
  }
  return Get(key);
}

absl::StatusOr<ListResult> ObjectStore::ListAt(ObjectKind kind, std::string_view namespace_name,
                                               const ReadVersion& version) const {
  absl::StatusOr<ListResult> list = List(kind, namespace_name);
  if (!list.ok()) return list;
  if (absl::Status status = CheckReadRevision(version, list->revision); !status.ok()) {
    return status;
  }
  return list;
}

}  // namespace kubestat::apiserver
