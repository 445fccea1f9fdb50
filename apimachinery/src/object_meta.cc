#include "kubestat/apimachinery/object_meta.h"

namespace kubestat {

void WriteObjectMeta(JsonWriter& w, const ObjectMeta& meta) {
  w.Key("metadata");
  WriteObjectMetaValue(w, meta);
}

void WriteObjectMetaValue(JsonWriter& w, const ObjectMeta& meta) {
  w.BeginObject();
  if (!meta.name.empty()) w.Member("name", meta.name);
  if (!meta.namespace_name.empty()) w.Member("namespace", meta.namespace_name);
  if (!meta.uid.empty()) w.Member("uid", meta.uid);
  if (!meta.resource_version.empty()) w.Member("resourceVersion", meta.resource_version);
  // metav1.Time is a struct, which omitempty never leaves out: unset is null.
  w.Key("creationTimestamp");
  if (meta.creation_timestamp == kZeroTime) {
    w.Null();
  } else {
    w.String(FormatRfc3339(meta.creation_timestamp));
  }
  if (!meta.labels.empty()) {
    w.Key("labels").BeginObject();
    for (const auto& [key, value] : meta.labels) w.Member(key, value);
    w.EndObject();
  }
  w.EndObject();
}

}  // namespace kubestat
