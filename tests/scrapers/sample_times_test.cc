#include "kubestat/scrapers/sample_times.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "kubestat/core/time.h"
#include "kubestat/scrapers/fetch_error.h"
#include "kubestat/scrapers/resource_metrics_decoder.h"
#include "kubestat/scrapers/summary_decoder.h"

namespace kubestat::scrapers {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;

// 2026-11-21T10:00:00Z.
const Timestamp kScrapeTime = Timestamp(seconds(1795255200));

ContainerScrape Container(std::string name, Timestamp t) {
  ContainerScrape c;
  c.name = std::move(name);
  c.start_time = Timestamp{};  // start times are not readings: never checked
  c.cpu = CpuSample{t, 100, std::nullopt};
  c.memory = MemorySample{t, 200};
  return c;
}

// A node with a system container and a pod of two containers, every reading taken at `t`.
NodeScrape ScrapeAt(Timestamp t) {
  NodeScrape s;
  s.node_name = "node-a";
  s.start_time = Timestamp{};
  s.cpu = CpuSample{t, 1000, std::nullopt};
  s.memory = MemorySample{t, 894312448};
  s.swap = SwapSample{t, 0};
  s.system_containers.push_back(Container("kubelet", t));
  PodScrape pod;
  pod.name = "web-1";
  pod.namespace_name = "shop";
  pod.cpu = CpuSample{t, 300, std::nullopt};
  pod.memory = MemorySample{t, 400};
  pod.containers.push_back(Container("app", t));
  pod.containers.push_back(Container("sidecar", t));
  s.pods.push_back(std::move(pod));
  return s;
}

TEST(SampleTimesTest, ReadingsWithinTheLimitsPassEndsIncluded) {
  const SampleTimeLimits limits;  // 10m either way
  EXPECT_TRUE(CheckSampleTimes(ScrapeAt(kScrapeTime), kScrapeTime, limits).ok());
  EXPECT_TRUE(CheckSampleTimes(ScrapeAt(kScrapeTime - seconds(15)), kScrapeTime, limits).ok());
  EXPECT_TRUE(CheckSampleTimes(ScrapeAt(kScrapeTime - minutes(10)), kScrapeTime, limits).ok());
  EXPECT_TRUE(CheckSampleTimes(ScrapeAt(kScrapeTime + minutes(10)), kScrapeTime, limits).ok());
  // Without any reading there is nothing to check.
  NodeScrape empty;
  empty.node_name = "node-a";
  EXPECT_TRUE(CheckSampleTimes(empty, kScrapeTime, limits).ok());
}

TEST(SampleTimesTest, TimeZeroIsABadTimestampNamingTheReading) {
  const absl::Status s = CheckSampleTimes(ScrapeAt(Timestamp{}), kScrapeTime, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FailureReason(s), "bad_timestamp");
  EXPECT_EQ(FailureReason(s), kBadTimestampReason);
  EXPECT_EQ(s.message(),
            "node \"node-a\": 11 of 11 readings are stamped too far from the scrape at "
            "2026-11-21T10:00:00Z; the first: node cpu at 1970-01-01T00:00:00Z (the Unix epoch), "
            "more than --max-sample-age=10m before it");
}

TEST(SampleTimesTest, GoZeroTimeAndStaleAndFarAheadReadingsAreBadTimestamps) {
  const SampleTimeLimits limits;
  for (const Timestamp t : {kZeroTime, kScrapeTime - minutes(10) - seconds(1),
                            kScrapeTime - std::chrono::hours(24 * 365),
                            kScrapeTime + minutes(10) + std::chrono::nanoseconds(1),
                            Timestamp(std::chrono::hours(24 * 365 * 100))}) {
    const absl::Status s = CheckSampleTimes(ScrapeAt(t), kScrapeTime, limits);
    EXPECT_EQ(FailureReason(s), "bad_timestamp") << FormatRfc3339Nano(t) << ": " << s;
  }
  EXPECT_THAT(std::string(CheckSampleTimes(ScrapeAt(kZeroTime), kScrapeTime, limits).message()),
              HasSubstr("node cpu at 0001-01-01T00:00:00Z, more than --max-sample-age=10m"));
  EXPECT_THAT(
      std::string(
          CheckSampleTimes(ScrapeAt(kScrapeTime + minutes(11)), kScrapeTime, limits).message()),
      HasSubstr("more than --max-sample-ahead=10m after it"));
}

TEST(SampleTimesTest, OneBadReadingAnywhereFailsTheScrapeAndIsNamed) {
  const SampleTimeLimits limits;
  NodeScrape s = ScrapeAt(kScrapeTime);
  s.pods[0].containers[1].memory->time = Timestamp{};
  absl::Status status = CheckSampleTimes(s, kScrapeTime, limits);
  EXPECT_EQ(FailureReason(status), "bad_timestamp");
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("1 of 11 readings are stamped too far from the scrape at "
                        "2026-11-21T10:00:00Z; the first: container shop/web-1/sidecar memory at "
                        "1970-01-01T00:00:00Z"));

  s = ScrapeAt(kScrapeTime);
  s.system_containers[0].cpu->time = kScrapeTime - minutes(30);
  EXPECT_THAT(std::string(CheckSampleTimes(s, kScrapeTime, limits).message()),
              HasSubstr("the first: system container \"kubelet\" cpu at 2026-11-21T09:30:00Z"));

