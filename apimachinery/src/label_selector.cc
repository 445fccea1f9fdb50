#include "kubestat/apimachinery/label_selector.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <set>
#include <utility>

#include "selector_text.h"

namespace kubestat {
namespace {

using selector_internal::GoQuote;
using selector_internal::Join;
using selector_internal::ParseGoInt64;
using selector_internal::Split;

std::atomic<uint64_t> g_parse_errors{0};

// ---------------------------------------------------------------------------------------------
// Validation (k8s.io/apimachinery/pkg/api/validate/content), with the same messages.

constexpr size_t kLabelKeyMaxLength = 63;
constexpr size_t kLabelValueMaxLength = 63;
constexpr size_t kDns1123SubdomainMaxLength = 253;

constexpr std::string_view kLabelKeyFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr std::string_view kLabelKeyErrMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character";
constexpr std::string_view kLabelValueFmt = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
constexpr std::string_view kLabelValueErrMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character";
constexpr std::string_view kDns1123SubdomainFmt =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr std::string_view kDns1123SubdomainErrMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character";

std::string RegexError(std::string_view msg, std::string_view re,
                       std::initializer_list<std::string_view> examples) {
  // Kubernetes' wording, including its "',  or '" spacing.
  std::string out(msg);
  out += " (e.g. ";
  bool first = true;
  for (std::string_view example : examples) {
    if (!first) out += " or ";
    first = false;
    out += StrCat("'", example, "', ");
  }
  out += StrCat("regex used for validation is '", re, "')");
  return out;
}

std::string MaxLenError(size_t length) { return StrCat("must be no more than ", length, " bytes"); }

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// ^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$
bool MatchesLabelKeyPattern(std::string_view s) {
  if (s.empty() || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
bool MatchesDns1123Subdomain(std::string_view s) {
  for (std::string_view label : Split(s, '.')) {
    if (label.empty() || !IsLowerAlnum(label.front()) || !IsLowerAlnum(label.back())) {
      return false;
    }
    for (char c : label) {
      if (!IsLowerAlnum(c) && c != '-') return false;
    }
  }
  return true;
}

std::vector<std::string> Dns1123SubdomainErrors(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDns1123SubdomainMaxLength) {
    errs.push_back(MaxLenError(kDns1123SubdomainMaxLength));
  }
  if (!MatchesDns1123Subdomain(value)) {
    errs.push_back(RegexError(kDns1123SubdomainErrMsg, kDns1123SubdomainFmt, {"example.com"}));
  }
  return errs;
}

// ---------------------------------------------------------------------------------------------
// Field errors (k8s.io/apimachinery/pkg/util/validation/field), rendered as Error() renders
// them: "<path>: Invalid value: <value>: <detail>".

std::string InvalidValue(std::string_view path, std::string_view quoted_value,
                         std::string_view detail) {
  return StrCat(path, ": Invalid value: ", quoted_value, ": ", detail);
}

// json.Marshal of a []string, as field errors print a list value.
std::string JsonStringList(const std::vector<std::string>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ",";
    out += "\"";
    for (unsigned char c : values[i]) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
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
        default:
          if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            constexpr char kHex[] = "0123456789abcdef";
            out += "\\u00";
            out.push_back(kHex[c >> 4]);
            out.push_back(kHex[c & 0xF]);
          } else {
            out.push_back(static_cast<char>(c));
          }
      }
    }
    out += "\"";
  }
  out += "]";
  return out;
}

// utilerrors.NewAggregate(...).Error(): one message alone, several deduplicated in brackets.
std::string AggregateMessage(const std::vector<std::string>& messages) {
  if (messages.size() == 1) return messages.front();
  std::vector<std::string_view> unique;
  std::set<std::string_view> seen;
  for (const std::string& m : messages) {
    if (seen.insert(m).second) unique.push_back(m);
  }
  if (unique.size() == 1) return std::string(unique.front());
  return StrCat("[", Join(unique, ", "), "]");
}

