// UsageHistogram: a compact, mergeable histogram of one series' samples over a rollup bucket
// (an hour), kept for weeks as the right-sizing history.
//
// What it holds. The exact count, min and max, and counts in log buckets of 5% width: a value
// v >= 1 falls into bucket i with 1.05^(i-1) < v <= 1.05^i; 0 has a bucket of its own. A
// percentile is reported as the upper edge of the bucket that holds it (ceil(1.05^i)),
// clamped to [min, max]: never below the true percentile of the samples added, at most 5%
// (and one unit) above it. That is coarser than the windows' sketch (quantile_sketch.h,
// 1%) on purpose: a cpu series whose hour spans a factor of 3 costs about 23 buckets, a
// memory series one or two, so an hour of a container is some tens of bytes on disk, and a
// recommendation adds a margin of 15% on top.
//
// Merging histograms adds their counts: a percentile over many hours is then the percentile
// of every sample of those hours (within the same 5%), not an average of hourly percentiles.
//
// Serialized form (version 1, varints): version, count, min, max, zero count, zigzag index of
// the first bucket, number of buckets, each bucket's count. Parse validates everything
// (version, sizes, counts summing to count, min <= max) and returns DataLoss, never crashes.
//
// Thread-compatible value type.
#ifndef KUBESTAT_WINDOWS_USAGE_HISTOGRAM_H_
#define KUBESTAT_WINDOWS_USAGE_HISTOGRAM_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kubestat::windows {

class UsageHistogram {
 public:
  // Growth of one bucket's upper edge over the previous one's.
  static constexpr double kGrowth = 1.05;

  void Add(uint64_t value);
  void Merge(const UsageHistogram& other);

  uint64_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  uint64_t min() const { return min_; }  // 0 when empty
  uint64_t max() const { return max_; }  // 0 when empty
  // The nearest-rank percentile p in (0, 100] as described above; 0 when empty.
  uint64_t Percentile(double p) const;

  // Bytes held, for caches' bounds (the value and its buckets).
  size_t MemoryBytes() const { return sizeof(*this) + counts_.capacity() * sizeof(uint64_t); }

  std::string Serialize() const;
  [[nodiscard]] static absl::StatusOr<UsageHistogram> Parse(std::string_view bytes);

  friend bool operator==(const UsageHistogram&, const UsageHistogram&) = default;

 private:
  static int32_t Index(uint64_t value);  // >= 0 for value >= 1
  static uint64_t UpperEdge(int32_t index);
  void AddAt(int32_t index, uint64_t n);

  uint64_t count_ = 0;
  uint64_t min_ = 0;
  uint64_t max_ = 0;
  uint64_t zero_count_ = 0;
  int32_t first_ = 0;             // bucket index of counts_[0]
  std::vector<uint64_t> counts_;  // dense from first_
};

}  // namespace kubestat::windows

#endif  // KUBESTAT_WINDOWS_USAGE_HISTOGRAM_H_
