#include "kubestat/core/flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kubestat {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct AggregatorOptions {
  std::string address = "127.0.0.1";
  int64_t port = 8443;
  double ratio = 0.5;
  bool tls = true;
  bool verbose = false;
  Duration metric_resolution = seconds(10);
  std::vector<std::string> windows = {"10s", "1m"};
};

class FlagSetTest : public ::testing::Test {
 protected:
  FlagSetTest() : flags_("kubestat-aggregator", "Aggregates kubelet metrics into windows.") {
    flags_.AddString("address", &options_.address, "Address to listen on.");
    flags_.AddInt64("port", &options_.port, "Port to listen on.");
    flags_.AddDouble("ratio", &options_.ratio, "A ratio.");
    flags_.AddBool("tls", &options_.tls, "Serve TLS.");
    flags_.AddBool("verbose", &options_.verbose, "Log more.");
    flags_.AddDuration("metric-resolution", &options_.metric_resolution, "How often to scrape.");
    flags_.AddStringList("windows", &options_.windows, "Windows to keep.");
  }

  absl::StatusOr<ParsedFlags> Parse(std::vector<std::string_view> args) {
    return flags_.Parse(std::span<const std::string_view>(args));
  }

  AggregatorOptions options_;
  FlagSet flags_;
};

TEST_F(FlagSetTest, NoArgumentsKeepsDefaults) {
  auto parsed = Parse({});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(parsed->help_requested);
  EXPECT_THAT(parsed->positional, IsEmpty());
  EXPECT_EQ(options_.port, 8443);
  EXPECT_EQ(options_.metric_resolution, seconds(10));
  EXPECT_THAT(options_.windows, ElementsAre("10s", "1m"));
}

