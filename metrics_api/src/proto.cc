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

absl::Status Negative(std::string_view path) {
  return absl::InvalidArgumentError(absl::StrCat(AbslView(path), ": must not be negative"));
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

// ---- Topology ----

void FillResourceSet(const ResourceSet& set, v1::ResourceSet* out) {
  out->mutable_cpu_ids()->Add(set.cpu_ids.begin(), set.cpu_ids.end());
  for (const NumaMemory& block : set.memory) {
    v1::NumaMemory* m = out->add_memory();
    m->set_memory_type(block.memory_type);
    m->set_size_bytes(Clamp(block.size_bytes));
    m->mutable_numa_nodes()->Add(block.numa_nodes.begin(), block.numa_nodes.end());
  }
  for (const DeviceSet& devices : set.devices) {
    v1::DeviceSet* d = out->add_devices();
    d->set_resource_name(devices.resource_name);
    for (const std::string& id : devices.device_ids) d->add_device_ids(id);
    d->mutable_numa_nodes()->Add(devices.numa_nodes.begin(), devices.numa_nodes.end());
  }
}

absl::StatusOr<ResourceSet> ResourceSetFromProto(const v1::ResourceSet& in, std::string_view path) {
  ResourceSet out;
  out.cpu_ids.assign(in.cpu_ids().begin(), in.cpu_ids().end());
  for (const v1::NumaMemory& m : in.memory()) {
    if (m.size_bytes() < 0) return Negative(absl::StrCat(AbslView(path), ".memory.size_bytes"));
    out.memory.push_back({m.memory_type(), static_cast<uint64_t>(m.size_bytes()),
                          std::vector<int64_t>(m.numa_nodes().begin(), m.numa_nodes().end())});
  }
  for (const v1::DeviceSet& d : in.devices()) {
    out.devices.push_back({d.resource_name(),
                           std::vector<std::string>(d.device_ids().begin(), d.device_ids().end()),
                           std::vector<int64_t>(d.numa_nodes().begin(), d.numa_nodes().end())});
  }
  return out;
}

void AppendContainers(const std::vector<ContainerMetrics>& containers,
                      google::protobuf::RepeatedPtrField<v1::ContainerMetrics>* out) {
  out->Reserve(static_cast<int>(containers.size()));
  for (const ContainerMetrics& container : containers) {
    v1::ContainerMetrics* c = out->Add();
    c->set_name(container.name);
    AppendWindows(container.windows, c->mutable_windows());
    if (!container.exclusive.empty()) FillResourceSet(container.exclusive, c->mutable_exclusive());
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
    if (container.has_exclusive()) {
      absl::StatusOr<ResourceSet> exclusive =
          ResourceSetFromProto(container.exclusive(),
                               absl::StrCat(AbslView(path), "[", container.name(), "].exclusive"));
      if (!exclusive.ok()) return exclusive.status();
      out.back().exclusive = *std::move(exclusive);
    }
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
  if (node.allocatable) FillResourceSet(*node.allocatable, out.mutable_allocatable());
  if (node.pod_resources) {
    v1::PodResourcesStatus* status = out.mutable_pod_resources();
    status->set_state(node.pod_resources->state);
    status->set_message(node.pod_resources->message);
    *status->mutable_time() = ToProtoTimestamp(node.pod_resources->time);
  }
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
  if (!pod.exclusive.empty()) FillResourceSet(pod.exclusive, out.mutable_exclusive());
  return out;
}

absl::StatusOr<NodeMetrics> FromProto(const v1::NodeMetrics& node) {
  NodeMetrics out;
  out.name = node.name();
  out.labels = Labels(node.labels().begin(), node.labels().end());
  absl::StatusOr<ResourceWindows> machine = WindowsFromProto(node.machine(), "machine");
  if (!machine.ok()) return machine.status();
  out.machine = *std::move(machine);
  absl::StatusOr<std::vector<ContainerMetrics>> containers =
      ContainersFromProto(node.system_containers(), "system_containers");
  if (!containers.ok()) return containers.status();
  out.system_containers = *std::move(containers);
  if (node.has_allocatable()) {
    absl::StatusOr<ResourceSet> allocatable =
        ResourceSetFromProto(node.allocatable(), "allocatable");
    if (!allocatable.ok()) return allocatable.status();
    out.allocatable = *std::move(allocatable);
  }
  if (node.has_pod_resources()) {
    out.pod_resources =
        PodResourcesStatus{node.pod_resources().state(), node.pod_resources().message(),
                           FromProtoTimestamp(node.pod_resources().time())};
  }
  return out;
}

absl::StatusOr<PodMetrics> FromProto(const v1::PodMetrics& pod) {
  PodMetrics out;
  out.name = pod.name();
  out.namespace_name = pod.namespace_();
  out.node_name = pod.node_name();
  out.labels = Labels(pod.labels().begin(), pod.labels().end());
  absl::StatusOr<ResourceWindows> windows = WindowsFromProto(pod.windows(), "windows");
  if (!windows.ok()) return windows.status();
  out.pod = *std::move(windows);
  absl::StatusOr<std::vector<ContainerMetrics>> containers =
      ContainersFromProto(pod.containers(), "containers");
  if (!containers.ok()) return containers.status();
  out.containers = *std::move(containers);
  if (pod.has_exclusive()) {
    absl::StatusOr<ResourceSet> exclusive = ResourceSetFromProto(pod.exclusive(), "exclusive");
    if (!exclusive.ok()) return exclusive.status();
    out.exclusive = *std::move(exclusive);
  }
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
