#include "kubestat/core/time.h"

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace kubestat {
namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kSecondsPerDay = 86'400;

// Error messages quote at most this much of the input, so a huge bad value from a peer
// does not produce a huge message.
constexpr size_t kMaxQuoted = 64;

// The input in double quotes, printable ASCII as is and other bytes as \xNN.
// (absl::string_view is not std::string_view in this abseil build, so no absl::StrCat here.)
std::string Quote(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  const bool truncated = text.size() > kMaxQuoted;
  if (truncated) text = text.substr(0, kMaxQuoted);
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c >= 0x20 && c < 0x7F) {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  out += truncated ? "\"..." : "\"";
  return out;
}

absl::Status TimeError(std::string_view text, std::string_view why) {
  std::string message = "invalid RFC 3339 time " + Quote(text) + ": ";
  message += why;
  return absl::InvalidArgumentError(message);
}

absl::Status DurationError(std::string_view text, std::string_view why) {
  std::string message = "invalid duration " + Quote(text) + ": ";
  message += why;
  return absl::InvalidArgumentError(message);
}

constexpr bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Reads exactly `n` digits at text[pos...]; false if any is not a digit.
constexpr bool ReadDigits(std::string_view text, size_t pos, int n, int* value) {
  if (pos + n > text.size()) return false;
  int v = 0;
  for (int i = 0; i < n; ++i) {
    char c = text[pos + i];
    if (!IsDigit(c)) return false;
    v = v * 10 + (c - '0');
  }
  *value = v;
  return true;
}

constexpr bool IsLeapYear(int64_t y) { return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0); }

