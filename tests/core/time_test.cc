#include "kubestat/core/time.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>

namespace kubestat {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

Timestamp At(int64_t unix_seconds, int64_t nanos = 0) {
  return Timestamp(seconds(unix_seconds) + nanoseconds(nanos));
}

constexpr int64_t k20261121T100010 = 1795255210;

TEST(ParseRfc3339Test, ParsesWholeSecondsInUtc) {
  EXPECT_EQ(*ParseRfc3339("2026-11-21T10:00:10Z"), At(k20261121T100010));
  EXPECT_EQ(*ParseRfc3339("1970-01-01T00:00:00Z"), At(0));
}

TEST(ParseRfc3339Test, ParsesFractionsOfOneToNineDigits) {
  EXPECT_EQ(*ParseRfc3339("2026-11-21T10:00:10.5Z"), At(k20261121T100010, 500'000'000));
  EXPECT_EQ(*ParseRfc3339("2026-11-21T10:00:10.123Z"), At(k20261121T100010, 123'000'000));
  EXPECT_EQ(*ParseRfc3339("2026-11-21T10:00:10.123456789Z"), At(k20261121T100010, 123'456'789));
  EXPECT_EQ(*ParseRfc3339("2026-11-21T10:00:10.000000001Z"), At(k20261121T100010, 1));
}

TEST(ParseRfc3339Test, NormalisesNumericOffsetsToUtc) {
  EXPECT_EQ(*ParseRfc3339("2026-11-21T12:00:10+02:00"), At(k20261121T100010));
  EXPECT_EQ(*ParseRfc3339("2026-11-21T03:00:10-07:00"), At(k20261121T100010));
  EXPECT_EQ(*ParseRfc3339("2026-11-21T15:30:10.25+05:30"), At(k20261121T100010, 250'000'000));
  EXPECT_EQ(*ParseRfc3339("2026-11-21T10:00:10+00:00"), At(k20261121T100010));
  // The offset moves the date across midnight and a year boundary.
  EXPECT_EQ(*ParseRfc3339("2025-12-31T23:00:00-01:00"), *ParseRfc3339("2026-01-01T00:00:00Z"));
}

TEST(ParseRfc3339Test, AcceptsLowerCaseSeparatorsAsRfc3339Allows) {
  EXPECT_EQ(*ParseRfc3339("2026-11-21t10:00:10z"), At(k20261121T100010));
}

TEST(ParseRfc3339Test, ParsesTimesBeforeTheEpoch) {
  EXPECT_EQ(*ParseRfc3339("1969-12-31T23:59:59Z"), At(-1));
  EXPECT_EQ(*ParseRfc3339("1969-12-31T23:59:59.5Z"), At(-1, 500'000'000));
  EXPECT_EQ(*ParseRfc3339("1900-01-01T00:00:00Z"), At(-2208988800));
}

TEST(ParseRfc3339Test, GoZeroTimeParsesToKZeroTime) {
  auto t = ParseRfc3339("0001-01-01T00:00:00Z");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, kZeroTime);
}

TEST(ParseRfc3339Test, SaturatesOutsideTheRepresentableRange) {
  EXPECT_EQ(*ParseRfc3339("1000-06-01T00:00:00Z"), Timestamp::min());
  EXPECT_EQ(*ParseRfc3339("9999-12-31T23:59:59.999999999Z"), Timestamp::max());
  // The exact ends of the range parse to themselves.
  EXPECT_EQ(*ParseRfc3339("1677-09-21T00:12:43.145224192Z"), Timestamp::min());
  EXPECT_EQ(*ParseRfc3339("2262-04-11T23:47:16.854775807Z"), Timestamp::max());
  EXPECT_EQ(*ParseRfc3339("2262-04-11T23:47:16.854775806Z"), Timestamp::max() - nanoseconds(1));
}

