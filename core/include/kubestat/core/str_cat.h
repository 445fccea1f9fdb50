// StrCat: concatenates strings and numbers into a new std::string.
//
// absl::StrCat would do, but Debian 12's abseil keeps absl::string_view distinct from
// std::string_view, so it rejects std::string_view arguments; this takes anything
// convertible to std::string_view, chars as characters, other integers in decimal, and
// floating-point numbers in their shortest round-trip form. Thread-safe (pure).
#ifndef KUBESTAT_CORE_STR_CAT_H_
#define KUBESTAT_CORE_STR_CAT_H_

#include <charconv>
#include <string>
#include <string_view>
#include <type_traits>

namespace kubestat {
namespace str_cat_internal {

inline void Append(std::string& out, std::string_view piece) { out.append(piece); }
inline void Append(std::string& out, char c) { out.push_back(c); }
template <typename Number>
requires(std::is_arithmetic_v<Number> && !std::is_same_v<Number, char> &&
         !std::is_same_v<Number, bool>) void Append(std::string& out, Number value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, result.ptr);
}

}  // namespace str_cat_internal

template <typename... Pieces>
std::string StrCat(const Pieces&... pieces) {
  std::string out;
  (str_cat_internal::Append(out, pieces), ...);
  return out;
}

}  // namespace kubestat

#endif  // KUBESTAT_CORE_STR_CAT_H_
