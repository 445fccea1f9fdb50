#include "kubestat/scrapers/scheduler.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

#include "kubestat/scrapers/fetch_error.h"
#include "kubestat/testing/poll.h"

namespace kubestat::scrapers {
namespace {

using testing::PollUntil;

// How long a test waits for the scrapers' threads to get somewhere (only a broken feature
// takes that long).
constexpr std::chrono::seconds kReady(10);

std::vector<ScrapeTarget> Targets(int n) {
  std::vector<ScrapeTarget> targets;
  for (int i = 0; i < n; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "node-%04d", i);
    targets.push_back(ScrapeTarget{name, "127.0.0.1", 10250});
  }
  return targets;
}

// A scraper whose behaviour per node the test controls; nodes listed in `blocked` wait
// until released.
class FakeScraper final : public NodeScraper {
 public:
  absl::StatusOr<NodeScrape> Scrape(const ScrapeTarget& target) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++calls_[target.node_name];
    max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
    cv_.notify_all();
    cv_.wait(lock, [&] { return !blocked_all_ && blocked_.count(target.node_name) == 0; });
    --in_flight_;
    if (auto it = failures_.find(target.node_name); it != failures_.end()) {
      return WithFailureReason(absl::UnavailableError("injected"), it->second);
    }
    NodeScrape scrape;
    scrape.node_name = target.node_name;
    if (auto it = stamps_.find(target.node_name); it != stamps_.end()) {
      scrape.cpu = CpuSample{it->second, 1000, std::nullopt};
      scrape.memory = MemorySample{it->second, 894312448};
    }
    scrape.pods.resize(2);
    scrape.pods[0].containers.resize(1);
    scrape.pods[1].containers.resize(2);
    return scrape;
  }
  void Recycle(NodeScrape&& scrape) override {
    std::lock_guard<std::mutex> lock(mu_);
    recycled_.push_back(scrape.node_name);
  }
  std::vector<std::string> recycled() {
    std::lock_guard<std::mutex> lock(mu_);
    return recycled_;
  }

