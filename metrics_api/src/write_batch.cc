#include "kubestat/metrics_api/write_batch.h"

#include <simdjson.h>

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/metrics_api/parse.h"
#include "kubestat/metrics_api/render.h"
#include "parse_element.h"

namespace kubestat::metrics_api {
namespace {

using simdjson::dom::element;
using simdjson::dom::object;

constexpr std::string_view kKind = "WriteBatch";
constexpr std::string_view kResultKind = "WriteBatchResult";

void WriteOneItem(JsonWriter& w, const WriteItem& item) {
  if (item.op == WriteItem::Op::kPut) {
    w.Raw(RenderPutItem(RenderWriteObject(item)).json);
    return;
  }
  w.BeginObject();
  w.Key("op").String("delete");
  w.Key("kind").String(KindName(item.resource));
  if (item.resource == Resource::kPods) w.Key("namespace").String(item.namespace_name);
  w.Key("name").String(item.name);
  w.EndObject();
}

absl::Status ItemError(size_t index, std::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("items[", index, "].", AbslView(message)));
}

// The string member `key` of `o`; "" when absent or not a string.
std::string_view Str(object o, std::string_view key) {
  std::string_view value;
  if (o[key].get(value) != simdjson::SUCCESS) return {};
  return value;
}

absl::StatusOr<WriteItem> ParseItem(element e, size_t index) {
  object item;
  if (e.get(item) != simdjson::SUCCESS) return ItemError(index, "op: the item must be an object");
  const std::string_view op = Str(item, "op");
  WriteItem out;
  if (op == "put") {
    element o;
    if (item["object"].get(o) != simdjson::SUCCESS) return ItemError(index, "object: required");
    object as_object;
    if (o.get(as_object) != simdjson::SUCCESS) {
      return ItemError(index, "object: must be an object");
    }
    const std::string_view kind = Str(as_object, "kind");
    absl::Status failed;
    GroupVersion gv = GroupVersion::kV1alpha1;
    if (kind == KindName(Resource::kNodes)) {
      absl::StatusOr<Parsed<NodeMetrics>> node = NodeMetricsFrom(o);
      if (node.ok()) {
        gv = node->gv;
        out.resource = Resource::kNodes;
        out.node = std::move(node->object);
      } else {
        failed = node.status();
      }
    } else if (kind == KindName(Resource::kPods)) {
      absl::StatusOr<Parsed<PodMetrics>> pod = PodMetricsFrom(o);
      if (pod.ok()) {
        gv = pod->gv;
        out.resource = Resource::kPods;
        out.pod = std::move(pod->object);
      } else {
        failed = pod.status();
      }
    } else {
      return ItemError(index, "object.kind: must be NodeMetrics or PodMetrics");
    }
    if (!failed.ok()) return ItemError(index, absl::StrCat("object.", failed.message()));
    if (gv != GroupVersion::kV1alpha1) {
      return ItemError(index, "object.apiVersion: must be metrics/v1alpha1 (every window)");
    }
    return out;
  }
  if (op == "delete") {
    out.op = WriteItem::Op::kDelete;
    const std::string_view kind = Str(item, "kind");
    if (kind == KindName(Resource::kNodes)) {
      out.resource = Resource::kNodes;
    } else if (kind == KindName(Resource::kPods)) {
      out.resource = Resource::kPods;
    } else {
      return ItemError(index, "kind: must be NodeMetrics or PodMetrics");
    }
    out.name = std::string(Str(item, "name"));
    if (out.name.empty()) return ItemError(index, "name: required");
    if (out.resource == Resource::kPods) {
      out.namespace_name = std::string(Str(item, "namespace"));
      if (out.namespace_name.empty()) return ItemError(index, "namespace: required");
    }
    return out;
  }
  return ItemError(index, "op: must be \"put\" or \"delete\"");
}

}  // namespace

std::string RenderWriteObject(const WriteItem& item) {
  const RenderContext alpha{GroupVersion::kV1alpha1, {}, 0};
  return item.resource == Resource::kNodes ? *RenderNode(item.node, alpha)
                                           : *RenderPod(item.pod, alpha);
}

RenderedPut RenderPutItem(std::string_view object_json) {
  static constexpr std::string_view kHead = R"({"op":"put","object":)";
  RenderedPut put;
  put.json.reserve(kHead.size() + object_json.size() + 1);
  put.json.append(kHead).append(object_json).push_back('}');
  put.object_at = kHead.size();
  return put;
}

std::string RenderWriteItem(const WriteItem& item) {
  JsonWriter w;
  WriteOneItem(w, item);
  return w.Take();
}

std::string RenderWriteBatch(const WriteBatch& batch) {
  JsonWriter w;
  w.BeginObject();
  w.Key("kind").String(kKind);
  w.Key("apiVersion").String(ApiVersion(GroupVersion::kV1alpha1));
  w.Key("items").BeginArray();
  for (const WriteItem& item : batch.items) WriteOneItem(w, item);
  w.EndArray();
  w.EndObject();
  return w.Take();
}

std::string JoinWriteBatch(std::span<const std::string_view> rendered_items) {
  // The empty batch's body, split where its items go.
  static const std::string empty = RenderWriteBatch(WriteBatch{});
  static const size_t items_at = empty.rfind("[]") + 1;
  size_t size = empty.size() + rendered_items.size();
  for (std::string_view item : rendered_items) size += item.size();
  std::string body;
  body.reserve(size);
  body.append(empty, 0, items_at);
  for (size_t i = 0; i < rendered_items.size(); ++i) {
    if (i > 0) body.push_back(',');
    body.append(rendered_items[i]);
  }
  body.append(empty, items_at);
  return body;
}

absl::StatusOr<WriteBatch> ParseWriteBatch(std::string_view json) {
  simdjson::dom::parser parser;
  element doc;
  if (auto error = parser.parse(json.data(), json.size()).get(doc); error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid JSON: ", simdjson::error_message(error)));
  }
  object root;
  if (doc.get(root) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("the document must be a JSON object");
  }
  if (Str(root, "kind") != kKind) return absl::InvalidArgumentError("kind: must be WriteBatch");
  if (Str(root, "apiVersion") != ApiVersion(GroupVersion::kV1alpha1)) {
    return absl::InvalidArgumentError("apiVersion: must be metrics/v1alpha1");
  }
  simdjson::dom::array items;
  if (root["items"].get(items) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("items: required, an array");
  }
  WriteBatch batch;
  size_t index = 0;
  for (element e : items) {
    absl::StatusOr<WriteItem> item = ParseItem(e, index++);
    if (!item.ok()) return item.status();
    batch.items.push_back(*std::move(item));
  }
  return batch;
}

std::string RenderWriteBatchResult(uint64_t resource_version, size_t applied) {
  JsonWriter w;
  w.BeginObject();
  w.Key("kind").String(kResultKind);
  w.Key("apiVersion").String(ApiVersion(GroupVersion::kV1alpha1));
  w.Key("resourceVersion").String(std::to_string(resource_version));
  w.Key("applied").Uint(applied);
  w.EndObject();
  return w.Take();
}

}  // namespace kubestat::metrics_api