std::optional<std::string> ValidateLabelKey(std::string_view key, std::string_view path) {
  std::vector<std::string> errs = QualifiedNameErrors(key);
  if (errs.empty()) return std::nullopt;
  return InvalidValue(path, GoQuote(key), Join(errs, "; "));
}

// ---------------------------------------------------------------------------------------------
// Lexer and parser, token for token as k8s.io/apimachinery/pkg/labels.

enum class Token {
  kError,
  kEndOfString,
  kClosedPar,
  kComma,
  kDoesNotExist,
  kDoubleEquals,
  kEquals,
  kGreaterThan,
  kIdentifier,
  kIn,
  kLessThan,
  kNotEquals,
  kNotIn,
  kOpenPar,
};

struct ScannedItem {
  Token tok;
  std::string_view literal;
};

bool IsWhitespace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool IsSpecialSymbol(char c) {
  switch (c) {
    case '=':
    case '!':
    case '(':
    case ')':
    case ',':
    case '>':
    case '<':
      return true;
    default:
      return false;
  }
}

std::optional<Token> SymbolToken(std::string_view s) {
  if (s == ")") return Token::kClosedPar;
  if (s == ",") return Token::kComma;
  if (s == "!") return Token::kDoesNotExist;
  if (s == "==") return Token::kDoubleEquals;
  if (s == "=") return Token::kEquals;
  if (s == ">") return Token::kGreaterThan;
  if (s == "<") return Token::kLessThan;
  if (s == "!=") return Token::kNotEquals;
  if (s == "(") return Token::kOpenPar;
  return std::nullopt;
}

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  ScannedItem Lex() {
    char c = Read();
    while (IsWhitespace(c)) c = Read();
    // A NUL byte ends the input, as upstream's reader returns 0 both at the end and for NUL.
    if (c == 0) return {Token::kEndOfString, {}};
    Unread();
    return IsSpecialSymbol(c) ? ScanSpecialSymbol() : ScanIdOrKeyword();
  }

 private:
  char Read() { return pos_ < s_.size() ? s_[pos_++] : '\0'; }
  void Unread() { --pos_; }

  ScannedItem ScanIdOrKeyword() {
    const size_t start = pos_;
    size_t end = start;
    while (true) {
      const char c = Read();
      if (c == 0) break;
      if (IsSpecialSymbol(c) || IsWhitespace(c)) {
        Unread();
        break;
      }
      end = pos_;
    }
    std::string_view lit = s_.substr(start, end - start);
    if (lit == "in") return {Token::kIn, lit};
    if (lit == "notin") return {Token::kNotIn, lit};
    return {Token::kIdentifier, lit};
  }

  // The longest run of special symbols that is a token ("!=" rather than "!").
  ScannedItem ScanSpecialSymbol() {
    const size_t start = pos_;
    std::optional<ScannedItem> last;
    while (true) {
      const char c = Read();
      if (c == 0) break;
      if (!IsSpecialSymbol(c)) {
        Unread();
        break;
      }
      std::string_view buffer = s_.substr(start, pos_ - start);
      if (auto tok = SymbolToken(buffer)) {
        last = ScannedItem{*tok, buffer};
      } else if (last) {
        Unread();
        break;
      }
    }
    // Every single special symbol is a token, so `last` is always set here.
    if (!last) return {Token::kError, s_.substr(start, pos_ - start)};
    return *last;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

enum class Context { kKeyAndOperator, kValues };

class Parser {
 public:
  explicit Parser(std::string_view text) {
    Lexer lexer(text);
    while (true) {
      items_.push_back(lexer.Lex());
      if (items_.back().tok == Token::kEndOfString) break;
    }
  }

  absl::StatusOr<std::vector<LabelRequirement>> Parse() {
    std::vector<LabelRequirement> requirements;
    while (true) {
      auto [tok, lit] = Lookahead(Context::kValues);
      switch (tok) {
        case Token::kIdentifier:
        case Token::kDoesNotExist: {
          absl::StatusOr<LabelRequirement> r = ParseRequirement();
          if (!r.ok()) {
            return absl::InvalidArgumentError(
                StrCat("unable to parse requirement: ", std::string(r.status().message())));
          }
          requirements.push_back(*std::move(r));
          auto [t, l] = Consume(Context::kValues);
          if (t == Token::kEndOfString) return requirements;
          if (t == Token::kComma) {
            auto [t2, l2] = Lookahead(Context::kValues);
            if (t2 != Token::kIdentifier && t2 != Token::kDoesNotExist) {
              return Error(StrCat("found '", l2, "', expected: identifier after ','"));
            }
            break;
          }
          return Error(StrCat("found '", l, "', expected: ',' or 'end of string'"));
        }
        case Token::kEndOfString:
          return requirements;
        default:
          return Error(StrCat("found '", lit, "', expected: !, identifier, or 'end of string'"));
      }
    }
  }

 private:
  static absl::Status Error(const std::string& message) {
    return absl::InvalidArgumentError(message);
  }

  static ScannedItem InContext(ScannedItem item, Context context) {
    // "in" and "notin" are plain identifiers where a key or value is expected.
    if (context == Context::kValues && (item.tok == Token::kIn || item.tok == Token::kNotIn)) {
      item.tok = Token::kIdentifier;
    }
    return item;
  }
  // The grammar never reads past the end-of-string token; clamping keeps that a local fact.
  ScannedItem Lookahead(Context context) const {
    return InContext(items_[std::min(position_, items_.size() - 1)], context);
  }
  ScannedItem Consume(Context context) {
    ScannedItem item = Lookahead(context);
    ++position_;
    return item;
  }

  absl::StatusOr<LabelRequirement> ParseRequirement() {
    std::optional<LabelOperator> op;
    ScannedItem item = Consume(Context::kValues);
    if (item.tok == Token::kDoesNotExist) {
      op = LabelOperator::kDoesNotExist;
      item = Consume(Context::kValues);
    }
    const auto [tok, key] = item;
    if (tok != Token::kIdentifier) {
      return Error(StrCat("found '", key, "', expected: identifier"));
    }
    if (auto err = ValidateLabelKey(key, "<nil>")) return Error(*std::move(err));
    if (const Token next = Lookahead(Context::kValues).tok;
        next == Token::kEndOfString || next == Token::kComma) {
      if (!op) op = LabelOperator::kExists;
    }
    // "!key" followed by anything else ends the requirement here; the caller then reports
    // the unexpected token.
    if (op) return LabelRequirement::Create(std::string(key), *op, {});

    absl::StatusOr<LabelOperator> parsed_op = ParseOperator();
    if (!parsed_op.ok()) return parsed_op.status();
    absl::StatusOr<std::vector<std::string>> values =
        (*parsed_op == LabelOperator::kIn || *parsed_op == LabelOperator::kNotIn)
            ? ParseValues()
            : ParseExactValue();
    if (!values.ok()) return values.status();
    return LabelRequirement::Create(std::string(key), *parsed_op, *std::move(values));
  }

  absl::StatusOr<LabelOperator> ParseOperator() {
    auto [tok, lit] = Consume(Context::kKeyAndOperator);
    switch (tok) {
      case Token::kIn:
        return LabelOperator::kIn;
      case Token::kEquals:
        return LabelOperator::kEquals;
      case Token::kDoubleEquals:
        return LabelOperator::kDoubleEquals;
      case Token::kGreaterThan:
        return LabelOperator::kGreaterThan;
      case Token::kLessThan:
        return LabelOperator::kLessThan;
      case Token::kNotIn:
        return LabelOperator::kNotIn;
      case Token::kNotEquals:
        return LabelOperator::kNotEquals;
      default:
        return Error(StrCat("found '", lit, "', expected: in, notin, =, ==, !=, gt, lt"));
    }
  }

  // "(" values ")"; the result is a set, returned sorted.
  absl::StatusOr<std::vector<std::string>> ParseValues() {
    if (ScannedItem open = Consume(Context::kValues); open.tok != Token::kOpenPar) {
      return Error(StrCat("found '", open.literal, "' expected: '('"));
    }
    const auto [tok, lit] = Lookahead(Context::kValues);
    switch (tok) {
      case Token::kIdentifier:
      case Token::kComma: {
        absl::StatusOr<std::set<std::string>> s = ParseIdentifiersList();
        if (!s.ok()) return s.status();
        if (Consume(Context::kValues).tok != Token::kClosedPar) {
          return Error(StrCat("found '", lit, "', expected: ')'"));
        }
        return std::vector<std::string>(s->begin(), s->end());
      }
      case Token::kClosedPar:
        Consume(Context::kValues);
        return std::vector<std::string>{""};
      default:
        return Error(StrCat("found '", lit, "', expected: ',', ')' or identifier"));
    }
  }

  // A possibly empty list of possibly empty identifiers separated by commas; stops before ")".
  absl::StatusOr<std::set<std::string>> ParseIdentifiersList() {
    std::set<std::string> s;
    while (true) {
      auto [tok, lit] = Consume(Context::kValues);
      switch (tok) {
        case Token::kIdentifier: {
          s.emplace(lit);
          auto [tok2, lit2] = Lookahead(Context::kValues);
          if (tok2 == Token::kComma) continue;
          if (tok2 == Token::kClosedPar) return s;
          return Error(StrCat("found '", lit2, "', expected: ',' or ')'"));
        }
        case Token::kComma: {
          if (s.empty()) s.emplace("");  // "(,"
          const Token tok2 = Lookahead(Context::kValues).tok;
          if (tok2 == Token::kClosedPar) {
            s.emplace("");  // ",)"
            return s;
          }
          // ",,": the second comma is left for the next round (current upstream; older
          // releases consumed it here and so rejected "(a,,)").
          if (tok2 == Token::kComma) s.emplace("");
          break;
        }
        default:
          return Error(StrCat("found '", lit, "', expected: ',', or identifier"));
      }
    }
  }

  absl::StatusOr<std::vector<std::string>> ParseExactValue() {
    const Token next = Lookahead(Context::kValues).tok;
    if (next == Token::kEndOfString || next == Token::kComma) return std::vector<std::string>{""};
    auto [tok, lit] = Consume(Context::kValues);
    if (tok == Token::kIdentifier) return std::vector<std::string>{std::string(lit)};
    return Error(StrCat("found '", lit, "', expected: identifier"));
  }

  std::vector<ScannedItem> items_;
  size_t position_ = 0;
};

}  // namespace

