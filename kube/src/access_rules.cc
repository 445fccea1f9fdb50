#include "kubestat/kube/access_rules.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/str_cat.h"

namespace kubestat::kube {
namespace {

bool Contains(const std::vector<std::string>& list, std::string_view value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

bool ContainsOrStar(const std::vector<std::string>& list, std::string_view value) {
  for (const std::string& entry : list) {
    if (entry == "*" || entry == value) return true;
  }
  return false;
}

// RBAC's ResourceMatches: "pods", "pods/status", "*", "*/status".
bool ResourceMatches(const std::vector<std::string>& resources, const RequestAttributes& r) {
  const std::string combined =
      r.subresource.empty() ? r.resource : StrCat(r.resource, "/", r.subresource);
  for (const std::string& entry : resources) {
    if (entry == "*" || entry == combined) return true;
    if (!r.subresource.empty() && entry.size() == r.subresource.size() + 2 &&
        entry.starts_with("*/") && entry.substr(2) == r.subresource) {
      return true;
    }
  }
  return false;
}

// RBAC's NonResourceURLMatches: exact, "*", or a prefix ending in '*'.
bool NonResourceUrlMatches(const std::vector<std::string>& urls, std::string_view path) {
  for (const std::string& entry : urls) {
    if (entry == "*" || entry == path) return true;
    if (entry.ends_with('*') &&
        path.starts_with(std::string_view(entry).substr(0, entry.size() - 1))) {
      return true;
    }
  }
  return false;
}

class RuleParser {
 public:
  explicit RuleParser(std::string_view source) : source_(source) {}

  absl::Status Error(int index, std::string_view what) const {
    if (index < 0) return absl::InvalidArgumentError(StrCat(source_, ": ", what));
    return absl::InvalidArgumentError(StrCat(source_, ": rule ", index, ": ", what));
  }

  // A list of strings under `key` (absent → empty).
  absl::Status StringList(const YAML::Node& rule, int index, const char* key,
                          std::vector<std::string>* out) const {
    const YAML::Node node = rule[key];
    if (!node || node.IsNull()) return absl::OkStatus();
    if (!node.IsSequence()) return Error(index, StrCat(key, " must be a list of strings"));
    for (const YAML::Node& item : node) {
      if (!item.IsScalar()) return Error(index, StrCat(key, " must be a list of strings"));
      out->push_back(item.Scalar());
    }
    return absl::OkStatus();
  }

  absl::StatusOr<AccessRule> Rule(const YAML::Node& node, int index) const {
    if (!node.IsMap()) return Error(index, "must be a mapping");
    static const std::set<std::string> kKeys = {"users",      "groups",         "verbs",
                                                "apiGroups",  "resources",      "resourceNames",
                                                "namespaces", "nonResourceURLs"};
    for (const auto& field : node) {
      if (!field.first.IsScalar() || !kKeys.contains(field.first.Scalar())) {
        return Error(index, StrCat("unknown key \"",
                                   field.first.IsScalar() ? field.first.Scalar() : "?", "\""));
      }
    }
    AccessRule rule;
    absl::Status s = StringList(node, index, "users", &rule.users);
    if (s.ok()) s = StringList(node, index, "groups", &rule.groups);
    if (s.ok()) s = StringList(node, index, "verbs", &rule.verbs);
    if (s.ok()) s = StringList(node, index, "apiGroups", &rule.api_groups);
    if (s.ok()) s = StringList(node, index, "resources", &rule.resources);
    if (s.ok()) s = StringList(node, index, "resourceNames", &rule.resource_names);
    if (s.ok()) s = StringList(node, index, "namespaces", &rule.namespaces);
    if (s.ok()) s = StringList(node, index, "nonResourceURLs", &rule.non_resource_urls);
    if (!s.ok()) return s;

    if (rule.users.empty() && rule.groups.empty()) {
      return Error(index, "names no users and no groups");
    }
    if (rule.verbs.empty()) return Error(index, "verbs must not be empty");
    const bool resource_rule = !rule.resources.empty();
    const bool non_resource_rule = !rule.non_resource_urls.empty();
    if (resource_rule && non_resource_rule) {
      return Error(index, "has both resources and nonResourceURLs");
    }
    if (!resource_rule && !non_resource_rule) {
      return Error(index, "needs resources or nonResourceURLs");
    }
    if (resource_rule && rule.api_groups.empty()) {
      return Error(index, "a resource rule needs apiGroups (\"\" for the core group)");
    }
    if (non_resource_rule) {
      if (!rule.api_groups.empty() || !rule.resource_names.empty() || !rule.namespaces.empty()) {
        return Error(index,
                     "a nonResourceURLs rule cannot have apiGroups, resourceNames or namespaces");
      }
      for (const std::string& url : rule.non_resource_urls) {
        if (url == "*") continue;
        if (url.empty() || url.front() != '/') {
          return Error(index, StrCat("nonResourceURL \"", url, "\" must start with '/'"));
        }
        const size_t star = url.find('*');
        if (star != std::string::npos && star != url.size() - 1) {
          return Error(index, StrCat("nonResourceURL \"", url, "\" has a '*' before the end"));
        }
      }
    }
    return rule;
  }

 private:
  std::string_view source_;
};

}  // namespace

bool AccessRule::Matches(const UserInfo& user, const RequestAttributes& request) const {
  bool subject = ContainsOrStar(users, user.name) || Contains(groups, "*");
  for (size_t i = 0; !subject && i < user.groups.size(); ++i) {
    subject = Contains(groups, user.groups[i]);
  }
  if (!subject || !ContainsOrStar(verbs, request.verb)) return false;
  if (!request.resource_request) {
    return !non_resource_urls.empty() && NonResourceUrlMatches(non_resource_urls, request.path);
  }
  if (resources.empty()) return false;
  if (!ContainsOrStar(api_groups, request.api_group)) return false;
  if (!ResourceMatches(resources, request)) return false;
  if (!resource_names.empty() && !Contains(resource_names, request.name)) return false;
  if (!namespaces.empty() && !Contains(namespaces, "*")) {
    // Restricted rules never grant cluster-wide requests (nodes, pods of all namespaces).
    if (request.namespace_name.empty() || !Contains(namespaces, request.namespace_name)) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<AccessRules> AccessRules::Parse(std::string_view yaml, std::string source) {
  RuleParser parser(source);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return parser.Error(-1, StrCat("invalid YAML at line ", e.mark.line + 1, ": ", e.msg));
  }
  try {
    if (!root.IsMap()) return parser.Error(-1, "must be a mapping with a \"rules\" list");
    for (const auto& field : root) {
      if (!field.first.IsScalar() || field.first.Scalar() != "rules") {
        return parser.Error(-1, StrCat("unknown key \"",
                                       field.first.IsScalar() ? field.first.Scalar() : "?", "\""));
      }
    }
    const YAML::Node list = root["rules"];
    if (!list || !list.IsSequence()) return parser.Error(-1, "\"rules\" must be a list");
    std::vector<AccessRule> rules;
    int index = 0;
    for (const YAML::Node& node : list) {
      absl::StatusOr<AccessRule> rule = parser.Rule(node, index++);
      if (!rule.ok()) return rule.status();
      rules.push_back(std::move(*rule));
    }
    return AccessRules(std::move(rules), std::move(source));
  } catch (const YAML::Exception& e) {
    return parser.Error(-1, StrCat("invalid rules: ", e.msg));
  }
}

absl::StatusOr<AccessRules> AccessRules::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    const std::string message = StrCat("cannot open rules file ", path, ": ", std::strerror(error));
    if (error == ENOENT) return absl::NotFoundError(message);
    if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(message);
    return absl::InternalError(message);
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return absl::InternalError(StrCat("cannot read rules file ", path));
  return Parse(content.str(), path);
}

AuthorizerAnswer AccessRules::Evaluate(const UserInfo& user,
                                       const RequestAttributes& request) const {
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (rules_[i].Matches(user, request)) {
      return AuthorizerAnswer{Decision::kAllow, StrCat("allowed by rule ", i, " of ", source_)};
    }
  }
  return AuthorizerAnswer{Decision::kNoOpinion, StrCat("no rule of ", source_, " matches")};
}

}  // namespace kubestat::kube
