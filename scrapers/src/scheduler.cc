#include "kubestat/scrapers/scheduler.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kubestat/core/thread.h"
#include "kubestat/scrapers/fetch_error.h"

namespace kubestat::scrapers {
namespace {

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

// FNV-1a, 64 bit: stable across runs and platforms (std::hash is not).
uint64_t StableHash(std::string_view text) {
  uint64_t hash = 1469598103934665603ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  // Final avalanche so that names differing in the last byte spread over the window.
  hash ^= hash >> 33;
  hash *= 0xff51afd7ed558ccdULL;
  hash ^= hash >> 33;
  return hash;
}

// How long the timer waits at most before re-reading the clock (for clocks that move
// without notifying, such as FakeClock).
constexpr auto kClockPoll = std::chrono::milliseconds(50);

constexpr auto kMaxTick = std::chrono::milliseconds(20);

}  // namespace

absl::Status SchedulerOptions::Validate() const {
  if (resolution <= Duration::zero()) {
    return absl::InvalidArgumentError("--metric-resolution: must be positive");
  }
  if (max_concurrent_scrapes < 1 || max_concurrent_scrapes > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-concurrent-scrapes: ", max_concurrent_scrapes, " is outside 1..4096"));
  }
  if (!(stagger >= 0 && stagger < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--scrape-stagger: ", stagger, " is outside [0, 1)"));
  }
  return sample_times.Validate();
}

struct ScrapeScheduler::Round {
  std::mutex mu;
  RoundSummary summary;
  Timestamp monotonic_start;
  size_t remaining = 0;
};

struct ScrapeScheduler::Metrics {
  explicit Metrics(prometheus::Registry& registry)
      : scrapes(prometheus::BuildCounter()
                    .Name("kubestat_scrapes_total")
                    .Help("Node scrapes by outcome (success, failure, skipped) and failure reason.")
                    .Register(registry)),
        duration(prometheus::BuildHistogram()
                     .Name("kubestat_scrape_duration_seconds")
                     .Help("Time taken by one node scrape (fetch and decode), by outcome.")
                     .Register(registry)),
        node_failures(prometheus::BuildCounter()
                          .Name("kubestat_node_scrape_failures_total")
                          .Help("Failed scrapes per node and reason.")
                          .Register(registry)),
        last_success(prometheus::BuildGauge()
                         .Name("kubestat_last_successful_scrape_timestamp_seconds")
                         .Help("Wall-clock time of the last successful scrape of each node.")
                         .Register(registry)),
        rounds(prometheus::BuildCounter()
                   .Name("kubestat_scrape_rounds_total")
                   .Help("Scrape rounds completed.")
                   .Register(registry)
                   .Add({})),
        round_duration(
            prometheus::BuildHistogram()
                .Name("kubestat_scrape_round_duration_seconds")
                .Help("Time from a round's start until its last scrape returned.")
                .Register(registry)
                .Add({}, prometheus::Histogram::BucketBoundaries{0.1, 0.25, 0.5, 1, 2.5, 5, 7.5, 10,
                                                                 15, 30, 60, 120})),
        targets(prometheus::BuildGauge()
                    .Name("kubestat_scrape_targets")
                    .Help("Nodes in the latest scrape round.")
                    .Register(registry)
                    .Add({})),
        decode_issues(prometheus::BuildCounter()
                          .Name("kubestat_scrape_decode_issues_total")
                          .Help("Values rejected while decoding kubelet payloads, by kind.")
                          .Register(registry)),
        timer_wakeups(prometheus::BuildCounter()
                          .Name("kubestat_scrape_timer_wakeups_total")
                          .Help("Times the scrape timer thread woke: a tick with scrapes due, a "
                                "round start, or its 50 ms re-read of the clock.")
                          .Register(registry)
                          .Add({})),
        worker_wakeups(prometheus::BuildCounter()
                           .Name("kubestat_scrape_worker_wakeups_total")
                           .Help("Idle scrape workers woken for scrapes that came due.")
                           .Register(registry)
                           .Add({})) {}

  prometheus::Histogram& Duration(std::string_view outcome) {
    return duration.Add({{"outcome", std::string(outcome)}},
                        prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                                0.5, 1, 2.5, 5, 10, 30});
  }

  prometheus::Family<prometheus::Counter>& scrapes;
  prometheus::Family<prometheus::Histogram>& duration;
  prometheus::Family<prometheus::Counter>& node_failures;
  prometheus::Family<prometheus::Gauge>& last_success;
  prometheus::Counter& rounds;
  prometheus::Histogram& round_duration;
  prometheus::Gauge& targets;
  prometheus::Family<prometheus::Counter>& decode_issues;
  prometheus::Counter& timer_wakeups;
  prometheus::Counter& worker_wakeups;

  // Per-node series, to remove them when a node leaves.
  std::mutex mu;
  std::map<std::string, prometheus::Gauge*> last_success_by_node;
  std::map<std::string, std::map<std::string, prometheus::Counter*>> failures_by_node;
};

ScrapeScheduler::ScrapeScheduler(SchedulerOptions options, TargetSource targets,
                                 NodeScraper& scraper, ScrapeSink& sink, const Clock& clock,
                                 prometheus::Registry& registry)
    : options_(options),
      targets_(std::move(targets)),
      scraper_(scraper),
      sink_(sink),
      clock_(clock),
      tick_(TimerTick(options_.resolution)),
      metrics_(std::make_unique<Metrics>(registry)) {}

ScrapeScheduler::~ScrapeScheduler() { Stop(); }

void ScrapeScheduler::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) return;
  started_ = true;
  next_round_ = clock_.Now();
  for (int i = 0; i < options_.max_concurrent_scrapes; ++i) {
    workers_.emplace_back([this] {
      NameThisThread("scrape");
      WorkerLoop();
    });
  }
  timer_ = std::thread([this] {
    NameThisThread("scrape-timer");
    TimerLoop();
  });
}

