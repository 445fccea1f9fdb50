// Feeds arbitrary bytes to ParseRfc3339 and ParseDuration. Neither may crash, and whatever
// parses must survive a format/parse round trip unchanged.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kubestat/core/time.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (absl::StatusOr<kubestat::Timestamp> t = kubestat::ParseRfc3339(text); t.ok()) {
    absl::StatusOr<kubestat::Timestamp> again =
        kubestat::ParseRfc3339(kubestat::FormatRfc3339Nano(*t));
    if (!again.ok() || *again != *t) __builtin_trap();
    absl::StatusOr<kubestat::Timestamp> whole = kubestat::ParseRfc3339(kubestat::FormatRfc3339(*t));
    if (!whole.ok() || *whole > *t || *t - *whole >= std::chrono::seconds(1)) __builtin_trap();
  }

  if (absl::StatusOr<kubestat::Duration> d = kubestat::ParseDuration(text); d.ok()) {
    absl::StatusOr<kubestat::Duration> again =
        kubestat::ParseDuration(kubestat::FormatDuration(*d));
    if (!again.ok() || *again != *d) __builtin_trap();
  }
  return 0;
}
