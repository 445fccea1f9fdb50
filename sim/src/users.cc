#include "kubestat/sim/users.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "sim_strings.h"

namespace kubestat::sim {
namespace {

// Reading goes through one Reader so every error carries the source and line.
class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  absl::Status Error(const YAML::Node& node, std::string_view where, std::string_view what) const {
    const int line = node.IsDefined() && node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
    return absl::InvalidArgumentError(absl::StrCat(source_, line > 0 ? ":" : "",
                                                   line > 0 ? absl::StrCat(line) : "", ": ",
                                                   Av(where), where.empty() ? "" : ": ", Av(what)));
  }

  // Every key of the map `node` must be in `allowed`.
  absl::Status CheckKeys(const YAML::Node& node, std::string_view where,
                         std::initializer_list<std::string_view> allowed) const {
    if (!node.IsMap()) return Error(node, where, "must be a mapping");
    std::set<std::string> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!it->first.IsScalar()) return Error(it->first, where, "keys must be strings");
      const std::string key = it->first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string list;
        for (std::string_view a : allowed) absl::StrAppend(&list, list.empty() ? "" : ", ", Av(a));
        return Error(it->first, where, absl::StrCat("unknown key \"", key, "\" (want ", list, ")"));
      }
      if (!seen.insert(key).second) {
        return Error(it->first, where, absl::StrCat("duplicate key \"", key, "\""));
      }
    }
    return absl::OkStatus();
  }

  absl::Status String(const YAML::Node& node, std::string_view where, std::string* out) const {
    if (!node.IsScalar()) return Error(node, where, "must be a string");
    *out = node.Scalar();
    if (std::any_of(out->begin(), out->end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
      return Error(node, where, "must not contain control characters");
    }
    return absl::OkStatus();
  }

  // A sequence of strings (a single string is not accepted: say [x]).
  absl::Status Strings(const YAML::Node& node, std::string_view where,
                       std::vector<std::string>* out) const {
    if (!node.IsSequence()) return Error(node, where, "must be a list of strings");
    out->clear();
    for (size_t i = 0; i < node.size(); ++i) {
      std::string s;
      if (absl::Status st = String(node[i], absl::StrCat(Av(where), "[", i, "]"), &s); !st.ok()) {
        return st;
      }
      out->push_back(std::move(s));
    }
    return absl::OkStatus();
  }

 private:
  std::string source_;
};