void ScrapeScheduler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_ || stopping_) return;
    stopping_ = true;
  }
  timer_cv_.notify_all();
  worker_cv_.notify_all();
  if (timer_.joinable()) timer_.join();
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
}

void ScrapeScheduler::Wake() { timer_cv_.notify_all(); }

uint64_t ScrapeScheduler::rounds_started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rounds_started_;
}

SchedulerActivity ScrapeScheduler::activity() const {
  std::lock_guard<std::mutex> lock(mu_);
  return activity_;
}

Duration ScrapeScheduler::TimerTick(Duration resolution) {
  return std::max<Duration>(std::min<Duration>(kMaxTick, resolution / 100), Duration(1));
}

Duration ScrapeScheduler::StaggerOffset(std::string_view node_name, Duration window) {
  if (window <= Duration::zero()) return Duration::zero();
  // Multiply-shift maps the hash uniformly onto [0, window) without modulo bias.
  const unsigned __int128 product =
      static_cast<unsigned __int128>(StableHash(node_name)) * static_cast<uint64_t>(window.count());
  return Duration(static_cast<int64_t>(product >> 64));
}

void ScrapeScheduler::TimerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const Timestamp now = clock_.Now();
    if (now >= next_round_) {
      BeginRound(lock);
      // Skip rounds that were missed entirely (e.g. the process was suspended).
      do {
        next_round_ += options_.resolution;
      } while (next_round_ <= now);
      continue;
    }
    // Every scrape of the ticks that have ended, in one pass: delayed_ is keyed by tick
    // ends, so the timer wakes once per tick that holds offsets rather than once per node.
    size_t released = 0;
    while (!delayed_.empty() && delayed_.begin()->first <= now) {
      ready_.push_back(std::move(delayed_.begin()->second));
      delayed_.erase(delayed_.begin());
      ++released;
    }
    if (released > 0) {
      ++activity_.releases;
      activity_.scrapes_released += released;
      const size_t wake = ClaimIdleWorkers();
      lock.unlock();
      NotifyWorkers(wake);
      lock.lock();
      continue;  // the clock moved while mu_ was free
    }
    Timestamp next = next_round_;
    if (!delayed_.empty()) next = std::min(next, delayed_.begin()->first);
    const auto wait = std::min<Duration>(next - now, kClockPoll);
    timer_cv_.wait_for(lock, wait);
    ++activity_.timer_wakeups;
    metrics_->timer_wakeups.Increment();
  }
}

