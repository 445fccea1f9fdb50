#include "kubestat/windows/quantile_sketch.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <span>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kubestat/core/varint.h"

namespace kubestat::windows {

namespace {
constexpr uint32_t kNarrowMax = std::numeric_limits<uint16_t>::max();
// More buckets than any mapping with a >= 1e-4 can produce for 64-bit values.
constexpr uint64_t kMaxSlots = 1u << 20;
}  // namespace

SketchMapping::SketchMapping(double relative_accuracy)
    : relative_accuracy_(relative_accuracy),
      gamma_((1 + relative_accuracy) / (1 - relative_accuracy)),
      log_gamma_(std::log(gamma_)),
      first_log_bucket_(static_cast<int32_t>(
          std::ceil(std::log(static_cast<double>(kExactBelow)) / log_gamma_))) {
  // The values of the logarithmic buckets up to the largest 64-bit value's, computed once:
  // a percentile is then a load, not an exponential. A mapping finer than the table allows
  // computes them (Validate admits accuracies down to 1e-4: 222,000 buckets).
  BuildIndexTables();
  const int32_t top = Index(std::numeric_limits<uint64_t>::max());
  if (top - static_cast<int32_t>(kExactBelow) < static_cast<int32_t>(kMaxTabledValues)) {
    log_values_.reserve(static_cast<size_t>(top) - kExactBelow + 1);
    for (int32_t index = static_cast<int32_t>(kExactBelow); index <= top; ++index) {
      log_values_.push_back(ComputeValue(index));
    }
  }
}

absl::Status SketchMapping::Validate(double relative_accuracy) {
  // 1e-4 keeps the bucket count of 64-bit values far below kMaxSlots.
  if (!(relative_accuracy >= 1e-4 && relative_accuracy <= kMaxRelativeAccuracy)) {
    return absl::InvalidArgumentError(
        absl::StrCat("relative_accuracy must be in [0.0001, ", kMaxRelativeAccuracy,
                     "] so that percentiles stay within 1%; got ", relative_accuracy));
  }
  return absl::OkStatus();
}

void SketchMapping::BuildIndexTables() {
  static_assert(kExactBelow == uint64_t{1} << kFirstOctave);
  constexpr size_t kRanges = size_t{64 - kFirstOctave} << kRangeBits;
  std::vector<int32_t> first(kRanges);
  std::vector<uint64_t> split(kRanges);
  for (int octave = kFirstOctave; octave < 64; ++octave) {
    const int width_bits = octave - kRangeBits;
    for (uint64_t m = 0; m < (uint64_t{1} << kRangeBits); ++m) {
      const uint64_t lo = (uint64_t{1} << octave) + (m << width_bits);
      const uint64_t last = lo + ((uint64_t{1} << width_bits) - 1);
      const int32_t a = LogIndex(lo);
      const int32_t b = LogIndex(last);
      if (b > a + 1) return;  // buckets narrower than a range: no tables
      const size_t range = static_cast<size_t>(octave - kFirstOctave) << kRangeBits | m;
      first[range] = a;
      split[range] = last;
      if (b == a) continue;
      // The last value of bucket a: LogIndex is monotone, so a binary search finds it.
      uint64_t low = lo;     // LogIndex(low) == a
      uint64_t high = last;  // LogIndex(high) == b
      while (high - low > 1) {
        const uint64_t mid = low + (high - low) / 2;
        (LogIndex(mid) == a ? low : high) = mid;
      }
      split[range] = low;
    }
  }
  range_first_ = std::move(first);
  range_split_ = std::move(split);
}

int32_t SketchMapping::LogIndex(uint64_t v) const {
  if (v < kExactBelow) return static_cast<int32_t>(v);
  const auto log_index =
      static_cast<int32_t>(std::ceil(std::log(static_cast<double>(v)) / log_gamma_));
  // The same expression maps kExactBelow to first_log_bucket_, so indices stay monotone.
  return static_cast<int32_t>(kExactBelow) + std::max(0, log_index - first_log_bucket_);
}

uint64_t SketchMapping::Value(int32_t index) const {
  if (index < static_cast<int32_t>(kExactBelow)) return static_cast<uint64_t>(std::max(0, index));
  const auto tabled = static_cast<size_t>(index) - kExactBelow;
  if (tabled < log_values_.size()) return log_values_[tabled];
  return ComputeValue(index);
}

uint64_t SketchMapping::ComputeValue(int32_t index) const {
  if (index < static_cast<int32_t>(kExactBelow)) return static_cast<uint64_t>(std::max(0, index));
  const int32_t log_index = index - static_cast<int32_t>(kExactBelow) + first_log_bucket_;
  // Midpoint in relative terms of (gamma^(i-1), gamma^i]: within a of both ends.
  const double value = 2 * std::exp(log_index * log_gamma_) / (gamma_ + 1);
  if (value >= 18446744073709551616.0) return std::numeric_limits<uint64_t>::max();
  // Doubles this large are whole numbers, and llround would overflow.
  if (value >= 9223372036854775808.0) return static_cast<uint64_t>(value);
  return std::max<uint64_t>(kExactBelow, static_cast<uint64_t>(std::llround(value)));
}

bool QuantileSketch::Remove(const SketchMapping& mapping, uint64_t value) {
  const int32_t index = mapping.Index(value);
  if (index == 0) {
    if (zero_count_ == 0) return false;
    --zero_count_;
    --count_;
    return true;
  }
  if (Slots() == 0 || index < offset_ || index >= offset_ + static_cast<int64_t>(Slots())) {
    return false;
  }
  const size_t slot = static_cast<size_t>(index - offset_);
  const uint32_t n = CountAt(slot);
  if (n == 0) return false;
  SetCountAt(slot, n - 1);
  --count_;
  if (n == 1 && (slot == 0 || slot + 1 == Slots())) Trim();
  return true;
}

void QuantileSketch::Merge(const QuantileSketch& other) {
  zero_count_ += other.zero_count_;
  count_ += other.zero_count_;
  for (size_t slot = 0; slot < other.Slots(); ++slot) {
    const uint32_t n = other.CountAt(slot);
    if (n != 0) AddIndex(other.offset_ + static_cast<int32_t>(slot), n);
  }
}

QuantileSketch::QuantileSketch(const QuantileSketch& other)
    : count_(other.count_),
      zero_count_(other.zero_count_),
      offset_(other.offset_),
      counts16_(other.counts16_),
      counts32_(other.wide() ? std::make_unique<std::vector<uint32_t>>(*other.counts32_)
                             : nullptr) {}

QuantileSketch& QuantileSketch::operator=(const QuantileSketch& other) {
  if (this != &other) *this = QuantileSketch(other);
  return *this;
}

void QuantileSketch::Clear() { *this = QuantileSketch(); }

uint64_t QuantileSketch::ValueAtRank(const SketchMapping& mapping, uint64_t k) const {
  uint64_t value = 0;
  ValuesAtRanks(mapping, std::span<const uint64_t>(&k, 1), std::span<uint64_t>(&value, 1));
  return value;
}

namespace {

// Slots skipped at a time while looking for a rank: their counts are summed without a test
// per slot, and the sum is compared once.
constexpr size_t kWalkBlock = 16;

// The first slot at or after `*slot` whose count takes `*seen` (the counts before it) to
// `rank` or beyond; `*seen` is left at the counts before that slot. `counts.size()` when
// the rank lies beyond every slot.
template <typename Count>
size_t FindRank(std::span<const Count> counts, uint64_t rank, size_t slot, uint64_t* seen) {
  const size_t n = counts.size();
  while (slot + kWalkBlock <= n) {
    // Sixteen 16-bit counts fit in 32 bits; 32-bit counts are summed in 64.
    std::conditional_t<sizeof(Count) == 2, uint32_t, uint64_t> block = 0;
    for (size_t k = 0; k < kWalkBlock; ++k) block += counts[slot + k];
    if (*seen + block >= rank) break;
    *seen += block;
    slot += kWalkBlock;
  }
  for (; slot < n; ++slot) {
    if (*seen + counts[slot] >= rank) return slot;
    *seen += counts[slot];
  }
  return n;
}

template <typename Count>
void WalkRanks(std::span<const Count> counts, uint64_t zero_count, uint64_t count,
               std::span<const uint64_t> ks, int32_t offset, const SketchMapping& mapping,
               std::span<uint64_t> out) {
  size_t slot = 0;
  uint64_t seen = zero_count;  // the counts of the slots before `slot`
  for (size_t i = 0; i < ks.size(); ++i) {
    const uint64_t rank = std::clamp<uint64_t>(ks[i], 1, count);
    if (rank <= zero_count) {
      out[i] = 0;
      continue;
    }
    slot = FindRank(counts, rank, slot, &seen);
    // Past the last slot only if count_ differed from the sum of the buckets.
    const size_t found = std::min(slot, counts.size() - 1);
    out[i] = mapping.Value(offset + static_cast<int32_t>(found));
  }
}

}  // namespace

void QuantileSketch::ValuesAtRanks(const SketchMapping& mapping, std::span<const uint64_t> ks,
                                   std::span<uint64_t> out) const {
  assert(ks.size() == out.size() && std::is_sorted(ks.begin(), ks.end()));
  if (count_ == 0 || Slots() == 0) {
    // Without buckets every value is in the zero bucket.
    for (uint64_t& value : out) value = 0;
    return;
  }
  if (wide()) {
    WalkRanks<uint32_t>(*counts32_, zero_count_, count_, ks, offset_, mapping, out);
  } else {
    WalkRanks<uint16_t>(counts16_, zero_count_, count_, ks, offset_, mapping, out);
  }
}

size_t QuantileSketch::HeapBytes() const {
  return counts16_.capacity() * sizeof(uint16_t) +
         (wide() ? sizeof(std::vector<uint32_t>) + counts32_->capacity() * sizeof(uint32_t) : 0);
}

void QuantileSketch::AppendTo(std::string* out) const {
  PutVarint(out, zero_count_);
  PutVarint(out, static_cast<uint64_t>(Slots() == 0 ? 0 : offset_));
  PutVarint(out, Slots());
  for (size_t slot = 0; slot < Slots(); ++slot) PutVarint(out, CountAt(slot));
}

absl::StatusOr<QuantileSketch> QuantileSketch::Parse(std::string_view* in) {
  uint64_t zero = 0, offset = 0, slots = 0;
  if (!GetVarint(in, &zero) || !GetVarint(in, &offset) || !GetVarint(in, &slots)) {
    return absl::DataLossError("sketch: truncated header");
  }
  if (zero > std::numeric_limits<uint32_t>::max()) {
    return absl::DataLossError("sketch: zero count out of range");
  }
  if (slots > kMaxSlots || slots > in->size() || (slots > 0 && offset == 0) ||
      offset > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()) - slots) {
    return absl::DataLossError("sketch: bucket range out of bounds");
  }
  QuantileSketch sketch;
  sketch.zero_count_ = static_cast<uint32_t>(zero);
  sketch.count_ = zero;
  sketch.offset_ = static_cast<int32_t>(offset);
  std::vector<uint32_t> counts;
  counts.reserve(slots);
  for (uint64_t slot = 0; slot < slots; ++slot) {
    uint64_t n = 0;
    if (!GetVarint(in, &n)) return absl::DataLossError("sketch: truncated bucket counts");
    if (n > std::numeric_limits<uint32_t>::max()) {
      return absl::DataLossError("sketch: bucket count out of range");
    }
    counts.push_back(static_cast<uint32_t>(n));
    sketch.count_ += n;
  }
  if (std::any_of(counts.begin(), counts.end(), [](uint32_t n) { return n > kNarrowMax; })) {
    sketch.counts32_ = std::make_unique<std::vector<uint32_t>>(std::move(counts));
  } else {
    sketch.counts16_.assign(counts.begin(), counts.end());
  }
  sketch.Trim();
  return sketch;
}

