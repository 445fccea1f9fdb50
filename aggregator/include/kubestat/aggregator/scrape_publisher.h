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

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "kubestat/aggregator/aggregator_health.h"
#include "kubestat/aggregator/ingest.h"
#include "kubestat/aggregator/publish_pacer.h"
#include "kubestat/aggregator/scrape_dump.h"
#include "kubestat/aggregator/self_metrics.h"
#include "kubestat/aggregator/snapshot_source.h"
#include "kubestat/aggregator/watch_hub.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/log.h"
#include "kubestat/core/thread.h"
#include "kubestat/core/time.h"
#include "kubestat/scrapers/scheduler.h"
#include "kubestat/storage/store.h"

namespace kubestat::aggregator {

class ScrapePublisher final : public scrapers::ScrapeSink {
 public:
  // `pacer` paces the publications made while a round is scraping.
  ScrapePublisher(const std::string& dump_path, const Clock& clock, Ingestor& ingestor,
                  storage::Store& store, StoreSelfMetrics& metrics, SnapshotSource& snapshot,
                  WatchHub& hub, PublishPacer pacer)
      : clock_(clock),
        ingestor_(ingestor),
        store_(store),
        metrics_(metrics),
        snapshot_(snapshot),
        hub_(hub),
        pacer_(pacer) {
    if (!dump_path.empty()) dump_.open(dump_path, std::ios::app);
    publisher_ = std::thread([this] {
      NameThisThread("publisher");
      PublishLoop();
    });
  }
  ~ScrapePublisher() override {
    {
      std::lock_guard<std::mutex> lock(publish_mu_);
      stop_publishing_ = true;
    }
    publish_cv_.notify_all();
    publisher_.join();
  }
  ScrapePublisher(const ScrapePublisher&) = delete;
  ScrapePublisher& operator=(const ScrapePublisher&) = delete;
  Timestamp last_round_start() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_round_start_;
  }
  bool dump_ok() const { return !dump_.is_open() || dump_.good(); }
  // Tells `health` (not owned; null: nobody) of every ingest and round. Call before the
  // first scrape.
  void SetHealth(AggregatorHealth* health) { health_ = health; }

  void OnScrape(const scrapers::ScrapeTarget& target,
                const absl::StatusOr<scrapers::NodeScrape>& result) override {
    if (!result.ok()) {
      KVLOG(1) << "scrape " << target.node_name << " (" << target.HostPort()
               << ") failed: " << result.status();
      return;
    }
    if (!result->issues.empty()) {
      KVLOG(1) << "scrape " << target.node_name << ": " << result->issues.Total()
               << " values rejected: " << result->issues.Summary();
    }
    const absl::Status ingested = ingestor_.Ingest(*result);
    if (!ingested.ok()) KLOG(WARNING) << "ingest " << target.node_name << ": " << ingested;
    if (health_ != nullptr) health_->RecordIngest(ingested);
    if (AggregatorHealth::IsStoreFailure(ingested)) {
      store_failures_.fetch_add(1, std::memory_order_relaxed);
    }
    // The publisher reads this node's views soon, so the round's end only assembles them (a
    // failed ingest may still have changed some series).
    RequestNodeRead(result->node_name, clock_.Now());
    if (dump_.is_open()) {
      std::string line = ScrapeDumpLine(target, *result, clock_.Now());
      std::lock_guard<std::mutex> lock(mu_);
      dump_ << line << '\n';
      dump_.flush();
    }
  }

  // /livez reads this: a round that is still running (a node timing out holds it until the
  // kubelet timeout) counts from its start, not from the start of the last one to finish.
  void OnRoundStart(uint64_t round, Timestamp start) override {
    (void)round;
    std::lock_guard<std::mutex> lock(mu_);
    last_round_start_ = std::max(last_round_start_, start);
  }

  void OnRoundComplete(const scrapers::RoundSummary& scraped) override {
    // A node the store refused to write is a failed node of the round (reason "store"),
    // though its scrape succeeded: its samples are not kept.
    scrapers::RoundSummary r = scraped;
    const size_t unstored =
        std::min(store_failures_.exchange(0, std::memory_order_relaxed), r.succeeded);
    if (unstored > 0) {
      r.succeeded -= unstored;
      r.failed += unstored;
      r.failures_by_reason["store"] += unstored;
    }
    std::ostringstream failures;
    for (const auto& [reason, count] : r.failures_by_reason)
      failures << ' ' << reason << '=' << count;
    KLOG(INFO) << "round " << r.round << ": " << r.succeeded << "/" << r.targets << " nodes ok, "
               << r.pods << " pods, " << r.containers << " containers, " << r.failed << " failed"
               << (r.failed > 0 ? " (" + failures.str().substr(1) + ")" : "") << ", " << r.skipped
               << " skipped, took " << std::chrono::duration<double>(r.duration).count() << "s";
    if (health_ != nullptr) health_->RecordRound(r);
    RequestPublish(r.start + r.duration, /*reread_all=*/false);
  }

