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

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <span>
#include <string_view>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/divisor.h"
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
  // `slots` as a divisor: a bucket's slot is computed at every add, by multiplications.
  Remainder32 slot_remainder;

  void SetSlots(size_t n) {
    slots = n;
    slot_remainder = Remainder32(n);
  }

  int64_t BucketOf(int64_t t) const { return PartitionOf(t, bucket_ns); }
  size_t SlotOf(int64_t bucket) const {
    // Buckets since the epoch fit 32 bits (an hour's: 500,000 in 2026; 5 minutes': 6
    // million), where the remainder takes no division.
    if (bucket >= 0) return static_cast<size_t>(slot_remainder.Of(static_cast<uint64_t>(bucket)));
    const auto n = static_cast<int64_t>(slots);
    return static_cast<size_t>(((bucket % n) + n) % n);
  }
};

// The suffix maxima and minima of a run of samples (the samples of a bucket still in the
// window), consumed from the front as the samples leave the window. Built once from the whole
// run. A max stack's values strictly decrease and a min stack's strictly increase, and both
// end at the run's last sample, so they empty together. Kept in one block, as varints (the
// distance from the entry before's value, and the gap in position where it is not 1): a
// smooth series, whose stacks hold most of its samples, costs one to three bytes per sample
// rather than sixteen. The block shrinks to what is left once half of it has been read.
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
  // Below this many bytes read, a block is not moved: its rest would save little.
  static constexpr uint32_t kMinShrinkBytes = 32;
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
  // A new block holding `header` and the two stacks' entries one after the other.
  void Allocate(Header header, std::array<std::string_view, 2> stacks);

  std::unique_ptr<char[]> block_;  // a Header, then the entries after each stack's first
};

// The min and max of each bucket of a long window, by slot. Narrow while every value it
// holds lies within 2^32 of a base chosen at the first value (a slot then takes 8 bytes: its
// min and max less the base, in one word); wide (16 bytes a slot, the values themselves)
// from the first value outside that range on. Most series stay within 4 GiB or 4 cores of
// where they started over a day, so their rings take half the memory. Exact either way. The
// slot count is the geometry's, passed to each call that needs it.
class MinMaxRing {
 public:
  struct MinMax {
    uint64_t min = std::numeric_limits<uint64_t>::max();
    uint64_t max = 0;
    bool has_data() const { return min <= max; }
  };

  // `slots` empty slots, narrow, with no base yet.
  void Reset(size_t slots);
  void ClearAll(size_t slots);
  MinMax Get(size_t slot) const;
  bool HasData(size_t slot) const { return Get(slot).has_data(); }
  // Widens the slot's bounds to take [min, max] in (min <= max).
  void Merge(size_t slots, size_t slot, uint64_t min, uint64_t max);
  void Clear(size_t slot);
  bool wide() const { return base_ == kWide; }
  size_t HeapBytes(size_t slots) const { return slots * (wide() ? 16 : 8); }

 private:
  static constexpr uint64_t kNoBase = std::numeric_limits<uint64_t>::max();
  static constexpr uint64_t kWide = kNoBase - 1;  // no base is this high (see Merge)
  static constexpr uint64_t kEmptyNarrow = 1;     // offset min 1, max 0
  void Widen(size_t slots);

  // Narrow: a word per slot, the min's offset from base_ in the low half and the max's in
  // the high half (kEmptyNarrow when empty). Wide: two words per slot, min then max.
  std::unique_ptr<uint64_t[]> words_;
  uint64_t base_ = kNoBase;
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
  size_t RingBytes(const LongWindowGeometry& g) const { return ring_.HeapBytes(g.slots); }
  size_t SketchBytes() const { return sketch_.HeapBytes(); }
  size_t StackBytes() const;

 private:
  using MinMax = MinMaxRing::MinMax;
  static constexpr int64_t kNoBucket = std::numeric_limits<int64_t>::min();

  MinMax BucketBounds(const LongWindowGeometry& g, int64_t bucket) const {
    return ring_.Get(g.SlotOf(bucket));
  }
  void MoveFirstBucket(const LongWindowGeometry& g, int64_t new_first);
  void DropEmptiedStacks(const LongWindowGeometry& g);
  // Counts the samples of the stacked bucket among `expired`.
  void CountExpiredInStackBucket(const LongWindowGeometry& g, std::span<const Sample> expired);
  void ClearStacks();

  int64_t lower_ns_ = 0;  // samples in the state have time > lower_ns_
  uint64_t count_ = 0;
  absl::uint128 sum_ = 0;
  QuantileSketch sketch_;
  MinMaxRing ring_;           // slot of bucket b: b mod slots
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
