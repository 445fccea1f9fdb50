#include "kubestat/storage/scrape_blob.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace kubestat::storage {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = int64_t{1'728'000'000} * kSecond;

// Encodes `scrapes` (one every 10 s from kT0) as one chain, decodes them back in order and
// returns the encoded sizes; every decoded scrape must equal its input.
std::vector<size_t> RoundTripChain(const std::vector<std::vector<SeriesValue>>& scrapes) {
  BlobChainState writer, reader, next;
  std::vector<size_t> sizes;
  std::vector<SeriesValue> decoded;
  for (size_t i = 0; i < scrapes.size(); ++i) {
    const int64_t t = kT0 + static_cast<int64_t>(i) * 10 * kSecond;
    // Every 50th blob is a key blob: predictions start afresh on both sides.
    const bool key = i % 50 == 0;
    std::string bytes;
    EXPECT_TRUE(EncodeScrapeBlob(scrapes[i], t, key ? nullptr : &writer, &bytes).ok());
    sizes.push_back(bytes.size());
    EXPECT_EQ(IsChainedScrapeBlob(bytes), !key) << i;
    absl::Status s = DecodeScrapeBlob(bytes, t, &reader, &decoded);
    EXPECT_TRUE(s.ok()) << i << ": " << s;
    EXPECT_EQ(decoded, scrapes[i]) << i;
    next.Advance(key ? nullptr : &writer, t, scrapes[i]);
    std::swap(writer, next);
    next.Advance(IsChainedScrapeBlob(bytes) ? &reader : nullptr, t, decoded);
    std::swap(reader, next);
  }
  return sizes;
}

TEST(ScrapeBlobTest, KeyBlobRoundTripsIdsAndValuesExactly) {
  std::vector<SeriesValue> values = {{0, 0},      {1, 1},      {2, UINT64_MAX},
                                     {1000, 127}, {1001, 128}, {UINT64_MAX, 42}};
  std::string bytes;
  ASSERT_TRUE(EncodeScrapeBlob(values, kT0, nullptr, &bytes).ok());
  EXPECT_FALSE(IsChainedScrapeBlob(bytes));
  std::vector<SeriesValue> decoded;
  ASSERT_TRUE(DecodeScrapeBlob(bytes, kT0, nullptr, &decoded).ok());
  EXPECT_EQ(decoded, values);
  // A key blob needs no reference, and ignores one.
  BlobChainState unrelated;
  unrelated.Advance(nullptr, kT0 - kSecond, std::vector<SeriesValue>{{5, 5}});
  ASSERT_TRUE(DecodeScrapeBlob(bytes, kT0, &unrelated, &decoded).ok());
  EXPECT_EQ(decoded, values);
}

TEST(ScrapeBlobTest, Version1BlobsStillDecode) {
  std::vector<SeriesValue> values = {{0, 0}, {1, 1}, {2, UINT64_MAX}, {1000, 127}, {1001, 128}};
  std::string bytes;
  ASSERT_TRUE(EncodeScrapeBlobV1(values, &bytes).ok());
  EXPECT_EQ(bytes[0], 1);
  std::vector<SeriesValue> decoded;
  ASSERT_TRUE(DecodeScrapeBlob(bytes, kT0, nullptr, &decoded).ok());
  EXPECT_EQ(decoded, values);
}

TEST(ScrapeBlobTest, ChainsRoundTripThroughChurnWrapAndHugeSteps) {
  std::mt19937_64 rng(11);
  std::vector<std::vector<SeriesValue>> scrapes;
  std::vector<uint64_t> level(40);
  for (uint64_t& l : level) l = rng();
  for (int i = 0; i < 300; ++i) {
    std::vector<SeriesValue> scrape;
    for (uint64_t id = 0; id < level.size(); ++id) {
      if (rng() % 7 == 0) continue;  // series come and go
      switch (id % 5) {
        case 0:  // a counter at a steady rate, with jitter
          level[id] += 2'000'000'000 + rng() % 1000;
          break;
        case 1:  // memory in pages
          level[id] += (static_cast<int64_t>(rng() % 21) - 10) * 4096;
          break;
        case 2:  // anything at all: wraps, huge jumps (the escape)
          level[id] = rng();
          break;
        case 3:  // the extremes
          level[id] = rng() % 2 ? UINT64_MAX : 0;
          break;
        default:  // constant
          break;
      }
      scrape.push_back({id * 3 + 1, level[id]});
    }
    scrapes.push_back(std::move(scrape));
  }
  RoundTripChain(scrapes);
}

