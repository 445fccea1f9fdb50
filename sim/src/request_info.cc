#include "kubestat/sim/request_info.h"

#include <vector>

#include "kubestat/core/url.h"

namespace kubestat::sim {
namespace {

std::vector<std::string> SplitPath(std::string_view path) {
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  std::vector<std::string> parts;
  if (path.empty()) return parts;
  size_t start = 0;
  while (true) {
    const size_t slash = path.find('/', start);
    parts.emplace_back(path.substr(start, slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return parts;
}

// The first value of `key` in the query; `found` says whether the key was there.
std::string QueryValue(std::string_view raw_query, std::string_view key, bool* found) {
  *found = false;
  size_t start = 0;
  while (start <= raw_query.size()) {
    const size_t amp = raw_query.find('&', start);
    std::string_view item = raw_query.substr(start, amp - start);
    const size_t eq = item.find('=');
    if (PercentDecodeLenient(item.substr(0, eq), /*plus_is_space=*/true) == key) {
      *found = true;
      return eq == std::string_view::npos ? std::string()
                                          : PercentDecodeLenient(item.substr(eq + 1), true);
    }
    if (amp == std::string_view::npos) break;
    start = amp + 1;
  }
  return "";
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// The name a field selector pins with metadata.name=X or metadata.name==X, if any.
std::string ExactName(std::string_view selector) {
  size_t start = 0;
  while (start <= selector.size()) {
    const size_t comma = selector.find(',', start);
    std::string_view term = selector.substr(start, comma - start);
    while (!term.empty() && term.front() == ' ') term.remove_prefix(1);
    for (std::string_view prefix : {"metadata.name==", "metadata.name="}) {
      if (term.substr(0, prefix.size()) == prefix) {
        std::string_view name = term.substr(prefix.size());
        // Kubernetes takes the name only when it is a valid path segment.
        if (name.empty() || name == "." || name == ".." ||
            name.find_first_of("/%") != std::string_view::npos) {
          return "";
        }
        return std::string(name);
      }
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return "";
}

}  // namespace

RequestInfo ParseRequestInfo(std::string_view method, std::string_view path,
                             std::string_view raw_query) {
  RequestInfo info;
  info.path = std::string(path);
  info.verb = Lower(method);

  std::vector<std::string> parts = SplitPath(path);
  if (parts.size() < 3) return info;
  if (parts[0] != "api" && parts[0] != "apis") return info;
  const bool groupless = parts[0] == "api";
  size_t at = 1;
  if (!groupless) {
    if (parts.size() - at < 3) return info;
    info.api_group = parts[at++];
  }
  info.api_version = parts[at++];

  bool special_verb = false;
  if (parts[at] == "proxy" || parts[at] == "watch") {
    if (parts.size() - at < 2) {
      // Kubernetes rejects this form; as a resource request it names nothing.
      info.api_group.clear();
      info.api_version.clear();
      return info;
    }
    info.verb = parts[at++];
    special_verb = true;
  }
  info.is_resource_request = true;
  if (!special_verb) {
    if (method == "POST") {
      info.verb = "create";
    } else if (method == "GET" || method == "HEAD") {
      info.verb = "get";
    } else if (method == "PUT") {
      info.verb = "update";
    } else if (method == "PATCH") {
      info.verb = "patch";
    } else if (method == "DELETE") {
      info.verb = "delete";
    } else {
      info.verb = "";
    }
  }

  std::vector<std::string> rest(parts.begin() + static_cast<std::ptrdiff_t>(at), parts.end());
  if (rest[0] == "namespaces") {
    if (rest.size() > 1) {
      info.namespace_name = rest[1];
      if (rest.size() > 2 && rest[2] != "status" && rest[2] != "finalize") {
        rest.erase(rest.begin(), rest.begin() + 2);
      }
    }
  }
  if (rest.size() >= 3 && info.verb != "proxy") info.subresource = rest[2];
  if (rest.size() >= 2) info.name = rest[1];
  info.resource = rest[0];

  if (info.name.empty() && info.verb == "get") {
    bool found = false;
    const std::string watch = Lower(QueryValue(raw_query, "watch", &found));
    info.verb = found && watch != "false" && watch != "0" && !watch.empty() ? "watch" : "list";
    info.name = ExactName(QueryValue(raw_query, "fieldSelector", &found));
  }
  if (info.name.empty() && info.verb == "delete") info.verb = "deletecollection";
  return info;
}

}  // namespace kubestat::sim
