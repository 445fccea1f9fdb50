#include "kubestat/aggregator/scrape_publisher.h"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <utility>

#include "kubestat/aggregator/scrape_dump.h"
#include "kubestat/core/log.h"
#include "kubestat/core/thread.h"
#include "kubestat/core/time.h"

namespace kubestat::aggregator {

namespace {

// The memory accounting is a pass over every series: once a minute is enough.
constexpr Duration kMemoryCountEvery = std::chrono::minutes(1);

}  // namespace

ScrapePublisher::ScrapePublisher(const std::string& dump_path, const Clock& clock,
                                 Ingestor& ingestor, storage::Store& store,
                                 StoreSelfMetrics& metrics, SnapshotSource& snapshot, WatchHub& hub,
                                 PublishPacer pacer)
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

ScrapePublisher::~ScrapePublisher() {
  {
    std::lock_guard<std::mutex> lock(publish_mu_);
    stop_publishing_ = true;
  }
  publish_cv_.notify_all();
  publisher_.join();
}

Timestamp ScrapePublisher::last_round_start() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_round_start_;
}

bool ScrapePublisher::dump_ok() const { return !dump_.is_open() || dump_.good(); }

void ScrapePublisher::OnScrape(const scrapers::ScrapeTarget& target,
                               const absl::StatusOr<scrapers::NodeScrape>& result) {
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

void ScrapePublisher::OnRoundStart(uint64_t round, Timestamp start) {
  (void)round;
  std::lock_guard<std::mutex> lock(mu_);
  last_round_start_ = std::max(last_round_start_, start);
}

void ScrapePublisher::OnRoundComplete(const scrapers::RoundSummary& scraped) {
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

void ScrapePublisher::RequestPublish(Timestamp tick, bool reread_all) {
  {
    std::lock_guard<std::mutex> lock(publish_mu_);
    RequestLocked(tick, reread_all);
  }
  publish_cv_.notify_all();
}

void ScrapePublisher::PublishAtStart(Timestamp tick) {
  std::unique_lock<std::mutex> lock(publish_mu_);
  RequestLocked(tick, /*reread_all=*/true);
  const uint64_t mine = rereads_requested_;
  publish_cv_.notify_all();
  publish_cv_.wait(lock, [&] { return stop_publishing_ || rereads_published_ >= mine; });
}

void ScrapePublisher::SetPublishedHook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(hook_mu_);
  published_hook_ = std::move(hook);
}

void ScrapePublisher::RequestNodeRead(const std::string& node, Timestamp stored) {
  {
    std::lock_guard<std::mutex> lock(publish_mu_);
    if (!nodes_to_read_set_.insert(node).second) return;
    nodes_to_read_.push_back({node, stored});
  }
  publish_cv_.notify_all();
}

void ScrapePublisher::RequestLocked(Timestamp tick, bool reread_all) {
  pending_tick_ = tick;
  pending_reread_all_ = pending_reread_all_ || reread_all;
  if (reread_all) ++rereads_requested_;
}

void ScrapePublisher::PublishLoop() {
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

void ScrapePublisher::ReadQueuedNodes(std::unique_lock<std::mutex>& lock) {
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

void ScrapePublisher::Publish(Timestamp tick, bool reread_all, PublishTrigger trigger) {
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
  // every paced publication; the memory accounting once a minute, after the first round's.
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

void ScrapePublisher::ReleaseRetired(size_t count) {
  for (; count > 0 && next_retired_ < retired_.size(); --count) retired_[next_retired_++].reset();
}

}  // namespace kubestat::aggregator
