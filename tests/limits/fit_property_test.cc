// For thousands of random namespaces (one to three valid LimitRanges of Container and Pod
// items) and random usage histories of one to three containers: the recommendation, written
// into a pod spec, is admitted by LimitRanger (Admit), unless the LimitRanges contradict each
// other and it says so; and no request is below the container's p50 and no memory limit
// below its observed max unless a max moved it there, named in boundBy.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "kubestat/limits/fit.h"
#include "kubestat/limits/limit_range.h"
#include "kubestat/limits/recommend.h"

namespace kubestat::limits {
namespace {

constexpr int kCases = 5000;

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  int Between(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  // Log-uniform over [lo, hi].
  int64_t Amount(double lo, double hi) {
    return static_cast<int64_t>(
        std::exp(std::uniform_real_distribution<double>(std::log(lo), std::log(hi))(rng_)));
  }
  double Noise() { return std::lognormal_distribution<double>(0, 0.5)(rng_); }

  // A LimitRangeItem as the API server admits and stores it.
  LimitRangeItem Item() {
    LimitRangeItem item;
    item.type = Chance(0.7) ? LimitType::kContainer : LimitType::kPod;
    for (Resource r : kResources) {
      const double lo = r == Resource::kCpu ? 10 : 1 << 20;
      const double hi = r == Resource::kCpu ? 8000 : 16.0 * (1 << 30);
      std::vector<int64_t> v = {Amount(lo, hi), Amount(lo, hi), Amount(lo, hi), Amount(lo, hi)};
      std::sort(v.begin(), v.end());
      if (Chance(0.4)) item.min[r] = v[0];
      if (Chance(0.4)) item.max[r] = v[3];
      if (item.type == LimitType::kContainer) {
        if (Chance(0.3)) item.default_request[r] = v[1];
        if (Chance(0.3)) item.default_limit[r] = v[2];
      }
      if (Chance(0.3)) {
        int64_t ratio = Between(1000, 10000);
        if (item.min[r] && item.max[r]) {
          ratio =
              std::min<int64_t>(ratio, *item.max[r] * 1000 / std::max<int64_t>(1, *item.min[r]));
        }
        item.max_limit_request_ratio[r] = std::max<int64_t>(1000, ratio);
      }
    }
    return WithApiDefaults(item);
  }

  std::vector<LimitRange> Namespace() {
    std::vector<LimitRange> lrs;
    const int count = Between(1, 3);
    for (int i = 0; i < count; ++i) {
      LimitRange lr{"lr-" + std::to_string(i), {}};
      const int items = Between(1, 3);
      for (int j = 0; j < items; ++j) lr.items.push_back(Item());
      lrs.push_back(std::move(lr));
    }
    return lrs;
  }

  // A usage history: a base level, noise, and now and then a spike.
  std::vector<double> History(Resource r) {
    const double base = r == Resource::kCpu ? Amount(1, 4000) : Amount(1 << 20, 8.0 * (1 << 30));
    std::vector<double> samples(Between(1, 400));
    for (double& s : samples) s = base * Noise() * (Chance(0.02) ? 5 : 1);
    std::sort(samples.begin(), samples.end());
    return samples;
  }

 private:
  std::mt19937 rng_;
};

// Nearest rank on sorted samples.
double Percentile(const std::vector<double>& sorted, double p) {
  const size_t rank = static_cast<size_t>(std::ceil(p / 100 * sorted.size()));
  return sorted[std::max<size_t>(rank, 1) - 1];
}

bool MovedByAMax(const FittedValue& v) {
  return std::any_of(v.bound_by.begin(), v.bound_by.end(),
                     [](const BoundBy& b) { return b.constraint == Constraint::kMax; });
}

TEST(FitPropertyTest, RecommendationsAreAdmittedAndNeverBelowUsageUnlessAMaxSaysSo) {
  Generator gen(20261125);
  const RecommendOptions options;
  int admitted = 0;
  int contradictions = 0;
  int moved = 0;
  int lowered_by_max = 0;
  for (int i = 0; i < kCases; ++i) {
    const std::vector<LimitRange> lrs = gen.Namespace();
    for (const LimitRange& lr : lrs) ASSERT_TRUE(Validate(lr).ok()) << Validate(lr);
    struct Usage {
      double p50[2];
      double max[2];
    };
    std::vector<ContainerWant> wants;
    std::vector<Usage> usage;
    const int containers = gen.Between(1, 3);
    for (int c = 0; c < containers; ++c) {
      const std::vector<double> cpu = gen.History(Resource::kCpu);
      const std::vector<double> memory = gen.History(Resource::kMemory);
      usage.push_back({{Percentile(cpu, 50), Percentile(memory, 50)}, {cpu.back(), memory.back()}});
      wants.push_back(
          WantFor("c" + std::to_string(c),
                  {Percentile(cpu, 50), Percentile(cpu, options.cpu_percentile), cpu.back()},
                  {Percentile(memory, 50), 0, memory.back()}, options));
    }
    const FittedPod pod = Fit(lrs, wants);
    if (!pod.conflict.empty()) {
      // Only a contradiction of the LimitRanges themselves, named, may leave a pod refused.
      ASSERT_EQ(pod.conflict.rfind("no pod is admitted in this namespace: ", 0), 0) << pod.conflict;
      ++contradictions;
      continue;
    }
    const std::vector<Violation> refused = Admit(lrs, AsPodSpec(pod));
    ASSERT_TRUE(refused.empty()) << "case " << i << ": " << refused.front().message;
    ++admitted;
    for (int c = 0; c < containers; ++c) {
      const FittedContainer& fitted = pod.containers[c];
      for (Resource r : kResources) {
        const size_t k = static_cast<size_t>(r);
        const FittedResource& v = fitted[r];
        ASSERT_LE(v.request.value, v.limit.value);
        if (!v.request.bound_by.empty() || !v.limit.bound_by.empty()) ++moved;
        if (v.request.value < usage[c].p50[k]) {
          ASSERT_TRUE(MovedByAMax(v.request)) << "case " << i << " request below p50";
          ++lowered_by_max;
        }
        if (r == Resource::kMemory && v.limit.value < usage[c].max[k]) {
          ASSERT_TRUE(MovedByAMax(v.limit)) << "case " << i << " memory limit below max";
          ++lowered_by_max;
        }
      }
    }
  }
  // The generator reaches every branch: mostly admissible namespaces, some contradictory,
  // values moved, and some moved below usage by a max.
  EXPECT_GT(admitted, kCases / 2);
  EXPECT_GT(contradictions, 0);
  EXPECT_GT(moved, kCases / 4);
  EXPECT_GT(lowered_by_max, 0);
  std::cout << "admitted " << admitted << ", contradictions " << contradictions << ", moved "
            << moved << ", below usage by a max " << lowered_by_max << "\n";
}

}  // namespace
}  // namespace kubestat::limits
