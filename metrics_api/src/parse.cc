#include "kubestat/metrics_api/parse.h"

#include <simdjson.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kubestat/apimachinery/quantity.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/time.h"
#include "parse_element.h"
#include "resource_set_json.h"

namespace kubestat::metrics_api {
namespace {

using simdjson::dom::element;
using simdjson::dom::object;

absl::Status Error(std::string_view path, std::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(AbslView(path), ": ", AbslView(reason)));
}

std::string Quoted(std::string_view text) {
  return absl::StrCat("\"", AbslView(text.substr(0, 64)), text.size() > 64 ? "...\"" : "\"");
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// An RFC 1123 label part: lower-case alphanumerics and '-', alphanumeric at both ends.
bool IsLabelPart(std::string_view s) {
  if (s.empty() || !IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return IsLowerAlnum(c) || c == '-'; });
}

// An RFC 1123 label: a label part of at most 63 bytes (IsDNS1123Label).
bool IsDnsLabel(std::string_view s) { return s.size() <= 63 && IsLabelPart(s); }

// An RFC 1123 subdomain: dot-separated label parts, at most 253 bytes in all
// (IsDNS1123Subdomain, whose pattern does not bound each part).
bool IsDnsSubdomain(std::string_view s) {
  if (s.size() > 253) return false;
  while (true) {
    const size_t dot = s.find('.');
    if (!IsLabelPart(s.substr(0, dot))) return false;
    if (dot == std::string_view::npos) return true;
    s.remove_prefix(dot + 1);
  }
}

// Kubernetes' field errors for names, namespaces and container names.
absl::Status CheckName(std::string_view path, std::string_view value, bool subdomain) {
  if (subdomain ? IsDnsSubdomain(value) : IsDnsLabel(value)) return absl::OkStatus();
  const size_t limit = subdomain ? 253 : 63;
  const std::string shown = Quoted(value);
  if (value.size() > limit) {
    return Error(path, absl::StrCat("Invalid value: ", shown, ": must be no more than ", limit,
                                    " characters"));
  }
  return Error(path, subdomain
                         ? absl::StrCat("Invalid value: ", shown,
                                        ": a lowercase RFC 1123 subdomain must consist of lower "
                                        "case alphanumeric characters, '-' or '.', and must "
                                        "start and end with an alphanumeric character")
                         : absl::StrCat("Invalid value: ", shown,
                                        ": a lowercase RFC 1123 label must consist of lower case "
                                        "alphanumeric characters or '-', and must start and end "
                                        "with an alphanumeric character"));
}

// A string member; NotFound-like InvalidArgument when missing (when `required`) or not a
// string.
absl::StatusOr<std::string_view> StringField(object o, std::string_view key, std::string_view path,
                                             bool required) {
  element e;
  if (o[key].get(e) != simdjson::SUCCESS) {
    if (required) return Error(path, "required");
    return std::string_view();
  }
  std::string_view value;
  if (e.get(value) != simdjson::SUCCESS) return Error(path, "must be a string");
  return value;
}

// A required object member.
absl::StatusOr<object> ObjectField(object o, std::string_view key, std::string_view path) {
  element e;
  if (o[key].get(e) != simdjson::SUCCESS) return Error(path, "required");
  object value;
  if (e.get(value) != simdjson::SUCCESS) return Error(path, "must be an object");
  return value;
}

// A quantity of `resource` ("cpu": nanocores, "memory": bytes), non-negative.
absl::StatusOr<uint64_t> QuantityValue(element e, bool cpu, std::string_view path) {
  std::string_view text;
  if (e.get(text) != simdjson::SUCCESS) return Error(path, "must be a quantity string");
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  if (!q.ok()) return Error(path, StdView(q.status().message()));
  if (q->Sign() < 0) return Error(path, "must not be negative");
  absl::StatusOr<int64_t> v = cpu ? q->AsNanoCores() : q->Value();
  if (!v.ok()) return Error(path, StdView(v.status().message()));
  return static_cast<uint64_t>(*v);
}

absl::StatusOr<Timestamp> TimeField(object o, std::string_view key, std::string_view path) {
  absl::StatusOr<std::string_view> text = StringField(o, key, path, /*required=*/true);
  if (!text.ok()) return text.status();
  absl::StatusOr<Timestamp> t = ParseRfc3339(*text);
  if (!t.ok()) return Error(path, StdView(t.status().message()));
  return *t;
}

absl::StatusOr<Labels> LabelsOf(object metadata, std::string_view path) {
  Labels labels;
  if (element e; metadata["labels"].get(e) != simdjson::SUCCESS || e.is_null()) return labels;
  absl::StatusOr<object> o = ObjectField(metadata, "labels", path);
  if (!o.ok()) return o.status();
  for (auto field : *o) {
    std::string_view value;
    if (field.value.get(value) != simdjson::SUCCESS) {
      return Error(absl::StrCat(AbslView(path), "[", AbslView(field.key), "]"), "must be a string");
    }
    labels.emplace(std::string(field.key), std::string(value));
  }
  return labels;
}

// The statistics named in a v1alpha1 window, in the order Statistics holds them.
struct StatName {
  std::string_view json;
  uint64_t Statistics::*field;
};
constexpr StatName kStats[] = {
    {"mean", &Statistics::mean}, {"max", &Statistics::max},  {"95th", &Statistics::p95},
    {"min", &Statistics::min},   {"50th", &Statistics::p50}, {"99th", &Statistics::p99},
};

// A v1alpha1 <windows> object (render.h).
absl::StatusOr<ResourceWindows> ParseWindows(object windows, const std::string& path) {
  ResourceWindows out;
  for (auto entry : windows) {
    const std::string at = absl::StrCat(path, "[", Quoted(entry.key), "]");
    absl::StatusOr<Duration> length = ParseDuration(entry.key);
    if (!length.ok() || *length <= Duration::zero()) {
      return Error(at, "the key must be a positive duration such as \"1m\"");
    }
    object window;
    if (entry.value.get(window) != simdjson::SUCCESS) return Error(at, "must be an object");
    absl::StatusOr<Timestamp> endtime = TimeField(window, "endtime", at + ".endtime");
    if (!endtime.ok()) return endtime.status();
    uint64_t count = 0;
    if (element c; window["count"].get(c) == simdjson::SUCCESS) {
      if (c.get(count) != simdjson::SUCCESS) {
        return Error(at + ".count", "must be a non-negative integer");
      }
    }
    Statistics cpu{*length, *endtime, count};
    Statistics memory = cpu;
    bool has_cpu = false;
    bool has_memory = false;
    for (const StatName& stat : kStats) {
      const std::string stat_path = absl::StrCat(at, ".", AbslView(stat.json));
      absl::StatusOr<object> values = ObjectField(window, stat.json, stat_path);
      if (!values.ok()) return values.status();
      for (auto [resource, is_cpu, target, seen] :
           {std::tuple<std::string_view, bool, Statistics*, bool*>{"cpu", true, &cpu, &has_cpu},
            {"memory", false, &memory, &has_memory}}) {
        element e;
        if (values->at_key(resource).get(e) != simdjson::SUCCESS) continue;
        absl::StatusOr<uint64_t> v =
            QuantityValue(e, is_cpu, absl::StrCat(stat_path, ".", AbslView(resource)));
        if (!v.ok()) return v.status();
        target->*stat.field = *v;
        *seen = true;
      }
    }
    if (has_cpu) out.cpu.push_back(cpu);
    if (has_memory) out.memory.push_back(memory);
  }
  const auto by_length = [](const Statistics& a, const Statistics& b) {
    return a.window < b.window;
  };
  std::stable_sort(out.cpu.begin(), out.cpu.end(), by_length);
  std::stable_sort(out.memory.begin(), out.memory.end(), by_length);
  return out;
}

// ---- Topology (metrics/v1alpha1; render.h) ----

// `"exclusive"` of an object (an empty set when absent).
absl::StatusOr<ResourceSet> ExclusiveOf(object o, const std::string& path) {
  element e;
  if (o["exclusive"].get(e) != simdjson::SUCCESS) return ResourceSet{};
  return internal::ReadResourceSet(e, path.empty() ? "exclusive" : path + ".exclusive");
}

// A node's allocatableTopology and podResources (allocatable and utilization are derived).
absl::Status ParseNodeTopology(object root, NodeMetrics& node) {
  if (element e; root["allocatableTopology"].get(e) == simdjson::SUCCESS) {
    absl::StatusOr<ResourceSet> set = internal::ReadResourceSet(e, "allocatableTopology");
    if (!set.ok()) return set.status();
    node.allocatable = *std::move(set);
  }
  if (element e; root["podResources"].get(e) == simdjson::SUCCESS) {
    object o;
    if (e.get(o) != simdjson::SUCCESS) return Error("podResources", "must be an object");
    PodResourcesStatus status;
    absl::StatusOr<std::string_view> state = StringField(o, "state", "podResources.state", true);
    if (!state.ok()) return state.status();
    status.state = std::string(*state);
    absl::StatusOr<std::string_view> message =
        StringField(o, "message", "podResources.message", false);
    if (!message.ok()) return message.status();
    status.message = std::string(*message);
    absl::StatusOr<Timestamp> time = TimeField(o, "time", "podResources.time");
    if (!time.ok()) return time.status();
    status.time = *time;
    node.pod_resources = std::move(status);
  }
  return absl::OkStatus();
}

// metrics.k8s.io usage as one window of one sample.
absl::StatusOr<ResourceWindows> ParseUsage(object o, Duration window, Timestamp timestamp,
                                           const std::string& path) {
  const std::string prefix = path.empty() ? std::string() : path + ".";
  absl::StatusOr<object> usage = ObjectField(o, "usage", prefix + "usage");
  if (!usage.ok()) return usage.status();
  ResourceWindows out;
  for (auto [resource, is_cpu, target] :
       {std::tuple<std::string_view, bool, StatisticsList*>{"cpu", true, &out.cpu},
        {"memory", false, &out.memory}}) {
    element e;
    if (usage->at_key(resource).get(e) != simdjson::SUCCESS) continue;
    absl::StatusOr<uint64_t> v =
        QuantityValue(e, is_cpu, absl::StrCat(prefix, "usage.", AbslView(resource)));
    if (!v.ok()) return v.status();
    target->push_back(Statistics{window, timestamp, 1, *v, *v, *v, *v, *v, *v});
  }
  return out;
}

// v1alpha1 containers: [{metadata{name}, metrics: <windows>}]; metrics.k8s.io:
// [{name, usage}].
absl::StatusOr<std::vector<ContainerMetrics>> ParseContainers(object o, std::string_view key,
                                                              bool k8s_io, Duration window,
                                                              Timestamp timestamp) {
  std::vector<ContainerMetrics> out;
  element e;
  if (o[key].get(e) != simdjson::SUCCESS) return out;
  simdjson::dom::array array;
  if (e.get(array) != simdjson::SUCCESS) return Error(key, "must be an array");
  size_t index = 0;
  for (element item : array) {
    const std::string at = absl::StrCat(AbslView(key), "[", index++, "]");
    object c;
    if (item.get(c) != simdjson::SUCCESS) return Error(at, "must be an object");
    ContainerMetrics container;
    if (k8s_io) {
      absl::StatusOr<std::string_view> name = StringField(c, "name", at + ".name", true);
      if (!name.ok()) return name.status();
      container.name = std::string(*name);
      absl::StatusOr<ResourceWindows> usage = ParseUsage(c, window, timestamp, at);
      if (!usage.ok()) return usage.status();
      container.windows = *std::move(usage);
    } else {
      absl::StatusOr<object> metadata = ObjectField(c, "metadata", at + ".metadata");
      if (!metadata.ok()) return metadata.status();
      absl::StatusOr<std::string_view> name =
          StringField(*metadata, "name", at + ".metadata.name", true);
      if (!name.ok()) return name.status();
      container.name = std::string(*name);
      absl::StatusOr<object> metrics = ObjectField(c, "metrics", at + ".metrics");
      if (!metrics.ok()) return metrics.status();
      absl::StatusOr<ResourceWindows> windows = ParseWindows(*metrics, at + ".metrics");
      if (!windows.ok()) return windows.status();
      container.windows = *std::move(windows);
      absl::StatusOr<ResourceSet> exclusive = ExclusiveOf(c, at);
      if (!exclusive.ok()) return exclusive.status();
      container.exclusive = *std::move(exclusive);
    }
    if (absl::Status name = CheckName(at + (k8s_io ? ".name" : ".metadata.name"), container.name,
                                      /*subdomain=*/false);
        !name.ok()) {
      return name;
    }
    out.push_back(std::move(container));
  }
  return out;
}

// What every object has: kind, apiVersion, metadata.
struct Header {
  GroupVersion gv = GroupVersion::kV1alpha1;
  object root;
  object metadata;
  // metrics.k8s.io only: window and timestamp.
  Duration window{0};
  Timestamp timestamp;
};

absl::StatusOr<Header> HeaderOf(element doc, std::string_view kind) {
  Header header;
  if (doc.get(header.root) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("the document must be a JSON object");
  }
  absl::StatusOr<std::string_view> got = StringField(header.root, "kind", "kind", true);
  if (!got.ok()) return got.status();
  if (*got != kind)
    return Error("kind", absl::StrCat("must be ", AbslView(kind), ", not ", Quoted(*got)));
  absl::StatusOr<std::string_view> api_version =
      StringField(header.root, "apiVersion", "apiVersion", true);
  if (!api_version.ok()) return api_version.status();
  std::optional<GroupVersion> gv = ParseApiVersion(*api_version);
  if (!gv) {
    return Error("apiVersion", absl::StrCat("must be metrics/v1alpha1, metrics.k8s.io/v1 or "
                                            "metrics.k8s.io/v1beta1, not ",
                                            Quoted(*api_version)));
  }
  header.gv = *gv;
  absl::StatusOr<object> metadata = ObjectField(header.root, "metadata", "metadata");
  if (!metadata.ok()) return metadata.status();
  header.metadata = *metadata;
  if (IsMetricsK8sIo(header.gv)) {
    absl::StatusOr<std::string_view> window = StringField(header.root, "window", "window", true);
    if (!window.ok()) return window.status();
    absl::StatusOr<Duration> length = ParseDuration(*window);
    if (!length.ok() || *length <= Duration::zero()) {
      return Error("window", "must be a positive duration such as \"10s\"");
    }
    header.window = *length;
    absl::StatusOr<Timestamp> timestamp = TimeField(header.root, "timestamp", "timestamp");
    if (!timestamp.ok()) return timestamp.status();
    header.timestamp = *timestamp;
  }
  return header;
}

// metadata.name (an RFC 1123 subdomain) or metadata.namespace (an RFC 1123 label).
absl::StatusOr<std::string> NameOf(object metadata, std::string_view key, std::string_view path,
                                   bool subdomain) {
  absl::StatusOr<std::string_view> name = StringField(metadata, key, path, true);
  if (!name.ok()) return name.status();
  if (name->empty()) return Error(path, "required");
  if (absl::Status valid = CheckName(path, *name, subdomain); !valid.ok()) return valid;
  return std::string(*name);
}

// The document of `json`, parsed by `parser` (which owns it).
absl::StatusOr<element> Document(simdjson::dom::parser& parser, std::string_view json) {
  element doc;
  if (auto error = parser.parse(json.data(), json.size()).get(doc); error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid JSON: ", simdjson::error_message(error)));
  }
  return doc;
}

}  // namespace

