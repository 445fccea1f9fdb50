// Reading the metrics objects back from JSON: what a server that stores them (the secondary
// API server) reads from what a writer (the bridge) rendered with render.h.
//
// Both shapes are read, told apart by apiVersion:
// - metrics/v1alpha1: every field render.h writes. Each window's {cpu, memory} statistics
//   become that resource's Statistics for the window, with the window's endtime and count
//   (the JSON keeps one of each per window, so a resource whose own endtime or count
//   differed from the window's reads back with the window's). Times are whole seconds as
//   written. The topology render.h writes is read from allocatableTopology, podResources and
//   each "exclusive" (allocatable and utilization are derived from them).
// - metrics.k8s.io/v1 and v1beta1: usage becomes one window of length `window` ending at
//   `timestamp`, holding one sample (count 1, every statistic the usage). Pods read this
//   way have no `pod` windows.
// So for metrics/v1alpha1, RenderX(ParseX(RenderX(o))) == RenderX(o) (tested).
//
// `kind` must match ("NodeMetrics" / "PodMetrics"); metadata.name must be an RFC 1123
// subdomain (as node and pod names are), a pod's metadata.namespace and every container
// name an RFC 1123 label, with kube-apiserver's messages ("Invalid value: ..."); an optional
// metadata.resourceVersion is kept; unknown fields are ignored (as Kubernetes decoders do).
// Quantities must parse, be non-negative and fit an int64 in nanocores (cpu) or bytes
// (memory); window keys must be durations; times RFC 3339.
//
// Errors: InvalidArgument "<field path>: <reason>", e.g.
//   `machine["1m"].95th.cpu: quantities must match the regular expression ...`, so that a
//   writer learns which field is wrong (the path uses JSON names).
//
// Thread-safety: pure functions; safe from any thread.
#ifndef KUBESTAT_METRICS_API_PARSE_H_
#define KUBESTAT_METRICS_API_PARSE_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "kubestat/metrics_api/group_version.h"
#include "kubestat/metrics_api/objects.h"

namespace kubestat::metrics_api {

template <typename T>
struct Parsed {
  GroupVersion gv = GroupVersion::kV1alpha1;  // from apiVersion
  T object;
};

[[nodiscard]] absl::StatusOr<Parsed<NodeMetrics>> ParseNodeMetrics(std::string_view json);
[[nodiscard]] absl::StatusOr<Parsed<PodMetrics>> ParsePodMetrics(std::string_view json);

}  // namespace kubestat::metrics_api

#endif  // KUBESTAT_METRICS_API_PARSE_H_
