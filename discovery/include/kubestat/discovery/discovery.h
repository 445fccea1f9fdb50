// Discovery: which nodes exist (to scrape) and which pods (for labels and deletions).
//
// A Discovery keeps a thread-safe snapshot of the cluster: nodes by name (addresses,
// kubelet port, labels), pods by namespace/name (uid, labels, node, phase, whether
// terminating, containers' requests and limits, owner) and LimitRanges by namespace/name,
// plus a `synced` flag that turns true once the first full list of every
// watched resource has been applied. Listeners registered before Start() are told of every
// change (added, modified, deleted) and of the first sync.
//
// Two implementations:
//  - StaticDiscovery: a fixed node list (`--static-nodes=name=host:port,...`), no pods;
//    synced as soon as it starts. For tests and single-node setups.
//  - KubeApiDiscovery: list+watch of /api/v1/nodes, /api/v1/pods and /api/v1/limitranges
//    on the kube API
//    (kubeconfig.h gives the server and credentials). Lists are paginated (limit/continue).
//    A watch that ends or breaks is resumed from the last resourceVersion seen (an event's
//    or a bookmark's), so no change is missed; when the server answers 410 Gone (that
//    version is too old), the resource is listed again and the differences from the
//    snapshot are emitted as events, deletions included. Errors are retried after
//    `retry_backoff`; they never stop discovery.
//
// Threads: each watched resource has its own thread. Listener callbacks run on those
// threads, without any Discovery lock held (they may read the snapshot); callbacks for one
// resource are delivered in order. The read functions may be called from any thread.
#ifndef KUBESTAT_DISCOVERY_DISCOVERY_H_
#define KUBESTAT_DISCOVERY_DISCOVERY_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/time.h"
#include "kubestat/discovery/cluster_objects.h"
#include "kubestat/kube/kubeconfig.h"

namespace kubestat::discovery {

enum class ChangeType { kAdded, kModified, kDeleted };

// "ADDED", "MODIFIED", "DELETED".
std::string_view ChangeTypeName(ChangeType type);

class ClusterListener {
 public:
  virtual ~ClusterListener() = default;
  virtual void OnNodeChange(ChangeType type, const NodeInfo& node) { (void)type, (void)node; }
  virtual void OnPodChange(ChangeType type, const PodInfo& pod) { (void)type, (void)pod; }
  virtual void OnLimitRangeChange(ChangeType type, const LimitRangeInfo& limit_range) {
    (void)type, (void)limit_range;
  }
  // Once, when every watched resource has been listed for the first time.
  virtual void OnSynced() {}
};

// Counters of what discovery did (for tests, logs and metrics).
struct DiscoveryStats {
  uint64_t lists = 0;  // full lists (first list and relists)
  uint64_t relists_after_gone = 0;
  uint64_t watches = 0;         // watch requests started
  uint64_t events = 0;          // watch events applied
  uint64_t errors = 0;          // failed list/watch requests and undecodable events
  uint64_t bad_quantities = 0;  // requests, limits or LimitRange values that are no Quantity
};

// Whether discovery's peer, the kube API, answers. A resource's state changes with each
// request: an answer (a list read, a watch opened, an event) clears it, a failed request
// (no answer, or an error answer) marks it failing from that time on, until the next answer.
struct KubeApiContact {
  // When the resource that has failed longest first failed since its last answer; kZeroTime
  // while every resource's latest request was answered (always, for StaticDiscovery).
  Timestamp failing_since = kZeroTime;
  // That resource's newest failure ("GET /api/v1/nodes: connect: ..."); "" while answering.
  std::string last_error;
};

class Discovery {
 public:
  virtual ~Discovery();
  // Registers a listener (not owned; must outlive the Discovery). Call before Start().
  void AddListener(ClusterListener* listener);
  virtual void Start() = 0;
  // Stops the watches and joins their threads. Idempotent.
  virtual void Stop() = 0;

  bool synced() const;
  // Waits (in real time) until synced or `timeout` passes; returns synced().
  bool WaitForSync(std::chrono::milliseconds timeout) const;
  std::vector<NodeInfo> Nodes() const;
  std::optional<NodeInfo> Node(std::string_view name) const;
  // A node's labels, shared with discovery's copy; std::nullopt for a node it does not know.
  std::optional<SharedLabels> NodeLabelsOf(std::string_view name) const;
  std::vector<PodInfo> Pods() const;
  std::optional<PodInfo> Pod(std::string_view namespace_name, std::string_view name) const;
  // The labels, node and containers of each of `pods`, in the same order; std::nullopt for a
  // pod discovery does not know. For reads of many pods at once (a node's): the lock is
  // taken once for the whole batch, and only those fields are copied, where Pod() per pod
  // locks each time and copies the whole PodInfo. The labels and the declared containers
  // are shared with discovery's copy, not copied.
  std::vector<std::optional<PodLabelsInfo>> PodLabelsOf(std::span<const PodNameRef> pods) const;
  // The LimitRanges of a namespace, in name order.
  std::vector<LimitRangeInfo> LimitRanges(std::string_view namespace_name) const;
  size_t node_count() const;
  size_t pod_count() const;
  DiscoveryStats stats() const;
  KubeApiContact kube_api_contact() const;

