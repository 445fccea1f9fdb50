#include "kubestat/apimachinery/quantity.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace kubestat {
namespace {

constexpr int64_t kNanoScale = -9;
constexpr int64_t kMaxExponent = std::numeric_limits<int32_t>::max();
// Bounds the digits an exact sum may need, so a hostile pair like 1e2000000000 + 1n fails
// instead of allocating gigabytes.
constexpr size_t kMaxArithmeticDigits = 65536;

constexpr uint64_t kPow10[20] = {1ULL,
                                 10ULL,
                                 100ULL,
                                 1000ULL,
                                 10000ULL,
                                 100000ULL,
                                 1000000ULL,
                                 10000000ULL,
                                 100000000ULL,
                                 1000000000ULL,
                                 10000000000ULL,
                                 100000000000ULL,
                                 1000000000000ULL,
                                 10000000000000ULL,
                                 100000000000000ULL,
                                 1000000000000000ULL,
                                 10000000000000000ULL,
                                 100000000000000000ULL,
                                 1000000000000000000ULL,
                                 10000000000000000000ULL};

std::atomic<uint64_t> parse_errors{0};

uint64_t Magnitude(int64_t v) {
  return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
}

// Floor modulo 3 of an exponent: how far it is above the multiple of 3 at or below it.
int FloorMod3(int64_t e) {
  int r = static_cast<int>(e % 3);
  return r < 0 ? r + 3 : r;
}

// Writes the decimal digits of v (v > 0) ending at `end`; returns the first character.
char* WriteDigits(uint64_t v, char* end) {
  char* p = end;
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  return p;
}

std::string DigitsOf(uint64_t v) {
  if (v == 0) return std::string();
  char buf[24];
  char* end = buf + sizeof(buf);
  char* begin = WriteDigits(v, end);
  return std::string(begin, end);
}

// The suffix of a decimal SI exponent (a multiple of 3 in [-9, 18]), or nullptr.
const char* DecimalSiSuffix(int64_t exponent) {
  switch (exponent) {
    case -9:
      return "n";
    case -6:
      return "u";
    case -3:
      return "m";
    case 0:
      return "";
    case 3:
      return "k";
    case 6:
      return "M";
    case 9:
      return "G";
    case 12:
      return "T";
    case 15:
      return "P";
    case 18:
      return "E";
    default:
      return nullptr;
  }
}

constexpr const char* kBinarySuffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
constexpr int kMaxBinaryExponent = 6;

void AppendDecimalSuffix(std::string* out, int64_t exponent, QuantityFormat format) {
  if (format == QuantityFormat::kDecimalSI) {
    if (const char* suffix = DecimalSiSuffix(exponent); suffix != nullptr) {
      out->append(suffix);
      return;
    }
    // Decimal SI has no suffix beyond E (or below n): write the exponent instead of
    // dropping it.
  }
  if (exponent == 0) return;
  out->push_back('e');
  absl::StrAppend(out, exponent);
}

// ---------------------------------------------------------------------------------------
// Arbitrary precision: sign * digits * 10^exponent, digits without leading zeros; an empty
// digit string is zero. Used only for values that do not fit the int64 form.

struct Decimal {
  bool negative = false;
  std::string digits;
  int64_t exponent = 0;

