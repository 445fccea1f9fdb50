// The state of one long window (longer than the exact limit) of one series.
//
// Holds the exact count and sum of the samples with time in (lower, newest], a min and max
// per aligned bucket of `bucket_width`, a decrementable sketch, and the suffix-max and
// suffix-min stacks of the oldest bucket once the window's start has moved into it (samples
// of that bucket have left the window). Such a bucket lies wholly before the newest sample's
// bucket, so Add() never lands in it and the stacks stay exact; a series younger than the
// window has no stacks (its start does not move, and every bucket's min and max is exact).
// The stacks name their samples by position among the bucket's samples that were left when
// they were built, and count the bucket's samples that leave the window after that.
// Values of samples that leave the window come from the caller (see WindowEngine). Times
// are nanoseconds since the epoch.
#ifndef KUBESTAT_WINDOWS_SRC_LONG_WINDOW_H_
#define KUBESTAT_WINDOWS_SRC_LONG_WINDOW_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <span>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "kubestat/windows/quantile_sketch.h"
#include "kubestat/windows/window_engine.h"
#include "kubestat/windows/window_stats.h"

namespace kubestat::windows::internal {

// Shape of one long window, shared by every series of an engine.
struct LongWindowGeometry {
  int64_t width_ns = 0;
  int64_t bucket_ns = 0;
  size_t slots = 0;           // ring capacity: ceil(width / bucket) + 1
  bool uses_rollups = false;  // bucket_ns equals the rollup width

  int64_t BucketOf(int64_t t) const {
    // Floor division, so times before the epoch bucket correctly too.
    return t >= 0 ? t / bucket_ns : -((-t + bucket_ns - 1) / bucket_ns);
  }
};

// The suffix maxima and minima of a run of samples (the samples of a bucket still in the
// window), consumed from the front as the samples leave the window. Built once from the whole
// run. A max stack's values strictly decrease and a min stack's strictly increase, and both
// end at the run's last sample, so they empty together. Kept in one block, as varints (the
// gap in position from the entry before and the distance from its value): a smooth series,
// whose stacks hold most of its samples, costs a few bytes per sample rather than sixteen.
class SuffixExtrema {
 public:
  struct Entry {
    uint32_t position;  // among the run's samples, from 0
    uint64_t value;
  };
  // Replaces the stacks: positions strictly increasing, `max_entries`' values strictly
  // decreasing and `min_entries`' strictly increasing, both ending at the same position.
  void Assign(std::span<const Entry> max_entries, std::span<const Entry> min_entries);
  void Clear() { block_.reset(); }
  bool empty() const { return block_ == nullptr; }
  // The largest and smallest value of the samples at or after the front (not empty()).
  uint64_t max() const { return header().max_value; }
  uint64_t min() const { return header().min_value; }
  // Counts `samples` more of the run as gone from the window: the stacks drop their entries
  // for them, and are empty once the whole run has left.
  void Expire(uint32_t samples);
  size_t HeapBytes() const { return block_ ? sizeof(Header) + header().size : 0; }

 private:
  struct Header {
    uint64_t max_value;
    uint64_t min_value;
    uint32_t max_position;
    uint32_t min_position;
    uint32_t max_next;  // offset of the max entry after the front
    uint32_t max_end;   // where the min entries begin
    uint32_t min_next;
    uint32_t size;  // bytes of entries after the header
    uint32_t expired;
  };
  Header& header() { return *std::launder(reinterpret_cast<Header*>(block_.get())); }
  const Header& header() const {
    return *std::launder(reinterpret_cast<const Header*>(block_.get()));
  }
  const char* entries() const { return block_.get() + sizeof(Header); }

  std::unique_ptr<char[]> block_;  // a Header, then the entries after each stack's first
};

// What one Advance needs from the source, gathered before anything changes.
struct AdvancePlan {
  int64_t new_lower = 0;
  bool expire = false;  // read (lower, new_lower]
  bool load_stacks = false;
  int64_t load_bucket = 0;  // read (new_lower, end of load_bucket]
  int64_t load_through = 0;
};

class LongWindow {
 public:
  LongWindow() = default;

