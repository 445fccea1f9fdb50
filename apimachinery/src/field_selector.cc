#include "kubestat/apimachinery/field_selector.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "selector_text.h"

namespace kubestat {
namespace {

using selector_internal::ValidRuneLength;

std::atomic<uint64_t> g_parse_errors{0};

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

// The comma-separated terms of `text`; a backslash-escaped comma stays inside its term, with
// the backslash. Bytes are enough here: `\` and `,` never occur inside a multi-byte sequence.
std::vector<std::string_view> SplitTerms(std::string_view text) {
  std::vector<std::string_view> terms;
  if (text.empty()) return terms;
  size_t start = 0;
  bool in_slash = false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (in_slash) {
      in_slash = false;
    } else if (text[i] == '\\') {
      in_slash = true;
    } else if (text[i] == ',') {
      terms.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  terms.push_back(text.substr(start));
  return terms;
}

struct SplitTerm {
  std::string_view lhs;
  FieldOperator op;
  std::string_view rhs;
};

// Splits at the first operator; at one position "!=" is tried before "==" before "=".
std::optional<SplitTerm> SplitAtOperator(std::string_view term) {
  for (size_t i = 0; i < term.size(); ++i) {
    std::string_view rest = term.substr(i);
    if (rest.starts_with("!="))
      return SplitTerm{term.substr(0, i), FieldOperator::kNotEquals, rest.substr(2)};
    if (rest.starts_with("=="))
      return SplitTerm{term.substr(0, i), FieldOperator::kEquals, rest.substr(2)};
    if (rest.starts_with("="))
      return SplitTerm{term.substr(0, i), FieldOperator::kEquals, rest.substr(1)};
  }
  return std::nullopt;
}

void AppendTerm(const FieldTerm& term, std::string& out) {
  out += term.field;
  out += term.op == FieldOperator::kNotEquals ? "!=" : "=";
  out += EscapeFieldValue(term.value);
}

}  // namespace

std::string EscapeFieldValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == ',' || c == '=') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

absl::StatusOr<std::string> UnescapeFieldValue(std::string_view escaped) {
  if (escaped.find_first_of("\\,=") == std::string_view::npos) return std::string(escaped);
  // Upstream walks the value rune by rune and re-encodes each one, so an invalid byte becomes
  // U+FFFD on this path (and only on this one).
  std::string out;
  out.reserve(escaped.size());
  bool in_slash = false;
  for (size_t i = 0; i < escaped.size();) {
    char32_t rune = 0xFFFD;
    const size_t n = ValidRuneLength(escaped, i, &rune);
    const std::string_view encoded = n == 0 ? kReplacementCharacter : escaped.substr(i, n);
    i += n == 0 ? 1 : n;
    if (in_slash) {
      in_slash = false;
      if (rune != '\\' && rune != ',' && rune != '=') {
        return absl::InvalidArgumentError(
            StrCat("invalid field selector: invalid escape sequence: \\", encoded));
      }
      out += encoded;
    } else if (rune == '\\') {
      in_slash = true;
    } else if (rune == ',' || rune == '=') {
      // Upstream prints the code point as a number here; the character itself is clearer.
      return absl::InvalidArgumentError(
          StrCat("invalid field selector: unescaped character in value: '", encoded, "'"));
    } else {
      out += encoded;
    }
  }
  if (in_slash) {
    return absl::InvalidArgumentError("invalid field selector: invalid escape sequence: \\");
  }
  return out;
}

bool FieldTerm::Matches(FieldLookup fields) const {
  const bool equal = fields(field) == value;
  return op == FieldOperator::kEquals ? equal : !equal;
}

std::string FieldTerm::String() const {
  std::string out;
  AppendTerm(*this, out);
  return out;
}

absl::StatusOr<FieldSelector> FieldSelector::Parse(std::string_view text) {
  // Terms are examined in sorted order, as upstream does, so the first error reported is the
  // same one kube-apiserver reports.
  std::vector<std::string_view> parts = SplitTerms(text);
  std::sort(parts.begin(), parts.end());
  std::vector<FieldTerm> terms;
  terms.reserve(parts.size());
  for (std::string_view part : parts) {
    if (part.empty()) continue;
    std::optional<SplitTerm> split = SplitAtOperator(part);
    if (!split) {
      g_parse_errors.fetch_add(1, std::memory_order_relaxed);
      return absl::InvalidArgumentError(
          StrCat("invalid selector: '", text, "'; can't understand '", part, "'"));
    }
    absl::StatusOr<std::string> value = UnescapeFieldValue(split->rhs);
    if (!value.ok()) {
      g_parse_errors.fetch_add(1, std::memory_order_relaxed);
      return value.status();
    }
    terms.push_back(FieldTerm{std::string(split->lhs), split->op, *std::move(value)});
  }
  return FromTerms(std::move(terms));
}

FieldSelector FieldSelector::FromTerms(std::vector<FieldTerm> terms) {
  std::vector<std::pair<std::string, FieldTerm>> keyed;
  keyed.reserve(terms.size());
  for (FieldTerm& term : terms) {
    std::string text = term.String();
    keyed.emplace_back(std::move(text), std::move(term));
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  terms.clear();
  for (auto& [text, term] : keyed) terms.push_back(std::move(term));
  return FieldSelector(std::move(terms));
}

bool FieldSelector::Matches(FieldLookup fields) const {
  for (const FieldTerm& term : terms_) {
    if (!term.Matches(fields)) return false;
  }
  return true;
}

std::optional<std::string_view> FieldSelector::RequiresExactMatch(std::string_view field) const {
  for (const FieldTerm& term : terms_) {
    if (term.op == FieldOperator::kEquals && term.field == field) return term.value;
  }
  return std::nullopt;
}

absl::Status FieldSelector::CheckSupported(std::span<const std::string_view> supported) const {
  for (const FieldTerm& term : terms_) {
    if (std::find(supported.begin(), supported.end(), term.field) == supported.end()) {
      return absl::InvalidArgumentError(StrCat("field label not supported: ", term.field));
    }
  }
  return absl::OkStatus();
}

std::string FieldSelector::String() const {
  std::string out;
  for (size_t i = 0; i < terms_.size(); ++i) {
    if (i > 0) out += ",";
    AppendTerm(terms_[i], out);
  }
  return out;
}

uint64_t FieldSelector::ParseErrorCount() { return g_parse_errors.load(std::memory_order_relaxed); }

}  // namespace kubestat
