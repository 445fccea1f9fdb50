// Parses arbitrary bytes as a quantity (and as a JSON token). Whenever parsing succeeds the
// canonical String() must parse back to an equal value and print itself again (or, for bare
// binary-SI digits, a decimal-SI form that is itself a fixed point); the int64
// accessors and arithmetic must return a value or an error, never crash.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kubestat/apimachinery/quantity.h"

namespace {

void Fail(const char* what, std::string_view input, const std::string& detail) {
  std::fprintf(stderr, "%s: input \"%.*s\" %s\n", what, static_cast<int>(input.size()),
               input.data(), detail.c_str());
  std::abort();
}

void CheckRoundTrip(std::string_view input, const kubestat::Quantity& q) {
  const std::string canonical = q.String();
  absl::StatusOr<kubestat::Quantity> again = kubestat::Quantity::Parse(canonical);
  if (!again.ok()) Fail("canonical form does not parse", input, canonical);
  if (again->Compare(q) != 0) Fail("canonical form changes the value", input, canonical);
  if (const std::string reprinted = again->String(); reprinted != canonical) {
    // As in Kubernetes, a whole binary-SI value that is not a multiple of 1024 prints bare
    // digits, which parse as decimal SI; that decimal form must then be a fixed point.
    const bool bare_binary = q.format() == kubestat::QuantityFormat::kBinarySI &&
                             canonical.find_first_not_of("-0123456789") == std::string::npos;
    absl::StatusOr<kubestat::Quantity> third = kubestat::Quantity::Parse(reprinted);
    if (!bare_binary || !third.ok() || third->String() != reprinted) {
      Fail("canonical form is not a fixed point", input, canonical + " -> " + reprinted);
    }
  }
  // Exercise the accessors and arithmetic: they may fail, never crash or wrap silently.
  (void)q.Value();
  (void)q.MilliValue();
  (void)q.AsNanoCores();
  (void)q.AsApproximateDouble();
  absl::StatusOr<kubestat::Quantity> sum = q.Add(*again);
  if (sum.ok()) {
    absl::StatusOr<kubestat::Quantity> back = sum->Sub(q);
    if (back.ok() && back->Compare(q) != 0) Fail("(q + q) - q != q", input, canonical);
  }
  if (q.Negated().Negated().Compare(q) != 0) Fail("-(-q) != q", input, canonical);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // long mantissas are covered by the unit tests
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (absl::StatusOr<kubestat::Quantity> q = kubestat::Quantity::Parse(input); q.ok()) {
    CheckRoundTrip(input, *q);
  }
  if (absl::StatusOr<kubestat::Quantity> q = kubestat::ParseQuantityJson(input); q.ok()) {
    CheckRoundTrip(input, *q);
  }
  return 0;
}
