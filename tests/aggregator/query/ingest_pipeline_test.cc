#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/aggregator/ingest/series_registry.h"
#include "kubestat/aggregator/query/aggregator_state.h"
#include "kubestat/testing/aggregator/fake_label_provider.h"
#include "kubestat/testing/aggregator/ingest_scrape_builder.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::aggregator {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::ElementsAre;
using testing::FakeLabels;
using testing::MakeContainer;

const Timestamp kT0 = Timestamp(std::chrono::hours(24 * 20000));

class IngestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenStore();
    ingestor_ = NewIngestor();
  }

  // The test's store (in its own directory unless `dir` names another).
  std::unique_ptr<storage::Store> OpenStore(std::string dir = {}) {
    storage::StoreOptions options;
    options.dir = dir.empty() ? dir_.File("db") : std::move(dir);
    options.block_cache_bytes = 4 << 20;
    options.write_buffer_bytes = 4 << 20;
    auto store = storage::Store::Open(options);
    EXPECT_TRUE(store.ok()) << store.status();
    return std::move(*store);
  }

  std::unique_ptr<Ingestor> NewIngestor(size_t shards = 4) {
    IngestOptions options;
    options.shards = shards;
    auto ingestor = Ingestor::Create(options, store_.get(), &clock_);
    EXPECT_TRUE(ingestor.ok()) << ingestor.status();
    EXPECT_TRUE((*ingestor)->Rebuild().ok());
    return std::move(*ingestor);
  }

  // The newest window stats of one series (the 1m window), or nullopt.
  std::optional<windows::WindowStats> Minute(const windows::SeriesKey& key) {
    for (const windows::SeriesWindows& w : ingestor_->QueryAll()) {
      if (w.key == key) return w.windows[1];
    }
    return std::nullopt;
  }

  static scrapers::NodeScrape Node(Timestamp t, std::optional<uint64_t> cpu,
                                   std::optional<uint64_t> memory) {
    scrapers::NodeScrape s;
    s.node_name = "n1";
    if (cpu) s.cpu = scrapers::CpuSample{t, cpu, std::nullopt};
    s.memory = scrapers::MemorySample{t, memory};
    return s;
  }

  ::kubestat::testing::TempDir dir_;
  FakeClock clock_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<Ingestor> ingestor_;
};

