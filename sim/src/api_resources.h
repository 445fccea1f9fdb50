// The resources the fake kube-apiserver (fake_apiserver.h) serves: the namespaces (a fixed
// list), the nodes and pods as the kubelets have them (kubelet_view.h), and the LimitRanges
// and ConfigMaps kept here (stored_objects.h); list, get and watch each, and the
// simulator's own changes: a pod's deletion, PUT and DELETE of a stored object.
//
// resourceVersions: everything starts at `initial_version` (InitialResourceVersion());
// every change (a pod's, from the PodWatcher, or a stored object's) is a watch event with
// the next version. The last `watch_history` events are kept for watches resumed from a
// version; an older version, or one never handed out, gets an ERROR event 410 Expired.
//
// Thread-safe. Borrows the view and the clock, which must outlive it, and is the view's
// PodWatcher from construction to destruction.
#ifndef KUBESTAT_SIM_SRC_API_RESOURCES_H_
#define KUBESTAT_SIM_SRC_API_RESOURCES_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "kubelet_view.h"
#include "kubestat/core/clock.h"
#include "kubestat/http/server.h"
#include "kubestat/sim/model.h"
#include "stored_objects.h"
#include "streams.h"

namespace kubestat::sim {

using Query = std::map<std::string, std::string>;

class ApiResources : public PodWatcher {
 public:
  // `seed` makes the stored objects' uids.
  ApiResources(KubeletView& kubelets, const Clock& clock, uint64_t initial_version,
               size_t watch_history, uint64_t seed);
  ~ApiResources() override;  // Stop()
  ApiResources(const ApiResources&) = delete;
  ApiResources& operator=(const ApiResources&) = delete;

  // Keeps `object` as it was at the start (initial_version); before serving.
  void KeepInitial(const StoredKind& kind, StoredObject object);

  // GET /api/v1/namespaces[/{name}].
  http::Response Namespaces(const std::string& name) const;
  // GET /api/v1/nodes[/{name}]: list (labelSelector), get or watch.
  http::Response Nodes(const std::string& name, const Query& query);
  // GET /api/v1[/namespaces/{ns}]/pods[/{name}]: list (labelSelector, fieldSelector
  // spec.nodeName), get or watch; "" for every namespace or every pod.
  http::Response Pods(const std::string& ns, const std::string& name, const Query& query);
  // GET of LimitRanges or ConfigMaps: list (fieldSelector metadata.name=X narrows it, as
  // RBAC's resourceNames need), get or watch, in `ns` ("": every namespace).
  http::Response Stored(const StoredKind& kind, const std::string& ns, const std::string& name,
                        const Query& query);
  // PUT /sim/v1/namespaces/{ns}/{limitranges|configmaps}/{name} creates or replaces one (the
  // body: the object, or its spec or data; 400 Status for another body), DELETE removes it;
  // watchers get ADDED, MODIFIED or DELETED. The answer is the object.
  http::Response ChangeStored(const StoredKind& kind, const http::Request& req,
                              const std::string& ns, const std::string& name);
  // DELETE /sim/v1/namespaces/{ns}/pods/{name} (KubeletView::DeletePod): the answer is the
  // deleted pod, as kube-apiserver answers a deletion without grace period; 404 Status for
  // a pod not running.
  http::Response DeletePod(const std::string& ns, const std::string& name);

  // The resourceVersion lists report now.
  uint64_t CurrentVersion() const;
  // Ends watches whose time is up or whose reader went away; every few milliseconds.
  void ServiceStreams();
  // Ends every watch; watches started later end at once. Idempotent.
  void Stop();

  // PodWatcher.
  void OnPodEvent(std::string_view type, const PodInfo& pod, Timestamp now) override;

 private:
  struct WatchEvent {
    uint64_t resource_version;
    std::string namespace_name;
    std::string node_name;  // a pod's node; a stored object's name
    std::string line;       // the event, newline-terminated
    // The watches it goes to: a pod's, a LimitRange's or a ConfigMap's.
    Stream::Kind kind = Stream::Kind::kPodWatch;
  };
  using Store = std::map<std::string, std::pair<StoredObject, uint64_t>>;

  static bool Matches(const Stream& s, const WatchEvent& ev);
  Timestamp Now() const;
  std::string PodJson(const PodInfo& pod, Timestamp now, uint64_t rv) const;
  std::string NodeJson(int node) const;
  Store& StoreOf(const StoredKind& kind);  // requires mu_
  // Sends an event to the watches it concerns and keeps it for resuming watches.
  void RecordLocked(WatchEvent ev);  // requires mu_
  // The ERROR event (410 Expired) for a watch from `from`, or std::nullopt when the history
  // holds every event after it.
  std::optional<std::string> ExpiredWatchEventLocked(uint64_t from) const;  // requires mu_
  // A watch of `kind`: without a resourceVersion, initial() (the ADDED events of the
  // objects listed at `list_version`) first, then what happened after it; from a
  // resourceVersion, the retained events after it.
  http::Response WatchFrom(Stream::Kind kind, const std::string& ns, const std::string& node_filter,
                           const Query& query, uint64_t list_version,
                           absl::FunctionRef<std::string()> initial);

  KubeletView& kubelets_;
  const Clock& clock_;
  const uint64_t initial_version_;
  const size_t watch_history_;
  const uint64_t seed_;
  StreamSet watches_;

  mutable std::mutex mu_;
  uint64_t resource_version_;           // guarded by mu_
  uint64_t oldest_retained_;            // guarded by mu_
  std::deque<WatchEvent> history_;      // guarded by mu_
  std::vector<uint64_t> slot_version_;  // per global slot; guarded by mu_
  // LimitRanges and ConfigMaps by "namespace/name", each with the resourceVersion of its
  // last change; guarded by mu_.
  Store limit_ranges_;
  Store config_maps_;
};

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_API_RESOURCES_H_
