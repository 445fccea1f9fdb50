// Binary form of BucketRollup.
//
// version 1: byte 0x01, zigzag varint start (ns since epoch), varint width (ns), varint
// count, varint sum high 64 bits, varint sum low 64 bits, varint min, varint max, 8 bytes
// relative accuracy (IEEE double, little-endian), then the sketch (QuantileSketch::AppendTo).
#include <bit>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "kubestat/core/varint.h"
#include "kubestat/windows/window_engine.h"

namespace kubestat::windows {

namespace {
constexpr char kRollupVersion = 1;
}  // namespace

std::string SerializeRollup(const BucketRollup& rollup) {
  std::string out;
  out.reserve(64);
  out.push_back(kRollupVersion);
  PutVarint(&out, ZigZag(rollup.start.time_since_epoch().count()));
  PutVarint(&out, static_cast<uint64_t>(rollup.width.count()));
  PutVarint(&out, rollup.count);
  PutVarint(&out, absl::Uint128High64(rollup.sum));
  PutVarint(&out, absl::Uint128Low64(rollup.sum));
  PutVarint(&out, rollup.min);
  PutVarint(&out, rollup.max);
  const auto bits = std::bit_cast<uint64_t>(rollup.relative_accuracy);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  rollup.sketch.AppendTo(&out);
  return out;
}

absl::StatusOr<BucketRollup> ParseRollup(std::string_view bytes) {
  if (bytes.empty() || bytes.front() != kRollupVersion) {
    return absl::DataLossError("rollup: unknown version");
  }
  bytes.remove_prefix(1);
  uint64_t start = 0, width = 0, count = 0, sum_high = 0, sum_low = 0, min = 0, max = 0;
  if (!GetVarint(&bytes, &start) || !GetVarint(&bytes, &width) || !GetVarint(&bytes, &count) ||
      !GetVarint(&bytes, &sum_high) || !GetVarint(&bytes, &sum_low) || !GetVarint(&bytes, &min) ||
      !GetVarint(&bytes, &max) || bytes.size() < 8) {
    return absl::DataLossError("rollup: truncated");
  }
  uint64_t bits = 0;
  for (int i = 0; i < 8; ++i)
    bits |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  bytes.remove_prefix(8);
  BucketRollup rollup;
  rollup.relative_accuracy = std::bit_cast<double>(bits);
  if (absl::Status s = SketchMapping::Validate(rollup.relative_accuracy); !s.ok()) {
    return absl::DataLossError(absl::StrCat("rollup: ", s.message()));
  }
  if (width == 0 || width > static_cast<uint64_t>(INT64_MAX)) {
    return absl::DataLossError("rollup: width out of range");
  }
  if (count == 0 || min > max) return absl::DataLossError("rollup: empty or min above max");
  rollup.start = Timestamp(Duration(UnZigZag(start)));
  rollup.width = Duration(static_cast<int64_t>(width));
  rollup.count = count;
  rollup.sum = absl::MakeUint128(sum_high, sum_low);
  rollup.min = min;
  rollup.max = max;
  if (rollup.sum < absl::uint128(count) * min || rollup.sum > absl::uint128(count) * max) {
    return absl::DataLossError("rollup: sum inconsistent with count, min and max");
  }
  absl::StatusOr<QuantileSketch> sketch = QuantileSketch::Parse(&bytes);
  if (!sketch.ok()) return absl::DataLossError(absl::StrCat("rollup: ", sketch.status().message()));
  if (sketch->count() != count) return absl::DataLossError("rollup: sketch count differs");
  if (!bytes.empty()) return absl::DataLossError("rollup: trailing bytes");
  rollup.sketch = *std::move(sketch);
  return rollup;
}

}  // namespace kubestat::windows