  bool IsZero() const { return digits.empty(); }
};

void StripLeadingZeros(std::string* d) {
  size_t i = 0;
  while (i < d->size() && (*d)[i] == '0') ++i;
  d->erase(0, i);
}

int64_t StripTrailingZeros(std::string* d) {
  size_t n = d->size();
  while (n > 0 && (*d)[n - 1] == '0') --n;
  int64_t removed = static_cast<int64_t>(d->size() - n);
  d->resize(n);
  return removed;
}

void IncrementDigits(std::string* d) {
  for (size_t i = d->size(); i > 0; --i) {
    if ((*d)[i - 1] != '9') {
      ++(*d)[i - 1];
      return;
    }
    (*d)[i - 1] = '0';
  }
  d->insert(d->begin(), '1');
}

// Rounds d up, away from zero, to a multiple of 10^min_exponent. Returns whether exact.
bool RoundUpTo(Decimal* d, int64_t min_exponent) {
  if (d->IsZero() || d->exponent >= min_exponent) return true;
  const uint64_t drop = static_cast<uint64_t>(min_exponent - d->exponent);
  bool inexact = false;
  if (drop >= d->digits.size()) {
    d->digits = "1";  // every digit is dropped and at least one is non-zero
    inexact = true;
  } else {
    const size_t keep = d->digits.size() - drop;
    inexact = d->digits.find_first_not_of('0', keep) != std::string::npos;
    d->digits.resize(keep);
    if (inexact) IncrementDigits(&d->digits);
  }
  d->exponent = min_exponent;
  return !inexact;
}

// Compares |a| and |b|; both non-zero.
int CompareMagnitude(const Decimal& a, const Decimal& b) {
  const int64_t top_a = a.exponent + static_cast<int64_t>(a.digits.size());
  const int64_t top_b = b.exponent + static_cast<int64_t>(b.digits.size());
  if (top_a != top_b) return top_a < top_b ? -1 : 1;
  const size_t common = std::min(a.digits.size(), b.digits.size());
  for (size_t i = 0; i < common; ++i) {
    if (a.digits[i] != b.digits[i]) return a.digits[i] < b.digits[i] ? -1 : 1;
  }
  // Equal leading digits: whichever has a non-zero digit left is larger.
  if (a.digits.find_first_not_of('0', common) != std::string::npos) return 1;
  if (b.digits.find_first_not_of('0', common) != std::string::npos) return -1;
  return 0;
}

int SignOf(const Decimal& d) { return d.IsZero() ? 0 : (d.negative ? -1 : 1); }

int CompareDecimal(const Decimal& a, const Decimal& b) {
  const int sa = SignOf(a);
  const int sb = SignOf(b);
  if (sa != sb) return sa < sb ? -1 : 1;
  if (sa == 0) return 0;
  const int m = CompareMagnitude(a, b);
  return sa > 0 ? m : -m;
}

// Multiplies the magnitude by f (f < 2^32).
void MultiplyDigits(std::string* d, uint32_t f) {
  uint64_t carry = 0;
  for (size_t i = d->size(); i > 0; --i) {
    const uint64_t v = static_cast<uint64_t>((*d)[i - 1] - '0') * f + carry;
    (*d)[i - 1] = static_cast<char>('0' + v % 10);
    carry = v / 10;
  }
  if (carry != 0) d->insert(0, DigitsOf(carry));
}

// The remainder of the magnitude divided by f.
uint32_t RemainderDigits(const std::string& d, uint32_t f) {
  uint64_t r = 0;
  for (char c : d) r = (r * 10 + static_cast<uint64_t>(c - '0')) % f;
  return static_cast<uint32_t>(r);
}

// Divides the magnitude by f exactly (the caller checked the remainder).
void DivideDigits(std::string* d, uint32_t f) {
  uint64_t r = 0;
  for (char& c : *d) {
    r = r * 10 + static_cast<uint64_t>(c - '0');
    c = static_cast<char>('0' + r / f);
    r %= f;
  }
  StripLeadingZeros(d);
}

// x + y, both magnitudes at the same exponent.
std::string AddDigits(const std::string& x, const std::string& y) {
  std::string out(std::max(x.size(), y.size()) + 1, '0');
  int carry = 0;
  size_t i = x.size(), j = y.size(), k = out.size();
  while (k > 0) {
    int v = carry;
    if (i > 0) v += x[--i] - '0';
    if (j > 0) v += y[--j] - '0';
    out[--k] = static_cast<char>('0' + v % 10);
    carry = v / 10;
  }
  StripLeadingZeros(&out);
  return out;
}

// x - y for magnitudes at the same exponent with x >= y.
std::string SubtractDigits(const std::string& x, const std::string& y) {
  std::string out = x;
  int borrow = 0;
  size_t j = y.size();
  for (size_t i = out.size(); i > 0; --i) {
    int v = (out[i - 1] - '0') - borrow - (j > 0 ? y[--j] - '0' : 0);
    borrow = v < 0 ? 1 : 0;
    if (v < 0) v += 10;
    out[i - 1] = static_cast<char>('0' + v);
  }
  StripLeadingZeros(&out);
  return out;
}

// Exact a + b; false when aligning the two would need more than kMaxArithmeticDigits.
bool AddDecimal(const Decimal& a, const Decimal& b, Decimal* sum) {
  if (a.IsZero()) {
    *sum = b;
    return true;
  }
  if (b.IsZero()) {
    *sum = a;
    return true;
  }
  const int64_t exponent = std::min(a.exponent, b.exponent);
  const uint64_t pad_a = static_cast<uint64_t>(a.exponent - exponent);
  const uint64_t pad_b = static_cast<uint64_t>(b.exponent - exponent);
  if (pad_a > kMaxArithmeticDigits || pad_b > kMaxArithmeticDigits ||
      a.digits.size() + pad_a > kMaxArithmeticDigits ||
      b.digits.size() + pad_b > kMaxArithmeticDigits) {
    return false;
  }
  std::string x = a.digits + std::string(pad_a, '0');
  std::string y = b.digits + std::string(pad_b, '0');
  sum->exponent = exponent;
  if (a.negative == b.negative) {
    sum->negative = a.negative;
    sum->digits = AddDigits(x, y);
    return true;
  }
  const int cmp = x.size() != y.size() ? (x.size() < y.size() ? -1 : 1) : x.compare(y);
  if (cmp == 0) {
    *sum = Decimal{};
    return true;
  }
  if (cmp > 0) {
    sum->negative = a.negative;
    sum->digits = SubtractDigits(x, y);
  } else {
    sum->negative = b.negative;
    sum->digits = SubtractDigits(y, x);
  }
  return true;
}

// The magnitude as a uint64 when it has at most 19 digits and fits.
bool DigitsToUint64(const std::string& d, uint64_t* out) {
  if (d.size() > 20) return false;
  uint64_t v = 0;
  for (char c : d) {
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) return false;
    v = v * 10 + digit;
  }
  *out = v;
  return true;
}

