#include "kubestat/aggregator/self_metrics.h"

#include <gtest/gtest.h>

#include <string>

#include "prometheus/registry.h"

namespace kubestat::aggregator {
namespace {

// The value of the unlabelled counter `name` in the registry, or -1 when it is absent.
double CounterValue(prometheus::Registry& registry, const std::string& name) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != name || family.metric.empty()) continue;
    return family.metric[0].counter.value;
  }
  return -1;
}

TEST(DiscoverySelfMetricsTest, CountersFollowTheGrowthOfDiscoveryStats) {
  prometheus::Registry registry;
  DiscoverySelfMetrics metrics(registry);
  discovery::DiscoveryStats stats;
  stats.lists = 3;
  stats.watches = 3;
  stats.events = 40;
  metrics.Update(stats);
  EXPECT_EQ(CounterValue(registry, "kubestat_discovery_lists_total"), 3);
  EXPECT_EQ(CounterValue(registry, "kubestat_discovery_relists_after_gone_total"), 0);

  // A watch answered 410 and the relist that follows it.
  stats.relists_after_gone = 1;
  stats.lists = 4;
  stats.watches = 5;
  stats.errors = 2;
  stats.bad_quantities = 1;
  metrics.Update(stats);
  metrics.Update(stats);  // no growth, no change
  EXPECT_EQ(CounterValue(registry, "kubestat_discovery_lists_total"), 4);
  EXPECT_EQ(CounterValue(registry, "kubestat_discovery_relists_after_gone_total"), 1);
  EXPECT_EQ(CounterValue(registry, "kubestat_discovery_watches_total"), 5);
  EXPECT_EQ(CounterValue(registry, "kubestat_discovery_events_total"), 40);
  EXPECT_EQ(CounterValue(registry, "kubestat_discovery_errors_total"), 2);
  EXPECT_EQ(CounterValue(registry, "kubestat_discovery_bad_quantities_total"), 1);
}

}  // namespace
}  // namespace kubestat::aggregator