std::string_view LabelOperatorName(LabelOperator op) {
  switch (op) {
    case LabelOperator::kExists:
      return "exists";
    case LabelOperator::kDoesNotExist:
      return "!";
    case LabelOperator::kEquals:
      return "=";
    case LabelOperator::kDoubleEquals:
      return "==";
    case LabelOperator::kNotEquals:
      return "!=";
    case LabelOperator::kIn:
      return "in";
    case LabelOperator::kNotIn:
      return "notin";
    case LabelOperator::kGreaterThan:
      return "gt";
    case LabelOperator::kLessThan:
      return "lt";
  }
  return "unknown";
}

std::vector<std::string> QualifiedNameErrors(std::string_view key) {
  std::vector<std::string> errs;
  std::vector<std::string_view> parts = Split(key, '/');
  std::string_view name;
  switch (parts.size()) {
    case 1:
      name = parts[0];
      break;
    case 2: {
      std::string_view prefix = parts[0];
      name = parts[1];
      if (prefix.empty()) {
        errs.push_back("prefix part must be non-empty");
      } else {
        for (std::string& msg : Dns1123SubdomainErrors(prefix)) {
          errs.push_back(StrCat("prefix part ", msg));
        }
      }
      break;
    }
    default:
      errs.push_back(
          StrCat("a valid label key ",
                 RegexError(kLabelKeyErrMsg, kLabelKeyFmt, {"MyName", "my.name", "123-abc"}),
                 " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"));
      return errs;
  }
  if (name.empty()) {
    errs.push_back("name part must be non-empty");
  } else if (name.size() > kLabelKeyMaxLength) {
    errs.push_back(StrCat("name part ", MaxLenError(kLabelKeyMaxLength)));
  }
  if (!MatchesLabelKeyPattern(name)) {
    errs.push_back(StrCat(
        "name part ", RegexError(kLabelKeyErrMsg, kLabelKeyFmt, {"MyName", "my.name", "123-abc"})));
  }
  return errs;
}