TEST(ParseRfc3339Test, ChecksCalendarRanges) {
  EXPECT_TRUE(ParseRfc3339("2024-02-29T00:00:00Z").ok());
  EXPECT_TRUE(ParseRfc3339("2000-02-29T00:00:00Z").ok());
  EXPECT_FALSE(ParseRfc3339("2026-02-29T00:00:00Z").ok());
  EXPECT_FALSE(ParseRfc3339("1900-02-29T00:00:00Z").ok());
  EXPECT_FALSE(ParseRfc3339("2026-04-31T00:00:00Z").ok());
  EXPECT_FALSE(ParseRfc3339("2026-00-10T00:00:00Z").ok());
  EXPECT_FALSE(ParseRfc3339("2026-13-10T00:00:00Z").ok());
  EXPECT_FALSE(ParseRfc3339("2026-11-00T00:00:00Z").ok());
  EXPECT_FALSE(ParseRfc3339("2026-11-21T24:00:00Z").ok());
  EXPECT_FALSE(ParseRfc3339("2026-11-21T10:60:00Z").ok());
  EXPECT_FALSE(ParseRfc3339("2026-11-21T10:00:60Z").ok());
  EXPECT_FALSE(ParseRfc3339("2026-11-21T10:00:00+24:00").ok());
  EXPECT_FALSE(ParseRfc3339("2026-11-21T10:00:00+01:60").ok());
}