const Decimal& MaxBinaryMagnitude() {
  static const Decimal* const kMax = new Decimal{false, "9223372036854775807", 0};
  return *kMax;
}

// ---------------------------------------------------------------------------------------
// The scanner: the same grammar and the same corner cases as resource.parseQuantityString.

struct Scanned {
  bool positive = true;
  std::string_view value;  // sign, integer and fraction as written
  std::string_view num;    // integer digits without leading zeros ("0" when none)
  std::string_view denom;  // fraction digits
  std::string_view suffix;
};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsSuffixLetter(char c) {
  switch (c) {
    case 'e':
    case 'E':
    case 'i':
    case 'n':
    case 'u':
    case 'm':
    case 'k':
    case 'K':
    case 'M':
    case 'G':
    case 'T':
    case 'P':
      return true;
    default:
      return false;
  }
}

// Returns false when the text does not have the shape of a quantity.
bool Scan(std::string_view s, Scanned* out) {
  const size_t end = s.size();
  size_t pos = 0;
  if (pos < end && (s[0] == '-' || s[0] == '+')) {
    out->positive = s[0] == '+';
    ++pos;
  }
  while (pos < end && s[pos] == '0') ++pos;
  if (pos >= end) {
    out->num = "0";
    out->value = "0";
    return true;
  }
  const size_t num_start = pos;
  while (pos < end && IsDigit(s[pos])) ++pos;
  out->num = s.substr(num_start, pos - num_start);
  if (pos >= end) {
    out->value = s;
    return true;
  }
  if (out->num.empty()) out->num = "0";
  if (s[pos] == '.') {
    ++pos;
    const size_t denom_start = pos;
    while (pos < end && IsDigit(s[pos])) ++pos;
    out->denom = s.substr(denom_start, pos - denom_start);
    if (pos >= end) {
      out->value = s;
      return true;
    }
  }
  out->value = s.substr(0, pos);
  const size_t suffix_start = pos;
  while (pos < end && IsSuffixLetter(s[pos])) ++pos;
  if (pos < end && (s[pos] == '-' || s[pos] == '+')) ++pos;
  while (pos < end && IsDigit(s[pos])) ++pos;
  if (pos < end) return false;
  out->suffix = s.substr(suffix_start);
  return true;
}

struct Suffix {
  int base = 10;
  int64_t exponent = 0;
  QuantityFormat format = QuantityFormat::kDecimalSI;
};

enum class SuffixResult { kOk, kUnknown, kExponentOutOfRange };

// strconv.ParseInt(s, 10, 64): optional sign, at least one digit, no overflow.
bool ParseInt64(std::string_view s, int64_t* out) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return false;
  uint64_t v = 0;
  const uint64_t limit = negative ? Magnitude(std::numeric_limits<int64_t>::min())
                                  : static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (char c : s) {
    if (!IsDigit(c)) return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (limit - digit) / 10) return false;
    v = v * 10 + digit;
  }
  *out = negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  return true;
}

SuffixResult InterpretSuffix(std::string_view s, Suffix* out) {
  static constexpr struct {
    std::string_view text;
    int base;
    int exponent;
    QuantityFormat format;
  } kTable[] = {
      {"", 10, 0, QuantityFormat::kDecimalSI},   {"n", 10, -9, QuantityFormat::kDecimalSI},
      {"u", 10, -6, QuantityFormat::kDecimalSI}, {"m", 10, -3, QuantityFormat::kDecimalSI},
      {"k", 10, 3, QuantityFormat::kDecimalSI},  {"M", 10, 6, QuantityFormat::kDecimalSI},
      {"G", 10, 9, QuantityFormat::kDecimalSI},  {"T", 10, 12, QuantityFormat::kDecimalSI},
      {"P", 10, 15, QuantityFormat::kDecimalSI}, {"E", 10, 18, QuantityFormat::kDecimalSI},
      {"Ki", 2, 10, QuantityFormat::kBinarySI},  {"Mi", 2, 20, QuantityFormat::kBinarySI},
      {"Gi", 2, 30, QuantityFormat::kBinarySI},  {"Ti", 2, 40, QuantityFormat::kBinarySI},
      {"Pi", 2, 50, QuantityFormat::kBinarySI},  {"Ei", 2, 60, QuantityFormat::kBinarySI},
  };
  for (const auto& entry : kTable) {
    if (entry.text == s) {
      *out = Suffix{entry.base, entry.exponent, entry.format};
      return SuffixResult::kOk;
    }
  }
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    int64_t exponent = 0;
    if (!ParseInt64(s.substr(1), &exponent)) return SuffixResult::kUnknown;
    // Kubernetes truncates the exponent to int32, silently changing the value; refuse it.
    if (exponent > kMaxExponent || exponent < std::numeric_limits<int32_t>::min()) {
      return SuffixResult::kExponentOutOfRange;
    }
    *out = Suffix{10, exponent, QuantityFormat::kDecimalExponent};
    return SuffixResult::kOk;
  }
  return SuffixResult::kUnknown;
}

