// Parses arbitrary bytes as a label selector. When parsing succeeds, the canonical text must
// parse back to an equal selector with the same text, and matching a label map derived from
// the input must give the same answer for both.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "kubestat/apimachinery/label_selector.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<kubestat::LabelSelector> selector = kubestat::LabelSelector::Parse(input);
  if (!selector.ok()) {
    if (selector.status().code() != absl::StatusCode::kInvalidArgument ||
        selector.status().message().empty()) {
      std::abort();
    }
    return 0;
  }
  const std::string canonical = selector->String();
  absl::StatusOr<kubestat::LabelSelector> again = kubestat::LabelSelector::Parse(canonical);
  if (!again.ok() || again->String() != canonical || !(*again == *selector)) std::abort();

  // Labels: for each requirement, bytes of the input decide whether the key is present and
  // whether its value is one the requirement names or a number (for > and <).
  std::map<std::string, std::string> labels;
  size_t i = 0;
  for (const kubestat::LabelRequirement& r : selector->requirements()) {
    const uint8_t b = size == 0 ? 0 : data[i++ % size];
    if ((b & 1) == 0) continue;
    if ((b & 2) != 0 && !r.values().empty()) {
      labels[r.key()] = r.values()[b % r.values().size()];
    } else {
      labels[r.key()] = std::to_string(static_cast<int>(b) - 128);
    }
  }
  labels[std::string(input.substr(0, 16))] = std::string(input.substr(size / 2, 16));
  if (selector->Matches(labels) != again->Matches(labels)) std::abort();
  for (const kubestat::LabelRequirement& r : selector->requirements()) {
    (void)selector->RequiresExactMatch(r.key());
  }
  return 0;
}