  // Asks the publisher thread to refresh the self-metrics, publish the query snapshot and
  // update the watch hub as of `tick`; with `reread_all`, the snapshot re-reads every node
  // first (at start) instead of assembling the nodes read after their scrapes. A request
  // made while the previous one is still being carried out is merged into the next: the
  // publisher reads the latest state anyway.
  void RequestPublish(Timestamp tick, bool reread_all) {
    {
      std::lock_guard<std::mutex> lock(publish_mu_);
      RequestLocked(tick, reread_all);
    }
    publish_cv_.notify_all();
  }

  // The publication at start: every node re-read, as RequestPublish(tick, true); returns
  // once a snapshot holding a read begun after this call is served (or the publisher is
  // stopping). Before the first round, so that the first snapshot, which /readyz waits
  // for, does not compete with a whole round's scrapes for the cores.
  void PublishAtStart(Timestamp tick) {
    std::unique_lock<std::mutex> lock(publish_mu_);
    RequestLocked(tick, /*reread_all=*/true);
    const uint64_t mine = rereads_requested_;
    publish_cv_.notify_all();
    publish_cv_.wait(lock, [&] { return stop_publishing_ || rereads_published_ >= mine; });
  }

  // Runs `hook` on the publisher thread after each publish (the REST front end prepares the
  // answers clients asked for lately there, off the request path). Waits for a running call
  // of the previous hook, so once SetPublishedHook(nullptr) returns, no hook runs any more.
  void SetPublishedHook(std::function<void()> hook) {
    std::lock_guard<std::mutex> lock(hook_mu_);
    published_hook_ = std::move(hook);
  }

  // Asks the publisher thread to re-read one node's query views (after its scrape, stored
  // at `stored`: kubestat_publish_lag_seconds counts from there).
  void RequestNodeRead(const std::string& node, Timestamp stored) {
    {
      std::lock_guard<std::mutex> lock(publish_mu_);
      if (!nodes_to_read_set_.insert(node).second) return;
      nodes_to_read_.push_back({node, stored});
    }
    publish_cv_.notify_all();
  }

 private:
  const Clock& clock_;
  Ingestor& ingestor_;
  storage::Store& store_;
  StoreSelfMetrics& metrics_;
  SnapshotSource& snapshot_;
  WatchHub& hub_;
  AggregatorHealth* health_ = nullptr;
  std::atomic<size_t> store_failures_{0};  // nodes the store refused since the last round
  // RequestPublish's request, with publish_mu_ held.
  void RequestLocked(Timestamp tick, bool reread_all) {
    pending_tick_ = tick;
    pending_reread_all_ = pending_reread_all_ || reread_all;
    if (reread_all) ++rereads_requested_;
  }

  void PublishLoop() {
    std::unique_lock<std::mutex> lock(publish_mu_);
    while (true) {
      publish_cv_.wait(lock, [this] {
        return stop_publishing_ || pending_tick_.has_value() || !nodes_to_read_.empty();
      });
      if (stop_publishing_) return;
      if (!pending_tick_) {
        ReadQueuedNodes(lock);
        if (pending_tick_) continue;  // a round ended meanwhile: its publication comes next
        // Mid-round: what was read is served now if the pacer allows; otherwise by a later
        // read's publication or the round's end, whichever comes first.
        if (const Timestamp now = clock_.Now(); pacer_.Due(now)) {
          lock.unlock();
          Publish(now, false, PublishTrigger::kPaced);
          lock.lock();
        }
        continue;
      }
      // A round ended. The nodes queued by now (its last ones among them) are read first, so
      // its publication holds every node of its round; nodes queued later wait for the next
      // batch, so a steady stream of scrapes can never hold a round's publication back.
      ReadQueuedNodes(lock);
      const Timestamp tick = *pending_tick_;
      const bool reread_all = std::exchange(pending_reread_all_, false);
      if (reread_all) rereads_taken_ = rereads_requested_;
      pending_tick_.reset();
      lock.unlock();
      Publish(tick, reread_all, reread_all ? PublishTrigger::kStart : PublishTrigger::kRound);
      lock.lock();
    }
  }

