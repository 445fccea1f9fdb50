// The recommender against a real store and ingestor, with a fake clock and discovery: the
// history of a workload container is every pod's the workload had, gone pods included.
#include "kubestat/aggregator/query/recommender.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/storage/store.h"
#include "kubestat/testing/aggregator/ingest_scrape_builder.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::aggregator {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr char kHash[] = "7c9d8";

// Discovery's pods: those of Deployment `web` (through its ReplicaSet) and bare ones.
class FakeWorkloads final : public WorkloadSource {
 public:
  void AddWebPod(const std::string& name, const std::string& node) {
    discovery::PodInfo pod;
    pod.name = name;
    pod.namespace_name = "shop";
    pod.node_name = node;
    pod.owner_kind = "ReplicaSet";
    pod.owner_name = std::string("web-") + kHash;
    pod.labels = {{"app", "web"}, {"pod-template-hash", kHash}};
    pod.containers = {{"app", {}, {}}};
    pods_[name] = std::move(pod);
  }
  void Remove(const std::string& name) { pods_.erase(name); }

  std::vector<discovery::PodInfo> Pods(std::string_view namespace_name) const override {
    std::vector<discovery::PodInfo> out;
    for (const auto& entry : pods_) {
      if (namespace_name.empty() || entry.second.namespace_name == namespace_name) {
        out.push_back(entry.second);
      }
    }
    return out;
  }
  std::optional<limits::Workload> WorkloadOfPod(std::string_view namespace_name,
                                                std::string_view name) const override {
    auto it = pods_.find(std::string(name));
    if (it == pods_.end() || it->second.namespace_name != namespace_name) return std::nullopt;
    const discovery::PodInfo& p = it->second;
    return limits::WorkloadOf(p.name, p.owner_kind, p.owner_name, p.labels);
  }
  std::vector<limits::LimitRange> LimitRanges(std::string_view) const override { return {}; }

 private:
  std::map<std::string, discovery::PodInfo> pods_;
};

class RecommenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    storage::StoreOptions options;
    options.dir = dir_.File("db");
    options.block_cache_bytes = 4 << 20;
    options.write_buffer_bytes = 4 << 20;
    auto store = storage::Store::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    auto ingestor = Ingestor::Create(IngestOptions{}, store_.get(), &clock_, &workloads_);
    ASSERT_TRUE(ingestor.ok()) << ingestor.status();
    ingestor_ = *std::move(ingestor);
    ASSERT_TRUE(ingestor_->Rebuild().ok());
  }

  // Scrapes of `node` every 10 minutes in [from, through], its pods' container "app" at
  // `memory[pod]` bytes (and a cpu counter), the clock following.
  void Scrape(const std::string& node, const std::map<std::string, uint64_t>& memory,
              Timestamp from, Timestamp through) {
    for (Timestamp t = from; t <= through; t += minutes(10)) {
      scrapers::NodeScrape s;
      s.node_name = node;
      s.memory = scrapers::MemorySample{t, uint64_t{8} << 30};
      for (const auto& [pod, bytes] : memory) {
        scrapers::PodScrape p;
        p.name = pod;
        p.namespace_name = "shop";
        const uint64_t counter = static_cast<uint64_t>((t - kT0) / minutes(10)) * 60'000'000'000;
        p.containers.push_back(testing::MakeContainer("app", t, counter, bytes));
        s.pods.push_back(std::move(p));
      }
      ASSERT_TRUE(ingestor_->IngestAt(s, t).ok());
      if (clock_.Now() < t) clock_.Set(t);
    }
  }

  const limits::RecommendedValue& MemoryRequest(const limits::Recommendation& r) {
    return r.requests[static_cast<size_t>(limits::Resource::kMemory)];
  }

  const Timestamp kT0 = Timestamp(hours(24 * 20000));  // hour-aligned
  ::kubestat::testing::TempDir dir_;
  FakeClock clock_{kT0};
  FakeWorkloads workloads_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<Ingestor> ingestor_;
};

// Pod A of Deployment web has five closed hours of history and is deleted; pods B and C of
// the rolled-out ReplicaSet run on two nodes in the same hours. The recommendation for web's
// container counts A's samples (and its peak, which only A had) with B's and C's.
TEST_F(RecommenderTest, WorkloadHistorySurvivesItsPodsBeingReplaced) {
  const std::string a = std::string("web-") + kHash + "-aaaaa";
  workloads_.AddWebPod(a, "n1");
  Scrape("n1", {{a, 300 * kMiB}}, kT0, kT0 + hours(5));  // closes hours 0..4: 30 samples
  ASSERT_TRUE(ingestor_->DeletePod("shop", a, "n1").ok());
  workloads_.Remove(a);

  const std::string b = std::string("web-") + kHash + "-bbbbb";
  const std::string c = std::string("web-") + kHash + "-ccccc";
  workloads_.AddWebPod(b, "n1");
  workloads_.AddWebPod(c, "n2");
  const Timestamp from = kT0 + hours(5) + minutes(10), through = kT0 + hours(8) + minutes(30);
  Scrape("n1", {{b, 100 * kMiB}}, from, through);
  Scrape("n2", {{c, 120 * kMiB}}, from, through);

  Recommender recommender(RecommenderOptions{}, *ingestor_, *store_, workloads_, clock_);
  absl::StatusOr<limits::Recommendation> r = recommender.Get("shop", "deployment.web.app");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->pods, 2u);
  // A: 5 hours x 6 samples; B and C: 5:10 .. 8:30, 21 samples each (closed hours 5 and 6 from
  // the history, 7:00 .. 8:30 from the samples).
  const limits::RecommendedValue& memory = MemoryRequest(*r);
  EXPECT_EQ(memory.history.samples, 30u + 2 * 21u);
  EXPECT_EQ(memory.history.from, kT0);
  EXPECT_EQ(memory.usage, 300.0 * kMiB);  // A's peak
  EXPECT_GT(memory.confidence, 8.0 / 192 - 1e-9);
}

