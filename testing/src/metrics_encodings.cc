#include "kubestat/testing/metrics_encodings.h"

#include <simdjson.h>

#include <sstream>

#include "absl/status/status.h"
#include "k8s/apimachinery/pkg/runtime/generated.pb.h"
#include "k8s/metrics/pkg/apis/metrics/v1beta1/generated.pb.h"
#include "kubestat/core/time.h"

namespace kubestat::testing {
namespace {

namespace meta = k8s::io::apimachinery::pkg::apis::meta::v1;
namespace metrics = k8s::io::metrics::pkg::apis::metrics::v1beta1;
namespace runtime = k8s::io::apimachinery::pkg::runtime;

template <typename Map>
ShownUsage UsageOf(const Map& usage) {
  ShownUsage out;
  for (const auto& [resource, quantity] : usage) out[resource] = quantity.string();
  return out;
}

void ReadMeta(const meta::ObjectMeta& m, ShownObject* out) {
  out->name = m.name();
  out->namespace_name = m.namespace_();
  out->resource_version = m.resourceversion();
  for (const auto& [k, v] : m.labels()) out->labels[k] = v;
  out->creation_seconds = m.creationtimestamp().seconds();
}

ShownObject FromNode(const metrics::NodeMetrics& node) {
  ShownObject out;
  ReadMeta(node.metadata(), &out);
  out.timestamp_seconds = node.timestamp().seconds();
  out.window_nanos = node.window().duration();
  out.usage = UsageOf(node.usage());
  return out;
}

ShownObject FromPod(const metrics::PodMetrics& pod) {
  ShownObject out;
  ReadMeta(pod.metadata(), &out);
  out.timestamp_seconds = pod.timestamp().seconds();
  out.window_nanos = pod.window().duration();
  for (const metrics::ContainerMetrics& c : pod.containers()) {
    out.containers.emplace_back(c.name(), UsageOf(c.usage()));
  }
  return out;
}

int64_t Seconds(Timestamp t) {
  return std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count();
}

absl::StatusOr<ShownUsage> JsonUsage(simdjson::dom::element usage) {
  ShownUsage out;
  simdjson::dom::object fields;
  if (usage.get(fields) != simdjson::SUCCESS) return absl::InvalidArgumentError("usage");
  for (auto [key, value] : fields) {
    std::string_view q;
    if (value.get(q) != simdjson::SUCCESS) return absl::InvalidArgumentError("quantity");
    out[std::string(key)] = std::string(q);
  }
  return out;
}

absl::StatusOr<ShownObject> JsonObject(simdjson::dom::element item) {
  ShownObject out;
  std::string_view text;
  simdjson::dom::element meta = item["metadata"];
  if (meta["name"].get(text) == simdjson::SUCCESS) out.name = text;
  if (meta["namespace"].get(text) == simdjson::SUCCESS) out.namespace_name = text;
  if (meta["resourceVersion"].get(text) == simdjson::SUCCESS) out.resource_version = text;
  simdjson::dom::object labels;
  if (meta["labels"].get(labels) == simdjson::SUCCESS) {
    for (auto [k, v] : labels) out.labels[std::string(k)] = std::string(v.get_string().value());
  }
  if (meta["creationTimestamp"].get(text) == simdjson::SUCCESS) {
    absl::StatusOr<Timestamp> t = ParseRfc3339(text);
    if (!t.ok()) return t.status();
    out.creation_seconds = Seconds(*t);
  }
  if (item["timestamp"].get(text) != simdjson::SUCCESS)
    return absl::InvalidArgumentError("timestamp");
  absl::StatusOr<Timestamp> timestamp = ParseRfc3339(text);
  if (!timestamp.ok()) return timestamp.status();
  out.timestamp_seconds = Seconds(*timestamp);
  if (item["window"].get(text) != simdjson::SUCCESS) return absl::InvalidArgumentError("window");
  absl::StatusOr<Duration> window = ParseDuration(text);
  if (!window.ok()) return window.status();
  out.window_nanos = window->count();
  simdjson::dom::element usage;
  if (item["usage"].get(usage) == simdjson::SUCCESS) {
    absl::StatusOr<ShownUsage> u = JsonUsage(usage);
    if (!u.ok()) return u.status();
    out.usage = *u;
  }
  simdjson::dom::array containers;
  if (item["containers"].get(containers) == simdjson::SUCCESS) {
    for (simdjson::dom::element c : containers) {
      absl::StatusOr<ShownUsage> u = JsonUsage(c["usage"]);
      if (!u.ok()) return u.status();
      out.containers.emplace_back(std::string(c["name"].get_string().value()), *u);
    }
  }
  return out;
}

}  // namespace

std::ostream& operator<<(std::ostream& out, const Shown& shown) {
  out << shown.api_version << " " << shown.kind << " rv=" << shown.resource_version
      << " continue=" << shown.continue_token << " [";
  for (const ShownObject& o : shown.items) {
    out << " {" << o.namespace_name << "/" << o.name << " rv=" << o.resource_version
        << " created=" << o.creation_seconds << " at=" << o.timestamp_seconds
        << " window=" << o.window_nanos << " labels=" << o.labels.size() << " usage:";
    for (const auto& [r, q] : o.usage) out << " " << r << "=" << q;
    for (const auto& [name, usage] : o.containers) {
      out << " " << name << "(";
      for (const auto& [r, q] : usage) out << " " << r << "=" << q;
      out << ")";
    }
    out << "}";
  }
  return out << " ]";
}

absl::StatusOr<Shown> ShownFromProtobuf(std::string_view body) {
  if (body.size() < 4 || body.substr(0, 4) != std::string_view("k8s\0", 4)) {
    return absl::InvalidArgumentError("no k8s\\0 magic");
  }
  runtime::Unknown unknown;
  if (!unknown.ParseFromArray(body.data() + 4, static_cast<int>(body.size() - 4))) {
    return absl::InvalidArgumentError("not a runtime.Unknown");
  }
  Shown shown;
  shown.api_version = unknown.typemeta().apiversion();
  shown.kind = unknown.typemeta().kind();
  const auto list_meta = [&](const meta::ListMeta& m) {
    shown.resource_version = m.resourceversion();
    shown.continue_token = m.continue_();
  };
  bool parsed = false;
  if (shown.kind == "NodeMetrics") {
    metrics::NodeMetrics node;
    parsed = node.ParseFromString(unknown.raw());
    shown.items.push_back(FromNode(node));
  } else if (shown.kind == "PodMetrics") {
    metrics::PodMetrics pod;
    parsed = pod.ParseFromString(unknown.raw());
    shown.items.push_back(FromPod(pod));
  } else if (shown.kind == "NodeMetricsList") {
    metrics::NodeMetricsList list;
    parsed = list.ParseFromString(unknown.raw());
    list_meta(list.metadata());
    for (const metrics::NodeMetrics& node : list.items()) shown.items.push_back(FromNode(node));
  } else if (shown.kind == "PodMetricsList") {
    metrics::PodMetricsList list;
    parsed = list.ParseFromString(unknown.raw());
    list_meta(list.metadata());
    for (const metrics::PodMetrics& pod : list.items()) shown.items.push_back(FromPod(pod));
  } else {
    return absl::InvalidArgumentError("unknown kind " + shown.kind);
  }
  if (!parsed) return absl::InvalidArgumentError("raw is not a " + shown.kind);
  return shown;
}

absl::StatusOr<Shown> ShownFromJson(std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(body.data(), body.size()).get(doc) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("not JSON");
  }
  Shown shown;
  std::string_view text;
  if (doc["apiVersion"].get(text) == simdjson::SUCCESS) shown.api_version = text;
  if (doc["kind"].get(text) == simdjson::SUCCESS) shown.kind = text;
  simdjson::dom::array items;
  if (doc["items"].get(items) == simdjson::SUCCESS) {
    if (doc["metadata"]["resourceVersion"].get(text) == simdjson::SUCCESS) {
      shown.resource_version = text;
    }
    if (doc["metadata"]["continue"].get(text) == simdjson::SUCCESS) shown.continue_token = text;
    for (simdjson::dom::element item : items) {
      absl::StatusOr<ShownObject> object = JsonObject(item);
      if (!object.ok()) return object.status();
      shown.items.push_back(*std::move(object));
    }
  } else {
    absl::StatusOr<ShownObject> object = JsonObject(doc);
    if (!object.ok()) return object.status();
    shown.items.push_back(*std::move(object));
  }
  return shown;
}

absl::StatusOr<Shown> ShownAlike(std::string_view protobuf_body, std::string_view json_body) {
  absl::StatusOr<Shown> from_protobuf = ShownFromProtobuf(protobuf_body);
  if (!from_protobuf.ok()) return from_protobuf.status();
  absl::StatusOr<Shown> from_json = ShownFromJson(json_body);
  if (!from_json.ok()) return from_json.status();
  if (*from_protobuf == *from_json) return from_protobuf;
  std::ostringstream out;
  out << "the protobuf shows " << *from_protobuf << "; the JSON shows " << *from_json;
  return absl::FailedPreconditionError(out.str());
}

}  // namespace kubestat::testing