  s = ScrapeAt(kScrapeTime);
  s.pods[0].memory->time = kScrapeTime + minutes(30);
  EXPECT_THAT(std::string(CheckSampleTimes(s, kScrapeTime, limits).message()),
              HasSubstr("the first: pod shop/web-1 memory at 2026-11-21T10:30:00Z"));

  s = ScrapeAt(kScrapeTime);
  s.swap->time = Timestamp{};
  EXPECT_THAT(std::string(CheckSampleTimes(s, kScrapeTime, limits).message()),
              HasSubstr("the first: node swap at"));
}

TEST(SampleTimesTest, LimitsAreTheirOptions) {
  SampleTimeLimits limits;
  limits.max_age = seconds(30);
  limits.max_ahead = seconds(5);
  EXPECT_TRUE(CheckSampleTimes(ScrapeAt(kScrapeTime - seconds(30)), kScrapeTime, limits).ok());
  EXPECT_FALSE(CheckSampleTimes(ScrapeAt(kScrapeTime - seconds(31)), kScrapeTime, limits).ok());
  EXPECT_TRUE(CheckSampleTimes(ScrapeAt(kScrapeTime + seconds(5)), kScrapeTime, limits).ok());
  EXPECT_FALSE(CheckSampleTimes(ScrapeAt(kScrapeTime + seconds(6)), kScrapeTime, limits).ok());
}

TEST(SampleTimesTest, ValidateNamesTheFlag) {
  SampleTimeLimits limits;
  EXPECT_TRUE(limits.Validate().ok());
  limits.max_age = Duration::zero();
  EXPECT_EQ(limits.Validate().message(), "--max-sample-age: must be positive");
  limits = {};
  limits.max_ahead = -seconds(1);
  EXPECT_EQ(limits.Validate().message(), "--max-sample-ahead: must be positive");
}

// A /metrics/resource body whose samples carry the timestamp column `millis`.
std::string ResourceMetricsStamped(const std::string& millis) {
  const std::string ts = " " + millis + "\n";
  return "container_cpu_usage_seconds_total{container=\"app\",namespace=\"shop\",pod=\"web-1\"} "
         "12.5" +
         ts +
         "container_memory_working_set_bytes{container=\"app\",namespace=\"shop\",pod=\"web-1\"} "
         "3.16669952e+08" +
         ts + "node_cpu_usage_seconds_total 1000" + ts +
         "node_memory_working_set_bytes 8.94312448e+08" + ts +
         "pod_cpu_usage_seconds_total{namespace=\"shop\",pod=\"web-1\"} 13" + ts +
         "pod_memory_working_set_bytes{namespace=\"shop\",pod=\"web-1\"} 316669952" + ts +
         "resource_scrape_error 0\n";
}

// The decoders keep a reading stamped 0 as the epoch (they have no notion of the scrape's
// time); the check is what refuses it.
TEST(SampleTimesTest, ResourceMetricsWithTimestampZeroDecodeToTheEpochAndAreRefused) {
  absl::StatusOr<NodeScrape> scrape =
      DecodeResourceMetrics(ResourceMetricsStamped("0"), "node-a", kScrapeTime);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_TRUE(scrape->issues.empty()) << scrape->issues.Summary();
  ASSERT_TRUE(scrape->memory.has_value());
  EXPECT_EQ(scrape->memory->time, Timestamp{});
  EXPECT_EQ(scrape->memory->working_set_bytes, 894312448u);
  const absl::Status s = CheckSampleTimes(*scrape, kScrapeTime, {});
  EXPECT_EQ(FailureReason(s), "bad_timestamp");
  EXPECT_THAT(std::string(s.message()), HasSubstr("6 of 6 readings"));

  // The same payload stamped a second before the scrape passes.
  absl::StatusOr<NodeScrape> fresh =
      DecodeResourceMetrics(ResourceMetricsStamped("1795255199000"), "node-a", kScrapeTime);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(fresh->memory->time, kScrapeTime - seconds(1));
  EXPECT_TRUE(CheckSampleTimes(*fresh, kScrapeTime, {}).ok());
}

TEST(SampleTimesTest, SummaryStampedAtTheEpochDecodesAndIsRefused) {
  constexpr std::string_view kEpoch = R"({
    "node": {"nodeName": "node-a", "startTime": "2026-11-21T09:00:00Z",
             "cpu": {"time": "1970-01-01T00:00:00Z", "usageCoreNanoSeconds": 7},
             "memory": {"time": "1970-01-01T00:00:00Z", "workingSetBytes": 894312448}},
    "pods": []})";
  absl::StatusOr<NodeScrape> scrape = DecodeSummary(kEpoch);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_TRUE(scrape->issues.empty()) << scrape->issues.Summary();
  ASSERT_TRUE(scrape->memory.has_value());
  EXPECT_EQ(scrape->memory->time, Timestamp{});
  EXPECT_EQ(FailureReason(CheckSampleTimes(*scrape, kScrapeTime, {})), "bad_timestamp");
}

}  // namespace
}  // namespace kubestat::scrapers