std::vector<std::string> LabelValueErrors(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kLabelValueMaxLength) errs.push_back(MaxLenError(kLabelValueMaxLength));
  if (!value.empty() && !MatchesLabelKeyPattern(value)) {
    errs.push_back(RegexError(kLabelValueErrMsg, kLabelValueFmt, {"MyValue", "my_value", "12345"}));
  }
  return errs;
}

absl::StatusOr<LabelRequirement> LabelRequirement::Create(std::string key, LabelOperator op,
                                                          std::vector<std::string> values) {
  // The checks and messages of NewRequirement, with its field paths ("key", "values[i]").
  std::vector<std::string> errs;
  if (auto err = ValidateLabelKey(key, "key")) errs.push_back(*std::move(err));
  int64_t bound = 0;
  switch (op) {
    case LabelOperator::kIn:
    case LabelOperator::kNotIn:
      if (values.empty()) {
        errs.push_back(InvalidValue("values", JsonStringList(values),
                                    "for 'in', 'notin' operators, values set can't be empty"));
      }
      break;
    case LabelOperator::kEquals:
    case LabelOperator::kDoubleEquals:
    case LabelOperator::kNotEquals:
      if (values.size() != 1) {
        errs.push_back(InvalidValue("values", JsonStringList(values),
                                    "exact-match compatibility requires one single value"));
      }
      break;
    case LabelOperator::kExists:
    case LabelOperator::kDoesNotExist:
      if (!values.empty()) {
        errs.push_back(InvalidValue("values", JsonStringList(values),
                                    "values set must be empty for exists and does not exist"));
      }
      break;
    case LabelOperator::kGreaterThan:
    case LabelOperator::kLessThan:
      if (values.size() != 1) {
        errs.push_back(InvalidValue("values", JsonStringList(values),
                                    "for 'Gt', 'Lt' operators, exactly one value is required"));
      }
      for (size_t i = 0; i < values.size(); ++i) {
        std::optional<int64_t> n = ParseGoInt64(values[i]);
        if (!n) {
          errs.push_back(InvalidValue(StrCat("values[", i, "]"), GoQuote(values[i]),
                                      "for 'Gt', 'Lt' operators, the value must be an integer"));
        } else {
          bound = *n;
        }
      }
      break;
    default:
      errs.push_back(StrCat("operator: Unsupported value: ", static_cast<int>(op)));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    std::vector<std::string> value_errs = LabelValueErrors(values[i]);
    if (!value_errs.empty()) {
      errs.push_back(InvalidValue(StrCat("values[", i, "][", key, "]"), GoQuote(values[i]),
                                  Join(value_errs, "; ")));
    }
  }
  if (!errs.empty()) return absl::InvalidArgumentError(AggregateMessage(errs));
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return LabelRequirement(std::move(key), op, std::move(values), bound);
}

