#include "kubestat/storage/scrape_blob.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace kubestat::storage {
namespace {

TEST(ScrapeBlobTest, RoundTripsIdsAndValuesExactly) {
  std::vector<SeriesValue> values = {{0, 0},      {1, 1},      {2, UINT64_MAX},
                                     {1000, 127}, {1001, 128}, {UINT64_MAX, 42}};
  std::string bytes;
  ASSERT_TRUE(EncodeScrapeBlob(values, &bytes).ok());
  std::vector<SeriesValue> decoded;
  ASSERT_TRUE(DecodeScrapeBlob(bytes, &decoded).ok());
  EXPECT_EQ(decoded, values);
}

TEST(ScrapeBlobTest, DenseIdsCostAboutOneBytePerIdPlusTheValue) {
  std::vector<SeriesValue> values;
  for (uint64_t i = 0; i < 100; ++i) values.push_back({500 + i, 100});  // 1-byte values
  std::string bytes;
  ASSERT_TRUE(EncodeScrapeBlob(values, &bytes).ok());
  EXPECT_LE(bytes.size(), 1 + 1 + 2 + 100 * 2u);
}

TEST(ScrapeBlobTest, RejectsUnsortedOrDuplicateIds) {
  std::string bytes;
  EXPECT_FALSE(EncodeScrapeBlob(std::vector<SeriesValue>{{2, 0}, {1, 0}}, &bytes).ok());
  EXPECT_FALSE(EncodeScrapeBlob(std::vector<SeriesValue>{{2, 0}, {2, 0}}, &bytes).ok());
  EXPECT_TRUE(bytes.empty());
}

TEST(ScrapeBlobTest, MalformedBytesAreDataLoss) {
  std::vector<SeriesValue> out;
  EXPECT_EQ(DecodeScrapeBlob("", &out).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeScrapeBlob("\x02\x00", &out).code(), absl::StatusCode::kDataLoss);
  std::string good;
  ASSERT_TRUE(EncodeScrapeBlob(std::vector<SeriesValue>{{1, 300}, {2, 400}}, &good).ok());
  for (size_t cut = 0; cut < good.size(); ++cut) {
    EXPECT_FALSE(DecodeScrapeBlob(good.substr(0, cut), &out).ok()) << cut;
    EXPECT_TRUE(out.empty());
  }
  EXPECT_FALSE(DecodeScrapeBlob(good + "x", &out).ok());
  // An id delta that overflows.
  std::string overflow = "\x01\x02\x01\x00";
  overflow += std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
  overflow += '\x00';
  EXPECT_FALSE(DecodeScrapeBlob(overflow, &out).ok());
}

TEST(ScrapeBlobTest, RandomBytesNeverCrash) {
  std::mt19937_64 rng(7);
  std::vector<SeriesValue> out;
  for (int i = 0; i < 20000; ++i) {
    std::string bytes(rng() % 40, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    if (!bytes.empty() && rng() % 2) bytes[0] = 1;
    (void)DecodeScrapeBlob(bytes, &out);
  }
}

}  // namespace
}  // namespace kubestat::storage
