// Percent-encoding of one URL path segment or query value, for the bridge's requests.
#ifndef KUBESTAT_BRIDGE_SRC_PERCENT_ENCODE_H_
#define KUBESTAT_BRIDGE_SRC_PERCENT_ENCODE_H_

#include <cctype>
#include <string>
#include <string_view>

namespace kubestat::bridge::internal {

// Every byte but RFC 3986's unreserved ones (ALPHA DIGIT - . _ ~) as %XX.
inline std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (std::isalnum(b) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
  }
  return out;
}

}  // namespace kubestat::bridge::internal

#endif  // KUBESTAT_BRIDGE_SRC_PERCENT_ENCODE_H_
