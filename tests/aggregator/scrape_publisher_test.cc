// The scrape scheduler and the publisher wired as kubestat-aggregator wires them (a real
// Ingestor on a store in a temporary directory, the query snapshot, the watch hub), driven
// by a fake clock and a fake kubelet per node.
#include "kubestat/aggregator/scrape_publisher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kubestat/aggregator/query/aggregator_state.h"
#include "kubestat/core/log.h"
#include "kubestat/scrapers/scheduler.h"
#include "kubestat/testing/aggregator/fake_label_provider.h"
#include "kubestat/testing/aggregator/ingest_scrape_builder.h"
#include "kubestat/testing/aggregator/ready_ingestor.h"
#include "kubestat/testing/captured_log.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::aggregator {
namespace {

using ::kubestat::testing::CapturedLog;
using ::kubestat::testing::PollUntil;
using ::testing::HasSubstr;

// How long a test waits for the scheduler's and the publisher's threads (only a broken
// feature takes that long).
constexpr std::chrono::seconds kReady(10);

// Fake kubelets: node-<n> answers with the synthetic cluster's scrape of node n, its
// readings stamped as the test says (one scrape at a time: the cluster is not thread-safe).
class StampedKubelets final : public scrapers::NodeScraper {
 public:
  absl::StatusOr<scrapers::NodeScrape> Scrape(const scrapers::ScrapeTarget& target) override {
    std::lock_guard<std::mutex> lock(mu_);
    return cluster_.Scrape(std::stoul(target.node_name.substr(5)), stamps_.at(target.node_name));
  }
  void Stamp(const std::string& node, Timestamp time) {
    std::lock_guard<std::mutex> lock(mu_);
    stamps_[node] = time;
  }

 private:
  std::mutex mu_;
  testing::SyntheticCluster cluster_{2, 3, 2, 17};
  std::map<std::string, Timestamp> stamps_;
};

class ScrapePublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    labels_.synced = true;
    absl::StatusOr<testing::ReadyIngestor> ready =
        testing::OpenReadyIngestor(dir_.File("db"), &clock_);
    ASSERT_TRUE(ready.ok()) << ready.status();
    store_ = std::move(ready->store);
    ingestor_ = std::move(ready->ingestor);
    state_ = std::make_unique<AggregatorState>(ingestor_.get(), &labels_);
    snapshot_ = std::make_unique<SnapshotSource>(state_.get());
    hub_ = std::make_unique<WatchHub>(snapshot_.get());
    metrics_ = std::make_unique<StoreSelfMetrics>(registry_);
    publisher_ =
        std::make_unique<ScrapePublisher>("", clock_, *ingestor_, *store_, *metrics_, *snapshot_,
                                          *hub_, PublishPacer(std::chrono::milliseconds(500), 0.1));
    scrapers::SchedulerOptions options;
    options.resolution = std::chrono::seconds(10);
    options.max_concurrent_scrapes = 2;
    options.stagger = 0;
    const std::vector<scrapers::ScrapeTarget> targets = {{"node-0", "127.0.0.1", 10250},
                                                         {"node-1", "127.0.0.1", 10250}};
    scheduler_ = std::make_unique<scrapers::ScrapeScheduler>(
        options, [targets] { return targets; }, kubelets_, *publisher_, clock_, registry_);
  }
  void TearDown() override {
    if (scheduler_) scheduler_->Stop();
  }

  // The machine's memory windows of `node` as the query snapshot serves them, or empty.
  metrics_api::StatisticsList ServedMemory(const std::string& node) {
    std::optional<metrics_api::NodeMetrics> view = snapshot_->GetNode(node);
    return view ? view->machine.memory : metrics_api::StatisticsList{};
  }

  CapturedLog log_;
  ::kubestat::testing::TempDir dir_;
  FakeClock clock_;
  StampedKubelets kubelets_;
  testing::FakeLabels labels_;  // synced, without labels
  prometheus::Registry registry_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<Ingestor> ingestor_;
  std::unique_ptr<AggregatorState> state_;
  std::unique_ptr<SnapshotSource> snapshot_;
  std::unique_ptr<WatchHub> hub_;
  std::unique_ptr<StoreSelfMetrics> metrics_;
  std::unique_ptr<ScrapePublisher> publisher_;
  std::unique_ptr<scrapers::ScrapeScheduler> scheduler_;
};

