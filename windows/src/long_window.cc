#include "long_window.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "kubestat/core/varint.h"

namespace kubestat::windows::internal {

namespace {

// One entry after a stack's first, against the entry before it: `gap` in position (at least
// 1) and `distance` in value. Most entries of a smooth run follow the one before (gap 1):
// those are one varint, the distance shifted left by one; any other is an odd varint, the
// gap shifted left by one and marked, then the distance.
void PutStackEntry(std::string* out, uint32_t gap, uint64_t distance) {
  if (gap == 1 && distance >> 63 == 0) {
    PutVarint(out, distance << 1);
    return;
  }
  PutVarint(out, (uint64_t{gap} << 1) | 1);
  PutVarint(out, distance);
}

}  // namespace

void SuffixExtrema::Assign(std::span<const Entry> max_entries, std::span<const Entry> min_entries) {
  Clear();
  if (max_entries.empty()) return;
  assert(!min_entries.empty() && max_entries.back().position == min_entries.back().position);
  std::string encoded;
  auto encode = [&encoded](std::span<const Entry> stack) {
    for (size_t i = 1; i < stack.size(); ++i) {
      assert(stack[i].position > stack[i - 1].position);
      const uint64_t a = stack[i].value, b = stack[i - 1].value;
      PutStackEntry(&encoded, stack[i].position - stack[i - 1].position, a > b ? a - b : b - a);
    }
  };
  encode(max_entries);
  const auto max_size = static_cast<uint32_t>(encoded.size());
  encode(min_entries);
  Allocate(
      Header{.max_value = max_entries.front().value,
             .min_value = min_entries.front().value,
             .max_position = max_entries.front().position,
             .min_position = min_entries.front().position,
             .max_next = 0,
             .max_end = max_size,
             .min_next = max_size,
             .size = static_cast<uint32_t>(encoded.size()),
             .expired = 0},
      {std::string_view(encoded).substr(0, max_size), std::string_view(encoded).substr(max_size)});
}

void SuffixExtrema::Allocate(Header header, std::array<std::string_view, 2> stacks) {
  block_ = std::make_unique_for_overwrite<char[]>(sizeof(Header) + header.size);
  // operator new[] aligns the block for any object of this size, the Header included.
  ::new (block_.get()) Header(header);
  std::memcpy(block_.get() + sizeof(Header), stacks[0].data(), stacks[0].size());
  std::memcpy(block_.get() + sizeof(Header) + stacks[0].size(), stacks[1].data(), stacks[1].size());
}

void SuffixExtrema::Expire(uint32_t samples) {
  if (empty()) return;
  Header& h = header();
  h.expired += samples;
  // Reads what the stack wrote itself, so never truncated.
  auto varint = [this, &h](uint32_t* offset) {
    std::string_view in(entries() + *offset, h.size - *offset);
    uint64_t v = 0;
    [[maybe_unused]] const bool read = GetVarint(&in, &v);
    assert(read);
    *offset = h.size - static_cast<uint32_t>(in.size());
    return v;
  };
  // The next entry of the stack read at `offset`: its gap in position and distance in value.
  auto next = [&varint](uint32_t* offset, uint32_t* gap) {
    const uint64_t first = varint(offset);
    if ((first & 1) == 0) {
      *gap = 1;
      return first >> 1;
    }
    *gap = static_cast<uint32_t>(first >> 1);
    return varint(offset);
  };
  uint32_t gap = 0;
  while (h.max_position < h.expired) {
    if (h.max_next == h.max_end) {
      // The run's last sample has left: the min stack ends there too.
      Clear();
      return;
    }
    h.max_value -= next(&h.max_next, &gap);
    h.max_position += gap;
  }
  while (h.min_position < h.expired) {
    assert(h.min_next < h.size);
    h.min_value += next(&h.min_next, &gap);
    h.min_position += gap;
  }
  // Once half the entries' bytes are read, the rest moves to a block of its size: the
  // stacks of a day window's oldest hour shrink as it leaves instead of keeping the whole
  // hour's bytes until its last sample goes.
  const uint32_t read = h.max_next + (h.min_next - h.max_end);
  if (read >= kMinShrinkBytes && 2 * read >= h.size) {
    const std::unique_ptr<char[]> old = std::move(block_);
    const Header& was = *std::launder(reinterpret_cast<const Header*>(old.get()));
    const char* old_entries = old.get() + sizeof(Header);
    Header rest = was;
    rest.max_next = 0;
    rest.max_end = was.max_end - was.max_next;
    rest.min_next = rest.max_end;
    rest.size = was.size - read;
    Allocate(rest, std::array<std::string_view, 2>{
                       std::string_view(old_entries + was.max_next, was.max_end - was.max_next),
                       std::string_view(old_entries + was.min_next, was.size - was.min_next)});
  }
}

void MinMaxRing::Reset(size_t slots) {
  words_ = std::make_unique_for_overwrite<uint64_t[]>(slots);
  base_ = kNoBase;
  std::fill_n(words_.get(), slots, kEmptyNarrow);
}

void MinMaxRing::ClearAll(size_t slots) {
  if (wide()) {
    for (size_t i = 0; i < slots; ++i) Clear(i);
  } else {
    std::fill_n(words_.get(), slots, kEmptyNarrow);
  }
}

MinMaxRing::MinMax MinMaxRing::Get(size_t slot) const {
  if (wide()) return {words_[2 * slot], words_[2 * slot + 1]};
  const uint64_t word = words_[slot];
  const auto low = static_cast<uint32_t>(word);
  const auto high = static_cast<uint32_t>(word >> 32);
  if (low > high) return {};
  return {base_ + low, base_ + high};
}

void MinMaxRing::Merge(size_t slots, size_t slot, uint64_t min, uint64_t max) {
  if (base_ == kNoBase) {
    // The first value sits in the middle of the range, so the series may move 2^31 either
    // way. No base is above kNoBase - 2^32, so neither sentinel is one.
    base_ = min > (uint64_t{1} << 31) ? min - (uint64_t{1} << 31) : 0;
    base_ = std::min(base_, kNoBase - (uint64_t{1} << 32));
  }
  if (!wide() && (min < base_ || max - base_ > std::numeric_limits<uint32_t>::max())) {
    Widen(slots);
  }
  if (wide()) {
    words_[2 * slot] = std::min(words_[2 * slot], min);
    words_[2 * slot + 1] = std::max(words_[2 * slot + 1], max);
    return;
  }
  MinMax now = Get(slot);
  now.min = std::min(now.min, min);
  now.max = std::max(now.max, max);
  words_[slot] = (now.min - base_) | ((now.max - base_) << 32);
}

void MinMaxRing::Clear(size_t slot) {
  if (wide()) {
    words_[2 * slot] = MinMax{}.min;
    words_[2 * slot + 1] = MinMax{}.max;
  } else {
    words_[slot] = kEmptyNarrow;
  }
}

void MinMaxRing::Widen(size_t slots) {
  auto wide_words = std::make_unique_for_overwrite<uint64_t[]>(2 * slots);
  for (size_t i = 0; i < slots; ++i) {
    const MinMax mm = Get(i);
    wide_words[2 * i] = mm.min;
    wide_words[2 * i + 1] = mm.max;
  }
  words_ = std::move(wide_words);
  base_ = kWide;
}

void LongWindow::Start(const LongWindowGeometry& g, int64_t first_ns) {
  // Nothing at or before the first sample belongs to the window: the source may hold older
  // samples of the series that this engine never counted.
  Reset(g, first_ns - 1);
}

void LongWindow::Reset(const LongWindowGeometry& g, int64_t lower_ns) {
  lower_ns_ = lower_ns;
  count_ = 0;
  sum_ = 0;
  sketch_.Clear();
  ring_.Reset(g.slots);
  first_bucket_ = g.BucketOf(lower_ns + 1);
  ClearStacks();
  Unscan();
}

AdvancePlan LongWindow::Plan(const LongWindowGeometry& g, int64_t end_ns) const {
  AdvancePlan plan;
  plan.new_lower = std::max(lower_ns_, end_ns - g.width_ns);
  plan.expire = plan.new_lower > lower_ns_;
  // The stacks are needed only once samples leave the window: while the start stays where
  // it is (a series younger than the window, whose start sits just before its first sample,
  // possibly in the middle of a bucket) every sample of a bucket is inside the window and
  // the bucket's min and max are exact. Loading them then would also be wrong: that bucket
  // still receives samples, and Add() does not maintain the stacks. When the start does
  // move, it is end - width, so the bucket that straddles it lies wholly before the bucket
  // of the new sample (width >= 2 buckets) and no later sample can land in it.
  if (!plan.expire) return plan;
  const int64_t new_first = g.BucketOf(plan.new_lower + 1);
  const int64_t ring_end = first_bucket_ + static_cast<int64_t>(g.slots);
  for (int64_t b = std::max(new_first, first_bucket_); b < ring_end; ++b) {
    if (!BucketBounds(g, b).has_data()) continue;
    // Only the first bucket with data can straddle the new start.
    if (b * g.bucket_ns <= plan.new_lower && stack_bucket_ != b) {
      plan.load_stacks = true;
      plan.load_bucket = b;
      plan.load_through = b * g.bucket_ns + g.bucket_ns - 1;
    }
    break;
  }
  return plan;
}

absl::Status LongWindow::Apply(const LongWindowGeometry& g, const SketchMapping& mapping,
                               const AdvancePlan& plan, std::span<const Sample> expired,
                               std::span<const Sample> bucket_rest) {
  for (const Sample& s : expired) {
    const int64_t t = Nanos(s.time);
    if (t <= lower_ns_ || t > plan.new_lower) {
      return absl::DataLossError("the sample source returned a sample outside the range asked");
    }
    if (count_ == 0 || sum_ < s.value || !sketch_.Remove(mapping, s.value)) {
      return absl::DataLossError(
          absl::StrCat("the sample source returned an expiring value (", s.value,
                       ") that the window never counted: the store and the engine disagree"));
    }
    --count_;
    sum_ -= s.value;
  }
  CountExpiredInStackBucket(g, expired);
  lower_ns_ = plan.new_lower;
  MoveFirstBucket(g, g.BucketOf(lower_ns_ + 1));
  if (plan.load_stacks) LoadStacks(g, plan.load_bucket, bucket_rest);
  DropEmptiedStacks(g);
  return absl::OkStatus();
}

void LongWindow::Add(const LongWindowGeometry& g, const SketchMapping& mapping, int64_t t,
                     uint64_t v) {
  ++count_;
  sum_ += v;
  sketch_.Add(mapping, v);
  const int64_t b = g.BucketOf(t);
  const auto slots = static_cast<int64_t>(g.slots);
  if (b >= first_bucket_ + slots) MoveFirstBucket(g, b - slots + 1);
  // The scan stays right while samples land in the slot it left out.
  if (b != scanned_newest_) Unscan();
  ring_.Merge(g.slots, g.SlotOf(b), v, v);
}

void LongWindow::AddRollup(const LongWindowGeometry& g, const BucketRollup& rollup) {
  count_ += rollup.count;
  sum_ += rollup.sum;
  sketch_.Merge(rollup.sketch);
  Unscan();
  ring_.Merge(g.slots, g.SlotOf(g.BucketOf(Nanos(rollup.start))), rollup.min, rollup.max);
}

bool LongWindow::NeedsStacks(const LongWindowGeometry& g, int64_t* bucket, int64_t* through) const {
  const int64_t b = first_bucket_;
  if (!BucketBounds(g, b).has_data() || b * g.bucket_ns > lower_ns_ || stack_bucket_ == b) {
    return false;
  }
  *bucket = b;
  *through = b * g.bucket_ns + g.bucket_ns - 1;
  return true;
}

void LongWindow::LoadStacks(const LongWindowGeometry& g, int64_t bucket,
                            std::span<const Sample> rest) {
  ClearStacks();
  // Built here, kept compact: a stack is only ever read from the front after this.
  std::vector<SuffixExtrema::Entry> max_entries;
  std::vector<SuffixExtrema::Entry> min_entries;
  uint32_t position = 0;
  for (const Sample& s : rest) {
    const int64_t t = Nanos(s.time);
    if (t <= lower_ns_ || g.BucketOf(t) != bucket) continue;
    while (!max_entries.empty() && max_entries.back().value <= s.value) max_entries.pop_back();
    max_entries.push_back({position, s.value});
    while (!min_entries.empty() && min_entries.back().value >= s.value) min_entries.pop_back();
    min_entries.push_back({position, s.value});
    ++position;
  }
  stacks_.Assign(max_entries, min_entries);
  stack_bucket_ = bucket;  // ClearStacks above dropped the kept scan
  if (stacks_.empty()) {
    // Every sample of the bucket has left the window.
    if (bucket >= first_bucket_) ring_.Clear(g.SlotOf(bucket));
    ClearStacks();
  }
}

void LongWindow::Fill(const LongWindowGeometry& g, const SketchMapping& mapping,
                      WindowStats* stats) const {
  stats->count = count_;
  stats->exact_percentiles = false;
  if (count_ == 0) return;
  stats->mean = static_cast<uint64_t>((sum_ + count_ / 2) / count_);
  // The ring holds exactly the window's buckets, so its slots are read in place, without the
  // bucket-to-slot division per slot: an empty slot (min above max) changes neither bound.
  // The oldest bucket, when partly expired, has its stacks' fronts instead of its slot.
  constexpr size_t kNoSlot = std::numeric_limits<size_t>::max();
  size_t stacked = kNoSlot;
  if (stack_bucket_ != kNoBucket && !stacks_.empty() && stack_bucket_ >= first_bucket_ &&
      stack_bucket_ < first_bucket_ + static_cast<int64_t>(g.slots)) {
    stacked = g.SlotOf(stack_bucket_);
  }
  if (scanned_newest_ == kNoBucket) {
    // In bucket order from the first, each slot with data but the newest folded in.
    // The ring from the first bucket's slot, wrapping once, without a division per slot.
    MinMax before;
    MinMax newest;
    int64_t newest_bucket = kNoBucket;
    const size_t first = g.SlotOf(first_bucket_);
    for (size_t i = 0, slot = first; i < g.slots; ++i, slot = slot + 1 == g.slots ? 0 : slot + 1) {
      if (slot == stacked) continue;
      const MinMax mm = ring_.Get(slot);
      if (!mm.has_data()) continue;
      before.min = std::min(before.min, newest.min);
      before.max = std::max(before.max, newest.max);
      newest = mm;
      newest_bucket = first_bucket_ + static_cast<int64_t>(i);
    }
    if (newest_bucket != kNoBucket) {
      scanned_newest_ = newest_bucket;
      scanned_min_ = before.min;
      scanned_max_ = before.max;
    }
  }
  uint64_t lo = std::numeric_limits<uint64_t>::max();
  uint64_t hi = 0;
  if (scanned_newest_ != kNoBucket) {
    const MinMax newest = BucketBounds(g, scanned_newest_);
    lo = std::min(scanned_min_, newest.min);
    hi = std::max(scanned_max_, newest.max);
  }
#ifndef NDEBUG
  {
    uint64_t scan_lo = std::numeric_limits<uint64_t>::max();
    uint64_t scan_hi = 0;
    for (size_t slot = 0; slot < g.slots; ++slot) {
      if (slot == stacked) continue;
      const MinMax mm = ring_.Get(slot);
      scan_lo = std::min(scan_lo, mm.min);
      scan_hi = std::max(scan_hi, mm.max);
    }
    assert(scan_lo == lo && scan_hi == hi && "the kept scan matches the ring");
  }
#endif
  if (stacked != kNoSlot && ring_.HasData(stacked)) {
    lo = std::min(lo, stacks_.min());
    hi = std::max(hi, stacks_.max());
  }
  assert(lo <= hi && "a long window with samples has a bucket with a min and max");
  stats->min = lo;
  stats->max = hi;
  // The sketch reports its bucket's representative value, which may lie up to 1% beyond
  // the values the bucket holds: below the window's exact min or above its max (a series
  // that never changed would report a value it never had). Every true percentile lies in
  // [min, max], so clamping to it only moves a result towards the true value: the 1% bound
  // holds, and a constant window reports its value exactly. This is the one place long
  // windows produce percentiles, live or restored from rollups.
  const std::array<uint64_t, 3> ranks = {NearestRank(50, count_), NearestRank(95, count_),
                                         NearestRank(99, count_)};
  std::array<uint64_t, 3> values{};
  sketch_.ValuesAtRanks(mapping, ranks, values);
  stats->p50 = std::clamp(values[0], lo, hi);
  stats->p95 = std::clamp(values[1], lo, hi);
  stats->p99 = std::clamp(values[2], lo, hi);
}

size_t LongWindow::StackBytes() const { return stacks_.HeapBytes(); }

void LongWindow::MoveFirstBucket(const LongWindowGeometry& g, int64_t new_first) {
  if (new_first <= first_bucket_) return;
  Unscan();
  if (new_first - first_bucket_ >= static_cast<int64_t>(g.slots)) {
    ring_.ClearAll(g.slots);
  } else {
    for (int64_t b = first_bucket_; b < new_first; ++b) ring_.Clear(g.SlotOf(b));
  }
  first_bucket_ = new_first;
  if (stack_bucket_ != kNoBucket && stack_bucket_ < first_bucket_) ClearStacks();
}

void LongWindow::CountExpiredInStackBucket(const LongWindowGeometry& g,
                                           std::span<const Sample> expired) {
  if (stack_bucket_ == kNoBucket) return;
  uint32_t n = 0;
  for (const Sample& s : expired) n += g.BucketOf(Nanos(s.time)) == stack_bucket_;
  stacks_.Expire(n);
}

void LongWindow::DropEmptiedStacks(const LongWindowGeometry& g) {
  if (stack_bucket_ == kNoBucket) return;
  if (stacks_.empty()) {
    if (stack_bucket_ >= first_bucket_) ring_.Clear(g.SlotOf(stack_bucket_));
    ClearStacks();
  }
}

void LongWindow::ClearStacks() {
  stack_bucket_ = kNoBucket;
  stacks_.Clear();
  Unscan();
}

}  // namespace kubestat::windows::internal
