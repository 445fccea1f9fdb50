#include "stored_objects.h"

#include <simdjson.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/core/time.h"

namespace kubestat::sim {

std::vector<StoredObject> DefaultLimitRanges(Timestamp created) {
  return {{"shop", "limits", StoredObjectUid(0x6c1b7d0e5a3f4c4e),
           R"({"limits":[{"type":"Container","min":{"cpu":"50m","memory":"64Mi"},)"
           R"("max":{"cpu":"1","memory":"512Mi"},"maxLimitRequestRatio":{"cpu":"4"}},)"
           R"({"type":"Pod","max":{"memory":"1Gi"}}]})",
           created}};
}

StoredObject ExtensionAuthenticationConfigMap(std::string_view front_proxy_ca_pem,
                                              Timestamp created) {
  JsonWriter w;
  w.BeginObject();
  w.Member("requestheader-allowed-names", R"(["front-proxy-client"])");
  w.Member("requestheader-client-ca-file", front_proxy_ca_pem);
  w.Member("requestheader-extra-headers-prefix", R"(["X-Remote-Extra-"])");
  w.Member("requestheader-group-headers", R"(["X-Remote-Group"])");
  w.Member("requestheader-username-headers", R"(["X-Remote-User"])");
  w.EndObject();
  return {"kube-system", "extension-apiserver-authentication", StoredObjectUid(0x3e8f0c2a91d54b7e),
          w.Take(), created};
}

std::string StoredObjectUid(uint64_t hash) {
  char uid[40];
  std::snprintf(uid, sizeof(uid), "%08x-%04x-4%03x-8%03x-%012llx",
                static_cast<unsigned>(hash >> 32), static_cast<unsigned>(hash >> 16) & 0xffff,
                static_cast<unsigned>(hash >> 4) & 0xfff, static_cast<unsigned>(hash) & 0xfff,
                static_cast<unsigned long long>(hash * 0x9e3779b97f4a7c15ULL) & 0xffffffffffffULL);
  return uid;
}

absl::StatusOr<std::string> ParseStoredContent(const StoredKind& kind, std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(body.data(), body.size()).get(root) != simdjson::SUCCESS || !root.is_object()) {
    return absl::InvalidArgumentError(
        StrCat("the body must be a ", kind.kind, " as a JSON object"));
  }
  simdjson::dom::element content = root;
  if (simdjson::dom::element inner; root[kind.content].get(inner) == simdjson::SUCCESS) {
    content = inner;
  }
  if (kind.kind == kLimitRanges.kind) {
    simdjson::dom::array limits;
    if (!content.is_object() || content["limits"].get(limits) != simdjson::SUCCESS) {
      return absl::InvalidArgumentError("spec.limits: Required value: a LimitRange needs limits");
    }
  } else {
    simdjson::dom::object data;
    if (content.get(data) != simdjson::SUCCESS) {
      return absl::InvalidArgumentError("data: Invalid value: must be an object of strings");
    }
    for (simdjson::dom::key_value_pair field : data) {
      if (!field.value.is_string()) {
        return absl::InvalidArgumentError(
            StrCat("data[", field.key, "]: Invalid value: must be a string"));
      }
    }
  }
  return simdjson::minify(content);
}

void AppendStoredObjectJson(std::string& out, const StoredKind& kind, const StoredObject& object,
                            uint64_t resource_version) {
  JsonWriter w;
  w.BeginObject();
  w.Member("kind", kind.kind);
  w.Member("apiVersion", "v1");
  w.Key("metadata").BeginObject();
  w.Member("name", object.name);
  w.Member("namespace", object.namespace_name);
  w.Member("uid", object.uid);
  w.Member("resourceVersion", absl::StrCat(resource_version));
  w.Member("creationTimestamp", FormatRfc3339(object.created));
  w.EndObject();
  w.Key(kind.content);
  w.Raw(object.content_json);
  w.EndObject();
  out += w.Take();
}

}  // namespace kubestat::sim
