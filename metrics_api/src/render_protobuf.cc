#include "kubestat/metrics_api/render_protobuf.h"

#include <cassert>
#include <chrono>
#include <cstdint>
#include <vector>

#include "kubestat/apimachinery/quantity.h"
#include "kubestat/core/time.h"
#include "kubestat/core/varint.h"
#include "kubestat/metrics_api/internal/usage.h"
#include "protobuf_wire.h"

namespace kubestat::metrics_api {
namespace {

using internal::ClampToInt64;
using internal::Int64FieldSize;
using internal::LengthDelimitedSize;
using internal::PodUsageTimestamp;
using internal::PutInt64Field;
using internal::PutLengthPrefix;
using internal::PutStringField;
using internal::UsageTimestamp;
using internal::UsageWindow;

// Field numbers, from the messages' generated.proto in proto/k8s/ (k8s.io/apimachinery's
// runtime, meta/v1 and api/resource, and k8s.io/metrics' metrics/v1beta1).
namespace field {
// runtime.Unknown
constexpr uint32_t kUnknownTypeMeta = 1;
constexpr uint32_t kUnknownRaw = 2;
constexpr uint32_t kUnknownContentEncoding = 3;
constexpr uint32_t kUnknownContentType = 4;
// runtime.TypeMeta
constexpr uint32_t kTypeMetaApiVersion = 1;
constexpr uint32_t kTypeMetaKind = 2;
// meta.v1.ObjectMeta
constexpr uint32_t kMetaName = 1;
constexpr uint32_t kMetaGenerateName = 2;
constexpr uint32_t kMetaNamespace = 3;
constexpr uint32_t kMetaSelfLink = 4;
constexpr uint32_t kMetaUid = 5;
constexpr uint32_t kMetaResourceVersion = 6;
constexpr uint32_t kMetaGeneration = 7;
constexpr uint32_t kMetaCreationTimestamp = 8;
constexpr uint32_t kMetaLabels = 11;
// meta.v1.ListMeta
constexpr uint32_t kListMetaSelfLink = 1;
constexpr uint32_t kListMetaResourceVersion = 2;
constexpr uint32_t kListMetaContinue = 3;
// meta.v1.Time
constexpr uint32_t kTimeSeconds = 1;
constexpr uint32_t kTimeNanos = 2;
// meta.v1.Duration
constexpr uint32_t kDurationDuration = 1;
// Every map<K, V> entry
constexpr uint32_t kMapKey = 1;
constexpr uint32_t kMapValue = 2;
// resource.Quantity
constexpr uint32_t kQuantityString = 1;
// metrics.v1beta1.NodeMetrics and PodMetrics
constexpr uint32_t kObjectMetadata = 1;
constexpr uint32_t kObjectTimestamp = 2;
constexpr uint32_t kObjectWindow = 3;
constexpr uint32_t kNodeUsage = 4;
constexpr uint32_t kPodContainers = 4;
// metrics.v1beta1.ContainerMetrics
constexpr uint32_t kContainerName = 1;
constexpr uint32_t kContainerUsage = 2;
// metrics.v1beta1.NodeMetricsList and PodMetricsList
constexpr uint32_t kListMetadata = 1;
constexpr uint32_t kListItems = 2;
}  // namespace field

// What one list item takes, for the room left before a list for its length: only the width
// of that varint depends on it, and a wrong width costs one move of the list's bytes.
constexpr size_t kEstimatedItemBytes = 256;

// metav1.Time {seconds, nanos 0} in whole seconds, truncated toward the past (as
// FormatRfc3339); the zero time is the empty message, as Go writes it.
class WireTime {
 public:
  explicit WireTime(Timestamp t)
      : zero_(t == kZeroTime),
        seconds_(zero_ ? 0
                       : std::chrono::floor<std::chrono::seconds>(t).time_since_epoch().count()) {}

  size_t Size() const {
    if (zero_) return 0;
    return Int64FieldSize(field::kTimeSeconds, seconds_) + Int64FieldSize(field::kTimeNanos, 0);
  }

  // As field `number` of the message being written.
  void Put(std::string* out, uint32_t number) const {
    PutLengthPrefix(out, number, Size());
    if (zero_) return;
    PutInt64Field(out, field::kTimeSeconds, seconds_);
    PutInt64Field(out, field::kTimeNanos, 0);
  }

 private:
  bool zero_;
  int64_t seconds_;
};

// The quantities of a usage map, formatted once for both its size and its bytes.
struct UsageText {
  std::string cpu;
  std::string memory;

