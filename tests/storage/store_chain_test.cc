// Chained scrape blobs through the store: every read path (forward ranges, backward,
// single scrapes) gives back exactly what was written, from any starting point, across
// slots and hours, with failed writes, cleared batches and several scrapes in one batch;
// blobs of version 1 are still read; a lost blob costs the rest of its slot only.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kubestat/storage/internal/keys.h"
#include "kubestat/storage/scrape_blob.h"
#include "kubestat/storage/store.h"
#include "kubestat/testing/temp_dir.h"
#include "rocksdb/db.h"

namespace kubestat::storage {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

const Timestamp kT0 = Timestamp(hours(24 * 20000));  // an hour-aligned day
using Scrapes = std::map<Timestamp, std::vector<SeriesValue>>;

std::unique_ptr<Store> OpenStore(const std::string& dir) {
  StoreOptions options;
  options.dir = dir;
  options.block_cache_bytes = 4 << 20;
  options.write_buffer_bytes = 4 << 20;
  auto store = Store::Open(options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

// A node's scrape: counters, memory in pages, a series that comes and goes.
std::vector<SeriesValue> MakeScrape(std::mt19937_64& rng, int i) {
  std::vector<SeriesValue> v;
  for (uint64_t id = 1; id <= 20; ++id) {
    if (id == 7 && (i / 13) % 2 == 1) continue;
    const uint64_t base = id * 1'000'000'000'000ull;
    v.push_back({id, id % 2 ? base + uint64_t(i) * 9'000'000'000 + rng() % 1000
                            : base + (rng() % 50) * 4096});
  }
  return v;
}

Scrapes ReadRange(const Store& store, NodeId node, Timestamp after, Timestamp through) {
  Scrapes out;
  absl::Status s =
      store.ReadScrapes(node, after, through, [&](Timestamp t, std::span<const SeriesValue> v) {
        EXPECT_FALSE(out.contains(t));
        out[t] = std::vector<SeriesValue>(v.begin(), v.end());
      });
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// "" when equal; else the first difference, readable.
std::string Diff(const Scrapes& got, const Scrapes& want) {
  if (got.size() != want.size()) {
    return "got " + std::to_string(got.size()) + " scrapes, want " + std::to_string(want.size());
  }
  for (auto g = got.begin(), w = want.begin(); g != got.end(); ++g, ++w) {
    if (g->first != w->first) return "time " + std::to_string(g->first.time_since_epoch().count());
    if (g->second.size() != w->second.size())
      return "count at " + std::to_string(g->first.time_since_epoch().count());
    for (size_t i = 0; i < g->second.size(); ++i) {
      if (g->second[i] != w->second[i]) {
        return "at " + std::to_string(g->first.time_since_epoch().count()) + " id " +
               std::to_string(w->second[i].id) + ": " + std::to_string(g->second[i].value) +
               " != " + std::to_string(w->second[i].value);
      }
    }
  }
  return "";
}

Scrapes Expected(const Scrapes& all, Timestamp after, Timestamp through) {
  Scrapes out;
  for (auto it = all.upper_bound(after); it != all.end() && it->first <= through; ++it) {
    out.insert(*it);
  }
  return out;
}

class StoreChainTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = OpenStore(dir_.path().string()); }

  // Two nodes scraped every 10 s for 70 minutes from kT0 - 5 min (across an hour), with a
  // few scrapes missing; node 2 written in batches of several scrapes.
  void Fill() {
    std::mt19937_64 rng(3);
    ScrapeChain chain1, chain2;
    ScrapeBatch pending;
    int in_pending = 0;
    for (int i = 0; i < 420; ++i) {
      const Timestamp t = kT0 - minutes(5) + seconds(10 * i) + std::chrono::milliseconds(i % 7);
      if (i % 41 == 17) continue;  // a failed scrape: no blob
      scrapes1_[t] = MakeScrape(rng, i);
      ScrapeBatch batch;
      batch.PutScrape(1, t, scrapes1_[t], &chain1);
      ASSERT_TRUE(store_->Write(batch).ok());
      scrapes2_[t] = MakeScrape(rng, i + 1000);
      pending.PutScrape(2, t, scrapes2_[t], &chain2);
      if (++in_pending == 4) {
        ASSERT_TRUE(store_->Write(pending).ok());
        pending.Clear();
        in_pending = 0;
      }
    }
    ASSERT_TRUE(store_->Write(pending).ok());
  }

  kubestat::testing::TempDir dir_;
  std::unique_ptr<Store> store_;
  Scrapes scrapes1_, scrapes2_;
};

TEST_F(StoreChainTest, EveryRangeReadsBackExactlyWhatWasWritten) {
  Fill();
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_EQ(Diff(ReadRange(*store_, 1, Timestamp::min(), Timestamp::max()), scrapes1_), "");
  EXPECT_EQ(Diff(ReadRange(*store_, 2, Timestamp::min(), Timestamp::max()), scrapes2_), "");
  std::mt19937_64 rng(5);
  const int64_t span = std::chrono::duration_cast<Duration>(minutes(80)).count();
  for (int k = 0; k < 200; ++k) {
    const Timestamp after = kT0 - minutes(8) + Duration(int64_t(rng() % uint64_t(span)));
    const Timestamp through = after + Duration(int64_t(rng() % uint64_t(span / 4)));
    for (NodeId node : {NodeId{1}, NodeId{2}}) {
      const Scrapes& all = node == 1 ? scrapes1_ : scrapes2_;
      EXPECT_EQ(Diff(ReadRange(*store_, node, after, through), Expected(all, after, through)), "")
          << node << " " << k;
    }
  }
}

TEST_F(StoreChainTest, BackwardReadsAndSingleScrapesDecodeFromTheirSlot) {
  Fill();
  for (NodeId node : {NodeId{1}, NodeId{2}}) {
    const Scrapes& all = node == 1 ? scrapes1_ : scrapes2_;
    std::vector<Timestamp> seen;
    ASSERT_TRUE(store_
                    ->ReadScrapesBackward(node, Timestamp::max(), Timestamp::min(),
                                          [&](Timestamp t, std::span<const SeriesValue> v) {
                                            EXPECT_EQ(std::vector<SeriesValue>(v.begin(), v.end()),
                                                      all.at(t));
                                            seen.push_back(t);
                                            return true;
                                          })
                    .ok());
    ASSERT_EQ(seen.size(), all.size());
    EXPECT_TRUE(std::is_sorted(seen.rbegin(), seen.rend()));
    // From the middle of a slot down to an exclusive bound in another, stopping early.
    const auto from = std::next(all.begin(), 200);
    const auto to = std::next(all.begin(), 150);
    seen.clear();
    ASSERT_TRUE(store_
                    ->ReadScrapesBackward(node, from->first, to->first,
                                          [&](Timestamp t, std::span<const SeriesValue>) {
                                            seen.push_back(t);
                                            return seen.size() < 40;
                                          })
                    .ok());
    ASSERT_EQ(seen.size(), 40u);
    EXPECT_EQ(seen.front(), from->first);
    EXPECT_EQ(seen.back(), std::prev(from, 39)->first);
    for (const auto& [t, values] : all) {
      auto got = store_->GetScrape(node, t);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(*got, values);
    }
    EXPECT_EQ(store_->GetScrape(node, all.begin()->first + seconds(1)).status().code(),
              absl::StatusCode::kNotFound);
  }
}

TEST_F(StoreChainTest, ChainedBlobsAreSmallAndKeyBlobsStartEverySlot) {
  Fill();
  // Read the raw blobs of node 1 through RocksDB once the store is closed.
  store_.reset();
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::OpenForReadOnly(rocksdb::Options(), dir_.path().string(), &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  size_t key_bytes = 0, chained_bytes = 0, keys = 0, chained = 0;
  int64_t previous_slot = INT64_MIN;
  for (it->Seek(std::string(1, keys::kBlobTag)); it->Valid() && it->key()[0] == keys::kBlobTag;
       it->Next()) {
    const std::string_view key(it->key().data(), it->key().size());
    if (keys::GetU32(key.substr(9)) != 1) continue;
    const int64_t slot = keys::ChainSlotStart(keys::BlobTime(key));
    const std::string_view value(it->value().data(), it->value().size());
    const bool is_chained = IsChainedScrapeBlob(value);
    EXPECT_EQ(is_chained, slot == previous_slot) << keys::BlobTime(key);
    previous_slot = slot;
    (is_chained ? chained_bytes : key_bytes) += value.size();
    (is_chained ? chained : keys) += 1;
  }
  ASSERT_EQ(keys + chained, scrapes1_.size());
  EXPECT_EQ(keys, 14u);  // 70 minutes from a slot boundary: 14 slots
  // Whole values take 6 to 9 bytes; a chained blob's about one or two.
  EXPECT_LT(double(chained_bytes) / chained, 0.4 * double(key_bytes) / keys);
}

TEST_F(StoreChainTest, AFailedOrUnwrittenBatchMakesTheNextBlobAKeyBlob) {
  ScrapeChain chain;
  std::mt19937_64 rng(1);
  Scrapes written;
  auto put = [&](int i, ScrapeBatch& batch) {
    const Timestamp t = kT0 + seconds(10 * i);
    written[t] = MakeScrape(rng, i);
    batch.PutScrape(1, t, written[t], &chain);
    return t;
  };
  {
    ScrapeBatch batch;
    put(0, batch);
    ASSERT_TRUE(store_->Write(batch).ok());
  }
  {
    ScrapeBatch lost;  // destroyed unwritten
    written.erase(put(1, lost));
  }
  {
    ScrapeBatch batch;
    const Timestamp t = put(2, batch);
    ASSERT_TRUE(store_->Write(batch).ok());
    std::string raw;
    // The blob at t is readable on its own.
    auto got = store_->GetScrape(1, t);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, written[t]);
  }
  {
    ScrapeBatch cleared;
    written.erase(put(3, cleared));
    cleared.Clear();
    ScrapeBatch batch;
    put(4, batch);
    ASSERT_TRUE(store_->Write(batch).ok());
  }
  {
    // Another batch holds the chain: this one gets a key blob; both written, either order.
    ScrapeBatch first, second;
    put(5, first);
    put(6, second);
    ASSERT_TRUE(store_->Write(second).ok());
    ASSERT_TRUE(store_->Write(first).ok());
    ScrapeBatch batch;
    put(7, batch);
    ASSERT_TRUE(store_->Write(batch).ok());
  }
  EXPECT_EQ(Diff(ReadRange(*store_, 1, Timestamp::min(), Timestamp::max()), written), "");
}

TEST_F(StoreChainTest, ALostBlobCostsTheRestOfItsSlotOnlyAndTheReadGoesOn) {
  Fill();
  // Delete one chained blob of node 1 in the slot starting at kT0 + 10 min.
  const Timestamp slot = kT0 + minutes(10);
  auto victim = scrapes1_.upper_bound(slot + seconds(100));
  const Timestamp lost = victim->first;
  store_.reset();
  {
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), dir_.path().string(), &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Delete(rocksdb::WriteOptions(), keys::BlobKey(1, Nanos(lost))).ok());
  }
  store_ = OpenStore(dir_.path().string());
  // Before the loss and from the next slot on, everything reads.
  EXPECT_EQ(Diff(ReadRange(*store_, 1, Timestamp::min(), lost - Duration(1)),
                 Expected(scrapes1_, Timestamp::min(), lost - Duration(1))),
            "");
  EXPECT_EQ(Diff(ReadRange(*store_, 1, slot + minutes(5) - Duration(1), Timestamp::max()),
                 Expected(scrapes1_, slot + minutes(5) - Duration(1), Timestamp::max())),
            "");
  // Inside the slot, after the loss: nothing (each blob there builds on the lost one), and
  // the read of the whole node gets every other scrape.
  EXPECT_EQ(store_->Stats().orphaned_scrapes, 0u);
  EXPECT_TRUE(ReadRange(*store_, 1, lost, slot + minutes(5) - Duration(1)).empty());
  const uint64_t orphans = store_->Stats().orphaned_scrapes;
  const Scrapes orphaned = Expected(scrapes1_, lost, slot + minutes(5) - Duration(1));
  EXPECT_EQ(orphans, orphaned.size());
  Scrapes rest = scrapes1_;
  rest.erase(lost);
  for (const auto& [t, values] : orphaned) rest.erase(t);
  EXPECT_EQ(Diff(ReadRange(*store_, 1, Timestamp::min(), Timestamp::max()), rest), "");
  EXPECT_EQ(store_->Stats().read_errors, 0u);
}

