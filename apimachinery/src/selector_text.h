// Text helpers shared by the label and field selector parsers: Go-compatible quoting, UTF-8
// decoding and integer parsing, so that messages and edge cases match kube-apiserver.
#ifndef KUBESTAT_APIMACHINERY_SRC_SELECTOR_TEXT_H_
#define KUBESTAT_APIMACHINERY_SRC_SELECTOR_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kubestat/core/str_cat.h"

namespace kubestat::selector_internal {

// Concatenation of strings (see kubestat/core/str_cat.h).
using ::kubestat::StrCat;

// The pieces joined by `separator`.
template <typename Strings>
std::string Join(const Strings& pieces, std::string_view separator) {
  std::string out;
  bool first = true;
  for (const auto& piece : pieces) {
    if (!first) out.append(separator);
    first = false;
    out.append(std::string_view(piece));
  }
  return out;
}

// `s` split at every `separator` (like Go's strings.Split: n separators give n+1 pieces).
std::vector<std::string_view> Split(std::string_view s, char separator);

// The length of the UTF-8 sequence starting at s[i] if it is one that Go's
// utf8.DecodeRuneInString accepts (shortest form, no surrogates, at most U+10FFFF), with the
// code point in *rune; 0 when it is invalid (Go then reads the single byte s[i] as U+FFFD).
// Requires i < s.size().
size_t ValidRuneLength(std::string_view s, size_t i, char32_t* rune);

// The text Go's strconv.Quote gives (what fmt prints for %q of a string): double-quoted, with
// \a \b \f \n \r \t \v \\ \" escapes, \xNN for invalid bytes and control bytes, \uNNNN for
// non-printing code points.
std::string GoQuote(std::string_view s);

// strconv.ParseInt(s, 10, 64): optional sign, then one or more decimal digits, in range.
std::optional<int64_t> ParseGoInt64(std::string_view s);

}  // namespace kubestat::selector_internal

#endif  // KUBESTAT_APIMACHINERY_SRC_SELECTOR_TEXT_H_
