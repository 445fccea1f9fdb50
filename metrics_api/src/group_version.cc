#include "kubestat/metrics_api/group_version.h"

#include <cassert>

namespace kubestat::metrics_api {

std::string_view GroupName(GroupVersion gv) {
  return IsMetricsK8sIo(gv) ? kGroupMetricsK8sIo : kGroupMetrics;
}

std::string_view VersionName(GroupVersion gv) {
  switch (gv) {
    case GroupVersion::kV1alpha1:
      return "v1alpha1";
    case GroupVersion::kV1beta1:
      return "v1beta1";
    case GroupVersion::kV1:
      return "v1";
  }
  assert(false && "unknown GroupVersion");
  return "";
}

std::string_view ApiVersion(GroupVersion gv) {
  switch (gv) {
    case GroupVersion::kV1alpha1:
      return "metrics/v1alpha1";
    case GroupVersion::kV1beta1:
      return "metrics.k8s.io/v1beta1";
    case GroupVersion::kV1:
      return "metrics.k8s.io/v1";
  }
  assert(false && "unknown GroupVersion");
  return "";
}

std::optional<GroupVersion> ParseApiVersion(std::string_view api_version) {
  for (GroupVersion gv : {GroupVersion::kV1alpha1, GroupVersion::kV1beta1, GroupVersion::kV1}) {
    if (api_version == ApiVersion(gv)) return gv;
  }
  return std::nullopt;
}

bool IsMetricsK8sIo(GroupVersion gv) { return gv != GroupVersion::kV1alpha1; }

std::span<const GroupVersion> GroupVersions(GroupVersion gv) {
  // The preferred version first, as kube-apiserver lists a group's versions.
  static constexpr GroupVersion kMetricsK8sIo[] = {GroupVersion::kV1, GroupVersion::kV1beta1};
  static constexpr GroupVersion kMetrics[] = {GroupVersion::kV1alpha1};
  if (IsMetricsK8sIo(gv)) return kMetricsK8sIo;
  return kMetrics;
}

std::string_view ResourceName(Resource resource) {
  return resource == Resource::kNodes ? "nodes" : "pods";
}

std::string_view KindName(Resource resource) {
  return resource == Resource::kNodes ? "NodeMetrics" : "PodMetrics";
}

std::string_view ListKindName(Resource resource) {
  return resource == Resource::kNodes ? "NodeMetricsList" : "PodMetricsList";
}

}  // namespace kubestat::metrics_api