constexpr std::string_view kFormatMessage =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

// This abseil build has its own string_view type.
absl::string_view Abseil(std::string_view s) { return absl::string_view(s.data(), s.size()); }

absl::Status ParseError(std::string_view text, std::string_view reason) {
  parse_errors.fetch_add(1, std::memory_order_relaxed);
  constexpr size_t kMaxQuoted = 64;
  std::string quoted = absl::CHexEscape(Abseil(text.substr(0, kMaxQuoted)));
  if (text.size() > kMaxQuoted) absl::StrAppend(&quoted, "...(", text.size(), " bytes)");
  return absl::InvalidArgumentError(
      absl::StrCat("invalid quantity \"", quoted, "\": ", Abseil(reason)));
}

int64_t TrailingDecimalZeros(uint64_t m) {
  int64_t n = 0;
  while (m >= 10 && m % 10 == 0) {
    m /= 10;
    ++n;
  }
  return n;
}

}  // namespace

// Access to Quantity's representation for the helpers above.
class QuantityBuilder {
 public:
  static Quantity Small(int64_t value, int64_t scale, QuantityFormat format) {
    Quantity q;
    q.small_ = value;
    q.scale_ = value == 0 ? 0 : scale;
    q.format_ = format;
    return q;
  }

  // Normalises d into the int64 form when it fits.
  static Quantity FromDecimal(Decimal d, QuantityFormat format) {
    StripLeadingZeros(&d.digits);
    if (d.digits.empty()) return Small(0, 0, format);
    d.exponent += StripTrailingZeros(&d.digits);
    uint64_t m = 0;
    if (DigitsToUint64(d.digits, &m)) {
      constexpr uint64_t kMaxPositive = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
      if (m <= kMaxPositive) {
        const int64_t v = static_cast<int64_t>(m);
        return Small(d.negative ? -v : v, d.exponent, format);
      }
      if (d.negative && m == kMaxPositive + 1) {
        return Small(std::numeric_limits<int64_t>::min(), d.exponent, format);
      }
    }
    Quantity q;
    q.digits_ = std::move(d.digits);
    q.negative_ = d.negative;
    q.scale_ = d.exponent;
    q.format_ = format;
    return q;
  }

  static Decimal ToDecimal(const Quantity& q) {
    if (q.digits_.empty()) {
      return Decimal{q.small_ < 0, DigitsOf(Magnitude(q.small_)), q.scale_};
    }
    return Decimal{q.negative_, q.digits_, q.scale_};
  }

  static bool IsSmall(const Quantity& q) { return q.digits_.empty(); }
  static int64_t SmallValue(const Quantity& q) { return q.small_; }
  static int64_t Scale(const Quantity& q) { return q.scale_; }
  static void SetSpelling(Quantity* q, std::string_view text) { q->spelling_ = text; }

  // Whether String() would print an exponent that Parse() accepts back.
  static bool CanonicalExponentFits(const Quantity& q) {
    if (q.digits_.empty()) {
      if (q.small_ == 0 || q.scale_ <= kMaxExponent - 19) return true;
      return q.scale_ + TrailingDecimalZeros(Magnitude(q.small_)) <= kMaxExponent;
    }
    return q.scale_ <= kMaxExponent;
  }
};

