// The scrape scheduler: every `resolution`, scrape every node once, with bounded
// concurrency and staggered starts, and hand each result to a ScrapeSink.
//
// Rounds start at fixed times (the first at Start(), then every `resolution` of the injected
// Clock). At a round's start the target list is taken from the TargetSource; each node's
// scrape is delayed by a stable per-node offset within the first `stagger` fraction of the
// resolution (StaggerOffset: a hash of the node name), so load on the kubelets and here is
// spread and a node is scraped at the same phase every round. At most
// `max_concurrent_scrapes` scrapes run at once (one worker thread each). A node whose
// previous scrape has not finished yet is skipped for this round (counted as
// outcome="skipped"), so a slow or failing node never delays the others: it holds one
// worker for at most the scraper's own timeout, which must be shorter than the resolution.
//
// Timer granularity: the timer does not wake for each node's offset. The time after a
// round's start is cut into ticks of TimerTick(resolution) = min(20 ms, resolution / 100),
// and every scrape whose offset falls within a tick is handed to the workers at once, at
// the tick's end (or at the end of the stagger window, if that comes first). So a scrape
// never starts before its offset and at most one tick after it (plus however late the
// threads are run); one with offset 0 starts with its round, and rounds start on time. At
// 5,000 nodes, 10 s and stagger 0.5 the timer wakes at most 250 times a round to release
// scrapes instead of once per node. Of the idle workers, only as many are woken as there
// are scrapes ready and not yet claimed; a worker that finishes a scrape takes the next
// ready one before it waits, so busy workers work through a tick's batch without being
// woken.
//
// A scrape whose readings are stamped too far from the time it returned (a time of 0, a
// stale cache, a clock far ahead: sample_times.h, measured on the injected Clock) is a
// failure with reason "bad_timestamp": it is counted and reported like any other failed
// scrape, and the sink receives that error instead of the scrape, so nothing of it is
// stored and the node's earlier data stay as they were.
//
// Metrics (registered in the prometheus::Registry passed in; names per Prometheus
// conventions, node label only where it is needed to find a failing node):
//   kubestat_scrapes_total{outcome="success"|"failure"|"skipped",reason}   counter
//   kubestat_scrape_duration_seconds{outcome}                              histogram
//   kubestat_node_scrape_failures_total{node,reason}                       counter
//   kubestat_last_successful_scrape_timestamp_seconds{node}                gauge (wall clock)
//   kubestat_scrape_rounds_total                                           counter
//   kubestat_scrape_round_duration_seconds                                 histogram
//   kubestat_scrape_targets                                                gauge
//   kubestat_scrape_decode_issues_total{kind}                              counter
//   kubestat_scrape_timer_wakeups_total                                    counter
//   kubestat_scrape_worker_wakeups_total                                   counter
// Per-node series are removed when the node leaves the target list.
//
// Threads: ScrapeSink::OnRoundStart is called from the timer thread; OnScrape from worker
// threads, concurrently for different nodes (never twice at once for the same node);
// OnRoundComplete from the worker that finished a round's last scrape (rounds may overlap
// when scrapes are slow). Sinks must be thread-safe and should not block. Start/Stop/Wake
// may be called from any thread.
#ifndef KUBESTAT_SCRAPERS_SCHEDULER_H_
#define KUBESTAT_SCRAPERS_SCHEDULER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/scrapers/node_address.h"
#include "kubestat/scrapers/node_scrape.h"
#include "kubestat/scrapers/node_scraper.h"
#include "kubestat/scrapers/sample_times.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::scrapers {

struct SchedulerOptions {
  // Time between rounds (--metric-resolution). Default: 10s
  Duration resolution = std::chrono::seconds(10);
  // Scrapes running at once (--max-concurrent-scrapes). Default: 32
  int max_concurrent_scrapes = 32;
  // Fraction of the resolution over which the round's starts are spread (--scrape-stagger);
  // 0 starts every scrape at the round's start. Default: 0.5
  double stagger = 0.5;
  // How far from the scrape's time its readings may be stamped. Default: 10m before, 10m
  // after (see SampleTimeLimits)
  SampleTimeLimits sample_times;

  // InvalidArgument naming the flag: resolution <= 0, concurrency outside 1..4096, stagger
  // outside [0, 1), a sample time limit that is not positive.
  [[nodiscard]] absl::Status Validate() const;
};

// What one round did.
struct RoundSummary {
  uint64_t round = 0;    // 1 for the first round
  Timestamp start;       // wall clock at the round's start
  Duration duration{0};  // from the round's start until its last scrape returned
  size_t targets = 0;
  size_t succeeded = 0;
  size_t failed = 0;
  size_t skipped = 0;  // still busy with an earlier round
  size_t pods = 0;     // over the successful scrapes
  size_t containers = 0;
  std::map<std::string, size_t> failures_by_reason;
};

