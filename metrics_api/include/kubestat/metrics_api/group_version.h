// The group-versions and resources the metrics APIs serve.
//
// metrics/v1alpha1 is kubestat's own group (every window of every object);
// metrics.k8s.io/v1 and v1beta1 are metrics-server's (what kubectl top and the HPA read),
// the same objects under two versions, v1 preferred.
//
// Pure functions over enums; thread-safe.
#ifndef KUBESTAT_METRICS_API_GROUP_VERSION_H_
#define KUBESTAT_METRICS_API_GROUP_VERSION_H_

#include <optional>
#include <span>
#include <string_view>

namespace kubestat::metrics_api {

enum class GroupVersion {
  kV1alpha1,  // metrics/v1alpha1
  kV1beta1,   // metrics.k8s.io/v1beta1
  kV1,        // metrics.k8s.io/v1
};

inline constexpr std::string_view kGroupMetrics = "metrics";
inline constexpr std::string_view kGroupMetricsK8sIo = "metrics.k8s.io";

// "metrics" / "metrics.k8s.io" / "metrics.k8s.io".
std::string_view GroupName(GroupVersion gv);
// "v1alpha1" / "v1beta1" / "v1".
std::string_view VersionName(GroupVersion gv);
// "metrics/v1alpha1" / "metrics.k8s.io/v1beta1" / "metrics.k8s.io/v1": an apiVersion.
std::string_view ApiVersion(GroupVersion gv);
// The group-version an apiVersion names; std::nullopt for any other text.
std::optional<GroupVersion> ParseApiVersion(std::string_view api_version);
// Whether `gv` is a version of metrics.k8s.io (metrics-server's shape: timestamp, window,
// usage) rather than metrics/v1alpha1.
bool IsMetricsK8sIo(GroupVersion gv);
// The versions served of `gv`'s group, the preferred one first: {kV1, kV1beta1} for
// metrics.k8s.io, {kV1alpha1} for metrics. Points at static storage.
std::span<const GroupVersion> GroupVersions(GroupVersion gv);

enum class Resource { kNodes, kPods };

// "nodes" / "pods".
std::string_view ResourceName(Resource resource);
// "NodeMetrics" / "PodMetrics".
std::string_view KindName(Resource resource);
// "NodeMetricsList" / "PodMetricsList".
std::string_view ListKindName(Resource resource);

}  // namespace kubestat::metrics_api

#endif  // KUBESTAT_METRICS_API_GROUP_VERSION_H_
