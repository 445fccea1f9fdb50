#include "kubestat/windows/window_engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "in_memory_sample_source.h"

namespace kubestat::windows {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using testing::ExactStats;
using testing::IngestAndStore;
using testing::InMemorySampleSource;
using testing::Shape;
using testing::ShapeGenerator;

// 2026-11-21T00:00:00Z: rollup buckets are aligned to whole hours of wall time.
const Timestamp kDayStart = Timestamp(seconds(1795219200));

std::unique_ptr<WindowEngine> MakeEngine(WindowEngineOptions options = {}) {
  auto engine = WindowEngine::Create(std::move(options));
  EXPECT_TRUE(engine.ok()) << engine.status();
  return *std::move(engine);
}

// Asserts the engine's windows match an exact computation: count/mean/min/max equal,
// percentiles ordered within [min, max], equal for exact windows and within 1% of the exact
// value otherwise.
void ExpectMatchesReference(const SeriesWindows& got, const std::vector<Sample>& all,
                            const std::string& where) {
  for (const WindowStats& w : got.windows) {
    const WindowStats want = ExactStats(all, got.endtime, w.window);
    SCOPED_TRACE(where + " window=" + std::to_string(w.window.count() / 1000000000) + "s");
    ASSERT_EQ(w.endtime, want.endtime);
    ASSERT_EQ(w.count, want.count);
    ASSERT_EQ(w.mean, want.mean);
    ASSERT_EQ(w.min, want.min);
    ASSERT_EQ(w.max, want.max);
    ASSERT_LE(w.min, w.p50);
    ASSERT_LE(w.p50, w.p95);
    ASSERT_LE(w.p95, w.p99);
    ASSERT_LE(w.p99, w.max);
    if (w.exact_percentiles) {
      ASSERT_EQ(w.p50, want.p50);
      ASSERT_EQ(w.p95, want.p95);
      ASSERT_EQ(w.p99, want.p99);
    } else {
      ASSERT_LE(std::abs(static_cast<double>(w.p50) - static_cast<double>(want.p50)),
                0.01 * static_cast<double>(want.p50));
      ASSERT_LE(std::abs(static_cast<double>(w.p95) - static_cast<double>(want.p95)),
                0.01 * static_cast<double>(want.p95));
      ASSERT_LE(std::abs(static_cast<double>(w.p99) - static_cast<double>(want.p99)),
                0.01 * static_cast<double>(want.p99));
    }
  }
}

class WindowEngineShapeTest : public ::testing::TestWithParam<Shape> {};

// A day and a quarter of 10 s samples with about 2% missed scrapes (and one 25-minute
// outage), checked at every hour and at 300 random sample times against brute force.
TEST_P(WindowEngineShapeTest, AllStatsMatchExactReferenceOverADay) {
  auto engine = MakeEngine();
  InMemorySampleSource source;
  const SeriesKey key = SeriesKey::Pod("node-1", "shop", "web-1", Resource::kCpu);
  ShapeGenerator gen(GetParam(), 42 + static_cast<int>(GetParam()));
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> uniform(0, 1);
  std::bernoulli_distribution random_check(300.0 / 10800);
  const int64_t steps = 30 * 360;  // 30 hours
  int checks = 0;
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t secs = i * 10;
    const bool outage = secs >= 20 * 3600 && secs < 20 * 3600 + 1500;
    const uint64_t value = gen.Next(secs);
    if (outage || uniform(rng) < 0.02) continue;
    const Timestamp t = kDayStart + seconds(secs);
    ASSERT_TRUE(IngestAndStore(*engine, source, key, t, value).ok());
    if (secs % 3600 == 0 || random_check(rng)) {
      auto got = engine->Query(key);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(got->windows.size(), 4u);
      ExpectMatchesReference(*got, source.SamplesOf(key), "t=" + std::to_string(secs));
      ++checks;
    }
  }
  EXPECT_GT(checks, 250);
  // The day window really is full: it holds roughly a day of 10 s samples.
  auto got = engine->Query(key);
  ASSERT_TRUE(got.ok());
  EXPECT_GT(got->windows[3].count, 8000u);
  EXPECT_FALSE(got->windows[3].exact_percentiles);
  EXPECT_TRUE(got->windows[0].exact_percentiles);
  EXPECT_TRUE(got->windows[1].exact_percentiles);
}

INSTANTIATE_TEST_SUITE_P(Shapes, WindowEngineShapeTest,
                         ::testing::Values(Shape::kSteady, Shape::kDiurnal, Shape::kSpiky,
                                           Shape::kHeavyTailed, Shape::kBimodal),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           return std::string(testing::ShapeName(info.param));
                         });

TEST(WindowEngineTest, P95WithinOnePercentOfExactOverADay) {
  auto engine = MakeEngine();
  InMemorySampleSource source;
  const SeriesKey key = SeriesKey::Node("node-1", Resource::kMemory);
  ShapeGenerator gen(Shape::kHeavyTailed, 99);
  for (int64_t secs = 0; secs < 86400; secs += 10) {
    ASSERT_TRUE(
        IngestAndStore(*engine, source, key, kDayStart + seconds(secs), gen.Next(secs)).ok());
  }
  auto got = engine->Query(key);
  ASSERT_TRUE(got.ok());
  const WindowStats& day = got->windows[3];
  const WindowStats want = ExactStats(source.SamplesOf(key), got->endtime, hours(24));
  EXPECT_EQ(day.count, 8640u);
  EXPECT_NEAR(static_cast<double>(day.p95), static_cast<double>(want.p95),
              0.01 * static_cast<double>(want.p95));
  EXPECT_NE(want.p95, want.p50);  // the shape has a real tail
}

TEST(WindowEngineTest, ShortWindowsHoldOnlyTheirSamples) {
  auto engine = MakeEngine();
  InMemorySampleSource source;
  const SeriesKey key = SeriesKey::Container("n", "ns", "p", "c", Resource::kCpu);
  // Samples every 5 s: 10s window has 2 samples, 1m has 12.
  for (int i = 1; i <= 30; ++i) {
    ASSERT_TRUE(IngestAndStore(*engine, source, key, kDayStart + seconds(5 * i), i * 1000).ok());
  }
  auto got = engine->Query(key);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->windows[0].window, seconds(10));
  EXPECT_EQ(got->windows[0].count, 2u);
  EXPECT_EQ(got->windows[0].min, 29000u);
  EXPECT_EQ(got->windows[0].max, 30000u);
  EXPECT_EQ(got->windows[0].mean, 29500u);
  EXPECT_EQ(got->windows[1].count, 12u);
  EXPECT_EQ(got->windows[1].min, 19000u);
  EXPECT_EQ(got->windows[1].p50, 24000u);  // rank 6 of 19000..30000
  EXPECT_EQ(got->windows[2].count, 30u);
  EXPECT_EQ(got->windows[2].min, 1000u);
}

TEST(WindowEngineTest, SampleNotAfterNewestIsRejectedAndChangesNothing) {
  auto engine = MakeEngine();
  InMemorySampleSource source;
  const SeriesKey key = SeriesKey::Node("n", Resource::kCpu);
  ASSERT_TRUE(IngestAndStore(*engine, source, key, kDayStart + seconds(20), 5).ok());
  auto before = engine->Query(key);
  absl::Status same = engine->Ingest(key, kDayStart + seconds(20), 7, source);
  EXPECT_EQ(same.code(), absl::StatusCode::kInvalidArgument);
  absl::Status older = engine->Ingest(key, kDayStart + seconds(10), 7, source);
  EXPECT_EQ(older.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(older.message()), ::testing::HasSubstr("not after the newest"));
  EXPECT_EQ(*engine->Query(key), *before);
}

