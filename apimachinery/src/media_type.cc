#include "kubestat/apimachinery/media_type.h"

#include <string>
#include <vector>

#include "kubestat/core/header_values.h"

namespace kubestat {
namespace {

using header_values::EqualsIgnoreCase;
using header_values::ForEachListElement;
using header_values::ForEachParameter;
using header_values::ParseQvalue;
using header_values::TrimOws;

// How an offered type is matched: weight, specificity (2 exact, 1 "type/*", 0 "*/*") and
// the position of the range in the header.
struct Match {
  int weight = 0;
  int specificity = -1;  // -1: no range matched
  size_t position = 0;
};

// Lower-case ASCII copy.
std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// The weight of a range's parameters, in thousandths (0 when q is malformed); std::nullopt
// when the range asks for a conversion (as, g, v), which kubestat does not do.
std::optional<int> WeightOf(std::string_view params) {
  std::optional<int> weight = 1000;
  bool conversion = false;
  ForEachParameter(params, [&](std::string_view name, std::string_view value) {
    if (EqualsIgnoreCase(name, "q")) {
      if (!value.empty() && value.front() == '.') {
        weight = ParseQvalue(std::string("0").append(value)).value_or(0);
      } else {
        weight = ParseQvalue(value).value_or(0);
      }
    } else if (EqualsIgnoreCase(name, "as") || EqualsIgnoreCase(name, "g") ||
               EqualsIgnoreCase(name, "v")) {
      conversion = true;
    }
  });
  if (conversion) return std::nullopt;
  return weight;
}

}  // namespace

std::optional<size_t> NegotiateMediaType(std::string_view accept,
                                         std::span<const std::string_view> offered) {
  if (TrimOws(accept).empty()) accept = "*/*";
  std::vector<Match> matches(offered.size());
  size_t position = 0;
  ForEachListElement(accept, [&](std::string_view element) {
    const size_t semicolon = element.find(';');
    const std::string range = Lower(TrimOws(element.substr(0, semicolon)));
    const std::string_view params =
        semicolon == std::string_view::npos ? std::string_view() : element.substr(semicolon + 1);
    const size_t at = position++;
    std::string_view type = range;
    std::string_view subtype = "*";
    if (range != "*") {
      const size_t slash = range.find('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == range.size()) return;
      type = std::string_view(range).substr(0, slash);
      subtype = std::string_view(range).substr(slash + 1);
      if (type == "*" && subtype != "*") return;  // "*/json" is not a media range
    }
    const int specificity = type == "*" ? 0 : (subtype == "*" ? 1 : 2);
    const std::optional<int> weight = WeightOf(params);
    if (!weight) return;  // a conversion: as if the range were not listed
    for (size_t i = 0; i < offered.size(); ++i) {
      const std::string_view candidate = offered[i];
      const size_t slash = candidate.find('/');
      const bool matches_type = type == "*" || candidate.substr(0, slash) == type;
      const bool matches_subtype = subtype == "*" || candidate.substr(slash + 1) == subtype;
      if (!matches_type || !matches_subtype) continue;
      // The most specific range decides; among equally specific ones the first.
      if (specificity > matches[i].specificity) matches[i] = Match{*weight, specificity, at};
    }
  });
  std::optional<size_t> best;
  for (size_t i = 0; i < offered.size(); ++i) {
    const Match& m = matches[i];
    if (m.specificity < 0 || m.weight == 0) continue;
    if (!best) {
      best = i;
      continue;
    }
    const Match& b = matches[*best];
    if (m.weight != b.weight) {
      if (m.weight > b.weight) best = i;
    } else if (m.specificity != b.specificity) {
      if (m.specificity > b.specificity) best = i;
    } else if (m.position < b.position) {
      best = i;
    }
  }
  return best;
}

}  // namespace kubestat
