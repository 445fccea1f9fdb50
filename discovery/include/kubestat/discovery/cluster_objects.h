// The parts of Kubernetes Node and Pod objects that kubestat keeps.
//
// Plain values, filled by discovery (kube API list+watch, a kubeconfig-selected cluster, or
// a static list) and read by address selection and the scrape loop. They own their strings
// and are safe to copy between threads.
#ifndef KUBESTAT_DISCOVERY_CLUSTER_OBJECTS_H_
#define KUBESTAT_DISCOVERY_CLUSTER_OBJECTS_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kubestat/core/shared_value.h"
#include "kubestat/limits/limit_range.h"

namespace kubestat::discovery {

// One entry of a Node's status.addresses.
struct NodeAddress {
  // "Hostname", "InternalDNS", "InternalIP", "ExternalDNS" or "ExternalIP".
  std::string type;
  std::string address;

  friend bool operator==(const NodeAddress&, const NodeAddress&) = default;
};

struct NodeInfo {
  std::string name;
  std::string uid;
  std::string resource_version;
  SharedLabels labels;
  std::vector<NodeAddress> addresses;
  // status.daemonEndpoints.kubeletEndpoint.Port; 0 when absent.
  int kubelet_port = 0;

  friend bool operator==(const NodeInfo&, const NodeInfo&) = default;
};

struct PodInfo {
  std::string name;
  std::string namespace_name;
  std::string uid;
  std::string resource_version;
  // Shared with every view made of the pod (copies share one block).
  SharedLabels labels;
  // spec.nodeName; empty while the pod is not scheduled.
  std::string node_name;
  // status.phase: Pending, Running, Succeeded, Failed, Unknown (empty when absent).
  std::string phase;
  // Whether metadata.deletionTimestamp is set (the pod is terminating).
  bool terminating = false;

  // Right-sizing: each of spec.containers' cpu and memory requests and limits as the pod
  // declares them (after admission, so with the LimitRanges' defaults), in spec order;
  // and the controlling ownerReference (kind "ReplicaSet", "DaemonSet", ...; both empty
  // when the pod has none).
  SharedVector<limits::ContainerResources> containers;
  std::string owner_kind;
  std::string owner_name;

  // "namespace/name".
  std::string Key() const { return namespace_name + "/" + name; }

  friend bool operator==(const PodInfo&, const PodInfo&) = default;
};

// The part of a PodInfo the query answers join with a pod's windows.
struct PodLabelsInfo {
  SharedLabels labels;
  std::string node_name;  // spec.nodeName; empty while the pod is not scheduled
  // spec.containers' requests and limits, in spec order (PodInfo::containers).
  SharedVector<limits::ContainerResources> containers = {};
};

// A pod by namespace and name, for lookups of many pods at once; the strings are the
// caller's.
struct PodNameRef {
  std::string_view namespace_name;
  std::string_view name;
};

// A LimitRange (core/v1) of a namespace: its cpu and memory items as the API server stores
// them (WithApiDefaults applied).
struct LimitRangeInfo {
  std::string namespace_name;
  std::string resource_version;
  limits::LimitRange limit_range;  // limit_range.name is metadata.name

  // "namespace/name".
  std::string Key() const { return namespace_name + "/" + limit_range.name; }

  friend bool operator==(const LimitRangeInfo&, const LimitRangeInfo&) = default;
};

}  // namespace kubestat::discovery

#endif  // KUBESTAT_DISCOVERY_CLUSTER_OBJECTS_H_
