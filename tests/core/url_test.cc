#include "kubestat/core/url.h"

#include <gtest/gtest.h>

namespace kubestat {
namespace {

TEST(UrlTest, PercentDecodeHandlesPlusOnlyInQueryText) {
  EXPECT_EQ(*PercentDecode("a+b%20c", true), "a b c");
  EXPECT_EQ(*PercentDecode("a+b", false), "a+b");
  EXPECT_EQ(*PercentDecode("%2F%2f%41", false), "//A");
  EXPECT_EQ(*PercentDecode("", false), "");
}

TEST(UrlTest, PercentDecodeRefusesAMalformedEscapeQuotingIt) {
  EXPECT_EQ(PercentDecode("%", false).status().message(), "invalid URL escape \"%\"");
  EXPECT_EQ(PercentDecode("ab%4", false).status().message(), "invalid URL escape \"%4\"");
  EXPECT_EQ(PercentDecode("x%zzy", true).status().message(), "invalid URL escape \"%zz\"");
  EXPECT_EQ(PercentDecode("%\n1", true).status().message(), "invalid URL escape \"%?1\"");
  EXPECT_EQ(PercentDecode("%g0", true).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(UrlTest, LenientDecodingKeepsAMalformedEscapeAsWritten) {
  EXPECT_EQ(PercentDecodeLenient("%zz%41+%", true), "%zzA %");
  EXPECT_EQ(PercentDecodeLenient("a%2", false), "a%2");
  EXPECT_EQ(PercentDecodeLenient("app%3Dweb+x", false), "app=web+x");
  EXPECT_EQ(PercentDecodeLenient("%E2%9C%93", false), "\xE2\x9C\x93");
}

}  // namespace
}  // namespace kubestat
