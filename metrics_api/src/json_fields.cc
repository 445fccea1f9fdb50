#include "json_fields.h"

#include "absl/strings/str_cat.h"
#include "kubestat/core/absl_view.h"

namespace kubestat::metrics_api::internal {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

absl::Status FieldError(const std::string& path, std::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", AbslView(reason)));
}

absl::StatusOr<std::string> OptionalString(object o, std::string_view key,
                                           const std::string& path) {
  element e;
  if (o[key].get(e) != simdjson::SUCCESS) return std::string();
  std::string_view v;
  if (e.get(v) != simdjson::SUCCESS) return FieldError(path, "must be a string");
  return std::string(v);
}

absl::StatusOr<std::optional<array>> OptionalArray(object o, std::string_view key,
                                                   const std::string& path) {
  element e;
  if (o[key].get(e) != simdjson::SUCCESS || e.is_null()) return std::optional<array>();
  array a;
  if (e.get(a) != simdjson::SUCCESS) return FieldError(path, "must be an array");
  return std::optional<array>(a);
}

absl::StatusOr<std::vector<std::string>> OptionalStrings(object o, std::string_view key,
                                                         const std::string& path) {
  std::vector<std::string> out;
  absl::StatusOr<std::optional<array>> a = OptionalArray(o, key, path);
  if (!a.ok()) return a.status();
  if (!*a) return out;
  for (element item : **a) {
    std::string_view v;
    if (item.get(v) != simdjson::SUCCESS) return FieldError(path, "must hold strings");
    out.emplace_back(v);
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> OptionalInts(object o, std::string_view key,
                                                  const std::string& path) {
  std::vector<int64_t> out;
  absl::StatusOr<std::optional<array>> a = OptionalArray(o, key, path);
  if (!a.ok()) return a.status();
  if (!*a) return out;
  for (element item : **a) {
    int64_t v;
    if (item.get(v) != simdjson::SUCCESS) return FieldError(path, "must hold integers");
    out.push_back(v);
  }
  return out;
}

absl::StatusOr<object> AsObject(element e, const std::string& path) {
  object o;
  if (e.get(o) != simdjson::SUCCESS) return FieldError(path, "must be an object");
  return o;
}

}  // namespace kubestat::metrics_api::internal