bool LabelRequirement::HasValue(std::string_view value) const {
  // Value sets are nearly always tiny; a scan beats a binary search there.
  if (values_.size() <= 8) {
    for (const std::string& v : values_) {
      if (v == value) return true;
    }
    return false;
  }
  return std::binary_search(values_.begin(), values_.end(), value, std::less<>());
}

bool LabelRequirement::Matches(LabelLookup labels) const {
  switch (op_) {
    case LabelOperator::kIn:
    case LabelOperator::kEquals:
    case LabelOperator::kDoubleEquals: {
      std::optional<std::string_view> v = labels(key_);
      return v.has_value() && HasValue(*v);
    }
    case LabelOperator::kNotIn:
    case LabelOperator::kNotEquals: {
      std::optional<std::string_view> v = labels(key_);
      return !v.has_value() || !HasValue(*v);
    }
    case LabelOperator::kExists:
      return labels(key_).has_value();
    case LabelOperator::kDoesNotExist:
      return !labels(key_).has_value();
    case LabelOperator::kGreaterThan:
    case LabelOperator::kLessThan: {
      std::optional<std::string_view> v = labels(key_);
      if (!v.has_value()) return false;
      std::optional<int64_t> n = ParseGoInt64(*v);
      if (!n.has_value()) return false;
      return op_ == LabelOperator::kGreaterThan ? *n > bound_ : *n < bound_;
    }
  }
  return false;
}