namespace {

// The fast path of resource.ParseQuantity: at most 18 significant digits at a scale no
// finer than nano. Returns false when the value needs the arbitrary-precision path.
bool ParseInt64Form(std::string_view text, const Scanned& sc, const Suffix& suffix, Quantity* out) {
  int64_t precision = 0;
  int64_t scale = 0;
  int shift = 0;
  if (suffix.format == QuantityFormat::kBinarySI) {
    if (!sc.denom.empty()) return false;
    shift = static_cast<int>(suffix.exponent);
    // Upstream's estimate of the decimal digits a binary suffix adds (exponent*3/10).
    precision = 15 - static_cast<int64_t>(sc.num.size()) - suffix.exponent * 3 / 10 - 1;
  } else {
    scale = suffix.exponent;
    precision = 18 - static_cast<int64_t>(sc.num.size() + sc.denom.size());
  }
  if (precision < 0) return false;
  scale -= static_cast<int64_t>(sc.denom.size());
  if (scale < kNanoScale) return false;

  char shifted[19];
  size_t n = 0;
  for (char c : sc.num) shifted[n++] = c;
  for (char c : sc.denom) shifted[n++] = c;
  uint64_t value = 0;
  for (size_t i = 0; i < n; ++i) value = value * 10 + static_cast<uint64_t>(shifted[i] - '0');
  if (shift > 0 && value > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) >> shift)) {
    return false;
  }
  int64_t result = static_cast<int64_t>(value << shift);
  if (!sc.positive) result = -result;

  bool canonical;
  if (suffix.format == QuantityFormat::kBinarySI) {
    canonical = suffix.exponent % 10 == 0 && (value & 0x07) != 0;
  } else {
    const bool ends_000 =
        n >= 3 && shifted[n - 1] == '0' && shifted[n - 2] == '0' && shifted[n - 3] == '0';
    canonical = scale % 3 == 0 && !ends_000 && shifted[0] != '0';
  }
  *out = QuantityBuilder::Small(result, scale, suffix.format);
  if (canonical) QuantityBuilder::SetSpelling(out, text);
  return true;
}

}  // namespace

absl::StatusOr<Quantity> Quantity::Parse(std::string_view text) {
  if (text.empty()) return ParseError(text, kFormatMessage);
  if (text == "0") {
    Quantity zero;
    zero.spelling_ = "0";
    return zero;
  }
  Scanned sc;
  if (!Scan(text, &sc)) return ParseError(text, kFormatMessage);
  Suffix suffix;
  switch (InterpretSuffix(sc.suffix, &suffix)) {
    case SuffixResult::kOk:
      break;
    case SuffixResult::kUnknown:
      return ParseError(text, "unable to parse quantity's suffix");
    case SuffixResult::kExponentOutOfRange:
      return ParseError(text, "exponent out of range");
  }

  Quantity q;
  if (!ParseInt64Form(text, sc, suffix, &q)) {
    // Arbitrary precision, as upstream's inf.Dec path.
    Decimal d;
    d.negative = !sc.positive;
    for (char c : sc.value) {
      if (IsDigit(c)) d.digits.push_back(c);
    }
    if (d.digits.empty()) return ParseError(text, "unable to parse numeric part of quantity");
    StripLeadingZeros(&d.digits);
    d.exponent = -static_cast<int64_t>(sc.denom.size());
    QuantityFormat format = suffix.format;
    if (suffix.base == 10) {
      d.exponent += suffix.exponent;
    } else if (!d.IsZero()) {
      // Multiply by 2^exponent (exponent <= 60) in steps that keep the carry in 64 bits.
      int64_t remaining = suffix.exponent;
      while (remaining > 0) {
        const int step = static_cast<int>(std::min<int64_t>(remaining, 30));
        MultiplyDigits(&d.digits, 1U << step);
        remaining -= step;
      }
    }
    // Keep precision down to nano; round anything finer up, away from zero.
    RoundUpTo(&d, kNanoScale);
    if (format == QuantityFormat::kBinarySI && !d.IsZero()) {
      if (CompareMagnitude(d, MaxBinaryMagnitude()) > 0) {
        const bool negative = d.negative;
        d = MaxBinaryMagnitude();
        d.negative = negative;
      }
      if (d.exponent + static_cast<int64_t>(d.digits.size()) <= 0) {
        format = QuantityFormat::kDecimalSI;  // 0 < |value| < 1
      }
    }
    q = QuantityBuilder::FromDecimal(std::move(d), format);
  }
  if (!QuantityBuilder::CanonicalExponentFits(q)) {
    return ParseError(text, "exponent out of range");
  }
  return q;
}

absl::StatusOr<Quantity> ParseQuantity(std::string_view text) { return Quantity::Parse(text); }

namespace {

// strings.TrimSpace: ASCII white space and the Unicode White_Space code points in UTF-8.
size_t LeadingSpaceLength(std::string_view s) {
  if (s.empty()) return 0;
  const unsigned char c = static_cast<unsigned char>(s[0]);
  if (c == ' ' || (c >= '\t' && c <= '\r')) return 1;
  auto starts = [&](std::string_view p) { return s.substr(0, p.size()) == p; };
  if (starts("\xC2\x85") || starts("\xC2\xA0")) return 2;
  if (starts("\xE1\x9A\x80") || starts("\xE2\x80\xA8") || starts("\xE2\x80\xA9") ||
      starts("\xE2\x80\xAF") || starts("\xE2\x81\x9F") || starts("\xE3\x80\x80")) {
    return 3;
  }
  if (s.size() >= 3 && c == 0xE2 && static_cast<unsigned char>(s[1]) == 0x80) {
    const unsigned char c2 = static_cast<unsigned char>(s[2]);
    if (c2 >= 0x80 && c2 <= 0x8A) return 3;  // U+2000..U+200A
  }
  return 0;
}

size_t TrailingSpaceLength(std::string_view s) {
  for (size_t len : {1, 2, 3}) {
    if (s.size() >= len && LeadingSpaceLength(s.substr(s.size() - len)) == len) return len;
  }
  return 0;
}

}  // namespace