TEST(WindowEngineTest, DeletedSeriesVanishFromEveryQueryAtOnce) {
  auto engine = MakeEngine();
  InMemorySampleSource source;
  const std::vector<SeriesKey> keys = {
      SeriesKey::Node("n1", Resource::kCpu),
      SeriesKey::SystemContainer("n1", "kubelet", Resource::kMemory),
      SeriesKey::Pod("n1", "shop", "web-1", Resource::kCpu),
      SeriesKey::Container("n1", "shop", "web-1", "app", Resource::kCpu),
      SeriesKey::Container("n1", "shop", "web-1", "sidecar", Resource::kMemory),
      SeriesKey::Pod("n1", "shop", "web-10", Resource::kCpu),
      SeriesKey::Pod("n2", "shop", "web-2", Resource::kCpu),
  };
  for (const SeriesKey& k : keys) {
    ASSERT_TRUE(IngestAndStore(*engine, source, k, kDayStart, 1).ok());
  }
  EXPECT_EQ(engine->QueryNode("n1").size(), 6u);
  EXPECT_EQ(engine->QueryPod("n1", "shop", "web-1").size(), 3u);

  EXPECT_EQ(engine->DeletePod("n1", "shop", "web-1"), 3u);
  EXPECT_EQ(engine->Query(keys[2]).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(engine->Query(keys[3]).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(engine->QueryPod("n1", "shop", "web-1").empty());
  EXPECT_EQ(engine->QueryPod("n1", "shop", "web-10").size(), 1u);
  EXPECT_EQ(engine->QueryNode("n1").size(), 3u);

  EXPECT_EQ(engine->DeleteSeries(keys[0]), 1u);
  EXPECT_FALSE(engine->Contains(keys[0]));
  EXPECT_EQ(engine->DeleteNode("n1"), 2u);
  EXPECT_TRUE(engine->QueryNode("n1").empty());
  EXPECT_EQ(engine->SeriesCount(), 1u);
  EXPECT_EQ(engine->ListSeries(), std::vector<SeriesKey>{keys[6]});
  // A deleted series that comes back starts afresh.
  ASSERT_TRUE(engine->Ingest(keys[2], kDayStart + seconds(10), 9, source).ok());
  EXPECT_EQ(engine->Query(keys[2])->windows[3].count, 1u);
}

TEST(WindowEngineTest, IngestThroughHandlesGivesWhatIngestWithoutThemGives) {
  // Two engines fed the same samples, one through a handle per series kept beside the
  // series as the ingestor keeps it (reset when the series is deleted); runs in key order,
  // now and then shuffled, with series that come and go and a neighbouring node, over more
  // than an hour so long windows read expired samples back.
  auto with = MakeEngine();
  auto without = MakeEngine();
  InMemorySampleSource source_with;
  InMemorySampleSource source_without;
  std::mt19937_64 rng(20261126);
  std::map<SeriesKey, WindowEngine::SeriesHandle> handles;
  size_t through_handle = 0;
  std::vector<SeriesKey> all;
  for (const char* node : {"n1", "n2"}) {
    all.push_back(SeriesKey::Node(node, Resource::kCpu));
    all.push_back(SeriesKey::Node(node, Resource::kMemory));
    all.push_back(SeriesKey::SystemContainer(node, "kubelet", Resource::kMemory));
    for (int p = 0; p < 6; ++p) {
      const std::string pod = "pod-" + std::to_string(p);
      all.push_back(SeriesKey::Pod(node, "ns", pod, Resource::kCpu));
      for (const char* c : {"a", "b"}) {
        all.push_back(SeriesKey::Container(node, "ns", pod, c, Resource::kCpu));
        all.push_back(SeriesKey::Container(node, "ns", pod, c, Resource::kMemory));
      }
    }
  }
  std::sort(all.begin(), all.end());
  for (int64_t secs = 0; secs <= 5400; secs += 10) {
    const Timestamp t = kDayStart + seconds(secs);
    std::vector<SeriesKey> run;
    for (const SeriesKey& key : all) {
      if (rng() % 10 != 0) run.push_back(key);  // a series missing from this scrape
    }
    if (rng() % 20 == 0) std::shuffle(run.begin(), run.end(), rng);
    if (rng() % 50 == 0) {
      // A series leaves both engines between two runs; it may come back as a new one.
      const SeriesKey& gone = all[rng() % all.size()];
      ASSERT_EQ(with->DeleteSeries(gone), without->DeleteSeries(gone));
      handles[gone].Reset();
    }
    for (const SeriesKey& key : run) {
      WindowEngine::SeriesHandle& handle = handles[key];
      if (handle.valid()) ++through_handle;
      const uint64_t value = rng() % 1000000;
      const absl::Status a = with->Ingest(key, t, value, source_with, handle);
      if (a.ok()) source_with.Append(key, t, value);
      ASSERT_EQ(a, IngestAndStore(*without, source_without, key, t, value)) << key.ToString();
      ASSERT_TRUE(handle.valid()) << key.ToString();
    }
    if (secs % 600 == 0 || secs == 5400) {
      for (const char* node : {"n1", "n2"}) {
        ASSERT_EQ(with->QueryNode(node), without->QueryNode(node)) << node << " at " << secs;
      }
    }
  }
  EXPECT_EQ(with->SeriesCount(), without->SeriesCount());
  // Nearly every sample after a series' first went through its handle.
  EXPECT_GT(through_handle, all.size() * 400);
}

// A node's series of every kind, with a day of history for some and an hour or less for
// others (so their windows and endtimes differ from series to series), beside nodes whose
// names sort next to it. VisitNode gives each series of the node once, in key order, with
// what Query gives for it (the windows buffer is reused between calls), and QueryNode the
// same.
TEST(WindowEngineTest, VisitNodeGivesEverySeriesOfTheNodeAsQueryDoes) {
  auto engine = MakeEngine();
  InMemorySampleSource source;
  struct Series {
    SeriesKey key;
    int64_t first_s;  // first and last sample, seconds after kDayStart
    int64_t last_s;
    ShapeGenerator gen;
  };
  std::vector<Series> series;
  auto add = [&](SeriesKey key, int64_t first_s, int64_t last_s, Shape shape) {
    const uint64_t seed = series.size() + 1;
    series.push_back({std::move(key), first_s, last_s, ShapeGenerator(shape, seed)});
  };
  const int64_t day = 26 * 3600;
  for (const char* node : {"n0", "n1", "n10"}) {
    add(SeriesKey::Node(node, Resource::kCpu), 0, day, Shape::kDiurnal);
    add(SeriesKey::Node(node, Resource::kMemory), 0, day, Shape::kSteady);
  }
  add(SeriesKey::SystemContainer("n1", "kubelet", Resource::kCpu), 0, day, Shape::kSpiky);
  add(SeriesKey::SystemContainer("n1", "runtime", Resource::kMemory), 600, day - 300,
      Shape::kSteady);
  add(SeriesKey::Pod("n1", "default", "db-0", Resource::kCpu), 0, day, Shape::kHeavyTailed);
  add(SeriesKey::Container("n1", "default", "db-0", "db", Resource::kCpu), 0, day,
      Shape::kHeavyTailed);
  add(SeriesKey::Container("n1", "default", "db-0", "db", Resource::kMemory), 0, day,
      Shape::kSteady);
  add(SeriesKey::Pod("n1", "shop", "web-1", Resource::kMemory), day - 3000, day, Shape::kSpiky);
  add(SeriesKey::Container("n1", "shop", "web-1", "app", Resource::kCpu), day - 3000, day - 40,
      Shape::kDiurnal);
  add(SeriesKey::Container("n1", "shop", "web-1", "sidecar", Resource::kMemory), day - 50, day,
      Shape::kSteady);
  for (int64_t secs = 0; secs <= day; secs += 10) {
    for (Series& s : series) {
      if (secs < s.first_s || secs > s.last_s) continue;
      ASSERT_TRUE(
          IngestAndStore(*engine, source, s.key, kDayStart + seconds(secs), s.gen.Next(secs)).ok());
    }
  }

  std::vector<SeriesWindows> visited;
  engine->VisitNode(
      "n1", [&](const SeriesKey& key, Timestamp endtime, std::span<const WindowStats> windows) {
        visited.push_back({key, endtime, {windows.begin(), windows.end()}});
      });
  std::vector<SeriesWindows> want;
  for (const SeriesKey& key : engine->ListSeries()) {
    if (key.node != "n1") continue;
    absl::StatusOr<SeriesWindows> windows = engine->Query(key);
    ASSERT_TRUE(windows.ok());
    want.push_back(*std::move(windows));
  }
  ASSERT_EQ(want.size(), 10u);
  EXPECT_EQ(visited, want);
  EXPECT_EQ(engine->QueryNode("n1"), want);
  // The day-long window of the oldest series is full; the young ones' are not.
  ASSERT_EQ(visited[0].windows.size(), 4u);
  EXPECT_EQ(visited[0].windows[3].count, 8640u);
  EXPECT_FALSE(visited[0].windows[3].exact_percentiles);
  EXPECT_EQ(visited.back().windows[3].count, 6u);
  EXPECT_NE(visited[0].endtime, visited[8].endtime);

  int calls = 0;
  engine->VisitNode("n2",
                    [&](const SeriesKey&, Timestamp, std::span<const WindowStats>) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(WindowEngineTest, ZeroValuesAreReportedExactly) {
  auto engine = MakeEngine();
  InMemorySampleSource source;
  const SeriesKey idle = SeriesKey::Container("n", "ns", "p", "pause", Resource::kCpu);
  const SeriesKey mixed = SeriesKey::Container("n", "ns", "p", "app", Resource::kCpu);
  for (int64_t secs = 0; secs < 2 * 3600; secs += 10) {
    const Timestamp t = kDayStart + seconds(secs);
    ASSERT_TRUE(IngestAndStore(*engine, source, idle, t, 0).ok());
    // 60% zeros, the rest large.
    ASSERT_TRUE(IngestAndStore(*engine, source, mixed, t, (secs / 10) % 5 < 3 ? 0 : 5000000).ok());
  }
  const SeriesWindows idle_windows = *engine->Query(idle);
  for (const WindowStats& w : idle_windows.windows) {
    EXPECT_EQ(w.min, 0u);
    EXPECT_EQ(w.max, 0u);
    EXPECT_EQ(w.mean, 0u);
    EXPECT_EQ(w.p50, 0u);
    EXPECT_EQ(w.p99, 0u);
  }
  const WindowStats hour = engine->Query(mixed)->windows[2];
  EXPECT_EQ(hour.min, 0u);
  EXPECT_EQ(hour.p50, 0u);
  EXPECT_EQ(hour.max, 5000000u);
  EXPECT_NEAR(static_cast<double>(hour.p95), 5e6, 5e4);
  ExpectMatchesReference(*engine->Query(mixed), source.SamplesOf(mixed), "mixed");
}

TEST(WindowEngineTest, GapLongerThanAWindowLeavesOnlyNewSamples) {
  auto engine = MakeEngine();
  InMemorySampleSource source;
  const SeriesKey key = SeriesKey::Node("n", Resource::kMemory);
  for (int64_t secs = 0; secs < 3 * 3600; secs += 10) {
    ASSERT_TRUE(IngestAndStore(*engine, source, key, kDayStart + seconds(secs), 1000 + secs).ok());
  }
  // The node is unreachable for 90 minutes.
  const Timestamp back = kDayStart + seconds(3 * 3600 + 5400);
  ASSERT_TRUE(IngestAndStore(*engine, source, key, back, 7).ok());
  auto got = engine->Query(key);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->windows[0].count, 1u);
  EXPECT_EQ(got->windows[2].count, 1u);
  EXPECT_EQ(got->windows[2].max, 7u);
  EXPECT_EQ(got->windows[3].count, 3u * 360 + 1);
  EXPECT_EQ(got->windows[3].min, 7u);
  ExpectMatchesReference(*got, source.SamplesOf(key), "after gap");
}

TEST(WindowEngineTest, CustomWindowListIsReportedInAscendingOrder) {
  WindowEngineOptions options;
  options.windows = {hours(2), seconds(30), minutes(5)};
  options.exact_window_limit = minutes(5);
  auto engine = MakeEngine(options);
  InMemorySampleSource source;
  const SeriesKey key = SeriesKey::Pod("n", "ns", "p", Resource::kMemory);
  ShapeGenerator gen(Shape::kBimodal, 5);
  for (int64_t secs = 0; secs < 5 * 3600; secs += 15) {
    ASSERT_TRUE(
        IngestAndStore(*engine, source, key, kDayStart + seconds(secs), gen.Next(secs)).ok());
    if (secs % 1800 == 0) {
      auto got = engine->Query(key);
      ASSERT_TRUE(got.ok());
      ASSERT_EQ(got->windows.size(), 3u);
      EXPECT_EQ(got->windows[0].window, seconds(30));
      EXPECT_EQ(got->windows[1].window, minutes(5));
      EXPECT_EQ(got->windows[2].window, hours(2));
      EXPECT_TRUE(got->windows[1].exact_percentiles);
      EXPECT_FALSE(got->windows[2].exact_percentiles);
      ExpectMatchesReference(*got, source.SamplesOf(key), "t=" + std::to_string(secs));
    }
  }
}

TEST(WindowEngineTest, FailedSourceReadLeavesSeriesUnchangedAndCanBeRetried) {
  auto engine = MakeEngine();
  InMemorySampleSource source;
  const SeriesKey key = SeriesKey::Node("n", Resource::kCpu);
  for (int64_t secs = 0; secs <= 3600; secs += 10) {
    ASSERT_TRUE(IngestAndStore(*engine, source, key, kDayStart + seconds(secs), secs + 1).ok());
  }
  auto before = engine->Query(key);
  const Timestamp next = kDayStart + seconds(3610);
  source.FailNextRead();
  EXPECT_EQ(engine->Ingest(key, next, 5, source).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(*engine->Query(key), *before);
  ASSERT_TRUE(IngestAndStore(*engine, source, key, next, 5).ok());
  ExpectMatchesReference(*engine->Query(key), source.SamplesOf(key), "retry");
}

class LyingSource : public SampleSource {
 public:
  absl::Status ReadSamples(const SeriesKey&, Timestamp after, Timestamp,
                           std::vector<Sample>* out) override {
    out->push_back({after + seconds(1), 123456789});  // never ingested
    return absl::OkStatus();
  }
};

TEST(WindowEngineTest, InconsistentSourceIsDataLossAndDropsTheSeries) {
  auto engine = MakeEngine();
  LyingSource lying;
  const SeriesKey key = SeriesKey::Node("n", Resource::kCpu);
  // Nothing expires during the first hour, so the source is not asked.
  for (int64_t secs = 0; secs < 3600; secs += 10) {
    ASSERT_TRUE(engine->Ingest(key, kDayStart + seconds(secs), 5, lying).ok());
  }
  absl::Status s = engine->Ingest(key, kDayStart + seconds(3600), 5, lying);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(engine->Contains(key));
}

// The store's side of persistence: rollups of every complete hour, serialized and parsed.
std::vector<BucketRollup> HourlyRollups(const WindowEngine& engine,
                                        const std::vector<Sample>& samples, Timestamp newest) {
  std::vector<BucketRollup> rollups;
  std::vector<Sample> bucket;
  Timestamp bucket_start = engine.RollupBucketStart(samples.front().time);
  auto flush = [&] {
    if (bucket.empty()) return;
    auto rollup = engine.BuildRollup(bucket_start, bucket);
    EXPECT_TRUE(rollup.ok()) << rollup.status();
    auto parsed = ParseRollup(SerializeRollup(*rollup));
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, *rollup);
    rollups.push_back(*parsed);
    bucket.clear();
  };
  for (const Sample& s : samples) {
    if (s.time > newest) break;
    if (engine.RollupBucketStart(s.time) != bucket_start) {
      flush();
      bucket_start = engine.RollupBucketStart(s.time);
    }
    bucket.push_back(s);
  }
  // The newest hour is still open: no rollup for it.
  bucket.clear();
  return rollups;
}

TEST(WindowEngineTest, RestoreFromRollupsGivesIdenticalQueryResults) {
  auto original = MakeEngine();
  InMemorySampleSource source;
  const SeriesKey key = SeriesKey::Container("n", "ns", "p", "c", Resource::kCpu);
  ShapeGenerator gen(Shape::kDiurnal, 11);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> uniform(0, 1);
  Timestamp newest;
  for (int64_t secs = 0; secs < 29 * 3600 + 1234; secs += 10) {
    if (uniform(rng) < 0.02) continue;
    newest = kDayStart + seconds(secs);
    ASSERT_TRUE(IngestAndStore(*original, source, key, newest, gen.Next(secs)).ok());
  }
  const std::vector<BucketRollup> rollups = HourlyRollups(*original, source.SamplesOf(key), newest);
  ASSERT_GE(rollups.size(), 29u);

  auto restored = MakeEngine();
  source.ResetCounters();
  ASSERT_TRUE(restored->RestoreSeries(key, newest, rollups, source).ok());
  // Far fewer samples than a day (8640) are read back.
  EXPECT_LT(source.samples_read(), 2000u);
  EXPECT_EQ(*restored->Query(key), *original->Query(key));

  // Both keep going identically for three more hours.
  for (int64_t secs = 29 * 3600 + 1240; secs < 32 * 3600; secs += 10) {
    const Timestamp t = kDayStart + seconds(secs);
    const uint64_t v = gen.Next(secs);
    ASSERT_TRUE(original->Ingest(key, t, v, source).ok());
    ASSERT_TRUE(restored->Ingest(key, t, v, source).ok());
    source.Append(key, t, v);
    if (secs % 600 == 0) {
      ASSERT_EQ(*restored->Query(key), *original->Query(key)) << "t=" << secs;
    }
  }
  ExpectMatchesReference(*restored->Query(key), source.SamplesOf(key), "restored");
}

TEST(WindowEngineTest, RestoreWithoutRollupsReplaysSamplesToTheSameResult) {
  auto original = MakeEngine();
  InMemorySampleSource source;
  const SeriesKey key = SeriesKey::Node("n", Resource::kMemory);
  ShapeGenerator gen(Shape::kSpiky, 8);
  Timestamp newest;
  for (int64_t secs = 0; secs < 26 * 3600 + 55; secs += 10) {
    newest = kDayStart + seconds(secs);
    ASSERT_TRUE(IngestAndStore(*original, source, key, newest, gen.Next(secs)).ok());
  }
  auto restored = MakeEngine();
  ASSERT_TRUE(restored->RestoreSeries(key, newest, {}, source).ok());
  EXPECT_EQ(*restored->Query(key), *original->Query(key));
}

// A series that began during the day (a pod started at hour 20 of 29) has no rollups for the
// hours of its 1d window before its first sample. With kComplete those hours are not read at
// all, and the result is the same as reading them (they hold nothing of the series); a
// complete bucket is read only when coverage is partial.
TEST(WindowEngineTest, RestoreWithCompleteRollupsSkipsTheHoursBeforeTheSeriesBegan) {
  auto original = MakeEngine();
  InMemorySampleSource source;
  const SeriesKey key = SeriesKey::Container("n", "ns", "p", "c", Resource::kMemory);
  ShapeGenerator gen(Shape::kDiurnal, 5);
  Timestamp newest;
  for (int64_t secs = 20 * 3600 + 17; secs < 29 * 3600 + 1234; secs += 10) {
    newest = kDayStart + seconds(secs);
    ASSERT_TRUE(IngestAndStore(*original, source, key, newest, gen.Next(secs)).ok());
  }
  const std::vector<BucketRollup> rollups = HourlyRollups(*original, source.SamplesOf(key), newest);
  ASSERT_EQ(rollups.size(), 9u);  // hours 20 to 28; hour 29 is still open

  auto partial = MakeEngine();
  source.ResetCounters();
  ASSERT_TRUE(partial->RestoreSeries(key, newest, rollups, source).ok());
  const uint64_t partial_reads = source.reads();
  EXPECT_EQ(*partial->Query(key), *original->Query(key));

  auto complete = MakeEngine();
  source.ResetCounters();
  ASSERT_TRUE(
      complete->RestoreSeries(key, newest, rollups, source, WindowEngine::RollupCoverage::kComplete)
          .ok());
  EXPECT_EQ(*complete->Query(key), *original->Query(key));
  // The 1d window's hours 5 to 19 (complete, no rollup) are read one by one with partial
  // coverage and not at all with complete coverage.
  EXPECT_GE(partial_reads, source.reads() + 14) << "partial " << partial_reads;

  // Complete coverage trusts the rollups: a missing one that did hold samples is left out
  // (which is why the pipeline falls back to partial coverage when one cannot be parsed).
  std::vector<BucketRollup> one_missing = rollups;
  one_missing.erase(one_missing.begin() + 3);
  auto trusting = MakeEngine();
  ASSERT_TRUE(
      trusting
          ->RestoreSeries(key, newest, one_missing, source, WindowEngine::RollupCoverage::kComplete)
          .ok());
  EXPECT_LT(trusting->Query(key)->windows.back().count, original->Query(key)->windows.back().count);
  auto reading = MakeEngine();
  ASSERT_TRUE(reading->RestoreSeries(key, newest, one_missing, source).ok());
  EXPECT_EQ(*reading->Query(key), *original->Query(key));
}

// Every percentile of every window, for failure messages.
std::string PercentilesOf(const WindowStats& w) {
  return "window=" + std::to_string(w.window.count() / 1000000000) +
         "s min=" + std::to_string(w.min) + " p50=" + std::to_string(w.p50) +
         " p95=" + std::to_string(w.p95) + " p99=" + std::to_string(w.p99) +
         " max=" + std::to_string(w.max);
}

void ExpectEveryPercentileIs(const SeriesWindows& got, uint64_t value, const std::string& where) {
  for (const WindowStats& w : got.windows) {
    EXPECT_EQ(w.p50, value) << where << " " << PercentilesOf(w);
    EXPECT_EQ(w.p95, value) << where << " " << PercentilesOf(w);
    EXPECT_EQ(w.p99, value) << where << " " << PercentilesOf(w);
  }
}

// A series whose value never changes (a node whose working set stayed put) reports that very
// value as its 50th, 95th and 99th percentile in every window, the sketch-backed 1h and 1d
// ones included: while the series is younger than an hour, once a day is full, and after a
// restore from hourly rollups. The sketch alone would report its bucket's representative
// (889415256 for 894312448 bytes), which lies outside the window's [min, max].
TEST(WindowEngineTest, ConstantSeriesReportsItsExactValueAsEveryPercentile) {
  const std::vector<std::pair<Resource, uint64_t>> constants = {
      {Resource::kMemory, 894312448},    // 853 MiB: the working set above
      {Resource::kMemory, 17179869184},  // 16 GiB
      {Resource::kMemory, 1025},         // just above the exact buckets
      {Resource::kCpu, 894312448},       // 894m cores
      {Resource::kCpu, 250000000},       // 250m cores
      {Resource::kCpu, 1500000000},      // 1.5 cores
      {Resource::kCpu, 7},               // an exact bucket
  };
  auto engine = MakeEngine();
  InMemorySampleSource source;
  std::vector<SeriesKey> keys;
  for (size_t i = 0; i < constants.size(); ++i) {
    keys.push_back(SeriesKey::Node("node-" + std::to_string(i), constants[i].first));
  }
  for (int64_t secs = 0; secs < 25 * 3600; secs += 10) {
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_TRUE(
          IngestAndStore(*engine, source, keys[i], kDayStart + seconds(secs), constants[i].second)
              .ok());
    }
    if (secs == 1800 || secs == 3 * 3600 || secs == 25 * 3600 - 10) {
      for (size_t i = 0; i < keys.size(); ++i) {
        auto got = engine->Query(keys[i]);
        ASSERT_TRUE(got.ok());
        ASSERT_FALSE(got->windows[2].exact_percentiles);
        ASSERT_FALSE(got->windows[3].exact_percentiles);
        ExpectEveryPercentileIs(*got, constants[i].second,
                                keys[i].ToString() + " t=" + std::to_string(secs));
      }
    }
  }
  const Timestamp newest = kDayStart + seconds(25 * 3600 - 10);
  for (size_t i = 0; i < keys.size(); ++i) {
    auto restored = MakeEngine();
    ASSERT_TRUE(restored
                    ->RestoreSeries(keys[i], newest,
                                    HourlyRollups(*engine, source.SamplesOf(keys[i]), newest),
                                    source)
                    .ok());
    auto got = restored->Query(keys[i]);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->windows[3].count, 8640u);
    ExpectEveryPercentileIs(*got, constants[i].second, keys[i].ToString() + " restored");
  }
}

// Seeded series of every spread, from constant to a factor of two, at values from a
// thousand to a trillion: after every sample, every percentile of every window lies within
// that window's exact [min, max] (and stays within 1% of the exact percentile).
TEST(WindowEngineTest, PercentilesLieWithinMinAndMaxForRandomSeries) {
  auto engine = MakeEngine();
  InMemorySampleSource source;
  std::mt19937_64 rng(20261121);
  std::uniform_real_distribution<double> uniform(0, 1);
  const double spreads[] = {0, 1e-6, 1e-4, 1e-3, 5e-3, 1e-2, 0.1, 1};
  struct Series {
    SeriesKey key;
    double base;
    double spread;
  };
  std::vector<Series> series;
  for (int i = 0; i < 32; ++i) {
    series.push_back({SeriesKey::Container("node-1", "ns", "pod-" + std::to_string(i), "c",
                                           i % 2 == 0 ? Resource::kCpu : Resource::kMemory),
                      std::pow(10.0, 3 + 9 * uniform(rng)), spreads[i % 8]});
  }
  int checks = 0;
  for (int64_t secs = 0; secs < 26 * 3600; secs += 10) {
    for (const Series& s : series) {
      if (uniform(rng) < 0.03) continue;  // a missed scrape
      const auto value = static_cast<uint64_t>(s.base * (1 + s.spread * uniform(rng)));
      ASSERT_TRUE(IngestAndStore(*engine, source, s.key, kDayStart + seconds(secs), value).ok());
      if (uniform(rng) > 0.003) continue;
      auto got = engine->Query(s.key);
      ASSERT_TRUE(got.ok());
      for (const WindowStats& w : got->windows) {
        ASSERT_LE(w.min, w.p50) << s.key.ToString() << " t=" << secs << " " << PercentilesOf(w);
        ASSERT_LE(w.p50, w.p95) << s.key.ToString() << " t=" << secs << " " << PercentilesOf(w);
        ASSERT_LE(w.p95, w.p99) << s.key.ToString() << " t=" << secs << " " << PercentilesOf(w);
        ASSERT_LE(w.p99, w.max) << s.key.ToString() << " t=" << secs << " " << PercentilesOf(w);
      }
      ++checks;
    }
  }
  EXPECT_GT(checks, 500);
  for (const Series& s : series) {
    ExpectMatchesReference(*engine->Query(s.key), source.SamplesOf(s.key), s.key.ToString());
  }
}

// --- Series younger than a long window, starting anywhere in a bucket ---

// One line per window, for failure messages.
std::string Describe(const SeriesWindows& windows) {
  std::string out;
  for (const WindowStats& w : windows.windows) {
    out += "\n  window=" + std::to_string(w.window.count() / 1000000000) +
           "s count=" + std::to_string(w.count) + " mean=" + std::to_string(w.mean) +
           " min=" + std::to_string(w.min) + " max=" + std::to_string(w.max) +
           " p50=" + std::to_string(w.p50) + " p95=" + std::to_string(w.p95) +
           " p99=" + std::to_string(w.p99);
  }
  return out;
}

// Ingests `values` every `step` from `start`, checking every window against brute force
// after each sample.
void IngestCheckingEverySample(WindowEngine& engine, InMemorySampleSource& source,
                               const SeriesKey& key, Timestamp start, Duration step,
                               const std::vector<uint64_t>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    const Timestamp t = start + step * static_cast<int64_t>(i);
    ASSERT_TRUE(IngestAndStore(engine, source, key, t, values[i]).ok());
    auto got = engine.Query(key);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_NO_FATAL_FAILURE(
        ExpectMatchesReference(*got, source.SamplesOf(key), "sample " + std::to_string(i)));
  }
}

