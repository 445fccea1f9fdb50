// SnapshotSource: a MetricsSource that answers from an immutable snapshot of another source,
// taken once per scrape round, so a query costs a lookup plus a copy of what it returns and
// never a pass over the window engine.
//
// Refresh() reads every node and pod of the live source (the engine's windows joined with
// discovery's labels) and publishes them as one snapshot, indexed by node name, by
// (namespace, pod name) and by the node a pod runs on. The aggregator calls it after the
// store is rebuilt and after every scrape round; a reader takes the current snapshot (one
// shared_ptr copy under a short lock) and reads it without holding any lock, so queries
// never wait for a refresh and a refresh never waits for a query. Every list is one
// consistent cut: the state at the end of a round, as metrics-server serves it.
//
// Deletions: RemoveNode / RemovePod publish a copy of the snapshot without that object at
// once, so an object deleted in the kube API leaves the results without waiting for the next
// round. A removal made while a refresh is reading the live source is applied to that
// refresh's result too, so the object cannot come back from a read that raced with it.
//
// Ready(): true once a snapshot was taken while the live source was ready (store rebuilt,
// discovery synced); before that the snapshot may be partial.
//
// Ownership: borrows the live source, which must outlive this object.
// Thread-safety: every method is safe to call from any thread. Refreshes are serialized.
#ifndef KUBESTAT_AGGREGATOR_SNAPSHOT_SOURCE_H_
#define KUBESTAT_AGGREGATOR_SNAPSHOT_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kubestat/aggregator/metrics_source.h"

namespace kubestat::aggregator {

// Counters for /metrics and tests.
struct SnapshotStats {
  uint64_t refreshes = 0;  // Refresh() calls
  uint64_t removals = 0;   // objects removed between refreshes
  size_t nodes = 0;        // objects in the current snapshot
  size_t pods = 0;
};

class SnapshotSource final : public MetricsSource {
 public:
  explicit SnapshotSource(const MetricsSource* live);

  // Reads the live source and publishes what it read.
  void Refresh();
  // Removes one object from the current snapshot at once (no-op when absent).
  void RemoveNode(std::string_view name);
  void RemovePod(std::string_view namespace_name, std::string_view name);

  SnapshotStats Stats() const;

  bool Ready() const override;
  std::vector<NodeView> ListNodes() const override;
  std::optional<NodeView> GetNode(std::string_view name) const override;
  std::vector<PodView> ListPods(std::string_view namespace_name) const override;
  // The current snapshot, shared (never null; empty before the first Refresh()).
  std::shared_ptr<const MetricsSnapshot> Snapshot() const override;
  std::optional<PodView> GetPod(std::string_view namespace_name,
                                std::string_view name) const override;

 private:
  // Removals recorded while a refresh reads the live source.
  struct PendingRemovals {
    std::vector<std::string> nodes;
    std::vector<std::pair<std::string, std::string>> pods;
  };

  const MetricsSource* live_;
  std::mutex refresh_mu_;  // serializes Refresh()
  mutable std::mutex mu_;  // guards everything below; never held while reading live_
  std::shared_ptr<const MetricsSnapshot> current_;
  bool refreshing_ = false;
  PendingRemovals pending_;
  SnapshotStats stats_;  // refreshes and removals; Stats() adds the sizes of current_
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_SNAPSHOT_SOURCE_H_
