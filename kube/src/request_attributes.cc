#include "kubestat/kube/request_attributes.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/apimachinery/field_selector.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/core/url.h"

namespace kubestat::kube {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Splits on '/' after trimming leading and trailing slashes (upstream's splitPath):
// "/" and "" give no parts, interior empty segments are kept.
std::vector<std::string_view> SplitPath(std::string_view path) {
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  std::vector<std::string_view> parts;
  if (path.empty()) return parts;
  size_t start = 0;
  while (true) {
    const size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) {
      parts.push_back(path.substr(start));
      return parts;
    }
    parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
}

// The first value of query parameter `key`, if present.
struct QueryParameters {
  std::optional<std::string> watch;
  std::optional<std::string> field_selector;
};

absl::StatusOr<QueryParameters> ParseQuery(std::string_view query) {
  QueryParameters out;
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view pair = query.substr(start, end - start);
    start = end + 1;
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    absl::StatusOr<std::string> key = PercentDecode(pair.substr(0, eq), true);
    if (!key.ok()) return key.status();
    absl::StatusOr<std::string> value = PercentDecode(
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), true);
    if (!value.ok()) return value.status();
    if (*key == "watch" && !out.watch) out.watch = std::move(*value);
    if (*key == "fieldSelector" && !out.field_selector) out.field_selector = std::move(*value);
  }
  return out;
}

// Upstream's path.IsValidPathSegmentName: a name usable as one path segment.
bool IsValidPathSegmentName(std::string_view name) {
  if (name == "." || name == "..") return false;
  return name.find_first_of("/%") == std::string_view::npos;
}

}  // namespace

absl::StatusOr<RequestAttributes> ParseRequestAttributes(std::string_view method,
                                                         std::string_view raw_path,
                                                         std::string_view raw_query) {
  if (raw_path.empty() || raw_path.front() != '/') {
    return absl::InvalidArgumentError("request path must start with '/'");
  }
  // Decode segment by segment so an encoded '/' cannot move segment boundaries.
  std::vector<std::string> segments;
  for (std::string_view raw : SplitPath(raw_path)) {
    absl::StatusOr<std::string> segment = PercentDecode(raw, false);
    if (!segment.ok()) return segment.status();
    if (*segment == "." || *segment == "..") {
      return absl::InvalidArgumentError("request path must not contain \".\" or \"..\" segments");
    }
    if (segment->find('/') != std::string::npos || segment->find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(
          "request path must not contain an encoded '/' or NUL in a segment");
    }
    segments.push_back(std::move(*segment));
  }
  absl::StatusOr<std::string> decoded_path = PercentDecode(raw_path, false);
  if (!decoded_path.ok()) return decoded_path.status();
  absl::StatusOr<QueryParameters> query = ParseQuery(raw_query);
  if (!query.ok()) return query.status();

  RequestAttributes attrs;
  attrs.path = std::move(*decoded_path);
  attrs.verb = Lower(method);

  // Non-resource unless /api/{version}/{something} or /apis/{group}/{version}/{something}.
  if (segments.size() < 3) return attrs;
  size_t next = 0;
  const std::string& prefix = segments[next++];
  if (prefix != "api" && prefix != "apis") return attrs;
  std::string api_group;
  if (prefix == "apis") {
    if (segments.size() < 4) return attrs;
    api_group = segments[next++];
  }

  RequestAttributes resource;
  resource.resource_request = true;
  resource.path = std::move(attrs.path);
  resource.api_group = std::move(api_group);
  resource.api_version = segments[next++];

  const bool special_verb = segments[next] == "watch" || segments[next] == "proxy";
  if (special_verb) {
    if (segments.size() - next < 2) {
      return absl::InvalidArgumentError("unable to determine kind and namespace from url");
    }
    resource.verb = segments[next++];
  } else if (method == "POST") {
    resource.verb = "create";
  } else if (method == "GET" || method == "HEAD") {
    resource.verb = "get";
  } else if (method == "PUT") {
    resource.verb = "update";
  } else if (method == "PATCH") {
    resource.verb = "patch";
  } else if (method == "DELETE") {
    resource.verb = "delete";
  }

  // /namespaces/{namespace}/{resource}/…: parts become relative to the resource; the
  // namespace object itself (and its status / finalize) stays "namespaces".
  if (segments[next] == "namespaces") {
    if (segments.size() - next > 1) {
      resource.namespace_name = segments[next + 1];
      if (segments.size() - next > 2 && segments[next + 2] != "status" &&
          segments[next + 2] != "finalize") {
        next += 2;
      }
    }
  }
  const size_t parts = segments.size() - next;
  if (parts >= 3 && resource.verb != "proxy") resource.subresource = segments[next + 2];
  if (parts >= 2) resource.name = segments[next + 1];
  if (parts >= 1) resource.resource = segments[next];

  if (resource.name.empty() && resource.verb == "get") {
    bool watch = false;
    if (query->watch) {
      const std::string value = Lower(*query->watch);
      watch = value != "0" && value != "false";
    }
    resource.verb = watch ? "watch" : "list";
    if (query->field_selector) {
      // An unparsable selector leaves the name unset, as upstream.
      absl::StatusOr<FieldSelector> selector = FieldSelector::Parse(*query->field_selector);
      if (selector.ok()) {
        std::optional<std::string_view> name = selector->RequiresExactMatch(kFieldMetadataName);
        if (name && IsValidPathSegmentName(*name)) resource.name = std::string(*name);
      }
    }
  }
  if (resource.name.empty() && resource.verb == "delete") resource.verb = "deletecollection";
  return resource;
}

}  // namespace kubestat::kube