TEST(WindowEngineTest, YoungSeriesStartedOffAnHourReportsExactMinAndMax) {
  auto engine = MakeEngine();
  InMemorySampleSource source;
  const SeriesKey key = SeriesKey::Pod("n", "ns", "p", Resource::kCpu);
  const Timestamp start = kDayStart + hours(5) + seconds(1234) + std::chrono::milliseconds(567);
  ASSERT_NO_FATAL_FAILURE(
      IngestCheckingEverySample(*engine, source, key, start, seconds(30), {5, 3, 1, 9, 4}));
  auto got = engine->Query(key);
  ASSERT_TRUE(got.ok());
  for (size_t w : {2, 3}) {  // 1h and 1d
    SCOPED_TRACE("window " + std::to_string(w));
    EXPECT_EQ(got->windows[w].count, 5u);
    EXPECT_EQ(got->windows[w].mean, 4u);  // 22 / 5 rounded
    EXPECT_EQ(got->windows[w].min, 1u);
    EXPECT_EQ(got->windows[w].max, 9u);
    EXPECT_EQ(got->windows[w].p50, 4u);
    EXPECT_EQ(got->windows[w].p99, 9u);
  }
}

// Three hours of 30 s samples from several offsets into an hour (and into the hour window's
// 5-minute buckets): the hour window fills and slides while the day window is still young.
// Runs that only rise or only fall keep the most samples in the suffix records.
TEST(WindowEngineTest, YoungSeriesRisingAndFallingMatchReferenceAtEverySample) {
  const std::vector<Duration> offsets = {Duration(0),
                                         Duration(1),
                                         seconds(1033) + std::chrono::milliseconds(500),
                                         minutes(4) + seconds(59),
                                         minutes(59) + seconds(59),
                                         minutes(30) + Duration(7)};
  constexpr int kSamples = 3 * 120;
  std::vector<std::pair<std::string, std::vector<uint64_t>>> patterns;
  std::vector<uint64_t> rising, falling, peak, valley;
  for (int i = 0; i < kSamples; ++i) {
    rising.push_back(1000000 + 1000 * static_cast<uint64_t>(i));
    falling.push_back(1000000 + 1000 * static_cast<uint64_t>(kSamples - i));
    const auto from_middle = static_cast<uint64_t>(std::abs(i - kSamples / 2));
    peak.push_back(5000000 - 7000 * from_middle);
    valley.push_back(2000000 + 7000 * from_middle);
  }
  patterns = {{"rising", rising}, {"falling", falling}, {"peak", peak}, {"valley", valley}};
  for (const Duration offset : offsets) {
    for (const auto& [name, values] : patterns) {
      SCOPED_TRACE(name + " from +" + std::to_string(offset.count()) + "ns");
      auto engine = MakeEngine();
      InMemorySampleSource source;
      const SeriesKey key = SeriesKey::Node("n", Resource::kMemory);
      ASSERT_NO_FATAL_FAILURE(IngestCheckingEverySample(
          *engine, source, key, kDayStart + hours(2) + offset, seconds(30), values));
    }
  }
}

