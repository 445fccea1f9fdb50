// Store::Salvage on a real RocksDB with a table file damaged as a disk damages it (4 KiB of
// random bytes in its middle): every readable scrape kept, the unreadable range named,
// the damaged files moved to a quarantine folder, reads clean afterwards and after a reopen;
// a salvage cut short by a crash, finished or discarded at the next open; Store::MoveAside;
// damage that a read or a compaction finds while the store runs, salvaged in the background
// while writes go on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "kubestat/storage/store.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::storage {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

const Timestamp kT0 = Timestamp(std::chrono::hours(24 * 20000));  // an hour-aligned day
constexpr NodeId kNodes = 4;
constexpr int kScrapesPerNode = 3 * 360;  // three hours at 10 s
constexpr SeriesId kSeriesPerNode = 40;

std::unique_ptr<Store> OpenStore(const std::string& dir,
                                 const std::function<void(StoreOptions&)>& more = {}) {
  StoreOptions options;
  options.dir = dir;
  options.block_cache_bytes = 4 << 20;
  options.write_buffer_bytes = 4 << 20;
  if (more) more(options);
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

// The value node `node`'s series `id` had at scrape `i`: random-looking, so that the blobs
// do not compress away and the table spans many blocks.
uint64_t ValueAt(NodeId node, SeriesId id, int i) {
  std::mt19937_64 random(node * 1000003 + id * 7919 + static_cast<uint64_t>(i));
  return random() >> 20;
}

void WriteDictionary(Store& store) {
  ScrapeBatch dictionary;
  for (NodeId node = 1; node <= kNodes; ++node) {
    dictionary.AddNode(node, "node-" + std::to_string(node));
    for (SeriesId s = 1; s <= kSeriesPerNode; ++s) {
      dictionary.AddSeries(node * 1000 + s, node, "series-" + std::to_string(s));
    }
  }
  ASSERT_TRUE(store.Write(dictionary).ok());
}

// Scrapes [from, to) of every node, one batch per scrape time.
void WriteScrapes(Store& store, int from, int to) {
  for (int i = from; i < to; ++i) {
    ScrapeBatch batch;
    for (NodeId node = 1; node <= kNodes; ++node) {
      std::vector<SeriesValue> values;
      for (SeriesId s = 1; s <= kSeriesPerNode; ++s) {
        values.push_back({node * 1000 + s, ValueAt(node, node * 1000 + s, i)});
      }
      batch.PutScrape(node, kT0 + seconds(10 * i), values);
    }
    ASSERT_TRUE(store.Write(batch).ok());
  }
}

// kNodes nodes, each with kSeriesPerNode series, scraped every 10 s for three hours, flushed
// to table files.
void WriteHistory(Store& store) {
  WriteDictionary(store);
  WriteScrapes(store, 0, kScrapesPerNode);
  ASSERT_TRUE(store.Flush().ok());
}

// Overwrites 4 KiB in the middle of the largest table file with random bytes; its name.
std::string DamageLargestTable(const std::string& dir) {
  fs::path largest;
  uintmax_t size = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".sst" && entry.file_size() > size) {
      largest = entry.path();
      size = entry.file_size();
    }
  }
  EXPECT_GT(size, 64u * 1024) << "the history should span many blocks";
  testing::Garble(largest, size / 2, 4096);
  return largest.filename().string();
}

// Whether the store in `dir` no longer uses the quarantined file: a table of its name there,
// if any, is a new one (the copy's tables are numbered anew, so names may come back).
bool NotInUse(const std::string& dir, const fs::path& quarantined) {
  const fs::path same_name = fs::path(dir) / quarantined.filename();
  return !fs::exists(same_name) || testing::ReadAll(same_name) != testing::ReadAll(quarantined);
}

struct NodeRead {
  absl::Status status;
  int scrapes = 0;
  int wrong_values = 0;
};

