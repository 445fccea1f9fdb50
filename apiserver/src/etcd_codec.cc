#include "etcd_codec.h"

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/metrics_api/proto.h"

namespace kubestat::apiserver::etcd {
namespace {

constexpr char kFormat = 1;
constexpr size_t kHeaderBytes = 1 + 8;

absl::Status Undecodable(std::string_view etcd_key, std::string_view why) {
  return absl::DataLossError(absl::StrCat("etcd key ", AbslView(etcd_key), ": ", AbslView(why)));
}

template <typename Proto, typename Object>
// The object in `bytes`, with metadata.resourceVersion `revision` (so readers need not copy
// it to stamp it).
absl::StatusOr<std::shared_ptr<const Object>> ParseObject(std::string_view bytes,
                                                          int64_t revision) {
  Proto proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError("the object does not parse");
  }
  absl::StatusOr<Object> object = metrics_api::FromProto(proto);
  if (!object.ok()) return object.status();
  object->resource_version = std::to_string(revision);
  return std::make_shared<const Object>(*std::move(object));
}

}  // namespace

std::string KindPrefix(std::string_view prefix, ObjectKind kind) {
  return absl::StrCat(AbslView(prefix), AbslView(ObjectKindName(kind)), "/");
}

std::string NamespacePrefix(std::string_view prefix, std::string_view namespace_name) {
  return absl::StrCat(KindPrefix(prefix, ObjectKind::kPod), AbslView(namespace_name), "/");
}

std::string KeyOf(std::string_view prefix, const ObjectKey& key) {
  if (key.kind == ObjectKind::kNode) return KindPrefix(prefix, key.kind) + key.name;
  return NamespacePrefix(prefix, key.namespace_name) + key.name;
}

std::string PrefixEnd(std::string_view key_prefix) {
  std::string end(key_prefix);
  // Every prefix here ends with '/', so the last byte never overflows.
  end.back() = static_cast<char>(end.back() + 1);
  return end;
}

std::optional<ObjectKey> ParseKey(std::string_view prefix, std::string_view etcd_key) {
  if (!etcd_key.starts_with(prefix)) return std::nullopt;
  std::string_view rest = etcd_key.substr(prefix.size());
  ObjectKey key;
  if (rest.starts_with("nodes/")) {
    key.kind = ObjectKind::kNode;
    key.name = rest.substr(6);
    if (key.name.empty() || key.name.find('/') != std::string::npos) return std::nullopt;
    return key;
  }
  if (!rest.starts_with("pods/")) return std::nullopt;
  rest = rest.substr(5);
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size()) {
    return std::nullopt;
  }
  key.kind = ObjectKind::kPod;
  key.namespace_name = rest.substr(0, slash);
  key.name = rest.substr(slash + 1);
  if (key.name.find('/') != std::string::npos) return std::nullopt;
  return key;
}

std::string EncodeValue(const StoredObject& object, Timestamp written) {
  std::string value(kHeaderBytes, '\0');
  value[0] = kFormat;
  auto nanos = static_cast<uint64_t>(written.time_since_epoch().count());
  for (int i = 8; i >= 1; --i) {
    value[i] = static_cast<char>(nanos & 0xff);
    nanos >>= 8;
  }
  if (object.node != nullptr) {
    value += metrics_api::ToProto(*object.node).SerializeAsString();
  } else if (object.pod != nullptr) {
    value += metrics_api::ToProto(*object.pod).SerializeAsString();
  }
  return value;
}

absl::StatusOr<StoredObject> Decode(std::string_view prefix, const mvccpb::KeyValue& kv) {
  std::optional<ObjectKey> key = ParseKey(prefix, kv.key());
  if (!key.has_value()) return Undecodable(kv.key(), "not a key of this store");
  const std::string& value = kv.value();
  if (value.size() < kHeaderBytes || value[0] != kFormat) {
    return Undecodable(kv.key(), "the value has no known format");
  }
  uint64_t nanos = 0;
  for (size_t i = 1; i < kHeaderBytes; ++i) nanos = (nanos << 8) | static_cast<uint8_t>(value[i]);
  StoredObject object;
  object.key = *std::move(key);
  object.resource_version = static_cast<uint64_t>(kv.mod_revision());
  object.written = Timestamp(Duration(static_cast<int64_t>(nanos)));
  const std::string_view body = std::string_view(value).substr(kHeaderBytes);
  absl::Status parsed;
  if (object.key.kind == ObjectKind::kNode) {
    auto node = ParseObject<v1::NodeMetrics, metrics_api::NodeMetrics>(body, kv.mod_revision());
    parsed = node.status();
    if (node.ok()) object.node = *std::move(node);
  } else {
    auto pod = ParseObject<v1::PodMetrics, metrics_api::PodMetrics>(body, kv.mod_revision());
    parsed = pod.status();
    if (pod.ok()) object.pod = *std::move(pod);
  }
  if (!parsed.ok()) return Undecodable(kv.key(), StdView(parsed.message()));
  const bool matches = object.node != nullptr
                           ? object.node->name == object.key.name
                           : object.pod->name == object.key.name &&
                                 object.pod->namespace_name == object.key.namespace_name;
  if (!matches) return Undecodable(kv.key(), "the object's name is not the key's");
  return object;
}

StoredObject NameOnly(const ObjectKey& key) {
  StoredObject object;
  object.key = key;
  if (key.kind == ObjectKind::kNode) {
    auto node = std::make_shared<metrics_api::NodeMetrics>();
    node->name = key.name;
    object.node = std::move(node);
  } else {
    auto pod = std::make_shared<metrics_api::PodMetrics>();
    pod->name = key.name;
    pod->namespace_name = key.namespace_name;
    object.pod = std::move(pod);
  }
  return object;
}

}  // namespace kubestat::apiserver::etcd
