#include "api_reads.h"

#include <memory>
#include <vector>

#include "kubestat/core/absl_view.h"
#include "kubestat/metrics_api/render.h"
#include "kubestat/metrics_api/render_protobuf.h"

namespace kubestat::apiserver::internal {

http::Response ApiReads::GetOne(const Target& t, const metrics_api::QueryParams& params, int indent,
                                Encoding encoding) {
  std::variant<ReadVersion, ApiError> version = ReadVersionOf(params, /*list=*/false);
  if (auto* error = std::get_if<ApiError>(&version)) return http::ErrorResponse(*error);
  const ObjectKey key{t.kind, t.namespace_name, t.name};
  absl::StatusOr<std::optional<StoredObject>> found =
      timer_.Timed("get", [&] { return store_.GetAt(key, std::get<ReadVersion>(version)); });
  if (!found.ok()) return http::ErrorResponse(ApiError::FromStatus(found.status()));
  const RenderContext ctx{t.gv, clock_.Now(), indent};
  if (!*found || !Matches(ListQuery{}, t.gv, **found)) {
    return http::ErrorResponse(
        ApiError::NotFound(metrics_api::GroupName(t.gv), ObjectKindName(t.kind), t.name));
  }
  return Encoded(encoding, RenderStored(**found, ctx, encoding), t.route);
}

http::Response ApiReads::List(const Target& t, const metrics_api::QueryParams& params, int indent,
                              Encoding encoding) {
  absl::StatusOr<ListQuery> query =
      metrics_api::ParseListQuery(params, ResourceOf(t.kind), t.namespace_name);
  if (!query.ok()) {
    return http::ErrorResponse(ApiError::BadRequest(StdView(query.status().message())));
  }
  std::variant<ReadVersion, ApiError> version = ReadVersionOf(params, /*list=*/true);
  if (auto* error = std::get_if<ApiError>(&version)) return http::ErrorResponse(*error);
  absl::StatusOr<ListResult> list = timer_.Timed("list", [&] {
    return store_.ListAt(t.kind, t.namespace_name, std::get<ReadVersion>(version));
  });
  if (!list.ok()) return http::ErrorResponse(ApiError::FromStatus(list.status()));
  const RenderContext ctx{t.gv, clock_.Now(), indent};
  if (t.kind == ObjectKind::kNode) {
    std::vector<std::shared_ptr<const NodeMetrics>> nodes;
    nodes.reserve(list->items.size());
    for (const StoredObject& o : list->items) nodes.push_back(StampedNode(o));
    metrics_api::Page page = metrics_api::Select(*query, t.gv, nodes);
    page.resource_version = std::to_string(list->revision);
    return Encoded(encoding,
                   encoding == Encoding::kProtobuf
                       ? metrics_api::RenderNodeListProtobuf(nodes, page, ctx)
                       : metrics_api::RenderNodeList(nodes, page, ctx),
                   t.route);
  }
  std::vector<std::shared_ptr<const PodMetrics>> pods;
  pods.reserve(list->items.size());
  for (const StoredObject& o : list->items) pods.push_back(StampedPod(o));
  metrics_api::Page page = metrics_api::Select(*query, t.gv, pods);
  page.resource_version = std::to_string(list->revision);
  const std::vector<metrics_api::PodRef> refs = metrics_api::RefsTo(pods);
  return Encoded(encoding,
                 encoding == Encoding::kProtobuf
                     ? metrics_api::RenderPodListProtobuf(refs, page, ctx)
                     : metrics_api::RenderPodList(refs, page, ctx),
                 t.route);
}

}  // namespace kubestat::apiserver::internal
