#include "kubestat/storage/store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kubestat/testing/temp_dir.h"

namespace kubestat::storage {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif
#else
constexpr bool kThreadSanitizer = false;
#endif

const Timestamp kT0 = Timestamp(std::chrono::hours(24 * 20000));  // an hour-aligned day

std::unique_ptr<Store> OpenStore(const std::string& dir, Duration retention = hours(26)) {
  StoreOptions options;
  options.dir = dir;
  options.retention = retention;
  options.block_cache_bytes = 4 << 20;
  options.write_buffer_bytes = 4 << 20;
  auto store = Store::Open(options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

std::vector<std::pair<Timestamp, std::vector<SeriesValue>>> ReadAll(const Store& store, NodeId node,
                                                                    Timestamp after,
                                                                    Timestamp through) {
  std::vector<std::pair<Timestamp, std::vector<SeriesValue>>> out;
  absl::Status s = store.ReadScrapes(
      node, after, through, [&](Timestamp t, std::span<const SeriesValue> values) {
        out.emplace_back(t, std::vector<SeriesValue>(values.begin(), values.end()));
      });
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

void WriteScrape(Store& store, NodeId node, Timestamp t, std::vector<SeriesValue> values) {
  ScrapeBatch batch;
  batch.PutScrape(node, t, values);
  ASSERT_TRUE(store.Write(batch).ok());
}

TEST(StoreOptionsTest, ValidateNamesTheField) {
  StoreOptions options;
  EXPECT_THAT(std::string(options.Validate().message()), HasSubstr("dir"));
  options.dir = "/tmp/x";
  EXPECT_TRUE(options.Validate().ok());
  options.retention = minutes(10);
  EXPECT_THAT(std::string(options.Validate().message()), HasSubstr("retention"));
  options.retention = hours(26);
  options.block_cache_bytes = 10;
  EXPECT_THAT(std::string(options.Validate().message()), HasSubstr("block_cache_bytes"));
}

TEST(StoreTest, ScrapesComeBackInTimeOrderAcrossHoursAndGaps) {
  testing::TempDir dir;
  auto store = OpenStore(dir.File("db"));
  ASSERT_NE(store, nullptr);
  // Written out of order, spanning negative times, hour edges and a 50-hour gap.
  std::vector<Timestamp> times = {
      kT0 + hours(50), kT0 - seconds(1),       kT0, kT0 + seconds(10), kT0 + hours(1) - Duration(1),
      kT0 + hours(1),  Timestamp(Duration(-5))};
  for (size_t i = 0; i < times.size(); ++i) {
    WriteScrape(*store, 7, times[i], {{1, i}, {5, 100 + i}});
    WriteScrape(*store, 8, times[i], {{2, 9}});  // another node interleaved
  }
  auto all = ReadAll(*store, 7, Timestamp::min(), Timestamp::max());
  ASSERT_EQ(all.size(), times.size());
  std::vector<Timestamp> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    EXPECT_EQ(all[i].first, sorted[i]);
    EXPECT_EQ(all[i].second.size(), 2u);
  }
  // (after, through]: exclusive start, inclusive end.
  auto some = ReadAll(*store, 7, kT0, kT0 + hours(1));
  ASSERT_EQ(some.size(), 3u);
  EXPECT_EQ(some[0].first, kT0 + seconds(10));
  EXPECT_EQ(some[2].first, kT0 + hours(1));
  EXPECT_THAT(some[0].second, ElementsAre(SeriesValue{1, 3}, SeriesValue{5, 103}));
  EXPECT_TRUE(ReadAll(*store, 9, Timestamp::min(), Timestamp::max()).empty());

  std::vector<Timestamp> backward;
  ASSERT_TRUE(store
                  ->ReadScrapesBackward(7, kT0 + hours(1), kT0 - seconds(1),
                                        [&](Timestamp t, std::span<const SeriesValue>) {
                                          backward.push_back(t);
                                          return true;
                                        })
                  .ok());
  EXPECT_THAT(backward,
              ElementsAre(kT0 + hours(1), kT0 + hours(1) - Duration(1), kT0 + seconds(10), kT0));
  backward.clear();
  ASSERT_TRUE(store
                  ->ReadScrapesBackward(7, Timestamp::max(), Timestamp::min(),
                                        [&](Timestamp t, std::span<const SeriesValue>) {
                                          backward.push_back(t);
                                          return backward.size() < 2;
                                        })
                  .ok());
  EXPECT_THAT(backward, ElementsAre(kT0 + hours(50), kT0 + hours(1)));

  auto one = store->GetScrape(8, kT0);
  ASSERT_TRUE(one.ok());
  EXPECT_THAT(*one, ElementsAre(SeriesValue{2, 9}));
  EXPECT_EQ(store->GetScrape(8, kT0 + seconds(1)).status().code(), absl::StatusCode::kNotFound);
}

TEST(StoreTest, RollupsReadByNodeAndBucketRange) {
  testing::TempDir dir;
  auto store = OpenStore(dir.File("db"));
  ASSERT_NE(store, nullptr);
  ScrapeBatch batch;
  batch.PutRollup(1, 10, kT0, "a");
  batch.PutRollup(1, 11, kT0, "b");
  batch.PutRollup(1, 10, kT0 + hours(1), "c");
  batch.PutRollup(2, 10, kT0 + hours(1), "other node");
  batch.PutRollup(1, 10, kT0 + hours(30), "d");
  ASSERT_TRUE(store->Write(batch).ok());
  std::vector<std::string> seen;
  ASSERT_TRUE(store
                  ->ReadRollups(1, kT0 - Duration(1), kT0 + hours(30),
                                [&](SeriesId id, Timestamp start, std::string_view bytes) {
                                  seen.push_back(std::to_string(id) + "@" +
                                                 std::to_string((start - kT0) / hours(1)) + "=" +
                                                 std::string(bytes));
                                })
                  .ok());
  EXPECT_THAT(seen, ElementsAre("10@0=a", "11@0=b", "10@1=c", "10@30=d"));
  seen.clear();
  ASSERT_TRUE(store
                  ->ReadRollups(1, kT0, kT0 + hours(2),
                                [&](SeriesId id, Timestamp, std::string_view) {
                                  seen.push_back(std::to_string(id));
                                })
                  .ok());
  EXPECT_THAT(seen, ElementsAre("10"));
}

TEST(StoreTest, DictionaryPersistsAndIdsAreNeverReused) {
  testing::TempDir dir;
  SeriesId retired_id = 0;
  SeriesId last_id = 0;
  {
    auto store = OpenStore(dir.File("db"));
    ASSERT_NE(store, nullptr);
    const NodeId n1 = store->AllocateNodeId();
    const NodeId n2 = store->AllocateNodeId();
    EXPECT_NE(n1, n2);
    ScrapeBatch batch;
    batch.AddNode(n1, "node-a");
    batch.AddNode(n2, "node-b");
    const SeriesId s1 = store->AllocateSeriesId();
    retired_id = store->AllocateSeriesId();
    last_id = store->AllocateSeriesId();
    batch.AddSeries(s1, n1, std::string("key\0one", 7));
    batch.AddSeries(retired_id, n1, "gone");
    batch.AddSeries(last_id, n2, "key-two");
    ASSERT_TRUE(store->Write(batch).ok());
    ScrapeBatch retire;
    retire.RetireSeries(retired_id, kT0);
    ASSERT_TRUE(store->Write(retire).ok());
  }
  auto store = OpenStore(dir.File("db"));
  ASSERT_NE(store, nullptr);
  auto dict = store->LoadDictionary();
  ASSERT_TRUE(dict.ok()) << dict.status();
  ASSERT_EQ(dict->nodes.size(), 2u);
  EXPECT_EQ(dict->nodes[0].name, "node-a");
  EXPECT_EQ(dict->nodes[1].name, "node-b");
  ASSERT_EQ(dict->series.size(), 2u);  // the retired one is left out
  EXPECT_EQ(dict->series[0].key, std::string("key\0one", 7));
  EXPECT_EQ(dict->series[0].node, dict->nodes[0].id);
  EXPECT_EQ(dict->series[1].key, "key-two");
  EXPECT_EQ(dict->series[1].id, last_id);
  EXPECT_GT(store->AllocateSeriesId(), last_id);
  EXPECT_GT(store->AllocateNodeId(), dict->nodes[1].id);
}

TEST(StoreTest, RetentionForgetsRetiredSeriesOnlyOnceTheirDataIsGone) {
  testing::TempDir dir;
  auto store = OpenStore(dir.File("db"), hours(2));
  ASSERT_NE(store, nullptr);
  ScrapeBatch batch;
  batch.AddNode(1, "n");
  batch.AddSeries(5, 1, "k");
  batch.PutScrape(1, kT0, std::vector<SeriesValue>{{5, 1}});
  batch.RetireSeries(5, kT0);
  ASSERT_TRUE(store->Write(batch).ok());
  ASSERT_TRUE(store->ApplyRetention(kT0 + hours(2)).ok());
  EXPECT_EQ(ReadAll(*store, 1, Timestamp::min(), Timestamp::max()).size(), 1u);
  EXPECT_EQ(store->Stats().series_forgotten, 0u);
  ASSERT_TRUE(store->ApplyRetention(kT0 + hours(3)).ok());
  EXPECT_TRUE(ReadAll(*store, 1, Timestamp::min(), Timestamp::max()).empty());
  EXPECT_EQ(store->Stats().series_forgotten, 1u);
}

std::vector<std::string> HistoryOf(const Store& store, std::string_view owner_prefix,
                                   Timestamp after = Timestamp::min(),
                                   Timestamp through = Timestamp::max()) {
  std::vector<std::string> out;
  absl::Status s = store.ReadHistory(
      owner_prefix, after, through,
      [&](std::string_view owner, SeriesId id, Timestamp start, std::string_view bytes) {
        out.push_back(std::string(owner) + "/" + std::to_string(id) + "@" +
                      std::to_string((start - kT0) / hours(1)) + "h:" + std::string(bytes));
      });
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// The usage histograms outlive the samples and rollups (26h), survive a restart, and go once
// their hour is older than the history retention (8 days); the clock is the `now` given.
TEST(StoreTest, UsageHistoryOutlivesSamplesUntilItsOwnRetention) {
  testing::TempDir dir;
  StoreOptions options;
  options.dir = dir.File("db");
  options.retention = hours(26);
  options.history_retention = hours(24 * 8);
  {
    auto store = Store::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    ScrapeBatch batch;
    batch.AddNode(1, "n");
    batch.AddSeries(5, 1, "k");
    batch.PutScrape(1, kT0, std::vector<SeriesValue>{{5, 1}});
    batch.PutRollup(1, 5, kT0, "rollup");
    batch.PutHistory("a|", 5, kT0, "h0");
    batch.PutHistory("a|", 5, kT0 + hours(1), "h1");
    batch.PutHistory("b|", 6, kT0, "other owner");
    ASSERT_TRUE((*store)->Write(batch).ok());
    ASSERT_TRUE((*store)->ApplyRetention(kT0 + hours(30)).ok());
    EXPECT_TRUE(ReadAll(**store, 1, Timestamp::min(), Timestamp::max()).empty());
    size_t rollups = 0;
    ASSERT_TRUE((*store)
                    ->ReadRollups(1, Timestamp::min(), Timestamp::max(),
                                  [&](SeriesId, Timestamp, std::string_view) { ++rollups; })
                    .ok());
    EXPECT_EQ(rollups, 0u);
    EXPECT_THAT(HistoryOf(**store, "a|"), ElementsAre("a|/5@0h:h0", "a|/5@1h:h1"));
  }
  auto store = Store::Open(options);  // a restart: the history is on disk
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_THAT(HistoryOf(**store, "a|"), ElementsAre("a|/5@0h:h0", "a|/5@1h:h1"));
  ASSERT_TRUE((*store)->ApplyRetention(kT0 + hours(24 * 8 + 1)).ok());
  EXPECT_THAT(HistoryOf(**store, "a|"), ElementsAre("a|/5@1h:h1"));
  ASSERT_TRUE((*store)->ApplyRetention(kT0 + hours(24 * 8 + 2)).ok());
  EXPECT_TRUE(HistoryOf(**store, "").empty());
}

// A history belongs to its owner, not to a node or a series: the series of two pods of one
// owner in the same hour (on two nodes, in two batches) are two records, both read; a prefix
// of whole fields selects exactly its owners, hour by hour, and empty hours are skipped.
TEST(StoreTest, UsageHistoryIsReadByOwnerPrefixAndKeepsEveryPodOfAnHour) {
  testing::TempDir dir;
  StoreOptions options;
  options.dir = dir.File("db");
  auto store = Store::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  {
    ScrapeBatch node1;
    node1.PutHistory("shop|web|", 5, kT0, "pod-a");
    node1.PutHistory("shop|web2|", 9, kT0, "other workload");
    node1.PutHistory("shop2|web|", 11, kT0, "other namespace");
    ASSERT_TRUE((*store)->Write(node1).ok());
    ScrapeBatch node2;
    node2.PutHistory("shop|web|", 7, kT0, "pod-b");
    node2.PutHistory("shop|web|", 7, kT0 + hours(5), "pod-b later");
    ASSERT_TRUE((*store)->Write(node2).ok());
  }
  EXPECT_THAT(
      HistoryOf(**store, "shop|web|"),
      ElementsAre("shop|web|/5@0h:pod-a", "shop|web|/7@0h:pod-b", "shop|web|/7@5h:pod-b later"));
  EXPECT_THAT(HistoryOf(**store, "shop|"),
              ElementsAre("shop|web2|/9@0h:other workload", "shop|web|/5@0h:pod-a",
                          "shop|web|/7@0h:pod-b", "shop|web|/7@5h:pod-b later"));
  EXPECT_EQ(HistoryOf(**store, "").size(), 5u);
  // after < bucket_start <= through.
  EXPECT_THAT(HistoryOf(**store, "shop|web|", kT0, kT0 + hours(5)),
              ElementsAre("shop|web|/7@5h:pod-b later"));
  EXPECT_THAT(HistoryOf(**store, "shop|web|", kT0 - hours(1), kT0 + hours(4)),
              ElementsAre("shop|web|/5@0h:pod-a", "shop|web|/7@0h:pod-b"));
}

// Three simulated days of scrapes of 4 nodes every 30s, retention applied as hours pass:
// the database stops growing after the first day.
TEST(StoreTest, RetentionKeepsTheDiskFlatOverThreeDays) {
  testing::TempDir dir;
  auto store = OpenStore(dir.File("db"), hours(26));
  ASSERT_NE(store, nullptr);
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<uint64_t> value(0, uint64_t{1} << 34);
  std::map<int, uint64_t> size_at_hour;
  std::vector<SeriesValue> values(150);
  const Duration step = seconds(30);
  Timestamp t = kT0;
  for (int hour = 1; hour <= 72; ++hour) {
    for (; t < kT0 + hours(hour); t += step) {
      for (NodeId node = 1; node <= 4; ++node) {
        for (size_t i = 0; i < values.size(); ++i) {
          values[i] = {node * 1000 + i, value(rng)};
        }
        ScrapeBatch batch;
        batch.PutScrape(node, t, values);
        ASSERT_TRUE(store->Write(batch).ok());
      }
    }
    ASSERT_TRUE(store->ApplyRetention(t).ok());
    if (hour % 12 == 0) {
      ASSERT_TRUE(store->Flush().ok());
      size_at_hour[hour] = store->DiskBytes();
    }
  }
  // Nothing older than the retention (plus the partial hour) is readable.
  auto oldest = ReadAll(*store, 1, Timestamp::min(), Timestamp::max());
  ASSERT_FALSE(oldest.empty());
  EXPECT_GE(oldest.front().first, t - hours(27));
  EXPECT_LE(oldest.front().first, t - hours(26));
  for (auto [hour, bytes] : size_at_hour) {
    std::cout << "hour " << hour << ": " << bytes << " bytes\n";
  }
  // Day one fills up to the retention; from then on the size stays within 25% of the size
  // at 36h, while the data written keeps growing.
  const double reference = static_cast<double>(size_at_hour[36]);
  for (int hour : {48, 60, 72}) {
    EXPECT_LT(static_cast<double>(size_at_hour[hour]), reference * 1.25) << "at hour " << hour;
    EXPECT_GT(static_cast<double>(size_at_hour[hour]), reference * 0.75) << "at hour " << hour;
  }
  EXPECT_LT(size_at_hour[12] * 1.5, reference);  // it did grow during the first day
}

// A child process writes batches (blob + dictionary entry + rollup each) until it is killed;
// after reopening, every batch is present entirely or not at all, and the present ones are
// a prefix of what was written.
TEST(StoreTest, BatchesSurviveKillAtomically) {
  if (kThreadSanitizer) {
    GTEST_SKIP() << "ThreadSanitizer cannot fork once RocksDB's thread pool runs";
  }
  testing::TempDir dir;
  const std::string path = dir.File("db");
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipe_fds[0]);
    StoreOptions options;
    options.dir = path;
    auto store = Store::Open(options);
    if (!store.ok()) _exit(2);
    std::string big(2000, 'x');
    for (uint64_t i = 1;; ++i) {
      ScrapeBatch batch;
      batch.AddSeries(i, 1, "series-" + std::to_string(i));
      std::vector<SeriesValue> values;
      for (uint64_t j = 0; j < 100; ++j) values.push_back({j * 1000 + i, i});
      batch.PutScrape(1, kT0 + seconds(i), values);
      batch.PutRollup(1, i, kT0 + seconds(i), big);
      if (!(*store)->Write(batch).ok()) _exit(3);
      if (i == 200) {
        char c = 1;
        if (write(pipe_fds[1], &c, 1) != 1) _exit(4);
      }
    }
  }
  close(pipe_fds[1]);
  char c = 0;
  ASSERT_EQ(read(pipe_fds[0], &c, 1), 1);  // at least 200 batches are acknowledged
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  close(pipe_fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status));

  auto store = OpenStore(path);
  ASSERT_NE(store, nullptr);
  auto dict = store->LoadDictionary();
  ASSERT_TRUE(dict.ok());
  auto scrapes = ReadAll(*store, 1, Timestamp::min(), Timestamp::max());
  std::map<SeriesId, int> rollups;
  ASSERT_TRUE(store
                  ->ReadRollups(1, Timestamp::min(), Timestamp::max(),
                                [&](SeriesId id, Timestamp, std::string_view bytes) {
                                  EXPECT_EQ(bytes.size(), 2000u);
                                  ++rollups[id];
                                })
                  .ok());
  const size_t n = dict->series.size();
  EXPECT_GE(n, 200u);
  EXPECT_EQ(scrapes.size(), n);
  EXPECT_EQ(rollups.size(), n);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(dict->series[i].id, i + 1);
    EXPECT_EQ(scrapes[i].first, kT0 + seconds(i + 1));
    EXPECT_EQ(scrapes[i].second.size(), 100u);
    EXPECT_EQ(rollups.count(i + 1), 1u);
  }
}