TEST_F(FlagSetTest, AcceptsEqualsAndSeparateValues) {
  auto parsed = Parse(
      {"--address=0.0.0.0", "--port", "9000", "--ratio=0.25", "--metric-resolution", "1m30s"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(options_.address, "0.0.0.0");
  EXPECT_EQ(options_.port, 9000);
  EXPECT_EQ(options_.ratio, 0.25);
  EXPECT_EQ(options_.metric_resolution, seconds(90));
}

TEST_F(FlagSetTest, ValuesMayContainEqualsSignsAndBeEmpty) {
  ASSERT_TRUE(Parse({"--address=a=b"}).ok());
  EXPECT_EQ(options_.address, "a=b");
  ASSERT_TRUE(Parse({"--address="}).ok());
  EXPECT_EQ(options_.address, "");
  ASSERT_TRUE(Parse({"--port", "-5"}).ok());  // a separate value may start with a dash
  EXPECT_EQ(options_.port, -5);
}

TEST_F(FlagSetTest, BoolFormsSetAndClear) {
  ASSERT_TRUE(Parse({"--verbose"}).ok());
  EXPECT_TRUE(options_.verbose);
  ASSERT_TRUE(Parse({"--no-verbose"}).ok());
  EXPECT_FALSE(options_.verbose);
  ASSERT_TRUE(Parse({"--tls=false"}).ok());
  EXPECT_FALSE(options_.tls);
  ASSERT_TRUE(Parse({"--tls=TRUE"}).ok());
  EXPECT_TRUE(options_.tls);
  ASSERT_TRUE(Parse({"--tls=0"}).ok());
  EXPECT_FALSE(options_.tls);
}

TEST_F(FlagSetTest, BoolWithoutEqualsDoesNotConsumeTheNextArgument) {
  auto parsed = Parse({"--verbose", "false"});
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(options_.verbose);
  EXPECT_THAT(parsed->positional, ElementsAre("false"));
}

TEST_F(FlagSetTest, LastValueOfARepeatedFlagWins) {
  ASSERT_TRUE(Parse({"--port=1", "--port=2"}).ok());
  EXPECT_EQ(options_.port, 2);
}

TEST_F(FlagSetTest, StringListSplitsOnCommasReplacingThenAppending) {
  ASSERT_TRUE(Parse({"--windows=1h,1d", "--windows", "7d"}).ok());
  EXPECT_THAT(options_.windows, ElementsAre("1h", "1d", "7d"));
}

TEST_F(FlagSetTest, EmptyStringListClearsTheDefault) {
  ASSERT_TRUE(Parse({"--windows="}).ok());
  EXPECT_THAT(options_.windows, IsEmpty());
}

TEST_F(FlagSetTest, PositionalArgumentsAndDoubleDash) {
  auto parsed = Parse({"a", "--port=1", "b", "--", "--port=2", "-h"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(parsed->help_requested);
  EXPECT_THAT(parsed->positional, ElementsAre("a", "b", "--port=2", "-h"));
  EXPECT_EQ(options_.port, 1);
}

TEST_F(FlagSetTest, HelpIsReportedAndWinsOverErrors) {
  for (std::string_view help : {"--help", "-h"}) {
    auto parsed = Parse({"--bogus", std::string_view(help)});
    ASSERT_TRUE(parsed.ok()) << help;
    EXPECT_TRUE(parsed->help_requested) << help;
  }
}

TEST_F(FlagSetTest, UnknownFlagIsAnError) {
  auto parsed = Parse({"--metric-resolutoin=10s"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), "unknown flag --metric-resolutoin");
  EXPECT_THAT(Parse({"-port=1"}).status().message(), HasSubstr("unknown flag \"-port=1\""));
  EXPECT_THAT(Parse({"--no-port"}).status().message(), HasSubstr("unknown flag --no-port"));
}

TEST_F(FlagSetTest, MissingValueNamesTheFlag) {
  auto parsed = Parse({"--port"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(), "--port: missing value");
}

TEST_F(FlagSetTest, BadValuesNameTheFlagAndTheValue) {
  EXPECT_EQ(Parse({"--metric-resolution=abc"}).status().message(),
            "--metric-resolution: invalid duration \"abc\": expected a number");
  EXPECT_EQ(Parse({"--port=12x"}).status().message(), "--port: invalid int64 \"12x\"");
  EXPECT_EQ(Parse({"--port="}).status().message(), "--port: invalid int64 \"\"");
  EXPECT_EQ(Parse({"--port=99999999999999999999"}).status().message(),
            "--port: int64 out of range \"99999999999999999999\"");
  EXPECT_EQ(Parse({"--ratio=nan"}).status().message(), "--ratio: invalid number \"nan\"");
  EXPECT_EQ(Parse({"--ratio=1.5.2"}).status().message(), "--ratio: invalid number \"1.5.2\"");
  EXPECT_EQ(Parse({"--tls=maybe"}).status().message(), "--tls: invalid bool \"maybe\"");
  EXPECT_EQ(Parse({"--no-tls=true"}).status().message(), "--no-tls: takes no value");
}

TEST_F(FlagSetTest, ParsesArgvSkippingTheProgramPath) {
  const char* argv[] = {"/usr/bin/kubestat-aggregator", "--port=7", "--verbose"};
  auto parsed = flags_.Parse(3, argv);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(options_.port, 7);
  EXPECT_TRUE(options_.verbose);
}

TEST_F(FlagSetTest, UsageListsEveryFlagSortedWithTypeDefaultAndHelp) {
  EXPECT_EQ(flags_.Usage(),
            "Usage: kubestat-aggregator [flags]\n"
            "\n"
            "Aggregates kubelet metrics into windows.\n"
            "\n"
            "Flags:\n"
            "  -h, --help\n"
            "        Show this help and exit.\n"
            "  --address string\n"
            "        Address to listen on. (default \"127.0.0.1\")\n"
            "  --metric-resolution duration\n"
            "        How often to scrape. (default 10s)\n"
            "  --port int64\n"
            "        Port to listen on. (default 8443)\n"
            "  --ratio double\n"
            "        A ratio. (default 0.5)\n"
            "  --tls bool\n"
            "        Serve TLS. (default true) Negate with --no-tls.\n"
            "  --verbose bool\n"
            "        Log more. (default false) Negate with --no-verbose.\n"
            "  --windows strings\n"
            "        Windows to keep. (default \"10s,1m\")\n");
}

TEST(FlagSetUsageTest, DefaultsAreThoseAtRegistrationAndHelpMayHaveSeveralLines) {
  std::string name;
  Duration d = minutes(90);
  FlagSet flags("tool", "");
  flags.AddString("name", &name, "First line.\nSecond line.");
  flags.AddDuration("d", &d, "");
  name = "changed later";
  EXPECT_EQ(flags.Usage(),
            "Usage: tool [flags]\n"
            "\n"
            "Flags:\n"
            "  -h, --help\n"
            "        Show this help and exit.\n"
            "  --d duration\n"
            "        (default 1h30m)\n"
            "  --name string\n"
            "        First line.\n"
            "        Second line. (default \"\")\n");
}

}  // namespace
}  // namespace kubestat
