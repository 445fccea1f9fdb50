// Parses arbitrary bytes as a field selector. When parsing succeeds, the canonical text must
// parse back to an equal selector with the same text, and matching a field map derived from
// the input must give the same answer for both. Escaping then unescaping the input must give
// it back (byte for byte when it is ASCII).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "kubestat/apimachinery/field_selector.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  absl::StatusOr<std::string> unescaped =
      kubestat::UnescapeFieldValue(kubestat::EscapeFieldValue(input));
  if (!unescaped.ok()) std::abort();
  bool ascii = true;
  for (uint8_t b : input) ascii = ascii && b < 0x80;
  if (ascii && *unescaped != input) std::abort();
  (void)kubestat::UnescapeFieldValue(input);

  absl::StatusOr<kubestat::FieldSelector> selector = kubestat::FieldSelector::Parse(input);
  if (!selector.ok()) {
    if (selector.status().code() != absl::StatusCode::kInvalidArgument ||
        selector.status().message().empty()) {
      std::abort();
    }
    return 0;
  }
  const std::string canonical = selector->String();
  absl::StatusOr<kubestat::FieldSelector> again = kubestat::FieldSelector::Parse(canonical);
  if (!again.ok() || again->String() != canonical || !(*again == *selector)) std::abort();

  std::map<std::string, std::string> fields;
  size_t i = 0;
  for (const kubestat::FieldTerm& term : selector->terms()) {
    const uint8_t b = size == 0 ? 0 : data[i++ % size];
    if ((b & 1) == 0) continue;
    fields[term.field] = (b & 2) != 0 ? term.value : std::string(input.substr(b % size));
  }
  if (selector->Matches(fields) != again->Matches(fields)) std::abort();
  (void)selector->CheckSupported({kubestat::kFieldMetadataName, kubestat::kFieldSpecNodeName});
  for (const kubestat::FieldTerm& term : selector->terms()) {
    (void)selector->RequiresExactMatch(term.field);
  }
  return 0;
}