absl::StatusOr<Parsed<NodeMetrics>> ParseNodeMetrics(std::string_view json) {
  simdjson::dom::parser parser;
  absl::StatusOr<element> doc = Document(parser, json);
  if (!doc.ok()) return doc.status();
  return NodeMetricsFrom(*doc);
}

absl::StatusOr<Parsed<PodMetrics>> ParsePodMetrics(std::string_view json) {
  simdjson::dom::parser parser;
  absl::StatusOr<element> doc = Document(parser, json);
  if (!doc.ok()) return doc.status();
  return PodMetricsFrom(*doc);
}

absl::StatusOr<Parsed<NodeMetrics>> NodeMetricsFrom(element doc) {
  absl::StatusOr<Header> header = HeaderOf(doc, "NodeMetrics");
  if (!header.ok()) return header.status();
  Parsed<NodeMetrics> out;
  out.gv = header->gv;
  NodeMetrics& node = out.object;
  absl::StatusOr<std::string> name = NameOf(header->metadata, "name", "metadata.name", true);
  if (!name.ok()) return name.status();
  node.name = *std::move(name);
  absl::StatusOr<std::string_view> rv =
      StringField(header->metadata, "resourceVersion", "metadata.resourceVersion", false);
  if (!rv.ok()) return rv.status();
  node.resource_version = std::string(*rv);
  absl::StatusOr<Labels> labels = LabelsOf(header->metadata, "metadata.labels");
  if (!labels.ok()) return labels.status();
  node.labels = *std::move(labels);
  if (IsMetricsK8sIo(header->gv)) {
    absl::StatusOr<ResourceWindows> usage =
        ParseUsage(header->root, header->window, header->timestamp, "");
    if (!usage.ok()) return usage.status();
    node.machine = *std::move(usage);
    return out;
  }
  absl::StatusOr<object> machine = ObjectField(header->root, "machine", "machine");
  if (!machine.ok()) return machine.status();
  absl::StatusOr<ResourceWindows> windows = ParseWindows(*machine, "machine");
  if (!windows.ok()) return windows.status();
  node.machine = *std::move(windows);
  absl::StatusOr<std::vector<ContainerMetrics>> containers =
      ParseContainers(header->root, "systemContainers", false, {}, {});
  if (!containers.ok()) return containers.status();
  node.system_containers = *std::move(containers);
  if (absl::Status topology = ParseNodeTopology(header->root, node); !topology.ok()) {
    return topology;
  }
  return out;
}

