// Test doubles for the window engine: an in-memory SampleSource that keeps every sample
// (what the store provides in production), an exact brute-force reference, and seeded
// workload shapes.
#ifndef KUBESTAT_TESTS_WINDOWS_IN_MEMORY_SAMPLE_SOURCE_H_
#define KUBESTAT_TESTS_WINDOWS_IN_MEMORY_SAMPLE_SOURCE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "kubestat/windows/window_engine.h"
#include "kubestat/windows/window_stats.h"

namespace kubestat::windows::testing {

class InMemorySampleSource : public SampleSource {
 public:
  void Append(const SeriesKey& key, Timestamp time, uint64_t value) {
    samples_[key].push_back({time, value});
  }
  const std::vector<Sample>& SamplesOf(const SeriesKey& key) { return samples_[key]; }

  absl::Status ReadSamples(const SeriesKey& key, Timestamp after, Timestamp through,
                           std::vector<Sample>* out) override {
    ++reads_;
    if (fail_next_) {
      fail_next_ = false;
      return absl::UnavailableError("injected read failure");
    }
    const std::vector<Sample>& all = samples_[key];
    auto first = std::upper_bound(all.begin(), all.end(), after,
                                  [](Timestamp t, const Sample& s) { return t < s.time; });
    for (auto it = first; it != all.end() && it->time <= through; ++it) {
      out->push_back(*it);
      ++samples_read_;
    }
    return absl::OkStatus();
  }

  void FailNextRead() { fail_next_ = true; }
  uint64_t reads() const { return reads_; }
  uint64_t samples_read() const { return samples_read_; }
  void ResetCounters() { reads_ = samples_read_ = 0; }

 private:
  std::map<SeriesKey, std::vector<Sample>> samples_;
  bool fail_next_ = false;
  uint64_t reads_ = 0;
  uint64_t samples_read_ = 0;
};

// Ingests into the engine and, when accepted, stores the sample as the pipeline would.
inline absl::Status IngestAndStore(WindowEngine& engine, InMemorySampleSource& source,
                                   const SeriesKey& key, Timestamp time, uint64_t value) {
  absl::Status s = engine.Ingest(key, time, value, source);
  if (s.ok()) source.Append(key, time, value);
  return s;
}

// Exact statistics over `samples` (increasing time) in (end - window, end].
inline WindowStats ExactStats(const std::vector<Sample>& samples, Timestamp end, Duration window) {
  WindowStats stats;
  stats.window = window;
  stats.endtime = end;
  stats.exact_percentiles = true;
  std::vector<uint64_t> values;
  absl::uint128 sum = 0;
  for (const Sample& s : samples) {
    if (s.time > end - window && s.time <= end) {
      values.push_back(s.value);
      sum += s.value;
    }
  }
  stats.count = values.size();
  if (values.empty()) return stats;
  std::sort(values.begin(), values.end());
  const uint64_t n = values.size();
  stats.mean = static_cast<uint64_t>((sum + n / 2) / n);
  stats.min = values.front();
  stats.max = values.back();
  // Nearest rank computed independently of NearestRank(): smallest k with k >= p*n/100.
  auto rank = [n](uint64_t p) {
    uint64_t k = 1;
    while (k * 100 < p * n) ++k;
    return k;
  };
  stats.p50 = values[rank(50) - 1];
  stats.p95 = values[rank(95) - 1];
  stats.p99 = values[rank(99) - 1];
  return stats;
}

enum class Shape { kSteady, kDiurnal, kSpiky, kHeavyTailed, kBimodal };

inline const char* ShapeName(Shape shape) {
  switch (shape) {
    case Shape::kSteady:
      return "Steady";
    case Shape::kDiurnal:
      return "Diurnal";
    case Shape::kSpiky:
      return "Spiky";
    case Shape::kHeavyTailed:
      return "HeavyTailed";
    case Shape::kBimodal:
      return "Bimodal";
  }
  return "Unknown";
}

inline void PrintTo(Shape shape, std::ostream* os) { *os << ShapeName(shape); }

// A seeded generator of one series' values; `seconds` is the time of day of the sample.
class ShapeGenerator {
 public:
  ShapeGenerator(Shape shape, uint64_t seed) : shape_(shape), rng_(seed) {}

  uint64_t Next(int64_t seconds) {
    std::normal_distribution<double> noise(1.0, 0.03);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    double v = 0;
    switch (shape_) {
      case Shape::kSteady:
        v = 250e6 * noise(rng_);  // 250m cores
        break;
      case Shape::kDiurnal:
        v = 800e6 * (1 + 0.7 * std::sin(2 * M_PI * static_cast<double>(seconds) / 86400)) *
            noise(rng_);
        break;
      case Shape::kSpiky:
        v = 100e6 * noise(rng_) * (uniform(rng_) < 0.02 ? 25 : 1);
        break;
      case Shape::kHeavyTailed:  // Pareto, x_m = 1e6, alpha = 1.3
        v = std::min(1e13, 1e6 / std::pow(1 - uniform(rng_), 1 / 1.3));
        break;
      case Shape::kBimodal:  // working set around 200 MiB or 1.5 GiB
        v = (uniform(rng_) < 0.5 ? 200.0 * (1 << 20) : 1.5 * (1 << 30)) * noise(rng_);
        break;
    }
    return static_cast<uint64_t>(std::max(0.0, v));
  }

 private:
  Shape shape_;
  std::mt19937_64 rng_;
};

}  // namespace kubestat::windows::testing

#endif  // KUBESTAT_TESTS_WINDOWS_IN_MEMORY_SAMPLE_SOURCE_H_