absl::StatusOr<Quantity> ParseQuantityJson(std::string_view token) {
  if (token == "null") return Quantity();
  if (token.size() >= 2 && token.front() == '"' && token.back() == '"') {
    token = token.substr(1, token.size() - 2);
  }
  while (size_t n = LeadingSpaceLength(token)) token.remove_prefix(n);
  while (size_t n = TrailingSpaceLength(token)) token.remove_suffix(n);
  return Quantity::Parse(token);
}

Quantity Quantity::FromNanoCores(int64_t nanocores) {
  return QuantityBuilder::Small(nanocores, kNanoScale, QuantityFormat::kDecimalSI);
}

Quantity Quantity::FromBytes(int64_t bytes) {
  return QuantityBuilder::Small(bytes, 0, QuantityFormat::kBinarySI);
}

Quantity Quantity::FromMilli(int64_t milli, QuantityFormat format) {
  return QuantityBuilder::Small(milli, -3, format);
}

Quantity Quantity::FromInt64(int64_t value, QuantityFormat format) {
  return QuantityBuilder::Small(value, 0, format);
}

Quantity Quantity::FromScaled(int64_t value, int32_t scale) {
  return QuantityBuilder::Small(value, scale, QuantityFormat::kDecimalSI);
}

bool Quantity::IsZero() const { return digits_.empty() && small_ == 0; }

int Quantity::Sign() const {
  if (!digits_.empty()) return negative_ ? -1 : 1;
  return small_ == 0 ? 0 : (small_ < 0 ? -1 : 1);
}

int Quantity::Compare(const Quantity& other) const {
  if (digits_.empty() && other.digits_.empty()) {
    if (scale_ == other.scale_) {
      return small_ == other.small_ ? 0 : (small_ < other.small_ ? -1 : 1);
    }
    if (small_ == 0 || other.small_ == 0) {
      // A zero compares by sign whatever its scale.
      const int a = Sign();
      const int b = other.Sign();
      return a == b ? 0 : (a < b ? -1 : 1);
    }
    const int64_t diff = scale_ - other.scale_;
    if (diff >= -18 && diff <= 18) {
      __int128 a = small_;
      __int128 b = other.small_;
      if (diff > 0) {
        a *= static_cast<__int128>(kPow10[diff]);
      } else {
        b *= static_cast<__int128>(kPow10[-diff]);
      }
      return a == b ? 0 : (a < b ? -1 : 1);
    }
  }
  return CompareDecimal(QuantityBuilder::ToDecimal(*this), QuantityBuilder::ToDecimal(other));
}

absl::StatusOr<Quantity> Quantity::Add(const Quantity& other) const {
  const QuantityFormat format = IsZero() ? other.format_ : format_;
  Quantity result;
  bool done = false;
  if (digits_.empty() && other.digits_.empty()) {
    int64_t a = small_, b = other.small_;
    int64_t scale = std::min(scale_, other.scale_);
    if (a == 0) scale = other.scale_;
    if (b == 0) scale = scale_;
    bool overflow = false;
    if (a != 0 && scale_ > scale) {
      const int64_t up = scale_ - scale;
      overflow = up > 18 || __builtin_mul_overflow(a, static_cast<int64_t>(kPow10[up]), &a);
    }
    if (!overflow && b != 0 && other.scale_ > scale) {
      const int64_t up = other.scale_ - scale;
      overflow = up > 18 || __builtin_mul_overflow(b, static_cast<int64_t>(kPow10[up]), &b);
    }
    int64_t sum = 0;
    if (!overflow && !__builtin_add_overflow(a, b, &sum)) {
      result = QuantityBuilder::Small(sum, scale, format);
      done = true;
    }
  }
  if (!done) {
    Decimal sum;
    if (!AddDecimal(QuantityBuilder::ToDecimal(*this), QuantityBuilder::ToDecimal(other), &sum)) {
      return absl::OutOfRangeError(absl::StrCat("quantity sum ", String(), " + ", other.String(),
                                                " needs more than ", kMaxArithmeticDigits,
                                                " digits"));
    }
    result = QuantityBuilder::FromDecimal(std::move(sum), format);
  }
  if (!QuantityBuilder::CanonicalExponentFits(result)) {
    return absl::OutOfRangeError(
        absl::StrCat("quantity sum ", String(), " + ", other.String(), " is out of range"));
  }
  return result;
}

