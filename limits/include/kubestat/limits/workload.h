// Workload: the controller a pod's containers are recommended for.
//
// What it does. Pods of one workload share one recommendation per container: their samples
// are one history. The workload of a pod is its controlling ownerReference, except that a
// ReplicaSet made by a Deployment maps to that Deployment, found as Kubernetes names it: the
// Deployment controller names its ReplicaSets `<deployment>-<pod-template-hash>` and puts the
// hash in the pods' `pod-template-hash` label. Without that label a ReplicaSet whose name
// ends in `-<hash>` (5 to 10 characters of the alphabet Kubernetes' SafeEncodeString uses:
// bcdfghjklmnpqrstvwxz2456789) maps the same way; any other ReplicaSet is a workload of its
// own. Deployment, StatefulSet, DaemonSet, Job (and any other controller kind) are taken as
// they are. A pod without a controller is a workload of its own, of kind Pod.
//
// Names. A recommendation is named `<kind>.<workload>.<container>` in lower-case kind
// ("deployment.web.app"): kinds and container names hold no '.', so the name splits back
// unambiguously (ParseRecommendationName).
//
// Thread-safety. Pure functions.
#ifndef KUBESTAT_LIMITS_WORKLOAD_H_
#define KUBESTAT_LIMITS_WORKLOAD_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace kubestat::limits {

struct Workload {
  std::string kind;  // "Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet", "Pod", ...
  std::string name;
  friend auto operator<=>(const Workload&, const Workload&) = default;
};

// The workload of a pod from its name, its controller (both empty when none) and labels.
Workload WorkloadOf(std::string_view pod_name, std::string_view owner_kind,
                    std::string_view owner_name, const std::map<std::string, std::string>& labels);

// "deployment.web.app".
std::string RecommendationName(const Workload& workload, std::string_view container);

struct RecommendationRef {
  std::string kind_lower;  // "deployment"
  std::string workload;    // "web"
  std::string container;   // "app"
};
// The parts of a recommendation name; std::nullopt for a name that is not of that form.
std::optional<RecommendationRef> ParseRecommendationName(std::string_view name);

}  // namespace kubestat::limits

#endif  // KUBESTAT_LIMITS_WORKLOAD_H_
