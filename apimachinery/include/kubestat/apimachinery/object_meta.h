// The Kubernetes object metadata kubestat keeps for nodes, pods and metrics objects, and
// its JSON form.
//
// WriteObjectMeta writes the member `"metadata": {…}` with Kubernetes' field names and
// order (name, namespace, uid, resourceVersion, creationTimestamp, labels), leaving out
// empty strings and empty labels as Go's omitempty does. An unset creationTimestamp
// (kZeroTime) is written as null, as metav1.Time does; a set one in RFC 3339 whole
// seconds. Plain values; thread-compatible.
#ifndef KUBESTAT_APIMACHINERY_OBJECT_META_H_
#define KUBESTAT_APIMACHINERY_OBJECT_META_H_

#include <map>
#include <string>

#include "kubestat/core/clock.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/core/time.h"

namespace kubestat {

struct ObjectMeta {
  std::string name;
  // metadata.namespace; empty for cluster-scoped objects (nodes).
  std::string namespace_name;
  std::string uid;
  std::string resource_version;
  // kZeroTime when unknown.
  Timestamp creation_timestamp = kZeroTime;
  // Sorted by key, so the JSON is deterministic.
  std::map<std::string, std::string, std::less<>> labels;

  bool operator==(const ObjectMeta&) const = default;
};

// Writes `"metadata": {…}` as a member of the object `w` is in.
void WriteObjectMeta(JsonWriter& w, const ObjectMeta& meta);

// Writes only the `{…}` value, for callers that chose the key themselves.
void WriteObjectMetaValue(JsonWriter& w, const ObjectMeta& meta);

}  // namespace kubestat

#endif  // KUBESTAT_APIMACHINERY_OBJECT_META_H_