TEST(ParseRfc3339Test, RejectsGarbageAndTrailingBytes) {
  for (const char* bad : {
           "",
           "2026",
           "2026-11-21",
           "2026-11-21T10:00:10",              // no zone
           "2026-11-21 10:00:10Z",             // space separator
           "2026-11-21T10:00:10ZZ",            // trailing byte
           "2026-11-21T10:00:10Z ",            // trailing space
           " 2026-11-21T10:00:10Z",            // leading space
           "2026-11-21T10:00:10.Z",            // no fraction digits
           "2026-11-21T10:00:10.1234567890Z",  // ten fraction digits
           "2026-11-21T10:00:10+0200",         // offset without colon
           "2026-11-21T10:00:10+02",           // short offset
           "2026-11-21T10:00:10+02:00:00",     // trailing
           "2026-11-21T1:00:10Z",              // one-digit hour
           "+2026-11-21T10:00:10Z",
           "2026-1a-21T10:00:10Z",
           "2026/11/21T10:00:10Z",
           "2026-11-21T10:00:10UTC",
       }) {
    auto t = ParseRfc3339(bad);
    EXPECT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ParseRfc3339Test, ErrorNamesTheInputAndTheReason) {
  auto t = ParseRfc3339("2026-11-21T10:00:60Z");
  EXPECT_THAT(t.status().message(), HasSubstr("\"2026-11-21T10:00:60Z\""));
  EXPECT_THAT(t.status().message(), HasSubstr("second out of range"));
}

TEST(ParseRfc3339Test, ErrorQuotesBinaryInputSafelyAndBriefly) {
  std::string huge(10'000, '\x01');
  auto t = ParseRfc3339(huge);
  ASSERT_FALSE(t.ok());
  EXPECT_LT(t.status().message().size(), 400u);
  EXPECT_THAT(t.status().message(), HasSubstr("\\x01"));
}

TEST(FormatRfc3339Test, WritesWholeSecondsInUtc) {
  EXPECT_EQ(FormatRfc3339(At(k20261121T100010)), "2026-11-21T10:00:10Z");
  EXPECT_EQ(FormatRfc3339(At(0)), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(At(951782400)), "2000-02-29T00:00:00Z");
}

TEST(FormatRfc3339Test, TruncatesTowardThePast) {
  EXPECT_EQ(FormatRfc3339(At(k20261121T100010, 999'999'999)), "2026-11-21T10:00:10Z");
  // Before 1970 truncation toward the past is not toward zero.
  EXPECT_EQ(FormatRfc3339(At(-1, 500'000'000)), "1969-12-31T23:59:59Z");
  EXPECT_EQ(FormatRfc3339(At(0) - nanoseconds(1)), "1969-12-31T23:59:59Z");
}

TEST(FormatRfc3339Test, WritesGoZeroTimeForKZeroTime) {
  EXPECT_EQ(FormatRfc3339(kZeroTime), "0001-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339Nano(kZeroTime), "0001-01-01T00:00:00Z");
}

TEST(FormatRfc3339Test, WritesTheLatestRepresentableTime) {
  EXPECT_EQ(FormatRfc3339(Timestamp::max()), "2262-04-11T23:47:16Z");
  EXPECT_EQ(FormatRfc3339Nano(Timestamp::max()), "2262-04-11T23:47:16.854775807Z");
}

TEST(FormatRfc3339NanoTest, DropsTrailingZerosOfTheFraction) {
  EXPECT_EQ(FormatRfc3339Nano(At(k20261121T100010)), "2026-11-21T10:00:10Z");
  EXPECT_EQ(FormatRfc3339Nano(At(k20261121T100010, 500'000'000)), "2026-11-21T10:00:10.5Z");
  EXPECT_EQ(FormatRfc3339Nano(At(k20261121T100010, 120'000'000)), "2026-11-21T10:00:10.12Z");
  EXPECT_EQ(FormatRfc3339Nano(At(k20261121T100010, 1)), "2026-11-21T10:00:10.000000001Z");
  EXPECT_EQ(FormatRfc3339Nano(At(k20261121T100010, 123'456'789)), "2026-11-21T10:00:10.123456789Z");
  EXPECT_EQ(FormatRfc3339Nano(At(0) - nanoseconds(1)), "1969-12-31T23:59:59.999999999Z");
}

TEST(Rfc3339Test, SeededRandomTimesRoundTripThroughNanoFormat) {
  std::mt19937_64 rng(20261121);
  std::uniform_int_distribution<int64_t> any(std::numeric_limits<int64_t>::min() + 1,
                                             std::numeric_limits<int64_t>::max());
  for (int i = 0; i < 20000; ++i) {
    const Timestamp t{nanoseconds(any(rng))};
    const std::string text = FormatRfc3339Nano(t);
    auto parsed = ParseRfc3339(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.status();
    ASSERT_EQ(*parsed, t) << text;
    // The whole-second form reads back as the floor of t.
    auto whole = ParseRfc3339(FormatRfc3339(t));
    ASSERT_TRUE(whole.ok());
    ASSERT_LE(*whole, t);
    ASSERT_LT(t - *whole, seconds(1));
  }
}

TEST(ParseDurationTest, ParsesGoSyntax) {
  EXPECT_EQ(*ParseDuration("300ms"), milliseconds(300));
  EXPECT_EQ(*ParseDuration("1.5h"), minutes(90));
  EXPECT_EQ(*ParseDuration("2h45m"), minutes(165));
  EXPECT_EQ(*ParseDuration("-1.5h"), -minutes(90));
  EXPECT_EQ(*ParseDuration("+10s"), seconds(10));
  EXPECT_EQ(*ParseDuration("1m30s"), seconds(90));
  EXPECT_EQ(*ParseDuration("0"), nanoseconds(0));
  EXPECT_EQ(*ParseDuration("-0"), nanoseconds(0));
  EXPECT_EQ(*ParseDuration("0s"), nanoseconds(0));
  EXPECT_EQ(*ParseDuration(".5s"), milliseconds(500));
  EXPECT_EQ(*ParseDuration("1.s"), seconds(1));
  EXPECT_EQ(*ParseDuration("1h1h"), hours(2));
}

TEST(ParseDurationTest, AcceptsEveryUnit) {
  EXPECT_EQ(*ParseDuration("7ns"), nanoseconds(7));
  EXPECT_EQ(*ParseDuration("7us"), microseconds(7));
  EXPECT_EQ(*ParseDuration("7\xc2\xb5s"), microseconds(7));  // micro sign
  EXPECT_EQ(*ParseDuration("7\xce\xbcs"), microseconds(7));  // Greek mu
  EXPECT_EQ(*ParseDuration("7ms"), milliseconds(7));
  EXPECT_EQ(*ParseDuration("7s"), seconds(7));
  EXPECT_EQ(*ParseDuration("7m"), minutes(7));
  EXPECT_EQ(*ParseDuration("7h"), hours(7));
  EXPECT_EQ(*ParseDuration("1d"), hours(24));
  EXPECT_EQ(*ParseDuration("1d12h"), hours(36));
}

TEST(ParseDurationTest, FractionsTruncateToWholeNanoseconds) {
  EXPECT_EQ(*ParseDuration("1.9ns"), nanoseconds(1));
  EXPECT_EQ(*ParseDuration("0.3333333333333333333333s"), nanoseconds(333'333'333));
  EXPECT_EQ(*ParseDuration("1.000000001s"), nanoseconds(1'000'000'001));
  EXPECT_EQ(*ParseDuration("0.1us"), nanoseconds(100));
}

TEST(ParseDurationTest, AcceptsTheInt64Limits) {
  EXPECT_EQ(ParseDuration("9223372036854775807ns")->count(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ParseDuration("-9223372036854775808ns")->count(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*ParseDuration("2562047h47m16.854775807s"), nanoseconds::max());
}

TEST(ParseDurationTest, RejectsOverflow) {
  for (const char* bad :
       {"9223372036854775808ns", "-9223372036854775809ns", "2562048h", "106752d",
        "99999999999999999999s", "2562047h47m16.854775808s", "9223372036854775807ns1ns"}) {
    auto d = ParseDuration(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_THAT(d.status().message(), HasSubstr("out of range")) << bad;
  }
}

TEST(ParseDurationTest, RejectsGarbage) {
  for (const char* bad :
       {"",     "-",    "+",    "s",    "10",  "1.5",  ".s",    "-.s", "10x", "1hm",
        "10 s", " 10s", "10s ", "1e3s", "abc", "--1s", "1h-1m", "1S",  "1H",  "\xc2\xb5s"}) {
    auto d = ParseDuration(bad);
    EXPECT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ParseDurationTest, ErrorNamesTheInput) {
  auto d = ParseDuration("abc");
  EXPECT_THAT(d.status().message(), HasSubstr("invalid duration \"abc\""));
  auto unit = ParseDuration("10parsecs");
  EXPECT_THAT(unit.status().message(), HasSubstr("unknown unit \"parsecs\""));
  auto missing = ParseDuration("10");
  EXPECT_THAT(missing.status().message(), HasSubstr("missing unit"));
}

TEST(FormatDurationTest, WritesTheShortestForm) {
  EXPECT_EQ(FormatDuration(seconds(10)), "10s");
  EXPECT_EQ(FormatDuration(minutes(1)), "1m");
  EXPECT_EQ(FormatDuration(hours(1)), "1h");
  EXPECT_EQ(FormatDuration(hours(24)), "1d");
  EXPECT_EQ(FormatDuration(minutes(90)), "1h30m");
  EXPECT_EQ(FormatDuration(seconds(90)), "1m30s");
  EXPECT_EQ(FormatDuration(hours(25)), "1d1h");
  EXPECT_EQ(FormatDuration(hours(24) + seconds(1)), "1d1s");
  EXPECT_EQ(FormatDuration(milliseconds(60'500)), "1m0.5s");
  EXPECT_EQ(FormatDuration(milliseconds(1500)), "1.5s");
  EXPECT_EQ(FormatDuration(nanoseconds(0)), "0s");
}

TEST(FormatDurationTest, UsesOneSubSecondUnitBelowASecond) {
  EXPECT_EQ(FormatDuration(milliseconds(500)), "500ms");
  EXPECT_EQ(FormatDuration(microseconds(1500)), "1.5ms");
  EXPECT_EQ(FormatDuration(nanoseconds(1500)), "1.5us");
  EXPECT_EQ(FormatDuration(nanoseconds(7)), "7ns");
  EXPECT_EQ(FormatDuration(nanoseconds(999'999'999)), "999.999999ms");
}

TEST(FormatDurationTest, WritesNegativeDurationsWithASign) {
  EXPECT_EQ(FormatDuration(-minutes(90)), "-1h30m");
  EXPECT_EQ(FormatDuration(-milliseconds(5)), "-5ms");
  EXPECT_EQ(FormatDuration(nanoseconds::min()), "-106751d23h47m16.854775808s");
  EXPECT_EQ(FormatDuration(nanoseconds::max()), "106751d23h47m16.854775807s");
}

TEST(DurationTest, SeededRandomDurationsRoundTrip) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> any(std::numeric_limits<int64_t>::min(),
                                             std::numeric_limits<int64_t>::max());
  std::uniform_int_distribution<int64_t> small(-10'000'000'000, 10'000'000'000);
  for (int i = 0; i < 20000; ++i) {
    const nanoseconds d(i % 2 == 0 ? any(rng) : small(rng));
    const std::string text = FormatDuration(d);
    auto parsed = ParseDuration(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.status();
    ASSERT_EQ(*parsed, d) << text;
  }
}

}  // namespace
}  // namespace kubestat