NodeRead ReadNode(const Store& store, NodeId node) {
  NodeRead read;
  read.status = store.ReadScrapes(node, Timestamp::min(), Timestamp::max(),
                                  [&](Timestamp t, std::span<const SeriesValue> values) {
                                    const int i = static_cast<int>((t - kT0) / seconds(10));
                                    ++read.scrapes;
                                    for (const SeriesValue& v : values) {
                                      if (v.value != ValueAt(node, v.id, i)) ++read.wrong_values;
                                    }
                                  });
  return read;
}

TEST(StoreSalvageTest, KeepsEveryReadableScrapeNamesTheLostRangeAndQuarantinesTheDamage) {
  testing::TempDir dir;
  const std::string path = dir.File("db");
  std::string damaged;
  {
    std::unique_ptr<Store> store = OpenStore(path);
    ASSERT_NE(store, nullptr);
    WriteHistory(*store);
    damaged = DamageLargestTable(path);
  }
  std::unique_ptr<Store> store = OpenStore(path);
  ASSERT_NE(store, nullptr);
  int failing = 0;
  for (NodeId node = 1; node <= kNodes; ++node) {
    const NodeRead read = ReadNode(*store, node);
    if (!read.status.ok()) {
      EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss) << read.status;
      ++failing;
    }
  }
  ASSERT_GT(failing, 0) << "the damage should make some node's reads fail";

  absl::StatusOr<SalvageReport> report = store->Salvage();
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_THAT(report->lost, Not(IsEmpty()));
  EXPECT_THAT(report->lost.front().what, HasSubstr("scrapes of node"));
  EXPECT_THAT(report->lost.front().nodes, Not(IsEmpty()));
  EXPECT_GT(report->kept_keys, 0u);
  // The damaged files are kept aside; the store's folder holds the new database only.
  EXPECT_TRUE(fs::exists(fs::path(report->quarantine_dir) / damaged)) << report->quarantine_dir;
  EXPECT_TRUE(NotInUse(path, fs::path(report->quarantine_dir) / damaged));
  EXPECT_FALSE(fs::exists(fs::path(path) / "salvage"));
  EXPECT_EQ(store->Stats().salvages, 1u);
  EXPECT_EQ(store->Stats().salvage_lost_ranges, report->lost.size());

  auto check = [&](const Store& s) {
    int scrapes = 0;
    for (NodeId node = 1; node <= kNodes; ++node) {
      const NodeRead read = ReadNode(s, node);
      EXPECT_TRUE(read.status.ok()) << "node " << node << ": " << read.status;
      EXPECT_EQ(read.wrong_values, 0) << "node " << node;
      scrapes += read.scrapes;
    }
    // Only the damaged blocks' scrapes are lost: 4 KiB of damage touches at most two blocks
    // of 32 KiB, some 130 scrapes each; less than an hour of one node (360).
    EXPECT_LT(scrapes, static_cast<int>(kNodes) * kScrapesPerNode);
    EXPECT_GT(scrapes, static_cast<int>(kNodes) * kScrapesPerNode - kScrapesPerNode / 3)
        << "lost " << static_cast<int>(kNodes) * kScrapesPerNode - scrapes;
    absl::StatusOr<Dictionary> dict = s.LoadDictionary();
    EXPECT_TRUE(dict.ok()) << dict.status();
    return scrapes;
  };
  const int after_salvage = check(*store);
  // New ids stay above every stored one, and the store takes writes again.
  const NodeId added = store->AllocateNodeId();
  EXPECT_GT(added, kNodes);
  ScrapeBatch batch;
  batch.AddNode(added, "node-added");
  batch.PutScrape(added, kT0, std::vector<SeriesValue>{{1, 1}});
  ASSERT_TRUE(store->Write(batch).ok());
  store.reset();
  std::unique_ptr<Store> reopened = OpenStore(path);
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(check(*reopened), after_salvage);
  EXPECT_EQ(ReadNode(*reopened, added).scrapes, 1);
}

