// The remainder by a divisor fixed at run time, with multiplications instead of a divide
// instruction: for remainders computed many times by the same number (a ring's slot of a
// bucket).
#ifndef KUBESTAT_CORE_DIVISOR_H_
#define KUBESTAT_CORE_DIVISOR_H_

#include <cstdint>
#include <limits>

#include "absl/numeric/int128.h"

namespace kubestat {

// n % d for every 32-bit n by two multiplications (Lemire, Kaser and Kurz, "Faster remainder
// by direct computation", 2019); larger n fall back to the divide instruction.
class Remainder32 {
 public:
  // d >= 1.
  explicit Remainder32(uint64_t d = 1)
      : d_(d),
        magic_(d >= 2 && d <= std::numeric_limits<uint32_t>::max()
                   ? std::numeric_limits<uint64_t>::max() / d + 1
                   : 0) {}

  uint64_t divisor() const { return d_; }
  uint64_t Of(uint64_t n) const {
    if (magic_ != 0 && n <= std::numeric_limits<uint32_t>::max()) {
      return absl::Uint128High64(absl::uint128(magic_ * n) * d_);
    }
    return n % d_;
  }

 private:
  uint64_t d_;
  uint64_t magic_;  // ceil(2^64 / d) when 2 <= d < 2^32, else 0
};

}  // namespace kubestat

#endif  // KUBESTAT_CORE_DIVISOR_H_
