// Kubernetes field selectors: the `fieldSelector` query parameter.
//
// FieldSelector::Parse reads the syntax of k8s.io/apimachinery/pkg/fields.ParseSelector:
// comma-separated terms `field=value`, `field==value` (the same as `=`) or `field!=value`.
// The field is the text before the first operator (no escaping, may be empty); the value is
// escaped with backslashes: `\\`, `\,` and `\=` stand for `\`, `,` and `=`, which may not
// appear unescaped; any other escape is an error. Empty terms are skipped, so "" selects
// everything. Like upstream, invalid UTF-8 in a value that contains escapes reads as U+FFFD.
//
// String() is canonical: terms written `field=value` / `field!=value` with values escaped
// (EscapeFieldValue), sorted by that text, joined by ",". For every input without `==` this
// equals upstream's String(); upstream sorts the raw terms, so "a==z,a=b" prints "a=z,a=b"
// there and "a=b,a=z" here, which keeps Parse(String()) a fixed point.
//
// Matching: a term compares the object's field value, a missing field reading as "" (so
// `spec.nodeName=` selects objects without a node). All terms must hold. Matches allocates
// nothing.
//
// Which fields exist is up to the resource: kube-apiserver rejects any other with
// "field label not supported: <field>". CheckSupported() gives that error; kubestat serves
// metadata.name and metadata.namespace for nodes and pods, and spec.nodeName for pods
// (constants below).
//
// Errors: InvalidArgument with kube-apiserver's message, suitable for a 400 Status (one
// difference: for an unescaped `,` or `=` the message shows the character, where upstream
// prints its code point). Every failed Parse also increments ParseErrorCount().
//
// Thread-safety: a FieldSelector is an immutable value once built; concurrent const calls are
// safe. Parse is safe to call from any thread.
#ifndef KUBESTAT_APIMACHINERY_FIELD_SELECTOR_H_
#define KUBESTAT_APIMACHINERY_FIELD_SELECTOR_H_

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kubestat {

inline constexpr std::string_view kFieldMetadataName = "metadata.name";
inline constexpr std::string_view kFieldMetadataNamespace = "metadata.namespace";
inline constexpr std::string_view kFieldSpecNodeName = "spec.nodeName";

// `\` → `\\`, `,` → `\,`, `=` → `\=` (fields.EscapeValue).
std::string EscapeFieldValue(std::string_view value);

// The inverse of EscapeFieldValue (fields.UnescapeValue). InvalidArgument for an unknown
// escape ("invalid field selector: invalid escape sequence: \a"), a trailing backslash, or an
// unescaped `,` or `=`.
[[nodiscard]] absl::StatusOr<std::string> UnescapeFieldValue(std::string_view escaped);

// The value of one field of an object ("" when the object has no such field). The returned
// view must stay valid until the next call.
using FieldLookup = absl::FunctionRef<std::string_view(const std::string& field)>;

// Any map from std::string field names to string-like values with find()/end().
template <typename M>
concept FieldMap = requires(const M& m, const std::string& field) {
  { m.find(field) != m.end() } -> std::convertible_to<bool>;
  {std::string_view(m.find(field)->second)};
};

enum class FieldOperator {
  kEquals,     // field=value (also written field==value)
  kNotEquals,  // field!=value
};

struct FieldTerm {
  std::string field;
  FieldOperator op = FieldOperator::kEquals;
  std::string value;  // Unescaped.

  bool Matches(FieldLookup fields) const;
  // "field=value" / "field!=value" with the value escaped.
  std::string String() const;

  friend bool operator==(const FieldTerm&, const FieldTerm&) = default;
};

// A conjunction of terms.
class FieldSelector {
 public:
  // The empty selector: matches everything, String() is "".
  FieldSelector() = default;

  // Parses `text` (see the file comment). InvalidArgument on error, e.g.
  // "invalid selector: 'x'; can't understand 'x'".
  [[nodiscard]] static absl::StatusOr<FieldSelector> Parse(std::string_view text);

  // A selector of the given terms (sorted into canonical order).
  static FieldSelector FromTerms(std::vector<FieldTerm> terms);

  bool Empty() const { return terms_.empty(); }
  // In canonical order.
  const std::vector<FieldTerm>& terms() const { return terms_; }

  // Whether an object with these field values satisfies every term. Allocation-free.
  bool Matches(FieldLookup fields) const;
  template <FieldMap M>
  bool Matches(const M& fields) const {
    return Matches(FieldLookup([&fields](const std::string& field) -> std::string_view {
      auto it = fields.find(field);
      if (it == fields.end()) return {};
      return std::string_view(it->second);
    }));
  }

  // The value of the first `field=value` term on `field`, if any (fields.RequiresExactMatch),
  // e.g. to list only the pods of one node for `spec.nodeName=node-1`.
  std::optional<std::string_view> RequiresExactMatch(std::string_view field) const
      ABSL_ATTRIBUTE_LIFETIME_BOUND;

  // OK when every term's field is in `supported`; otherwise InvalidArgument
  // "field label not supported: <field>" for the first term (in canonical order) that is not.
  [[nodiscard]] absl::Status CheckSupported(std::span<const std::string_view> supported) const;
  [[nodiscard]] absl::Status CheckSupported(
      std::initializer_list<std::string_view> supported) const {
    return CheckSupported(std::span<const std::string_view>(supported.begin(), supported.size()));
  }

  // Canonical text (see the file comment).
  std::string String() const;

  // Number of failed Parse calls in this process (all threads), for a metrics counter.
  static uint64_t ParseErrorCount();

  friend bool operator==(const FieldSelector&, const FieldSelector&) = default;

 private:
  explicit FieldSelector(std::vector<FieldTerm> terms) : terms_(std::move(terms)) {}

  std::vector<FieldTerm> terms_;
};

}  // namespace kubestat

#endif  // KUBESTAT_APIMACHINERY_FIELD_SELECTOR_H_