  // Reads the nodes queued now, without publish_mu_ (held on entry and on return).
  void ReadQueuedNodes(std::unique_lock<std::mutex>& lock) {
    if (nodes_to_read_.empty()) return;
    std::vector<NodeToRead> nodes;
    nodes.swap(nodes_to_read_);
    nodes_to_read_set_.clear();
    lock.unlock();
    for (const NodeToRead& node : nodes) {
      snapshot_.RefreshNode(node.name);
      read_unpublished_.push_back(node.stored);
      ReleaseRetired(release_per_read_);
    }
    lock.lock();
  }

  // Publishes the snapshot as of `tick`, tells the watch hub and the published hook, then
  // does what no reader waits for: frees what the previous publication retired and, at a
  // round's end, refreshes the self-metrics. Publisher thread, without publish_mu_.
  void Publish(Timestamp tick, bool reread_all, PublishTrigger trigger) {
    const Timestamp start = clock_.Now();
    const Duration cpu_start = ThreadCpuTime();
    metrics_.CountPublish(trigger);
    if (reread_all) {
      snapshot_.Refresh();
    } else {
      snapshot_.Publish();
    }
    if (reread_all) {
      // PublishAtStart waits for this, not for the watch hub, the hook or the self-metrics.
      {
        std::lock_guard<std::mutex> lock(publish_mu_);
        rereads_published_ = rereads_taken_;
      }
      publish_cv_.notify_all();
    }
    metrics_.ObserveSnapshot(clock_.Now() - start, snapshot_.Stats());
    std::vector<std::shared_ptr<const void>> retired = hub_.OnRound(tick);
    {
      // After the watch hub, so watchers hear of the changes first.
      std::lock_guard<std::mutex> hook_lock(hook_mu_);
      if (published_hook_) published_hook_();
    }
    const Timestamp published = clock_.Now();
    for (const Timestamp stored : read_unpublished_) metrics_.ObservePublishLag(published - stored);
    read_unpublished_.clear();
    // What the watch hub let go of is freed over the next reads, between node reads; what
    // is left of the previous publication's is freed now, after readers were served.
    ReleaseRetired(retired_.size() - next_retired_);
    retired_ = std::move(retired);
    next_retired_ = 0;
    release_per_read_ = retired_.size() / std::max<size_t>(1, snapshot_.Stats().nodes) + 1;
    // The pacer weighs the publication alone: the self-metrics below are a round's duty,
    // and their memory count (a pass over every series once a minute) would otherwise hold
    // the next publications back for ten times its cost.
    pacer_.Record(start, ThreadCpuTime() - cpu_start);
    // The self-metrics (a scan of the store's directory among them) once per round, not at
    // every paced publication. The memory accounting is a pass over every series: once a
    // minute is enough, after the first round's.
    if (trigger != PublishTrigger::kPaced) {
      std::optional<MemoryFigures> memory;
      if (rounds_published_ < 2 || start - last_memory_count_ >= kMemoryCountEvery) {
        memory = CountMemory(ingestor_, store_, clock_);
        last_memory_count_ = start;
      }
      ++rounds_published_;
      metrics_.Update(ingestor_.Stats(), store_.Stats(), store_.DiskBytes(), memory);
    }
    const Timestamp end = clock_.Now();
    metrics_.ObservePublishDuration(end - start);
  }

  void ReleaseRetired(size_t count) {
    for (; count > 0 && next_retired_ < retired_.size(); --count) retired_[next_retired_++].reset();
  }

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
  static constexpr Duration kMemoryCountEvery = std::chrono::minutes(1);
  uint64_t rounds_published_ = 0;  // publications at start and at round ends
  Timestamp last_memory_count_ = kZeroTime;
  std::vector<std::shared_ptr<const void>> retired_;  // from the watch hub's last round
  size_t next_retired_ = 0;                           // retired_[0, next_retired_) are freed
  size_t release_per_read_ = 1;
  struct NodeToRead {
    std::string name;
    Timestamp stored;
  };
  std::vector<NodeToRead> nodes_to_read_;  // in scrape order
  // Publisher thread: when each node read since the last publication was stored.
  std::vector<Timestamp> read_unpublished_;
  std::unordered_set<std::string> nodes_to_read_set_;
  bool stop_publishing_ = false;
  std::thread publisher_;  // last: started once every member above exists
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_SCRAPE_PUBLISHER_H_
