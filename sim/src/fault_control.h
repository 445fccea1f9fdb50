// The fake kube-apiserver's control of the kubelets' faults (faults.h), under /sim/v1/:
//  - GET faults lists every node's kubelet fault other than none ({"node-0001":"http500"});
//    PUT or POST faults/{node} with the fault's name sets one (404 Status for a node not in
//    the model, 400 for a name not known), answering {"<node>":"<fault>"};
//  - GET podresources-faults and PUT or POST podresources-faults/{node} do the same for the
//    podresources sockets, and apply the fault at once; POST podresources/{node}/restart
//    replaces the node's socket as a restarted kubelet does. 404 Status for all of these
//    without podresources sockets.
// Any other /sim/v1/ path gets 404 Status. Thread-safe (the tables and sockets are).
#ifndef KUBESTAT_SIM_SRC_FAULT_CONTROL_H_
#define KUBESTAT_SIM_SRC_FAULT_CONTROL_H_

#include <string>
#include <vector>

#include "kubestat/http/server.h"
#include "kubestat/sim/faults.h"
#include "kubestat/sim/model.h"
#include "podresources_server.h"

namespace kubestat::sim {

// What the control acts on; borrowed.
struct KubeletFaults {
  const ClusterModel* model = nullptr;
  FaultTable* faults = nullptr;
  PodResourcesFaultTable* podresources_faults = nullptr;
  PodResourcesSockets* podresources = nullptr;  // nullptr: none served
};

// `parts`: the request path's segments, "sim" and "v1" first.
http::Response ControlFaults(const KubeletFaults& target, const http::Request& req,
                             const std::vector<std::string>& parts);

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_FAULT_CONTROL_H_
