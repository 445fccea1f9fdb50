// What a metrics.k8s.io answer shows, read from either encoding: the JSON of render.h or the
// Kubernetes protobuf of render_protobuf.h, decoded with the generated classes of proto/k8s/.
// Tests compare the two readings to prove both encodings carry the same objects.
#ifndef KUBESTAT_TESTING_METRICS_ENCODINGS_H_
#define KUBESTAT_TESTING_METRICS_ENCODINGS_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace kubestat::testing {

using ShownUsage = std::map<std::string, std::string>;  // resource → quantity text

// One NodeMetrics or PodMetrics as shown (times in Unix seconds, the window in nanoseconds).
struct ShownObject {
  std::string name;
  std::string namespace_name;
  std::string resource_version;
  std::map<std::string, std::string> labels;
  int64_t creation_seconds = 0;
  int64_t timestamp_seconds = 0;
  int64_t window_nanos = 0;
  ShownUsage usage;                                            // nodes
  std::vector<std::pair<std::string, ShownUsage>> containers;  // pods: name → usage

  friend bool operator==(const ShownObject&, const ShownObject&) = default;
};

// One answer: an object (items holds it; the list fields are empty) or a list.
struct Shown {
  std::string api_version;
  std::string kind;
  std::string resource_version;  // the list's
  std::string continue_token;    // the list's
  std::vector<ShownObject> items;

  friend bool operator==(const Shown&, const Shown&) = default;
};

std::ostream& operator<<(std::ostream& out, const Shown& shown);

// Reads a protobuf body ("k8s\0" + runtime.Unknown); an error names what does not decode.
absl::StatusOr<Shown> ShownFromProtobuf(std::string_view body);
// Reads a JSON body.
absl::StatusOr<Shown> ShownFromJson(std::string_view body);
// What a protobuf answer and a JSON answer both show, when each reads and they show the
// same; otherwise an error naming the body that does not read, or both readings.
absl::StatusOr<Shown> ShownAlike(std::string_view protobuf_body, std::string_view json_body);

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTING_METRICS_ENCODINGS_H_