// node-1's kubelet stamps its readings 0 in the second round: the round's log line counts
// it failed with reason bad_timestamp, so do the counters, nothing of that scrape is
// ingested (the ingestor does not even see it), and node-1 keeps the windows of its first
// scrape in the engine and in what is served; node-0's scrape of the same round is
// ingested and served.
TEST_F(ScrapePublisherTest, NodeStampedZeroFailsItsRoundAndKeepsItsDataWhileTheOtherIngests) {
  const Timestamp first = clock_.Now() - std::chrono::seconds(1);
  kubelets_.Stamp("node-0", first);
  kubelets_.Stamp("node-1", first);
  scheduler_->Start();
  ASSERT_TRUE(PollUntil([&] { return !log_.Find("round 1: ").empty(); }, kReady));
  EXPECT_THAT(log_.Find("round 1: "), HasSubstr("2/2 nodes ok, 6 pods, 12 containers, 0 failed"));
  const std::optional<NodeSnapshot> node1_before = ingestor_->QueryNode("node-1");
  ASSERT_TRUE(node1_before.has_value());
  ASSERT_FALSE(node1_before->series.empty());
  EXPECT_EQ(node1_before->series[0].endtime, first);
  ASSERT_TRUE(PollUntil([&] { return !ServedMemory("node-1").empty(); }, kReady));
  const metrics_api::StatisticsList served_before = ServedMemory("node-1");
  EXPECT_EQ(served_before[0].endtime, first);

  const Timestamp second = first + std::chrono::seconds(10);
  kubelets_.Stamp("node-0", second);
  kubelets_.Stamp("node-1", Timestamp{});
  clock_.Advance(std::chrono::seconds(10));
  scheduler_->Wake();
  ASSERT_TRUE(PollUntil([&] { return !log_.Find("round 2: ").empty(); }, kReady));
  EXPECT_THAT(log_.Find("round 2: "),
              HasSubstr("1/2 nodes ok, 3 pods, 6 containers, 1 failed (bad_timestamp=1), "
                        "0 skipped"));

  // node-0 ingested at its new time; node-1 exactly as after its first scrape.
  const std::optional<NodeSnapshot> node0 = ingestor_->QueryNode("node-0");
  ASSERT_TRUE(node0.has_value());
  EXPECT_EQ(node0->series[0].endtime, second);
  const std::optional<NodeSnapshot> node1_after = ingestor_->QueryNode("node-1");
  ASSERT_TRUE(node1_after.has_value());
  EXPECT_EQ(node1_after->series, node1_before->series);
  const IngestStats stats = ingestor_->Stats();
  EXPECT_EQ(stats.scrapes, 3u);
  EXPECT_EQ(stats.scrapes_rejected, 0u);

  // What is served: node-0 from its second scrape, node-1 still from its first.
  ASSERT_TRUE(PollUntil(
      [&] {
        const metrics_api::StatisticsList memory = ServedMemory("node-0");
        return !memory.empty() && memory[0].endtime == second;
      },
      kReady));
  EXPECT_EQ(ServedMemory("node-1"), served_before);

  const std::string metrics = prometheus::TextSerializer().Serialize(registry_.Collect());
  EXPECT_THAT(metrics, HasSubstr("kubestat_scrapes_total{outcome=\"failure\",reason=\"bad_"
                                 "timestamp\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("kubestat_node_scrape_failures_total{node=\"node-1\",reason="
                                 "\"bad_timestamp\"} 1"));
}

// A live source each of whose node reads asks for one more (as scrapes that never stop
// arriving do: a round at 5,000 nodes takes most of the resolution), so the publisher's queue
// of nodes to read is never empty when it looks.
class EndlessReads final : public MetricsSource {
 public:
  explicit EndlessReads(const MetricsSource* inner) : inner_(inner) {}
  ScrapePublisher* publisher = nullptr;

  bool Ready() const override { return inner_->Ready(); }
  std::vector<metrics_api::NodeMetrics> ListNodes() const override { return inner_->ListNodes(); }
  std::optional<metrics_api::NodeMetrics> GetNode(std::string_view name) const override {
    return inner_->GetNode(name);
  }
  std::vector<metrics_api::PodMetrics> ListPods(std::string_view namespace_name) const override {
    return inner_->ListPods(namespace_name);
  }
  std::optional<metrics_api::PodMetrics> GetPod(std::string_view namespace_name,
                                                std::string_view name) const override {
    return inner_->GetPod(namespace_name, name);
  }
  std::optional<NodeObjects> ObjectsOfNode(std::string_view node) const override {
    reads_.fetch_add(1);
    publisher->RequestNodeRead("node-" + std::to_string(reads_.load() % 4096), Timestamp{});
    return inner_->ObjectsOfNode(node);
  }
  uint64_t reads() const { return reads_.load(); }

 private:
  const MetricsSource* inner_;
  mutable std::atomic<uint64_t> reads_{0};
};

// A round's publication does not wait for the queue of node reads to run dry: it comes
// after the nodes queued when the round ended are read, whatever is queued after. The
// injected clock stands still, so the pacer allows one publication mid-round and no other:
// a later one is the round's.
TEST_F(ScrapePublisherTest, ARoundIsPublishedWhileNodeReadsKeepArriving) {
  EndlessReads live(state_.get());
  SnapshotSource snapshot(&live);
  WatchHub hub(&snapshot);
  ScrapePublisher publisher("", clock_, *ingestor_, *store_, *metrics_, snapshot, hub,
                            PublishPacer(std::chrono::milliseconds(500), 0.1));
  live.publisher = &publisher;
  publisher.RequestNodeRead("node-0", clock_.Now());
  ASSERT_TRUE(PollUntil([&] { return snapshot.Stats().publishes >= 1; }, kReady));
  const uint64_t before = snapshot.Stats().publishes;
  publisher.RequestPublish(clock_.Now(), /*reread_all=*/false);
  EXPECT_TRUE(PollUntil([&] { return snapshot.Stats().publishes > before; }, kReady))
      << "the round's publication waited behind " << live.reads() << " node reads";
  EXPECT_GT(live.reads(), 1u);
}

// The publish lag counts from when a node's scrape was stored to the publication that
// serves it: two nodes stored 2.5 s and 0.7 s before the round's publication (no paced
// publication in between) land in the buckets of their lags, and the publication's own
// duration is observed once.
TEST_F(ScrapePublisherTest, PublishLagCountsFromTheStoredScrapeToItsPublication) {
  SnapshotSource snapshot(state_.get());
  WatchHub hub(&snapshot);
  ScrapePublisher publisher("", clock_, *ingestor_, *store_, *metrics_, snapshot, hub,
                            PublishPacer(Duration::zero(), 0.1));
  publisher.RequestNodeRead("node-0", clock_.Now());
  clock_.Advance(std::chrono::milliseconds(1800));
  publisher.RequestNodeRead("node-1", clock_.Now());
  clock_.Advance(std::chrono::milliseconds(700));
  publisher.RequestPublish(clock_.Now(), /*reread_all=*/false);
  const auto metrics = [&] { return prometheus::TextSerializer().Serialize(registry_.Collect()); };
  ASSERT_TRUE(PollUntil(
      [&] {
        return metrics().find("kubestat_publish_duration_seconds_count 1") != std::string::npos;
      },
      kReady))
      << metrics();
  const std::string text = metrics();
  EXPECT_THAT(text, HasSubstr("kubestat_publish_lag_seconds_count 2"));
  EXPECT_THAT(text, HasSubstr("kubestat_publish_lag_seconds_bucket{le=\"0.5\"} 0"));
  EXPECT_THAT(text, HasSubstr("kubestat_publish_lag_seconds_bucket{le=\"0.75\"} 1"));
  EXPECT_THAT(text, HasSubstr("kubestat_publish_lag_seconds_bucket{le=\"2\"} 1"));
  EXPECT_THAT(text, HasSubstr("kubestat_publish_lag_seconds_bucket{le=\"3\"} 2"));
  EXPECT_THAT(text, HasSubstr("kubestat_publish_lag_seconds_sum 3.2"));
}

// The publication at start returns once a snapshot that re-read every node is served: the
// nodes ingested before it (as the rebuild leaves them) are served and the source is ready
// as soon as it returns, with no round scraped; a second call serves what was ingested
// since the first.
TEST_F(ScrapePublisherTest, PublicationAtStartReturnsWithEveryNodeServed) {
  const auto ingest = [&](const std::string& node) {
    kubelets_.Stamp(node, clock_.Now());
    absl::StatusOr<scrapers::NodeScrape> scrape = kubelets_.Scrape({node, "127.0.0.1", 10250});
    ASSERT_TRUE(scrape.ok()) << scrape.status();
    ASSERT_TRUE(ingestor_->Ingest(*scrape).ok());
  };
  ingest("node-0");
  ingest("node-1");
  ASSERT_FALSE(snapshot_->Ready());
  publisher_->PublishAtStart(clock_.Now());
  EXPECT_TRUE(snapshot_->Ready());
  EXPECT_EQ(snapshot_->Stats().refreshes, 1u);
  ASSERT_TRUE(snapshot_->GetNode("node-0").has_value());
  ASSERT_TRUE(snapshot_->GetNode("node-1").has_value());
  const Timestamp first_end = ServedMemory("node-0").at(0).endtime;
  clock_.Advance(std::chrono::seconds(10));
  ingest("node-0");
  publisher_->PublishAtStart(clock_.Now());
  EXPECT_EQ(snapshot_->Stats().refreshes, 2u);
  EXPECT_EQ(ServedMemory("node-0").at(0).endtime, first_end + std::chrono::seconds(10));
}

}  // namespace
}  // namespace kubestat::aggregator
