#include "kubestat/sim/access_review.h"

#include <simdjson.h>

#include <map>
#include <vector>

#include "kubestat/apimachinery/api_error.h"
#include "kubestat/core/json_writer.h"

namespace kubestat::sim {
namespace {

using simdjson::dom::element;
using simdjson::dom::object;

absl::Status BadRequest(std::string_view message) {
  return ApiError::BadRequest(message).ToStatus();
}

// The top-level object of a review body, after checking kind and apiVersion.
absl::StatusOr<object> ParseReview(simdjson::dom::parser& parser, std::string_view body,
                                   std::string_view kind, std::string_view api_version) {
  element root;
  if (parser.parse(body.data(), body.size()).get(root) != simdjson::SUCCESS) {
    return BadRequest(std::string("the body of the ") + std::string(kind) + " is not valid JSON");
  }
  object top;
  if (root.get_object().get(top) != simdjson::SUCCESS) {
    return BadRequest(std::string("the body of the ") + std::string(kind) +
                      " must be a JSON object");
  }
  std::string_view value;
  if (element k; top["kind"].get(k) == simdjson::SUCCESS &&
                 (k.get_string().get(value) != simdjson::SUCCESS || value != kind)) {
    return BadRequest(std::string("kind must be \"") + std::string(kind) + "\"");
  }
  if (element v; top["apiVersion"].get(v) == simdjson::SUCCESS &&
                 (v.get_string().get(value) != simdjson::SUCCESS || value != api_version)) {
    return BadRequest(std::string("apiVersion must be \"") + std::string(api_version) + "\"");
  }
  return top;
}

// An optional string member; absent and null read as "".
absl::Status OptionalString(object obj, std::string_view key, std::string_view where,
                            std::string* out) {
  element e;
  if (obj[key].get(e) != simdjson::SUCCESS || e.is_null()) return absl::OkStatus();
  std::string_view s;
  if (e.get_string().get(s) != simdjson::SUCCESS) {
    return BadRequest(std::string(where) + " must be a string");
  }
  out->assign(s);
  return absl::OkStatus();
}

absl::Status OptionalStrings(object obj, std::string_view key, std::string_view where,
                             std::vector<std::string>* out) {
  element e;
  if (obj[key].get(e) != simdjson::SUCCESS || e.is_null()) return absl::OkStatus();
  simdjson::dom::array arr;
  if (e.get_array().get(arr) != simdjson::SUCCESS) {
    return BadRequest(std::string(where) + " must be a list of strings");
  }
  for (element item : arr) {
    std::string_view s;
    if (item.get_string().get(s) != simdjson::SUCCESS) {
      return BadRequest(std::string(where) + " must be a list of strings");
    }
    out->emplace_back(s);
  }
  return absl::OkStatus();
}

// An optional object member; absent and null leave *out unset and *present false.
absl::Status OptionalObject(object obj, std::string_view key, std::string_view where, object* out,
                            bool* present) {
  *present = false;
  element e;
  if (obj[key].get(e) != simdjson::SUCCESS || e.is_null()) return absl::OkStatus();
  if (e.get_object().get(*out) != simdjson::SUCCESS) {
    return BadRequest(std::string(where) + " must be an object");
  }
  *present = true;
  return absl::OkStatus();
}

void WriteStrings(JsonWriter& w, std::string_view key, const std::vector<std::string>& values) {
  w.Key(key).BeginArray();
  for (const std::string& v : values) w.String(v);
  w.EndArray();
}

void WriteExtra(JsonWriter& w, const std::map<std::string, std::vector<std::string>>& extra) {
  w.Key("extra").BeginObject();
  for (const auto& [k, values] : extra) WriteStrings(w, k, values);
  w.EndObject();
}

void MemberIfSet(JsonWriter& w, std::string_view key, const std::string& value) {
  if (!value.empty()) w.Member(key, value);
}

}  // namespace

absl::StatusOr<std::string> ReviewToken(std::string_view body, const UsersFile& users) {
  simdjson::dom::parser parser;
  absl::StatusOr<object> top = ParseReview(parser, body, "TokenReview", "authentication.k8s.io/v1");
  if (!top.ok()) return top.status();
  object spec;
  bool has_spec = false;
  if (absl::Status s = OptionalObject(*top, "spec", "spec", &spec, &has_spec); !s.ok()) return s;
  std::string token;
  std::vector<std::string> audiences;
  if (has_spec) {
    if (absl::Status s = OptionalString(spec, "token", "spec.token", &token); !s.ok()) return s;
    if (absl::Status s = OptionalStrings(spec, "audiences", "spec.audiences", &audiences);
        !s.ok()) {
      return s;
    }
  }
  if (token.empty()) return BadRequest("token is required for TokenReview in authentication");

  const UserInfo* user = users.Authenticate(token);
  JsonWriter w;
  w.BeginObject().Member("kind", "TokenReview").Member("apiVersion", "authentication.k8s.io/v1");
  w.Key("metadata").BeginObject().Key("creationTimestamp").Null().EndObject();
  w.Key("spec").BeginObject().Member("token", token);
  if (!audiences.empty()) WriteStrings(w, "audiences", audiences);
  w.EndObject();
  w.Key("status").BeginObject().Member("authenticated", user != nullptr);
  w.Key("user").BeginObject();
  if (user != nullptr) {
    w.Member("username", user->name);
    MemberIfSet(w, "uid", user->uid);
    WriteStrings(w, "groups", user->groups);
    if (!user->extra.empty()) WriteExtra(w, user->extra);
  }
  w.EndObject();
  if (user != nullptr && !audiences.empty()) WriteStrings(w, "audiences", audiences);
  if (user == nullptr) w.Member("error", "invalid bearer token");
  w.EndObject().EndObject();
  return w.Take();
}

absl::StatusOr<std::string> ReviewSubjectAccess(std::string_view body, const UsersFile& users) {
  simdjson::dom::parser parser;
  absl::StatusOr<object> top =
      ParseReview(parser, body, "SubjectAccessReview", "authorization.k8s.io/v1");
  if (!top.ok()) return top.status();
  object spec;
  bool has_spec = false;
  if (absl::Status s = OptionalObject(*top, "spec", "spec", &spec, &has_spec); !s.ok()) return s;
  if (!has_spec) return BadRequest("spec is required");

  std::string user, uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
  absl::Status s = OptionalString(spec, "user", "spec.user", &user);
  s.Update(OptionalString(spec, "uid", "spec.uid", &uid));
  s.Update(OptionalStrings(spec, "groups", "spec.groups", &groups));
  if (!s.ok()) return s;
  object extra_obj;
  bool has_extra = false;
  if (s = OptionalObject(spec, "extra", "spec.extra", &extra_obj, &has_extra); !s.ok()) return s;
  if (has_extra) {
    for (auto [key, value] : extra_obj) {
      std::vector<std::string> values;
      simdjson::dom::array arr;
      if (value.get_array().get(arr) != simdjson::SUCCESS) {
        return BadRequest("spec.extra values must be lists of strings");
      }
      for (element item : arr) {
        std::string_view v;
        if (item.get_string().get(v) != simdjson::SUCCESS) {
          return BadRequest("spec.extra values must be lists of strings");
        }
        values.emplace_back(v);
      }
      extra[std::string(key)] = std::move(values);
    }
  }

  object res, non_res;
  bool has_res = false, has_non_res = false;
  s = OptionalObject(spec, "resourceAttributes", "spec.resourceAttributes", &res, &has_res);
  s.Update(OptionalObject(spec, "nonResourceAttributes", "spec.nonResourceAttributes", &non_res,
                          &has_non_res));
  if (!s.ok()) return s;

  std::vector<StatusCause> causes;
  if (has_res == has_non_res) {
    causes.push_back({"FieldValueInvalid",
                      "Invalid value: \"null\": exactly one of nonResourceAttributes or "
                      "resourceAttributes must be specified",
                      "spec.resourceAttributes"});
  }
  if (user.empty() && groups.empty()) {
    causes.push_back({"FieldValueInvalid",
                      "Invalid value: \"\": at least one of user or group must be specified",
                      "spec.user"});
  }
  if (!causes.empty()) {
    return ApiError::Invalid("authorization.k8s.io", "SubjectAccessReview", "", std::move(causes))
        .ToStatus();
  }

  RequestInfo request;
  if (has_res) {
    request.is_resource_request = true;
    s = OptionalString(res, "namespace", "spec.resourceAttributes.namespace",
                       &request.namespace_name);
    s.Update(OptionalString(res, "verb", "spec.resourceAttributes.verb", &request.verb));
    s.Update(OptionalString(res, "group", "spec.resourceAttributes.group", &request.api_group));
    s.Update(
        OptionalString(res, "version", "spec.resourceAttributes.version", &request.api_version));
    s.Update(
        OptionalString(res, "resource", "spec.resourceAttributes.resource", &request.resource));
    s.Update(OptionalString(res, "subresource", "spec.resourceAttributes.subresource",
                            &request.subresource));
    s.Update(OptionalString(res, "name", "spec.resourceAttributes.name", &request.name));
  } else {
    s = OptionalString(non_res, "path", "spec.nonResourceAttributes.path", &request.path);
    s.Update(OptionalString(non_res, "verb", "spec.nonResourceAttributes.verb", &request.verb));
  }
  if (!s.ok()) return s;
  const AccessDecision decision = users.Authorize(user, groups, request);

  JsonWriter w;
  w.BeginObject()
      .Member("kind", "SubjectAccessReview")
      .Member("apiVersion", "authorization.k8s.io/v1");
  w.Key("metadata").BeginObject().Key("creationTimestamp").Null().EndObject();
  w.Key("spec").BeginObject();
  if (has_res) {
    w.Key("resourceAttributes").BeginObject();
    MemberIfSet(w, "namespace", request.namespace_name);
    MemberIfSet(w, "verb", request.verb);
    MemberIfSet(w, "group", request.api_group);
    MemberIfSet(w, "version", request.api_version);
    MemberIfSet(w, "resource", request.resource);
    MemberIfSet(w, "subresource", request.subresource);
    MemberIfSet(w, "name", request.name);
    w.EndObject();
  } else {
    w.Key("nonResourceAttributes").BeginObject();
    MemberIfSet(w, "path", request.path);
    MemberIfSet(w, "verb", request.verb);
    w.EndObject();
  }
  MemberIfSet(w, "user", user);
  if (!groups.empty()) WriteStrings(w, "groups", groups);
  if (!extra.empty()) WriteExtra(w, extra);
  MemberIfSet(w, "uid", uid);
  w.EndObject();
  w.Key("status").BeginObject().Member("allowed", decision.allowed);
  MemberIfSet(w, "reason", decision.reason);
  w.EndObject().EndObject();
  return w.Take();
}

}  // namespace kubestat::sim