TEST(StoreSalvageTest, AnOpenFinishesASalvageWhoseCopyWasCompleteAndDiscardsOneThatWasNot) {
  testing::TempDir dir;
  const std::string path = dir.File("db");
  {
    std::unique_ptr<Store> damaged = OpenStore(path);
    ASSERT_NE(damaged, nullptr);
    ScrapeBatch batch;
    batch.PutScrape(1, kT0, std::vector<SeriesValue>{{1, 11}});
    ASSERT_TRUE(damaged->Write(batch).ok());
  }
  {
    // A complete copy holding other data, as a crash after the copy and before the swap
    // leaves it.
    std::unique_ptr<Store> copy = OpenStore(path + "/salvage");
    ASSERT_NE(copy, nullptr);
    ScrapeBatch batch;
    batch.PutScrape(1, kT0 + seconds(10), std::vector<SeriesValue>{{1, 22}});
    ASSERT_TRUE(copy->Write(batch).ok());
  }
  std::ofstream(path + "/salvage/KUBESTAT-SALVAGE-COMPLETE") << "complete\n";
  {
    std::unique_ptr<Store> store = OpenStore(path);
    ASSERT_NE(store, nullptr);
    std::vector<uint64_t> values;
    ASSERT_TRUE(store
                    ->ReadScrapes(1, Timestamp::min(), Timestamp::max(),
                                  [&](Timestamp, std::span<const SeriesValue> v) {
                                    values.push_back(v[0].value);
                                  })
                    .ok());
    EXPECT_EQ(values, std::vector<uint64_t>{22});
  }
  EXPECT_FALSE(fs::exists(path + "/salvage"));
  int quarantines = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(path)) {
    if (entry.path().filename().string().starts_with("quarantine-")) ++quarantines;
  }
  EXPECT_EQ(quarantines, 1);

  // An unfinished copy (no completion mark) is removed and the store is left as it was.
  fs::create_directories(path + "/salvage");
  std::ofstream(path + "/salvage/000001.sst") << "partial";
  std::unique_ptr<Store> store = OpenStore(path);
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(fs::exists(path + "/salvage"));
  const NodeRead read = ReadNode(*store, 1);
  ASSERT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.scrapes, 1);
}

TEST(StoreSalvageTest, MoveAsideLeavesAnEmptyStoreAndKeepsTheOldFiles) {
  testing::TempDir dir;
  const std::string path = dir.File("db");
  {
    std::unique_ptr<Store> store = OpenStore(path);
    ASSERT_NE(store, nullptr);
    ScrapeBatch batch;
    batch.AddNode(1, "node-1");
    ASSERT_TRUE(store->Write(batch).ok());
  }
  StoreOptions options;
  options.dir = path;
  absl::StatusOr<std::string> aside = Store::MoveAside(options);
  ASSERT_TRUE(aside.ok()) << aside.status();
  EXPECT_TRUE(fs::exists(fs::path(*aside) / "CURRENT"));
  std::unique_ptr<Store> store = OpenStore(path);
  ASSERT_NE(store, nullptr);
  absl::StatusOr<Dictionary> dict = store->LoadDictionary();
  ASSERT_TRUE(dict.ok());
  EXPECT_THAT(dict->nodes, IsEmpty());
}

// What the salvages made while running reported.
struct Heard {
  std::mutex mu;
  std::vector<SalvageReport> reports;
  size_t Count() {
    std::lock_guard lock(mu);
    return reports.size();
  }
};

std::unique_ptr<Store> OpenRunningStore(const std::string& path, Heard* heard) {
  return OpenStore(path, [heard](StoreOptions& options) {
    options.backlog_bytes = 64 << 20;
    options.on_salvage = [heard](const Store&, const SalvageReport& report) {
      std::lock_guard lock(heard->mu);
      heard->reports.push_back(report);
    };
  });
}

// Writes the scrapes from `*next` on, one time at a time, until `done` holds (at most 30 s):
// a writer that does not stop for the salvage.
bool WriteUntil(Store& store, int* next, const std::function<bool()>& done) {
  return testing::PollUntil(
      [&] {
        if (done()) return true;
        WriteScrapes(store, *next, *next + 1);
        ++*next;
        return false;
      },
      std::chrono::seconds(30), std::chrono::milliseconds(1));
}