// Series a day old whose oldest hour leaves the day window sample by sample: a smooth rise
// (the min stack holds every sample of that hour), a fall through values near the top of the
// 64-bit range in huge steps, and a sawtooth. Every statistic is checked after every sample
// of the hour, and a restored engine must agree.
TEST(WindowEngineTest, OldestHourOfADayLeavesWithExactMinAndMaxForLongMonotoneRuns) {
  constexpr int64_t kStep = 10;
  constexpr int64_t kDaySamples = 86400 / kStep;
  const std::vector<std::pair<std::string, std::function<uint64_t(int64_t)>>> patterns = {
      {"rising", [](int64_t i) { return 500000000 + 4096 * static_cast<uint64_t>(i); }},
      {"falling-huge",
       [](int64_t i) {
         return std::numeric_limits<uint64_t>::max() -
                (uint64_t{1} << 50) * static_cast<uint64_t>(i);
       }},
      {"sawtooth",
       [](int64_t i) {
         const auto phase = static_cast<uint64_t>(i % 37);
         return (i / 37) % 2 == 0 ? 1000 + 977 * phase : 37000 - 977 * phase;
       }},
  };
  for (const auto& [name, value_at] : patterns) {
    SCOPED_TRACE(name);
    auto engine = MakeEngine();
    InMemorySampleSource source;
    const SeriesKey key = SeriesKey::Node("n", Resource::kMemory);
    std::vector<Sample> all;
    // Starts 7 s past an hour, so the day window's start sits inside its oldest hour.
    const Timestamp first = kDayStart + seconds(7);
    int64_t i = 0;
    for (; i < kDaySamples; ++i) {
      const Sample s{first + seconds(kStep * i), value_at(i)};
      ASSERT_TRUE(IngestAndStore(*engine, source, key, s.time, s.value).ok());
      all.push_back(s);
    }
    for (; i < kDaySamples + 3600 / kStep + 2; ++i) {
      const Sample s{first + seconds(kStep * i), value_at(i)};
      ASSERT_TRUE(IngestAndStore(*engine, source, key, s.time, s.value).ok());
      all.push_back(s);
      absl::StatusOr<SeriesWindows> got = engine->Query(key);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_NO_FATAL_FAILURE(ExpectMatchesReference(*got, all, "sample " + std::to_string(i)));
      if (i % 61 == 0) {
        auto restored = MakeEngine();
        ASSERT_TRUE(restored->RestoreSeries(key, s.time, {}, source).ok());
        absl::StatusOr<SeriesWindows> again = restored->Query(key);
        ASSERT_TRUE(again.ok()) << again.status();
        ASSERT_EQ(*again, *got) << "restored at sample " << i;
      }
    }
  }
}