  // Empty state for a series whose first sample is at `first_ns`.
  void Start(const LongWindowGeometry& g, int64_t first_ns);
  // Empty state covering (lower_ns, ...]: used by restore before adding buckets.
  void Reset(const LongWindowGeometry& g, int64_t lower_ns);

  // What must be read from the source to move the window's end to `end_ns`.
  AdvancePlan Plan(const LongWindowGeometry& g, int64_t end_ns) const;
  // Applies a plan with the samples read for it. DataLoss when they contradict the state.
  [[nodiscard]] absl::Status Apply(const LongWindowGeometry& g, const SketchMapping& mapping,
                                   const AdvancePlan& plan, std::span<const Sample> expired,
                                   std::span<const Sample> bucket_rest);

  void Add(const LongWindowGeometry& g, const SketchMapping& mapping, int64_t t, uint64_t v);
  // Adds a complete bucket summarised by a rollup (its bucket must be inside the window).
  void AddRollup(const LongWindowGeometry& g, const BucketRollup& rollup);
  // Builds the stacks of the oldest bucket from its samples after `lower`, when that
  // bucket is partially expired. Used by restore.
  bool NeedsStacks(const LongWindowGeometry& g, int64_t* bucket, int64_t* through) const;
  void LoadStacks(const LongWindowGeometry& g, int64_t bucket, std::span<const Sample> rest);

  int64_t lower_ns() const { return lower_ns_; }
  // Not thread-safe, though const: it keeps what it scanned for the next call.
  void Fill(const LongWindowGeometry& g, const SketchMapping& mapping, WindowStats* stats) const;
  size_t RingBytes() const;
  size_t SketchBytes() const { return sketch_.HeapBytes(); }
  size_t StackBytes() const;

 private:
  struct MinMax {
    uint64_t min = std::numeric_limits<uint64_t>::max();
    uint64_t max = 0;
    bool has_data() const { return min <= max; }
  };
  static constexpr int64_t kNoBucket = std::numeric_limits<int64_t>::min();

  MinMax& SlotOf(const LongWindowGeometry& g, int64_t bucket);
  const MinMax& SlotOf(const LongWindowGeometry& g, int64_t bucket) const;
  void MoveFirstBucket(const LongWindowGeometry& g, int64_t new_first);
  void DropEmptiedStacks(const LongWindowGeometry& g);
  // Counts the samples of the stacked bucket among `expired`.
  void CountExpiredInStackBucket(const LongWindowGeometry& g, std::span<const Sample> expired);
  void ClearStacks();

  int64_t lower_ns_ = 0;  // samples in the state have time > lower_ns_
  uint64_t count_ = 0;
  absl::uint128 sum_ = 0;
  QuantileSketch sketch_;
  std::vector<MinMax> ring_;  // slot of bucket b: b mod slots
  int64_t first_bucket_ = 0;  // BucketOf(lower_ns_ + 1)
  int64_t stack_bucket_ = kNoBucket;
  SuffixExtrema stacks_;  // of stack_bucket_'s samples after the window's start
  // Fill's scan of the ring, kept until a slot other than the newest changes: the min and
  // max of every slot but the stacked one and the newest with data (`scanned_newest_`,
  // whose slot Fill reads each time). kNoBucket: not scanned since the last change. A
  // full day's read scans its 1,441 slots once a bucket (a minute), not at every read.
  void Unscan() { scanned_newest_ = kNoBucket; }
  mutable int64_t scanned_newest_ = kNoBucket;
  mutable uint64_t scanned_min_ = 0;
  mutable uint64_t scanned_max_ = 0;
};

}  // namespace kubestat::windows::internal

#endif  // KUBESTAT_WINDOWS_SRC_LONG_WINDOW_H_
