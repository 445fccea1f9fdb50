// REST rendering: MetricsSource views and request parameters in, JSON bytes out.
//
// No transport here (RestHandler routes, RestServer moves bytes), so every document the
// REST front end serves can be produced and checked without a socket.
//
// Two groups are rendered, metrics.k8s.io in two versions:
//
// metrics/v1alpha1 (kubestat's own, every window of every object):
//   NodeMetrics {kind, apiVersion, metadata{name, labels}, machine: <windows>,
//                systemContainers: [{metadata{name}, metrics: <windows>}]}
//   PodMetrics  {kind, apiVersion, metadata{name, namespace, labels}, pod: <windows>,
//                containers: [{metadata{name}, metrics: <windows>}]}
//   `pod` holds the pod's own series (the sum of its containers at each scrape), whose
//   percentiles are true percentiles of the pod.
//   <windows> is an object keyed by the window length in FormatDuration form ("10s", "1m",
//   "1h", "1d"), ascending; each value is
//     {endtime, mean, max, 95th, min, 50th, 99th: {cpu, memory}, count}
//   with cpu and memory as canonical Kubernetes quantities (cpu from nanocores, memory from
//   bytes, binary SI). A resource without samples is left out of the {cpu, memory} objects;
//   endtime is the newer of the two resources' window ends (RFC 3339, whole seconds) and
//   count the larger of their sample counts (cpu, a rate, has one sample fewer than memory
//   after a series starts).
//
// metrics.k8s.io/v1 and metrics.k8s.io/v1beta1 (what metrics-server serves, for kubectl top
// and the HPA; the two versions hold the same objects, only apiVersion differs):
//   NodeMetrics {kind, apiVersion, metadata{name, creationTimestamp, labels}, timestamp,
//                window, usage{cpu, memory}}
//   PodMetrics  {kind, apiVersion, metadata{name, namespace, creationTimestamp, labels},
//                timestamp, window, containers: [{name, usage{cpu, memory}}]}
//   usage is the mean of the shortest window, window its length, timestamp its endtime
//   (the newer of cpu's and memory's); creationTimestamp is the time of the request, as
//   metrics-server writes it. As in metrics-server, an object is served only when it has
//   both cpu and memory (for a pod: at least one container, and every container has both);
//   otherwise it is left out of lists and a GET of it is NotFound.
//
// Lists are {kind: "<Kind>List", apiVersion, metadata: {}, items: [...]}, items without
// kind and apiVersion (as kube-apiserver writes typed lists).
//
// Thread-safety: free functions over values; safe from any thread.
#ifndef KUBESTAT_AGGREGATOR_REST_RENDER_H_
#define KUBESTAT_AGGREGATOR_REST_RENDER_H_

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kubestat/aggregator/metrics_source.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/field_selector.h"
#include "kubestat/core/label_selector.h"

