#include "api_writes.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/core/log.h"
#include "kubestat/core/time.h"
#include "kubestat/metrics_api/parse.h"
#include "kubestat/metrics_api/render.h"
#include "kubestat/metrics_api/write_batch.h"

namespace kubestat::apiserver::internal {

ApiWrites::ApiWrites(ObjectStore& store, const Clock& clock, StoreTimer& timer,
                     prometheus::Registry& registry)
    : store_(store),
      clock_(clock),
      timer_(timer),
      writes_(prometheus::BuildCounter()
                  .Name("kubestat_apiserver_writes_total")
                  .Help("Writes by operation and answer code.")
                  .Register(registry)) {}

std::variant<WriteOp, ApiError> ApiWrites::ReadObject(const http::Request& request, const Target& t,
                                                      WriteOp::Type type) {
  const std::string_view kind = metrics_api::KindName(ResourceOf(t.kind));
  std::optional<std::string_view> content_type = request.Header("Content-Type");
  if (content_type && content_type->find("json") == std::string_view::npos) {
    return ApiError::UnsupportedMediaType(
        absl::StrCat("the body must be application/json, not ", AbslView(*content_type)));
  }
  WriteOp op;
  op.type = type;
  op.key.kind = t.kind;
  std::string name;
  std::string namespace_name;
  if (t.kind == ObjectKind::kNode) {
    absl::StatusOr<metrics_api::Parsed<NodeMetrics>> node =
        metrics_api::ParseNodeMetrics(request.body);
    if (!node.ok()) return InvalidObject(kind, t.name, node.status());
    if (node->gv != GroupVersion::kV1alpha1) {
      return InvalidObject(kind, t.name,
                           absl::InvalidArgumentError("apiVersion: must be metrics/v1alpha1"));
    }
    name = node->object.name;
    node->object.resource_version.clear();
    op.node = std::make_shared<const NodeMetrics>(std::move(node->object));
  } else {
    absl::StatusOr<metrics_api::Parsed<PodMetrics>> pod =
        metrics_api::ParsePodMetrics(request.body);
    if (!pod.ok()) return InvalidObject(kind, t.name, pod.status());
    if (pod->gv != GroupVersion::kV1alpha1) {
      return InvalidObject(kind, t.name,
                           absl::InvalidArgumentError("apiVersion: must be metrics/v1alpha1"));
    }
    name = pod->object.name;
    namespace_name = pod->object.namespace_name;
    pod->object.resource_version.clear();
    op.pod = std::make_shared<const PodMetrics>(std::move(pod->object));
  }
  if (!t.name.empty() && name != t.name) {
    return ApiError::BadRequest(absl::StrCat(
        "the name of the object (", name, ") does not match the name on the URL (", t.name, ")"));
  }
  if (t.kind == ObjectKind::kPod && namespace_name != t.namespace_name) {
    return ApiError::BadRequest(absl::StrCat("the namespace of the object (", namespace_name,
                                             ") does not match the namespace on the URL (",
                                             t.namespace_name, ")"));
  }
  op.key.name = name;
  op.key.namespace_name = namespace_name;
  return op;
}

http::Response ApiWrites::Counted(std::string_view operation, http::Response response) {
  writes_.Add({{"operation", std::string(operation)}, {"code", std::to_string(response.code)}})
      .Increment();
  return response;
}

http::Response ApiWrites::WriteOne(const http::Request& request, const Target& t,
                                   WriteOp::Type type) {
  const std::string_view operation = type == WriteOp::Type::kCreate ? "create" : "put";
  std::variant<WriteOp, ApiError> read = ReadObject(request, t, type);
  if (auto* error = std::get_if<ApiError>(&read)) {
    return Counted(operation, http::ErrorResponse(*error));
  }
  const WriteOp& op = std::get<WriteOp>(read);
  // One store call: the write tells whether it made the key (201) or replaced it (200).
  absl::StatusOr<WriteResult> result = timer_.Timed("apply", [&] { return store_.Apply({op}); });
  if (!result.ok()) {
    if (result.status().code() == absl::StatusCode::kAlreadyExists) {
      return Counted(operation,
                     http::ErrorResponse(ApiError::AlreadyExists(
                         metrics_api::kGroupMetrics, ObjectKindName(t.kind), op.key.name)));
    }
    return Counted(operation, http::ErrorResponse(ApiError::FromStatus(result.status())));
  }
  const RenderContext ctx{GroupVersion::kV1alpha1, clock_.Now(), 0};
  return Counted(operation, Json(result->created.front() ? 201 : 200,
                                 RenderStored(result->objects.front(), ctx), t.route));
}

http::Response ApiWrites::Delete(const Target& t) {
  WriteOp op;
  op.type = WriteOp::Type::kDelete;
  op.key = ObjectKey{t.kind, t.namespace_name, t.name};
  absl::StatusOr<WriteResult> result = timer_.Timed("apply", [&] { return store_.Apply({op}); });
  if (!result.ok()) {
    if (result.status().code() == absl::StatusCode::kNotFound) {
      return Counted("delete", http::ErrorResponse(ApiError::NotFound(
                                   metrics_api::kGroupMetrics, ObjectKindName(t.kind), t.name)));
    }
    return Counted("delete", http::ErrorResponse(ApiError::FromStatus(result.status())));
  }
  JsonWriter w;
  w.BeginObject();
  w.Key("kind").String("Status");
  w.Key("apiVersion").String("v1");
  w.Key("metadata").BeginObject().EndObject();
  w.Key("status").String("Success");
  w.Key("details").BeginObject();
  w.Key("name").String(t.name);
  w.Key("group").String(metrics_api::kGroupMetrics);
  w.Key("kind").String(ObjectKindName(t.kind));
  w.EndObject();
  w.EndObject();
  return Counted("delete", Json(200, w.Take(), t.route));
}

http::Response ApiWrites::WriteBatch(const http::Request& request) {
  absl::StatusOr<metrics_api::WriteBatch> batch = metrics_api::ParseWriteBatch(request.body);
  if (!batch.ok()) {
    return Counted("batch", http::ErrorResponse(InvalidObject("WriteBatch", "", batch.status())));
  }
  std::vector<WriteOp> ops;
  ops.reserve(batch->items.size());
  for (metrics_api::WriteItem& item : batch->items) {
    WriteOp op;
    const bool node = item.resource == Resource::kNodes;
    op.key.kind = node ? ObjectKind::kNode : ObjectKind::kPod;
    if (item.op == metrics_api::WriteItem::Op::kDelete) {
      op.type = WriteOp::Type::kDeleteIfPresent;
      op.key.name = item.name;
      op.key.namespace_name = node ? "" : item.namespace_name;
    } else if (node) {
      op.key.name = item.node.name;
      item.node.resource_version.clear();
      op.node = std::make_shared<const NodeMetrics>(std::move(item.node));
    } else {
      op.key.name = item.pod.name;
      op.key.namespace_name = item.pod.namespace_name;
      item.pod.resource_version.clear();
      op.pod = std::make_shared<const PodMetrics>(std::move(item.pod));
    }
    ops.push_back(std::move(op));
  }
  absl::StatusOr<WriteResult> result = timer_.Timed("apply", [&] { return store_.Apply(ops); });
  if (!result.ok())
    return Counted("batch", http::ErrorResponse(ApiError::FromStatus(result.status())));
  return Counted("batch",
                 Json(200, metrics_api::RenderWriteBatchResult(result->revision, ops.size()),
                      metrics_api::kWriteBatchPath));
}

void ApiWrites::Expire(Timestamp now, Duration ttl) {
  absl::StatusOr<size_t> expired = store_.ExpireOlderThan(now - ttl);
  if (!expired.ok()) {
    KLOG(WARNING) << "expiring objects older than " << FormatDuration(ttl) << ": "
                  << expired.status().message();
    return;
  }
  if (*expired > 0) {
    writes_.Add({{"operation", "expire"}, {"code", "200"}})
        .Increment(static_cast<double>(*expired));
    KLOG(INFO) << "expired " << *expired << " objects not written for " << FormatDuration(ttl);
  }
}

}  // namespace kubestat::apiserver::internal
