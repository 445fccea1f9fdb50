// QuantileSketch: a mergeable, decrementable log-bucket histogram of unsigned integers
// (DDSketch-style) for the percentiles of long windows.
//
// Values 1..1023 each get an exact bucket and 0 has its own bucket. A value v >= 1024 falls
// into bucket i with gamma^(i-1) < v <= gamma^i, gamma = (1 + a) / (1 - a), and is reported
// as the integer nearest to 2 * gamma^i / (gamma + 1). The reported value r of any bucket
// is within a * v + 1/2 of every v in it, so with a <= 0.0095 (and v >= 1024)
// |r - v| <= 1% of v; below 1024 values are exact. Counts are kept densely between the
// lowest and highest occupied bucket (2 bytes per bucket until a count passes 65535, then
// 4), so a series whose values span a factor of 10 costs about 120 buckets.
//
// The bucket layout (a) is not stored in each sketch, to keep sketches small: it lives in a
// SketchMapping shared by every sketch of an engine, and every call that maps values takes
// it. Mixing sketches built with different mappings is the caller's error: a sketch does
// not record its mapping (BucketRollup does, and RestoreSeries checks it).
//
// Not thread-safe; a sketch is owned by its window. Remove() of a value that was never
// added returns false and leaves the sketch unchanged.
#ifndef KUBESTAT_WINDOWS_QUANTILE_SKETCH_H_
#define KUBESTAT_WINDOWS_QUANTILE_SKETCH_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kubestat::windows {

class SketchMapping {
 public:
  // Values below this are kept in exact buckets.
  static constexpr uint64_t kExactBelow = 1024;
  // Largest accuracy for which the 1% bound holds after rounding to integers.
  static constexpr double kMaxRelativeAccuracy = 0.0095;

  // `relative_accuracy` in (0, kMaxRelativeAccuracy]; see Validate().
  explicit SketchMapping(double relative_accuracy);
  [[nodiscard]] static absl::Status Validate(double relative_accuracy);

  double relative_accuracy() const { return relative_accuracy_; }
  // Bucket index of v (0 for v = 0, v for v < kExactBelow, larger above).
  int32_t Index(uint64_t v) const {
    if (v < kExactBelow) return static_cast<int32_t>(v);
    if (range_first_.empty()) return LogIndex(v);
    // The range of v: its octave and the next kRangeBits bits below the leading one.
    const int octave = 63 - std::countl_zero(v);
    const size_t range = static_cast<size_t>(octave - kFirstOctave) << kRangeBits |
                         ((v >> (octave - kRangeBits)) & ((1u << kRangeBits) - 1));
    return range_first_[range] + static_cast<int32_t>(v > range_split_[range]);
  }
  // Index() computed from the logarithm, without the tables (what the tables hold).
  int32_t LogIndex(uint64_t v) const;
  // The value reported for bucket `index`.
  uint64_t Value(int32_t index) const;
  // Value() computed from the logarithm, without the table (what the table holds).
  uint64_t ComputeValue(int32_t index) const;

 private:
  void BuildIndexTables();
  double relative_accuracy_;
  double gamma_;
  double log_gamma_;
  int32_t first_log_bucket_;  // ceil(log_gamma(kExactBelow))
  // Mappings with more logarithmic buckets than this compute every Value().
  static constexpr size_t kMaxTabledValues = 16384;
  // Index() by table: every octave from kExactBelow's up is cut into 2^kRangeBits ranges
  // of equal width, narrower than a bucket when the accuracy is at least about 0.004 (the
  // default 0.0095: 37 buckets an octave), so each holds at most one bucket boundary. A
  // range holds LogIndex() of its first value and the last value before the boundary (its
  // own last value when none), both found with LogIndex() itself: the tables give exactly
  // what the logarithm gives, with a shift and two loads instead of a log and a division.
  // Empty (every Index() computed) for finer accuracies.
  static constexpr int kRangeBits = 7;
  static constexpr int kFirstOctave = 10;  // kExactBelow = 2^10
  std::vector<int32_t> range_first_;
  std::vector<uint64_t> range_split_;
  // ComputeValue(kExactBelow + i) at i, for every bucket of a 64-bit value (empty when
  // there are more than kMaxTabledValues of them).
  std::vector<uint64_t> log_values_;
};

class QuantileSketch {
 public:
  QuantileSketch() = default;
  QuantileSketch(const QuantileSketch& other);
  QuantileSketch& operator=(const QuantileSketch& other);
  QuantileSketch(QuantileSketch&&) noexcept = default;
  QuantileSketch& operator=(QuantileSketch&&) noexcept = default;
  ~QuantileSketch() = default;

  void Add(const SketchMapping& mapping, uint64_t value) { AddIndex(mapping.Index(value), 1); }
  // False (and no change) if `value`'s bucket is empty.
  [[nodiscard]] bool Remove(const SketchMapping& mapping, uint64_t value);
  // Adds every count of `other` (built with the same mapping).
  void Merge(const QuantileSketch& other);
  void Clear();

  uint64_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  // The reported value of the bucket holding the k-th smallest value (1-based; k is
  // clamped to [1, count]). 0 when empty. With NearestRank() this is a percentile. The
  // reported value may lie just outside the values added (within the 1% bound), so it can
  // be below the smallest or above the largest; WindowEngine clamps it to the window's
  // exact min and max.
  uint64_t ValueAtRank(const SketchMapping& mapping, uint64_t k) const;
  // ValueAtRank of each of `ks` (in ascending order) into `out` (as many), in one pass over
  // the buckets: what a window's three percentiles cost.
  void ValuesAtRanks(const SketchMapping& mapping, std::span<const uint64_t> ks,
                     std::span<uint64_t> out) const;

  // Heap bytes owned (bucket storage capacity), excluding sizeof(QuantileSketch).
  size_t HeapBytes() const;

  // Compact form: varint-encoded bucket counts. Parse consumes the sketch from the front of
  // `in`, validates everything and returns DataLoss on malformed input, never crashes.
  void AppendTo(std::string* out) const;
  [[nodiscard]] static absl::StatusOr<QuantileSketch> Parse(std::string_view* in);

  friend bool operator==(const QuantileSketch& a, const QuantileSketch& b);

 private:
  void AddIndex(int32_t index, uint64_t n);
  uint32_t CountAt(size_t slot) const;
  void SetCountAt(size_t slot, uint32_t n);
  bool wide() const { return counts32_ != nullptr; }
  size_t Slots() const { return wide() ? counts32_->size() : counts16_.size(); }
  void Grow(int32_t index);  // makes `index` addressable
  void Trim();               // drops empty buckets at both ends

  uint64_t count_ = 0;
  uint32_t zero_count_ = 0;
  int32_t offset_ = 0;              // bucket index of slot 0
  std::vector<uint16_t> counts16_;  // empty once wide()
  // The counts once one has outgrown 16 bits: rare (a bucket holding 65,536 samples), so
  // kept apart, and a sketch (two in every series) pays a pointer for it, not a vector.
  std::unique_ptr<std::vector<uint32_t>> counts32_;
};

}  // namespace kubestat::windows

#endif  // KUBESTAT_WINDOWS_QUANTILE_SKETCH_H_