TEST(StoreOpenTest, GarbageInCurrentIsAClearErrorNamingTheDirectory) {
  testing::TempDir dir;
  const std::string path = dir.File("db");
  {
    auto store = OpenStore(path);
    ASSERT_NE(store, nullptr);
    WriteScrape(*store, 1, kT0, {{1, 1}});
  }
  std::ofstream(path + "/CURRENT", std::ios::trunc) << "\x01garbage\xff\n";
  StoreOptions options;
  options.dir = path;
  auto store = Store::Open(options);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(std::string(store.status().message()), HasSubstr(path));
}

TEST(StoreOpenTest, CorruptTableFileIsAnErrorNotACrash) {
  testing::TempDir dir;
  const std::string path = dir.File("db");
  {
    auto store = OpenStore(path);
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < 100; ++i) WriteScrape(*store, 1, kT0 + seconds(i), {{1, 1}, {2, 2}});
    ASSERT_TRUE(store->Flush().ok());
  }
  int corrupted = 0;
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    if (entry.path().extension() == ".sst") {
      const auto size = entry.file_size();
      std::ofstream out(entry.path(), std::ios::binary | std::ios::trunc);
      out << std::string(size, '\x5a');
      ++corrupted;
    }
  }
  ASSERT_GT(corrupted, 0);
  StoreOptions options;
  options.dir = path;
  auto store = Store::Open(options);
  if (!store.ok()) {
    EXPECT_THAT(std::string(store.status().message()), HasSubstr(path));
    return;
  }
  // Opened lazily: the read must fail cleanly.
  absl::Status s = (*store)->ReadScrapes(1, Timestamp::min(), Timestamp::max(),
                                         [](Timestamp, std::span<const SeriesValue>) {});
  EXPECT_FALSE(s.ok());
}

