// Store::Salvage on a real RocksDB with a table file damaged as a disk damages it (4 KiB of
// random bytes in its middle): every readable scrape kept, the unreadable range named,
// the damaged files moved to a quarantine folder, reads clean afterwards and after a reopen;
// a salvage cut short by a crash, finished or discarded at the next open; Store::MoveAside.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kubestat/storage/store.h"
#include "support/temp_dir.h"

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

std::unique_ptr<Store> OpenStore(const std::string& dir) {
  StoreOptions options;
  options.dir = dir;
  options.block_cache_bytes = 4 << 20;
  options.write_buffer_bytes = 4 << 20;
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

// kNodes nodes, each with kSeriesPerNode series, scraped every 10 s for three hours, flushed
// to table files.
void WriteHistory(Store& store) {
  ScrapeBatch dictionary;
  for (NodeId node = 1; node <= kNodes; ++node) {
    dictionary.AddNode(node, "node-" + std::to_string(node));
    for (SeriesId s = 1; s <= kSeriesPerNode; ++s) {
      dictionary.AddSeries(node * 1000 + s, node, "series-" + std::to_string(s));
    }
  }
  ASSERT_TRUE(store.Write(dictionary).ok());
  for (int i = 0; i < kScrapesPerNode; ++i) {
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
  std::mt19937 random(42);
  std::string garbage(4096, '\0');
  for (char& c : garbage) c = static_cast<char>(random());
  std::fstream file(largest, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(static_cast<std::streamoff>(size / 2));
  file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  return largest.filename().string();
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
  EXPECT_FALSE(fs::exists(fs::path(path) / damaged));
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

}  // namespace
}  // namespace kubestat::storage
