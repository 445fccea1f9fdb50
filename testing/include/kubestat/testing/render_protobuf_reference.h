// The metrics.k8s.io protobuf answers of render_protobuf.h, built the slow, obvious way: the
// generated classes of proto/k8s/ filled field by field and serialized by libprotobuf
// (deterministically: maps in key order), then wrapped in a runtime.Unknown. The renderer
// writes the wire bytes itself; tests and benchmarks hold it against these functions byte for
// byte, so that a field number, a presence rule or a map order that differs from libprotobuf
// fails.
//
// Each function renders what its namesake in render_protobuf.h renders (the list ones take
// the page that Select gives). Thread-safety: free functions over values; safe from any
// thread.
#ifndef KUBESTAT_TESTING_RENDER_PROTOBUF_REFERENCE_H_
#define KUBESTAT_TESTING_RENDER_PROTOBUF_REFERENCE_H_

#include <optional>
#include <span>
#include <string>

#include "kubestat/metrics_api/objects.h"
#include "kubestat/metrics_api/query.h"
#include "kubestat/metrics_api/render.h"

namespace kubestat::testing {

std::optional<std::string> ReferenceNodeProtobuf(const metrics_api::NodeMetrics& node,
                                                 const metrics_api::RenderContext& ctx);
std::optional<std::string> ReferencePodProtobuf(const metrics_api::PodMetrics& pod,
                                                const metrics_api::RenderContext& ctx);

std::string ReferenceNodeListProtobuf(std::span<const metrics_api::NodeMetrics> nodes,
                                      const metrics_api::Page& page,
                                      const metrics_api::RenderContext& ctx);
std::string ReferenceNodeListProtobuf(metrics_api::SharedNodes nodes, const metrics_api::Page& page,
                                      const metrics_api::RenderContext& ctx);
std::string ReferencePodListProtobuf(std::span<const metrics_api::PodMetrics> pods,
                                     const metrics_api::Page& page,
                                     const metrics_api::RenderContext& ctx);
std::string ReferencePodListProtobuf(metrics_api::SharedPods pods, const metrics_api::Page& page,
                                     const metrics_api::RenderContext& ctx);

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTING_RENDER_PROTOBUF_REFERENCE_H_
