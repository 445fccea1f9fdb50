#include "kubestat/core/gzip.h"

#include <gtest/gtest.h>
#include <stdio.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>

#include "kubestat/core/str_cat.h"

namespace kubestat {
namespace {

// A JSON list shaped like the aggregator's answers: repetitive, so it compresses well.
std::string JsonLikeText(int items) {
  std::string text = R"({"kind":"NodeMetricsList","items":[)";
  for (int i = 0; i < items; ++i) {
    if (i > 0) text += ',';
    text += StrCat(R"({"metadata":{"name":"node-)", i, R"("},"usage":{"cpu":")", 100 + i % 977,
                   R"(m","memory":")", 1000 + i % 313, R"(Mi"}})");
  }
  return text + "]}";
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string bytes(n, '\0');
  for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
  return bytes;
}

TEST(AcceptsGzipTest, FollowsTheAcceptEncodingGrammarAndWeights) {
  const struct {
    std::string_view header;
    bool gzip;
  } cases[] = {
      {"gzip", true},
      {"", false},
      {"identity", false},
      {"deflate, br", false},
      {"deflate, gzip;q=0.5", true},
      {"GZip", true},
      {"x-gzip", true},
      {" \tgzip\t ", true},
      {"gzip;q=0", false},
      {"gzip; q=0.000", false},
      {"gzip;Q=0", false},
      {"gzip;q=0.001", true},
      {"gzip;q=1.000", true},
      {"gzip;q=1.5", false},
      {"gzip;q=1.001", false},
      {"gzip;q=0.0001", false},
      {"gzip;q=abc", false},
      {"gzip;q=", false},
      {"gzip;level=9", true},
      {"gzipx", false},
      {"*", true},
      {"*;q=0", false},
      {"br, *;q=0.1", true},
      {"gzip;q=0, *", false},  // an explicit gzip weight wins over "*"
      {"*;q=0, gzip", true},
      {"gzip;q=0, gzip;q=0.2", true},
      {",,gzip,,", true},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(AcceptsGzip(c.header), c.gzip) << "Accept-Encoding: " << c.header;
  }
}

TEST(GzipTest, RoundTripsEmptySmallRandomAndLargeInputs) {
  const std::string inputs[] = {"", "a", RandomBytes(100 * 1000, 7), JsonLikeText(40000)};
  for (const std::string& input : inputs) {
    for (int level : {1, 6, 9}) {
      const std::string packed = GzipCompress(input, level);
      ASSERT_GE(packed.size(), 18u);  // header and trailer
      EXPECT_EQ(static_cast<uint8_t>(packed[0]), 0x1f);
      EXPECT_EQ(static_cast<uint8_t>(packed[1]), 0x8b);
      EXPECT_EQ(packed[2], 8);  // deflate
      absl::StatusOr<std::string> unpacked = GzipDecompress(packed, input.size());
      ASSERT_TRUE(unpacked.ok()) << unpacked.status();
      EXPECT_EQ(*unpacked, input) << "size " << input.size() << " level " << level;
    }
  }
}

TEST(GzipTest, CompressesJsonListsSeveralFold) {
  const std::string text = JsonLikeText(40000);
  const std::string packed = GzipCompress(text, 1);
  EXPECT_LT(packed.size() * 4, text.size()) << packed.size() << " of " << text.size();
}

TEST(GzipTest, OutOfRangeLevelsAreClamped) {
  const std::string text = JsonLikeText(100);
  for (int level : {-3, 0, 10, 100}) {
    absl::StatusOr<std::string> unpacked = GzipDecompress(GzipCompress(text, level), text.size());
    ASSERT_TRUE(unpacked.ok()) << level << ": " << unpacked.status();
    EXPECT_EQ(*unpacked, text);
  }
}

// gzip(1), a decoder nobody here wrote, reads what GzipCompress writes.
TEST(GzipTest, TheGzipCommandDecodesTheOutput) {
  if (system("command -v gzip >/dev/null 2>&1") != 0) GTEST_SKIP() << "no gzip command";
  const std::string text = JsonLikeText(5000);
  char path[] = "/tmp/kubestat-gzip-test-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string packed = GzipCompress(text, 1);
  ASSERT_EQ(write(fd, packed.data(), packed.size()), static_cast<ssize_t>(packed.size()));
  close(fd);
  FILE* pipe = popen(StrCat("gzip -dc < ", path).c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string decoded;
  char buffer[65536];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) decoded.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0);
  unlink(path);
  EXPECT_EQ(decoded, text);
}

TEST(GzipTest, DecompressReadsConcatenatedMembers) {
  const std::string packed = GzipCompress("first,", 1) + GzipCompress("second", 9);
  absl::StatusOr<std::string> unpacked = GzipDecompress(packed, 100);
  ASSERT_TRUE(unpacked.ok()) << unpacked.status();
  EXPECT_EQ(*unpacked, "first,second");
}

TEST(GzipTest, DecompressRejectsWhatIsNotCompleteGzip) {
  const std::string text = JsonLikeText(2000);
  const std::string packed = GzipCompress(text, 1);

  EXPECT_EQ(GzipDecompress("", 100).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GzipDecompress(text, text.size()).status().code(), absl::StatusCode::kInvalidArgument);
  for (size_t cut : {size_t{1}, size_t{4}, size_t{8}, packed.size() / 2, packed.size() - 11}) {
    absl::StatusOr<std::string> truncated =
        GzipDecompress(std::string_view(packed).substr(0, packed.size() - cut), text.size());
    EXPECT_EQ(truncated.status().code(), absl::StatusCode::kInvalidArgument) << "cut " << cut;
  }
  std::string corrupt = packed;
  corrupt[corrupt.size() - 6] ^= 0x55;  // the CRC-32
  EXPECT_EQ(GzipDecompress(corrupt, text.size()).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::string> trailing = GzipDecompress(packed + "junk", text.size());
  EXPECT_EQ(trailing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(trailing.status().message().find("trailing"), std::string_view::npos)
      << trailing.status();
}

TEST(GzipTest, DecompressStopsAtTheOutputCap) {
  const std::string zeros(10 * 1000 * 1000, '\0');
  const std::string bomb = GzipCompress(zeros, 9);
  ASSERT_LT(bomb.size(), 50u * 1000);
  absl::StatusOr<std::string> capped = GzipDecompress(bomb, 1000 * 1000);
  EXPECT_EQ(capped.status().code(), absl::StatusCode::kResourceExhausted) << capped.status();
  // Exactly at the cap is allowed; one byte under is not.
  EXPECT_TRUE(GzipDecompress(bomb, zeros.size()).ok());
  EXPECT_EQ(GzipDecompress(bomb, zeros.size() - 1).status().code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace kubestat
