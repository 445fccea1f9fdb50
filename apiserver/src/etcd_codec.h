// How EtcdStore lays objects out in etcd (etcd_store.h): keys under the prefix, values as a
// format byte, the write time and the kubestat.v1 proto, and KeyValues back to objects.
// Pure functions; thread-safe.
#ifndef KUBESTAT_APISERVER_SRC_ETCD_CODEC_H_
#define KUBESTAT_APISERVER_SRC_ETCD_CODEC_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "etcd/mvccpb/kv.pb.h"
#include "kubestat/apiserver/object_store.h"
#include "kubestat/core/clock.h"

namespace kubestat::apiserver::etcd {

// <prefix>nodes/ or <prefix>pods/.
std::string KindPrefix(std::string_view prefix, ObjectKind kind);
// <prefix>pods/<namespace>/.
std::string NamespacePrefix(std::string_view prefix, std::string_view namespace_name);
// <prefix>nodes/<name> or <prefix>pods/<namespace>/<name>.
std::string KeyOf(std::string_view prefix, const ObjectKey& key);
// The range end that makes [key_prefix, end) every key starting with key_prefix (not empty).
std::string PrefixEnd(std::string_view key_prefix);
// The ObjectKey of an etcd key under `prefix`; std::nullopt when it is not one of ours.
std::optional<ObjectKey> ParseKey(std::string_view prefix, std::string_view etcd_key);

// The value stored for `object` (its node or pod) written at `written`.
std::string EncodeValue(const StoredObject& object, Timestamp written);

// The object in `kv` (resource_version = mod_revision, written from the value), or
// DataLoss naming the key when the key or value does not decode.
[[nodiscard]] absl::StatusOr<StoredObject> Decode(std::string_view prefix,
                                                  const mvccpb::KeyValue& kv);

// An object that only names `key` (its node or pod carries the name and namespace), for a
// DELETED event whose previous value etcd no longer has.
StoredObject NameOnly(const ObjectKey& key);

}  // namespace kubestat::apiserver::etcd

#endif  // KUBESTAT_APISERVER_SRC_ETCD_CODEC_H_
