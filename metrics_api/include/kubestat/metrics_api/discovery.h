// Discovery documents of the metrics APIs, as kube-apiserver writes them.
//
// Thread-safety: pure functions; safe from any thread.
#ifndef KUBESTAT_METRICS_API_DISCOVERY_H_
#define KUBESTAT_METRICS_API_DISCOVERY_H_

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "kubestat/metrics_api/group_version.h"

namespace kubestat::metrics_api {

// The verbs a read-only server offers on nodes and pods.
inline constexpr std::string_view kReadVerbs[] = {"get", "list"};

// APIResourceList of one group-version: nodes (NodeMetrics, cluster-scoped) and pods
// (PodMetrics, namespaced), with `verbs` (get and list by default; a server that also takes
// writes and watches names them). With `recommendations` (the aggregator's metrics/v1alpha1)
// also recommendations (Recommendation, namespaced, get and list).
std::string RenderApiResourceList(GroupVersion gv, int indent,
                                  std::span<const std::string_view> verbs = kReadVerbs,
                                  bool recommendations = false);
// APIGroup of the group of `gv` with its GroupVersions(), in that order, the first one
// preferred (for metrics.k8s.io: v1 then v1beta1, v1 preferred, whichever of them `gv` is).
std::string RenderApiGroup(GroupVersion gv, int indent);
// APIGroupList with metrics.k8s.io (v1 preferred, v1beta1) and metrics (v1alpha1).
std::string RenderApiGroupList(int indent);
// APIVersions of the legacy /api path: no core versions are served here.
std::string RenderApiVersions(int indent);

}  // namespace kubestat::metrics_api

#endif  // KUBESTAT_METRICS_API_DISCOVERY_H_
