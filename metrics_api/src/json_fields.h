// Reading optional members of a simdjson object with errors that name their path, for the
// readers of the node agent's document (node_resources.cc) and of a ResourceSet
// (resource_set_json.cc): a member that is absent gives the empty value, one of the wrong
// type InvalidArgument "<path>: <reason>".
#ifndef KUBESTAT_METRICS_API_SRC_JSON_FIELDS_H_
#define KUBESTAT_METRICS_API_SRC_JSON_FIELDS_H_

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kubestat::metrics_api::internal {

// InvalidArgument "<path>: <reason>".
absl::Status FieldError(const std::string& path, std::string_view reason);

// The string member `key` ("" when absent).
absl::StatusOr<std::string> OptionalString(simdjson::dom::object o, std::string_view key,
                                           const std::string& path);
// The array member `key`; std::nullopt when absent or null.
absl::StatusOr<std::optional<simdjson::dom::array>> OptionalArray(simdjson::dom::object o,
                                                                  std::string_view key,
                                                                  const std::string& path);
// The array of strings, or of integers, `key` (empty when absent).
absl::StatusOr<std::vector<std::string>> OptionalStrings(simdjson::dom::object o,
                                                         std::string_view key,
                                                         const std::string& path);
absl::StatusOr<std::vector<int64_t>> OptionalInts(simdjson::dom::object o, std::string_view key,
                                                  const std::string& path);
// `e` as an object.
absl::StatusOr<simdjson::dom::object> AsObject(simdjson::dom::element e, const std::string& path);

}  // namespace kubestat::metrics_api::internal

#endif  // KUBESTAT_METRICS_API_SRC_JSON_FIELDS_H_
