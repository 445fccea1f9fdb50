// SnapshotSource: a MetricsSource that answers from an immutable snapshot of another source,
// published at each scrape round's end and, paced, while a round scrapes, so a query costs a lookup
// plus a copy of what it returns and never a pass over the window engine.
//
// The snapshot is assembled from per-node parts: each node's view and the views of the pods
// it reported (NodeObjects). RefreshNode() re-reads one node's part from the live source; the
// aggregator calls it (on one thread of its own) right after that node's scrape is ingested,
// so the cost of reading the windows is spread over the round instead of paid at its end.
// Publish() assembles the current parts into one snapshot, indexed by node name, by
// (namespace, pod name) and by the node a pod runs on. The pods of parts unchanged since the
// previous assembly keep their places, a part read again with the same pods puts them in its
// predecessor's pods' places, and only the pods of the other changed parts are sorted and
// merged in, so a publication is pointer work over the pods plus a sort of what came or went
// (a whole assembly again only after one that found a pod reported by two nodes); the
// aggregator calls it when a round
// completes and, as its PublishPacer allows, while one scrapes. Refresh() re-reads every node and
// publishes (at start, after the rebuild). A node whose scrape failed keeps the part read last, as
// its windows have not changed. A pod reported by two nodes at once (it moved) is listed once, from
// the first node by name.
//
// A reader takes the current snapshot (one shared_ptr copy under a short lock) and reads it
// without holding any lock, so queries never wait for a refresh and a refresh never waits for
// a query. Every list is one consistent cut: each node as of its last scrape.
//
// Deletions: RemoveNode / RemovePod drop the object from the parts at once (a pod from its
// node's part alone when the node is named), and it leaves the served snapshot at the next
// Publish(), which the aggregator makes within its publish interval while nodes are scraped
// and at every round's end. A burst of deletions (pods churning in a large cluster) so costs
// one assembly, never a copy of the whole snapshot per object. A removal made while a read of
// the live source is in flight is applied to that read's result too, so the object cannot
// come back from a read that raced with it. A part read earlier never replaces one read later.
//
// Ready(): true once a snapshot was published while the live source was ready (store
// rebuilt, discovery synced).
//
// Ownership: borrows the live source, which must outlive this object.
// Thread-safety: every method is safe to call from any thread.
#ifndef KUBESTAT_AGGREGATOR_QUERY_SNAPSHOT_SOURCE_H_
#define KUBESTAT_AGGREGATOR_QUERY_SNAPSHOT_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kubestat/aggregator/query/metrics_source.h"

namespace kubestat::aggregator {

// Counters for /metrics and tests.
struct SnapshotStats {
  uint64_t refreshes = 0;              // Refresh() calls
  uint64_t node_refreshes = 0;         // RefreshNode() calls
  uint64_t publishes = 0;              // snapshots assembled (Publish() and Refresh())
  uint64_t incremental_publishes = 0;  // of them, made from the previous one's unchanged parts
  // Parts read again whose pods took their predecessors' places in an incremental publication
  // (the same pods, so none of them was sorted or merged).
  uint64_t parts_in_place = 0;
  uint64_t removals = 0;              // RemoveNode() and RemovePod() calls
  bool removals_unpublished = false;  // some removal is not yet in the served snapshot
  size_t nodes = 0;                   // objects in the current snapshot
  size_t pods = 0;
};

class SnapshotSource final : public MetricsSource {
 public:
  // `incremental` false: every publication assembles every part anew (a reference for
  // tests and benchmarks).
  explicit SnapshotSource(const MetricsSource* live, bool incremental = true);

  // Re-reads every node of the live source and publishes.
  void Refresh();
  // Re-reads one node's objects (dropping them when the live source no longer knows the
  // node); they show at the next Publish().
  void RefreshNode(std::string_view node);
  // Publishes the parts read so far as one snapshot.
  void Publish();
  // Removes one object from the parts read (no-op when absent); it leaves the served
  // snapshot at the next Publish(). A node takes the pods it reported with it. A pod is
  // removed from `node`'s part alone when `node` is given (the deleted pod's spec.nodeName),
  // so a new pod of the same name on another node stays; without it, from every part.
  void RemoveNode(std::string_view name);
  void RemovePod(std::string_view namespace_name, std::string_view name,
                 std::string_view node = {});