bool operator==(const QuantileSketch& a, const QuantileSketch& b) {
  if (a.count_ != b.count_ || a.zero_count_ != b.zero_count_ || a.Slots() != b.Slots()) {
    return false;
  }
  if (a.Slots() != 0 && a.offset_ != b.offset_) return false;
  for (size_t slot = 0; slot < a.Slots(); ++slot) {
    if (a.CountAt(slot) != b.CountAt(slot)) return false;
  }
  return true;
}

void QuantileSketch::AddIndex(int32_t index, uint64_t n) {
  count_ += n;
  if (index == 0) {
    zero_count_ += static_cast<uint32_t>(n);
    return;
  }
  Grow(index);
  const size_t slot = static_cast<size_t>(index - offset_);
  const uint64_t total = CountAt(slot) + n;
  if (!wide() && total > kNarrowMax) {
    counts32_ = std::make_unique<std::vector<uint32_t>>(counts16_.begin(), counts16_.end());
    counts16_ = std::vector<uint16_t>();
  }
  SetCountAt(
      slot, static_cast<uint32_t>(std::min<uint64_t>(total, std::numeric_limits<uint32_t>::max())));
}

uint32_t QuantileSketch::CountAt(size_t slot) const {
  return wide() ? (*counts32_)[slot] : counts16_[slot];
}