size_t ScrapeScheduler::ClaimIdleWorkers() {
  // Workers already notified will take as many of the ready scrapes; a busy worker takes
  // the next one when it finishes, so waking fewer only risks a later start, never a lost
  // scrape: the remaining scrapes wait in ready_ until some worker looks.
  const size_t unclaimed =
      ready_.size() > signalled_workers_ ? ready_.size() - signalled_workers_ : 0;
  const size_t wake = std::min(unclaimed, idle_workers_ - signalled_workers_);
  signalled_workers_ += wake;
  activity_.worker_wakeups += wake;
  return wake;
}

void ScrapeScheduler::NotifyWorkers(size_t count) {
  if (count == 0) return;
  metrics_->worker_wakeups.Increment(static_cast<double>(count));
  for (size_t i = 0; i < count; ++i) worker_cv_.notify_one();
}

void ScrapeScheduler::BeginRound(std::unique_lock<std::mutex>& lock) {
  const uint64_t round_number = ++rounds_started_;
  const Timestamp round_start = next_round_;
  lock.unlock();
  sink_.OnRoundStart(round_number, round_start);
  std::vector<ScrapeTarget> targets = targets_();
  lock.lock();
  if (stopping_) return;

  auto round = std::make_shared<Round>();
  round->summary.round = round_number;
  round->summary.start = round_start;
  round->summary.targets = targets.size();
  round->monotonic_start = clock_.MonotonicNow();
  metrics_->targets.Set(static_cast<double>(targets.size()));

  const Duration window =
      std::chrono::duration_cast<Duration>(options_.resolution * options_.stagger);
  // A scrape is released at the end of the tick its offset falls in: never before its
  // offset, at most a tick after it, and within the stagger window.
  const auto release_offset = [&](Duration offset) {
    const Duration tick_end = (offset + tick_ - Duration(1)) / tick_ * tick_;
    return std::min(tick_end, window);
  };
  std::set<std::string> nodes;
  std::vector<std::pair<Timestamp, Task>> tasks;  // with the time each is released
  for (ScrapeTarget& target : targets) {
    if (!nodes.insert(target.node_name).second) continue;  // listed twice
    if (busy_.count(target.node_name) != 0) {
      ++round->summary.skipped;
      metrics_->scrapes.Add({{"outcome", "skipped"}, {"reason", "in_flight"}}).Increment();
      continue;
    }
    busy_.insert(target.node_name);
    const Timestamp release = round_start + release_offset(StaggerOffset(target.node_name, window));
    tasks.emplace_back(release, Task{std::move(target), round});
  }
  round->summary.targets = nodes.size();
  round->remaining = tasks.size();

  // Per-node series of nodes that left.
  {
    std::lock_guard<std::mutex> metrics_lock(metrics_->mu);
    for (const std::string& old_node : known_nodes_) {
      if (nodes.count(old_node) != 0) continue;
      if (auto it = metrics_->last_success_by_node.find(old_node);
          it != metrics_->last_success_by_node.end()) {
        metrics_->last_success.Remove(it->second);
        metrics_->last_success_by_node.erase(it);
      }
      if (auto it = metrics_->failures_by_node.find(old_node);
          it != metrics_->failures_by_node.end()) {
        for (auto& [reason, counter] : it->second) metrics_->node_failures.Remove(counter);
        metrics_->failures_by_node.erase(it);
      }
    }
  }
  known_nodes_ = std::move(nodes);

  if (tasks.empty()) {
    lock.unlock();
    FinishTask(round);  // remaining is 0: completes the round at once
    lock.lock();
    return;
  }
  ++round->remaining;  // held until every task is queued, so the round cannot end early
  const Timestamp now = clock_.Now();
  for (auto& [release, task] : tasks) {
    if (release <= now) {
      ready_.push_back(std::move(task));
      ++activity_.scrapes_released;
    } else {
      delayed_.emplace(release, std::move(task));
    }
  }
  const size_t wake = ClaimIdleWorkers();
  lock.unlock();
  NotifyWorkers(wake);
  FinishTask(round);
  lock.lock();
}