// The stacks of a partly expired bucket cost a few bytes per remaining sample, not a whole
// sample's sixteen, even when a smooth series keeps every sample of the bucket in them.
TEST(WindowEngineTest, AStackOfAnHoursSmoothRiseCostsAFewBytesPerSample) {
  auto engine = MakeEngine();
  InMemorySampleSource source;
  const SeriesKey key = SeriesKey::Node("n", Resource::kMemory);
  // A day and 5 minutes: the day window's oldest hour has 330 samples left, every one of
  // them in the min stack (the series only rises).
  int64_t secs = 0;
  for (; secs <= 86400 + 300; secs += 10) {
    ASSERT_TRUE(IngestAndStore(*engine, source, key, kDayStart + seconds(secs),
                               700000000 + 8192 * static_cast<uint64_t>(secs))
                    .ok());
  }
  const WindowEngine::Memory memory = engine->MemoryByPart();
  EXPECT_GT(memory.stacks, 330u) << "the stacks hold the oldest hour's rest";
  EXPECT_LT(memory.stacks, 4 * 360u + 256) << "bytes of the stacks for 330 + 30 samples";
}

// The stacks shrink as their bucket leaves the window: once half of their bytes have been
// read, what is left moves to a block of its own size.
TEST(WindowEngineTest, TheStacksOfALeavingHourShrinkWithIt) {
  auto engine = MakeEngine();
  InMemorySampleSource source;
  const SeriesKey key = SeriesKey::Node("n", Resource::kMemory);
  std::vector<Sample> all;
  int64_t secs = 0;
  auto ingest_until = [&](int64_t until_secs) {
    for (; secs <= until_secs; secs += 10) {
      const Sample s{kDayStart + seconds(secs), 700000000 + 8192 * static_cast<uint64_t>(secs)};
      ASSERT_TRUE(IngestAndStore(*engine, source, key, s.time, s.value).ok());
      all.push_back(s);
    }
  };
  // The day window's oldest hour has 330 samples left, every one in the min stack.
  ASSERT_NO_FATAL_FAILURE(ingest_until(86400 + 300));
  const size_t full = engine->MemoryByPart().stacks;
  // 35 minutes in: 150 left.
  ASSERT_NO_FATAL_FAILURE(ingest_until(86400 + 2100));
  const size_t later = engine->MemoryByPart().stacks;
  EXPECT_LT(later, full * 6 / 10) << "the stacks kept the bytes of samples that left";
  absl::StatusOr<SeriesWindows> got = engine->Query(key);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectMatchesReference(*got, all, "after the stacks shrank");
}