TEST(ScrapeBlobTest, SteadySeriesCostAboutOneBytePerValue) {
  // 100 counters growing at a steady rate and 100 memory series moving a few pages: the
  // shapes of a node's cpu and memory. Whole values would take 5 to 9 bytes each.
  std::vector<std::vector<SeriesValue>> scrapes;
  for (int i = 0; i < 30; ++i) {
    std::vector<SeriesValue> scrape;
    for (uint64_t id = 0; id < 100; ++id) {
      scrape.push_back({id, 1'000'000'000'000 + id * 7 + uint64_t(i) * 25'000'000'000});
    }
    for (uint64_t id = 100; id < 200; ++id) {
      scrape.push_back({id, 800'000'000 + uint64_t((i * 37 + id) % 5) * 4096});
    }
    scrapes.push_back(std::move(scrape));
  }
  const std::vector<size_t> sizes = RoundTripChain(scrapes);
  EXPECT_GT(sizes[0], 200u * 5);  // the key blob: whole values
  for (size_t i = 2; i < sizes.size(); ++i) {
    // Header (version, flags, distance, count) + one byte per value: ids are the
    // reference's, counters repeat their step, memory moves under 64 pages.
    EXPECT_LE(sizes[i], 1 + 1 + 5 + 2 + 200u) << i;
  }
}

TEST(ScrapeBlobTest, AChainedBlobNeedsItsReference) {
  const std::vector<SeriesValue> a = {{1, 100}, {2, 200}};
  const std::vector<SeriesValue> b = {{1, 110}, {2, 190}};
  BlobChainState ref;
  ref.Advance(nullptr, kT0, a);
  std::string bytes;
  ASSERT_TRUE(EncodeScrapeBlob(b, kT0 + 10 * kSecond, &ref, &bytes).ok());
  ASSERT_TRUE(IsChainedScrapeBlob(bytes));
  std::vector<SeriesValue> out;
  EXPECT_EQ(DecodeScrapeBlob(bytes, kT0 + 10 * kSecond, nullptr, &out).code(),
            absl::StatusCode::kFailedPrecondition);
  const BlobChainState empty;
  EXPECT_EQ(DecodeScrapeBlob(bytes, kT0 + 10 * kSecond, &empty, &out).code(),
            absl::StatusCode::kFailedPrecondition);
  // A reference at another time (a blob in between was lost) is not used.
  BlobChainState other;
  other.Advance(nullptr, kT0 + kSecond, a);
  absl::Status s = DecodeScrapeBlob(bytes, kT0 + 10 * kSecond, &other, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find(std::to_string(kT0)), std::string::npos) << s;
  EXPECT_TRUE(out.empty());
  // The same bytes at another time of their own point to another reference.
  EXPECT_FALSE(DecodeScrapeBlob(bytes, kT0 + 11 * kSecond, &ref, &out).ok());
  ASSERT_TRUE(DecodeScrapeBlob(bytes, kT0 + 10 * kSecond, &ref, &out).ok());
  EXPECT_EQ(out, b);
}

TEST(ScrapeBlobTest, RejectsUnsortedIdsAndAReferenceThatIsNotOlder) {
  std::string bytes;
  EXPECT_FALSE(
      EncodeScrapeBlob(std::vector<SeriesValue>{{2, 0}, {1, 0}}, kT0, nullptr, &bytes).ok());
  EXPECT_FALSE(
      EncodeScrapeBlob(std::vector<SeriesValue>{{2, 0}, {2, 0}}, kT0, nullptr, &bytes).ok());
  EXPECT_FALSE(EncodeScrapeBlobV1(std::vector<SeriesValue>{{2, 0}, {1, 0}}, &bytes).ok());
  BlobChainState ref;
  ref.Advance(nullptr, kT0, std::vector<SeriesValue>{{1, 1}});
  EXPECT_EQ(EncodeScrapeBlob(std::vector<SeriesValue>{{1, 2}}, kT0, &ref, &bytes).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(bytes.empty());
}

TEST(ScrapeBlobTest, MalformedBytesAreDataLoss) {
  std::vector<SeriesValue> out;
  EXPECT_EQ(DecodeScrapeBlob("", kT0, nullptr, &out).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeScrapeBlob("\x03\x00", kT0, nullptr, &out).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeScrapeBlob(std::string("\x02\x04\x00", 3), kT0, nullptr, &out).code(),
            absl::StatusCode::kDataLoss);  // unknown flag
  EXPECT_EQ(DecodeScrapeBlob(std::string("\x02\x02\x00", 3), kT0, nullptr, &out).code(),
            absl::StatusCode::kDataLoss);  // same ids without a reference
  BlobChainState ref;
  ref.Advance(nullptr, kT0, std::vector<SeriesValue>{{1, 300}, {2, 400}});
  std::string v1, key, chained;
  ASSERT_TRUE(EncodeScrapeBlobV1(std::vector<SeriesValue>{{1, 300}, {2, 400}}, &v1).ok());
  ASSERT_TRUE(
      EncodeScrapeBlob(std::vector<SeriesValue>{{1, 300}, {2, 400}}, kT0, nullptr, &key).ok());
  ASSERT_TRUE(EncodeScrapeBlob(std::vector<SeriesValue>{{1, 310}, {2, 1ull << 63}}, kT0 + kSecond,
                               &ref, &chained)
                  .ok());
  const std::vector<std::pair<std::string, int64_t>> blobs = {
      {v1, kT0}, {key, kT0}, {chained, kT0 + kSecond}};
  for (const auto& [good, t] : blobs) {
    for (size_t cut = 0; cut < good.size(); ++cut) {
      EXPECT_FALSE(DecodeScrapeBlob(good.substr(0, cut), t, &ref, &out).ok()) << cut;
      EXPECT_TRUE(out.empty());
    }
    EXPECT_FALSE(DecodeScrapeBlob(good + "x", t, &ref, &out).ok());
    ASSERT_TRUE(DecodeScrapeBlob(good, t, &ref, &out).ok());
  }
  // Same ids as a reference of another size.
  BlobChainState three;
  three.Advance(nullptr, kT0, std::vector<SeriesValue>{{1, 1}, {2, 2}, {3, 3}});
  EXPECT_FALSE(DecodeScrapeBlob(chained, kT0 + kSecond, &three, &out).ok());
  // An id delta that overflows.
  std::string overflow = "\x01\x02\x01\x00";
  overflow += std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
  overflow += '\x00';
  EXPECT_FALSE(DecodeScrapeBlob(overflow, kT0, nullptr, &out).ok());
}

TEST(ScrapeBlobTest, RandomBytesNeverCrash) {
  std::mt19937_64 rng(7);
  std::vector<SeriesValue> out;
  BlobChainState ref;
  ref.Advance(nullptr, kT0 - 1, std::vector<SeriesValue>{{0, 1}, {1, 2}, {5, 9}});
  for (int i = 0; i < 50000; ++i) {
    std::string bytes(rng() % 40, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    if (!bytes.empty() && rng() % 2) bytes[0] = static_cast<char>(1 + rng() % 2);
    if (bytes.size() > 2 && rng() % 2) bytes[2] = 1;  // distance 1: the reference
    (void)DecodeScrapeBlob(bytes, kT0, rng() % 2 ? &ref : nullptr, &out);
  }
}

}  // namespace
}  // namespace kubestat::storage