TEST_F(StoreChainTest, Version1BlobsAreStillRead) {
  // A store written by an earlier version: whole-value blobs.
  Scrapes v1;
  std::mt19937_64 rng(9);
  store_.reset();
  {
    auto store = OpenStore(dir_.path().string());  // creates the format marker
  }
  {
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), dir_.path().string(), &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    for (int i = 0; i < 40; ++i) {
      const Timestamp t = kT0 + seconds(10 * i);
      v1[t] = MakeScrape(rng, i);
      std::string bytes;
      ASSERT_TRUE(EncodeScrapeBlobV1(v1[t], &bytes).ok());
      ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), keys::BlobKey(3, Nanos(t)), bytes).ok());
    }
  }
  store_ = OpenStore(dir_.path().string());
  // New blobs chain after the old ones.
  ScrapeChain chain;
  for (int i = 40; i < 80; ++i) {
    const Timestamp t = kT0 + seconds(10 * i);
    v1[t] = MakeScrape(rng, i);
    ScrapeBatch batch;
    batch.PutScrape(3, t, v1[t], &chain);
    ASSERT_TRUE(store_->Write(batch).ok());
  }
  EXPECT_EQ(Diff(ReadRange(*store_, 3, Timestamp::min(), Timestamp::max()), v1), "");
  EXPECT_EQ(Diff(ReadRange(*store_, 3, kT0 + seconds(95), kT0 + seconds(505)),
                 Expected(v1, kT0 + seconds(95), kT0 + seconds(505))),
            "");
  auto got = store_->GetScrape(3, kT0 + seconds(130));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, v1[kT0 + seconds(130)]);
}

}  // namespace
}  // namespace kubestat::storage
