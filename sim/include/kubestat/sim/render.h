// Rendering the model as the real wire formats. Pure functions; thread-safe.
//
//  - RenderSummary: the kubelet's GET /stats/summary (statsapi v1alpha1 Summary), compact
//    JSON. With only_cpu_and_memory (?only_cpu_and_memory=true) the node keeps nodeName,
//    systemContainers, startTime, cpu, memory and each pod podRef, startTime, containers
//    (name, startTime, cpu, memory), cpu, memory; otherwise network, fs, runtime, rlimit,
//    volume, ephemeral-storage, logs and rootfs are present too. Times are RFC 3339 with
//    whole seconds.
//  - RenderResourceMetrics: the kubelet's GET /metrics/resource in Prometheus text format
//    0.0.4 with the [STABLE] help strings, families sorted by name, samples by labels,
//    values written as Go's strconv 'g' does, millisecond timestamps (none on
//    container_start_time_seconds), ending with resource_scrape_error 0.
//  - Kubernetes objects (core/v1 Node, Pod, NodeList, PodList, watch events) as JSON.
#ifndef KUBESTAT_SIM_RENDER_H_
#define KUBESTAT_SIM_RENDER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "kubestat/sim/model.h"

namespace kubestat::sim {

std::string RenderSummary(const NodeSnapshot& snapshot, bool only_cpu_and_memory);
std::string RenderResourceMetrics(const NodeSnapshot& snapshot);

// Go's strconv.FormatFloat(v, 'g', -1, 64), as the Prometheus text format uses.
std::string FormatPrometheusFloat(double v);

// Where a node's kubelet listens (status.addresses InternalIP, daemonEndpoints port).
struct KubeletEndpoint {
  std::string ip;
  int port = 0;
};

// Appends one object to `out`.
void AppendNodeJson(std::string& out, const NodeInfo& node, const KubeletEndpoint& endpoint,
                    uint64_t resource_version);
// The Node a hollow node registers in a real API server (hollow_nodes.h): the same object
// without the fields the server sets (uid, resourceVersion, creationTimestamp), labelled
// kubestat.dev/hollow-node=true, its Ready condition's heartbeat `now`.
void AppendNodeForRegistration(std::string& out, const NodeInfo& node,
                               const KubeletEndpoint& endpoint, Timestamp now);
void AppendPodJson(std::string& out, const ClusterModel& model, const PodInfo& pod, Timestamp now,
                   uint64_t resource_version);

// {"type":"ADDED","object":{…}}\n  (type is ADDED, MODIFIED, DELETED or ERROR).
std::string RenderWatchEvent(std::string_view type, std::string_view object_json);

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_RENDER_H_
