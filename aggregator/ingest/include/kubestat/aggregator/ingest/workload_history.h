// Workload history: the owner under which the store keeps a container's hourly usage
// histograms (storage/store.h, 'W'), so that the right-sizing history belongs to the
// workload and container, not to one pod's series.
//
// What it does. A container series' closed bucket is written under the owner
// (namespace, workload kind, workload name, container, resource) of its pod
// (limits/workload.h), so the pods a rollout replaces, the pods of a StatefulSet that come
// back under new series, and the pods of one workload on every node share one history:
// a recommendation reads every record of its owner, including those of pods that are gone,
// and merges them. Pods of one workload in the same hour are separate records (the key
// ends with the series id), merged when read.
//
// The workload of a pod is asked of PodWorkloads when the bucket closes (the pod is still
// scraped then, so discovery knows it). A pod it does not know is written as a workload of
// its own (kind Pod, the pod's name), as a pod without a controller is.
//
// Encoding: each field followed by a NUL (names hold none), so that a prefix of whole
// fields (HistoryNamespacePrefix, HistoryWorkloadPrefix) selects exactly those owners.
//
// Thread-safety: pure functions; PodWorkloads implementations must be thread-safe.
#ifndef KUBESTAT_AGGREGATOR_INGEST_WORKLOAD_HISTORY_H_
#define KUBESTAT_AGGREGATOR_INGEST_WORKLOAD_HISTORY_H_

#include <optional>
#include <string>
#include <string_view>

#include "kubestat/limits/workload.h"
#include "kubestat/windows/series_key.h"

namespace kubestat::aggregator {

// The workload of a live pod, as discovery knows it.
class PodWorkloads {
 public:
  virtual ~PodWorkloads() = default;
  // limits::WorkloadOf of the pod's controller and labels; std::nullopt for an unknown pod.
  virtual std::optional<limits::Workload> WorkloadOfPod(std::string_view namespace_name,
                                                        std::string_view pod) const = 0;
};

// The workload a pod's history is written under: what `workloads` says (when given), else
// the pod itself (kind Pod).
limits::Workload HistoryWorkload(const PodWorkloads* workloads, std::string_view namespace_name,
                                 std::string_view pod);

// "ns\0Kind\0name\0container\0cpu\0".
std::string HistoryOwner(std::string_view namespace_name, const limits::Workload& workload,
                         std::string_view container, windows::Resource resource);
// The owners of a namespace ("ns\0"); "" (every owner) for an empty namespace.
std::string HistoryNamespacePrefix(std::string_view namespace_name);
// The owners of one workload ("ns\0Kind\0name\0").
std::string HistoryWorkloadPrefix(std::string_view namespace_name,
                                  const limits::Workload& workload);

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_INGEST_WORKLOAD_HISTORY_H_