// Writes on through a salvage made while running until it was reported and the writes
// that waited are in RocksDB.
void WriteThroughTheSalvage(Store& store, Heard& heard, int* next) {
  ASSERT_TRUE(WriteUntil(store, next, [&] { return heard.Count() == 1; }))
      << store.DegradedReason();
  ASSERT_TRUE(WriteUntil(store, next, [&] { return store.DegradedReason().empty(); }))
      << store.DegradedReason();
}

// Every scrape of every node is readable with its values: how many.
int ReadableScrapes(const Store& store) {
  int scrapes = 0;
  for (NodeId node = 1; node <= kNodes; ++node) {
    const NodeRead read = ReadNode(store, node);
    EXPECT_TRUE(read.status.ok()) << "node " << node << ": " << read.status;
    EXPECT_EQ(read.wrong_values, 0) << "node " << node;
    scrapes += read.scrapes;
  }
  return scrapes;
}

// The store, closed and opened again, reads `readable` scrapes.
void ReopensWith(std::unique_ptr<Store> store, const std::string& path, int readable) {
  store.reset();
  std::unique_ptr<Store> reopened = OpenStore(path);
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(ReadableScrapes(*reopened), readable);
}

TEST(StoreSalvageTest, DamageAReadFindsWhileRunningIsSalvagedWhileWritesGoOn) {
  testing::TempDir dir;
  const std::string path = dir.File("db");
  Heard heard;
  std::unique_ptr<Store> store = OpenRunningStore(path, &heard);
  ASSERT_NE(store, nullptr);
  WriteHistory(*store);
  const std::string damaged = DamageLargestTable(path);
  int failing = 0;
  for (NodeId node = 1; node <= kNodes; ++node)
    failing += ReadNode(*store, node).status.ok() ? 0 : 1;
  ASSERT_GT(failing, 0) << "the damage should make some node's reads fail";
  EXPECT_EQ(store->Stats().damage_found, 1u);
  EXPECT_THAT(store->DegradedReason(), HasSubstr("damage read"));

  // Scrapes go on being written (each Write OK) while the salvage runs, and after it.
  int next = kScrapesPerNode;
  ASSERT_NO_FATAL_FAILURE(WriteThroughTheSalvage(*store, heard, &next));
  const int written_after = next - kScrapesPerNode;
  WriteScrapes(*store, next, next + 1);
  ++next;

  const StoreStats stats = store->Stats();
  EXPECT_EQ(stats.salvages, 1u);
  EXPECT_EQ(stats.salvage_errors, 0u);
  EXPECT_FALSE(stats.salvaging);
  EXPECT_EQ(stats.scrapes_lost, 0u) << "no scrape written meanwhile may be lost";
  EXPECT_GT(stats.batches_deferred, 0u) << "the writes during the salvage waited in memory";
  const SalvageReport& report = heard.reports.front();
  ASSERT_THAT(report.lost, Not(IsEmpty()));
  EXPECT_THAT(report.lost.front().what, HasSubstr("scrapes of node"));
  EXPECT_TRUE(fs::exists(fs::path(report.quarantine_dir) / damaged)) << report.quarantine_dir;
  EXPECT_TRUE(NotInUse(path, fs::path(report.quarantine_dir) / damaged));

  // Every node reads whole again: what the salvage kept of the history and every scrape
  // written since the damage was found.
  const int readable = ReadableScrapes(*store);
  const int history = readable - (next - kScrapesPerNode) * static_cast<int>(kNodes);
  EXPECT_LT(history, static_cast<int>(kNodes) * kScrapesPerNode);
  EXPECT_GT(history, static_cast<int>(kNodes) * kScrapesPerNode - kScrapesPerNode / 3);
  EXPECT_GT(written_after, 0);
  EXPECT_EQ(store->SalvageEpoch(), 1u);
  ReopensWith(std::move(store), path, readable);
}

