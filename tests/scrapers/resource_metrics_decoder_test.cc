#include "kubestat/scrapers/resource_metrics_decoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "kubestat/testing/fixtures.h"

namespace kubestat::scrapers {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// 2026-11-21T10:00:00Z.
const Timestamp kScrapeTime = Timestamp(std::chrono::seconds(1795255200));

Timestamp Millis(int64_t ms) { return Timestamp(std::chrono::milliseconds(ms)); }

NodeScrape Decode(std::string_view text) {
  absl::StatusOr<NodeScrape> scrape = DecodeResourceMetrics(text, "node-a", kScrapeTime);
  EXPECT_TRUE(scrape.ok()) << scrape.status();
  return scrape.ok() ? *std::move(scrape) : NodeScrape{};
}

NodeScrape DecodeFixture(const std::string& name) {
  return Decode(kubestat::testing::ReadFixture("metrics-resource/" + name));
}

// ---- Captured payloads ---------------------------------------------------------------------

TEST(ResourceMetricsDecoderFixtureTest, SeventyPodKindNodeDecodesEverySeries) {
  KUBESTAT_REQUIRE_FIXTURES();
  const NodeScrape scrape = DecodeFixture("metrics-server_client_test_kind_70pods.prom");
  EXPECT_EQ(scrape.format, ScrapeFormat::kResourceMetrics);
  EXPECT_EQ(scrape.node_name, "node-a");
  EXPECT_EQ(scrape.pods.size(), 70u);
  EXPECT_EQ(scrape.ContainerCount(), 70u);
  EXPECT_THAT(scrape.system_containers, IsEmpty());
  EXPECT_TRUE(scrape.issues.empty()) << scrape.issues.Summary();  // scrape_error 0

  ASSERT_TRUE(scrape.cpu.has_value());
  EXPECT_EQ(scrape.cpu->time, Millis(1633253809720));
  EXPECT_EQ(scrape.cpu->usage_core_nanoseconds, 357354910000u);
  EXPECT_EQ(scrape.cpu->usage_nano_cores, std::nullopt);
  ASSERT_TRUE(scrape.memory.has_value());
  EXPECT_EQ(scrape.memory->time, Millis(1633253809720));
  EXPECT_EQ(scrape.memory->working_set_bytes, 1616273408u);

  const PodScrape* pod = scrape.FindPod("kube-system", "kube-apiserver-e2e-control-plane");
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(pod->uid, "");
  ASSERT_TRUE(pod->cpu.has_value());
  EXPECT_EQ(pod->cpu->time, Millis(1633253804369));
  EXPECT_EQ(pod->cpu->usage_core_nanoseconds, 85267128000u);
  ASSERT_TRUE(pod->memory.has_value());
  EXPECT_EQ(pod->memory->working_set_bytes, 353476608u);
  ASSERT_EQ(pod->containers.size(), 1u);
  const ContainerScrape& container = pod->containers[0];
  EXPECT_EQ(container.name, "kube-apiserver");
  ASSERT_TRUE(container.cpu.has_value());
  EXPECT_EQ(container.cpu->time, Millis(1633253814382));
  EXPECT_EQ(container.cpu->usage_core_nanoseconds, 86500663000u);
  ASSERT_TRUE(container.memory.has_value());
  EXPECT_EQ(container.memory->time, Millis(1633253814382));
  EXPECT_EQ(container.memory->working_set_bytes, 353316864u);
  EXPECT_EQ(container.start_time, std::nullopt);  // no container_start_time_seconds here

  // Every pod got both its own series and its container's.
  for (const PodScrape& p : scrape.pods) {
    EXPECT_TRUE(p.cpu.has_value() && p.memory.has_value()) << p.name;
    ASSERT_EQ(p.containers.size(), 1u) << p.name;
    EXPECT_TRUE(p.containers[0].cpu.has_value() && p.containers[0].memory.has_value()) << p.name;
  }
}

TEST(ResourceMetricsDecoderFixtureTest, OnePodSubsetIncludingStartTime) {
  KUBESTAT_REQUIRE_FIXTURES();
  const NodeScrape scrape = DecodeFixture("metrics-server_decode_test_normal.prom");
  ASSERT_EQ(scrape.pods.size(), 1u);
  const PodScrape& pod = scrape.pods[0];
  EXPECT_EQ(pod.namespace_name, "kube-system");
  EXPECT_EQ(pod.name, "coredns-558bd4d5db-4dpjz");
  ASSERT_TRUE(pod.cpu.has_value());
  EXPECT_EQ(pod.cpu->usage_core_nanoseconds, 4678120000u);
  EXPECT_EQ(pod.cpu->time, Millis(1633253803935));
  ASSERT_TRUE(pod.memory.has_value());
  EXPECT_EQ(pod.memory->working_set_bytes, 12627968u);
  ASSERT_EQ(pod.containers.size(), 1u);
  const ContainerScrape& coredns = pod.containers[0];
  EXPECT_EQ(coredns.name, "coredns");
  ASSERT_TRUE(coredns.cpu.has_value());
  EXPECT_EQ(coredns.cpu->usage_core_nanoseconds, 4710169000u);
  EXPECT_EQ(coredns.cpu->time, Millis(1633253812125));
  ASSERT_TRUE(coredns.memory.has_value());
  EXPECT_EQ(coredns.memory->working_set_bytes, 12533760u);
  EXPECT_EQ(coredns.start_time, Timestamp(std::chrono::seconds(1633252712)));
  ASSERT_TRUE(scrape.cpu.has_value());
  EXPECT_EQ(scrape.cpu->usage_core_nanoseconds, 357354910000u);
  EXPECT_TRUE(scrape.issues.empty()) << scrape.issues.Summary();
}

TEST(ResourceMetricsDecoderFixtureTest, SwapUnderflowIsRejectedForThatSeriesOnly) {
  KUBESTAT_REQUIRE_FIXTURES();
  const NodeScrape scrape = DecodeFixture("k8s-enhancements_kep2400_swap-lines-fragment.prom");
  EXPECT_FALSE(scrape.swap.has_value());  // 1.8446743709127774e+19
  EXPECT_EQ(scrape.issues.Count(DecodeIssueKind::kAbsurdValue), 1u);
  EXPECT_EQ(scrape.issues.Total(), 1u);
  ASSERT_EQ(scrape.issues.messages().size(), 1u);
  EXPECT_THAT(scrape.issues.messages()[0], HasSubstr("node_swap_usage_bytes"));

  ASSERT_EQ(scrape.pods.size(), 2u);
  const PodScrape* test_pod = scrape.FindPod("default", "test-pod");
  ASSERT_NE(test_pod, nullptr);
  ASSERT_TRUE(test_pod->swap.has_value());
  EXPECT_EQ(test_pod->swap->usage_bytes, 34379333632u);
  EXPECT_EQ(test_pod->swap->time, Millis(1687950858784));
  ASSERT_EQ(test_pod->containers.size(), 1u);
  ASSERT_TRUE(test_pod->containers[0].swap.has_value());
  EXPECT_EQ(test_pod->containers[0].name, "c1");
  EXPECT_EQ(test_pod->containers[0].swap->usage_bytes, 34400333824u);
  EXPECT_EQ(test_pod->containers[0].swap->time, Millis(1687950863878));
  const PodScrape* coredns = scrape.FindPod("kube-system", "coredns-8f5847b64-t9gmr");
  ASSERT_NE(coredns, nullptr);
  ASSERT_TRUE(coredns->swap.has_value());
  EXPECT_EQ(coredns->swap->usage_bytes, 0u);
  ASSERT_EQ(coredns->containers.size(), 1u);
  EXPECT_EQ(coredns->containers[0].swap->usage_bytes, 0u);
}

// ---- Hand-written payloads ---------------------------------------------------------------

// The newer kubelet form: [STABLE] help, resource_scrape_error, no timestamp column.
constexpr std::string_view kStable =
    "# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the "
    "container in core-seconds\n"
    "# TYPE container_cpu_usage_seconds_total counter\n"
    "container_cpu_usage_seconds_total{container=\"app\",namespace=\"shop\",pod=\"web-1\"} "
    "12.5\n"
    "container_cpu_usage_seconds_total{container=\"sidecar\",namespace=\"shop\",pod=\"web-1\"} "
    "0.000000001\n"
    "container_memory_working_set_bytes{container=\"app\",namespace=\"shop\",pod=\"web-1\"} "
    "3.16669952e+08\n"
    "container_start_time_seconds{container=\"app\",namespace=\"shop\",pod=\"web-1\"} "
    "1.7952552005e+09\n"
    "node_cpu_usage_seconds_total 1000\n"
    "node_memory_working_set_bytes 2e9\n"
    "pod_cpu_usage_seconds_total{namespace=\"shop\",pod=\"web-1\"} 13\n"
    "pod_memory_working_set_bytes{namespace=\"shop\",pod=\"web-1\"} 316669952\n"
    "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container "
    "metrics, 0 otherwise\n"
    "# TYPE resource_scrape_error gauge\n"
    "resource_scrape_error 0\n";

TEST(ResourceMetricsDecoderTest, StableFormWithoutTimestampsUsesScrapeTime) {
  const NodeScrape scrape = Decode(kStable);
  EXPECT_TRUE(scrape.issues.empty()) << scrape.issues.Summary();
  ASSERT_TRUE(scrape.cpu.has_value());
  EXPECT_EQ(scrape.cpu->time, kScrapeTime);
  EXPECT_EQ(scrape.cpu->usage_core_nanoseconds, 1000000000000u);
  ASSERT_TRUE(scrape.memory.has_value());
  EXPECT_EQ(scrape.memory->working_set_bytes, 2000000000u);
  ASSERT_EQ(scrape.pods.size(), 1u);
  const PodScrape& pod = scrape.pods[0];
  EXPECT_EQ(pod.cpu->usage_core_nanoseconds, 13000000000u);
  EXPECT_EQ(pod.cpu->time, kScrapeTime);
  ASSERT_EQ(pod.containers.size(), 2u);
  EXPECT_EQ(pod.containers[0].name, "app");
  EXPECT_EQ(pod.containers[0].cpu->usage_core_nanoseconds, 12500000000u);
  EXPECT_EQ(pod.containers[0].memory->working_set_bytes, 316669952u);
  EXPECT_EQ(pod.containers[0].start_time,
            Timestamp(std::chrono::seconds(1795255200) + std::chrono::milliseconds(500)));
  EXPECT_EQ(pod.containers[1].name, "sidecar");
  EXPECT_EQ(pod.containers[1].cpu->usage_core_nanoseconds, 1u);
  EXPECT_FALSE(pod.containers[1].memory.has_value());
}

TEST(ResourceMetricsDecoderTest, ScrapeErrorIsReportedAndSamplesAreKept) {
  for (std::string_view line : {"scrape_error 1\n", "resource_scrape_error 1 1633253809720\n"}) {
    const std::string text = std::string("node_cpu_usage_seconds_total 2.5\n") + std::string(line);
    const NodeScrape scrape = Decode(text);
    EXPECT_EQ(scrape.issues.Count(DecodeIssueKind::kKubeletScrapeError), 1u) << line;
    ASSERT_TRUE(scrape.cpu.has_value());
    EXPECT_EQ(scrape.cpu->usage_core_nanoseconds, 2500000000u);
  }
}

TEST(ResourceMetricsDecoderTest, AbsurdValuesAreRejectedPerSeries) {
  const NodeScrape scrape = Decode(
      "container_cpu_usage_seconds_total{container=\"a\",namespace=\"n\",pod=\"p\"} -1\n"
      "container_cpu_usage_seconds_total{container=\"b\",namespace=\"n\",pod=\"p\"} NaN\n"
      "container_cpu_usage_seconds_total{container=\"c\",namespace=\"n\",pod=\"p\"} +Inf\n"
      "container_cpu_usage_seconds_total{container=\"d\",namespace=\"n\",pod=\"p\"} -Inf\n"
      "container_cpu_usage_seconds_total{container=\"e\",namespace=\"n\",pod=\"p\"} 1e10\n"
      "container_cpu_usage_seconds_total{container=\"f\",namespace=\"n\",pod=\"p\"} 1e400\n"
      "container_memory_working_set_bytes{container=\"f\",namespace=\"n\",pod=\"p\"} 1e19\n"
      "container_start_time_seconds{container=\"f\",namespace=\"n\",pod=\"p\"} -5\n"
      "container_cpu_usage_seconds_total{container=\"g\",namespace=\"n\",pod=\"p\"} +7\n");
  EXPECT_EQ(scrape.issues.Count(DecodeIssueKind::kAbsurdValue), 8u);
  ASSERT_EQ(scrape.pods.size(), 1u);
  ASSERT_EQ(scrape.pods[0].containers.size(), 7u);
  for (const ContainerScrape& c : scrape.pods[0].containers) {
    if (c.name == "g") {
      ASSERT_TRUE(c.cpu.has_value());
      EXPECT_EQ(c.cpu->usage_core_nanoseconds, 7000000000u);
    } else {
      EXPECT_FALSE(c.cpu.has_value()) << c.name;
      EXPECT_FALSE(c.memory.has_value()) << c.name;
      EXPECT_EQ(c.start_time, std::nullopt) << c.name;
    }
  }
}

TEST(ResourceMetricsDecoderTest, LabelEscapesAreUnescaped) {
  const NodeScrape scrape = Decode(
      "container_cpu_usage_seconds_total{container=\"a\\\"b\",namespace=\"n\\\\s\","
      "pod=\"p\\nq\",extra=\"}{,\\\"\"} 1\n"
      "pod_cpu_usage_seconds_total{pod=\"p\\nq\",namespace=\"n\\\\s\"} 2\n");
  ASSERT_EQ(scrape.pods.size(), 1u);
  EXPECT_EQ(scrape.pods[0].namespace_name, "n\\s");
  EXPECT_EQ(scrape.pods[0].name, "p\nq");
  ASSERT_EQ(scrape.pods[0].containers.size(), 1u);
  EXPECT_EQ(scrape.pods[0].containers[0].name, "a\"b");
  ASSERT_TRUE(scrape.pods[0].cpu.has_value());
  EXPECT_EQ(scrape.pods[0].cpu->usage_core_nanoseconds, 2000000000u);
  EXPECT_TRUE(scrape.issues.empty());
}

TEST(ResourceMetricsDecoderTest, CrlfNoTrailingNewlineAndEofMarker) {
  const NodeScrape crlf = Decode(
      "# TYPE node_cpu_usage_seconds_total counter\r\n"
      "node_cpu_usage_seconds_total 1.5 1633253809720\r\n"
      "\r\n"
      "node_memory_working_set_bytes 42");
  ASSERT_TRUE(crlf.cpu.has_value());
  EXPECT_EQ(crlf.cpu->usage_core_nanoseconds, 1500000000u);
  EXPECT_EQ(crlf.cpu->time, Millis(1633253809720));
  ASSERT_TRUE(crlf.memory.has_value());
  EXPECT_EQ(crlf.memory->working_set_bytes, 42u);
  EXPECT_EQ(crlf.memory->time, kScrapeTime);

  const NodeScrape eof =
      Decode("node_cpu_usage_seconds_total 3\n# EOF\nthis is not { exposition syntax\n");
  ASSERT_TRUE(eof.cpu.has_value());
  EXPECT_EQ(eof.cpu->usage_core_nanoseconds, 3000000000u);
}

TEST(ResourceMetricsDecoderTest, UnknownMetricsAndCommentsAreSkipped) {
  const NodeScrape scrape = Decode(
      "# random comment\n"
      "   \n"
      "go_goroutines 12\n"
      "container_fs_usage_bytes{container=\"a\",namespace=\"n\",pod=\"p\"} 10\n"
      "  node_cpu_usage_seconds_total   4   \n");
  EXPECT_THAT(scrape.pods, IsEmpty());
  ASSERT_TRUE(scrape.cpu.has_value());
  EXPECT_EQ(scrape.cpu->usage_core_nanoseconds, 4000000000u);
  EXPECT_TRUE(scrape.issues.empty());
}

TEST(ResourceMetricsDecoderTest, MissingLabelsAndDuplicatesAreCounted) {
  const NodeScrape scrape = Decode(
      "container_cpu_usage_seconds_total{namespace=\"n\",pod=\"p\"} 1\n"
      "container_cpu_usage_seconds_total{container=\"c\",pod=\"p\"} 1\n"
      "pod_cpu_usage_seconds_total{namespace=\"n\",pod=\"\"} 1\n"
      "pod_cpu_usage_seconds_total{namespace=\"n\",pod=\"p\"} 1\n"
      "pod_cpu_usage_seconds_total{namespace=\"n\",pod=\"p\"} 2\n"
      "node_memory_working_set_bytes 5\n"
      "node_memory_working_set_bytes 6\n");
  EXPECT_EQ(scrape.issues.Count(DecodeIssueKind::kMissingField), 3u);
  EXPECT_EQ(scrape.issues.Count(DecodeIssueKind::kDuplicate), 2u);
  ASSERT_EQ(scrape.pods.size(), 1u);
  EXPECT_EQ(scrape.pods[0].cpu->usage_core_nanoseconds, 1000000000u);
  EXPECT_EQ(scrape.memory->working_set_bytes, 5u);
}

TEST(ResourceMetricsDecoderTest, TimestampOutOfRangeDropsTheSeries) {
  const NodeScrape scrape = Decode(
      "node_cpu_usage_seconds_total 1 99999999999999999\n"
      "node_memory_working_set_bytes 1 -99999999999999999999999\n");
  EXPECT_FALSE(scrape.cpu.has_value());
  EXPECT_FALSE(scrape.memory.has_value());
  EXPECT_EQ(scrape.issues.Count(DecodeIssueKind::kBadTimestamp), 2u);
}

TEST(ResourceMetricsDecoderTest, SyntaxErrorsAreInvalidArgumentWithTheLineNumber) {
  for (std::string_view text : {
           "node_cpu_usage_seconds_total\n",
           "node_cpu_usage_seconds_total abc\n",
           "node_cpu_usage_seconds_total 1 2 3\n",
           "node_cpu_usage_seconds_total 1 1.5\n",
           "pod_cpu_usage_seconds_total{namespace=\"n\",pod=\"p} 1\n",
           "pod_cpu_usage_seconds_total{namespace=\"n\",pod=\"p\" 1\n",
           "pod_cpu_usage_seconds_total{namespace=n} 1\n",
           "pod_cpu_usage_seconds_total{namespace\"n\"} 1\n",
           "pod_cpu_usage_seconds_total{1a=\"n\"} 1\n",
           "pod_cpu_usage_seconds_total{namespace=\"n\"pod=\"p\"} 1\n",
           "{namespace=\"n\"} 1\n",
           "<html><body>502 Bad Gateway</body></html>\n",
           "node_cpu_usage_seconds_total ++1\n",
           "pod_cpu_usage_seconds_total{namespace=\"n\\",
       }) {
    const std::string with_prefix = "node_memory_working_set_bytes 5\n" + std::string(text);
    absl::StatusOr<NodeScrape> scrape = DecodeResourceMetrics(with_prefix, "node-a", kScrapeTime);
    ASSERT_FALSE(scrape.ok()) << text;
    EXPECT_EQ(scrape.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(scrape.status().message()), HasSubstr("line 2")) << text;
  }
}

TEST(ResourceMetricsDecoderTest, EmptyBodyGivesAnEmptyScrape) {
  const NodeScrape scrape = Decode("");
  EXPECT_EQ(scrape.node_name, "node-a");
  EXPECT_FALSE(scrape.cpu.has_value());
  EXPECT_FALSE(scrape.memory.has_value());
  EXPECT_THAT(scrape.pods, IsEmpty());
  EXPECT_TRUE(scrape.issues.empty());
}

TEST(ResourceMetricsDecoderTest, ManyPodsKeepFirstSeenOrder) {
  std::string text;
  for (int i = 0; i < 300; ++i) {
    text += "pod_memory_working_set_bytes{namespace=\"ns" + std::to_string(i % 7) + "\",pod=\"p" +
            std::to_string(i) + "\"} " + std::to_string(i) + "\n";
  }
  for (int i = 299; i >= 0; --i) {
    text += "container_memory_working_set_bytes{container=\"c\",namespace=\"ns" +
            std::to_string(i % 7) + "\",pod=\"p" + std::to_string(i) + "\"} " +
            std::to_string(i * 2) + "\n";
  }
  const NodeScrape scrape = Decode(text);
  ASSERT_EQ(scrape.pods.size(), 300u);
  for (int i = 0; i < 300; ++i) {
    const PodScrape& pod = scrape.pods[i];
    EXPECT_EQ(pod.name, "p" + std::to_string(i));
    EXPECT_EQ(pod.memory->working_set_bytes, static_cast<uint64_t>(i));
    ASSERT_EQ(pod.containers.size(), 1u);
    EXPECT_EQ(pod.containers[0].memory->working_set_bytes, static_cast<uint64_t>(i * 2));
  }
  EXPECT_TRUE(scrape.issues.empty());
}

}  // namespace
}  // namespace kubestat::scrapers