bool Contains(const std::vector<std::string>& list, std::string_view value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

bool MatchesOrStar(const std::vector<std::string>& list, std::string_view value) {
  return Contains(list, "*") || Contains(list, value);
}

// rbac ResourceMatches: "*", the combined "resource/subresource", or "*/subresource".
bool ResourceMatches(const AccessRule& rule, const RequestInfo& r) {
  const std::string combined =
      r.subresource.empty() ? r.resource : absl::StrCat(r.resource, "/", r.subresource);
  for (const std::string& res : rule.resources) {
    if (res == "*" || res == combined) return true;
    if (!r.subresource.empty() && res == absl::StrCat("*/", r.subresource)) return true;
  }
  return false;
}

bool NonResourceUrlMatches(const AccessRule& rule, std::string_view path) {
  for (const std::string& url : rule.non_resource_urls) {
    if (url == "*" || url == path) return true;
    if (url.ends_with('*') &&
        path.substr(0, url.size() - 1) == std::string_view(url).substr(0, url.size() - 1)) {
      return true;
    }
  }
  return false;
}

bool RuleAllows(const AccessRule& rule, const RequestInfo& r) {
  if (!MatchesOrStar(rule.verbs, r.verb)) return false;
  if (!r.is_resource_request) {
    return !rule.non_resource_urls.empty() && NonResourceUrlMatches(rule, r.path);
  }
  if (rule.resources.empty()) return false;
  if (!MatchesOrStar(rule.api_groups, r.api_group) || !ResourceMatches(rule, r)) return false;
  if (!rule.resource_names.empty() && !Contains(rule.resource_names, r.name)) return false;
  if (!rule.namespaces.empty() &&
      (r.namespace_name.empty() || !Contains(rule.namespaces, r.namespace_name))) {
    return false;
  }
  return true;
}

absl::Status ParseUser(const Reader& rd, const YAML::Node& node, const std::string& where,
                       UserEntry* user) {
  if (absl::Status s = rd.CheckKeys(node, where, {"name", "uid", "token", "groups", "extra"});
      !s.ok()) {
    return s;
  }
  for (const char* required : {"name", "token"}) {
    if (!node[required]) return rd.Error(node, where, absl::StrCat(required, " is required"));
  }
  absl::Status s = rd.String(node["name"], where + ".name", &user->info.name);
  s.Update(rd.String(node["token"], where + ".token", &user->token));
  if (node["uid"]) s.Update(rd.String(node["uid"], where + ".uid", &user->info.uid));
  if (node["groups"]) s.Update(rd.Strings(node["groups"], where + ".groups", &user->info.groups));
  if (!s.ok()) return s;
  if (user->info.name.empty()) return rd.Error(node["name"], where + ".name", "must not be empty");
  if (user->token.empty() || user->token.find(' ') != std::string::npos) {
    return rd.Error(node["token"], where + ".token", "must be non-empty and without spaces");
  }
  for (size_t i = 0; i < user->info.groups.size(); ++i) {
    if (user->info.groups[i].empty()) {
      return rd.Error(node["groups"][i], absl::StrCat(where, ".groups[", i, "]"),
                      "must not be empty");
    }
  }
  if (const YAML::Node extra = node["extra"]) {
    if (!extra.IsMap()) return rd.Error(extra, where + ".extra", "must map keys to string lists");
    for (auto it = extra.begin(); it != extra.end(); ++it) {
      std::string key;
      if (absl::Status st = rd.String(it->first, where + ".extra", &key); !st.ok()) return st;
      if (key.empty()) return rd.Error(it->first, where + ".extra", "keys must not be empty");
      std::vector<std::string> values;
      if (absl::Status st = rd.Strings(it->second, absl::StrCat(where, ".extra.", key), &values);
          !st.ok()) {
        return st;
      }
      if (!user->info.extra.emplace(key, std::move(values)).second) {
        return rd.Error(it->first, where + ".extra", absl::StrCat("duplicate key \"", key, "\""));
      }
    }
  }
  if (!Contains(user->info.groups, kAuthenticatedGroup)) {
    user->info.groups.emplace_back(kAuthenticatedGroup);
  }
  return absl::OkStatus();
}

absl::Status ParseRule(const Reader& rd, const YAML::Node& node, const std::string& where,
                       AccessRule* rule) {
  if (absl::Status s = rd.CheckKeys(node, where,
                                    {"users", "groups", "verbs", "apiGroups", "resources",
                                     "resourceNames", "namespaces", "nonResourceURLs"});
      !s.ok()) {
    return s;
  }
  rule->line = node.Mark().line + 1;
  struct Field {
    const char* key;
    std::vector<std::string>* out;
  };
  for (const Field& f :
       {Field{"users", &rule->users}, Field{"groups", &rule->groups}, Field{"verbs", &rule->verbs},
        Field{"apiGroups", &rule->api_groups}, Field{"resources", &rule->resources},
        Field{"resourceNames", &rule->resource_names}, Field{"namespaces", &rule->namespaces},
        Field{"nonResourceURLs", &rule->non_resource_urls}}) {
    if (!node[f.key]) continue;
    if (absl::Status s = rd.Strings(node[f.key], absl::StrCat(where, ".", f.key), f.out); !s.ok()) {
      return s;
    }
  }
  if (rule->users.empty() && rule->groups.empty()) {
    return rd.Error(node, where, "needs users or groups");
  }
  if (rule->verbs.empty()) return rd.Error(node, where, "verbs must not be empty");
  const bool resource_rule = !rule->resources.empty();
  const bool url_rule = !rule->non_resource_urls.empty();
  if (resource_rule == url_rule) {
    return rd.Error(node, where, "needs either resources (with apiGroups) or nonResourceURLs");
  }
  if (resource_rule && rule->api_groups.empty()) {
    return rd.Error(node, where, "resources need apiGroups (\"\" is the core group)");
  }
  if (url_rule &&
      (!rule->api_groups.empty() || !rule->resource_names.empty() || !rule->namespaces.empty())) {
    return rd.Error(node, where,
                    "nonResourceURLs do not take apiGroups, resourceNames or namespaces");
  }
  for (size_t i = 0; i < rule->non_resource_urls.size(); ++i) {
    const std::string& url = rule->non_resource_urls[i];
    const size_t star = url.find('*');
    if (url != "*" &&
        (url.empty() || url[0] != '/' || (star != std::string::npos && star != url.size() - 1))) {
      return rd.Error(node["nonResourceURLs"][i], absl::StrCat(where, ".nonResourceURLs[", i, "]"),
                      "must be \"*\" or start with \"/\", with \"*\" only at the end");
    }
  }
  for (const std::string& ns : rule->namespaces) {
    if (ns.empty()) return rd.Error(node["namespaces"], where + ".namespaces", "empty namespace");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<UsersFile> UsersFile::Parse(std::string_view yaml, std::string_view source) {
  const Reader rd(source);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(Av(source), ":", e.mark.line + 1, ": not valid YAML: ", e.msg));
  }
  UsersFile file;
  try {
    if (absl::Status s = rd.CheckKeys(root, "", {"users", "rules"}); !s.ok()) return s;
    const YAML::Node users = root["users"];
    if (!users || !users.IsSequence() || users.size() == 0) {
      return rd.Error(users ? users : root, "users", "must be a non-empty list");
    }
    std::map<std::string, size_t> names;
    for (size_t i = 0; i < users.size(); ++i) {
      const std::string where = absl::StrCat("users[", i, "]");
      UserEntry user;
      if (absl::Status s = ParseUser(rd, users[i], where, &user); !s.ok()) return s;
      if (auto [it, inserted] = names.emplace(user.info.name, i); !inserted) {
        return rd.Error(users[i]["name"], where + ".name",
                        absl::StrCat("duplicate name (also users[", it->second, "])"));
      }
      if (auto [it, inserted] = file.by_token_.emplace(user.token, i); !inserted) {
        return rd.Error(users[i]["token"], where + ".token",
                        absl::StrCat("duplicate token (also users[", it->second, "])"));
      }
      file.users_.push_back(std::move(user));
    }
    if (const YAML::Node rules = root["rules"]) {
      if (!rules.IsSequence()) return rd.Error(rules, "rules", "must be a list");
      for (size_t i = 0; i < rules.size(); ++i) {
        AccessRule rule;
        if (absl::Status s = ParseRule(rd, rules[i], absl::StrCat("rules[", i, "]"), &rule);
            !s.ok()) {
          return s;
        }
        file.rules_.push_back(std::move(rule));
      }
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(Av(source), ":", e.mark.line + 1, ": ", e.msg));
  }
  return file;
}

absl::StatusOr<UsersFile> UsersFile::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read users file ", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::InternalError(absl::StrCat("cannot read users file ", path));
  return Parse(text.str(), path);
}

