#include "kubestat/scrapers/node_scrape.h"

#include <gtest/gtest.h>

#include <string>

namespace kubestat::scrapers {
namespace {

TEST(DecodeIssuesTest, CountsEveryIssueButKeepsOnlyTheFirstMessages) {
  DecodeIssues issues;
  EXPECT_TRUE(issues.empty());
  for (int i = 0; i < 20; ++i) {
    issues.Add(i % 2 == 0 ? DecodeIssueKind::kAbsurdValue : DecodeIssueKind::kBadTimestamp,
               "issue " + std::to_string(i));
  }
  EXPECT_FALSE(issues.empty());
  EXPECT_EQ(issues.Total(), 20u);
  EXPECT_EQ(issues.Count(DecodeIssueKind::kAbsurdValue), 10u);
  EXPECT_EQ(issues.Count(DecodeIssueKind::kBadTimestamp), 10u);
  EXPECT_EQ(issues.Count(DecodeIssueKind::kMissingField), 0u);
  ASSERT_EQ(issues.messages().size(), DecodeIssues::kMaxMessages);
  EXPECT_EQ(issues.messages().front(), "issue 0");
  EXPECT_EQ(issues.messages().back(), "issue 7");
  EXPECT_EQ(issues.Summary(),
            "issue 0; issue 1; issue 2; issue 3; issue 4; issue 5; issue 6; issue 7; and 12 more");
}

TEST(DecodeIssuesTest, KindNamesAreStableMetricLabels) {
  EXPECT_EQ(DecodeIssueKindName(DecodeIssueKind::kAbsurdValue), "absurd_value");
  EXPECT_EQ(DecodeIssueKindName(DecodeIssueKind::kWrongType), "wrong_type");
  EXPECT_EQ(DecodeIssueKindName(DecodeIssueKind::kBadTimestamp), "bad_timestamp");
  EXPECT_EQ(DecodeIssueKindName(DecodeIssueKind::kMissingField), "missing_field");
  EXPECT_EQ(DecodeIssueKindName(DecodeIssueKind::kDuplicate), "duplicate");
  EXPECT_EQ(DecodeIssueKindName(DecodeIssueKind::kKubeletScrapeError), "kubelet_scrape_error");
  EXPECT_EQ(static_cast<size_t>(DecodeIssueKind::kKubeletScrapeError) + 1, kDecodeIssueKindCount);
}

TEST(NodeScrapeTest, FindsPodsAndContainersByName) {
  NodeScrape scrape;
  scrape.pods.push_back(PodScrape{.name = "web", .namespace_name = "shop"});
  scrape.pods.push_back(PodScrape{.name = "web", .namespace_name = "blog"});
  scrape.pods[1].containers.push_back(ContainerScrape{.name = "app"});
  scrape.pods[1].containers.push_back(ContainerScrape{.name = "proxy"});
  EXPECT_EQ(scrape.ContainerCount(), 2u);
  EXPECT_EQ(scrape.FindPod("blog", "web"), &scrape.pods[1]);
  EXPECT_EQ(scrape.FindPod("shop", "web"), &scrape.pods[0]);
  EXPECT_EQ(scrape.FindPod("web", "shop"), nullptr);
  EXPECT_EQ(FindContainer(scrape.pods[1].containers, "proxy"), &scrape.pods[1].containers[1]);
  EXPECT_EQ(FindContainer(scrape.pods[0].containers, "app"), nullptr);
}

TEST(NodeScrapeTest, MissingValuesAreNulloptNotZero) {
  const ContainerScrape container;
  EXPECT_FALSE(container.cpu.has_value());
  EXPECT_FALSE(container.memory.has_value());
  EXPECT_FALSE(container.start_time.has_value());
  const CpuSample cpu{};
  EXPECT_FALSE(cpu.usage_core_nanoseconds.has_value());
  EXPECT_FALSE(cpu.usage_nano_cores.has_value());
  CpuSample zero{};
  zero.usage_core_nanoseconds = 0;
  EXPECT_NE(cpu, zero);
}

}  // namespace
}  // namespace kubestat::scrapers