  void Block(const std::string& node) {
    std::lock_guard<std::mutex> lock(mu_);
    blocked_.insert(node);
  }
  void BlockAll(bool blocked) {
    std::lock_guard<std::mutex> lock(mu_);
    blocked_all_ = blocked;
    cv_.notify_all();
  }
  void Release(const std::string& node) {
    std::lock_guard<std::mutex> lock(mu_);
    blocked_.erase(node);
    cv_.notify_all();
  }
  void Fail(const std::string& node, const std::string& reason) {
    std::lock_guard<std::mutex> lock(mu_);
    failures_[node] = reason;
  }
  // The node's scrapes carry its cpu and memory readings stamped `time`.
  void Stamp(const std::string& node, Timestamp time) {
    std::lock_guard<std::mutex> lock(mu_);
    stamps_[node] = time;
  }
  int Calls(const std::string& node) {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_[node];
  }
  int in_flight() {
    std::lock_guard<std::mutex> lock(mu_);
    return in_flight_;
  }
  int max_in_flight() {
    std::lock_guard<std::mutex> lock(mu_);
    return max_in_flight_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> blocked_;
  bool blocked_all_ = false;
  std::map<std::string, std::string> failures_;
  std::map<std::string, Timestamp> stamps_;
  std::map<std::string, int> calls_;
  std::vector<std::string> recycled_;
  int in_flight_ = 0;
  int max_in_flight_ = 0;
};

class RecordingSink final : public ScrapeSink {
 public:
  void OnRoundStart(uint64_t round, Timestamp start) override {
    std::lock_guard<std::mutex> lock(mu_);
    starts_.emplace_back(round, start);
    events_.push_back("start " + std::to_string(round));
  }
  void OnScrape(const ScrapeTarget& target, const absl::StatusOr<NodeScrape>& result) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back("scrape " + target.node_name);
    ++results_[target.node_name];
    if (result.ok()) ++ok_[target.node_name];
    last_reason_[target.node_name] = FailureReason(result.status());
  }
  void OnRoundComplete(const RoundSummary& summary) override {
    std::lock_guard<std::mutex> lock(mu_);
    rounds_.push_back(summary);
    events_.push_back("complete " + std::to_string(summary.round));
  }
  std::vector<std::pair<uint64_t, Timestamp>> starts() {
    std::lock_guard<std::mutex> lock(mu_);
    return starts_;
  }
  std::vector<std::string> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  int Results(const std::string& node) {
    std::lock_guard<std::mutex> lock(mu_);
    return results_[node];
  }
  int Ok(const std::string& node) {
    std::lock_guard<std::mutex> lock(mu_);
    return ok_[node];
  }
  // The failure reason of the node's latest result ("" for a scrape).
  std::string LastReason(const std::string& node) {
    std::lock_guard<std::mutex> lock(mu_);
    return last_reason_[node];
  }
  int TotalResults() {
    std::lock_guard<std::mutex> lock(mu_);
    int total = 0;
    for (const auto& [node, n] : results_) total += n;
    return total;
  }
  std::vector<RoundSummary> rounds() {
    std::lock_guard<std::mutex> lock(mu_);
    return rounds_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, int> results_;
  std::map<std::string, int> ok_;
  std::map<std::string, std::string> last_reason_;
  std::vector<RoundSummary> rounds_;
  std::vector<std::pair<uint64_t, Timestamp>> starts_;
  std::vector<std::string> events_;
};

std::string Exposition(prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

class SchedulerTest : public ::testing::Test {
 protected:
  std::unique_ptr<ScrapeScheduler> Make(int nodes, int concurrency, double stagger = 0) {
    SchedulerOptions options;
    options.resolution = std::chrono::seconds(10);
    options.max_concurrent_scrapes = concurrency;
    options.stagger = stagger;
    auto targets = Targets(nodes);
    return std::make_unique<ScrapeScheduler>(
        options, [targets] { return targets; }, scraper_, sink_, clock_, registry_);
  }
  void NextRound(ScrapeScheduler& scheduler) {
    clock_.Advance(std::chrono::seconds(10));
    scheduler.Wake();
  }

  FakeClock clock_;
  FakeScraper scraper_;
  RecordingSink sink_;
  prometheus::Registry registry_;
};

TEST_F(SchedulerTest, EveryNodeIsScrapedOnceEachRound) {
  auto scheduler = Make(25, 4);
  scheduler->Start();
  ASSERT_TRUE(PollUntil([&] { return sink_.rounds().size() == 1; }, kReady));
  for (const ScrapeTarget& target : Targets(25)) EXPECT_EQ(sink_.Results(target.node_name), 1);
  NextRound(*scheduler);
  ASSERT_TRUE(PollUntil([&] { return sink_.rounds().size() == 2; }, kReady));
  NextRound(*scheduler);
  ASSERT_TRUE(PollUntil([&] { return sink_.rounds().size() == 3; }, kReady));
  scheduler->Stop();
  for (const ScrapeTarget& target : Targets(25)) EXPECT_EQ(sink_.Results(target.node_name), 3);
  std::vector<RoundSummary> rounds = sink_.rounds();
  EXPECT_EQ(rounds[2].round, 3u);
  EXPECT_EQ(rounds[2].targets, 25u);
  EXPECT_EQ(rounds[2].succeeded, 25u);
  EXPECT_EQ(rounds[2].pods, 50u);
  EXPECT_EQ(rounds[2].containers, 75u);
  std::string text = Exposition(registry_);
  EXPECT_NE(text.find("kubestat_scrape_rounds_total 3"), std::string::npos) << text;
  EXPECT_NE(text.find("kubestat_scrapes_total{outcome=\"success\",reason=\"none\"} 75"),
            std::string::npos);
  EXPECT_NE(text.find("kubestat_last_successful_scrape_timestamp_seconds{node=\"node-0007\"}"),
            std::string::npos);
}

TEST_F(SchedulerTest, NoRoundStartsBeforeTheResolutionHasPassed) {
  auto scheduler = Make(3, 2);
  scheduler->Start();
  ASSERT_TRUE(PollUntil([&] { return sink_.rounds().size() == 1; }, kReady));
  clock_.Advance(std::chrono::seconds(9));
  scheduler->Wake();
  // The timer re-reads the clock on Wake; give it a chance to (wrongly) start a round.
  PollUntil([&] { return scheduler->rounds_started() > 1; }, std::chrono::milliseconds(200));
  EXPECT_EQ(scheduler->rounds_started(), 1u);
  clock_.Advance(std::chrono::seconds(1));
  scheduler->Wake();
  ASSERT_TRUE(PollUntil([&] { return sink_.rounds().size() == 2; }, kReady));
  scheduler->Stop();
}

TEST_F(SchedulerTest, ConcurrencyNeverExceedsTheBound) {
  scraper_.BlockAll(true);
  auto scheduler = Make(20, 4);
  scheduler->Start();
  ASSERT_TRUE(PollUntil([&] { return scraper_.in_flight() == 4; }, kReady));
  // All four workers are blocked; no fifth scrape may start.
  PollUntil([&] { return scraper_.in_flight() > 4; }, std::chrono::milliseconds(200));
  EXPECT_EQ(scraper_.in_flight(), 4);
  scraper_.BlockAll(false);
  ASSERT_TRUE(PollUntil([&] { return sink_.TotalResults() == 20; }, kReady));
  scheduler->Stop();
  EXPECT_EQ(scraper_.max_in_flight(), 4);
}

TEST_F(SchedulerTest, SlowNodeDoesNotDelayTheOthers) {
  scraper_.Block("node-0003");
  auto scheduler = Make(10, 3);
  scheduler->Start();
  // Round 1: the nine others finish while node-0003 is still stuck.
  ASSERT_TRUE(PollUntil([&] { return sink_.TotalResults() == 9; }, kReady));
  EXPECT_EQ(sink_.Results("node-0003"), 0);
  // Round 2 starts on time; node-0003 is skipped instead of queued behind itself.
  NextRound(*scheduler);
  ASSERT_TRUE(PollUntil([&] { return sink_.TotalResults() == 18; }, kReady));
  ASSERT_TRUE(PollUntil([&] { return sink_.rounds().size() == 1; }, kReady));
  RoundSummary second = sink_.rounds()[0];
  EXPECT_EQ(second.round, 2u);
  EXPECT_EQ(second.skipped, 1u);
  EXPECT_EQ(second.succeeded, 9u);
  scraper_.Release("node-0003");
  ASSERT_TRUE(PollUntil([&] { return sink_.Results("node-0003") == 1; }, kReady));
  scheduler->Stop();
  EXPECT_EQ(scraper_.Calls("node-0003"), 1);
  EXPECT_NE(Exposition(registry_).find(
                "kubestat_scrapes_total{outcome=\"skipped\",reason=\"in_flight\"} 1"),
            std::string::npos);
}

TEST_F(SchedulerTest, RoundStartsAreReportedWhenTheyStartNotWhenTheyEnd) {
  scraper_.Block("node-0001");
  auto scheduler = Make(2, 2);
  const Timestamp first = clock_.Now();
  scheduler->Start();
  ASSERT_TRUE(PollUntil([&] { return sink_.Results("node-0000") == 1; }, kReady));
  // Round 1 is held open by node-0001, and its start is already known.
  EXPECT_TRUE(sink_.rounds().empty());
  ASSERT_EQ(sink_.starts().size(), 1u);
  EXPECT_EQ(sink_.starts()[0], std::make_pair(uint64_t{1}, first));
  NextRound(*scheduler);
  ASSERT_TRUE(PollUntil([&] { return sink_.Results("node-0000") == 2; }, kReady));
  ASSERT_EQ(sink_.starts().size(), 2u);
  EXPECT_EQ(sink_.starts()[1], std::make_pair(uint64_t{2}, first + std::chrono::seconds(10)));
  scraper_.Release("node-0001");
  ASSERT_TRUE(PollUntil([&] { return sink_.rounds().size() == 2; }, kReady));
  scheduler->Stop();
  // Each round's start comes before its scrapes; round 1 completes after round 2 started.
  const std::vector<std::string> events = sink_.events();
  const auto at = [&](const std::string& event) {
    return std::find(events.begin(), events.end(), event) - events.begin();
  };
  EXPECT_LT(at("start 1"), at("scrape node-0000"));
  EXPECT_LT(at("start 2"), at("complete 1"));
  EXPECT_LT(at("complete 2"), static_cast<std::ptrdiff_t>(events.size()));
  EXPECT_EQ(std::count(events.begin(), events.end(), "start 2"), 1);
}

TEST_F(SchedulerTest, FailuresAreCountedByReasonAndNode) {
  scraper_.Fail("node-0001", "timeout");
  scraper_.Fail("node-0002", "http_500");
  scraper_.Fail("node-0004", "timeout");
  auto scheduler = Make(6, 2);
  scheduler->Start();
  ASSERT_TRUE(PollUntil([&] { return sink_.rounds().size() == 1; }, kReady));
  NextRound(*scheduler);
  ASSERT_TRUE(PollUntil([&] { return sink_.rounds().size() == 2; }, kReady));
  scheduler->Stop();
  RoundSummary round = sink_.rounds()[1];
  EXPECT_EQ(round.failed, 3u);
  EXPECT_EQ(round.succeeded, 3u);
  EXPECT_EQ(round.failures_by_reason,
            (std::map<std::string, size_t>{{"http_500", 1}, {"timeout", 2}}));
  std::string text = Exposition(registry_);
  EXPECT_NE(text.find("kubestat_scrapes_total{outcome=\"failure\",reason=\"timeout\"} 4"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("kubestat_scrapes_total{outcome=\"failure\",reason=\"http_500\"} 2"),
            std::string::npos);
  EXPECT_NE(
      text.find("kubestat_node_scrape_failures_total{node=\"node-0002\",reason=\"http_500\"} 2"),
      std::string::npos);
  EXPECT_EQ(text.find("kubestat_last_successful_scrape_timestamp_seconds{node=\"node-0001\"}"),
            std::string::npos);
}

TEST_F(SchedulerTest, EverySuccessfulScrapeGoesBackToTheScraperAfterTheSink) {
  scraper_.Fail("node-0001", "timeout");
  auto scheduler = Make(3, 2);
  scheduler->Start();
  ASSERT_TRUE(PollUntil([&] { return sink_.rounds().size() == 1; }, kReady));
  NextRound(*scheduler);
  ASSERT_TRUE(PollUntil([&] { return sink_.rounds().size() == 2; }, kReady));
  scheduler->Stop();
  std::vector<std::string> recycled = scraper_.recycled();
  std::sort(recycled.begin(), recycled.end());
  EXPECT_EQ(recycled,
            (std::vector<std::string>{"node-0000", "node-0000", "node-0002", "node-0002"}));
}

// A node whose readings are stamped 0 or far ahead fails as bad_timestamp: in the round's
// summary, in the counters, and towards the sink, which gets that error instead of the
// scrape; a node stamped just before the scrape in the same round succeeds.
TEST_F(SchedulerTest, ReadingsStampedFarFromTheScrapeFailTheNodeAsBadTimestamp) {
  scraper_.Stamp("node-0000", clock_.Now() - std::chrono::seconds(1));
  scraper_.Stamp("node-0001", Timestamp{});
  scraper_.Stamp("node-0002", clock_.Now() + std::chrono::hours(1));
  auto scheduler = Make(3, 2);
  scheduler->Start();
  ASSERT_TRUE(PollUntil([&] { return sink_.rounds().size() == 1; }, kReady));
  RoundSummary round = sink_.rounds()[0];
  EXPECT_EQ(round.succeeded, 1u);
  EXPECT_EQ(round.failed, 2u);
  EXPECT_EQ(round.failures_by_reason, (std::map<std::string, size_t>{{"bad_timestamp", 2}}));
  EXPECT_EQ(round.pods, 2u);  // of node-0000 only
  EXPECT_EQ(sink_.Ok("node-0000"), 1);
  EXPECT_EQ(sink_.LastReason("node-0000"), "");
  EXPECT_EQ(sink_.Ok("node-0001"), 0);
  EXPECT_EQ(sink_.LastReason("node-0001"), "bad_timestamp");
  EXPECT_EQ(sink_.Ok("node-0002"), 0);
  EXPECT_EQ(sink_.LastReason("node-0002"), "bad_timestamp");

  // The next round, node-0001's kubelet stamps its readings again: it succeeds.
  scraper_.Stamp("node-0000", clock_.Now() + std::chrono::seconds(9));
  scraper_.Stamp("node-0001", clock_.Now() + std::chrono::seconds(9));
  NextRound(*scheduler);
  ASSERT_TRUE(PollUntil([&] { return sink_.rounds().size() == 2; }, kReady));
  scheduler->Stop();
  round = sink_.rounds()[1];
  EXPECT_EQ(round.succeeded, 2u);
  EXPECT_EQ(round.failures_by_reason, (std::map<std::string, size_t>{{"bad_timestamp", 1}}));
  EXPECT_EQ(sink_.Ok("node-0001"), 1);

  const std::string text = Exposition(registry_);
  EXPECT_NE(text.find("kubestat_scrapes_total{outcome=\"failure\",reason=\"bad_timestamp\"} 3"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("kubestat_node_scrape_failures_total{node=\"node-0001\",reason=\"bad_"
                      "timestamp\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("kubestat_node_scrape_failures_total{node=\"node-0002\",reason=\"bad_"
                      "timestamp\"} 2"),
            std::string::npos);
  EXPECT_EQ(text.find("kubestat_last_successful_scrape_timestamp_seconds{node=\"node-0002\"}"),
            std::string::npos);
}

TEST_F(SchedulerTest, StaggeredStartsWaitForTheirOffset) {
  auto scheduler = Make(40, 8, /*stagger=*/0.5);
  scheduler->Start();
  // Offsets are spread over [0, 5s); at the round start only nodes with offset 0 may run.
  const Duration window = std::chrono::seconds(5);
  int due_now = 0;
  for (const ScrapeTarget& target : Targets(40)) {
    if (ScrapeScheduler::StaggerOffset(target.node_name, window) == Duration::zero()) ++due_now;
  }
  PollUntil([&] { return sink_.TotalResults() > due_now; }, std::chrono::milliseconds(200));
  EXPECT_EQ(sink_.TotalResults(), due_now);
  clock_.Advance(std::chrono::milliseconds(2500));
  scheduler->Wake();
  int half = 0;
  for (const ScrapeTarget& target : Targets(40)) {
    if (ScrapeScheduler::StaggerOffset(target.node_name, window) <=
        std::chrono::milliseconds(2500)) {
      ++half;
    }
  }
  ASSERT_TRUE(PollUntil([&] { return sink_.TotalResults() == half; }, kReady));
  EXPECT_GT(half, 5);
  EXPECT_LT(half, 35);
  clock_.Advance(std::chrono::milliseconds(2500));
  scheduler->Wake();
  ASSERT_TRUE(PollUntil([&] { return sink_.TotalResults() == 40; }, kReady));
  scheduler->Stop();
}

// The timer hands out the scrapes of a tick together at the tick's end. Stepping the fake
// clock a millisecond at a time through a 50 ms stagger window (ticks of 20 ms at 10 s;
// the last tick cut short by the window's end): no scrape is released before its offset nor
// more than a tick after it, each tick's scrapes come in one pass of the timer (not one
// per node), and no more workers are woken than scrapes were released.
TEST_F(SchedulerTest, ScrapesWithinATickAreReleasedTogetherAtItsEnd) {
  constexpr int kNodes = 40;
  constexpr int kWorkers = 8;
  constexpr double kStagger = 0.005;
  const Duration tick = ScrapeScheduler::TimerTick(std::chrono::seconds(10));
  ASSERT_EQ(tick, std::chrono::milliseconds(20));
  // As the scheduler computes it.
  const Duration window = std::chrono::duration_cast<Duration>(std::chrono::seconds(10) * kStagger);
  std::vector<Duration> offsets;
  std::set<int64_t> offset_ticks;       // the ticks that hold offsets
  std::set<int64_t> offset_millis;      // the milliseconds that do
  bool ends_with_a_short_tick = false;  // an offset in the tick the window cuts short
  for (const ScrapeTarget& target : Targets(kNodes)) {
    const Duration offset = ScrapeScheduler::StaggerOffset(target.node_name, window);
    offsets.push_back(offset);
    if (offset == Duration::zero()) continue;  // released at the round's start
    offset_ticks.insert((offset + tick - Duration(1)) / tick);
    offset_millis.insert((offset + std::chrono::milliseconds(1) - Duration(1)) /
                         std::chrono::milliseconds(1));
    if (offset > 2 * tick) ends_with_a_short_tick = true;
  }
  // Released per node, the scrapes would take many more passes than one per tick.
  ASSERT_EQ(offset_ticks.size(), 3u);
  ASSERT_GT(offset_millis.size(), 2 * offset_ticks.size());
  ASSERT_TRUE(ends_with_a_short_tick);

  auto scheduler = Make(kNodes, kWorkers, kStagger);
  scheduler->Start();
  SchedulerActivity before;
  for (int ms = 0; ms <= 50; ++ms) {
    if (ms > 0) clock_.Advance(std::chrono::milliseconds(1));
    const Duration elapsed = std::chrono::milliseconds(ms);
    // Wait for a pass of the timer that read the clock after it moved.
    const uint64_t wakeups = scheduler->activity().timer_wakeups;
    scheduler->Wake();
    ASSERT_TRUE(PollUntil([&] { return scheduler->activity().timer_wakeups > wakeups; }, kReady,
                          std::chrono::milliseconds(1)));
    const SchedulerActivity now = scheduler->activity();
    // The latest release: the end of the latest tick that has passed, or the window's end.
    const Duration released_through = elapsed >= window ? window : elapsed / tick * tick;
    uint64_t due = 0;
    uint64_t due_a_tick_ago = 0;
    uint64_t due_by_the_latest_release = 0;
    for (const Duration offset : offsets) {
      if (offset <= elapsed) ++due;
      if (offset + tick <= elapsed) ++due_a_tick_ago;
      if (offset <= released_through) ++due_by_the_latest_release;
    }
    EXPECT_LE(now.scrapes_released, due) << "at " << ms << " ms";
    EXPECT_GE(now.scrapes_released, due_a_tick_ago) << "at " << ms << " ms";
    EXPECT_EQ(now.scrapes_released, due_by_the_latest_release) << "at " << ms << " ms";
    EXPECT_LE(now.worker_wakeups - before.worker_wakeups,
              std::min<uint64_t>(now.scrapes_released - before.scrapes_released, kWorkers))
        << "at " << ms << " ms";
    before = now;
  }
  ASSERT_TRUE(PollUntil([&] { return sink_.TotalResults() == kNodes; }, kReady));
  scheduler->Stop();
  const SchedulerActivity activity = scheduler->activity();
  EXPECT_EQ(activity.releases, offset_ticks.size());
  EXPECT_GE(activity.timer_wakeups, 51u);
  EXPECT_EQ(activity.scrapes_released, static_cast<uint64_t>(kNodes));
  for (const ScrapeTarget& target : Targets(kNodes)) EXPECT_EQ(scraper_.Calls(target.node_name), 1);
  EXPECT_NE(Exposition(registry_).find("kubestat_scrape_timer_wakeups_total " +
                                       std::to_string(activity.timer_wakeups) + "\n"),
            std::string::npos)
      << Exposition(registry_);
}

// Scrapes ready at once for fewer workers: the workers are woken at most once each, and a
// worker back from a scrape takes the next ready one without being woken again.
TEST_F(SchedulerTest, BusyWorkersTakeTheNextReadyScrapeWithoutAWakeup) {
  scraper_.BlockAll(true);
  auto scheduler = Make(12, 3);
  scheduler->Start();
  ASSERT_TRUE(PollUntil([&] { return scraper_.in_flight() == 3; }, kReady));
  scraper_.BlockAll(false);
  ASSERT_TRUE(PollUntil([&] { return sink_.rounds().size() == 1; }, kReady));
  scheduler->Stop();
  EXPECT_EQ(sink_.TotalResults(), 12);
  const SchedulerActivity activity = scheduler->activity();
  EXPECT_EQ(activity.scrapes_released, 12u);
  EXPECT_LE(activity.worker_wakeups, 3u);
  EXPECT_EQ(activity.releases, 0u);  // all due at the round's start
  EXPECT_NE(Exposition(registry_).find("kubestat_scrape_worker_wakeups_total " +
                                       std::to_string(activity.worker_wakeups) + "\n"),
            std::string::npos);
}

TEST(TimerTickTest, IsTwentyMillisecondsOrAHundredthOfTheResolution) {
  EXPECT_EQ(ScrapeScheduler::TimerTick(std::chrono::seconds(10)), std::chrono::milliseconds(20));
  EXPECT_EQ(ScrapeScheduler::TimerTick(std::chrono::seconds(2)), std::chrono::milliseconds(20));
  EXPECT_EQ(ScrapeScheduler::TimerTick(std::chrono::seconds(1)), std::chrono::milliseconds(10));
  EXPECT_EQ(ScrapeScheduler::TimerTick(std::chrono::microseconds(50)), Duration(500));
  EXPECT_EQ(ScrapeScheduler::TimerTick(Duration(50)), Duration(1));
}

TEST(StaggerOffsetTest, IsStableWithinTheWindowAndSpread) {
  const Duration window = std::chrono::seconds(5);
  std::set<int64_t> seconds_buckets;
  for (const ScrapeTarget& target : Targets(200)) {
    Duration offset = ScrapeScheduler::StaggerOffset(target.node_name, window);
    EXPECT_EQ(offset, ScrapeScheduler::StaggerOffset(target.node_name, window));
    EXPECT_GE(offset, Duration::zero());
    EXPECT_LT(offset, window);
    seconds_buckets.insert(std::chrono::duration_cast<std::chrono::seconds>(offset).count());
  }
  EXPECT_EQ(seconds_buckets.size(), 5u);  // every second of the window is used
  EXPECT_EQ(ScrapeScheduler::StaggerOffset("node-0001", Duration::zero()), Duration::zero());
}

TEST(SchedulerOptionsTest, RejectsBadValuesNamingTheFlag) {
  SchedulerOptions options;
  EXPECT_TRUE(options.Validate().ok());
  options.max_concurrent_scrapes = 0;
  EXPECT_NE(options.Validate().message().find("--max-concurrent-scrapes"), std::string::npos);
  options = SchedulerOptions();
  options.resolution = Duration::zero();
  EXPECT_NE(options.Validate().message().find("--metric-resolution"), std::string::npos);
  options = SchedulerOptions();
  options.stagger = 1.0;
  EXPECT_NE(options.Validate().message().find("--scrape-stagger"), std::string::npos);
  options = SchedulerOptions();
  options.sample_times.max_age = Duration::zero();
  EXPECT_EQ(options.Validate().message(), "--max-sample-age: must be positive");
}

}  // namespace
}  // namespace kubestat::scrapers