  void Format(const ResourceWindows& windows) {
    cpu = FormatCpuNanoCores(ClampToInt64(windows.cpu.front().mean));
    memory = FormatMemoryBytes(ClampToInt64(windows.memory.front().mean));
  }
};

// A map<string, Quantity> entry {key, value: Quantity {string}}; libprotobuf writes both the
// key and the value of every entry.
size_t QuantityEntrySize(std::string_view key, std::string_view quantity) {
  return LengthDelimitedSize(field::kMapKey, key.size()) +
         LengthDelimitedSize(field::kMapValue,
                             LengthDelimitedSize(field::kQuantityString, quantity.size()));
}

void PutQuantityEntry(std::string* out, uint32_t number, std::string_view key,
                      std::string_view quantity) {
  PutLengthPrefix(out, number, QuantityEntrySize(key, quantity));
  PutStringField(out, field::kMapKey, key);
  PutLengthPrefix(out, field::kMapValue,
                  LengthDelimitedSize(field::kQuantityString, quantity.size()));
  PutStringField(out, field::kQuantityString, quantity);
}

// The usage map as field `number`: an entry per resource, in key order ("cpu" < "memory").
size_t UsageSize(uint32_t number, const UsageText& usage) {
  return LengthDelimitedSize(number, QuantityEntrySize("cpu", usage.cpu)) +
         LengthDelimitedSize(number, QuantityEntrySize("memory", usage.memory));
}

void PutUsage(std::string* out, uint32_t number, const UsageText& usage) {
  PutQuantityEntry(out, number, "cpu", usage.cpu);
  PutQuantityEntry(out, number, "memory", usage.memory);
}

// A map<string, string> entry {key, value}.
size_t LabelEntrySize(std::string_view key, std::string_view value) {
  return LengthDelimitedSize(field::kMapKey, key.size()) +
         LengthDelimitedSize(field::kMapValue, value.size());
}

// ListMeta {selfLink "", resourceVersion, continue}.
size_t ListMetaSize(const Page& page) {
  return LengthDelimitedSize(field::kListMetaSelfLink, 0) +
         LengthDelimitedSize(field::kListMetaResourceVersion, page.resource_version.size()) +
         LengthDelimitedSize(field::kListMetaContinue, page.continue_token.size());
}

void PutListMeta(std::string* out, const Page& page) {
  PutLengthPrefix(out, field::kListMetadata, ListMetaSize(page));
  PutStringField(out, field::kListMetaSelfLink, "");
  PutStringField(out, field::kListMetaResourceVersion, page.resource_version);
  PutStringField(out, field::kListMetaContinue, page.continue_token);
}

// Writes NodeMetrics and PodMetrics messages, each as a length-delimited field of the message
// around it (Unknown.raw, or a list's items). An object's size is computed before its bytes,
// from the same values: its usage quantities are formatted once, into text reused from
// object to object.
class ObjectWriter {
 public:
  ObjectWriter(std::string* out, const RenderContext& ctx) : out_(out), created_(ctx.now) {}

  void Put(uint32_t number, const NodeMetrics& node) {
    usage_.resize(1);
    usage_[0].Format(node.machine);
    const Header header = MakeHeader(node.name, "", node.resource_version, node.labels,
                                     UsageTimestamp(node.machine), UsageWindow(node.machine));
    const size_t size = header.Size() + UsageSize(field::kNodeUsage, usage_[0]);
    PutLengthPrefix(out_, number, size);
    [[maybe_unused]] const size_t start = out_->size();
    PutHeader(header);
    PutUsage(out_, field::kNodeUsage, usage_[0]);
    assert(out_->size() - start == size);
  }

  void Put(uint32_t number, const PodMetrics& pod) {
    usage_.resize(pod.containers.size());
    size_t size = 0;
    for (size_t i = 0; i < pod.containers.size(); ++i) {
      usage_[i].Format(pod.containers[i].windows);
      size += LengthDelimitedSize(field::kPodContainers,
                                  ContainerSize(pod.containers[i].name, usage_[i]));
    }
    const Header header =
        MakeHeader(pod.name, pod.namespace_name, pod.resource_version, pod.labels,
                   PodUsageTimestamp(pod), UsageWindow(pod.containers.front().windows));
    size += header.Size();
    PutLengthPrefix(out_, number, size);
    [[maybe_unused]] const size_t start = out_->size();
    PutHeader(header);
    for (size_t i = 0; i < pod.containers.size(); ++i) {
      // ContainerMetrics {name, usage}
      const std::string& name = pod.containers[i].name;
      PutLengthPrefix(out_, field::kPodContainers, ContainerSize(name, usage_[i]));
      PutStringField(out_, field::kContainerName, name);
      PutUsage(out_, field::kContainerUsage, usage_[i]);
    }
    assert(out_->size() - start == size);
  }

