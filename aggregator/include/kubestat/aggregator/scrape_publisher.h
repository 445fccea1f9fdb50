// ScrapePublisher: the scheduler's sink. Ingests every scrape, logs each round and failure,
// appends scrapes to the dump file, and keeps the query snapshot, the self-metrics and the
// gRPC watchers up to date. A failed scrape (whatever its reason, bad_timestamp included) is
// logged and nothing of it is ingested or dumped: the node keeps the data it had. Each
// round's line gives its nodes ok and failed, with the failures by reason:
//   round 7: 19/20 nodes ok, 114 pods, 228 containers, 1 failed (bad_timestamp=1), 0 skipped, ...
//
// That work runs on one thread of its own ("publisher"): after each node's scrape it
// re-reads that node's query views, so the cost of reading the windows is spread over the
// round. It publishes (refreshes the self-metrics, publishes the snapshot and tells the
// watch hub) when a round completes and, while a round is scraping, whenever the
// PublishPacer allows after some node was read, so a node's new samples are served soon
// after its scrape rather than at the round's end. One thread, rather than the scrape workers, so
// that queries compete with one busy thread at most, and so that the views and protos are allocated
// and freed in one malloc arena.
//
// Ownership: borrows everything it is given, which must outlive it; the destructor stops
// and joins the publisher thread.
// Thread-safety: the ScrapeSink calls come from the scheduler's threads; every public
// method is thread-safe.
#ifndef KUBESTAT_AGGREGATOR_SCRAPE_PUBLISHER_H_
#define KUBESTAT_AGGREGATOR_SCRAPE_PUBLISHER_H_

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "absl/status/statusor.h"
#include "kubestat/aggregator/aggregator_health.h"
#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/aggregator/query/publish_pacer.h"
#include "kubestat/aggregator/query/snapshot_source.h"
#include "kubestat/aggregator/query/watch_hub.h"
#include "kubestat/aggregator/self_metrics.h"
#include "kubestat/core/clock.h"
#include "kubestat/scrapers/scheduler.h"
#include "kubestat/storage/store.h"

namespace kubestat::aggregator {

class ScrapePublisher final : public scrapers::ScrapeSink {
 public:
  // `pacer` paces the publications made while a round is scraping.
  ScrapePublisher(const std::string& dump_path, const Clock& clock, Ingestor& ingestor,
                  storage::Store& store, StoreSelfMetrics& metrics, SnapshotSource& snapshot,
                  WatchHub& hub, PublishPacer pacer);
  ~ScrapePublisher() override;
  ScrapePublisher(const ScrapePublisher&) = delete;
  ScrapePublisher& operator=(const ScrapePublisher&) = delete;
  Timestamp last_round_start() const;
  bool dump_ok() const;
  // Tells `health` (not owned; null: nobody) of every ingest and round. Call before the
  // first scrape.
  void SetHealth(AggregatorHealth* health) { health_ = health; }

  void OnScrape(const scrapers::ScrapeTarget& target,
                const absl::StatusOr<scrapers::NodeScrape>& result) override;
  // /livez reads this: a round that is still running (a node timing out holds it until the
  // kubelet timeout) counts from its start, not from the start of the last one to finish.
  void OnRoundStart(uint64_t round, Timestamp start) override;
  // A node the store refused to write is a failed node of the round (reason "store"), though
  // its scrape succeeded: its samples are not kept.
  void OnRoundComplete(const scrapers::RoundSummary& scraped) override;

  // Asks the publisher thread to refresh the self-metrics, publish the query snapshot and
  // update the watch hub as of `tick`; with `reread_all`, the snapshot re-reads every node
  // first (at start) instead of assembling the nodes read after their scrapes. A request
  // made while the previous one is still being carried out is merged into the next: the
  // publisher reads the latest state anyway.
  void RequestPublish(Timestamp tick, bool reread_all);

  // The publication at start: every node re-read, as RequestPublish(tick, true); returns
  // once a snapshot holding a read begun after this call is served (or the publisher is
  // stopping). Before the first round, so that the first snapshot, which /readyz waits
  // for, does not compete with a whole round's scrapes for the cores.
  void PublishAtStart(Timestamp tick);

  // Runs `hook` on the publisher thread after each publish (the REST front end prepares the
  // answers clients asked for lately there, off the request path). Waits for a running call
  // of the previous hook, so once SetPublishedHook(nullptr) returns, no hook runs any more.
  void SetPublishedHook(std::function<void()> hook);

  // Asks the publisher thread to re-read one node's query views (after its scrape, stored
  // at `stored`: kubestat_publish_lag_seconds counts from there).
  void RequestNodeRead(const std::string& node, Timestamp stored);

 private:
  struct NodeToRead {
    std::string name;
    Timestamp stored;
  };

  // RequestPublish's request, with publish_mu_ held.
  void RequestLocked(Timestamp tick, bool reread_all);
  void PublishLoop();
  // Reads the nodes queued now, without publish_mu_ (held on entry and on return).
  void ReadQueuedNodes(std::unique_lock<std::mutex>& lock);
  // Publishes the snapshot as of `tick`, tells the watch hub and the published hook, then
  // does what no reader waits for: frees what the previous publication retired and, at a
  // round's end, refreshes the self-metrics. Publisher thread, without publish_mu_.
  void Publish(Timestamp tick, bool reread_all, PublishTrigger trigger);
  void ReleaseRetired(size_t count);

  const Clock& clock_;
  Ingestor& ingestor_;
  storage::Store& store_;
  StoreSelfMetrics& metrics_;
  SnapshotSource& snapshot_;
  WatchHub& hub_;
  AggregatorHealth* health_ = nullptr;
  std::atomic<size_t> store_failures_{0};  // nodes the store refused since the last round

  mutable std::mutex mu_;
  Timestamp last_round_start_ = kZeroTime;
  std::ofstream dump_;
  std::mutex publish_mu_;
  std::condition_variable publish_cv_;
  std::optional<Timestamp> pending_tick_;
  bool pending_reread_all_ = false;
  uint64_t rereads_requested_ = 0;  // requests to re-read every node, so far
  uint64_t rereads_taken_ = 0;      // of those, the ones the publication being made holds
  uint64_t rereads_published_ = 0;  // of those, the ones a served snapshot holds
  std::mutex hook_mu_;              // held while published_hook_ runs or changes
  std::function<void()> published_hook_;
  // Publisher thread only.
  PublishPacer pacer_;
  uint64_t rounds_published_ = 0;  // publications at start and at round ends
  Timestamp last_memory_count_ = kZeroTime;
  std::vector<std::shared_ptr<const void>> retired_;  // from the watch hub's last round
  size_t next_retired_ = 0;                           // retired_[0, next_retired_) are freed
  size_t release_per_read_ = 1;
  std::vector<NodeToRead> nodes_to_read_;  // in scrape order
  // Publisher thread: when each node read since the last publication was stored.
  std::vector<Timestamp> read_unpublished_;
  std::unordered_set<std::string> nodes_to_read_set_;
  bool stop_publishing_ = false;
  std::thread publisher_;  // last: started once every member above exists
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_SCRAPE_PUBLISHER_H_
