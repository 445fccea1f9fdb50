// The REST tests' cluster: the standard objects (kubestat/testing/metrics_objects.h) in the
// shared fake source.
#ifndef KUBESTAT_TESTING_AGGREGATOR_STANDARD_CLUSTER_SOURCE_H_
#define KUBESTAT_TESTING_AGGREGATOR_STANDARD_CLUSTER_SOURCE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kubestat/aggregator/query/metrics_source.h"
#include "kubestat/core/clock.h"
#include "kubestat/testing/aggregator/fake_metrics_source.h"
#include "kubestat/testing/metrics_objects.h"

namespace kubestat::aggregator::rest_testing {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

using kubestat::testing::EndTime;
using kubestat::testing::Node;
using kubestat::testing::Pod;
using kubestat::testing::Series;
using kubestat::testing::Usage;
using kubestat::testing::Window;

using testing::FakeMetricsSource;

// The cluster every REST test serves (testing::MakeStandardCluster).
inline void FillStandardCluster(FakeMetricsSource& source) {
  kubestat::testing::StandardCluster cluster = kubestat::testing::MakeStandardCluster();
  source.Set(std::move(cluster.nodes), std::move(cluster.pods));
}

}  // namespace kubestat::aggregator::rest_testing

#endif  // KUBESTAT_TESTING_AGGREGATOR_STANDARD_CLUSTER_SOURCE_H_
