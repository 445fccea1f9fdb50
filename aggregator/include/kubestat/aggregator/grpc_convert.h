// The gRPC front end's value conversions: MetricsSource views to kubestat.v1 messages, the
// request's window names, and the selectors of list and watch requests.
//
// Units are those of metrics.proto: cpu in nanocores, memory in bytes, both int64 (a value
// above INT64_MAX, which no real node reaches, is clamped). A Window is built per configured
// window length from the object's cpu and memory statistics of that length: its name is
// FormatDuration(length) ("10s", "1m", "1h", "1d"), its endtime the later of the two
// resources' endtimes, its sample_count the larger count; a resource without samples is
// left unset. Windows are ordered shortest first.
//
// Selectors follow the REST API: label selectors in full Kubernetes syntax; field selectors
// on metadata.name and metadata.namespace (a node's namespace is ""), and spec.nodeName
// for pods. A selector that does not parse or names another field is InvalidArgument with
// the parser's message, prefixed by the request field that held it.
//
// Pure functions and immutable values; thread-safe.
#ifndef KUBESTAT_AGGREGATOR_GRPC_CONVERT_H_
#define KUBESTAT_AGGREGATOR_GRPC_CONVERT_H_

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "google/protobuf/timestamp.pb.h"
#include "kubestat/aggregator/metrics_source.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/field_selector.h"
#include "kubestat/core/label_selector.h"
#include "kubestat/v1/metrics.pb.h"

namespace kubestat::aggregator {

// UTC seconds and nanos (nanos in [0, 1e9), also before the epoch).
google::protobuf::Timestamp ToProtoTimestamp(Timestamp t);
Timestamp FromProtoTimestamp(const google::protobuf::Timestamp& t);
google::protobuf::Duration ToProtoDuration(Duration d);

// Appends the windows of `windows` (see the file comment) to `out`.
void AppendWindows(const ResourceWindows& windows,
                   google::protobuf::RepeatedPtrField<v1::Window>* out);

// Every field of the view, every window.
v1::NodeMetrics NodeToProto(const NodeView& node);
v1::PodMetrics PodToProto(const PodView& pod);

// Whether two views would give the same message (labels, node, every window's statistics
// and endtime). The change test of the watch feed.
bool SameNode(const NodeView& a, const NodeView& b);
bool SamePod(const PodView& a, const PodView& b);

// The window names a request asked for. Empty: all windows.
class WindowFilter {
 public:
  // All windows.
  WindowFilter() = default;
  // InvalidArgument when a name is not the name of one of `configured`, e.g.
  // `unknown window "5m" (windows: 10s, 1m, 1h, 1d)`.
  [[nodiscard]] static absl::StatusOr<WindowFilter> Create(
      const std::vector<std::string>& requested, const std::vector<Duration>& configured);

  bool all() const { return names_.empty(); }
  bool Keeps(std::string_view name) const;
  // Removes every window the filter does not keep, in the object and its containers.
  void Apply(v1::NodeMetrics* node) const;
  void Apply(v1::PodMetrics* pod) const;

 private:
  std::set<std::string, std::less<>> names_;
};

// The selection of a list or watch request: namespace (pods), label and field selectors.
class ObjectFilter {
 public:
  // Everything.
  ObjectFilter() = default;
  [[nodiscard]] static absl::StatusOr<ObjectFilter> ForNodes(std::string_view label_selector,
                                                             std::string_view field_selector);
  [[nodiscard]] static absl::StatusOr<ObjectFilter> ForPods(std::string_view namespace_name,
                                                            std::string_view label_selector,
                                                            std::string_view field_selector);

  // The namespace of a pod filter ("" = all).
  const std::string& namespace_name() const { return namespace_; }
  bool Matches(const NodeView& node) const;
  bool Matches(const PodView& pod) const;

 private:
  std::string namespace_;
  LabelSelector labels_;
  FieldSelector fields_;
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_GRPC_CONVERT_H_