absl::StatusOr<Parsed<PodMetrics>> PodMetricsFrom(element doc) {
  absl::StatusOr<Header> header = HeaderOf(doc, "PodMetrics");
  if (!header.ok()) return header.status();
  Parsed<PodMetrics> out;
  out.gv = header->gv;
  PodMetrics& pod = out.object;
  absl::StatusOr<std::string> name = NameOf(header->metadata, "name", "metadata.name", true);
  if (!name.ok()) return name.status();
  pod.name = *std::move(name);
  absl::StatusOr<std::string> ns =
      NameOf(header->metadata, "namespace", "metadata.namespace", false);
  if (!ns.ok()) return ns.status();
  pod.namespace_name = *std::move(ns);
  absl::StatusOr<std::string_view> rv =
      StringField(header->metadata, "resourceVersion", "metadata.resourceVersion", false);
  if (!rv.ok()) return rv.status();
  pod.resource_version = std::string(*rv);
  absl::StatusOr<Labels> labels = LabelsOf(header->metadata, "metadata.labels");
  if (!labels.ok()) return labels.status();
  pod.labels = *std::move(labels);
  const bool k8s_io = IsMetricsK8sIo(header->gv);
  if (!k8s_io) {
    absl::StatusOr<object> windows_json = ObjectField(header->root, "pod", "pod");
    if (!windows_json.ok()) return windows_json.status();
    absl::StatusOr<ResourceWindows> windows = ParseWindows(*windows_json, "pod");
    if (!windows.ok()) return windows.status();
    pod.pod = *std::move(windows);
  }
  absl::StatusOr<std::vector<ContainerMetrics>> containers =
      ParseContainers(header->root, "containers", k8s_io, header->window, header->timestamp);
  if (!containers.ok()) return containers.status();
  pod.containers = *std::move(containers);
  if (!k8s_io) {
    absl::StatusOr<ResourceSet> exclusive = ExclusiveOf(header->root, "");
    if (!exclusive.ok()) return exclusive.status();
    pod.exclusive = *std::move(exclusive);
  }
  return out;
}

}  // namespace kubestat::metrics_api
