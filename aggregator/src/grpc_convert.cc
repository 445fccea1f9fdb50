#include "kubestat/aggregator/grpc_convert.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "kubestat/core/time.h"

namespace kubestat::aggregator {
namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

int64_t Clamp(uint64_t v) {
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  return static_cast<int64_t>(std::min(v, kMax));
}

void FillStats(const WindowStats& stats, v1::ResourceStats* out) {
  out->set_mean(Clamp(stats.mean));
  out->set_max(Clamp(stats.max));
  out->set_min(Clamp(stats.min));
  out->set_p50(Clamp(stats.p50));
  out->set_p95(Clamp(stats.p95));
  out->set_p99(Clamp(stats.p99));
  out->set_sample_count(Clamp(stats.count));
}

void AppendContainers(const std::vector<ContainerView>& containers,
                      google::protobuf::RepeatedPtrField<v1::ContainerMetrics>* out) {
  out->Reserve(static_cast<int>(containers.size()));
  for (const ContainerView& container : containers) {
    v1::ContainerMetrics* c = out->Add();
    c->set_name(container.name);
    AppendWindows(container.windows, c->mutable_windows());
  }
}

void FilterWindows(const WindowFilter& filter, google::protobuf::RepeatedPtrField<v1::Window>* w) {
  auto keep_end = std::stable_partition(
      w->begin(), w->end(), [&filter](const v1::Window& x) { return filter.Keeps(x.name()); });
  w->erase(keep_end, w->end());
}

void FilterContainers(const WindowFilter& filter,
                      google::protobuf::RepeatedPtrField<v1::ContainerMetrics>* containers) {
  for (v1::ContainerMetrics& c : *containers) FilterWindows(filter, c.mutable_windows());
}

bool SameContainers(const std::vector<ContainerView>& a, const std::vector<ContainerView>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].windows.cpu != b[i].windows.cpu ||
        a[i].windows.memory != b[i].windows.memory) {
      return false;
    }
  }
  return true;
}

absl::Status WithField(std::string_view field, const absl::Status& status) {
  return absl::InvalidArgumentError(
      std::string(field).append(": ").append(status.message().data(), status.message().size()));
}

}  // namespace

google::protobuf::Timestamp ToProtoTimestamp(Timestamp t) {
  int64_t ns = t.time_since_epoch().count();
  int64_t seconds = ns / kNanosPerSecond;
  int64_t nanos = ns % kNanosPerSecond;
  if (nanos < 0) {
    nanos += kNanosPerSecond;
    --seconds;
  }
  google::protobuf::Timestamp out;
  out.set_seconds(seconds);
  out.set_nanos(static_cast<int32_t>(nanos));
  return out;
}

Timestamp FromProtoTimestamp(const google::protobuf::Timestamp& t) {
  return Timestamp(Duration(t.seconds() * kNanosPerSecond + t.nanos()));
}

google::protobuf::Duration ToProtoDuration(Duration d) {
  google::protobuf::Duration out;
  // Durations keep the sign in both fields (duration.proto).
  out.set_seconds(d.count() / kNanosPerSecond);
  out.set_nanos(static_cast<int32_t>(d.count() % kNanosPerSecond));
  return out;
}

void AppendWindows(const ResourceWindows& windows,
                   google::protobuf::RepeatedPtrField<v1::Window>* out) {
  struct Pair {
    const WindowStats* cpu = nullptr;
    const WindowStats* memory = nullptr;
  };
  // Both resources normally carry every configured window; merging by length keeps a
  // window that only one of them has.
  std::map<Duration, Pair> by_length;
  if (windows.cpu) {
    for (const WindowStats& w : windows.cpu->windows) by_length[w.window].cpu = &w;
  }
  if (windows.memory) {
    for (const WindowStats& w : windows.memory->windows) by_length[w.window].memory = &w;
  }
  out->Reserve(out->size() + static_cast<int>(by_length.size()));
  for (const auto& [length, pair] : by_length) {
    v1::Window* w = out->Add();
    w->set_name(FormatDuration(length));
    *w->mutable_duration() = ToProtoDuration(length);
    Timestamp endtime = Timestamp::min();
    uint64_t count = 0;
    if (pair.cpu != nullptr) {
      FillStats(*pair.cpu, w->mutable_cpu_nanocores());
      endtime = std::max(endtime, pair.cpu->endtime);
      count = std::max(count, pair.cpu->count);
    }
    if (pair.memory != nullptr) {
      FillStats(*pair.memory, w->mutable_memory_bytes());
      endtime = std::max(endtime, pair.memory->endtime);
      count = std::max(count, pair.memory->count);
    }
    *w->mutable_endtime() = ToProtoTimestamp(endtime);
    w->set_sample_count(Clamp(count));
  }
}

v1::NodeMetrics NodeToProto(const NodeView& node) {
  v1::NodeMetrics out;
  out.set_name(node.name);
  out.mutable_labels()->insert(node.labels.begin(), node.labels.end());
  AppendWindows(node.machine, out.mutable_machine());
  AppendContainers(node.system_containers, out.mutable_system_containers());
  return out;
}