// A long window's ring takes 8 bytes a bucket while the series stays within 4 GiB of where it
// started, and 16 from a value beyond that on, with every statistic exact before and after.
TEST(WindowEngineTest, RingsTakeHalfTheBytesWhileValuesStayWithinFourGiB) {
  auto engine = MakeEngine();
  InMemorySampleSource source;
  const SeriesKey key = SeriesKey::Node("n", Resource::kMemory);
  constexpr size_t kSlots = (24 + 1) + (12 + 1);  // the day's hours and the hour's 5 minutes
  std::vector<Sample> all;
  uint64_t value = uint64_t{6} << 30;
  int64_t secs = 0;
  auto ingest = [&](uint64_t v) {
    const Sample s{kDayStart + seconds(secs), v};
    secs += 10;
    ASSERT_TRUE(IngestAndStore(*engine, source, key, s.time, s.value).ok());
    all.push_back(s);
  };
  // Two hours moving up to 1.5 GiB below and above the first value.
  constexpr uint64_t kSwing = uint64_t{3} << 29;
  ASSERT_NO_FATAL_FAILURE(ingest(value));
  for (uint64_t i = 1; i < 720; ++i) {
    ASSERT_NO_FATAL_FAILURE(ingest(i % 2 == 0 ? value - kSwing - i : value + kSwing + i));
  }
  EXPECT_EQ(engine->MemoryByPart().rings, kSlots * 8);
  absl::StatusOr<SeriesWindows> got = engine->Query(key);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectMatchesReference(*got, all, "narrow");
  // 5 GiB above the first: out of a narrow ring's reach.
  value += uint64_t{5} << 30;
  ASSERT_NO_FATAL_FAILURE(ingest(value));
  EXPECT_EQ(engine->MemoryByPart().rings, kSlots * 16);
  for (int i = 0; i < 400; ++i) ASSERT_NO_FATAL_FAILURE(ingest(value - 977 * i));
  got = engine->Query(key);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectMatchesReference(*got, all, "wide");
  auto restored = MakeEngine();
  ASSERT_TRUE(restored->RestoreSeries(key, all.back().time, {}, source).ok());
  absl::StatusOr<SeriesWindows> again = restored->Query(key);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *got);
}