TEST_F(IngestTest, CpuIsTheCounterRateAndTheFirstScrapeGivesNone) {
  ASSERT_TRUE(ingestor_->Ingest(Node(kT0, 5'000'000'000, 100)).ok());
  EXPECT_FALSE(Minute(windows::SeriesKey::Node("n1", windows::Resource::kCpu)));
  EXPECT_EQ(Minute(windows::SeriesKey::Node("n1", windows::Resource::kMemory))->max, 100u);
  // 1.5 s of cpu over 10 s: 0.15 cores = 150,000,000 nanocores.
  ASSERT_TRUE(ingestor_->Ingest(Node(kT0 + seconds(10), 6'500'000'000, 200)).ok());
  // 1 ns of cpu over 3 s rounds to 0.
  ASSERT_TRUE(ingestor_->Ingest(Node(kT0 + seconds(13), 6'500'000'001, 300)).ok());
  auto cpu = Minute(windows::SeriesKey::Node("n1", windows::Resource::kCpu));
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->count, 2u);
  EXPECT_EQ(cpu->max, 150'000'000u);
  EXPECT_EQ(cpu->min, 0u);
  EXPECT_EQ(Minute(windows::SeriesKey::Node("n1", windows::Resource::kMemory))->count, 3u);
}

TEST_F(IngestTest, CounterGoingBackwardsStartsANewSegment) {
  const windows::SeriesKey cpu = windows::SeriesKey::Node("n1", windows::Resource::kCpu);
  ASSERT_TRUE(ingestor_->Ingest(Node(kT0, 1'000'000'000, 1)).ok());
  ASSERT_TRUE(ingestor_->Ingest(Node(kT0 + seconds(10), 2'000'000'000, 1)).ok());  // 100m
  ASSERT_TRUE(ingestor_->Ingest(Node(kT0 + seconds(20), 500'000'000, 1)).ok());    // reset
  ASSERT_TRUE(ingestor_->Ingest(Node(kT0 + seconds(30), 2'500'000'000, 1)).ok());  // 200m
  auto stats = Minute(cpu);
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->count, 2u);
  EXPECT_EQ(stats->min, 100'000'000u);
  EXPECT_EQ(stats->max, 200'000'000u);
  EXPECT_EQ(ingestor_->Stats().counter_resets, 1u);
}

TEST_F(IngestTest, RestartedContainerGivesNoRateForThatStep) {
  auto scrape = [&](Timestamp t, uint64_t counter, Timestamp start) {
    scrapers::NodeScrape s = Node(t, std::nullopt, 1);
    scrapers::PodScrape pod;
    pod.name = "web";
    pod.namespace_name = "shop";
    pod.containers.push_back(MakeContainer("app", t, counter, 10, start));
    s.pods.push_back(pod);
    return s;
  };
  const Timestamp start1 = kT0 - hours(1), start2 = kT0 + seconds(15);
  ASSERT_TRUE(ingestor_->Ingest(scrape(kT0, 10'000'000'000, start1)).ok());
  ASSERT_TRUE(ingestor_->Ingest(scrape(kT0 + seconds(10), 11'000'000'000, start1)).ok());
  // Restarted: the counter is higher than before, but it is a new container.
  ASSERT_TRUE(ingestor_->Ingest(scrape(kT0 + seconds(20), 12'000'000'000, start2)).ok());
  ASSERT_TRUE(ingestor_->Ingest(scrape(kT0 + seconds(30), 12'300'000'000, start2)).ok());
  auto stats =
      Minute(windows::SeriesKey::Container("n1", "shop", "web", "app", windows::Resource::kCpu));
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->count, 2u);
  EXPECT_EQ(stats->max, 100'000'000u);
  EXPECT_EQ(stats->min, 30'000'000u);
}

TEST_F(IngestTest, MissingReadingLeavesAGapAndTheNextRateSpansIt) {
  const windows::SeriesKey cpu = windows::SeriesKey::Node("n1", windows::Resource::kCpu);
  ASSERT_TRUE(ingestor_->Ingest(Node(kT0, 0, 1)).ok());
  ASSERT_TRUE(ingestor_->Ingest(Node(kT0 + seconds(10), std::nullopt, 1)).ok());
  ASSERT_TRUE(ingestor_->Ingest(Node(kT0 + seconds(20), 4'000'000'000, 1)).ok());
  auto stats = Minute(cpu);
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->count, 1u);
  EXPECT_EQ(stats->max, 200'000'000u);  // 4 s over 20 s
}

TEST_F(IngestTest, RepeatedCachedReadingGivesNoRate) {
  scrapers::NodeScrape s1 = Node(kT0, 1'000'000'000, 1);
  scrapers::NodeScrape s2 = Node(kT0 + seconds(10), 2'000'000'000, 1);
  scrapers::NodeScrape s3 = s2;  // the kubelet served the same cpu reading again
  ASSERT_TRUE(ingestor_->Ingest(s1).ok());
  ASSERT_TRUE(ingestor_->Ingest(s2).ok());
  ASSERT_TRUE(ingestor_->IngestAt(s3, kT0 + seconds(20)).ok());
  EXPECT_EQ(Minute(windows::SeriesKey::Node("n1", windows::Resource::kCpu))->count, 1u);
  EXPECT_EQ(Minute(windows::SeriesKey::Node("n1", windows::Resource::kMemory))->count, 3u);
}

TEST_F(IngestTest, ScrapesNotNewerThanThePreviousAreRejected) {
  ASSERT_TRUE(ingestor_->Ingest(Node(kT0, 0, 1)).ok());
  EXPECT_EQ(ingestor_->Ingest(Node(kT0, 0, 1)).code(), absl::StatusCode::kFailedPrecondition);
  scrapers::NodeScrape nameless = Node(kT0 + seconds(1), 0, 1);
  nameless.node_name.clear();
  EXPECT_EQ(ingestor_->Ingest(nameless).code(), absl::StatusCode::kInvalidArgument);
  scrapers::NodeScrape timeless;
  timeless.node_name = "n2";
  EXPECT_EQ(ingestor_->Ingest(timeless).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ingestor_->Stats().scrapes_rejected, 3u);
}

scrapers::NodeScrape PodScrape(Timestamp t, uint64_t step, bool include_b_memory = true,
                               bool with_pod = true) {
  scrapers::NodeScrape s;
  s.node_name = "n1";
  s.memory = scrapers::MemorySample{t, 1};
  if (!with_pod) return s;
  scrapers::PodScrape pod;
  pod.name = "web";
  pod.namespace_name = "shop";
  pod.containers.push_back(MakeContainer("a", t, step * 1'000'000'000, 100 + step));
  pod.containers.push_back(
      MakeContainer("b", t, step * 3'000'000'000,
                    include_b_memory ? std::optional<uint64_t>(1000) : std::nullopt));
  s.pods.push_back(pod);
  return s;
}

TEST_F(IngestTest, PodValueIsTheSumOfItsContainersAtEachScrape) {
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(ingestor_->Ingest(PodScrape(kT0 + seconds(10 * i), i, i != 2)).ok());
  }
  auto cpu = Minute(windows::SeriesKey::Pod("n1", "shop", "web", windows::Resource::kCpu));
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->count, 3u);
  EXPECT_EQ(cpu->max, 400'000'000u);  // 100m + 300m
  EXPECT_EQ(cpu->min, 400'000'000u);
  // Step 2 lacks container b's memory: no pod memory sample for that step.
  auto memory = Minute(windows::SeriesKey::Pod("n1", "shop", "web", windows::Resource::kMemory));
  ASSERT_TRUE(memory);
  EXPECT_EQ(memory->count, 3u);
  EXPECT_EQ(memory->min, 1100u);
  EXPECT_EQ(memory->max, 1103u);
  auto pod = ingestor_->QueryPod("shop", "web");
  ASSERT_TRUE(pod);
  EXPECT_EQ(pod->pod.node, "n1");
  ASSERT_EQ(pod->series.size(), 6u);  // pod cpu/memory, then a and b
  EXPECT_EQ(pod->series[0].key.kind, windows::ObjectKind::kPod);
}

// The first scrape stores no cpu sample (a rate needs two readings), so the shape kept for
// the next scrapes holds the cpu series' keys itself; once the second scrape has stored
// them, the node's map holds those keys and the shape lets its own copies go.
TEST_F(IngestTest, TheKeptShapeLetsItsOwnKeysGoOnceTheirSeriesAreStored) {
  testing::SyntheticCluster cluster(1, 30, 2, 7);
  ASSERT_TRUE(ingestor_->Ingest(cluster.Scrape(0, kT0)).ok());
  const size_t first = ingestor_->MemoryByPart().nodes;
  ASSERT_TRUE(ingestor_->Ingest(cluster.Scrape(0, kT0 + seconds(10))).ok());
  const size_t second = ingestor_->MemoryByPart().nodes;
  // One cpu series per object: the node, 3 system containers, 30 pods and 60 containers.
  EXPECT_LE(second + 94 * sizeof(windows::SeriesKey), first);
  ASSERT_TRUE(ingestor_->Ingest(cluster.Scrape(0, kT0 + seconds(20))).ok());
  EXPECT_EQ(ingestor_->MemoryByPart().nodes, second);
  auto cpu = Minute(
      windows::SeriesKey::Container("node-0", "shop", "pod-0-1", "c1", windows::Resource::kCpu));
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->count, 2u);
}

TEST_F(IngestTest, PodThatDisappearsLeavesAtOnceAndComesBackEmpty) {
  ASSERT_TRUE(ingestor_->Ingest(PodScrape(kT0, 0)).ok());
  ASSERT_TRUE(ingestor_->Ingest(PodScrape(kT0 + seconds(10), 1)).ok());
  ASSERT_EQ(ingestor_->ListPods().size(), 1u);
  ASSERT_TRUE(ingestor_->Ingest(PodScrape(kT0 + seconds(20), 2, true, false)).ok());
  EXPECT_TRUE(ingestor_->ListPods().empty());
  EXPECT_FALSE(ingestor_->QueryPod("shop", "web"));
  EXPECT_EQ(ingestor_->Stats().series_retired, 6u);
  ASSERT_TRUE(ingestor_->Ingest(PodScrape(kT0 + seconds(30), 3)).ok());
  auto memory =
      Minute(windows::SeriesKey::Container("n1", "shop", "web", "a", windows::Resource::kMemory));
  ASSERT_TRUE(memory);
  EXPECT_EQ(memory->count, 1u);  // the old samples do not come back
  // And not after a rebuild either.
  ingestor_ = NewIngestor();
  memory =
      Minute(windows::SeriesKey::Container("n1", "shop", "web", "a", windows::Resource::kMemory));
  ASSERT_TRUE(memory);
  EXPECT_EQ(memory->count, 1u);
}

TEST_F(IngestTest, ADeletedPodIsLookedForOnItsNodeAloneWhenTheNodeIsGiven) {
  // The same pod name reported by two nodes: the pod deleted is the one on the node named.
  scrapers::NodeScrape other = PodScrape(kT0, 0);
  other.node_name = "n2";
  ASSERT_TRUE(ingestor_->Ingest(PodScrape(kT0, 0)).ok());
  ASSERT_TRUE(ingestor_->Ingest(other).ok());
  EXPECT_FALSE(*ingestor_->DeletePod("shop", "web", "n3"));  // not on that node
  EXPECT_FALSE(*ingestor_->DeletePod("shop", "absent", "n1"));
  const size_t series = ingestor_->QueryAll().size();
  ASSERT_TRUE(*ingestor_->DeletePod("shop", "web", "n2"));
  EXPECT_LT(ingestor_->QueryAll().size(), series);
  EXPECT_FALSE(
      Minute(windows::SeriesKey::Container("n2", "shop", "web", "a", windows::Resource::kMemory)));
  EXPECT_TRUE(
      Minute(windows::SeriesKey::Container("n1", "shop", "web", "a", windows::Resource::kMemory)));
}

TEST_F(IngestTest, DeletedPodLeavesAndIsIgnoredUntilItDisappears) {
  ASSERT_TRUE(ingestor_->Ingest(PodScrape(kT0, 0)).ok());
  auto deleted = ingestor_->DeletePod("shop", "web");
  ASSERT_TRUE(deleted.ok());
  EXPECT_TRUE(*deleted);
  EXPECT_FALSE(ingestor_->QueryPod("shop", "web"));
  // The kubelet still reports it for a while: ignored.
  ASSERT_TRUE(ingestor_->Ingest(PodScrape(kT0 + seconds(10), 1)).ok());
  EXPECT_TRUE(ingestor_->ListPods().empty());
  ASSERT_TRUE(ingestor_->Ingest(PodScrape(kT0 + seconds(20), 2, true, false)).ok());
  // A new pod of that name later is a new pod.
  ASSERT_TRUE(ingestor_->Ingest(PodScrape(kT0 + seconds(30), 3)).ok());
  EXPECT_EQ(ingestor_->ListPods().size(), 1u);
  EXPECT_FALSE(*ingestor_->DeletePod("shop", "absent"));
  // Deleting the node removes everything it had.
  EXPECT_TRUE(*ingestor_->DeleteNode("n1"));
  EXPECT_TRUE(ingestor_->ListNodes().empty());
  EXPECT_TRUE(ingestor_->QueryAll().empty());
  ingestor_ = NewIngestor();
  EXPECT_TRUE(ingestor_->QueryAll().empty());
}

TEST_F(IngestTest, IngestBeforeRebuildIsRefused) {
  auto fresh = Ingestor::Create(IngestOptions{}, store_.get(), &clock_);
  ASSERT_TRUE(fresh.ok());
  EXPECT_FALSE((*fresh)->ready());
  EXPECT_EQ((*fresh)->Ingest(Node(kT0, 0, 1)).code(), absl::StatusCode::kFailedPrecondition);
}

// A day and more through the pipeline, then a second ingestor rebuilt from the same store
// reports every window of every series exactly as the one that ingested it all.
TEST_F(IngestTest, RebuildFromTheStoreEqualsTheLiveWindows) {
  testing::SyntheticCluster cluster(3, 4, 2, 99);
  const Duration step = seconds(60);
  for (Timestamp t = kT0; t < kT0 + hours(27) + minutes(17); t += step) {
    for (size_t n = 0; n < cluster.nodes(); ++n) {
      ASSERT_TRUE(ingestor_->IngestAt(cluster.Scrape(n, t), t + seconds(n)).ok());
    }
  }
  const IngestStats stats = ingestor_->Stats();
  EXPECT_GT(stats.rollups_written, 27u * 3 * 26);
  EXPECT_EQ(stats.engine_errors, 0u);
  const std::vector<windows::SeriesWindows> live = ingestor_->QueryAll();
  ASSERT_EQ(live.size(), 3u * (2 + 6 + 4 * 2 + 8 * 2));
  clock_.Advance(seconds(3));
  auto rebuilt = NewIngestor(3);
  EXPECT_EQ(rebuilt->Stats().rebuild_errors, 0u);
  EXPECT_EQ(rebuilt->Stats().rebuilt_series, live.size());
  const std::vector<windows::SeriesWindows> restored = rebuilt->QueryAll();
  ASSERT_EQ(restored.size(), live.size());
  for (size_t i = 0; i < live.size(); ++i) {
    ASSERT_EQ(restored[i], live[i]) << live[i].key.ToString();
  }
  EXPECT_EQ(rebuilt->ListPods(), ingestor_->ListPods());
  // And ingestion continues from there in both alike.
  const Timestamp t = kT0 + hours(28);
  for (size_t n = 0; n < cluster.nodes(); ++n) {
    scrapers::NodeScrape s = cluster.Scrape(n, t);
    ASSERT_TRUE(rebuilt->IngestAt(s, t).ok());
  }
  EXPECT_EQ(rebuilt->Stats().engine_errors, 0u);
}

// The samples Ingest takes from a SyntheticCluster scrape (every reading present, no
// resets): the rate of each cpu counter since the previous scrape over the counter's own
// timestamps, rounded to the nearest nanocore (none on the first scrape), working sets,
// and each pod the sum of its containers.
class ExpectedSamples {
 public:
  std::map<windows::SeriesKey, std::optional<uint64_t>> Next(const scrapers::NodeScrape& s) {
    std::map<windows::SeriesKey, std::optional<uint64_t>> out;
    auto object = [&](windows::SeriesKey cpu, windows::SeriesKey memory,
                      const scrapers::CpuSample& c, const scrapers::MemorySample& m) {
      std::optional<uint64_t> rate;
      auto previous = counters_.find(cpu);
      if (previous != counters_.end()) {
        const auto dt = static_cast<unsigned __int128>((c.time - previous->second.first).count());
        const auto delta =
            static_cast<unsigned __int128>(*c.usage_core_nanoseconds - previous->second.second);
        rate = static_cast<uint64_t>((delta * 1000000000u + dt / 2) / dt);
      }
      counters_[cpu] = {c.time, *c.usage_core_nanoseconds};
      out[cpu] = rate;
      out[memory] = *m.working_set_bytes;
      return std::pair(rate, *m.working_set_bytes);
    };
    object(windows::SeriesKey::Node(s.node_name, windows::Resource::kCpu),
           windows::SeriesKey::Node(s.node_name, windows::Resource::kMemory), *s.cpu, *s.memory);
    for (const scrapers::ContainerScrape& c : s.system_containers) {
      object(windows::SeriesKey::SystemContainer(s.node_name, c.name, windows::Resource::kCpu),
             windows::SeriesKey::SystemContainer(s.node_name, c.name, windows::Resource::kMemory),
             *c.cpu, *c.memory);
    }
    for (const scrapers::PodScrape& pod : s.pods) {
      std::optional<uint64_t> cpu = 0;
      uint64_t memory = 0;
      for (const scrapers::ContainerScrape& c : pod.containers) {
        auto [rate, bytes] =
            object(windows::SeriesKey::Container(s.node_name, pod.namespace_name, pod.name, c.name,
                                                 windows::Resource::kCpu),
                   windows::SeriesKey::Container(s.node_name, pod.namespace_name, pod.name, c.name,
                                                 windows::Resource::kMemory),
                   *c.cpu, *c.memory);
        cpu = cpu && rate ? std::optional(*cpu + *rate) : std::nullopt;
        memory += bytes;
      }
      out[windows::SeriesKey::Pod(s.node_name, pod.namespace_name, pod.name,
                                  windows::Resource::kCpu)] = cpu;
      out[windows::SeriesKey::Pod(s.node_name, pod.namespace_name, pod.name,
                                  windows::Resource::kMemory)] = memory;
    }
    return out;
  }

 private:
  std::map<windows::SeriesKey, std::pair<Timestamp, uint64_t>> counters_;
};

struct StoredScrape {
  Timestamp time;
  std::vector<storage::SeriesValue> values;
  friend bool operator==(const StoredScrape&, const StoredScrape&) = default;
};
struct StoredRollup {
  storage::SeriesId series;
  Timestamp start;
  std::string bytes;
  friend bool operator==(const StoredRollup&, const StoredRollup&) = default;
};

// Everything the store holds for a node, read through its public API.
std::pair<std::vector<StoredScrape>, std::vector<StoredRollup>> ReadNode(
    const storage::Store& store, storage::NodeId node) {
  std::pair<std::vector<StoredScrape>, std::vector<StoredRollup>> out;
  EXPECT_TRUE(store
                  .ReadScrapes(node, Timestamp::min(), Timestamp::max(),
                               [&](Timestamp t, std::span<const storage::SeriesValue> v) {
                                 out.first.push_back({t, {v.begin(), v.end()}});
                               })
                  .ok());
  EXPECT_TRUE(store
                  .ReadRollups(node, Timestamp::min(), Timestamp::max(),
                               [&](storage::SeriesId id, Timestamp start, std::string_view b) {
                                 out.second.push_back({id, start, std::string(b)});
                               })
                  .ok());
  return out;
}

// A store filled by NodeHistoryWriter (the fast fill of the rebuild benchmark) holds
// exactly what Ingest writes for the same scrapes, so it rebuilds to the same windows.
TEST_F(IngestTest, HistoryWriterFillsTheStoreExactlyAsIngestDoes) {
  testing::SyntheticCluster cluster(3, 4, 2, 99);
  ::kubestat::testing::TempDir other_dir;
  std::unique_ptr<storage::Store> other = OpenStore(other_dir.File("db"));
  ASSERT_NE(other, nullptr);
  std::vector<std::unique_ptr<NodeHistoryWriter>> writers(cluster.nodes());
  std::vector<ExpectedSamples> expected(cluster.nodes());
  const Duration step = seconds(60);
  Timestamp last;
  for (Timestamp t = kT0; t < kT0 + hours(27) + minutes(17); t += step) {
    storage::ScrapeBatch batch;  // one write for the scrapes of every node at t
    for (size_t n = 0; n < cluster.nodes(); ++n) {
      const scrapers::NodeScrape scrape = cluster.Scrape(n, t);
      last = t + seconds(n);
      ASSERT_TRUE(ingestor_->IngestAt(scrape, last).ok());
      const std::map<windows::SeriesKey, std::optional<uint64_t>> samples =
          expected[n].Next(scrape);
      if (!writers[n]) {
        std::vector<windows::SeriesKey> keys;
        for (const auto& [key, value] : samples) keys.push_back(key);
        auto writer = NodeHistoryWriter::Create(ingestor_->engine_options(), other.get(),
                                                cluster.NodeName(n), std::move(keys));
        ASSERT_TRUE(writer.ok()) << writer.status();
        writers[n] = std::move(*writer);
      }
      std::vector<std::optional<uint64_t>> values;
      for (const windows::SeriesKey& key : writers[n]->keys()) values.push_back(samples.at(key));
      ASSERT_TRUE(writers[n]->Append(last, values, &batch).ok());
    }
    ASSERT_TRUE(other->Write(batch).ok());
  }
  // Ingest applied the retention at the top of each hour; the same cutoff here.
  ASSERT_TRUE(other->ApplyRetention(last).ok());

  // Same dictionary (ids are taken in the same order), same blobs, same rollup bytes.
  auto dict = store_->LoadDictionary();
  auto other_dict = other->LoadDictionary();
  ASSERT_TRUE(dict.ok());
  ASSERT_TRUE(other_dict.ok());
  ASSERT_EQ(dict->nodes.size(), cluster.nodes());
  ASSERT_EQ(other_dict->nodes.size(), dict->nodes.size());
  for (size_t i = 0; i < dict->nodes.size(); ++i) {
    EXPECT_EQ(other_dict->nodes[i].id, dict->nodes[i].id);
    EXPECT_EQ(other_dict->nodes[i].name, dict->nodes[i].name);
    EXPECT_EQ(other_dict->nodes[i].id, writers[i]->node_id());
  }
  ASSERT_EQ(other_dict->series.size(), dict->series.size());
  for (size_t i = 0; i < dict->series.size(); ++i) {
    EXPECT_EQ(other_dict->series[i].id, dict->series[i].id);
    EXPECT_EQ(other_dict->series[i].node, dict->series[i].node);
    EXPECT_EQ(other_dict->series[i].key, dict->series[i].key);
  }
  for (const storage::NodeEntry& node : dict->nodes) {
    auto [scrapes, rollups] = ReadNode(*store_, node.id);
    auto [other_scrapes, other_rollups] = ReadNode(*other, node.id);
    EXPECT_GT(scrapes.size(), 26u * 60);
    EXPECT_GT(rollups.size(), 26u * (2 + 6 + 4 * 2 + 8 * 2) - 1);
    EXPECT_TRUE(other_scrapes == scrapes) << node.name;
    EXPECT_TRUE(other_rollups == rollups) << node.name;
  }

  // Rebuilt, both give the live windows.
  const std::vector<windows::SeriesWindows> live = ingestor_->QueryAll();
  IngestOptions options;
  options.shards = 2;
  auto rebuilt = Ingestor::Create(options, other.get(), &clock_);
  ASSERT_TRUE(rebuilt.ok());
  ASSERT_TRUE((*rebuilt)->Rebuild().ok());
  EXPECT_EQ((*rebuilt)->Stats().rebuild_errors, 0u);
  EXPECT_EQ((*rebuilt)->QueryAll(), live);
}

// The rebuild reads each node's blobs once into a per-node cache that many series share
// and the engine asks in any order; more threads than nodes, one shard or many, the
// result is the same.
TEST_F(IngestTest, RebuildGivesTheSameWindowsWithAnyThreadAndShardCount) {
  std::vector<std::unique_ptr<NodeHistoryWriter>> writers;
  for (int n = 0; n < 5; ++n) {
    const std::string name = "node-" + std::to_string(n);
    std::vector<windows::SeriesKey> keys;
    for (windows::Resource r : {windows::Resource::kCpu, windows::Resource::kMemory}) {
      keys.push_back(windows::SeriesKey::Node(name, r));
      keys.push_back(windows::SeriesKey::Pod(name, "ns", "p" + std::to_string(n), r));
      keys.push_back(windows::SeriesKey::Container(name, "ns", "p" + std::to_string(n), "c", r));
    }
    auto writer = NodeHistoryWriter::Create(ingestor_->engine_options(), store_.get(), name, keys);
    ASSERT_TRUE(writer.ok());
    writers.push_back(std::move(*writer));
  }
  std::mt19937_64 rng(7);
  const Timestamp end = kT0 + hours(26) + minutes(31) + seconds(5);
  for (Timestamp t = kT0; t < end; t += seconds(30)) {
    storage::ScrapeBatch batch;
    for (auto& writer : writers) {
      std::vector<std::optional<uint64_t>> values;
      for (size_t i = 0; i < writer->keys().size(); ++i) {
        // Gaps: some scrapes give a series no sample.
        if (rng() % 17 == 0) {
          values.push_back(std::nullopt);
        } else {
          values.push_back(1000 + rng() % 1000000);
        }
      }
      ASSERT_TRUE(writer->Append(t + std::chrono::milliseconds(rng() % 900), values, &batch).ok());
    }
    ASSERT_TRUE(store_->Write(batch).ok());
  }
  std::vector<windows::SeriesWindows> first;
  for (auto [threads, shards] : {std::pair<size_t, size_t>{1, 1}, {2, 16}, {8, 3}, {3, 1}}) {
    IngestOptions options;
    options.rebuild_threads = threads;
    options.shards = shards;
    auto rebuilt = Ingestor::Create(options, store_.get(), &clock_);
    ASSERT_TRUE(rebuilt.ok());
    ASSERT_TRUE((*rebuilt)->Rebuild().ok());
    EXPECT_EQ((*rebuilt)->Stats().rebuild_errors, 0u);
    EXPECT_EQ((*rebuilt)->Stats().rebuilt_series, 5u * 6);
    std::vector<windows::SeriesWindows> windows = (*rebuilt)->QueryAll();
    ASSERT_EQ(windows.size(), 5u * 6);
    // The 1d window holds about a day of 30 s samples, less the gaps.
    EXPECT_GT(windows[0].windows[3].count, 2600u);
    if (first.empty()) {
      first = std::move(windows);
    } else {
      EXPECT_EQ(windows, first) << threads << " threads, " << shards << " shards";
    }
  }
}

TEST_F(IngestTest, HistoryWriterRejectsForeignKeysAndScrapesNotNewer) {
  const windows::WindowEngineOptions& options = ingestor_->engine_options();
  EXPECT_EQ(NodeHistoryWriter::Create(options, store_.get(), "n1",
                                      {windows::SeriesKey::Node("n2", windows::Resource::kCpu)})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NodeHistoryWriter::Create(options, store_.get(), "n1",
                                      {windows::SeriesKey::Node("n1", windows::Resource::kCpu),
                                       windows::SeriesKey::Node("n1", windows::Resource::kCpu)})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(NodeHistoryWriter::Create(options, store_.get(), "", {}).ok());
  auto writer =
      NodeHistoryWriter::Create(options, store_.get(), "n1",
                                {windows::SeriesKey::Node("n1", windows::Resource::kMemory),
                                 windows::SeriesKey::Node("n1", windows::Resource::kCpu)});
  ASSERT_TRUE(writer.ok());
  EXPECT_EQ((*writer)->keys()[0].resource, windows::Resource::kCpu);  // sorted
  storage::ScrapeBatch batch;
  const std::vector<std::optional<uint64_t>> two = {std::nullopt, 5};
  EXPECT_EQ((*writer)->Append(kT0, std::vector<std::optional<uint64_t>>{5}, &batch).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(batch.empty());
  ASSERT_TRUE((*writer)->Append(kT0, two, &batch).ok());
  EXPECT_EQ((*writer)->Append(kT0, two, &batch).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(store_->Write(batch).ok());
  auto rebuilt = NewIngestor();
  auto memory = rebuilt->QueryNode("n1");
  ASSERT_TRUE(memory);
  ASSERT_EQ(memory->series.size(), 1u);  // no cpu sample yet: no cpu series
  EXPECT_EQ(memory->series[0].windows[0].max, 5u);
}

// Every usage histogram the store holds.
std::vector<std::tuple<std::string, storage::SeriesId, Timestamp, std::string>> ReadHistories(
    const storage::Store& store) {
  std::vector<std::tuple<std::string, storage::SeriesId, Timestamp, std::string>> out;
  EXPECT_TRUE(
      store
          .ReadHistory("", Timestamp::min(), Timestamp::max(),
                       [&](std::string_view owner, storage::SeriesId id, Timestamp start,
                           std::string_view bytes) { out.emplace_back(owner, id, start, bytes); })
          .ok());
  return out;
}

// A writer resumed on the store after the first one went and the store was closed and
// reopened (as after a kill) writes what one that never stopped writes: the same
// dictionary, samples, rollups (its open buckets read back from the store) and usage
// histograms, so a rebuild gives the same windows.
TEST_F(IngestTest, ResumedHistoryWriterWritesWhatOneThatNeverStoppedWrites) {
  const std::vector<std::string> names = {"node-0", "node-1"};
  auto keys_of = [](const std::string& name) {
    std::vector<windows::SeriesKey> keys;
    for (windows::Resource r : {windows::Resource::kCpu, windows::Resource::kMemory}) {
      keys.push_back(windows::SeriesKey::Node(name, r));
      keys.push_back(windows::SeriesKey::Pod(name, "ns", "p", r));
      keys.push_back(windows::SeriesKey::Container(name, "ns", "p", "c", r));
    }
    return keys;
  };
  const Duration step = seconds(30);
  const Timestamp end = kT0 + hours(5) + minutes(3);
  // Inside a rollup bucket, so the resumed writer must close one it did not open.
  const Timestamp split = kT0 + hours(3) + minutes(41) + seconds(7);
  // The same values for both runs: values[step][node][key], in the writers' key order.
  // Some scrapes give a series no sample, and series 1 of each node has none for the 100
  // minutes before the split: its open bucket at the split is older than the newest
  // scrape's.
  std::mt19937_64 rng(11);
  std::vector<std::vector<std::vector<std::optional<uint64_t>>>> values;
  for (Timestamp t = kT0; t < end; t += step) {
    values.emplace_back();
    for (size_t n = 0; n < names.size(); ++n) {
      values.back().emplace_back();
      for (size_t i = 0; i < 6; ++i) {
        const bool gap = rng() % 17 == 0 || (i == 1 && t >= split - minutes(100) && t < split);
        values.back().back().push_back(gap ? std::nullopt
                                           : std::optional<uint64_t>(1000 + rng() % 1000000));
      }
    }
  }
  auto append = [&](std::vector<std::unique_ptr<NodeHistoryWriter>>& writers, storage::Store& store,
                    Timestamp from, Timestamp to) {
    size_t s = 0;
    for (Timestamp t = kT0; t < to; t += step, ++s) {
      if (t < from) continue;
      storage::ScrapeBatch batch;
      for (size_t n = 0; n < writers.size(); ++n) {
        ASSERT_TRUE(
            writers[n]->Append(t + std::chrono::milliseconds(n), values[s][n], &batch).ok());
      }
      ASSERT_TRUE(store.Write(batch).ok());
    }
  };

  // Uninterrupted, into the test's store.
  std::vector<std::unique_ptr<NodeHistoryWriter>> writers;
  for (const std::string& name : names) {
    auto writer =
        NodeHistoryWriter::Create(ingestor_->engine_options(), store_.get(), name, keys_of(name));
    ASSERT_TRUE(writer.ok());
    writers.push_back(std::move(*writer));
  }
  append(writers, *store_, kT0, end);

  // Stopped at the split, resumed on the reopened store.
  ::kubestat::testing::TempDir other_dir;
  std::unique_ptr<storage::Store> other = OpenStore(other_dir.File("db"));
  ASSERT_NE(other, nullptr);
  std::vector<std::unique_ptr<NodeHistoryWriter>> first;
  for (const std::string& name : names) {
    auto writer =
        NodeHistoryWriter::Create(ingestor_->engine_options(), other.get(), name, keys_of(name));
    ASSERT_TRUE(writer.ok());
    first.push_back(std::move(*writer));
  }
  append(first, *other, kT0, split);
  const std::optional<Timestamp> stopped_at = first.back()->last_scrape();
  first.clear();
  other.reset();
  other = OpenStore(other_dir.File("db"));
  ASSERT_NE(other, nullptr);
  auto dict = other->LoadDictionary();
  ASSERT_TRUE(dict.ok());
  auto stored = StoredNodesByName(*dict);
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_EQ(stored->size(), names.size());
  std::vector<std::unique_ptr<NodeHistoryWriter>> resumed;
  for (size_t n = 0; n < names.size(); ++n) {
    auto writer = NodeHistoryWriter::Resume(ingestor_->engine_options(), other.get(),
                                            stored->at(names[n]), keys_of(names[n]));
    ASSERT_TRUE(writer.ok()) << writer.status();
    EXPECT_EQ((*writer)->node_id(), writers[n]->node_id());
    resumed.push_back(std::move(*writer));
  }
  EXPECT_EQ(resumed.back()->last_scrape(), stopped_at);
  append(resumed, *other, split, end);

  auto dict_a = store_->LoadDictionary();
  auto dict_b = other->LoadDictionary();
  ASSERT_TRUE(dict_a.ok());
  ASSERT_TRUE(dict_b.ok());
  ASSERT_EQ(dict_b->nodes.size(), names.size());
  ASSERT_EQ(dict_b->series.size(), dict_a->series.size());
  for (size_t i = 0; i < dict_a->series.size(); ++i) {
    EXPECT_EQ(dict_b->series[i].id, dict_a->series[i].id);
    EXPECT_EQ(dict_b->series[i].node, dict_a->series[i].node);
    EXPECT_EQ(dict_b->series[i].key, dict_a->series[i].key);
  }
  for (const storage::NodeEntry& node : dict_a->nodes) {
    auto [scrapes, rollups] = ReadNode(*store_, node.id);
    auto [other_scrapes, other_rollups] = ReadNode(*other, node.id);
    EXPECT_EQ(scrapes.size(), values.size());
    EXPECT_GE(rollups.size(), 5u * 6 - 1);
    EXPECT_TRUE(other_scrapes == scrapes) << node.name;
    EXPECT_TRUE(other_rollups == rollups) << node.name;
  }
  const auto histories = ReadHistories(*store_);
  EXPECT_GE(histories.size(), 5u * 2 * 2);
  EXPECT_TRUE(ReadHistories(*other) == histories);

  auto rebuilt_a = Ingestor::Create(IngestOptions{}, store_.get(), &clock_);
  auto rebuilt_b = Ingestor::Create(IngestOptions{}, other.get(), &clock_);
  ASSERT_TRUE(rebuilt_a.ok());
  ASSERT_TRUE(rebuilt_b.ok());
  ASSERT_TRUE((*rebuilt_a)->Rebuild().ok());
  ASSERT_TRUE((*rebuilt_b)->Rebuild().ok());
  EXPECT_EQ((*rebuilt_b)->Stats().rebuild_errors, 0u);
  const std::vector<windows::SeriesWindows> windows = (*rebuilt_a)->QueryAll();
  ASSERT_EQ(windows.size(), names.size() * 6);
  EXPECT_EQ((*rebuilt_b)->QueryAll(), windows);
}

// After a resume the node keeps its id and its newest stored scrape is the previous one;
// a key the store does not hold gets a new id at its first sample, and a stored series not
// given to Resume is retired, as a restarted Ingestor retires an object that left the
// node's scrape.
TEST_F(IngestTest, ResumedHistoryWriterRefusesOlderScrapesAndGivesNewKeysNewIds) {
  const windows::WindowEngineOptions& options = ingestor_->engine_options();
  const windows::SeriesKey cpu = windows::SeriesKey::Node("n1", windows::Resource::kCpu);
  const windows::SeriesKey old_pod =
      windows::SeriesKey::Pod("n1", "ns", "old", windows::Resource::kMemory);
  const windows::SeriesKey new_pod =
      windows::SeriesKey::Pod("n1", "ns", "new", windows::Resource::kMemory);
  auto writer = NodeHistoryWriter::Create(options, store_.get(), "n1", {cpu, old_pod});
  ASSERT_TRUE(writer.ok());
  const std::vector<std::optional<uint64_t>> two = {7, 9};
  storage::ScrapeBatch batch;
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE((*writer)->Append(kT0 + seconds(10 * i), two, &batch).ok());
  ASSERT_TRUE(store_->Write(batch).ok());
  const storage::NodeId node_id = (*writer)->node_id();
  writer->reset();

  auto dict = store_->LoadDictionary();
  ASSERT_TRUE(dict.ok());
  auto stored = StoredNodesByName(*dict);
  ASSERT_TRUE(stored.ok());
  const StoredNode& n1 = stored->at("n1");
  EXPECT_EQ(n1.id, node_id);
  ASSERT_EQ(n1.series.size(), 2u);
  const storage::SeriesId cpu_id = n1.series.at(cpu);
  const storage::SeriesId old_id = n1.series.at(old_pod);

  auto resumed = NodeHistoryWriter::Resume(options, store_.get(), n1, {new_pod, cpu});
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ((*resumed)->node_id(), node_id);
  EXPECT_EQ((*resumed)->last_scrape(), kT0 + seconds(20));
  batch.Clear();
  EXPECT_EQ((*resumed)->Append(kT0 + seconds(20), two, &batch).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*resumed)->Append(kT0 + seconds(5), two, &batch).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(batch.empty());
  ASSERT_TRUE((*resumed)->Append(kT0 + seconds(30), two, &batch).ok());
  ASSERT_TRUE(store_->Write(batch).ok());

  dict = store_->LoadDictionary();
  ASSERT_TRUE(dict.ok());
  ASSERT_EQ(dict->nodes.size(), 1u);
  EXPECT_EQ(dict->nodes[0].id, node_id);
  std::map<windows::SeriesKey, storage::SeriesId> ids;
  for (const storage::SeriesEntry& e : dict->series) {
    auto key = DecodeSeriesKey(e.key);
    ASSERT_TRUE(key.ok());
    EXPECT_EQ(e.node, node_id);
    ids.emplace(*key, e.id);
  }
  // The old pod's series is retired: the dictionary lists live series only.
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids.at(cpu), cpu_id);
  EXPECT_GT(ids.at(new_pod), std::max(cpu_id, old_id));

  auto rebuilt = NewIngestor();
  auto node = rebuilt->QueryNode("n1");
  ASSERT_TRUE(node);
  ASSERT_EQ(node->series.size(), 1u);
  EXPECT_EQ(node->series[0].key, cpu);
  EXPECT_EQ(node->series[0].windows[1].count, 4u);  // the 1m window: 0 s to 30 s
  auto pod = rebuilt->QueryPod("ns", "new");
  ASSERT_TRUE(pod);
  ASSERT_EQ(pod->series.size(), 1u);
  EXPECT_EQ(pod->series[0].windows[1].count, 1u);
  EXPECT_FALSE(rebuilt->QueryPod("ns", "old"));

  // An unreadable dictionary entry is named, not skipped.
  storage::Dictionary bad = *dict;
  bad.series.push_back({ids.at(new_pod) + 1, node_id, "not a key"});
  EXPECT_EQ(StoredNodesByName(bad).status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(IngestTest, ManyNodesIngestConcurrentlyWhileQueriesRun) {
  testing::SyntheticCluster cluster(16, 3, 2, 5);
  std::vector<scrapers::NodeScrape> unused;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> queries{0};
  std::thread reader([&] {
    while (!done.load()) {
      for (const PodRef& pod : ingestor_->ListPods()) {
        auto snapshot = ingestor_->QueryPod(pod.namespace_name, pod.name);
        if (snapshot) {
          // Consistent per object: every series of the pod answers for the same node.
          for (const windows::SeriesWindows& w : snapshot->series) EXPECT_EQ(w.key.node, pod.node);
        }
      }
      for (const std::string& node : ingestor_->ListNodes()) (void)ingestor_->QueryNode(node);
      queries.fetch_add(1);
    }
  });
  // The scrapes are generated up front (the generator is not thread-safe).
  constexpr int kSteps = 40;
  std::vector<std::vector<scrapers::NodeScrape>> per_node(cluster.nodes());
  for (int i = 0; i < kSteps; ++i) {
    for (size_t n = 0; n < cluster.nodes(); ++n) {
      per_node[n].push_back(cluster.Scrape(n, kT0 + seconds(10 * i)));
    }
  }
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&, w] {
      for (size_t n = static_cast<size_t>(w); n < cluster.nodes(); n += 4) {
        for (const scrapers::NodeScrape& s : per_node[n]) EXPECT_TRUE(ingestor_->Ingest(s).ok());
      }
    });
  }
  for (std::thread& t : workers) t.join();
  done.store(true);
  reader.join();
  EXPECT_GT(queries.load(), 0u);
  EXPECT_EQ(ingestor_->Stats().scrapes, cluster.nodes() * kSteps);
  EXPECT_EQ(ingestor_->ListNodes().size(), cluster.nodes());
  EXPECT_EQ(ingestor_->ListPods().size(), cluster.nodes() * 3);
  auto node = ingestor_->QueryNode("node-7");
  ASSERT_TRUE(node);
  EXPECT_EQ(node->series.size(), 2u + 6u);
  EXPECT_EQ(node->series[0].windows[1].count, 6u);  // 1m of cpu rates at 10s
}

TEST(SeriesRegistryTest, KeysRoundTripAndGarbageIsDataLoss) {
  for (const windows::SeriesKey& key :
       {windows::SeriesKey::Node("n", windows::Resource::kCpu),
        windows::SeriesKey::SystemContainer("n", "kubelet", windows::Resource::kMemory),
        windows::SeriesKey::Pod("n", "ns", std::string(300, 'p'), windows::Resource::kCpu),
        windows::SeriesKey::Container("n", "ns", "p", "c", windows::Resource::kMemory)}) {
    auto decoded = DecodeSeriesKey(EncodeSeriesKey(key));
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, key);
  }
  const std::string good =
      EncodeSeriesKey(windows::SeriesKey::Pod("n", "ns", "p", windows::Resource::kCpu));
  for (size_t cut = 0; cut < good.size(); ++cut) {
    EXPECT_FALSE(DecodeSeriesKey(good.substr(0, cut)).ok());
  }
  std::string bad_kind = good;
  bad_kind[1] = 9;
  EXPECT_EQ(DecodeSeriesKey(bad_kind).status().code(), absl::StatusCode::kDataLoss);
  std::string node_with_pod = good;
  node_with_pod[1] = static_cast<char>(windows::ObjectKind::kNode);
  EXPECT_FALSE(DecodeSeriesKey(node_with_pod).ok());
}

TEST_F(IngestTest, AggregatorStateJoinsWindowsWithLabels) {
  testing::SyntheticCluster cluster(2, 3, 2, 11);
  for (int i = 0; i < 3; ++i) {
    for (size_t n = 0; n < 2; ++n) {
      ASSERT_TRUE(ingestor_->Ingest(cluster.Scrape(n, kT0 + seconds(10 * i))).ok());
    }
  }
  FakeLabels labels;
  labels.nodes["node-0"] = {{"zone", "a"}};
  labels.pods["default/pod-0-0"] = PodLabels{{{"app", "web"}}, "node-0"};
  AggregatorState state(ingestor_.get(), &labels);
  EXPECT_FALSE(state.Ready());
  labels.synced = true;
  EXPECT_TRUE(state.Ready());

  std::vector<metrics_api::NodeMetrics> nodes = state.ListNodes();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].name, "node-0");
  EXPECT_EQ(nodes[0].labels, (metrics_api::Labels{{"zone", "a"}}));
  EXPECT_TRUE(nodes[1].labels.empty());  // unknown to discovery: still listed
  ASSERT_FALSE(nodes[0].machine.cpu.empty());
  ASSERT_FALSE(nodes[0].machine.memory.empty());
  EXPECT_EQ(nodes[0].machine.memory[0].count, 1u);
  EXPECT_EQ(nodes[0].machine.memory[1].count, 3u);
  ASSERT_EQ(nodes[0].system_containers.size(), 3u);
  EXPECT_EQ(nodes[0].system_containers[0].name, "kubelet");
  EXPECT_EQ(nodes[0].system_containers[1].name, "pods");

  std::vector<metrics_api::PodMetrics> pods = state.ListPods("");
  ASSERT_EQ(pods.size(), 6u);
  EXPECT_EQ(pods[0].namespace_name, "default");
  EXPECT_EQ(pods[0].name, "pod-0-0");
  EXPECT_EQ(pods[0].labels, (metrics_api::Labels{{"app", "web"}}));
  ASSERT_EQ(pods[0].containers.size(), 2u);
  EXPECT_EQ(pods[0].containers[1].name, "c1");
  ASSERT_FALSE(pods[0].pod.cpu.empty());
  EXPECT_EQ(pods[0].pod.cpu[1].count, 2u);
  EXPECT_EQ(state.ListPods("shop").size(), 2u);
  EXPECT_TRUE(state.ListPods("absent").empty());

  auto pod = state.GetPod("shop", "pod-1-1");
  ASSERT_TRUE(pod);
  EXPECT_EQ(pod->node_name, "node-1");  // from the scrape: discovery does not know it
  EXPECT_TRUE(pod->labels.empty());
  EXPECT_FALSE(state.GetPod("shop", "absent"));
  EXPECT_TRUE(state.GetNode("node-1"));
  EXPECT_FALSE(state.GetNode("node-9"));
}

void ExpectSameWindows(const metrics_api::ResourceWindows& a,
                       const metrics_api::ResourceWindows& b) {
  EXPECT_EQ(a.cpu, b.cpu);
  EXPECT_EQ(a.memory, b.memory);
}

void ExpectSameContainers(const std::vector<metrics_api::ContainerMetrics>& a,
                          const std::vector<metrics_api::ContainerMetrics>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    ExpectSameWindows(a[i].windows, b[i].windows);
  }
}

TEST_F(IngestTest, AggregatorStateReadsOneNodeAsItsListsDo) {
  testing::SyntheticCluster cluster(3, 4, 2, 5);
  for (int i = 0; i < 4; ++i) {
    for (size_t n = 0; n < 3; ++n) {
      ASSERT_TRUE(ingestor_->Ingest(cluster.Scrape(n, kT0 + seconds(10 * i))).ok());
    }
  }
  ASSERT_TRUE(ingestor_->DeletePod("default", "pod-1-0").value());
  FakeLabels labels;
  labels.synced = true;
  labels.nodes["node-1"] = {{"zone", "b"}};
  labels.pods["shop/pod-1-1"] = PodLabels{{{"app", "cart"}}, "node-1"};
  AggregatorState state(ingestor_.get(), &labels);

  const std::vector<metrics_api::NodeMetrics> nodes = state.ListNodes();
  const std::vector<metrics_api::PodMetrics> pods = state.ListPods("");
  NodeObjectsList all = state.AllNodeObjects();
  EXPECT_TRUE(all.complete);
  ASSERT_EQ(all.nodes.size(), nodes.size());
  size_t pods_seen = 0;
  for (size_t n = 0; n < nodes.size(); ++n) {
    std::optional<NodeObjects> one = state.ObjectsOfNode(nodes[n].name);
    ASSERT_TRUE(one);
    EXPECT_EQ(all.nodes[n].node_name, nodes[n].name);
    for (const NodeObjects* objects : {&*one, &all.nodes[n]}) {
      ASSERT_TRUE(objects->node);
      EXPECT_EQ(objects->node->name, nodes[n].name);
      EXPECT_EQ(objects->node->labels, nodes[n].labels);
      ExpectSameWindows(objects->node->machine, nodes[n].machine);
      ExpectSameContainers(objects->node->system_containers, nodes[n].system_containers);
      // Exactly the node's pods from the full list, in the same order and equal.
      std::vector<const metrics_api::PodMetrics*> expected;
      for (const metrics_api::PodMetrics& pod : pods) {
        if (pod.node_name == nodes[n].name) expected.push_back(&pod);
      }
      ASSERT_EQ(objects->pods.size(), expected.size());
      for (size_t p = 0; p < expected.size(); ++p) {
        const metrics_api::PodMetrics& got = *objects->pods[p];
        EXPECT_EQ(got.namespace_name, expected[p]->namespace_name);
        EXPECT_EQ(got.name, expected[p]->name);
        EXPECT_EQ(got.node_name, expected[p]->node_name);
        EXPECT_EQ(got.labels, expected[p]->labels);
        ExpectSameWindows(got.pod, expected[p]->pod);
        ExpectSameContainers(got.containers, expected[p]->containers);
      }
    }
    pods_seen += one->pods.size();
  }
  EXPECT_EQ(pods_seen, pods.size());
  EXPECT_EQ(pods.size(), 3u * 4u - 1u);  // the deleted pod is in neither
  EXPECT_EQ(all.nodes[1].node->labels, (metrics_api::Labels{{"zone", "b"}}));
  // The views hold the labels discovery holds, not copies of them.
  EXPECT_TRUE(all.nodes[1].node->labels.SharesWith(labels.nodes["node-1"]));
  const metrics_api::PodMetrics* cart = nullptr;
  for (const auto& pod : all.nodes[1].pods) {
    if (pod->name == "pod-1-1") cart = pod.get();
  }
  ASSERT_NE(cart, nullptr);
  EXPECT_EQ(cart->labels, (metrics_api::Labels{{"app", "cart"}}));
  EXPECT_TRUE(cart->labels.SharesWith(labels.pods["shop/pod-1-1"].labels));
  EXPECT_FALSE(state.ObjectsOfNode("node-9"));
  ASSERT_TRUE(ingestor_->DeleteNode("node-2").value());
  EXPECT_FALSE(state.ObjectsOfNode("node-2"));
  EXPECT_EQ(state.AllNodeObjects().nodes.size(), 2u);
}

// A cluster drawn at random: pods in several namespaces with zero to three containers, one
// pod with no container and one whose containers report no reading (both listed, without
// series), one pod reported by two nodes at once (it moved), readings missing now and then.
struct RandomPod {
  std::string namespace_name, name;
  std::vector<std::string> containers;
  bool silent = false;  // its containers report no reading
};
struct RandomNode {
  std::string name;
  std::vector<RandomPod> pods;
};

std::vector<RandomNode> IngestRandomCluster(Ingestor& ingestor, std::mt19937_64& rng) {
  std::vector<RandomNode> nodes;
  int next_pod = 0;
  for (int n = 0; n < 5; ++n) {
    RandomNode node{"node-" + std::to_string(n), {}};
    const size_t pods = 3 + rng() % 6;
    for (size_t p = 0; p < pods; ++p) {
      static const char* const kNamespaces[] = {"default", "kube-system", "shop"};
      static const char* const kPrefixes[] = {"api", "db", "web", "job"};
      RandomPod pod{kNamespaces[rng() % 3],
                    std::string(kPrefixes[rng() % 4]) + "-" + std::to_string(next_pod++),
                    {}};
      std::vector<std::string> names = {"app", "cache", "proxy", "worker"};
      std::shuffle(names.begin(), names.end(), rng);
      names.resize(rng() % 4);
      pod.containers = std::move(names);
      node.pods.push_back(std::move(pod));
    }
    nodes.push_back(std::move(node));
  }
  nodes[0].pods.push_back({"default", "empty", {}});
  nodes[2].pods.push_back({"shop", "silent", {"app", "proxy"}, true});
  nodes[0].pods.push_back({"shop", "mover", {"app"}});
  nodes[3].pods.push_back({"shop", "mover", {"app", "sidecar"}});

  // Cpu counters by object: "node", "node//kubelet", "node/namespace/pod/container".
  std::map<std::string, uint64_t> counters;
  for (int i = 0; i < 6; ++i) {
    for (size_t n = 0; n < nodes.size(); ++n) {
      const Timestamp t = kT0 + seconds(10 * i) + std::chrono::milliseconds(n);
      scrapers::NodeScrape s;
      s.node_name = nodes[n].name;
      s.start_time = Timestamp(hours(1));
      uint64_t& node_cpu = counters[nodes[n].name];
      node_cpu += 1'000'000'000 + rng() % 1'000'000'000;
      s.cpu = scrapers::CpuSample{t, node_cpu, std::nullopt};
      s.memory = scrapers::MemorySample{t, (uint64_t{8} << 30) + rng() % (1 << 30)};
      for (const char* name : {"kubelet", "runtime"}) {
        uint64_t& cpu = counters[nodes[n].name + "//" + name];
        cpu += rng() % 100'000'000;
        s.system_containers.push_back(MakeContainer(name, t, cpu, (200 << 20) + rng() % (1 << 20)));
      }
      for (const RandomPod& pod : nodes[n].pods) {
        scrapers::PodScrape p;
        p.namespace_name = pod.namespace_name;
        p.name = pod.name;
        for (const std::string& container : pod.containers) {
          uint64_t& cpu =
              counters[nodes[n].name + "/" + pod.namespace_name + "/" + pod.name + "/" + container];
          cpu += rng() % 500'000'000;
          std::optional<uint64_t> cpu_reading = cpu, memory = (100 << 20) + rng() % (1 << 24);
          if (pod.silent) {
            cpu_reading.reset();
            memory.reset();
          }
          if (rng() % 20 == 0) cpu_reading.reset();
          if (rng() % 20 == 0) memory.reset();
          p.containers.push_back(MakeContainer(container, t, cpu_reading, memory));
        }
        s.pods.push_back(std::move(p));
      }
      EXPECT_TRUE(ingestor.IngestAt(s, t).ok());
    }
  }
  return nodes;
}

// Records the visits of one node's objects.
class RecordingVisitor final : public NodeObjectsVisitor {
 public:
  void NodeSeries(const windows::SeriesKey& key, Timestamp endtime,
                  std::span<const windows::WindowStats> windows) override {
    EXPECT_TRUE(pods.empty()) << "a node series after a pod: " << key.ToString();
    node.push_back({key, endtime, {windows.begin(), windows.end()}});
  }
  void BeginPod(std::string_view namespace_name, std::string_view name) override {
    pods.push_back({{std::string(namespace_name), std::string(name), {}}, {}});
  }
  void PodSeries(const windows::SeriesKey& key, Timestamp endtime,
                 std::span<const windows::WindowStats> windows) override {
    EXPECT_FALSE(pods.empty()) << "a pod series before any pod: " << key.ToString();
    if (pods.empty()) return;
    EXPECT_EQ(key.pod_namespace, pods.back().pod.namespace_name);
    EXPECT_EQ(key.pod, pods.back().pod.name);
    pods.back().series.push_back({key, endtime, {windows.begin(), windows.end()}});
  }

  std::vector<windows::SeriesWindows> node;
  std::vector<PodSnapshot> pods;  // pod.node left empty
};

// The visit of a node's objects passes what QueryNode and QueryPods give of that node, in
// the same order, pods without series included, and nothing for an unknown node.
TEST_F(IngestTest, VisitNodeObjectsPassesWhatQueryNodeAndQueryPodsGive) {
  std::mt19937_64 rng(20261203);
  const std::vector<RandomNode> nodes = IngestRandomCluster(*ingestor_, rng);
  const std::vector<PodSnapshot> all_pods = ingestor_->QueryPods("");
  size_t without_series = 0, pods_seen = 0;
  for (const RandomNode& node : nodes) {
    SCOPED_TRACE(node.name);
    RecordingVisitor visitor;
    ASSERT_TRUE(ingestor_->VisitNodeObjects(node.name, visitor));
    std::optional<NodeSnapshot> want_node = ingestor_->QueryNode(node.name);
    ASSERT_TRUE(want_node);
    EXPECT_EQ(visitor.node, want_node->series);
    EXPECT_EQ(visitor.node.size(), 6u);  // machine and 2 system containers, 2 resources each
    std::vector<const PodSnapshot*> want_pods;
    for (const PodSnapshot& pod : all_pods) {
      if (pod.pod.node == node.name) want_pods.push_back(&pod);
    }
    ASSERT_EQ(visitor.pods.size(), want_pods.size());
    EXPECT_EQ(visitor.pods.size(), node.pods.size());
    for (size_t p = 0; p < want_pods.size(); ++p) {
      EXPECT_EQ(visitor.pods[p].pod.namespace_name, want_pods[p]->pod.namespace_name);
      EXPECT_EQ(visitor.pods[p].pod.name, want_pods[p]->pod.name);
      EXPECT_EQ(visitor.pods[p].series, want_pods[p]->series);
      if (want_pods[p]->series.empty()) ++without_series;
    }
    pods_seen += visitor.pods.size();
    // QueryNodeObjects gives the same.
    std::optional<NodeObjectsSnapshot> objects = ingestor_->QueryNodeObjects(node.name);
    ASSERT_TRUE(objects);
    EXPECT_EQ(objects->node.name, node.name);
    EXPECT_EQ(objects->node.series, visitor.node);
    ASSERT_EQ(objects->pods.size(), visitor.pods.size());
    for (size_t p = 0; p < objects->pods.size(); ++p) {
      EXPECT_EQ(objects->pods[p].pod.node, node.name);
      EXPECT_EQ(objects->pods[p].series, visitor.pods[p].series);
    }
  }
  EXPECT_EQ(pods_seen, all_pods.size());
  EXPECT_GE(without_series, 2u);  // "default/empty" and "shop/silent" at least
  RecordingVisitor unknown;
  EXPECT_FALSE(ingestor_->VisitNodeObjects("node-9", unknown));
  EXPECT_TRUE(unknown.node.empty());
  EXPECT_TRUE(unknown.pods.empty());
}

// A TopologyProvider of fixed answers.
class FixedTopology final : public TopologyProvider {
 public:
  std::optional<NodeTopology> Node(std::string_view node) const override {
    auto it = nodes.find(std::string(node));
    if (it == nodes.end()) return std::nullopt;
    return it->second;
  }
  std::optional<metrics_api::PodAssignment> Pod(std::string_view node,
                                                std::string_view namespace_name,
                                                std::string_view name) const override {
    auto it =
        pods.find(std::string(node) + "/" + std::string(namespace_name) + "/" + std::string(name));
    if (it == pods.end()) return std::nullopt;
    return it->second;
  }

  std::map<std::string, NodeTopology> nodes;               // by node name
  std::map<std::string, metrics_api::PodAssignment> pods;  // by "node/namespace/name"
};

// The views of one node as AggregatorState::ObjectsOfNode built them from QueryNodeObjects
// before it visited the series: windows copied out under the lock, then each view joined
// with a PodInfo call per pod. The reference the visiting read is held against.
struct ReferenceViews {
  metrics_api::NodeMetrics node;
  std::vector<metrics_api::PodMetrics> pods;
};

std::optional<ReferenceViews> ReferenceObjectsOfNode(const Ingestor& ingestor,
                                                     const LabelProvider& labels,
                                                     const TopologyProvider& topology,
                                                     std::string_view name) {
  std::optional<NodeObjectsSnapshot> snapshot = ingestor.QueryNodeObjects(name);
  if (!snapshot) return std::nullopt;
  auto assign = [](metrics_api::ResourceWindows* windows, const windows::SeriesWindows& series) {
    (series.key.resource == windows::Resource::kCpu ? windows->cpu : windows->memory) =
        ToApiStatistics(series.windows);
  };
  auto add_container = [&](std::vector<metrics_api::ContainerMetrics>* containers,
                           const windows::SeriesWindows& series) {
    if (containers->empty() || containers->back().name != series.key.container) {
      containers->push_back({series.key.container, {}});
    }
    assign(&containers->back().windows, series);
  };
  ReferenceViews views;
  metrics_api::NodeMetrics& node = views.node;
  node.name = snapshot->node.name;
  node.labels = labels.NodeLabels(node.name).value_or(metrics_api::Labels{});
  for (const windows::SeriesWindows& series : snapshot->node.series) {
    if (series.key.kind == windows::ObjectKind::kNode) {
      assign(&node.machine, series);
    } else if (series.key.kind == windows::ObjectKind::kSystemContainer) {
      add_container(&node.system_containers, series);
    }
  }
  if (std::optional<NodeTopology> t = topology.Node(node.name)) {
    node.allocatable = std::move(t->allocatable);
    node.pod_resources = std::move(t->status);
  }
  for (PodSnapshot& snapshot_pod : snapshot->pods) {
    metrics_api::PodMetrics view;
    view.name = snapshot_pod.pod.name;
    view.namespace_name = snapshot_pod.pod.namespace_name;
    view.node_name = snapshot_pod.pod.node;
    std::optional<std::vector<limits::ContainerResources>> declared;
    std::optional<metrics_api::PodAssignment> assigned =
        topology.Pod(view.node_name, view.namespace_name, view.name);
    if (std::optional<PodLabels> info = labels.PodInfo(view.namespace_name, view.name)) {
      view.labels = std::move(info->labels);
      if (!info->node_name.empty()) view.node_name = std::move(info->node_name);
      declared = std::move(info->containers);
    }
    for (const windows::SeriesWindows& series : snapshot_pod.series) {
      if (series.key.kind == windows::ObjectKind::kPod) {
        assign(&view.pod, series);
      } else if (series.key.kind == windows::ObjectKind::kContainer) {
        add_container(&view.containers, series);
      }
    }
    auto convert = [](const limits::Amounts& in) {
      metrics_api::DeclaredResources out;
      if (in.cpu && *in.cpu >= 0) out.cpu = static_cast<uint64_t>(*in.cpu) * 1000000;
      if (in.memory && *in.memory >= 0) out.memory = static_cast<uint64_t>(*in.memory);
      return out;
    };
    if (declared) {
      for (metrics_api::ContainerMetrics& container : view.containers) {
        for (const limits::ContainerResources& spec : *declared) {
          if (spec.name != container.name) continue;
          container.requests = convert(spec.requests);
          container.limits = convert(spec.limits);
        }
      }
    }
    if (assigned) {
      view.exclusive = std::move(assigned->exclusive);
      for (metrics_api::ContainerMetrics& container : view.containers) {
        for (metrics_api::ContainerAssignment& c : assigned->containers) {
          if (c.name == container.name) container.exclusive = std::move(c.exclusive);
        }
      }
    }
    views.pods.push_back(std::move(view));
  }
  return views;
}

// Over a random cluster whose objects discovery and the agents know in part (labels on some
// nodes and most pods, a pod discovery places on another node, declared resources matching
// some containers, negative or absent amounts, allocatable and exclusive cpus on some nodes
// and pods), every node's views from the visiting read equal, field for field, those built
// the way the read built them before.
TEST_F(IngestTest, ObjectsOfNodeGivesTheViewsBuiltFromQueryNodeObjects) {
  std::mt19937_64 rng(20261204);
  const std::vector<RandomNode> nodes = IngestRandomCluster(*ingestor_, rng);
  FakeLabels labels;
  labels.synced = true;
  FixedTopology topology;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const RandomNode& node = nodes[n];
    if (n % 2 == 0) labels.nodes[node.name] = {{"zone", "z" + std::to_string(n)}, {"pool", "a"}};
    if (n < 3) {
      NodeTopology t;
      t.allocatable = metrics_api::ResourceSet{{int64_t(n), int64_t(n) + 4}, {}, {}};
      t.status.state = "Complete";
      topology.nodes[node.name] = t;
    } else if (n == 3) {
      topology.nodes[node.name].status.state = "Unavailable";
    }
    for (const RandomPod& pod : node.pods) {
      const std::string key = pod.namespace_name + "/" + pod.name;
      if (rng() % 5 == 0 && pod.name != "mover") continue;  // unknown to discovery
      PodLabels info{
          {{"app", pod.name.substr(0, pod.name.find('-'))}, {"tier", "t"}}, node.name, {}};
      std::vector<limits::ContainerResources> containers;
      for (const std::string& container : pod.containers) {
        if (rng() % 4 == 0) continue;
        limits::ContainerResources declared;
        declared.name = container;
        declared.requests = {int64_t(rng() % 2000), int64_t(rng() % (1 << 30))};
        if (rng() % 3 == 0) declared.limits = {-1, std::nullopt};
        containers.push_back(std::move(declared));
      }
      containers.push_back({"not-running", {100, 100}, {200, 200}});
      info.containers = std::move(containers);
      labels.pods[key] = std::move(info);
      if (rng() % 2 == 0) {
        metrics_api::PodAssignment assigned;
        assigned.namespace_name = pod.namespace_name;
        assigned.name = pod.name;
        if (rng() % 2 == 0) assigned.exclusive.cpu_ids = {int64_t(rng() % 64)};
        for (const std::string& container : pod.containers) {
          assigned.containers.push_back({container, {{int64_t(rng() % 64)}, {}, {}}, {}});
        }
        assigned.containers.push_back({"gone", {{63}, {}, {}}, {}});
        topology.pods[node.name + "/" + key] = std::move(assigned);
      }
    }
  }
  // Discovery places the moved pod on its new node, and a pod of node-1 on node-4.
  labels.pods["shop/mover"].node_name = "node-3";
  const RandomPod& placed = nodes[1].pods.front();
  labels.pods[placed.namespace_name + "/" + placed.name] = PodLabels{{{"app", "x"}}, "node-4"};
  AggregatorState state(ingestor_.get(), &labels, &topology);

  // What the cluster exercises, counted on the reference.
  size_t labelled = 0, unlabelled = 0, elsewhere = 0, no_series = 0, declared = 0, exclusive = 0,
         container_windows = 0, three_or_more = 0;
  for (const RandomNode& node : nodes) {
    SCOPED_TRACE(node.name);
    std::optional<ReferenceViews> want =
        ReferenceObjectsOfNode(*ingestor_, labels, topology, node.name);
    ASSERT_TRUE(want);
    std::optional<NodeObjects> got = state.ObjectsOfNode(node.name);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->node_name, node.name);
    ASSERT_TRUE(got->node);
    EXPECT_TRUE(*got->node == want->node);
    EXPECT_EQ(got->node->labels, want->node.labels);
    ExpectSameWindows(got->node->machine, want->node.machine);
    ExpectSameContainers(got->node->system_containers, want->node.system_containers);
    ASSERT_EQ(got->pods.size(), want->pods.size());
    for (size_t p = 0; p < want->pods.size(); ++p) {
      const metrics_api::PodMetrics& got_pod = *got->pods[p];
      const metrics_api::PodMetrics& want_pod = want->pods[p];
      SCOPED_TRACE(want_pod.namespace_name + "/" + want_pod.name);
      EXPECT_TRUE(got_pod == want_pod);
      EXPECT_EQ(got_pod.node_name, want_pod.node_name);
      EXPECT_EQ(got_pod.labels, want_pod.labels);
      ExpectSameWindows(got_pod.pod, want_pod.pod);
      ExpectSameContainers(got_pod.containers, want_pod.containers);
      // Held for as long as the snapshot serves it: no room beyond its containers.
      EXPECT_EQ(got_pod.containers.capacity(), got_pod.containers.size());
      if (got_pod.containers.size() > 2) ++three_or_more;
      EXPECT_EQ(got_pod.exclusive, want_pod.exclusive);
      (want_pod.labels.empty() ? unlabelled : labelled)++;
      if (want_pod.node_name != node.name) ++elsewhere;
      if (want_pod.containers.empty() && !want_pod.pod.HasUsage()) ++no_series;
      if (!want_pod.exclusive.empty()) ++exclusive;
      for (const metrics_api::ContainerMetrics& c : want_pod.containers) {
        if (!c.requests.empty()) ++declared;
        if (!c.exclusive.empty()) ++exclusive;
        if (!c.windows.cpu.empty() && !c.windows.memory.empty()) ++container_windows;
      }
    }
  }
  EXPECT_GT(labelled, 10u);
  EXPECT_GT(unlabelled, 0u);
  EXPECT_EQ(elsewhere, 2u);  // the mover on node-0 and node-1's first pod
  EXPECT_GE(no_series, 2u);
  EXPECT_GT(declared, 5u);
  EXPECT_GT(exclusive, 5u);
  EXPECT_GT(container_windows, 10u);
  EXPECT_GT(three_or_more, 0u);
  EXPECT_FALSE(state.ObjectsOfNode("node-9"));
}

}  // namespace
}  // namespace kubestat::aggregator

namespace kubestat::aggregator {
namespace {

// Two ingestors, each on its own store, one reusing the previous scrape's shape and one
// always taking the general path.
class IngestLayoutTest : public ::testing::Test {
 protected:
  struct Side {
    ::kubestat::testing::TempDir dir;
    std::unique_ptr<storage::Store> store;
    std::unique_ptr<Ingestor> ingestor;
  };

  static void Open(Side* side, bool reuse_layout, FakeClock* clock) {
    storage::StoreOptions store_options;
    store_options.dir = side->dir.File("db");
    store_options.block_cache_bytes = 4 << 20;
    store_options.write_buffer_bytes = 4 << 20;
    auto store = storage::Store::Open(store_options);
    ASSERT_TRUE(store.ok()) << store.status();
    side->store = std::move(*store);
    IngestOptions options;
    options.shards = 2;
    options.reuse_layout = reuse_layout;
    auto ingestor = Ingestor::Create(options, side->store.get(), clock);
    ASSERT_TRUE(ingestor.ok()) << ingestor.status();
    ASSERT_TRUE((*ingestor)->Rebuild().ok());
    side->ingestor = std::move(*ingestor);
  }

  FakeClock clock_;
  Side reused_, general_;
};

// Scrapes that mostly keep their shape, with every change a kubelet makes now and then: a
// pod added, removed or moved in the order, a container added or restarted, a counter reset,
// a missing reading, a cached reading, a repeated or nameless entry, a deleted pod. The
// windows, the counters and what the store rebuilds are the same with and without the
// reused shape, and the shape is reused for most scrapes.
TEST_F(IngestLayoutTest, TheReusedShapeGivesWhatTheGeneralPathGives) {
  Open(&reused_, true, &clock_);
  Open(&general_, false, &clock_);
  std::mt19937_64 rng(20261126);
  struct Container {
    std::string name;
    uint64_t cpu = 0;
    Timestamp start = Timestamp(std::chrono::hours(1));
  };
  struct Pod {
    std::string namespace_name, name;
    std::vector<Container> containers;
  };
  std::vector<Pod> pods;
  int next_pod = 0;
  auto new_pod = [&] {
    Pod pod{next_pod % 3 ? "shop" : "default", "pod-" + std::to_string(next_pod), {}};
    ++next_pod;
    for (size_t c = 0; c < 1 + rng() % 3; ++c) pod.containers.push_back({"c" + std::to_string(c)});
    return pod;
  };
  for (int i = 0; i < 6; ++i) pods.push_back(new_pod());
  uint64_t node_cpu = 0;
  const Duration step = seconds(20);
  size_t changed = 0;
  for (int i = 0; i < 500; ++i) {
    const Timestamp t = kT0 + step * i;
    const uint64_t roll = rng() % 100;
    bool duplicate = false, nameless = false, missing = false, cached = false;
    std::optional<size_t> leaving;
    if (roll < 3) {
      pods.push_back(new_pod());
    } else if (roll < 6 && pods.size() > 1) {
      pods.erase(pods.begin() + static_cast<std::ptrdiff_t>(rng() % pods.size()));
    } else if (roll < 8 && pods.size() > 1) {
      std::swap(pods.front(), pods.back());
    } else if (roll < 10) {
      Pod& pod = pods[rng() % pods.size()];
      pod.containers.push_back({"c" + std::to_string(pod.containers.size())});
    } else if (roll < 12) {
      Container& c = pods[rng() % pods.size()].containers[0];
      c.start += seconds(1);  // restarted
      c.cpu = 0;
    } else if (roll < 13) {
      pods[rng() % pods.size()].containers[0].cpu /= 2;  // a counter going backwards
    } else if (roll < 15) {
      missing = true;
    } else if (roll < 16) {
      cached = true;
    } else if (roll < 17) {
      duplicate = true;
    } else if (roll < 18) {
      nameless = true;
    } else if (roll < 20 && pods.size() > 1) {
      // Deleted: the kubelet still reports it once, then no more.
      const size_t victim = rng() % pods.size();
      const Pod& pod = pods[victim];
      ASSERT_EQ(*reused_.ingestor->DeletePod(pod.namespace_name, pod.name, "n1"),
                *general_.ingestor->DeletePod(pod.namespace_name, pod.name, "n1"));
      leaving = victim;
    }
    if (roll < 20) ++changed;
    scrapers::NodeScrape s;
    s.node_name = "n1";
    s.start_time = Timestamp(std::chrono::hours(1));
    node_cpu += 1'000'000'000 + rng() % 1'000'000;
    s.cpu = scrapers::CpuSample{t, node_cpu, std::nullopt};
    s.memory = scrapers::MemorySample{t, uint64_t{8} << 30};
    s.system_containers.push_back(MakeContainer("kubelet", t, node_cpu / 10, 200 << 20));
    for (Pod& pod : pods) {
      scrapers::PodScrape p;
      p.namespace_name = pod.namespace_name;
      p.name = pod.name;
      for (Container& c : pod.containers) {
        if (!cached) c.cpu += 10'000'000 + rng() % 100'000'000;
        const Timestamp when = cached ? t - step : t;
        scrapers::ContainerScrape scraped =
            MakeContainer(c.name, when, c.cpu, (100 << 20) + rng() % (1 << 20), c.start);
        if (missing && &c == &pod.containers.front()) scraped.cpu.reset();
        p.containers.push_back(std::move(scraped));
      }
      s.pods.push_back(std::move(p));
    }
    if (duplicate) s.pods.push_back(s.pods.front());
    if (nameless) s.pods.push_back(scrapers::PodScrape{});
    ASSERT_TRUE(reused_.ingestor->IngestAt(s, t).ok());
    ASSERT_TRUE(general_.ingestor->IngestAt(s, t).ok());
    if (leaving) pods.erase(pods.begin() + static_cast<std::ptrdiff_t>(*leaving));
    if (i % 25 == 0) {
      ASSERT_EQ(reused_.ingestor->QueryAll(), general_.ingestor->QueryAll()) << "scrape " << i;
    }
  }
  EXPECT_EQ(reused_.ingestor->QueryAll(), general_.ingestor->QueryAll());
  EXPECT_EQ(reused_.ingestor->ListPods(), general_.ingestor->ListPods());
  const IngestStats a = reused_.ingestor->Stats(), b = general_.ingestor->Stats();
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.series_created, b.series_created);
  EXPECT_EQ(a.series_retired, b.series_retired);
  EXPECT_EQ(a.rollups_written, b.rollups_written);
  EXPECT_EQ(a.counter_resets, b.counter_resets);
  EXPECT_GT(a.counter_resets, 0u);
  EXPECT_GT(a.series_retired, 0u);
  EXPECT_GT(a.rollups_written, 0u);
  EXPECT_EQ(b.layout_reuses, 0u);
  // Every scrape that keeps the shape of the one before reuses it; a change costs at most
  // the scrape that makes it and the one after.
  EXPECT_GE(a.layout_reuses, 500u - 3 * changed - 1) << changed << " changes";
  // What each store holds rebuilds the same windows.
  const std::vector<windows::SeriesWindows> live = general_.ingestor->QueryAll();
  reused_.ingestor.reset();
  general_.ingestor.reset();
  for (Side* side : {&reused_, &general_}) {
    IngestOptions options;
    auto rebuilt = Ingestor::Create(options, side->store.get(), &clock_);
    ASSERT_TRUE(rebuilt.ok());
    ASSERT_TRUE((*rebuilt)->Rebuild().ok());
    EXPECT_EQ((*rebuilt)->QueryAll(), live);
  }
}

}  // namespace
}  // namespace kubestat::aggregator
