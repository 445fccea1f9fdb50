#include "kubestat/testing/render_protobuf_reference.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstdint>
#include <string_view>

#include "k8s/apimachinery/pkg/runtime/generated.pb.h"
#include "k8s/metrics/pkg/apis/metrics/v1beta1/generated.pb.h"
#include "kubestat/apimachinery/quantity.h"
#include "kubestat/core/time.h"
#include "kubestat/metrics_api/internal/usage.h"  // metrics_api's own choice of usage, timestamp and window
#include "kubestat/metrics_api/render_protobuf.h"

namespace kubestat::testing {
namespace {

namespace meta = k8s::io::apimachinery::pkg::apis::meta::v1;
namespace metrics = k8s::io::metrics::pkg::apis::metrics::v1beta1;
namespace resource = k8s::io::apimachinery::pkg::api::resource;
namespace runtime = k8s::io::apimachinery::pkg::runtime;

using metrics_api::ContainerMetrics;
using metrics_api::Labels;
using metrics_api::NodeMetrics;
using metrics_api::Page;
using metrics_api::PodMetrics;
using metrics_api::RenderContext;
using metrics_api::Resource;
using metrics_api::ResourceWindows;
using metrics_api::internal::ClampToInt64;
using metrics_api::internal::PodUsageTimestamp;
using metrics_api::internal::UsageTimestamp;
using metrics_api::internal::UsageWindow;

constexpr int64_t kNanosPerSecond = 1'000'000'000;

// metav1.Time in whole seconds, truncated toward the past (as FormatRfc3339); the zero time
// is the empty message, as Go writes it.
void SetTime(Timestamp t, meta::Time* out) {
  out->Clear();
  if (t == kZeroTime) return;
  const int64_t ns = t.time_since_epoch().count();
  int64_t seconds = ns / kNanosPerSecond;
  if (ns % kNanosPerSecond < 0) --seconds;
  out->set_seconds(seconds);
  out->set_nanos(0);
}

void SetObjectMeta(std::string_view name, std::string_view namespace_name,
                   std::string_view resource_version, const Labels& labels, Timestamp now,
                   meta::ObjectMeta* out) {
  out->set_name(std::string(name));
  out->set_generatename("");
  out->set_namespace_(std::string(namespace_name));
  out->set_selflink("");
  out->set_uid("");
  out->set_resourceversion(std::string(resource_version));
  out->set_generation(0);
  SetTime(now, out->mutable_creationtimestamp());
  for (const auto& [key, value] : labels) (*out->mutable_labels())[key] = value;
}

void SetUsage(const ResourceWindows& windows,
              google::protobuf::Map<std::string, resource::Quantity>* out) {
  (*out)["cpu"].set_string(FormatCpuNanoCores(ClampToInt64(windows.cpu.front().mean)));
  (*out)["memory"].set_string(FormatMemoryBytes(ClampToInt64(windows.memory.front().mean)));
}

void Fill(const NodeMetrics& node, const RenderContext& ctx, metrics::NodeMetrics* out) {
  SetObjectMeta(node.name, "", node.resource_version, node.labels, ctx.now,
                out->mutable_metadata());
  SetTime(UsageTimestamp(node.machine), out->mutable_timestamp());
  out->mutable_window()->set_duration(UsageWindow(node.machine).count());
  SetUsage(node.machine, out->mutable_usage());
}

void Fill(const PodMetrics& pod, const RenderContext& ctx, metrics::PodMetrics* out) {
  SetObjectMeta(pod.name, pod.namespace_name, pod.resource_version, pod.labels, ctx.now,
                out->mutable_metadata());
  SetTime(PodUsageTimestamp(pod), out->mutable_timestamp());
  out->mutable_window()->set_duration(UsageWindow(pod.containers.front().windows).count());
  for (const ContainerMetrics& container : pod.containers) {
    metrics::ContainerMetrics* c = out->add_containers();
    c->set_name(container.name);
    SetUsage(container.windows, c->mutable_usage());
  }
}

void SetListMeta(const Page& page, meta::ListMeta* out) {
  out->set_selflink("");
  out->set_resourceversion(page.resource_version);
  out->set_continue_(page.continue_token);
}

// `message` serialized with maps in key order, so equal objects give equal bytes.
std::string Deterministic(const google::protobuf::MessageLite& message) {
  std::string bytes;
  bytes.reserve(message.ByteSizeLong());
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return bytes;
}

// The body: magic, then the Unknown holding `object` as `kind` of ctx.gv.
std::string Envelope(const google::protobuf::MessageLite& object, std::string_view kind,
                     const RenderContext& ctx) {
  runtime::Unknown unknown;
  unknown.mutable_typemeta()->set_apiversion(std::string(ApiVersion(ctx.gv)));
  unknown.mutable_typemeta()->set_kind(std::string(kind));
  unknown.set_raw(Deterministic(object));
  unknown.set_contentencoding("");
  unknown.set_contenttype("");
  std::string body(metrics_api::kProtobufMagic);
  body.append(Deterministic(unknown));
  return body;
}

// One object as a `Message` (NodeMetrics or PodMetrics), when it is servable.
template <typename Message, typename Object>
std::optional<std::string> RenderObject(const Object& object, Resource resource,
                                        const RenderContext& ctx) {
  if (!Servable(ctx.gv, object)) return std::nullopt;
  Message message;
  Fill(object, ctx, &message);
  return Envelope(message, KindName(resource), ctx);
}

// The list of `page` as a `List` message (NodeMetricsList or PodMetricsList).
template <typename List, typename Objects>
std::string RenderList(const Objects& objects, const Page& page, Resource resource,
                       const RenderContext& ctx) {
  List list;
  SetListMeta(page, list.mutable_metadata());
  list.mutable_items()->Reserve(static_cast<int>(page.indices.size()));
  for (size_t i : page.indices) {
    Fill(metrics_api::internal::Deref(objects[i]), ctx, list.add_items());
  }
  return Envelope(list, ListKindName(resource), ctx);
}

}  // namespace

std::optional<std::string> ReferenceNodeProtobuf(const NodeMetrics& node,
                                                 const RenderContext& ctx) {
  return RenderObject<metrics::NodeMetrics>(node, Resource::kNodes, ctx);
}

std::optional<std::string> ReferencePodProtobuf(const PodMetrics& pod, const RenderContext& ctx) {
  return RenderObject<metrics::PodMetrics>(pod, Resource::kPods, ctx);
}

std::string ReferenceNodeListProtobuf(std::span<const NodeMetrics> nodes, const Page& page,
                                      const RenderContext& ctx) {
  return RenderList<metrics::NodeMetricsList>(nodes, page, Resource::kNodes, ctx);
}

std::string ReferenceNodeListProtobuf(metrics_api::SharedNodes nodes, const Page& page,
                                      const RenderContext& ctx) {
  return RenderList<metrics::NodeMetricsList>(nodes, page, Resource::kNodes, ctx);
}

std::string ReferencePodListProtobuf(std::span<const PodMetrics> pods, const Page& page,
                                     const RenderContext& ctx) {
  return RenderList<metrics::PodMetricsList>(pods, page, Resource::kPods, ctx);
}

std::string ReferencePodListProtobuf(metrics_api::SharedPods pods, const Page& page,
                                     const RenderContext& ctx) {
  return RenderList<metrics::PodMetricsList>(pods, page, Resource::kPods, ctx);
}

}  // namespace kubestat::testing