  SnapshotStats Stats() const;

  bool Ready() const override;
  std::vector<metrics_api::NodeMetrics> ListNodes() const override;
  std::optional<metrics_api::NodeMetrics> GetNode(std::string_view name) const override;
  std::vector<metrics_api::PodMetrics> ListPods(std::string_view namespace_name) const override;
  // The current snapshot, shared (never null; empty before the first Refresh()).
  std::shared_ptr<const MetricsSnapshot> Snapshot() const override;
  std::optional<metrics_api::PodMetrics> GetPod(std::string_view namespace_name,
                                                std::string_view name) const override;

 private:
  // A node's part: what was read, and when (the order in which reads started).
  struct Part {
    uint64_t read = 0;
    std::shared_ptr<const NodeObjects> objects;
  };
  // A removal, kept while a read that started before it is in flight.
  struct Removal {
    uint64_t seq = 0;
    bool node = false;           // a node (name) or a pod (namespace_name, name)
    std::string namespace_name;  // empty for a node
    std::string name;
    std::string pod_node;  // a pod's node when the removal named it
  };
  // A read of the live source (or of the parts) in flight.
  struct Read {
    uint64_t order = 0;     // reads started before it, plus one
    uint64_t removals = 0;  // removals made before it started
  };

  Read BeginRead();                // mu_ held
  void EndRead(const Read& read);  // mu_ held
  // Applies the removals made since `read` began to one node's objects; false when the node
  // itself was removed.
  bool ApplyRemovals(const Read& read, NodeObjects* objects) const;  // mu_ held
  // Stores a part (or drops it when `objects` is empty or the node was removed) unless a later
  // read already stored one; returns the part replaced, to be freed after the lock.
  std::shared_ptr<const NodeObjects> Store(const Read& read, std::string_view node,
                                           std::optional<NodeObjects> objects);  // mu_ held
  void PublishParts(bool complete);
  // One snapshot from `parts` (in node-name order); keeps them as the next one's base.
  // publish_mu_ held.
  std::shared_ptr<MetricsSnapshot> Assemble(bool complete,
                                            std::vector<std::shared_ptr<const NodeObjects>> parts);

  // What the last assembly was made of: its parts and, for each pod it listed, the index of
  // the part it came from, so the next one keeps the pods of unchanged parts in place and
  // sorts only the changed parts' pods. Guarded by publish_mu_.
  struct Assembled {
    bool valid = false;
    bool dropped_duplicates = false;  // a pod reported by two parts: the next is made whole
    bool last_incremental = false;
    uint64_t parts_in_place = 0;  // SnapshotStats::parts_in_place
    std::vector<std::shared_ptr<const NodeObjects>> parts;
    std::vector<metrics_api::PodRef> pods;  // into `parts`
    std::vector<uint32_t> sources;          // parallel to pods: index into parts
  };

  const MetricsSource* live_;
  const bool incremental_;
  std::mutex publish_mu_;  // serializes Publish() so snapshots are published in order
  Assembled assembled_;    // guarded by publish_mu_
  mutable std::mutex mu_;  // guards everything below; never held while reading live_
  std::shared_ptr<const MetricsSnapshot> current_;
  std::map<std::string, Part, std::less<>> parts_;  // by node name
  uint64_t reads_ = 0;
  uint64_t removal_seq_ = 0;
  std::multiset<uint64_t> reads_in_flight_;  // their Read::removals
  std::vector<Removal> removals_;            // newer than the oldest read in flight
  bool removals_unpublished_ = false;
  SnapshotStats stats_;  // counters; Stats() adds the sizes of current_
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_QUERY_SNAPSHOT_SOURCE_H_
