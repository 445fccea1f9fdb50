// metrics.k8s.io objects in the Kubernetes protobuf encoding (application/vnd.kubernetes.protobuf),
// what client-go and kubectl ask for first: the same objects, selection and paging as the JSON
// of render.h, for metrics.k8s.io/v1 and v1beta1 only (metrics/v1alpha1 has no protobuf form).
//
// A body is the 4 bytes "k8s\x00" and one k8s.io.apimachinery.pkg.runtime.Unknown:
//   typeMeta {apiVersion: "metrics.k8s.io/v1beta1" (or v1), kind: "NodeMetrics", ...}
//   raw      the object's message: k8s.io.metrics.pkg.apis.metrics.v1beta1.NodeMetrics,
//            PodMetrics, NodeMetricsList or PodMetricsList (v1 uses the same messages)
//   contentEncoding "", contentType ""
// (proto/k8s/: wire-compatible copies of k8s.io/apimachinery's and k8s.io/metrics' messages.)
//
// The object messages hold what the JSON holds:
//   metadata  ObjectMeta {name, namespace, resourceVersion, creationTimestamp, labels}
//   timestamp Time {seconds, nanos 0}: whole seconds, truncated toward the past as the JSON's
//             RFC 3339 text is, so both encodings give the same time
//   window    Duration {duration: nanoseconds}
//   usage     map<string, Quantity> {"cpu", "memory"} with the JSON's canonical quantity
//             strings (of a node, or of each pod container)
//   lists: ListMeta {resourceVersion, continue} and the items of the Page.
// Fields are written as Kubernetes' generated Go code writes them: every field that is not a
// pointer in Go, even when empty (name, generateName, namespace, selfLink, uid,
// resourceVersion, generation, creationTimestamp; ListMeta's selfLink, resourceVersion and
// continue; Unknown's contentEncoding and contentType), maps in key order, so the bytes are
// those kube-apiserver would send for the same object. The zero time is an empty Time.
// The wire bytes are written straight into the body, without building message objects; they
// are byte for byte what libprotobuf's deterministic serialization of the same messages gives
// (kubestat/testing/render_protobuf_reference.h).
//
// Thread-safety: free functions over values; safe from any thread.
#ifndef KUBESTAT_METRICS_API_RENDER_PROTOBUF_H_
#define KUBESTAT_METRICS_API_RENDER_PROTOBUF_H_

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "kubestat/metrics_api/objects.h"
#include "kubestat/metrics_api/query.h"
#include "kubestat/metrics_api/render.h"

namespace kubestat::metrics_api {

// The first bytes of every body.
inline constexpr std::string_view kProtobufMagic{"k8s\0", 4};

// One object; std::nullopt when it is not Servable (a 404). ctx.gv must be a version of
// metrics.k8s.io (asserted); ctx.indent is ignored.
std::optional<std::string> RenderNodeProtobuf(const NodeMetrics& node, const RenderContext& ctx);
std::optional<std::string> RenderPodProtobuf(const PodMetrics& pod, const RenderContext& ctx);

// The list of `page` (Select's answer over the same objects), as RenderNodeList.
std::string RenderNodeListProtobuf(SharedNodes nodes, const Page& page, const RenderContext& ctx);
std::string RenderPodListProtobuf(SharedPods pods, const Page& page, const RenderContext& ctx);

// Select and render in one step.
std::string RenderNodeListProtobuf(std::span<const NodeMetrics> nodes, const ListQuery& query,
                                   const RenderContext& ctx);
std::string RenderPodListProtobuf(std::span<const PodMetrics> pods, const ListQuery& query,
                                  const RenderContext& ctx);
std::string RenderNodeListProtobuf(SharedNodes nodes, const ListQuery& query,
                                   const RenderContext& ctx);
std::string RenderPodListProtobuf(SharedPods pods, const ListQuery& query,
                                  const RenderContext& ctx);

}  // namespace kubestat::metrics_api

#endif  // KUBESTAT_METRICS_API_RENDER_PROTOBUF_H_
