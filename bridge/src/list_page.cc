#include "kubestat/bridge/list_page.h"

#include <string_view>
#include <utility>

#include "kubestat/core/str_cat.h"
#include "simdjson.h"

namespace kubestat::bridge {

using metrics_api::Resource;

absl::Status ReadListPage(const std::string& body, Resource resource, std::vector<ObjectKey>* keys,
                          std::string* continue_token) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(body).get(root); error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(StrCat("invalid JSON: ", simdjson::error_message(error)));
  }
  continue_token->clear();
  std::string_view token;
  if (root["metadata"]["continue"].get(token) == simdjson::SUCCESS) *continue_token = token;
  simdjson::dom::array items;
  if (root["items"].get(items) != simdjson::SUCCESS) {
    // Kubernetes writes an empty list's items as null.
    if (root["items"].is_null()) return absl::OkStatus();
    return absl::InvalidArgumentError("items: not an array");
  }
  for (simdjson::dom::element item : items) {
    ObjectKey key;
    key.resource = resource;
    std::string_view name;
    if (item["metadata"]["name"].get(name) != simdjson::SUCCESS || name.empty()) {
      return absl::InvalidArgumentError("items[].metadata.name: missing");
    }
    key.name = name;
    if (resource == Resource::kPods) {
      std::string_view namespace_name;
      if (item["metadata"]["namespace"].get(namespace_name) != simdjson::SUCCESS ||
          namespace_name.empty()) {
        return absl::InvalidArgumentError("items[].metadata.namespace: missing");
      }
      key.namespace_name = namespace_name;
    }
    keys->push_back(std::move(key));
  }
  return absl::OkStatus();
}

}  // namespace kubestat::bridge