TEST(StoreSalvageTest, DamageACompactionFindsWhileRunningIsSalvagedToo) {
  testing::TempDir dir;
  const std::string path = dir.File("db");
  Heard heard;
  std::unique_ptr<Store> store = OpenRunningStore(path, &heard);
  ASSERT_NE(store, nullptr);
  WriteDictionary(*store);
  // Three table files of an hour each (RocksDB compacts level 0 from four), the largest
  // damaged, then a fourth: the compaction that follows reads the damage.
  constexpr int kHour = 360;
  for (int hour = 0; hour < 3; ++hour) {
    WriteScrapes(*store, hour * kHour, (hour + 1) * kHour);
    ASSERT_TRUE(store->Flush().ok());
  }
  const std::string damaged = DamageLargestTable(path);
  WriteScrapes(*store, 3 * kHour, 4 * kHour);
  // The fourth file may come from a memtable that filled during the writes, and its compaction
  // may read the damage before this flush is done: the flush then fails on the background
  // error, which is the damage being found. Either way the salvage below must follow.
  const absl::Status flushed = store->Flush();
  ASSERT_TRUE(
      testing::PollUntil([&] { return store->Stats().damage_found > 0; }, std::chrono::seconds(30)))
      << "flush: " << flushed << "the compaction should have read the damage";
  EXPECT_GT(store->Stats().background_errors, 0u);

  int next = 4 * kHour;
  ASSERT_NO_FATAL_FAILURE(WriteThroughTheSalvage(*store, heard, &next));
  EXPECT_THAT(heard.reports.front().lost, Not(IsEmpty()));
  EXPECT_EQ(store->Stats().scrapes_lost, 0u);
  // Writes reach RocksDB again: a flush and a compaction of the new files work.
  ASSERT_TRUE(store->Flush().ok());
  const int readable = ReadableScrapes(*store);
  EXPECT_GT(readable, (next - kHour / 3) * static_cast<int>(kNodes));
  ReopensWith(std::move(store), path, readable);
}

TEST(StoreSalvageTest, ASalvageWhileRunningThatLostDictionaryEntriesHandsOutNoLostId) {
  testing::TempDir dir;
  const std::string path = dir.File("db");
  Heard heard;
  std::unique_ptr<Store> store = OpenRunningStore(path, &heard);
  ASSERT_NE(store, nullptr);
  for (NodeId node = 1; node <= kNodes; ++node) EXPECT_EQ(store->AllocateNodeId(), node);
  WriteDictionary(*store);
  ASSERT_TRUE(store->Flush().ok());
  // The only table holds the dictionary: its first block damaged.
  fs::path table;
  for (const fs::directory_entry& entry : fs::directory_iterator(path)) {
    if (entry.path().extension() == ".sst") table = entry.path();
  }
  ASSERT_FALSE(table.empty());
  testing::Garble(table, 0, 64);
  EXPECT_EQ(store->LoadDictionary().status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(store->SalvageEpoch(), 0u);

  int next = 0;
  ASSERT_TRUE(WriteUntil(*store, &next, [&] { return heard.Count() == 1; }));
  EXPECT_EQ(store->SalvageEpoch(), 1u) << "a writer must put its entries again";
  // Ids the lost entries may have named are never handed out again.
  EXPECT_GT(store->AllocateNodeId(), kNodes + 1000);
  // The writer puts them again; they are read back.
  WriteDictionary(*store);
  absl::StatusOr<Dictionary> dict = store->LoadDictionary();
  ASSERT_TRUE(dict.ok()) << dict.status();
  EXPECT_EQ(dict->nodes.size(), kNodes);
}

TEST(StoreSalvageTest, AStoreThatMayNotSalvageWhileRunningKeepsServingAndSaysSo) {
  testing::TempDir dir;
  const std::string path = dir.File("db");
  std::unique_ptr<Store> store = OpenStore(path, [](StoreOptions& options) {
    options.backlog_bytes = 64 << 20;
    options.salvage_when_damaged = false;
  });
  ASSERT_NE(store, nullptr);
  WriteHistory(*store);
  DamageLargestTable(path);
  for (NodeId node = 1; node <= kNodes; ++node) (void)ReadNode(*store, node);
  EXPECT_EQ(store->Stats().damage_found, 1u);
  WriteScrapes(*store, kScrapesPerNode, kScrapesPerNode + 10);
  EXPECT_EQ(store->Stats().salvages, 0u);
  EXPECT_THAT(store->DegradedReason(), HasSubstr("salvaged at the next start"));
}

}  // namespace
}  // namespace kubestat::storage
