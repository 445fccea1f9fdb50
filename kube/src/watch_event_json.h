// Internal: object texts cut out of a JSON document with simdjson's on-demand parser, which
// points into its input (the DOM keeps no positions). Shared by the watch event parser and
// the list pages of ListWatch.
#ifndef KUBESTAT_KUBE_SRC_WATCH_EVENT_JSON_H_
#define KUBESTAT_KUBE_SRC_WATCH_EVENT_JSON_H_

#include <optional>
#include <string_view>

#include "simdjson.h"

namespace kubestat::kube::internal {

// The text of `object` as it stands in its document, from '{' to its '}' (consumes the
// object); nullopt when the document turns out malformed there.
inline std::optional<std::string_view> RawObjectText(simdjson::ondemand::object& object) {
  std::string_view raw;
  if (object.raw_json().get(raw) != simdjson::SUCCESS) return std::nullopt;
  // raw_json() runs up to the next token, so it holds the whitespace after the object.
  while (!raw.empty() &&
         (raw.back() == ' ' || raw.back() == '\t' || raw.back() == '\n' || raw.back() == '\r')) {
    raw.remove_suffix(1);
  }
  return raw;
}

}  // namespace kubestat::kube::internal

#endif  // KUBESTAT_KUBE_SRC_WATCH_EVENT_JSON_H_