// A repeated request takes the closed hours from the cache: it reads no usage histogram
// and answers the same; the next hour (the window moved) reads them again. Without a cache
// every request reads them.
TEST_F(RecommenderTest, RepeatedRequestsTakeTheClosedHistoryFromTheCache) {
  const std::string a = std::string("web-") + kHash + "-aaaaa";
  workloads_.AddWebPod(a, "n1");
  Scrape("n1", {{a, 300 * kMiB}}, kT0, kT0 + hours(5) + minutes(30));

  Recommender cached(RecommenderOptions{}, *ingestor_, *store_, workloads_, clock_);
  RecommenderOptions no_cache_options;
  no_cache_options.cache_bytes = 0;
  Recommender uncached(no_cache_options, *ingestor_, *store_, workloads_, clock_);

  RecommenderCost first, next, plain;
  auto r1 = cached.List("shop", {}, &first);
  auto r2 = cached.List("shop", {}, &next);
  auto r3 = uncached.List("", {}, &plain);
  ASSERT_TRUE(r1.ok() && r2.ok() && r3.ok());
  ASSERT_EQ(r1->size(), 1u);
  EXPECT_EQ(first.cache_misses, 2u);     // cpu and memory of container app
  EXPECT_EQ(first.history_records, 8u);  // hours 0..3 closed before the previous one, x2
  EXPECT_EQ(next.cache_hits, 2u);
  EXPECT_EQ(next.cache_misses, 0u);
  EXPECT_EQ(next.history_records, 0u);
  for (const auto* r : {&*r2, &*r3}) {
    EXPECT_EQ(MemoryRequest(r->front()).history, MemoryRequest(r1->front()).history);
    EXPECT_EQ(MemoryRequest(r->front()).value, MemoryRequest(r1->front()).value);
    EXPECT_EQ(r->front().requests[0].usage, r1->front().requests[0].usage);
  }
  EXPECT_EQ(MemoryRequest(r1->front()).history.samples, 34u);  // 5:30 included
  EXPECT_EQ(plain.cache_misses, 2u);
  EXPECT_EQ(uncached.CacheStats().entries, 0u);
  const RecommenderCacheStats stats = cached.CacheStats();
  EXPECT_EQ(stats.hits, 2u);
  EXPECT_EQ(stats.misses, 2u);
  EXPECT_EQ(stats.entries, 4u);  // cpu and memory: the closed hours, the previous hour
  EXPECT_GT(stats.bytes, 0u);

  // An hour later the hour 4 has closed before the previous one: read, with the rest again.
  Scrape("n1", {{a, 300 * kMiB}}, kT0 + hours(5) + minutes(40), kT0 + hours(6) + minutes(30));
  RecommenderCost later;
  auto r4 = cached.List("shop", {}, &later);
  ASSERT_TRUE(r4.ok());
  EXPECT_EQ(later.cache_misses, 2u);
  EXPECT_EQ(later.history_records, 10u);
  EXPECT_EQ(MemoryRequest(r4->front()).history.samples, 40u);
}

// The cache stays within its bytes, evicting the least recently used entries (counted).
TEST_F(RecommenderTest, CacheEvictsToStayWithinItsBytes) {
  for (const char* pod : {"web-7c9d8-aaaaa"}) workloads_.AddWebPod(pod, "n1");
  Scrape("n1", {{"web-7c9d8-aaaaa", 300 * kMiB}}, kT0, kT0 + hours(3));
  RecommenderOptions options;
  Recommender probe(options, *ingestor_, *store_, workloads_, clock_);
  ASSERT_TRUE(probe.List("").ok());
  const uint64_t all_entries = probe.CacheStats().bytes;
  ASSERT_EQ(probe.CacheStats().entries, 4u);
  ASSERT_EQ(probe.CacheStats().evictions, 0u);

  options.cache_bytes = all_entries - 1;  // no room for the last one
  Recommender small(options, *ingestor_, *store_, workloads_, clock_);
  ASSERT_TRUE(small.List("").ok());
  RecommenderCacheStats stats = small.CacheStats();
  EXPECT_EQ(stats.entries, 3u);
  EXPECT_EQ(stats.evictions, 1u);
  EXPECT_LE(stats.bytes, options.cache_bytes);
  RecommenderCost cost;
  ASSERT_TRUE(small.List("", {}, &cost).ok());
  EXPECT_EQ(cost.cache_hits + cost.cache_misses, 2u);
  EXPECT_GE(cost.cache_misses, 1u);  // the least recently used went first
  EXPECT_LE(small.CacheStats().bytes, options.cache_bytes);
}

}  // namespace
}  // namespace kubestat::aggregator
