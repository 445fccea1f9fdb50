// Small string helpers of the server's parser and connections. Debian 12's abseil keeps
// absl::string_view distinct from std::string_view, so absl's helpers do not take the
// views used here. Pure; thread-safe.
#ifndef KUBESTAT_HTTP_SRC_SERVER_STRINGS_H_
#define KUBESTAT_HTTP_SRC_SERVER_STRINGS_H_

#include <string_view>

namespace kubestat::http::internal {

inline char AsciiLower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
inline std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace kubestat::http::internal

#endif  // KUBESTAT_HTTP_SRC_SERVER_STRINGS_H_
