// What the API server's reads, watches and writes share: the target a request's path names,
// the resourceVersion rules, the rendering of stored objects, small answers, and the timing of
// store calls. Private to apiserver/src.
#ifndef KUBESTAT_APISERVER_SRC_API_REQUEST_H_
#define KUBESTAT_APISERVER_SRC_API_REQUEST_H_

#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "kubestat/apimachinery/api_error.h"
#include "kubestat/apiserver/object_store.h"
#include "kubestat/core/clock.h"
#include "kubestat/http/server.h"
#include "kubestat/kube/watch_event.h"
#include "kubestat/metrics_api/encoding.h"
#include "kubestat/metrics_api/group_version.h"
#include "kubestat/metrics_api/query.h"
#include "kubestat/metrics_api/render.h"

namespace kubestat::apiserver::internal {

using metrics_api::Encoding;
using metrics_api::GroupVersion;
using metrics_api::ListQuery;
using metrics_api::NodeMetrics;
using metrics_api::PodMetrics;
using metrics_api::RenderContext;
using metrics_api::Resource;

Resource ResourceOf(ObjectKind kind);

// What a request's path names.
struct Target {
  enum class Type {
    kApiVersions,   // /api
    kGroupList,     // /apis
    kGroup,         // /apis/{group}
    kResourceList,  // /apis/{group}/{version}
    kCollection,    // .../nodes, .../pods, .../namespaces/{ns}/pods
    kObject,        // .../nodes/{name}, .../namespaces/{ns}/pods/{name}
    kWriteBatch,    // /apis/metrics/v1alpha1/writes
  };
  Type type = Type::kApiVersions;
  GroupVersion gv = GroupVersion::kV1alpha1;
  ObjectKind kind = ObjectKind::kNode;
  std::string namespace_name;
  std::string name;
  std::string_view route = "other";  // static storage
};

// The target `path` names; std::nullopt for a path the server does not serve.
std::optional<Target> Parse(std::string_view path);

http::Response Json(int code, std::string body, std::string_view route);
// A 200 answer of `body` in `encoding`.
http::Response Encoded(Encoding encoding, std::string body, std::string_view route);
http::Response NotFoundPath();

bool TrueParam(const metrics_api::QueryParams& params, std::string_view name);
// A decimal resourceVersion; std::nullopt for anything else.
std::optional<uint64_t> ParseRevision(std::string_view text);
// 400 for a resourceVersion that is not a decimal revision.
ApiError BadResourceVersion(std::string_view text);
// The ReadVersion (object_store.h) of a GET's or LIST's resourceVersion and
// resourceVersionMatch as kube-apiserver reads them: unset is the newest state, "0" any state,
// N a state not older than N, or (lists, resourceVersionMatch=Exact) the state at N. A 400
// naming the parameter for a value it refuses.
std::variant<ReadVersion, ApiError> ReadVersionOf(const metrics_api::QueryParams& params,
                                                  bool list);

// The stored object with metadata.resourceVersion set (a copy only when it is not yet).
std::shared_ptr<const NodeMetrics> StampedNode(const StoredObject& o);
std::shared_ptr<const PodMetrics> StampedPod(const StoredObject& o);
bool Matches(const ListQuery& query, GroupVersion gv, const StoredObject& o);
// The object's JSON (with kind and apiVersion) in `ctx`'s group-version; it must be servable.
std::string RenderStored(const StoredObject& o, const RenderContext& ctx);
// The same in `encoding` (protobuf: metrics.k8s.io only).
std::string RenderStored(const StoredObject& o, const RenderContext& ctx, Encoding encoding);
// A BOOKMARK event's object at `revision` (annotated as the end of the initial events).
std::string BookmarkObject(ObjectKind kind, GroupVersion gv, uint64_t revision,
                           bool initial_events_end);
kube::WatchEventType ToWatchType(EventType type);
// A 422 Invalid from a reader's "<field>: <reason>" error.
ApiError InvalidObject(std::string_view kind, std::string_view name, const absl::Status& error);

// Times store calls into kubestat_apiserver_storage_duration_seconds, by operation.
// Thread-safe.
class StoreTimer {
 public:
  StoreTimer(prometheus::Registry& registry, const Clock& clock);
  template <typename F>
  auto Timed(std::string_view operation, F call) {
    const Timestamp start = clock_.MonotonicNow();
    auto result = call();
    Observe(operation, start);
    return result;
  }

 private:
  void Observe(std::string_view operation, Timestamp start);
  const Clock& clock_;
  prometheus::Family<prometheus::Histogram>& family_;
};

}  // namespace kubestat::apiserver::internal

#endif  // KUBESTAT_APISERVER_SRC_API_REQUEST_H_
