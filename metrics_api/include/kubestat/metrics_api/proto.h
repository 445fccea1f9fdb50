// Conversion between the metrics objects and the kubestat.v1 protos (metrics.proto), and
// the window choice of gRPC requests.
//
// Units are those of metrics.proto: cpu in nanocores, memory in bytes, both int64 (a value
// above INT64_MAX, which no real node reaches, is clamped). A v1::Window is built per window
// length from the object's cpu and memory statistics of that length: its name is
// FormatDuration(length) ("10s", "1m", "1h", "1d"), its endtime the later of the two
// resources' endtimes, its sample_count the larger count; a resource without statistics of
// that length is left unset. Windows are ordered shortest first.
//
// FromProto is the inverse up to what a v1::Window keeps: each resource's Statistics take
// the window's endtime and the resource's own sample_count. Negative values are
// InvalidArgument naming the field. The topology (allocatable, podResources, exclusive
// resources) is carried both ways unchanged (times at nanoseconds).
//
// Pure functions and immutable values; thread-safe.
#ifndef KUBESTAT_METRICS_API_PROTO_H_
#define KUBESTAT_METRICS_API_PROTO_H_

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "google/protobuf/timestamp.pb.h"
#include "kubestat/core/clock.h"
#include "kubestat/metrics_api/objects.h"
#include "kubestat/v1/metrics.pb.h"

namespace kubestat::metrics_api {

// UTC seconds and nanos (nanos in [0, 1e9), also before the epoch).
google::protobuf::Timestamp ToProtoTimestamp(Timestamp t);
Timestamp FromProtoTimestamp(const google::protobuf::Timestamp& t);
google::protobuf::Duration ToProtoDuration(Duration d);
Duration FromProtoDuration(const google::protobuf::Duration& d);

// Appends the windows of `windows` (see the file comment) to `out`.
void AppendWindows(const ResourceWindows& windows,
                   google::protobuf::RepeatedPtrField<v1::Window>* out);

// Every field, every window.
v1::NodeMetrics ToProto(const NodeMetrics& node);
v1::PodMetrics ToProto(const PodMetrics& pod);
[[nodiscard]] absl::StatusOr<NodeMetrics> FromProto(const v1::NodeMetrics& node);
[[nodiscard]] absl::StatusOr<PodMetrics> FromProto(const v1::PodMetrics& pod);

// The window names a request asked for. Empty: all windows.
class WindowFilter {
 public:
  // All windows.
  WindowFilter() = default;
  // InvalidArgument when a name is not the name of one of `configured`, e.g.
  // `windows: unknown window "5m" (windows: 10s, 1m, 1h, 1d)`.
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

}  // namespace kubestat::metrics_api

#endif  // KUBESTAT_METRICS_API_PROTO_H_