v1::PodMetrics PodToProto(const PodView& pod) {
  v1::PodMetrics out;
  out.set_name(pod.name);
  out.set_namespace_(pod.namespace_name);
  out.mutable_labels()->insert(pod.labels.begin(), pod.labels.end());
  out.set_node_name(pod.node_name);
  AppendWindows(pod.pod, out.mutable_windows());
  AppendContainers(pod.containers, out.mutable_containers());
  return out;
}

bool SameNode(const NodeView& a, const NodeView& b) {
  return a.name == b.name && a.labels == b.labels && a.machine.cpu == b.machine.cpu &&
         a.machine.memory == b.machine.memory &&
         SameContainers(a.system_containers, b.system_containers);
}

bool SamePod(const PodView& a, const PodView& b) {
  return a.name == b.name && a.namespace_name == b.namespace_name && a.node_name == b.node_name &&
         a.labels == b.labels && a.pod.cpu == b.pod.cpu && a.pod.memory == b.pod.memory &&
         SameContainers(a.containers, b.containers);
}

absl::StatusOr<WindowFilter> WindowFilter::Create(const std::vector<std::string>& requested,
                                                  const std::vector<Duration>& configured) {
  WindowFilter filter;
  std::vector<std::string> known;
  known.reserve(configured.size());
  for (Duration d : configured) known.push_back(FormatDuration(d));
  for (const std::string& name : requested) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string message = "windows: unknown window \"";
      message.append(name.substr(0, 64)).append("\" (windows: ");
      message.append(absl::StrJoin(known, ", ")).append(")");
      return absl::InvalidArgumentError(message);
    }
    filter.names_.insert(name);
  }
  return filter;
}

bool WindowFilter::Keeps(std::string_view name) const {
  return names_.empty() || names_.find(name) != names_.end();
}

void WindowFilter::Apply(v1::NodeMetrics* node) const {
  if (all()) return;
  FilterWindows(*this, node->mutable_machine());
  FilterContainers(*this, node->mutable_system_containers());
}

void WindowFilter::Apply(v1::PodMetrics* pod) const {
  if (all()) return;
  FilterWindows(*this, pod->mutable_windows());
  FilterContainers(*this, pod->mutable_containers());
}

absl::StatusOr<ObjectFilter> ObjectFilter::ForNodes(std::string_view label_selector,
                                                    std::string_view field_selector) {
  ObjectFilter filter;
  absl::StatusOr<LabelSelector> labels = LabelSelector::Parse(label_selector);
  if (!labels.ok()) return WithField("label_selector", labels.status());
  absl::StatusOr<FieldSelector> fields = FieldSelector::Parse(field_selector);
  if (!fields.ok()) return WithField("field_selector", fields.status());
  absl::Status supported = fields->CheckSupported({kFieldMetadataName, kFieldMetadataNamespace});
  if (!supported.ok()) return WithField("field_selector", supported);
  filter.labels_ = *std::move(labels);
  filter.fields_ = *std::move(fields);
  return filter;
}

absl::StatusOr<ObjectFilter> ObjectFilter::ForPods(std::string_view namespace_name,
                                                   std::string_view label_selector,
                                                   std::string_view field_selector) {
  ObjectFilter filter;
  filter.namespace_ = std::string(namespace_name);
  absl::StatusOr<LabelSelector> labels = LabelSelector::Parse(label_selector);
  if (!labels.ok()) return WithField("label_selector", labels.status());
  absl::StatusOr<FieldSelector> fields = FieldSelector::Parse(field_selector);
  if (!fields.ok()) return WithField("field_selector", fields.status());
  absl::Status supported =
      fields->CheckSupported({kFieldMetadataName, kFieldMetadataNamespace, kFieldSpecNodeName});
  if (!supported.ok()) return WithField("field_selector", supported);
  filter.labels_ = *std::move(labels);
  filter.fields_ = *std::move(fields);
  return filter;
}

bool ObjectFilter::Matches(const NodeView& node) const {
  if (!labels_.Matches(node.labels)) return false;
  if (fields_.Empty()) return true;
  return fields_.Matches(FieldLookup([&node](const std::string& field) -> std::string_view {
    if (field == kFieldMetadataName) return node.name;
    return {};
  }));
}

bool ObjectFilter::Matches(const PodView& pod) const {
  if (!namespace_.empty() && pod.namespace_name != namespace_) return false;
  if (!labels_.Matches(pod.labels)) return false;
  if (fields_.Empty()) return true;
  return fields_.Matches(FieldLookup([&pod](const std::string& field) -> std::string_view {
    if (field == kFieldMetadataName) return pod.name;
    if (field == kFieldMetadataNamespace) return pod.namespace_name;
    if (field == kFieldSpecNodeName) return pod.node_name;
    return {};
  }));
}

}  // namespace kubestat::aggregator
