// What the fake kube-apiserver (fake_apiserver.h) reads from the kubelets (kubelets.h): the
// nodes, where their kubelets listen, the pods they run now, and every change of those pods.
//
// Lock order: an implementation calls the PodWatcher, and the functions given to ReadPods()
// and DeletePod(), with its own lock held: they may take locks of their own, and must not
// call back into the view. Thread-safe.
#ifndef KUBESTAT_SIM_SRC_KUBELET_VIEW_H_
#define KUBESTAT_SIM_SRC_KUBELET_VIEW_H_

#include <span>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "kubestat/core/clock.h"
#include "kubestat/sim/model.h"
#include "kubestat/sim/render.h"

namespace kubestat::sim {

class PodWatcher {
 public:
  virtual ~PodWatcher() = default;
  // `pod` was "ADDED", "MODIFIED" (a container restarted) or "DELETED" at `now` (quantized),
  // in the order the changes happened.
  virtual void OnPodEvent(std::string_view type, const PodInfo& pod, Timestamp now) = 0;
};

class KubeletView {
 public:
  virtual ~KubeletView() = default;

  // The nodes and their pods' specifications; lives as long as the view.
  virtual const ClusterModel& model() const = 0;
  // Where node `node`'s kubelet listens.
  virtual KubeletEndpoint endpoint(int node) const = 0;
  // Calls `read` once with the pods running now on the node named `node_name` ("": on
  // every node), node by node in slot order. No pod changes while it runs.
  virtual void ReadPods(std::string_view node_name,
                        absl::FunctionRef<void(std::span<const PodInfo>)> read) const = 0;
  // Deletes the pod `name` running now in namespace `ns` as its controller's pod is deleted
  // (ClusterModel::DeletePod): `deleting` sees it and the time of the deletion first, then
  // the watcher hears DELETED for it and ADDED for its replacement. False, and nothing
  // changes, when no such pod runs.
  virtual bool DeletePod(std::string_view ns, std::string_view name,
                         absl::FunctionRef<void(const PodInfo& pod, Timestamp now)> deleting) = 0;
  // The one watcher of pod changes; nullptr: none. Borrowed until replaced.
  virtual void SetPodWatcher(PodWatcher* watcher) = 0;
};

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_KUBELET_VIEW_H_