 protected:
  // For implementations: apply one change / a full list (emitting the differences), and
  // mark a resource listed. Never call with a lock held.
  void ApplyNode(ChangeType type, NodeInfo node);
  void ApplyPod(ChangeType type, PodInfo pod);
  void ReplaceNodes(std::vector<NodeInfo> nodes);
  void ReplacePods(std::vector<PodInfo> pods);
  void ApplyLimitRange(ChangeType type, LimitRangeInfo limit_range);
  void ReplaceLimitRanges(std::vector<LimitRangeInfo> limit_ranges);
  // Marks resource number `resource` (0..31) listed; synced once every resource in
  // 0..resources-1 has been.
  void MarkListed(int resource, int resources);
  void CountStat(uint64_t DiscoveryStats::*field);
  // Resource number `resource` (as MarkListed's) was answered / failed at `now`.
  void RecordAnswer(int resource);
  void RecordFailure(int resource, Timestamp now, std::string error);

 private:
  // Tells every listener, without mu_ held.
  template <typename Tell>
  void Emit(const Tell& tell);

  mutable std::mutex mu_;
  mutable std::condition_variable synced_cv_;
  std::map<std::string, NodeInfo, std::less<>> nodes_;
  // key: namespace/name. Hashed: a node's read looks up each of its pods, and a lookup in
  // an ordered map of 150,000 pods is some twenty cache misses.
  absl::flat_hash_map<std::string, PodInfo> pods_;
  std::map<std::string, LimitRangeInfo, std::less<>> limit_ranges_;  // key: namespace/name
  uint32_t listed_ = 0;  // bit i: resource i has been listed
  bool sync_announced_ = false;
  bool synced_ = false;
  DiscoveryStats stats_;
  std::map<int, KubeApiContact> contact_;  // by resource; only failing ones are kept
  std::vector<ClusterListener*> listeners_;
};

// Parses `--static-nodes`: "name=host:port,name=host" (host may be a name, an IPv4 address
// or a bracketed IPv6 address; without a port the node reports none). An IP host becomes an
// InternalIP address, a name a Hostname address. InvalidArgument naming the bad entry.
[[nodiscard]] absl::StatusOr<std::vector<NodeInfo>> ParseStaticNodes(std::string_view spec);

class StaticDiscovery final : public Discovery {
 public:
  explicit StaticDiscovery(std::vector<NodeInfo> nodes) : initial_(std::move(nodes)) {}
  void Start() override;
  void Stop() override {}

 private:
  std::vector<NodeInfo> initial_;
};

struct KubeApiDiscoveryOptions {
  // Also list and watch pods. Default: true
  bool watch_pods = true;
  // Also list and watch LimitRanges (for recommendations the namespace admits).
  // Default: true
  bool watch_limit_ranges = true;
  // timeoutSeconds asked of each watch; the server ends the watch then and it is resumed.
  // Default: 5m
  Duration watch_timeout = std::chrono::minutes(5);
  // Wait after a failed request before retrying. Default: 1s
  Duration retry_backoff = std::chrono::seconds(1);
  // Items per list page (limit=). Default: 500
  int list_page_size = 500;
  // Deadline for one list page. Default: 60s
  Duration request_timeout = std::chrono::seconds(60);
  // Largest list page or watch event accepted. Default: 256 MiB
  size_t max_response_bytes = 256u << 20;

  [[nodiscard]] absl::Status Validate() const;
};

class KubeApiDiscovery final : public Discovery {
 public:
  // InvalidArgument for bad options or unusable TLS material. Request deadlines (a list
  // page's request_timeout, a watch's wait for its response head) run on `clock`, which
  // must outlive the discovery.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<KubeApiDiscovery>> Create(
      kube::KubeApiConfig config, KubeApiDiscoveryOptions options, const Clock& clock);
  ~KubeApiDiscovery() override;
  void Start() override;
  void Stop() override;

  // The resourceVersion each resource's watch resumes from ("" before the first list).
  std::string node_resource_version() const;
  std::string pod_resource_version() const;
  std::string limit_range_resource_version() const;

 private:
  struct Impl;
  explicit KubeApiDiscovery(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kubestat::discovery

#endif  // KUBESTAT_DISCOVERY_DISCOVERY_H_
