#include "kubestat/core/str_cat.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace kubestat {
namespace {

TEST(StrCatTest, JoinsStringsCharactersAndNumbers) {
  const std::string s = "pods";
  const std::string_view v = "web-1";
  EXPECT_EQ(StrCat(s, ".metrics.k8s.io \"", v, "\" ", 'x', ' ', 42, ' ', int64_t{-7}, ' ',
                   uint64_t{18446744073709551615u}),
            "pods.metrics.k8s.io \"web-1\" x 42 -7 18446744073709551615");
}

TEST(StrCatTest, WritesFloatingPointInTheShortestRoundTripForm) {
  EXPECT_EQ(StrCat(0.1), "0.1");
  // The shorter of the fixed and the exponent forms, as std::to_chars chooses.
  EXPECT_EQ(StrCat(1.8446743709127774e+19), "18446743709127774208");
  EXPECT_EQ(StrCat(1e+21), "1e+21");
  EXPECT_EQ(StrCat(2.0), "2");
}

TEST(StrCatTest, NoPiecesGiveAnEmptyString) { EXPECT_EQ(StrCat(), ""); }

}  // namespace
}  // namespace kubestat
