#include "kubestat/windows/usage_histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "kubestat/core/varint.h"

namespace kubestat::windows {
namespace {

constexpr uint8_t kVersion = 1;
// 1.05^908 is past 2^64: no index of a uint64 goes beyond it.
constexpr int32_t kMaxIndex = 910;

}  // namespace

int32_t UsageHistogram::Index(uint64_t value) {
  // ceil(log_g(v)), corrected for rounding so that g^(i-1) < v <= g^i holds exactly as the
  // upper edges compute it.
  const double log_g = std::log(kGrowth);
  int32_t i = static_cast<int32_t>(std::ceil(std::log(static_cast<double>(value)) / log_g));
  i = std::clamp(i, 0, kMaxIndex);
  while (i > 0 && UpperEdge(i - 1) >= value) --i;
  while (i < kMaxIndex && UpperEdge(i) < value) ++i;
  return i;
}

uint64_t UsageHistogram::UpperEdge(int32_t index) {
  const double edge = std::ceil(std::pow(kGrowth, index));
  if (edge >= 1.8e19) return std::numeric_limits<uint64_t>::max();
  return static_cast<uint64_t>(edge);
}

void UsageHistogram::AddAt(int32_t index, uint64_t n) {
  if (counts_.empty()) {
    first_ = index;
    counts_.assign(1, 0);
  } else if (index < first_) {
    counts_.insert(counts_.begin(), static_cast<size_t>(first_ - index), 0);
    first_ = index;
  } else if (index >= first_ + static_cast<int32_t>(counts_.size())) {
    counts_.resize(static_cast<size_t>(index - first_ + 1), 0);
  }
  counts_[static_cast<size_t>(index - first_)] += n;
}

void UsageHistogram::Add(uint64_t value) {
  min_ = count_ == 0 ? value : std::min(min_, value);
  max_ = count_ == 0 ? value : std::max(max_, value);
  ++count_;
  if (value == 0) {
    ++zero_count_;
  } else {
    AddAt(Index(value), 1);
  }
}

void UsageHistogram::Merge(const UsageHistogram& other) {
  if (other.count_ == 0) return;
  min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
  max_ = count_ == 0 ? other.max_ : std::max(max_, other.max_);
  count_ += other.count_;
  zero_count_ += other.zero_count_;
  for (size_t i = 0; i < other.counts_.size(); ++i) {
    if (other.counts_[i] != 0) AddAt(other.first_ + static_cast<int32_t>(i), other.counts_[i]);
  }
}

uint64_t UsageHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  // Nearest rank: the smallest k with k >= p/100 * count.
  // Clamped as a double: near 2^64 samples the product does not fit a uint64_t.
  const double exact = std::ceil(p / 100.0 * static_cast<double>(count_) - 1e-9);
  uint64_t rank = 1;
  if (exact >= static_cast<double>(count_)) {
    rank = count_;
  } else if (exact > 1) {
    rank = static_cast<uint64_t>(exact);
  }
  if (rank <= zero_count_) return std::clamp<uint64_t>(0, min_, max_);
  uint64_t seen = zero_count_;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      return std::clamp(UpperEdge(first_ + static_cast<int32_t>(i)), min_, max_);
    }
  }
  return max_;
}

std::string UsageHistogram::Serialize() const {
  std::string out;
  out.push_back(static_cast<char>(kVersion));
  PutVarint(&out, count_);
  PutVarint(&out, min_);
  PutVarint(&out, max_);
  PutVarint(&out, zero_count_);
  PutVarint(&out, ZigZag(first_));
  PutVarint(&out, counts_.size());
  for (uint64_t c : counts_) PutVarint(&out, c);
  return out;
}

absl::StatusOr<UsageHistogram> UsageHistogram::Parse(std::string_view bytes) {
  const auto bad = [](std::string_view why) {
    return absl::DataLossError(std::string("usage histogram: ") + std::string(why));
  };
  if (bytes.empty() || static_cast<uint8_t>(bytes[0]) != kVersion) return bad("unknown version");
  bytes.remove_prefix(1);
  UsageHistogram h;
  uint64_t first = 0;
  uint64_t n = 0;
  if (!GetVarint(&bytes, &h.count_) || !GetVarint(&bytes, &h.min_) || !GetVarint(&bytes, &h.max_) ||
      !GetVarint(&bytes, &h.zero_count_) || !GetVarint(&bytes, &first) || !GetVarint(&bytes, &n)) {
    return bad("truncated header");
  }
  const int64_t first_index = UnZigZag(first);
  // first_index is bounded before the sum, which could overflow otherwise.
  if (n > static_cast<uint64_t>(kMaxIndex) + 1 || first_index < 0 || first_index > kMaxIndex ||
      first_index + static_cast<int64_t>(n) > kMaxIndex + 1) {
    return bad("bucket range out of bounds");
  }
  h.first_ = static_cast<int32_t>(first_index);
  h.counts_.resize(n);
  uint64_t total = h.zero_count_;
  for (uint64_t& c : h.counts_) {
    if (!GetVarint(&bytes, &c)) return bad("truncated buckets");
    if (c > h.count_ || total > h.count_ - c) return bad("bucket counts exceed the count");
    total += c;
  }
  if (!bytes.empty()) return bad("trailing bytes");
  if (total != h.count_) return bad("bucket counts do not sum to the count");
  if (h.min_ > h.max_) return bad("min above max");
  if (h.count_ == 0 && (h.min_ != 0 || h.max_ != 0 || n != 0)) return bad("values in an empty one");
  if (h.count_ > 0 && ((h.zero_count_ > 0) != (h.min_ == 0)))
    return bad("zero count and min disagree");
  if (h.count_ > 0 && h.max_ > 0 && h.counts_.empty()) return bad("no bucket holds the max");
  return h;
}

}  // namespace kubestat::windows
