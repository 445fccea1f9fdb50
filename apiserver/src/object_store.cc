#include "kubestat/apiserver/object_store.h"

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
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

}  // namespace kubestat::apiserver
