#include "kubestat/metrics_api/proto.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/time.h"

namespace kubestat::metrics_api {
namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

int64_t Clamp(uint64_t v) {
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  return static_cast<int64_t>(std::min(v, kMax));
}

void FillStats(const Statistics& stats, v1::ResourceStats* out) {
  out->set_mean(Clamp(stats.mean));
  out->set_max(Clamp(stats.max));
  out->set_min(Clamp(stats.min));
  out->set_p50(Clamp(stats.p50));
  out->set_p95(Clamp(stats.p95));
  out->set_p99(Clamp(stats.p99));
  out->set_sample_count(Clamp(stats.count));
}

void AppendContainers(const std::vector<ContainerMetrics>& containers,
                      google::protobuf::RepeatedPtrField<v1::ContainerMetrics>* out) {
  out->Reserve(static_cast<int>(containers.size()));
  for (const ContainerMetrics& container : containers) {
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

absl::Status Negative(std::string_view path) {
  return absl::InvalidArgumentError(absl::StrCat(AbslView(path), ": must not be negative"));
}

// One resource's statistics of a window; `path` names it in errors.
absl::StatusOr<Statistics> StatsFromProto(const v1::Window& window, const v1::ResourceStats& in,
                                          const std::string& path) {
  const int64_t values[] = {in.mean(), in.max(), in.min(),         in.p50(),
                            in.p95(),  in.p99(), in.sample_count()};
  for (int64_t v : values) {
    if (v < 0) return Negative(path);
  }
  Statistics out;
  out.window = FromProtoDuration(window.duration());
  out.endtime = FromProtoTimestamp(window.endtime());
  out.mean = static_cast<uint64_t>(in.mean());
  out.max = static_cast<uint64_t>(in.max());
  out.min = static_cast<uint64_t>(in.min());
  out.p50 = static_cast<uint64_t>(in.p50());
  out.p95 = static_cast<uint64_t>(in.p95());
  out.p99 = static_cast<uint64_t>(in.p99());
  out.count = static_cast<uint64_t>(in.sample_count());
  return out;
}

absl::StatusOr<ResourceWindows> WindowsFromProto(
    const google::protobuf::RepeatedPtrField<v1::Window>& windows, std::string_view path) {
  ResourceWindows out;
  for (const v1::Window& window : windows) {
    const std::string at = absl::StrCat(AbslView(path), "[\"", window.name(), "\"]");
    if (window.duration().seconds() < 0 || window.duration().nanos() < 0) {
      return Negative(absl::StrCat(at, ".duration"));
    }
    if (window.has_cpu_nanocores()) {
      absl::StatusOr<Statistics> cpu =
          StatsFromProto(window, window.cpu_nanocores(), absl::StrCat(at, ".cpu_nanocores"));
      if (!cpu.ok()) return cpu.status();
      out.cpu.push_back(*cpu);
    }
    if (window.has_memory_bytes()) {
      absl::StatusOr<Statistics> memory =
          StatsFromProto(window, window.memory_bytes(), absl::StrCat(at, ".memory_bytes"));
      if (!memory.ok()) return memory.status();
      out.memory.push_back(*memory);
    }
  }
  const auto by_length = [](const Statistics& a, const Statistics& b) {
    return a.window < b.window;
  };
  std::stable_sort(out.cpu.begin(), out.cpu.end(), by_length);
  std::stable_sort(out.memory.begin(), out.memory.end(), by_length);
  return out;
}

absl::StatusOr<std::vector<ContainerMetrics>> ContainersFromProto(
    const google::protobuf::RepeatedPtrField<v1::ContainerMetrics>& containers,
    std::string_view path) {
  std::vector<ContainerMetrics> out;
  out.reserve(containers.size());
  for (const v1::ContainerMetrics& container : containers) {
    absl::StatusOr<ResourceWindows> windows = WindowsFromProto(
        container.windows(), absl::StrCat(AbslView(path), "[", container.name(), "].windows"));
    if (!windows.ok()) return windows.status();
    out.push_back(ContainerMetrics{container.name(), *std::move(windows)});
  }
  return out;
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

Duration FromProtoDuration(const google::protobuf::Duration& d) {
  return Duration(d.seconds() * kNanosPerSecond + d.nanos());
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
    const Statistics* cpu = nullptr;
    const Statistics* memory = nullptr;
  };
  // Both resources normally carry every configured window; merging by length keeps a
  // window that only one of them has.
  std::map<Duration, Pair> by_length;
  for (const Statistics& w : windows.cpu) by_length[w.window].cpu = &w;
  for (const Statistics& w : windows.memory) by_length[w.window].memory = &w;
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

v1::NodeMetrics ToProto(const NodeMetrics& node) {
  v1::NodeMetrics out;
  out.set_name(node.name);
  out.mutable_labels()->insert(node.labels.begin(), node.labels.end());
  AppendWindows(node.machine, out.mutable_machine());
  AppendContainers(node.system_containers, out.mutable_system_containers());
  return out;
}

v1::PodMetrics ToProto(const PodMetrics& pod) {
  v1::PodMetrics out;
  out.set_name(pod.name);
  out.set_namespace_(pod.namespace_name);
  out.mutable_labels()->insert(pod.labels.begin(), pod.labels.end());
  out.set_node_name(pod.node_name);
  AppendWindows(pod.pod, out.mutable_windows());
  AppendContainers(pod.containers, out.mutable_containers());
  return out;
}

absl::StatusOr<NodeMetrics> FromProto(const v1::NodeMetrics& node) {
  NodeMetrics out;
  out.name = node.name();
  out.labels.insert(node.labels().begin(), node.labels().end());
  absl::StatusOr<ResourceWindows> machine = WindowsFromProto(node.machine(), "machine");
  if (!machine.ok()) return machine.status();
  out.machine = *std::move(machine);
  absl::StatusOr<std::vector<ContainerMetrics>> containers =
      ContainersFromProto(node.system_containers(), "system_containers");
  if (!containers.ok()) return containers.status();
  out.system_containers = *std::move(containers);
  return out;
}

absl::StatusOr<PodMetrics> FromProto(const v1::PodMetrics& pod) {
  PodMetrics out;
  out.name = pod.name();
  out.namespace_name = pod.namespace_();
  out.node_name = pod.node_name();
  out.labels.insert(pod.labels().begin(), pod.labels().end());
  absl::StatusOr<ResourceWindows> windows = WindowsFromProto(pod.windows(), "windows");
  if (!windows.ok()) return windows.status();
  out.pod = *std::move(windows);
  absl::StatusOr<std::vector<ContainerMetrics>> containers =
      ContainersFromProto(pod.containers(), "containers");
  if (!containers.ok()) return containers.status();
  out.containers = *std::move(containers);
  return out;
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

}  // namespace kubestat::metrics_api
