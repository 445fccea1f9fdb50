#include "limit_ranges.h"

#include <simdjson.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/core/time.h"

namespace kubestat::sim {

std::vector<SimLimitRange> DefaultLimitRanges(Timestamp created) {
  return {{"shop", "limits", LimitRangeUid(0x6c1b7d0e5a3f4c4e),
           R"({"limits":[{"type":"Container","min":{"cpu":"50m","memory":"64Mi"},)"
           R"("max":{"cpu":"1","memory":"512Mi"},"maxLimitRequestRatio":{"cpu":"4"}},)"
           R"({"type":"Pod","max":{"memory":"1Gi"}}]})",
           created}};
}

std::string LimitRangeUid(uint64_t hash) {
  char uid[40];
  std::snprintf(uid, sizeof(uid), "%08x-%04x-4%03x-8%03x-%012llx",
                static_cast<unsigned>(hash >> 32), static_cast<unsigned>(hash >> 16) & 0xffff,
                static_cast<unsigned>(hash >> 4) & 0xfff, static_cast<unsigned>(hash) & 0xfff,
                static_cast<unsigned long long>(hash * 0x9e3779b97f4a7c15ULL) & 0xffffffffffffULL);
  return uid;
}

absl::StatusOr<std::string> ParseLimitRangeSpec(std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(body.data(), body.size()).get(root) != simdjson::SUCCESS || !root.is_object()) {
    return absl::InvalidArgumentError("the body must be a LimitRange as a JSON object");
  }
  simdjson::dom::element spec = root;
  if (simdjson::dom::element inner; root["spec"].get(inner) == simdjson::SUCCESS) spec = inner;
  simdjson::dom::array limits;
  if (!spec.is_object() || spec["limits"].get(limits) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("spec.limits: Required value: a LimitRange needs limits");
  }
  return simdjson::minify(spec);
}

void AppendLimitRangeJson(std::string& out, const SimLimitRange& lr, uint64_t resource_version) {
  JsonWriter w;
  w.BeginObject();
  w.Member("kind", "LimitRange");
  w.Member("apiVersion", "v1");
  w.Key("metadata").BeginObject();
  w.Member("name", lr.name);
  w.Member("namespace", lr.namespace_name);
  w.Member("uid", lr.uid);
  w.Member("resourceVersion", absl::StrCat(resource_version));
  w.Member("creationTimestamp", FormatRfc3339(lr.created));
  w.EndObject();
  w.Key("spec");
  w.Raw(lr.spec_json);
  w.EndObject();
  out += w.Take();
}

}  // namespace kubestat::sim