absl::StatusOr<Quantity> Quantity::Sub(const Quantity& other) const { return Add(other.Negated()); }

Quantity Quantity::Negated() const {
  if (digits_.empty() && small_ != std::numeric_limits<int64_t>::min()) {
    return QuantityBuilder::Small(-small_, scale_, format_);
  }
  Decimal d = QuantityBuilder::ToDecimal(*this);
  d.negative = !d.negative;
  return QuantityBuilder::FromDecimal(std::move(d), format_);
}

absl::StatusOr<int64_t> Quantity::ScaledValue(int32_t scale) const {
  if (IsZero()) return 0;
  if (digits_.empty()) {
    const int64_t delta = scale_ - scale;
    if (delta >= 0) {
      int64_t result = 0;
      if (delta <= 18 &&
          !__builtin_mul_overflow(small_, static_cast<int64_t>(kPow10[delta]), &result)) {
        return result;
      }
    } else {
      // Round away from zero: a finer digit that is not zero adds one unit.
      if (-delta >= 19) return small_ < 0 ? -1 : 1;
      const int64_t divisor = static_cast<int64_t>(kPow10[-delta]);
      int64_t result = small_ / divisor;
      if (small_ % divisor != 0) result += small_ < 0 ? -1 : 1;
      return result;
    }
  } else if (scale_ < scale) {
    Decimal d = QuantityBuilder::ToDecimal(*this);
    RoundUpTo(&d, scale);
    Quantity rounded = QuantityBuilder::FromDecimal(std::move(d), format_);
    if (rounded.digits_.empty() && rounded.scale_ <= scale) return rounded.small_;
    if (rounded.digits_.empty()) return rounded.ScaledValue(scale);
  }
  return absl::OutOfRangeError(
      absl::StrCat("quantity ", String(), " does not fit an int64 at scale 10^", scale));
}

absl::StatusOr<int64_t> Quantity::Value() const { return ScaledValue(0); }
absl::StatusOr<int64_t> Quantity::MilliValue() const { return ScaledValue(-3); }
absl::StatusOr<int64_t> Quantity::AsNanoCores() const { return ScaledValue(-9); }

double Quantity::AsApproximateDouble() const {
  constexpr int64_t kExactInDouble = int64_t{1} << 53;
  if (digits_.empty()) {
    if (small_ == 0) return 0.0;
    if (small_ >= -kExactInDouble && small_ <= kExactInDouble && scale_ >= -22 && scale_ <= 22) {
      // Both operands are exact, so one multiplication or division rounds correctly.
      const double v = static_cast<double>(small_);
      static constexpr double kExactPow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
      const double p = kExactPow10[scale_ < 0 ? -scale_ : scale_];
      return scale_ < 0 ? v / p : v * p;
    }
  }
  const Decimal d = QuantityBuilder::ToDecimal(*this);
  const std::string text = absl::StrCat(d.negative ? "-" : "", d.digits, "e", d.exponent);
  return std::strtod(text.c_str(), nullptr);
}

namespace {

// |q| compared with 1024.
int CompareMagnitudeWith1024(const Quantity& q) {
  if (QuantityBuilder::IsSmall(q)) {
    const unsigned __int128 m = Magnitude(QuantityBuilder::SmallValue(q));
    const int64_t scale = QuantityBuilder::Scale(q);
    if (scale >= 4) return 1;     // a non-zero multiple of 10^4
    if (scale <= -17) return -1;  // below 2^63 * 10^-17
    const unsigned __int128 lhs = scale >= 0 ? m * kPow10[scale] : m;
    const unsigned __int128 rhs =
        scale >= 0 ? 1024 : static_cast<unsigned __int128>(1024) * kPow10[-scale];
    return lhs == rhs ? 0 : (lhs < rhs ? -1 : 1);
  }
  return CompareMagnitude(QuantityBuilder::ToDecimal(q), Decimal{false, "1024", 0});
}

void AppendSigned(std::string* out, bool negative, uint64_t magnitude) {
  char buf[24];
  char* end = buf + sizeof(buf);
  char* begin = WriteDigits(magnitude, end);
  if (negative) *--begin = '-';
  out->append(begin, end);
}

}  // namespace