 private:
  // The fields both objects begin with (metadata, timestamp and window), and their sizes.
  struct Header {
    std::string_view name;
    std::string_view namespace_name;
    std::string_view resource_version;
    const Labels* labels;
    size_t metadata_size;
    WireTime timestamp;
    int64_t window_nanos;

    size_t Size() const {
      return LengthDelimitedSize(field::kObjectMetadata, metadata_size) +
             LengthDelimitedSize(field::kObjectTimestamp, timestamp.Size()) +
             LengthDelimitedSize(field::kObjectWindow,
                                 Int64FieldSize(field::kDurationDuration, window_nanos));
    }
  };

  Header MakeHeader(std::string_view name, std::string_view namespace_name,
                    std::string_view resource_version, const Labels& labels, Timestamp timestamp,
                    Duration window) const {
    return Header{name,
                  namespace_name,
                  resource_version,
                  &labels,
                  ObjectMetaSize(name, namespace_name, resource_version, labels),
                  WireTime(timestamp),
                  window.count()};
  }

  // ObjectMeta {name, generateName "", namespace, selfLink "", uid "", resourceVersion,
  // generation 0, creationTimestamp, labels in key order}: the fields Go always writes, and
  // the labels.
  size_t ObjectMetaSize(std::string_view name, std::string_view namespace_name,
                        std::string_view resource_version, const Labels& labels) const {
    size_t size = LengthDelimitedSize(field::kMetaName, name.size()) +
                  LengthDelimitedSize(field::kMetaGenerateName, 0) +
                  LengthDelimitedSize(field::kMetaNamespace, namespace_name.size()) +
                  LengthDelimitedSize(field::kMetaSelfLink, 0) +
                  LengthDelimitedSize(field::kMetaUid, 0) +
                  LengthDelimitedSize(field::kMetaResourceVersion, resource_version.size()) +
                  Int64FieldSize(field::kMetaGeneration, 0) +
                  LengthDelimitedSize(field::kMetaCreationTimestamp, created_.Size());
    for (const auto& [key, value] : labels) {
      size += LengthDelimitedSize(field::kMetaLabels, LabelEntrySize(key, value));
    }
    return size;
  }

  void PutHeader(const Header& header) {
    PutLengthPrefix(out_, field::kObjectMetadata, header.metadata_size);
    PutStringField(out_, field::kMetaName, header.name);
    PutStringField(out_, field::kMetaGenerateName, "");
    PutStringField(out_, field::kMetaNamespace, header.namespace_name);
    PutStringField(out_, field::kMetaSelfLink, "");
    PutStringField(out_, field::kMetaUid, "");
    PutStringField(out_, field::kMetaResourceVersion, header.resource_version);
    PutInt64Field(out_, field::kMetaGeneration, 0);
    created_.Put(out_, field::kMetaCreationTimestamp);
    // Labels is a std::map: already in key order, as libprotobuf's deterministic output and
    // Go's sort them.
    for (const auto& [key, value] : *header.labels) {
      PutLengthPrefix(out_, field::kMetaLabels, LabelEntrySize(key, value));
      PutStringField(out_, field::kMapKey, key);
      PutStringField(out_, field::kMapValue, value);
    }
    header.timestamp.Put(out_, field::kObjectTimestamp);
    PutLengthPrefix(out_, field::kObjectWindow,
                    Int64FieldSize(field::kDurationDuration, header.window_nanos));
    PutInt64Field(out_, field::kDurationDuration, header.window_nanos);
  }

  // ContainerMetrics {name, usage}.
  static size_t ContainerSize(std::string_view name, const UsageText& usage) {
    return LengthDelimitedSize(field::kContainerName, name.size()) +
           UsageSize(field::kContainerUsage, usage);
  }

