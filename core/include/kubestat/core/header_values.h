// Pieces of HTTP field values shared by the Accept-Encoding (gzip.cc) and Accept
// (media_type.cc) negotiations: optional whitespace, case-insensitive tokens, weights.
#ifndef KUBESTAT_CORE_HEADER_VALUES_H_
#define KUBESTAT_CORE_HEADER_VALUES_H_

#include <optional>
#include <string_view>

namespace kubestat::header_values {

// `s` without leading and trailing spaces and tabs (RFC 9110 OWS).
std::string_view TrimOws(std::string_view s);
// Whether `a` equals `b` ignoring ASCII case; `b` must be lower case.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
// An RFC 9110 qvalue in thousandths: "0" ["." 0*3DIGIT] or "1" ["." 0*3("0")];
// std::nullopt for anything else.
std::optional<int> ParseQvalue(std::string_view q);

// Calls visit(element) for each comma-separated element of a field value, trimmed; empty
// elements (", ,") are skipped, as RFC 9110 §5.6.1 asks of recipients.
template <typename Visit>
void ForEachListElement(std::string_view value, Visit visit) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    const std::string_view element = TrimOws(value.substr(0, comma));
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    if (!element.empty()) visit(element);
  }
}

// Calls visit(name, value) for each ';'-separated parameter of `params` ("; q=0.5;a=b"),
// both trimmed; a parameter without '=' has an empty value.
template <typename Visit>
void ForEachParameter(std::string_view params, Visit visit) {
  while (!params.empty()) {
    const size_t semicolon = params.find(';');
    const std::string_view param = TrimOws(params.substr(0, semicolon));
    params =
        semicolon == std::string_view::npos ? std::string_view() : params.substr(semicolon + 1);
    if (param.empty()) continue;
    const size_t equals = param.find('=');
    if (equals == std::string_view::npos) {
      visit(param, std::string_view());
    } else {
      visit(TrimOws(param.substr(0, equals)), TrimOws(param.substr(equals + 1)));
    }
  }
}

}  // namespace kubestat::header_values

#endif  // KUBESTAT_CORE_HEADER_VALUES_H_