constexpr int DaysInMonth(int64_t y, int m) {
  constexpr std::array<int, 12> kDays = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeapYear(y) ? 29 : kDays[m - 1];
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
constexpr int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

struct CivilDate {
  int64_t year;
  int month;
  int day;
};

// The inverse of DaysFromCivil.
constexpr CivilDate CivilFromDays(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return {yoe + era * 400 + (month <= 2), month, day};
}

// Seconds and the non-negative nanosecond remainder of t (floor division, so times before
// 1970 truncate toward the past).
void SplitSeconds(Timestamp t, int64_t* seconds, int64_t* nanos) {
  const int64_t ns = t.time_since_epoch().count();
  int64_t s = ns / kNanosPerSecond;
  int64_t r = ns % kNanosPerSecond;
  if (r < 0) {
    r += kNanosPerSecond;
    --s;
  }
  *seconds = s;
  *nanos = r;
}

void AppendPadded(std::string& out, int64_t value, int width) {
  char buf[20];
  int n = 0;
  do {
    buf[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0);
  for (int i = n; i < width; ++i) out.push_back('0');
  while (n > 0) out.push_back(buf[--n]);
}

// "YYYY-MM-DDTHH:MM:SS" of whole seconds since the epoch.
void AppendDateTime(std::string& out, int64_t seconds) {
  int64_t days = seconds / kSecondsPerDay;
  int64_t secs_of_day = seconds % kSecondsPerDay;
  if (secs_of_day < 0) {
    secs_of_day += kSecondsPerDay;
    --days;
  }
  const CivilDate date = CivilFromDays(days);
  AppendPadded(out, date.year, 4);
  out.push_back('-');
  AppendPadded(out, date.month, 2);
  out.push_back('-');
  AppendPadded(out, date.day, 2);
  out.push_back('T');
  AppendPadded(out, secs_of_day / 3600, 2);
  out.push_back(':');
  AppendPadded(out, secs_of_day / 60 % 60, 2);
  out.push_back(':');
  AppendPadded(out, secs_of_day % 60, 2);
}

constexpr std::string_view kGoZeroTime = "0001-01-01T00:00:00Z";

// Unit lengths in nanoseconds, by suffix.
struct DurationUnit {
  std::string_view name;
  uint64_t nanos;
};
constexpr std::array<DurationUnit, 9> kUnits = {{
    {"ns", 1},
    {"us", 1'000},
    {"\xc2\xb5s", 1'000},  // U+00B5 MICRO SIGN
    {"\xce\xbcs", 1'000},  // U+03BC GREEK SMALL LETTER MU
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
    {"d", 86'400'000'000'000},
}};

}  // namespace

absl::StatusOr<Timestamp> ParseRfc3339(std::string_view text) {
  // Layout: YYYY-MM-DDTHH:MM:SS[.F{1,9}](Z|+hh:mm|-hh:mm); every field is fixed width.
  int year, month, day, hour, minute, second;
  if (!ReadDigits(text, 0, 4, &year) || text.size() < 19 || text[4] != '-' ||
      !ReadDigits(text, 5, 2, &month) || text[7] != '-' || !ReadDigits(text, 8, 2, &day) ||
      (text[10] != 'T' && text[10] != 't') || !ReadDigits(text, 11, 2, &hour) || text[13] != ':' ||
      !ReadDigits(text, 14, 2, &minute) || text[16] != ':' || !ReadDigits(text, 17, 2, &second)) {
    return TimeError(text, "want YYYY-MM-DDTHH:MM:SS[.fraction](Z|+hh:mm|-hh:mm)");
  }
  if (month < 1 || month > 12) return TimeError(text, "month out of range");
  if (day < 1 || day > DaysInMonth(year, month)) return TimeError(text, "day out of range");
  if (hour > 23) return TimeError(text, "hour out of range");
  if (minute > 59) return TimeError(text, "minute out of range");
  if (second > 59) return TimeError(text, "second out of range");

  size_t pos = 19;
  int64_t nanos = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < text.size() && IsDigit(text[pos])) {
      if (++digits > 9) return TimeError(text, "more than 9 fractional digits");
      nanos = nanos * 10 + (text[pos] - '0');
      ++pos;
    }
    if (digits == 0) return TimeError(text, "no digits after the decimal point");
    for (int i = digits; i < 9; ++i) nanos *= 10;
  }

  int64_t offset_seconds = 0;
  if (pos >= text.size()) return TimeError(text, "missing time zone (Z or +hh:mm)");
  const char zone = text[pos];
  if (zone == 'Z' || zone == 'z') {
    ++pos;
  } else if (zone == '+' || zone == '-') {
    int oh, om;
    if (!ReadDigits(text, pos + 1, 2, &oh) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !ReadDigits(text, pos + 4, 2, &om)) {
      return TimeError(text, "bad time zone offset, want +hh:mm or -hh:mm");
    }
    if (oh > 23 || om > 59) return TimeError(text, "time zone offset out of range");
    offset_seconds = (oh * 3600 + om * 60) * (zone == '-' ? -1 : 1);
    pos += 6;
  } else {
    return TimeError(text, "bad time zone, want Z, +hh:mm or -hh:mm");
  }
  if (pos != text.size()) return TimeError(text, "trailing characters");

  // Years 0000-9999 are within ±2^38 seconds, so this cannot overflow.
  const int64_t seconds = DaysFromCivil(year, month, day) * kSecondsPerDay + hour * 3600 +
                          minute * 60 + second - offset_seconds;
  // Outside the ~1677-2262 range of int64 nanoseconds: saturate (see time.h).
  int64_t ns;
  if (__builtin_mul_overflow(seconds, kNanosPerSecond, &ns) ||
      __builtin_add_overflow(ns, nanos, &ns)) {
    return seconds < 0 ? Timestamp::min() : Timestamp::max();
  }
  return Timestamp(Duration(ns));
}

std::string FormatRfc3339(Timestamp t) {
  if (t == kZeroTime) return std::string(kGoZeroTime);
  int64_t seconds, nanos;
  SplitSeconds(t, &seconds, &nanos);
  std::string out;
  out.reserve(20);
  AppendDateTime(out, seconds);
  out.push_back('Z');
  return out;
}

std::string FormatRfc3339Nano(Timestamp t) {
  if (t == kZeroTime) return std::string(kGoZeroTime);
  int64_t seconds, nanos;
  SplitSeconds(t, &seconds, &nanos);
  std::string out;
  out.reserve(30);
  AppendDateTime(out, seconds);
  if (nanos != 0) {
    int width = 9;
    while (nanos % 10 == 0) {
      nanos /= 10;
      --width;
    }
    out.push_back('.');
    AppendPadded(out, nanos, width);
  }
  out.push_back('Z');
  return out;
}

absl::StatusOr<Duration> ParseDuration(std::string_view text) {
  // Go's time.ParseDuration grammar: [-+]? ( digits [. digits] unit )+ , or "0".
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return Duration::zero();
  if (s.empty()) return DurationError(text, "empty");

  // The magnitude, in [0, 2^63] so that the most negative int64 stays reachable.
  constexpr uint64_t kLimit = uint64_t{1} << 63;
  uint64_t total = 0;
  while (!s.empty()) {
    // Integer part.
    uint64_t whole = 0;
    bool overflow = false;
    size_t i = 0;
    while (i < s.size() && IsDigit(s[i])) {
      if (whole > (kLimit - (s[i] - '0')) / 10) overflow = true;
      if (!overflow) whole = whole * 10 + (s[i] - '0');
      ++i;
    }
    const bool has_whole = i > 0;
    // Fraction: keep up to 18 digits exactly; later digits cannot change the nanoseconds
    // of any unit (the largest, a day, is < 10^14 ns).
    uint64_t frac = 0;
    uint64_t scale = 1;
    bool has_frac = false;
    if (i < s.size() && s[i] == '.') {
      ++i;
      while (i < s.size() && IsDigit(s[i])) {
        has_frac = true;
        if (scale < 1'000'000'000'000'000'000ULL) {
          frac = frac * 10 + (s[i] - '0');
          scale *= 10;
        }
        ++i;
      }
    }
    if (!has_whole && !has_frac) return DurationError(text, "expected a number");
    if (overflow) return DurationError(text, "out of range");
    s.remove_prefix(i);

    // Unit: the longest run of non-digit, non-dot characters.
    size_t u = 0;
    while (u < s.size() && !IsDigit(s[u]) && s[u] != '.') ++u;
    if (u == 0) return DurationError(text, "missing unit (ns, us, ms, s, m, h, d)");
    const std::string_view unit_name = s.substr(0, u);
    uint64_t unit = 0;
    for (const DurationUnit& candidate : kUnits) {
      if (candidate.name == unit_name) unit = candidate.nanos;
    }
    if (unit == 0) {
      return DurationError(text,
                           "unknown unit " + Quote(unit_name) + " (want ns, us, ms, s, m, h or d)");
    }
    s.remove_prefix(u);

    if (whole > kLimit / unit) return DurationError(text, "out of range");
    uint64_t value = whole * unit;
    // frac / scale of a unit, truncated toward zero; fits: frac < 10^18, unit < 10^14.
    value += static_cast<uint64_t>(static_cast<unsigned __int128>(frac) * unit / scale);
    if (value > kLimit || total > kLimit - value) return DurationError(text, "out of range");
    total += value;
  }
  if (!negative) {
    if (total == kLimit) return DurationError(text, "out of range");
    return Duration(static_cast<int64_t>(total));
  }
  // -2^63 is representable; the conversion through unsigned negation is exact.
  return Duration(static_cast<int64_t>(0 - total));
}

std::string FormatDuration(Duration d) {
  int64_t ns = d.count();
  if (ns == 0) return "0s";
  std::string out;
  uint64_t magnitude = static_cast<uint64_t>(ns);
  if (ns < 0) {
    out.push_back('-');
    magnitude = 0 - magnitude;
  }

  // Appends whole.fraction (fraction of `scale` digits, trailing zeros dropped) + unit.
  auto append_decimal = [&out](uint64_t value, uint64_t scale, std::string_view unit) {
    out += std::to_string(value / scale);
    uint64_t frac = value % scale;
    if (frac != 0) {
      int width = 0;
      for (uint64_t s = scale; s > 1; s /= 10) ++width;
      while (frac % 10 == 0) {
        frac /= 10;
        --width;
      }
      out.push_back('.');
      AppendPadded(out, static_cast<int64_t>(frac), width);
    }
    out += unit;
  };

  constexpr uint64_t kSecond = 1'000'000'000;
  if (magnitude < 1'000) {
    append_decimal(magnitude, 1, "ns");
  } else if (magnitude < 1'000'000) {
    append_decimal(magnitude, 1'000, "us");
  } else if (magnitude < kSecond) {
    append_decimal(magnitude, 1'000'000, "ms");
  } else {
    const uint64_t days = magnitude / (kSecond * kSecondsPerDay);
    const uint64_t hours = magnitude / (kSecond * 3600) % 24;
    const uint64_t minutes = magnitude / (kSecond * 60) % 60;
    const uint64_t seconds_ns = magnitude % (kSecond * 60);
    if (days != 0) out += std::to_string(days) + "d";
    if (hours != 0) out += std::to_string(hours) + "h";
    if (minutes != 0) out += std::to_string(minutes) + "m";
    if (seconds_ns != 0) append_decimal(seconds_ns, kSecond, "s");
  }
  return out;
}

}  // namespace kubestat
