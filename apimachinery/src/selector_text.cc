#include "selector_text.h"

#include <limits>

namespace kubestat::selector_internal {
namespace {

constexpr char kHex[] = "0123456789abcdef";

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Code points Go's unicode.IsPrint rejects that are likely in practice. Go's exact table is
// larger (every Cc, Cf, Co, Cs and unassigned code point); this covers the controls and the
// invisible formatting characters a hostile selector would use to hide text.
bool IsNonPrinting(char32_t r) {
  if (r < 0x20 || (r >= 0x7F && r <= 0x9F)) return true;
  if (r == 0xAD || r == 0x061C || r == 0x180E || r == 0xFEFF) return true;
  if (r >= 0x200B && r <= 0x200F) return true;
  if (r >= 0x2028 && r <= 0x202E) return true;
  if (r >= 0x2060 && r <= 0x206F) return true;
  if (r >= 0xE000 && r <= 0xF8FF) return true;  // private use
  if (r >= 0xFFF9 && r <= 0xFFFB) return true;
  if (r >= 0xF0000) return true;  // supplementary private use planes
  return false;
}

}  // namespace

size_t ValidRuneLength(std::string_view s, size_t i, char32_t* rune) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    *rune = b0;
    return 1;
  }
  size_t need;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  char32_t value;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
    value = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    value = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    value = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;  // no overlong forms
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() - i < need) return 0;
  const auto b1 = static_cast<unsigned char>(s[i + 1]);
  if (b1 < lo || b1 > hi) return 0;
  value = (value << 6) | (b1 & 0x3F);
  for (size_t k = 2; k < need; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (!IsContinuation(b)) return 0;
    value = (value << 6) | (b & 0x3F);
  }
  *rune = value;
  return need;
}

std::vector<std::string_view> Split(std::string_view s, char separator) {
  std::vector<std::string_view> pieces;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == separator) {
      pieces.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  pieces.push_back(s.substr(start));
  return pieces;
}

std::string GoQuote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    char32_t r;
    const size_t n = ValidRuneLength(s, i, &r);
    if (n == 0) {
      const auto b = static_cast<unsigned char>(s[i]);
      out += "\\x";
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 0xF]);
      ++i;
      continue;
    }
    switch (r) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\v':
        out += "\\v";
        break;
      default:
        if (!IsNonPrinting(r)) {
          out.append(s.substr(i, n));
        } else if (r < 0x20 || r == 0x7F) {
          out += "\\x";
          out.push_back(kHex[r >> 4]);
          out.push_back(kHex[r & 0xF]);
        } else if (r < 0x10000) {
          out += "\\u";
          for (int shift = 12; shift >= 0; shift -= 4) out.push_back(kHex[(r >> shift) & 0xF]);
        } else {
          out += "\\U";
          for (int shift = 28; shift >= 0; shift -= 4) out.push_back(kHex[(r >> shift) & 0xF]);
        }
    }
    i += n;
  }
  out.push_back('"');
  return out;
}

std::optional<int64_t> ParseGoInt64(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  // Accumulate as a negative number so that INT64_MIN is representable.
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  int64_t value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const int digit = c - '0';
    if (value < (kMin + digit) / 10) return std::nullopt;
    value = value * 10 - digit;
  }
  if (negative) return value;
  if (value == kMin) return std::nullopt;
  return -value;
}

}  // namespace kubestat::selector_internal
