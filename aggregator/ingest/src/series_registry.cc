#include "kubestat/aggregator/ingest/series_registry.h"

#include <cstdint>

#include "kubestat/core/varint.h"

namespace kubestat::aggregator {

namespace {

constexpr char kVersion = 1;
constexpr uint64_t kMaxField = 4096;  // longer than any Kubernetes name

void PutField(std::string* out, const std::string& field) {
  PutVarint(out, field.size());
  out->append(field);
}

bool GetField(std::string_view* in, std::string* field) {
  uint64_t n = 0;
  if (!GetVarint(in, &n) || n > kMaxField || n > in->size()) return false;
  field->assign(in->substr(0, n));
  in->remove_prefix(n);
  return true;
}

}  // namespace

std::string EncodeSeriesKey(const windows::SeriesKey& key) {
  std::string out;
  out.reserve(8 + key.node.size() + key.pod_namespace.size() + key.pod.size() +
              key.container.size());
  out.push_back(kVersion);
  out.push_back(static_cast<char>(key.kind));
  out.push_back(static_cast<char>(key.resource));
  PutField(&out, key.node);
  PutField(&out, key.pod_namespace);
  PutField(&out, key.pod);
  PutField(&out, key.container);
  return out;
}

absl::StatusOr<windows::SeriesKey> DecodeSeriesKey(std::string_view bytes) {
  if (bytes.size() < 3 || bytes[0] != kVersion) {
    return absl::DataLossError("series key: bad version or too short");
  }
  const auto kind = static_cast<uint8_t>(bytes[1]);
  const auto resource = static_cast<uint8_t>(bytes[2]);
  if (kind > static_cast<uint8_t>(windows::ObjectKind::kContainer) ||
      resource > static_cast<uint8_t>(windows::Resource::kMemory)) {
    return absl::DataLossError("series key: unknown kind or resource");
  }
  bytes.remove_prefix(3);
  windows::SeriesKey key;
  key.kind = static_cast<windows::ObjectKind>(kind);
  key.resource = static_cast<windows::Resource>(resource);
  if (!GetField(&bytes, &key.node) || !GetField(&bytes, &key.pod_namespace) ||
      !GetField(&bytes, &key.pod) || !GetField(&bytes, &key.container) || !bytes.empty()) {
    return absl::DataLossError("series key: malformed field");
  }
  const bool has_pod = !key.pod_namespace.empty() && !key.pod.empty();
  const bool no_pod = key.pod_namespace.empty() && key.pod.empty();
  bool consistent = !key.node.empty();
  switch (key.kind) {
    case windows::ObjectKind::kNode:
      consistent = consistent && no_pod && key.container.empty();
      break;
    case windows::ObjectKind::kSystemContainer:
      consistent = consistent && no_pod && !key.container.empty();
      break;
    case windows::ObjectKind::kPod:
      consistent = consistent && has_pod && key.container.empty();
      break;
    case windows::ObjectKind::kContainer:
      consistent = consistent && has_pod && !key.container.empty();
      break;
  }
  if (!consistent) return absl::DataLossError("series key: fields do not match its kind");
  return key;
}

}  // namespace kubestat::aggregator