// Scrape times wander: when a scrape comes a little late, the next minute holds seven
// samples at 10 s instead of six. Those seven stay in the series record itself, as six do.
TEST(WindowEngineTest, AMinuteOfSevenScrapesNeedsNoBlockOfItsOwn) {
  const auto series_bytes = [](Duration step) {
    auto engine = MakeEngine();
    InMemorySampleSource source;
    const SeriesKey key = SeriesKey::Node("n", Resource::kMemory);
    for (int i = 0; i < 30; ++i) {
      EXPECT_TRUE(IngestAndStore(*engine, source, key, kDayStart + step * i, 1000).ok());
    }
    return engine->MemoryByPart().series;
  };
  const size_t six = series_bytes(seconds(10));
  const size_t seven = series_bytes(std::chrono::milliseconds(9990));
  EXPECT_EQ(seven, six) << "a minute of seven samples took a heap block";
}

// A seeded series with an unaligned start and irregular timing: steps of 1 to 60 s at any
// nanosecond, now and then a gap of minutes or hours (one longer than the hour window is
// always there), and values in runs that rise, fall, stay or jump.
class IrregularSeries {
 public:
  explicit IrregularSeries(uint64_t seed) : rng_(seed) {
    start_ = kDayStart + seconds(Uniform(0, 86399)) + Duration(Uniform(1, 999999999));
    next_ = start_;
    value_ = static_cast<uint64_t>(Uniform(100000000, 1000000000));
  }

  Timestamp start() const { return start_; }

  Sample Next() {
    const Sample sample{next_, value_};
    ++index_;
    Duration step = seconds(Uniform(1, 60)) + Duration(Uniform(0, 999999999));
    const int64_t dice = Uniform(0, 999);
    if (index_ == 1500) {
      step = minutes(70) + seconds(Uniform(0, 3600));
    } else if (dice < 10) {
      step = seconds(Uniform(120, 1800));
    } else if (dice < 11) {
      step = seconds(Uniform(1800, 3 * 3600));
    }
    next_ += step;
    if (Uniform(0, 39) == 0) mode_ = static_cast<int>(Uniform(0, 3));
    switch (mode_) {
      case 0:  // rising
        value_ += static_cast<uint64_t>(Uniform(0, 5000000));
        break;
      case 1:  // falling, down to zero
        value_ -= std::min<uint64_t>(value_, static_cast<uint64_t>(Uniform(0, 5000000)));
        break;
      case 2:  // steady: equal values
        break;
      default:
        value_ = static_cast<uint64_t>(Uniform(0, 2000000000));
        break;
    }
    return sample;
  }

 private:
  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  std::mt19937_64 rng_;
  Timestamp start_;
  Timestamp next_;
  uint64_t value_ = 0;
  int mode_ = 3;
  int index_ = 0;
};

WindowEngineOptions OptionsNamed(const std::string& name) {
  WindowEngineOptions options;
  // Windows that are no multiple of the rollup width (buckets of w/12: 250 s, 450 s) and
  // one that is (hourly buckets), beside the defaults.
  if (name == "Custom")
    options.windows = {seconds(10), minutes(1), minutes(50), minutes(90), hours(25)};
  return options;
}

class WindowEngineIrregularTest
    : public ::testing::TestWithParam<std::tuple<std::string, uint64_t>> {};

// About 30 hours of an irregular series: after every sample, every statistic of every
// window is compared with brute force, and a second engine restored from the store (every
// 150 samples, with hourly rollups or from samples alone) and fed the same samples since
// reports exactly the same as the live one.
TEST_P(WindowEngineIrregularTest, EveryStatMatchesReferenceAndRestoredEngine) {
  const auto& [config, seed] = GetParam();
  auto live = MakeEngine(OptionsNamed(config));
  auto restored = MakeEngine(OptionsNamed(config));
  InMemorySampleSource source;
  const SeriesKey key = SeriesKey::Container("n", "ns", "p", "c", Resource::kCpu);
  IrregularSeries series(seed);
  const Timestamp end = series.start() + hours(30);
  int samples = 0, restores = 0;
  for (Sample s = series.Next(); s.time < end; s = series.Next(), ++samples) {
    const std::string where = "sample " + std::to_string(samples) + " at +" +
                              std::to_string((s.time - series.start()).count()) + "ns";
    if (samples > 0) {
      ASSERT_TRUE(restored->Ingest(key, s.time, s.value, source).ok()) << where;
    }
    ASSERT_TRUE(IngestAndStore(*live, source, key, s.time, s.value).ok()) << where;
    if (samples % 150 == 0) {
      const std::vector<BucketRollup> rollups =
          (samples / 150) % 2 == 0 ? HourlyRollups(*live, source.SamplesOf(key), s.time)
                                   : std::vector<BucketRollup>{};
      ASSERT_TRUE(restored->RestoreSeries(key, s.time, rollups, source).ok()) << where;
      ++restores;
    }
    auto got = live->Query(key);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_NO_FATAL_FAILURE(ExpectMatchesReference(*got, source.SamplesOf(key), where));
    auto again = restored->Query(key);
    ASSERT_TRUE(again.ok()) << again.status();
    ASSERT_EQ(*again, *got) << where << "\nrestored:" << Describe(*again)
                            << "\nlive:" << Describe(*got);
  }
  EXPECT_GT(samples, 1500);
  EXPECT_GT(restores, 10);
}