TEST(StoreOpenTest, AFileWhereTheDirectoryShouldBeIsAnError) {
  testing::TempDir dir;
  const std::string path = dir.File("not-a-dir");
  std::ofstream(path) << "hello";
  StoreOptions options;
  options.dir = path;
  auto store = Store::Open(options);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(std::string(store.status().message()), HasSubstr(path));
}

TEST(StoreOpenTest, MissingDatabaseWithoutCreateIsFailedPrecondition) {
  testing::TempDir dir;
  StoreOptions options;
  options.dir = dir.File("absent");
  options.create_if_missing = false;
  auto store = Store::Open(options);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(StoreOpenTest, SecondOpenOfALockedDatabaseFails) {
  testing::TempDir dir;
  auto store = OpenStore(dir.File("db"));
  ASSERT_NE(store, nullptr);
  StoreOptions options;
  options.dir = dir.File("db");
  auto second = Store::Open(options);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(std::string(second.status().message()), HasSubstr(dir.File("db")));
}

TEST(StoreTest, CountersTrackWrites) {
  testing::TempDir dir;
  auto store = OpenStore(dir.File("db"));
  ASSERT_NE(store, nullptr);
  WriteScrape(*store, 1, kT0, {{1, 1}});
  WriteScrape(*store, 1, kT0 + seconds(1), {{1, 2}});
  const StoreStats stats = store->Stats();
  EXPECT_EQ(stats.batches, 2u);
  EXPECT_EQ(stats.batch_errors, 0u);
  EXPECT_GT(stats.bytes_written, 40u);
  EXPECT_GE(stats.write_nanos, stats.max_write_nanos);
}

}  // namespace
}  // namespace kubestat::storage
