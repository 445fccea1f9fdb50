// Parses arbitrary bytes as a stored UsageHistogram (the right-sizing history read back from
// the store, where bytes may be corrupt): an error, never a crash; whatever parses serializes
// back to the same histogram, answers percentiles within [min, max], and merges with itself
// into a histogram that parses again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kubestat/windows/usage_histogram.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kubestat::windows::UsageHistogram;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto h = UsageHistogram::Parse(bytes);
  if (!h.ok()) return 0;
  auto again = UsageHistogram::Parse(h->Serialize());
  if (!again.ok() || !(*again == *h)) std::abort();
  for (double p : {1.0, 50.0, 95.0, 100.0}) {
    const uint64_t v = h->Percentile(p);
    if (!h->empty() && (v < h->min() || v > h->max())) std::abort();
  }
  if (h->count() < (uint64_t{1} << 62)) {
    UsageHistogram twice = *h;
    twice.Merge(*h);
    auto merged = UsageHistogram::Parse(twice.Serialize());
    if (!merged.ok() || merged->count() != 2 * h->count() || merged->max() != h->max()) {
      std::abort();
    }
  }
  return 0;
}