INSTANTIATE_TEST_SUITE_P(
    Seeds, WindowEngineIrregularTest,
    ::testing::Combine(::testing::Values("Default", "Custom"),
                       ::testing::Values(uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{4})),
    [](const ::testing::TestParamInfo<std::tuple<std::string, uint64_t>>& info) {
      return std::get<0>(info.param) + "Seed" + std::to_string(std::get<1>(info.param));
    });

// A series restored while it is younger than the long windows (it started in the middle of
// an hour) reports what the live engine reports, and keeps doing so as both ingest.
TEST(WindowEngineTest, RestoreOfAYoungSeriesStartedOffBoundaryMatchesTheLiveEngine) {
  for (const bool with_rollups : {true, false}) {
    SCOPED_TRACE(with_rollups ? "with rollups" : "from samples");
    auto live = MakeEngine();
    InMemorySampleSource source;
    const SeriesKey key = SeriesKey::Pod("n", "ns", "p", Resource::kMemory);
    const Timestamp start = kDayStart + hours(7) + minutes(31) + std::chrono::milliseconds(12250);
    // A sawtooth whose period (37 samples) divides no bucket.
    auto value = [](int i) { return 3000000 + 100000 * static_cast<uint64_t>((i * 7) % 37); };
    std::unique_ptr<WindowEngine> restored;
    for (int i = 0; i < 26 * 180; ++i) {  // 26 hours of 20 s samples
      const Timestamp t = start + seconds(20) * i;
      if (restored != nullptr) {
        ASSERT_TRUE(restored->Ingest(key, t, value(i), source).ok());
      }
      ASSERT_TRUE(IngestAndStore(*live, source, key, t, value(i)).ok());
      if (i % 41 == 0) {
        restored = MakeEngine();
        const std::vector<BucketRollup> rollups =
            with_rollups ? HourlyRollups(*live, source.SamplesOf(key), t)
                         : std::vector<BucketRollup>{};
        ASSERT_TRUE(restored->RestoreSeries(key, t, rollups, source).ok()) << "i=" << i;
      }
      auto want = live->Query(key);
      auto got = restored->Query(key);
      ASSERT_TRUE(want.ok() && got.ok());
      ASSERT_EQ(*got, *want) << "i=" << i << "\nrestored:" << Describe(*got)
                             << "\nlive:" << Describe(*want);
      if (i < 200 || i % 13 == 0) {
        ASSERT_NO_FATAL_FAILURE(ExpectMatchesReference(*live->Query(key), source.SamplesOf(key),
                                                       "i=" + std::to_string(i)));
      }
    }
  }
}

TEST(WindowEngineTest, RestoreRejectsMissingNewestSampleAndForeignRollups) {
  auto engine = MakeEngine();
  InMemorySampleSource source;
  const SeriesKey key = SeriesKey::Node("n", Resource::kCpu);
  ASSERT_TRUE(IngestAndStore(*engine, source, key, kDayStart, 1).ok());
  EXPECT_EQ(engine->RestoreSeries(key, kDayStart + seconds(5), {}, source).code(),
            absl::StatusCode::kFailedPrecondition);
  BucketRollup foreign = *engine->BuildRollup(kDayStart, source.SamplesOf(key));
  foreign.width = minutes(30);
  EXPECT_EQ(engine->RestoreSeries(key, kDayStart, {&foreign, 1}, source).code(),
            absl::StatusCode::kDataLoss);
}

TEST(WindowEngineTest, BuildRollupChecksAlignmentAndBucketBounds) {
  auto engine = MakeEngine();
  const std::vector<Sample> ok = {{kDayStart, 1}, {kDayStart + seconds(10), 3}};
  auto rollup = engine->BuildRollup(kDayStart, ok);
  ASSERT_TRUE(rollup.ok());
  EXPECT_EQ(rollup->count, 2u);
  EXPECT_EQ(rollup->sum, absl::uint128(4));
  EXPECT_EQ(rollup->min, 1u);
  EXPECT_EQ(rollup->max, 3u);
  EXPECT_EQ(engine->BuildRollup(kDayStart + seconds(1), ok).status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::vector<Sample> outside = {{kDayStart + hours(1), 1}};
  EXPECT_EQ(engine->BuildRollup(kDayStart, outside).status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::vector<Sample> unordered = {{kDayStart + seconds(10), 1}, {kDayStart, 1}};
  EXPECT_EQ(engine->BuildRollup(kDayStart, unordered).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->BuildRollup(kDayStart, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(WindowEngineTest, ParseRollupRejectsCorruptBytesWithoutCrashing) {
  auto engine = MakeEngine();
  std::vector<Sample> samples;
  for (int i = 0; i < 360; ++i)
    samples.push_back({kDayStart + seconds(10 * i), 1000000u + i * 977});
  const std::string bytes = SerializeRollup(*engine->BuildRollup(kDayStart, samples));
  EXPECT_LT(bytes.size(), 200u);
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(ParseRollup(bytes.substr(0, n)).ok()) << "prefix " << n;
  }
  EXPECT_EQ(ParseRollup(bytes + "x").status().code(), absl::StatusCode::kDataLoss);
  std::mt19937_64 rng(1);
  for (int i = 0; i < 2000; ++i) {
    std::string mutated = bytes;
    mutated[rng() % mutated.size()] = static_cast<char>(rng());
    (void)ParseRollup(mutated);  // any result but a crash
  }
}

TEST(WindowEngineTest, OptionsValidateNamesTheBadField) {
  WindowEngineOptions options;
  EXPECT_TRUE(options.Validate().ok());
  options.windows = {};
  EXPECT_THAT(std::string(options.Validate().message()), ::testing::HasSubstr("windows"));
  options.windows = {seconds(10), seconds(10)};
  EXPECT_THAT(std::string(options.Validate().message()), ::testing::HasSubstr("repeated"));
  options = {};
  options.relative_accuracy = 0.02;
  EXPECT_THAT(std::string(options.Validate().message()), ::testing::HasSubstr("relative_accuracy"));
  options = {};
  options.rollup_width = Duration(0);
  EXPECT_THAT(std::string(options.Validate().message()), ::testing::HasSubstr("rollup_width"));
  EXPECT_FALSE(WindowEngine::Create(options).ok());
}

TEST(WindowEngineTest, ADayOfANodesSeriesFitsTheMemoryBudget) {
  auto engine = MakeEngine();
  InMemorySampleSource source;
  // 190 series of one node would take a while; 38 series of the same mix suffice.
  std::vector<std::pair<SeriesKey, ShapeGenerator>> series;
  for (int p = 0; p < 19; ++p) {
    const std::string pod = "pod-" + std::to_string(p);
    series.emplace_back(SeriesKey::Pod("node-7", "default", pod, Resource::kCpu),
                        ShapeGenerator(p % 3 == 0 ? Shape::kSpiky : Shape::kDiurnal, p));
    series.emplace_back(SeriesKey::Pod("node-7", "default", pod, Resource::kMemory),
                        ShapeGenerator(Shape::kSteady, 100 + p));
  }
  for (int64_t secs = 0; secs < 86400 + 600; secs += 10) {
    for (auto& [key, gen] : series) {
      ASSERT_TRUE(
          IngestAndStore(*engine, source, key, kDayStart + seconds(secs), gen.Next(secs)).ok());
    }
  }
  const double per_series = static_cast<double>(engine->MemoryBytes()) / series.size();
  // 0.5 MiB per node of ~190 series.
  EXPECT_LT(per_series * 190, 512.0 * 1024) << per_series << " bytes per series";
  std::cout << "engine memory per series after a day: " << per_series << " bytes\n";
}

}  // namespace
}  // namespace kubestat::windows