  std::string* out_;
  WireTime created_;  // every object's creationTimestamp: the time of the request
  std::vector<UsageText> usage_;
};

// The body up to Unknown.raw: the magic, then Unknown's typeMeta {apiVersion, kind}.
void PutEnvelopeHead(std::string* out, std::string_view kind, const RenderContext& ctx) {
  out->append(kProtobufMagic);
  const std::string_view api_version = ApiVersion(ctx.gv);
  PutLengthPrefix(out, field::kUnknownTypeMeta,
                  LengthDelimitedSize(field::kTypeMetaApiVersion, api_version.size()) +
                      LengthDelimitedSize(field::kTypeMetaKind, kind.size()));
  PutStringField(out, field::kTypeMetaApiVersion, api_version);
  PutStringField(out, field::kTypeMetaKind, kind);
}

// The body after Unknown.raw: contentEncoding "" and contentType "".
void PutEnvelopeTail(std::string* out) {
  PutStringField(out, field::kUnknownContentEncoding, "");
  PutStringField(out, field::kUnknownContentType, "");
}

void AssertMetricsK8sIo(const RenderContext& ctx) {
  assert(IsMetricsK8sIo(ctx.gv) && "metrics/v1alpha1 has no protobuf form");
  (void)ctx;
}

template <typename Object>
std::optional<std::string> RenderObject(const Object& object, Resource resource,
                                        const RenderContext& ctx) {
  AssertMetricsK8sIo(ctx);
  if (!Servable(ctx.gv, object)) return std::nullopt;
  std::string body;
  body.reserve(2 * kEstimatedItemBytes);
  PutEnvelopeHead(&body, KindName(resource), ctx);
  ObjectWriter(&body, ctx).Put(field::kUnknownRaw, object);
  PutEnvelopeTail(&body);
  return body;
}

// Unknown.raw holds the list {metadata, items}, whose length is known only once its items
// are written: they go straight into the body after room for the length, sized from an
// estimate, and the length is written into that room at the end (moving the list's bytes
// when it needs a different number of bytes than the estimate did).
template <typename Objects>
std::string RenderList(const Objects& objects, const Page& page, Resource resource,
                       const RenderContext& ctx) {
  AssertMetricsK8sIo(ctx);
  const size_t estimate = LengthDelimitedSize(field::kListMetadata, ListMetaSize(page)) +
                          page.indices.size() * kEstimatedItemBytes;
  std::string body;
  body.reserve(estimate + kEstimatedItemBytes);
  PutEnvelopeHead(&body, ListKindName(resource), ctx);
  PutVarint(&body, internal::FieldTag(field::kUnknownRaw, internal::WireType::kLengthDelimited));
  const size_t length_at = body.size();
  const size_t room = VarintSize(estimate);
  body.append(room, '\0');
  PutListMeta(&body, page);
  ObjectWriter items(&body, ctx);
  for (size_t i : page.indices) items.Put(field::kListItems, internal::Deref(objects[i]));
  std::string length;
  PutVarint(&length, body.size() - length_at - room);
  body.replace(length_at, room, length);
  PutEnvelopeTail(&body);
  return body;
}

}  // namespace

std::optional<std::string> RenderNodeProtobuf(const NodeMetrics& node, const RenderContext& ctx) {
  return RenderObject(node, Resource::kNodes, ctx);
}

std::optional<std::string> RenderPodProtobuf(const PodMetrics& pod, const RenderContext& ctx) {
  return RenderObject(pod, Resource::kPods, ctx);
}

std::string RenderNodeListProtobuf(SharedNodes nodes, const Page& page, const RenderContext& ctx) {
  return RenderList(nodes, page, Resource::kNodes, ctx);
}

std::string RenderPodListProtobuf(SharedPods pods, const Page& page, const RenderContext& ctx) {
  return RenderList(pods, page, Resource::kPods, ctx);
}

std::string RenderNodeListProtobuf(std::span<const NodeMetrics> nodes, const ListQuery& query,
                                   const RenderContext& ctx) {
  return RenderList(nodes, Select(query, ctx.gv, nodes), Resource::kNodes, ctx);
}

std::string RenderPodListProtobuf(std::span<const PodMetrics> pods, const ListQuery& query,
                                  const RenderContext& ctx) {
  return RenderList(pods, Select(query, ctx.gv, pods), Resource::kPods, ctx);
}

std::string RenderNodeListProtobuf(SharedNodes nodes, const ListQuery& query,
                                   const RenderContext& ctx) {
  return RenderList(nodes, Select(query, ctx.gv, nodes), Resource::kNodes, ctx);
}

std::string RenderPodListProtobuf(SharedPods pods, const ListQuery& query,
                                  const RenderContext& ctx) {
  return RenderList(pods, Select(query, ctx.gv, pods), Resource::kPods, ctx);
}

}  // namespace kubestat::metrics_api
