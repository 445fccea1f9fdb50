// Kubernetes label selectors: the `labelSelector` query parameter.
//
// LabelSelector::Parse reads the syntax of k8s.io/apimachinery/pkg/labels.Parse:
// comma-separated requirements, each one of
//   key=value   key==value   key!=value           (exact match; the value may be empty)
//   key in (v1,v2,...)   key notin (v1,v2,...)    (set match; "()" means the empty value)
//   key   !key                                    (exists / does not exist)
//   key>N   key<N                                 (N a decimal int64)
// with spaces, tabs, CR and LF allowed between tokens. Keys are qualified names (an optional
// lowercase DNS-subdomain prefix of up to 253 bytes and "/", then a name of up to 63 bytes of
// [A-Za-z0-9._-] starting and ending alphanumeric); values are empty or follow the name rule.
// As upstream, parsing stops at a NUL byte met between tokens.
//
// String() is the canonical form Kubernetes prints: requirements sorted by key (stable for
// equal keys), values of in/notin sorted and deduplicated, no spaces except around in/notin.
// Parse(String()) gives back an equal selector.
//
// Matching follows Requirement.Matches: `!=` and `notin` match an object without the key;
// `=`, `==`, `in`, `>` and `<` do not; `>`/`<` need the object's value to be a decimal int64.
// An empty selector matches everything. Matches allocates nothing.
//
// Errors: Parse returns InvalidArgument with the message kube-apiserver gives for the same
// input (which token was found and what was expected, or the validation failure of a key or
// value), suitable for a 400 Status. Every failed Parse also increments ParseErrorCount().
//
// Thread-safety: a LabelSelector is an immutable value once built; concurrent const calls are
// safe. Parse is safe to call from any thread.
#ifndef KUBESTAT_APIMACHINERY_LABEL_SELECTOR_H_
#define KUBESTAT_APIMACHINERY_LABEL_SELECTOR_H_

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kubestat {

enum class LabelOperator {
  kExists,        // key
  kDoesNotExist,  // !key
  kEquals,        // key=value
  kDoubleEquals,  // key==value
  kNotEquals,     // key!=value
  kIn,            // key in (values)
  kNotIn,         // key notin (values)
  kGreaterThan,   // key>N
  kLessThan,      // key<N
};

// The operator as Kubernetes spells it in selection.Operator ("exists", "!", "=", "==",
// "!=", "in", "notin", "gt", "lt").
std::string_view LabelOperatorName(LabelOperator op);

// The value of label `key` of one object, or std::nullopt when the object has no such label.
// The returned view must stay valid until the next call.
using LabelLookup = absl::FunctionRef<std::optional<std::string_view>(const std::string& key)>;

// Any map from std::string keys to string-like values with find()/end(): std::map,
// absl::flat_hash_map, ...
template <typename M>
concept LabelMap = requires(const M& m, const std::string& key) {
  { m.find(key) != m.end() } -> std::convertible_to<bool>;
  {std::string_view(m.find(key)->second)};
};

// One requirement of a selector: a key, an operator and its values.
class LabelRequirement {
 public:
  // Builds a requirement with the checks of Kubernetes' NewRequirement: the key is a
  // qualified name; in/notin need at least one value; =, ==, != need exactly one; exists and
  // !key need none; > and < need exactly one decimal int64; every value is a valid label
  // value. Values are stored sorted and deduplicated. InvalidArgument otherwise.
  [[nodiscard]] static absl::StatusOr<LabelRequirement> Create(std::string key, LabelOperator op,
                                                               std::vector<std::string> values);

  const std::string& key() const { return key_; }
  LabelOperator op() const { return op_; }
  // Sorted, without duplicates; empty for exists and !key.
  const std::vector<std::string>& values() const { return values_; }

  // Whether an object with these labels satisfies the requirement. Allocation-free.
  bool Matches(LabelLookup labels) const;

  // Canonical text, e.g. "x in (a,b)", "!x", "x!=a".
  std::string String() const;
  void AppendTo(std::string& out) const;

  friend bool operator==(const LabelRequirement&, const LabelRequirement&) = default;

 private:
  LabelRequirement(std::string key, LabelOperator op, std::vector<std::string> values,
                   int64_t bound)
      : key_(std::move(key)), op_(op), values_(std::move(values)), bound_(bound) {}

  bool HasValue(std::string_view value) const;

  std::string key_;
  LabelOperator op_;
  std::vector<std::string> values_;
  int64_t bound_;  // The parsed value of > and <; 0 otherwise.
};

// A conjunction of requirements.
class LabelSelector {
 public:
  // The empty selector: matches everything, String() is "".
  LabelSelector() = default;

  // Parses `text` as kube-apiserver does (see the file comment). InvalidArgument on error.
  [[nodiscard]] static absl::StatusOr<LabelSelector> Parse(std::string_view text);

  // A selector of the given requirements, sorted by key (stable).
  static LabelSelector FromRequirements(std::vector<LabelRequirement> requirements);

  // True when the selector places no restriction (matches every object).
  bool Empty() const { return requirements_.empty(); }
  // Sorted by key.
  const std::vector<LabelRequirement>& requirements() const { return requirements_; }

  // Whether an object with these labels satisfies every requirement. Allocation-free.
  bool Matches(LabelLookup labels) const;
  template <LabelMap M>
  bool Matches(const M& labels) const {
    return Matches(
        LabelLookup([&labels](const std::string& key) -> std::optional<std::string_view> {
          auto it = labels.find(key);
          if (it == labels.end()) return std::nullopt;
          return std::string_view(it->second);
        }));
  }

  // If the first requirement on `key` is `key=v`, `key==v` or `key in (v)`, returns v (so a
  // caller can use an index); otherwise std::nullopt.
  std::optional<std::string_view> RequiresExactMatch(std::string_view key) const
      ABSL_ATTRIBUTE_LIFETIME_BOUND;

  // Canonical text: requirements joined by ",".
  std::string String() const;

  // Number of failed Parse calls in this process (all threads), for a metrics counter.
  static uint64_t ParseErrorCount();

  friend bool operator==(const LabelSelector&, const LabelSelector&) = default;

 private:
  explicit LabelSelector(std::vector<LabelRequirement> requirements)
      : requirements_(std::move(requirements)) {}

  std::vector<LabelRequirement> requirements_;
};

// Validation used by label selectors, exposed for label maps received from peers. Each returns
// the list of problems Kubernetes reports (empty when valid), joined by "; " in messages.
std::vector<std::string> QualifiedNameErrors(std::string_view key);
std::vector<std::string> LabelValueErrors(std::string_view value);

}  // namespace kubestat

#endif  // KUBESTAT_APIMACHINERY_LABEL_SELECTOR_H_
