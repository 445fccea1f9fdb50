// JSON of the metrics objects, for every served group-version.
//
// metrics/v1alpha1 (kubestat's own, every window of every object):
//   NodeMetrics {kind, apiVersion, metadata{name, labels}, machine: <windows>,
//                systemContainers: [{metadata{name}, metrics: <windows>}]}
//   PodMetrics  {kind, apiVersion, metadata{name, namespace, labels}, pod: <windows>,
//                containers: [{metadata{name}, metrics: <windows>}]}
//   `pod` holds the pod's own series (the sum of its containers at each scrape), whose
//   percentiles are true percentiles of the pod.
//   A pod's container that declares requests or limits also has `requests` and `limits`
//   ({cpu, memory} quantities, each resource only when declared) and `ratios`, keyed by
//   window like <windows>: {"usage/request": {mean, 95th, max: {cpu, memory}},
//   "usage/limit": {...}}, the window's statistic over the declared amount as a JSON number
//   rounded to 3 decimals (1.25: a quarter over), for each resource with both.
//   <windows> is an object keyed by the window length in FormatDuration form ("10s", "1m",
//   "1h", "1d"), ascending; each value is
//     {endtime, mean, max, 95th, min, 50th, 99th: {cpu, memory}, count}
//   with cpu and memory as canonical Kubernetes quantities (cpu from nanocores, memory from
//   bytes, binary SI). A resource without samples is left out of the {cpu, memory} objects;
//   endtime is the newer of the two resources' window ends (RFC 3339, whole seconds) and
//   count the larger of their sample counts (cpu, a rate, has one sample fewer than memory
//   after a series starts).
//
//   Topology, from the node's agent (node_resources.h), where known:
//   NodeMetrics  "allocatable": {cpu, memory, <hugepages-*>, <device resource>: count}, as a
//                Node's status.allocatable, from the cpus, "memory" blocks and devices of
//                "allocatableTopology": <ResourceSet> (cpuIds, memory, devices, with NUMA
//                nodes); "utilization": {"<len>": {mean, 95th, max: {cpu, memory}}}, each
//                machine window's statistic over the allocatable cpu (nanocores / (cpus ×
//                1e9)) and memory (bytes / allocatable "memory"), a ratio to 4 decimals;
//                "podResources": {state, message, time} (objects.h PodResourcesStatus).
//   containers   "exclusive": <ResourceSet> of a container (and of a pod, at its top level)
//                given exclusive cpus, NUMA memory or devices.
//   None of these appear in metrics.k8s.io, whose objects keep their standard shape.
//
// metrics.k8s.io/v1 and metrics.k8s.io/v1beta1 (what metrics-server serves, for kubectl top
// and the HPA; the two versions hold the same objects, only apiVersion differs):
//   NodeMetrics {kind, apiVersion, metadata{name, creationTimestamp, labels}, timestamp,
//                window, usage{cpu, memory}}
//   PodMetrics  {kind, apiVersion, metadata{name, namespace, creationTimestamp, labels},
//                timestamp, window, containers: [{name, usage{cpu, memory}}]}
//   usage is the mean of the shortest window, window its length, timestamp its endtime
//   (the newer of cpu's and memory's); creationTimestamp is the time of the request, as
//   metrics-server writes it. Only Servable() objects are rendered (query.h).
//
// Objects carry metadata.resourceVersion when theirs is set. Lists are {kind: "<Kind>List",
// apiVersion, metadata: {resourceVersion?, continue?}, items: [...]}, items without kind and
// apiVersion (as kube-apiserver writes typed lists); resourceVersion and continue are there
// when the page has them.
//
// Values beyond INT64_MAX (not physical) are clamped to it.
//
// Thread-safety: free functions over values; safe from any thread.
#ifndef KUBESTAT_METRICS_API_RENDER_H_
#define KUBESTAT_METRICS_API_RENDER_H_

#include <memory>
#include <optional>
#include <span>
#include <string>

#include "kubestat/core/clock.h"
#include "kubestat/metrics_api/group_version.h"
#include "kubestat/metrics_api/objects.h"
#include "kubestat/metrics_api/query.h"

namespace kubestat::metrics_api {

// How one response is rendered.
struct RenderContext {
  GroupVersion gv = GroupVersion::kV1beta1;
  Timestamp now;   // creationTimestamp of metrics.k8s.io objects
  int indent = 0;  // 0 compact, else spaces per level
};

// One object with kind and apiVersion; std::nullopt when it is not Servable (a 404).
std::optional<std::string> RenderNode(const NodeMetrics& node, const RenderContext& ctx);
std::optional<std::string> RenderPod(const PodMetrics& pod, const RenderContext& ctx);

// The compact JSON of one object as a list item (no kind, apiVersion). A metrics/v1alpha1
// item does not depend on the request (metrics.k8s.io's creationTimestamp does), so the
// items of a snapshot can be rendered once and listed by many requests. `ctx` must be
// metrics/v1alpha1 with indent 0 (asserted).
std::string RenderNodeListItem(const NodeMetrics& node, const RenderContext& ctx);

// The list of `page` (Select's answer over the same objects).
using SharedNodes = std::span<const std::shared_ptr<const NodeMetrics>>;
using SharedPods = std::span<const PodRef>;
std::string RenderNodeList(SharedNodes nodes, const Page& page, const RenderContext& ctx);
std::string RenderPodList(SharedPods pods, const Page& page, const RenderContext& ctx);
// The same with the items already rendered by RenderNodeListItem, one per node of `nodes`
// in the same order (ctx as for RenderNodeListItem); byte for byte the list above.
std::string RenderNodeList(SharedNodes nodes, std::span<const std::string> items, const Page& page,
                           const RenderContext& ctx);

// Select and render in one step (ctx.indent applies; the query's indent is ignored).
std::string RenderNodeList(std::span<const NodeMetrics> nodes, const ListQuery& query,
                           const RenderContext& ctx);
std::string RenderPodList(std::span<const PodMetrics> pods, const ListQuery& query,
                          const RenderContext& ctx);
std::string RenderNodeList(SharedNodes nodes, const ListQuery& query, const RenderContext& ctx);
std::string RenderPodList(SharedPods pods, const ListQuery& query, const RenderContext& ctx);

}  // namespace kubestat::metrics_api

#endif  // KUBESTAT_METRICS_API_RENDER_H_
