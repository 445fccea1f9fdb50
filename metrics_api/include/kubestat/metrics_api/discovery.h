// Discovery documents of the metrics APIs, as kube-apiserver writes them.
//
// Thread-safety: pure functions; safe from any thread.
#ifndef KUBESTAT_METRICS_API_DISCOVERY_H_
#define KUBESTAT_METRICS_API_DISCOVERY_H_

#include <string>

#include "kubestat/metrics_api/group_version.h"

namespace kubestat::metrics_api {

// APIResourceList of one group-version: nodes (NodeMetrics, cluster-scoped) and pods
// (PodMetrics, namespaced), verbs get and list.
std::string RenderApiResourceList(GroupVersion gv, int indent);
// APIGroup of the group of `gv` with its GroupVersions(), in that order, the first one
// preferred (for metrics.k8s.io: v1 then v1beta1, v1 preferred, whichever of them `gv` is).
std::string RenderApiGroup(GroupVersion gv, int indent);
// APIGroupList with metrics.k8s.io (v1 preferred, v1beta1) and metrics (v1alpha1).
std::string RenderApiGroupList(int indent);
// APIVersions of the legacy /api path: no core versions are served here.
std::string RenderApiVersions(int indent);

}  // namespace kubestat::metrics_api

#endif  // KUBESTAT_METRICS_API_DISCOVERY_H_