void LabelRequirement::AppendTo(std::string& out) const {
  if (op_ == LabelOperator::kDoesNotExist) out += "!";
  out += key_;
  switch (op_) {
    case LabelOperator::kExists:
    case LabelOperator::kDoesNotExist:
      return;
    case LabelOperator::kEquals:
      out += "=";
      break;
    case LabelOperator::kDoubleEquals:
      out += "==";
      break;
    case LabelOperator::kNotEquals:
      out += "!=";
      break;
    case LabelOperator::kIn:
      out += " in (";
      break;
    case LabelOperator::kNotIn:
      out += " notin (";
      break;
    case LabelOperator::kGreaterThan:
      out += ">";
      break;
    case LabelOperator::kLessThan:
      out += "<";
      break;
  }
  out += Join(values_, ",");
  if (op_ == LabelOperator::kIn || op_ == LabelOperator::kNotIn) out += ")";
}

std::string LabelRequirement::String() const {
  std::string out;
  AppendTo(out);
  return out;
}

absl::StatusOr<LabelSelector> LabelSelector::Parse(std::string_view text) {
  absl::StatusOr<std::vector<LabelRequirement>> requirements = Parser(text).Parse();
  if (!requirements.ok()) {
    g_parse_errors.fetch_add(1, std::memory_order_relaxed);
    return requirements.status();
  }
  return FromRequirements(*std::move(requirements));
}

LabelSelector LabelSelector::FromRequirements(std::vector<LabelRequirement> requirements) {
  std::stable_sort(
      requirements.begin(), requirements.end(),
      [](const LabelRequirement& a, const LabelRequirement& b) { return a.key() < b.key(); });
  return LabelSelector(std::move(requirements));
}

bool LabelSelector::Matches(LabelLookup labels) const {
  for (const LabelRequirement& r : requirements_) {
    if (!r.Matches(labels)) return false;
  }
  return true;
}

std::optional<std::string_view> LabelSelector::RequiresExactMatch(std::string_view key) const {
  for (const LabelRequirement& r : requirements_) {
    if (r.key() != key) continue;
    switch (r.op()) {
      case LabelOperator::kEquals:
      case LabelOperator::kDoubleEquals:
      case LabelOperator::kIn:
        if (r.values().size() == 1) return r.values().front();
        break;
      default:
        break;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

std::string LabelSelector::String() const {
  std::string out;
  for (size_t i = 0; i < requirements_.size(); ++i) {
    if (i > 0) out += ",";
    requirements_[i].AppendTo(out);
  }
  return out;
}

uint64_t LabelSelector::ParseErrorCount() { return g_parse_errors.load(std::memory_order_relaxed); }

}  // namespace kubestat