void QuantileSketch::SetCountAt(size_t slot, uint32_t n) {
  if (wide()) {
    (*counts32_)[slot] = n;
  } else {
    counts16_[slot] = static_cast<uint16_t>(n);
  }
}

namespace {
template <typename T>
void GrowCounts(std::vector<T>& counts, int32_t& offset, int32_t index) {
  // Exact-size growth: a sketch gains buckets rarely and memory is the scarce resource.
  if (counts.empty()) {
    offset = index;
    counts.reserve(1);
    counts.push_back(0);
    return;
  }
  if (index < offset) {
    const auto extra = static_cast<size_t>(offset - index);
    std::vector<T> grown;
    grown.reserve(counts.size() + extra);
    grown.assign(extra, 0);
    grown.insert(grown.end(), counts.begin(), counts.end());
    counts.swap(grown);
    offset = index;
  } else if (index >= offset + static_cast<int64_t>(counts.size())) {
    const auto size = static_cast<size_t>(index - offset) + 1;
    if (counts.capacity() < size) counts.reserve(size);
    counts.resize(size, 0);
  }
}

template <typename T>
void TrimCounts(std::vector<T>& counts, int32_t& offset) {
  size_t first = 0;
  while (first < counts.size() && counts[first] == 0) ++first;
  size_t last = counts.size();
  while (last > first && counts[last - 1] == 0) --last;
  counts.erase(counts.begin() + static_cast<std::ptrdiff_t>(last), counts.end());
  counts.erase(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(first));
  offset += static_cast<int32_t>(first);
  // Give memory back when a window's value range narrows for good.
  if (counts.capacity() > 2 * counts.size() + 8) counts.shrink_to_fit();
}
}  // namespace

void QuantileSketch::Grow(int32_t index) {
  if (wide()) {
    GrowCounts(*counts32_, offset_, index);
  } else {
    GrowCounts(counts16_, offset_, index);
  }
}

void QuantileSketch::Trim() {
  if (wide()) {
    TrimCounts(*counts32_, offset_);
  } else {
    TrimCounts(counts16_, offset_);
  }
}

}  // namespace kubestat::windows
