#include "kubestat/core/url.h"

#include "absl/status/status.h"
#include "kubestat/core/str_cat.h"

namespace kubestat {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes `text` into *out; at a malformed escape, returns its offset when `strict`, else
// copies it as written. npos when the whole text was decoded.
size_t Decode(std::string_view text, bool plus_is_space, bool strict, std::string* out) {
  out->reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      const int hi = i + 1 < text.size() ? HexValue(text[i + 1]) : -1;
      const int lo = i + 2 < text.size() ? HexValue(text[i + 2]) : -1;
      if (hi >= 0 && lo >= 0) {
        out->push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
      if (strict) return i;
      out->push_back(c);
    } else if (c == '+' && plus_is_space) {
      out->push_back(' ');
    } else {
      out->push_back(c);
    }
  }
  return std::string_view::npos;
}

}  // namespace

absl::StatusOr<std::string> PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  const size_t bad = Decode(text, plus_is_space, /*strict=*/true, &out);
  if (bad == std::string_view::npos) return out;
  // Quote only the escape itself (at most three bytes), printable.
  std::string escape(text.substr(bad, 3));
  for (char& e : escape) {
    if (static_cast<unsigned char>(e) < 0x21 || static_cast<unsigned char>(e) > 0x7e) e = '?';
  }
  return absl::InvalidArgumentError(StrCat("invalid URL escape \"", escape, "\""));
}

std::string PercentDecodeLenient(std::string_view text, bool plus_is_space) {
  std::string out;
  Decode(text, plus_is_space, /*strict=*/false, &out);
  return out;
}

}  // namespace kubestat