namespace kubestat::aggregator {

enum class MetricsApi {
  kV1alpha1,  // metrics/v1alpha1
  kV1beta1,   // metrics.k8s.io/v1beta1
  kV1,        // metrics.k8s.io/v1
};

inline constexpr std::string_view kGroupMetrics = "metrics";
inline constexpr std::string_view kGroupMetricsK8sIo = "metrics.k8s.io";

// "metrics" / "metrics.k8s.io" / "metrics.k8s.io".
std::string_view ApiGroupName(MetricsApi api);
// "v1alpha1" / "v1beta1" / "v1".
std::string_view ApiVersionName(MetricsApi api);
// "metrics/v1alpha1" / "metrics.k8s.io/v1beta1" / "metrics.k8s.io/v1".
std::string_view ApiGroupVersion(MetricsApi api);
// Whether `api` is a version of metrics.k8s.io (metrics-server's shape: timestamp, window,
// usage) rather than metrics/v1alpha1.
bool IsMetricsK8sIo(MetricsApi api);
// The versions served of `api`'s group, the preferred one first: {kV1, kV1beta1} for
// metrics.k8s.io, {kV1alpha1} for metrics. Points at static storage.
std::span<const MetricsApi> GroupVersions(MetricsApi api);

enum class MetricsResource { kNodes, kPods };

// "nodes" / "pods".
std::string_view MetricsResourceName(MetricsResource resource);

// Decoded query parameters; the first value of a repeated name wins.
using QueryParams = std::map<std::string, std::string, std::less<>>;

// Parses a raw query string ("a=1&b=x%20y", without the '?') as Go's url.ParseQuery does:
// '&'-separated pairs, percent-escapes decoded, '+' read as a space; a malformed escape is
// kept as written. Never fails.
QueryParams ParseQueryString(std::string_view query);

// `pretty` is on for a bare "?pretty" and for the values Go's strconv.ParseBool reads as true
// ("1", "t", "T", "true", "TRUE", "True"), as kube-apiserver reads it.
bool PrettyRequested(const QueryParams& params);

// What the metric endpoints take from the query string.
struct MetricsQuery {
  int indent = 0;  // 2 when pretty output is asked for, else 0 (compact)
  LabelSelector labels;
  FieldSelector fields;
};

// Reads pretty, labelSelector and fieldSelector. Errors (InvalidArgument, for a 400
// BadRequest Status): the selector parser's message for a malformed selector;
// "field label not supported: <field>" for a field other than metadata.name,
// metadata.namespace (and spec.nodeName for pods).
[[nodiscard]] absl::StatusOr<MetricsQuery> ParseMetricsQuery(const QueryParams& params,
                                                             MetricsResource resource);

// Whether the object satisfies both selectors of `query`.
bool MatchesQuery(const MetricsQuery& query, const NodeView& node);
bool MatchesQuery(const MetricsQuery& query, const PodView& pod);

// How one response is rendered.
struct RenderContext {
  MetricsApi api = MetricsApi::kV1beta1;
  Timestamp now;   // creationTimestamp of metrics.k8s.io objects
  int indent = 0;  // 0 compact, else spaces per level
};

// Whether `api` serves this object (always for v1alpha1; see the file comment for
// metrics.k8s.io).
bool Servable(MetricsApi api, const NodeView& node);
bool Servable(MetricsApi api, const PodView& pod);

// One object with kind and apiVersion; std::nullopt when !Servable (a 404).
std::optional<std::string> RenderNode(const NodeView& node, const RenderContext& ctx);
std::optional<std::string> RenderPod(const PodView& pod, const RenderContext& ctx);

// A list of the servable objects among `nodes` / `pods` that match `query` (its indent is
// ignored; ctx.indent applies), in the given order.
std::string RenderNodeList(std::span<const NodeView> nodes, const MetricsQuery& query,
                           const RenderContext& ctx);
std::string RenderPodList(std::span<const PodView> pods, const MetricsQuery& query,
                          const RenderContext& ctx);
// The same over shared views (a MetricsSnapshot's), without copying them.
std::string RenderNodeList(std::span<const std::shared_ptr<const NodeView>> nodes,
                           const MetricsQuery& query, const RenderContext& ctx);
std::string RenderPodList(std::span<const std::shared_ptr<const PodView>> pods,
                          const MetricsQuery& query, const RenderContext& ctx);

// Pre-rendered items: the compact JSON of one node as a list item (no kind, apiVersion), and
// a list made of such items, one per node of `nodes` in the same order. A metrics/v1alpha1
// object does not depend on the request (metrics.k8s.io's creationTimestamp does), so the
// items of a snapshot can be rendered once and listed by many requests. `ctx.api` must be
// kV1alpha1 and ctx.indent 0; the output is byte for byte RenderNodeList's.
std::string RenderNodeListItem(const NodeView& node, const RenderContext& ctx);
std::string RenderNodeList(std::span<const std::shared_ptr<const NodeView>> nodes,
                           std::span<const std::string> items, const MetricsQuery& query,
                           const RenderContext& ctx);

// Discovery documents.
// APIResourceList of one group version: nodes (NodeMetrics, cluster-scoped) and pods
// (PodMetrics, namespaced), verbs get and list.
std::string RenderApiResourceList(MetricsApi api, int indent);
// APIGroup of the group of `api` with its GroupVersions(), in that order, the first one
// preferred (for metrics.k8s.io: v1 then v1beta1, v1 preferred, whichever of them `api` is).
std::string RenderApiGroup(MetricsApi api, int indent);
// APIGroupList with metrics.k8s.io (v1 preferred, v1beta1) and metrics (v1alpha1).
std::string RenderApiGroupList(int indent);
// APIVersions of the legacy /api path: no core versions are served here.
std::string RenderApiVersions(int indent);

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_REST_RENDER_H_