const UserInfo* UsersFile::Authenticate(std::string_view token) const {
  auto it = by_token_.find(token);
  return it == by_token_.end() ? nullptr : &users_[it->second].info;
}

const UserEntry* UsersFile::Find(std::string_view name) const {
  for (const UserEntry& u : users_) {
    if (u.info.name == name) return &u;
  }
  return nullptr;
}

AccessDecision UsersFile::Authorize(std::string_view user, const std::vector<std::string>& groups,
                                    const RequestInfo& request) const {
  if (Contains(groups, kMastersGroup)) return {true, "user is in group system:masters"};
  for (size_t i = 0; i < rules_.size(); ++i) {
    const AccessRule& rule = rules_[i];
    const bool subject = Contains(rule.users, user) ||
                         std::any_of(groups.begin(), groups.end(), [&rule](const std::string& g) {
                           return Contains(rule.groups, g);
                         });
    if (subject && RuleAllows(rule, request)) {
      return {true, absl::StrCat("allowed by rules[", i, "] (line ", rule.line, ")")};
    }
  }
  return {false, ""};
}

std::string ForbiddenMessage(std::string_view user, const RequestInfo& r) {
  std::string quoted_user = absl::StrCat("\"", Av(user), "\"");
  if (!r.is_resource_request) {
    return absl::StrCat("User ", quoted_user, " cannot ", r.verb, " path \"", r.path, "\"");
  }
  const std::string resource =
      r.subresource.empty() ? r.resource : absl::StrCat(r.resource, "/", r.subresource);
  std::string out = absl::StrCat("User ", quoted_user, " cannot ", r.verb, " resource \"", resource,
                                 "\" in API group \"", r.api_group, "\"");
  if (r.namespace_name.empty()) {
    absl::StrAppend(&out, " at the cluster scope");
  } else {
    absl::StrAppend(&out, " in the namespace \"", r.namespace_name, "\"");
  }
  return out;
}

}  // namespace kubestat::sim
