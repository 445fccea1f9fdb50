// Kubernetes resource quantities ("120m", "309248Ki", "1.5Gi", "1e3").
//
// Quantity is a C++ implementation of k8s.io/apimachinery/pkg/api/resource.Quantity:
// Parse() accepts exactly the strings ParseQuantity accepts and String() prints exactly
// what Quantity.String() prints, so any Kubernetes client reads what kubestat writes and
// kubestat reads what the API server and kubelets write.
//
// Values. A quantity is an exact decimal number, never a float. Values that fit an int64 at
// their scale are held inline; larger ones (huge mantissas, "1E100") switch to arbitrary
// precision, as Kubernetes does. Parsing keeps precision down to nano (1e-9) and rounds a
// finer non-zero value up, away from zero ("0.9n" is 1n, "-1.1E-9" is -2n). Like
// Kubernetes, parsing silently caps a binary-SI quantity at 2^63-1 in magnitude ("9Ei"),
// while a decimal quantity keeps its value.
//
// Formatting (String()). The number is printed without fractional digits, with the largest
// exponent that loses no precision, in the format the value was parsed or built with:
// decimal SI (n u m "" k M G T P E; exponents above E fall back to "e<n>"), binary SI
// (Ki Mi Gi Ti Pi Ei) or decimal exponent ("e<n>"). Binary values under 1024 in magnitude,
// or not whole, are printed as decimal SI ("0.5Gi" prints "512Mi", 1000 bytes print "1k").
// A parsed string that is already canonical is returned as written ("1E6", "+1", "1.").
//
// Deviations from the Go code, only for inputs Go itself mishandles: an exponent suffix
// outside int32 ("1e4294967296", which Go silently wraps) and a value whose canonical
// exponent would not fit int32 are rejected instead of wrapping; Value()/ScaledValue() round
// away from zero for every representation and report overflow instead of wrapping.
//
// Errors. Parse() returns InvalidArgument quoting the input for anything Kubernetes
// rejects; every failed parse also increments QuantityParseErrorCount(). Arithmetic and the
// int64 accessors return OutOfRange instead of overflowing.
//
// Thread-safety. A Quantity is an immutable value: copy it freely, read it from any
// thread. The free functions are thread-safe.
#ifndef KUBESTAT_APIMACHINERY_QUANTITY_H_
#define KUBESTAT_APIMACHINERY_QUANTITY_H_

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kubestat {

// How a quantity is printed (resource.Format).
enum class QuantityFormat : uint8_t {
  kDecimalSI,        // 12M, 120m, 3k
  kBinarySI,         // 12Mi, 309248Ki
  kDecimalExponent,  // 12e6, 1e-3
};

class Quantity {
 public:
  // Zero, decimal SI; prints "0".
  Quantity() = default;

  // resource.ParseQuantity. The whole text must be a quantity (no surrounding spaces).
  [[nodiscard]] static absl::StatusOr<Quantity> Parse(std::string_view text);

  // CPU in nanocores, decimal SI (resource.NewScaledQuantity(n, -9)): 120000000 is "120m".
  static Quantity FromNanoCores(int64_t nanocores);
  // Memory in bytes, binary SI (resource.NewQuantity(b, BinarySI)): 1073741824 is "1Gi".
  static Quantity FromBytes(int64_t bytes);
  // value/1000 (resource.NewMilliQuantity).
  static Quantity FromMilli(int64_t milli, QuantityFormat format = QuantityFormat::kDecimalSI);
  // value (resource.NewQuantity).
  static Quantity FromInt64(int64_t value, QuantityFormat format);
  // value * 10^scale, decimal SI (resource.NewScaledQuantity).
  static Quantity FromScaled(int64_t value, int32_t scale);

  // The canonical Kubernetes spelling.
  std::string String() const;
  // Appends String() to *out.
  void AppendTo(std::string* out) const;

  QuantityFormat format() const { return format_; }
  bool IsZero() const;
  // -1, 0 or 1.
  int Sign() const;

  // The value rounded up, away from zero, to a whole number of units; OutOfRange when that
  // does not fit an int64. Value() is in units, MilliValue() in thousandths,
  // ScaledValue(s) in units of 10^s (ScaledValue(-9) is nano), AsNanoCores() is
  // ScaledValue(-9).
  [[nodiscard]] absl::StatusOr<int64_t> Value() const;
  [[nodiscard]] absl::StatusOr<int64_t> MilliValue() const;
  [[nodiscard]] absl::StatusOr<int64_t> ScaledValue(int32_t scale) const;
  [[nodiscard]] absl::StatusOr<int64_t> AsNanoCores() const;
  // The nearest double (may lose precision; +-inf beyond the double range).
  double AsApproximateDouble() const;

  // Compares values (the format is ignored): -1, 0 or 1.
  int Compare(const Quantity& other) const;
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.Compare(b) == 0; }
  friend std::strong_ordering operator<=>(const Quantity& a, const Quantity& b) {
    return a.Compare(b) <=> 0;
  }

  // Exact sum and difference. The result keeps this quantity's format, or takes `other`'s
  // when this one is zero (as Quantity.Add/Sub do). OutOfRange when the exact result would
  // need more than 65536 digits or a canonical exponent beyond int32.
  [[nodiscard]] absl::StatusOr<Quantity> Add(const Quantity& other) const;
  [[nodiscard]] absl::StatusOr<Quantity> Sub(const Quantity& other) const;
  // -value, same format.
  Quantity Negated() const;

 private:
  friend class QuantityBuilder;

  // The value is small_ * 10^scale_ when digits_ is empty, else
  // (negative_ ? -1 : 1) * digits_ * 10^scale_ (digits_: decimal magnitude that does not fit
  // an int64, no leading or trailing zeros).
  int64_t small_ = 0;
  int64_t scale_ = 0;
  std::string digits_;
  bool negative_ = false;
  QuantityFormat format_ = QuantityFormat::kDecimalSI;
  // The parsed text when it was already canonical; String() returns it as is.
  std::string spelling_;
};

// resource.ParseQuantity.
[[nodiscard]] absl::StatusOr<Quantity> ParseQuantity(std::string_view text);

// Quantity.UnmarshalJSON: `token` is a raw JSON value: null (zero), a string whose quotes
// are stripped without unescaping, or a bare number; surrounding whitespace is trimmed.
[[nodiscard]] absl::StatusOr<Quantity> ParseQuantityJson(std::string_view token);

// Exactly Quantity::FromNanoCores(n).String(), without building a Quantity.
std::string FormatCpuNanoCores(int64_t nanocores);
// Exactly Quantity::FromBytes(b).String(), without building a Quantity.
std::string FormatMemoryBytes(int64_t bytes);

// Number of failed Parse/ParseQuantity/ParseQuantityJson calls in this process.
uint64_t QuantityParseErrorCount();

}  // namespace kubestat

#endif  // KUBESTAT_APIMACHINERY_QUANTITY_H_
