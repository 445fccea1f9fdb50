// The bulk write of the secondary metrics API server: many NodeMetrics and PodMetrics puts
// and deletes in one body, applied in one step. The bridge renders it; the apiserver parses
// it.
//
//   POST /apis/metrics/v1alpha1/writes
//   {"kind":"WriteBatch","apiVersion":"metrics/v1alpha1","items":[
//     {"op":"put","object":{<a metrics/v1alpha1 NodeMetrics or PodMetrics, as render.h>}},
//     {"op":"delete","kind":"NodeMetrics","name":"node-1"},
//     {"op":"delete","kind":"PodMetrics","namespace":"shop","name":"web-1"}]}
//
// The answer is 200 with {"kind":"WriteBatchResult","apiVersion":"metrics/v1alpha1",
// "resourceVersion":"<the batch's revision>","applied":<items>}. A delete of an absent
// object is not an error in a batch (the object is gone either way). A batch with an item
// that does not validate is refused whole with 422 Invalid naming the item's field
// (`items[3].object.machine["1m"].mean.cpu: ...`); a body over the server's limit (3 MiB)
// with 413, so writers split large batches (EstimatedItemBytes helps).
//
// Thread-safety: pure functions over values; safe from any thread.
#ifndef KUBESTAT_METRICS_API_WRITE_BATCH_H_
#define KUBESTAT_METRICS_API_WRITE_BATCH_H_

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kubestat/metrics_api/group_version.h"
#include "kubestat/metrics_api/objects.h"

namespace kubestat::metrics_api {

inline constexpr std::string_view kWriteBatchPath = "/apis/metrics/v1alpha1/writes";

struct WriteItem {
  enum class Op { kPut, kDelete };
  Op op = Op::kPut;
  Resource resource = Resource::kNodes;
  // kPut: the object of `resource` (node or pod). kDelete: only namespace_name (pods) and
  // name are read.
  NodeMetrics node;
  PodMetrics pod;
  std::string namespace_name;  // kDelete of a pod
  std::string name;            // kDelete
};

struct WriteBatch {
  std::vector<WriteItem> items;
};

// The JSON body of `batch` (compact).
std::string RenderWriteBatch(const WriteBatch& batch);
// The JSON of one item as RenderWriteBatch writes it, so a writer can size batches.
std::string RenderWriteItem(const WriteItem& item);
// The JSON RenderWriteItem writes for a put whose object renders (render.h, metrics/v1alpha1)
// as `object_json`, and where in it that object starts: a writer that keeps only the item
// rendered can still send the object alone (a PUT) without rendering it again.
struct RenderedPut {
  std::string json;
  size_t object_at = 0;  // json.substr(object_at, object_json.size()) == object_json
};
RenderedPut RenderPutItem(std::string_view object_json);
// The object of `item`, rendered as a put item carries it (metrics/v1alpha1).
std::string RenderWriteObject(const WriteItem& item);
// The body RenderWriteBatch writes for the items these RenderWriteItem results came from,
// in order: a writer that keeps each item rendered does not render it again.
std::string JoinWriteBatch(std::span<const std::string_view> rendered_items);

// Reads a body. InvalidArgument "<field path>: <reason>" (paths as in parse.h, prefixed with
// items[i]) for anything that is not a valid batch: kind/apiVersion, an unknown op, an
// object that does not parse (parse.h) or is not metrics/v1alpha1, a delete without a
// name (or without a namespace, for a pod).
[[nodiscard]] absl::StatusOr<WriteBatch> ParseWriteBatch(std::string_view json);

// The result document of an applied batch.
std::string RenderWriteBatchResult(uint64_t resource_version, size_t applied);

}  // namespace kubestat::metrics_api

#endif  // KUBESTAT_METRICS_API_WRITE_BATCH_H_