void Quantity::AppendTo(std::string* out) const {
  if (!spelling_.empty()) {
    out->append(spelling_);
    return;
  }
  if (IsZero()) {
    out->push_back('0');
    return;
  }
  QuantityFormat format = format_;
  if (format == QuantityFormat::kBinarySI) {
    if (CompareMagnitudeWith1024(*this) < 0) {
      format = QuantityFormat::kDecimalSI;  // avoids rounding, and confusion
    } else if (digits_.empty()) {
      // Binary SI prints whole numbers only; anything else is written as decimal SI.
      if (scale_ >= 0) {
        int64_t whole = 0;
        if (scale_ <= 18 &&
            !__builtin_mul_overflow(small_, static_cast<int64_t>(kPow10[scale_]), &whole)) {
          uint64_t m = Magnitude(whole);
          int exponent = 0;
          // Upstream leaves the most negative int64 unfactored; so does this.
          if (whole != std::numeric_limits<int64_t>::min()) {
            while (m >= 1024 && m % 1024 == 0) {
              m /= 1024;
              ++exponent;
            }
          }
          AppendSigned(out, whole < 0, m);
          out->append(kBinarySuffixes[exponent]);
          return;
        }
      } else if (scale_ < -18 || small_ % static_cast<int64_t>(kPow10[-scale_]) != 0) {
        format = QuantityFormat::kDecimalSI;
      } else {
        const int64_t whole = small_ / static_cast<int64_t>(kPow10[-scale_]);
        Quantity::FromBytes(whole).AppendTo(out);
        return;
      }
    }
    if (format == QuantityFormat::kBinarySI) {
      // Arbitrary precision.
      Decimal d = QuantityBuilder::ToDecimal(*this);
      if (!RoundUpTo(&d, 0) || d.exponent > static_cast<int64_t>(kMaxArithmeticDigits)) {
        format = QuantityFormat::kDecimalSI;
      } else {
        d.digits.append(static_cast<size_t>(d.exponent), '0');
        int exponent = 0;
        while (exponent < kMaxBinaryExponent && RemainderDigits(d.digits, 1024) == 0) {
          DivideDigits(&d.digits, 1024);
          ++exponent;
        }
        if (d.negative) out->push_back('-');
        out->append(d.digits);
        out->append(kBinarySuffixes[exponent]);
        return;
      }
    }
  }

  // Decimal SI or exponent: no fractional digits, the largest exponent that is a multiple
  // of 3 and loses nothing.
  if (digits_.empty()) {
    uint64_t m = Magnitude(small_);
    int64_t exponent = scale_;
    while (m >= 10 && m % 10 == 0) {
      m /= 10;
      ++exponent;
    }
    const int pad = FloorMod3(exponent);
    AppendSigned(out, small_ < 0, m);
    out->append(static_cast<size_t>(pad), '0');
    AppendDecimalSuffix(out, exponent - pad, format);
    return;
  }
  const int pad = FloorMod3(scale_);
  if (negative_) out->push_back('-');
  out->append(digits_);
  out->append(static_cast<size_t>(pad), '0');
  AppendDecimalSuffix(out, scale_ - pad, format);
}

std::string Quantity::String() const {
  std::string out;
  AppendTo(&out);
  return out;
}

std::string FormatCpuNanoCores(int64_t nanocores) {
  if (nanocores == 0) return "0";
  uint64_t m = Magnitude(nanocores);
  int exponent = -9;
  while (m >= 10 && m % 10 == 0) {
    m /= 10;
    ++exponent;
  }
  const int pad = FloorMod3(exponent);
  exponent -= pad;
  m *= kPow10[pad];  // pad <= the zeros just removed, so this cannot overflow
  char buf[32];
  char* end = buf + sizeof(buf);
  const char* suffix = DecimalSiSuffix(exponent);  // exponent is in [-9, 9]
  const size_t suffix_len = std::char_traits<char>::length(suffix);
  end -= suffix_len;
  std::char_traits<char>::copy(end, suffix, suffix_len);
  char* begin = WriteDigits(m, end);
  if (nanocores < 0) *--begin = '-';
  return std::string(begin, buf + sizeof(buf));
}

std::string FormatMemoryBytes(int64_t bytes) {
  if (bytes == 0) return "0";
  uint64_t m = Magnitude(bytes);
  char buf[32];
  char* const limit = buf + sizeof(buf);
  char* end = limit;
  if (m < 1024) {
    // Written as decimal SI: 1000 bytes are "1k".
    int exponent = 0;
    while (m >= 10 && m % 10 == 0) {
      m /= 10;
      ++exponent;
    }
    const int pad = exponent % 3;
    exponent -= pad;
    m *= kPow10[pad];
    if (exponent == 3) *--end = 'k';
  } else {
    int exponent = 0;
    if (bytes != std::numeric_limits<int64_t>::min()) {
      while (m >= 1024 && m % 1024 == 0) {
        m /= 1024;
        ++exponent;
      }
    }
    if (exponent > 0) {
      *--end = kBinarySuffixes[exponent][1];
      *--end = kBinarySuffixes[exponent][0];
    }
  }
  char* begin = WriteDigits(m, end);
  if (bytes < 0) *--begin = '-';
  return std::string(begin, limit);
}

uint64_t QuantityParseErrorCount() { return parse_errors.load(std::memory_order_relaxed); }

}  // namespace kubestat