void ScrapeScheduler::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    // A worker back from a scrape takes the next ready one without waiting.
    while (!stopping_ && ready_.empty()) {
      ++idle_workers_;
      worker_cv_.wait(lock);
      --idle_workers_;
      // Whether notified or woken spuriously: either way one fewer is on its way, and
      // undercounting only wakes a worker more later.
      if (signalled_workers_ > 0) --signalled_workers_;
    }
    if (stopping_) return;
    Task task = std::move(ready_.front());
    ready_.pop_front();
    lock.unlock();
    RunTask(task);
    lock.lock();
  }
}

void ScrapeScheduler::RunTask(const Task& task) {
  const Timestamp started = clock_.MonotonicNow();
  absl::StatusOr<NodeScrape> result = scraper_.Scrape(task.target);
  const Duration took = clock_.MonotonicNow() - started;
  // Readings stamped far from now make the scrape a failure of the node, counted as such.
  if (result.ok()) {
    if (absl::Status s = CheckSampleTimes(*result, clock_.Now(), options_.sample_times); !s.ok()) {
      result = std::move(s);
    }
  }
  const std::string& node = task.target.node_name;
  Round& round = *task.round;
  if (result.ok()) {
    metrics_->scrapes.Add({{"outcome", "success"}, {"reason", "none"}}).Increment();
    metrics_->Duration("success").Observe(Seconds(took));
    {
      std::lock_guard<std::mutex> lock(metrics_->mu);
      prometheus::Gauge*& gauge = metrics_->last_success_by_node[node];
      if (gauge == nullptr) gauge = &metrics_->last_success.Add({{"node", node}});
      gauge->Set(Seconds(clock_.Now().time_since_epoch()));
    }
    for (size_t kind = 0; kind < kDecodeIssueKindCount; ++kind) {
      const auto issue_kind = static_cast<DecodeIssueKind>(kind);
      if (uint64_t count = result->issues.Count(issue_kind); count > 0) {
        metrics_->decode_issues.Add({{"kind", std::string(DecodeIssueKindName(issue_kind))}})
            .Increment(static_cast<double>(count));
      }
    }
    std::lock_guard<std::mutex> lock(round.mu);
    ++round.summary.succeeded;
    round.summary.pods += result->pods.size();
    round.summary.containers += result->ContainerCount();
  } else {
    const std::string reason = FailureReason(result.status());
    metrics_->scrapes.Add({{"outcome", "failure"}, {"reason", reason}}).Increment();
    metrics_->Duration("failure").Observe(Seconds(took));
    {
      std::lock_guard<std::mutex> lock(metrics_->mu);
      prometheus::Counter*& counter = metrics_->failures_by_node[node][reason];
      if (counter == nullptr) {
        counter = &metrics_->node_failures.Add({{"node", node}, {"reason", reason}});
      }
      counter->Increment();
    }
    std::lock_guard<std::mutex> lock(round.mu);
    ++round.summary.failed;
    ++round.summary.failures_by_reason[reason];
  }
  sink_.OnScrape(task.target, result);
  if (result.ok()) scraper_.Recycle(*std::move(result));
  {
    // Free the node before the round can complete, so a round that starts right after it
    // never sees the node as still in flight.
    std::lock_guard<std::mutex> lock(mu_);
    busy_.erase(node);
  }
  FinishTask(task.round);
}

void ScrapeScheduler::FinishTask(const std::shared_ptr<Round>& round) {
  RoundSummary summary;
  {
    std::lock_guard<std::mutex> lock(round->mu);
    if (round->remaining > 0) --round->remaining;
    if (round->remaining > 0) return;
    round->summary.duration = clock_.MonotonicNow() - round->monotonic_start;
    summary = round->summary;
  }
  metrics_->rounds.Increment();
  metrics_->round_duration.Observe(Seconds(summary.duration));
  sink_.OnRoundComplete(summary);
}

}  // namespace kubestat::scrapers
