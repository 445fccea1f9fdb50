#include "kubestat/core/header_values.h"

namespace kubestat::header_values {
namespace {

bool IsOws(char c) { return c == ' ' || c == '\t'; }

}  // namespace

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && IsOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsOws(s.back())) s.remove_suffix(1);
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (x != b[i]) return false;  // b is lower case
  }
  return true;
}

std::optional<int> ParseQvalue(std::string_view q) {
  if (q.empty() || (q[0] != '0' && q[0] != '1')) return std::nullopt;
  int value = q[0] == '1' ? 1000 : 0;
  q.remove_prefix(1);
  if (q.empty()) return value;
  if (q[0] != '.' || q.size() > 4) return std::nullopt;
  int scale = 100;
  for (char c : q.substr(1)) {
    if (c < '0' || c > '9') return std::nullopt;
    value += (c - '0') * scale;
    scale /= 10;
  }
  if (value > 1000) return std::nullopt;  // "1.5"
  return value;
}

}  // namespace kubestat::header_values