// What the scheduler's threads did since Start, to see the cost of its wakeups (tests and
// benchmarks). Each count only grows.
struct SchedulerActivity {
  // Times the timer thread woke: a tick or round start that came due, Wake, or its 50 ms
  // re-read of the clock (kubestat_scrape_timer_wakeups_total).
  uint64_t timer_wakeups = 0;
  // Of the timer's passes, those that handed waiting scrapes to the workers: at most one
  // per tick that holds scrape offsets. Round starts are not counted here.
  uint64_t releases = 0;
  // Scrapes handed to the workers, at their round's start or at a release.
  uint64_t scrapes_released = 0;
  // Idle workers woken for ready scrapes (kubestat_scrape_worker_wakeups_total); at most
  // one per scrape released.
  uint64_t worker_wakeups = 0;
};

class ScrapeSink {
 public:
  virtual ~ScrapeSink() = default;
  // Called when round `round` starts (`start`: its scheduled wall-clock time, as in its
  // RoundSummary), before its targets are listed. Default: nothing.
  virtual void OnRoundStart(uint64_t round, Timestamp start) { (void)round, (void)start; }
  // One node's result, lent for the call (the scheduler gives it back to the scraper
  // afterwards: copy what is kept). See the header comment for threading.
  virtual void OnScrape(const ScrapeTarget& target, const absl::StatusOr<NodeScrape>& result) = 0;
  // Called once per round after its last scrape returned. Default: nothing.
  virtual void OnRoundComplete(const RoundSummary& summary) { (void)summary; }
};

// Returns the nodes to scrape this round (e.g. from discovery). Called on the scheduler's
// own thread once per round.
using TargetSource = std::function<std::vector<ScrapeTarget>()>;

class ScrapeScheduler {
 public:
  // All references must outlive the scheduler. Options must be valid.
  ScrapeScheduler(SchedulerOptions options, TargetSource targets, NodeScraper& scraper,
                  ScrapeSink& sink, const Clock& clock, prometheus::Registry& registry);
  ~ScrapeScheduler();
  ScrapeScheduler(const ScrapeScheduler&) = delete;
  ScrapeScheduler& operator=(const ScrapeScheduler&) = delete;

  // Starts the worker threads and the round timer; the first round starts now.
  void Start();
  // Stops starting scrapes, waits for running ones to return, joins every thread.
  // Idempotent.
  void Stop();
  // Makes the timer re-read the clock now (a FakeClock does not notify anyone when it is
  // advanced; without Wake the timer notices within 50 ms).
  void Wake();

  // Rounds started so far.
  uint64_t rounds_started() const;
  // See SchedulerActivity.
  SchedulerActivity activity() const;

  // The stable start offset of `node_name` within `window`, in [0, window).
  static Duration StaggerOffset(std::string_view node_name, Duration window);
  // The timer's granularity at `resolution`: min(20 ms, resolution / 100), at least 1 ns.
  // 20 ms is 0.2% of the default resolution and small beside a scrape's own duration, and
  // at 5,000 nodes (10 s, stagger 0.5) it gathers the ~20 offsets of each tick into one
  // wakeup; the hundredth keeps the delay in proportion for short resolutions (tests).
  static Duration TimerTick(Duration resolution);

 private:
  struct Round;
  struct Task {
    ScrapeTarget target;
    std::shared_ptr<Round> round;
  };
  struct Metrics;

  void TimerLoop();
  void WorkerLoop();
  void BeginRound(std::unique_lock<std::mutex>& lock);
  // Claims idle workers for the ready scrapes that no worker is yet on its way to take (at
  // most one per such scrape) and returns how many; the caller notifies that many after
  // unlocking mu_, so a woken worker does not find mu_ still held. Requires mu_.
  size_t ClaimIdleWorkers();
  void NotifyWorkers(size_t count);
  void RunTask(const Task& task);
  void FinishTask(const std::shared_ptr<Round>& round);

  const SchedulerOptions options_;
  const TargetSource targets_;
  NodeScraper& scraper_;
  ScrapeSink& sink_;
  const Clock& clock_;
  const Duration tick_;
  std::unique_ptr<Metrics> metrics_;

  mutable std::mutex mu_;
  std::condition_variable timer_cv_;
  std::condition_variable worker_cv_;
  bool started_ = false;
  bool stopping_ = false;
  Timestamp next_round_;
  uint64_t rounds_started_ = 0;
  SchedulerActivity activity_;
  // Scrapes waiting for their stagger offset, by the end of the tick their offset falls in
  // (when they are released).
  std::multimap<Timestamp, Task> delayed_;
  // Scrapes due, waiting for a free worker.
  std::deque<Task> ready_;
  // Workers waiting on worker_cv_, and how many of them have been notified and not yet
  // returned from the wait (idle_workers_ >= signalled_workers_).
  size_t idle_workers_ = 0;
  size_t signalled_workers_ = 0;
  // Nodes queued or being scraped.
  std::set<std::string> busy_;
  // Nodes of the previous round (to drop per-node series of nodes that left).
  std::set<std::string> known_nodes_;
  std::thread timer_;
  std::vector<std::thread> workers_;
};

}  // namespace kubestat::scrapers

#endif  // KUBESTAT_SCRAPERS_SCHEDULER_H_
