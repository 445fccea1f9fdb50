#include "kubestat/metrics_api/render.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "kubestat/apimachinery/quantity.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/core/time.h"
#include "kubestat/metrics_api/internal/usage.h"
#include "resource_set_json.h"

namespace kubestat::metrics_api {
namespace {

using internal::ClampToInt64;
using internal::PodUsageTimestamp;
using internal::UsageTimestamp;
using internal::UsageWindow;

// Every window of a list shares a few lengths and usually one endtime: format each once
// per thread instead of once per window (a 1,000-node v1alpha1 list has 8,000 windows).
// The returned reference is valid until the next call on the same thread.
const std::string& CachedDuration(Duration d) {
  thread_local std::vector<std::pair<Duration, std::string>> cache;
  for (const auto& [length, text] : cache) {
    if (length == d) return text;
  }
  if (cache.size() >= 16) cache.clear();
  cache.emplace_back(d, FormatDuration(d));
  return cache.back().second;
}

const std::string& CachedRfc3339(Timestamp t) {
  thread_local std::vector<std::pair<Timestamp, std::string>> cache;
  for (const auto& [time, text] : cache) {
    if (time == t) return text;
  }
  if (cache.size() >= 16) cache.clear();
  cache.emplace_back(t, FormatRfc3339(t));
  return cache.back().second;
}

// One statistic of a window, for both resources.
void WriteStat(JsonWriter& w, std::string_view name, uint64_t Statistics::*field,
               const Statistics* cpu, const Statistics* memory) {
  // Keys, quantities and times are the program's own text: written without escaping.
  w.PlainKey(name).BeginObject();
  if (cpu != nullptr) {
    w.PlainKey("cpu").PlainString(FormatCpuNanoCores(ClampToInt64(cpu->*field)));
  }
  if (memory != nullptr) {
    w.PlainKey("memory").PlainString(FormatMemoryBytes(ClampToInt64(memory->*field)));
  }
  w.EndObject();
}

// `"<len>": {endtime, mean, max, 95th, min, 50th, 99th, count}` for one window length;
// at least one of cpu and memory is set.
void WriteWindow(JsonWriter& w, const Statistics* cpu, const Statistics* memory) {
  const Statistics& any = cpu != nullptr ? *cpu : *memory;
  w.PlainKey(CachedDuration(any.window)).BeginObject();
  Timestamp endtime = any.endtime;
  uint64_t count = any.count;
  if (cpu != nullptr && memory != nullptr) {
    endtime = std::max(cpu->endtime, memory->endtime);
    count = std::max(cpu->count, memory->count);
  }
  w.PlainKey("endtime").PlainString(CachedRfc3339(endtime));
  WriteStat(w, "mean", &Statistics::mean, cpu, memory);
  WriteStat(w, "max", &Statistics::max, cpu, memory);
  WriteStat(w, "95th", &Statistics::p95, cpu, memory);
  WriteStat(w, "min", &Statistics::min, cpu, memory);
  WriteStat(w, "50th", &Statistics::p50, cpu, memory);
  WriteStat(w, "99th", &Statistics::p99, cpu, memory);
  w.PlainKey("count").Uint(count);
  w.EndObject();
}

// The <windows> object: the union of cpu's and memory's window lengths, ascending (both
// lists are ascending; they normally hold the same lengths).
void WriteWindows(JsonWriter& w, const ResourceWindows& windows) {
  w.BeginObject();
  const StatisticsList& cpu = windows.cpu;
  const StatisticsList& memory = windows.memory;
  size_t i = 0;
  size_t j = 0;
  while (i < cpu.size() || j < memory.size()) {
    if (j == memory.size() || (i < cpu.size() && cpu[i].window < memory[j].window)) {
      WriteWindow(w, &cpu[i++], nullptr);
    } else if (i == cpu.size() || memory[j].window < cpu[i].window) {
      WriteWindow(w, nullptr, &memory[j++]);
    } else {
      WriteWindow(w, &cpu[i++], &memory[j++]);
    }
  }
  w.EndObject();
}

void WriteLabels(JsonWriter& w, const Labels& labels) {
  if (labels.empty()) return;
  w.Key("labels").BeginObject();
  for (const auto& [key, value] : labels) w.Key(key).String(value);
  w.EndObject();
}

void WriteTypeMeta(JsonWriter& w, std::string_view kind, GroupVersion gv) {
  w.Key("kind").String(kind);
  w.Key("apiVersion").String(ApiVersion(gv));
}

void WriteMetadata(JsonWriter& w, std::string_view name, std::string_view namespace_name,
                   std::string_view resource_version, const Labels& labels,
                   const RenderContext& ctx) {
  w.Key("metadata").BeginObject();
  w.Key("name").String(name);
  if (!namespace_name.empty()) w.Key("namespace").String(namespace_name);
  if (!resource_version.empty()) w.Key("resourceVersion").String(resource_version);
  if (IsMetricsK8sIo(ctx.gv)) w.Key("creationTimestamp").String(CachedRfc3339(ctx.now));
  WriteLabels(w, labels);
  w.EndObject();
}

// `"usage": {cpu, memory}` from the shortest windows (HasUsage must hold).
void WriteUsage(JsonWriter& w, const ResourceWindows& windows) {
  w.PlainKey("usage").BeginObject();
  w.PlainKey("cpu").PlainString(FormatCpuNanoCores(ClampToInt64(windows.cpu.front().mean)));
  w.PlainKey("memory").PlainString(FormatMemoryBytes(ClampToInt64(windows.memory.front().mean)));
  w.EndObject();
}

void WriteTimestampAndWindow(JsonWriter& w, Timestamp timestamp, Duration window) {
  w.PlainKey("timestamp").PlainString(CachedRfc3339(timestamp));
  w.PlainKey("window").PlainString(CachedDuration(window));
}

// ---- requests and limits (metrics/v1alpha1) --------------------------------------------

void WriteAmounts(JsonWriter& w, std::string_view key, const DeclaredResources& amounts) {
  if (amounts.empty()) return;
  w.PlainKey(key).BeginObject();
  if (amounts.cpu) w.PlainKey("cpu").PlainString(FormatCpuNanoCores(ClampToInt64(*amounts.cpu)));
  if (amounts.memory) {
    w.PlainKey("memory").PlainString(FormatMemoryBytes(ClampToInt64(*amounts.memory)));
  }
  w.EndObject();
}

// `{mean, 95th, max: {cpu, memory}}` of one window over `declared`; nothing when neither
// resource has both a window and a non-zero declared amount.
void WriteRatios(JsonWriter& w, std::string_view key, const Statistics* cpu,
                 const Statistics* memory, const DeclaredResources& declared) {
  const bool with_cpu = cpu != nullptr && declared.cpu.value_or(0) > 0;
  const bool with_memory = memory != nullptr && declared.memory.value_or(0) > 0;
  if (!with_cpu && !with_memory) return;
  auto ratio = [](uint64_t value, uint64_t over) {
    return std::round(static_cast<double>(value) / static_cast<double>(over) * 1000) / 1000;
  };
  w.PlainKey(key).BeginObject();
  for (const auto& [name, field] :
       {std::pair<std::string_view, uint64_t Statistics::*>{"mean", &Statistics::mean},
        {"95th", &Statistics::p95},
        {"max", &Statistics::max}}) {
    w.PlainKey(name).BeginObject();
    if (with_cpu) w.PlainKey("cpu").Double(ratio(cpu->*field, *declared.cpu));
    if (with_memory) w.PlainKey("memory").Double(ratio(memory->*field, *declared.memory));
    w.EndObject();
  }
  w.EndObject();
}

// ---- Topology (metrics/v1alpha1): allocatable, utilization, exclusive assignments ----

// `"exclusive": <ResourceSet>` when the set is not empty.
void WriteExclusive(JsonWriter& w, const ResourceSet& set) {
  if (set.empty()) return;
  w.PlainKey("exclusive");
  internal::WriteResourceSet(w, set);
}

// A ratio rounded to 4 decimals.
double Ratio(uint64_t value, double of) {
  return std::round(static_cast<double>(value) / of * 10000.0) / 10000.0;
}

// `"allocatable": {cpu, memory, <hugepages-*>, <device resource>: count}` (as a Node's
// status.allocatable), `"allocatableTopology": <ResourceSet>`, and `"utilization"`: for each
// window of the machine, its mean, 95th and max over the allocatable cpu and memory.
void WriteAllocatable(JsonWriter& w, const NodeMetrics& node) {
  const ResourceSet& set = *node.allocatable;
  const int64_t cpus = static_cast<int64_t>(set.cpu_ids.size());
  const uint64_t memory = set.MemoryBytes();
  std::map<std::string, uint64_t> other_memory;  // hugepages-*, by type
  for (const NumaMemory& block : set.memory) {
    if (block.memory_type != "memory") other_memory[block.memory_type] += block.size_bytes;
  }
  w.PlainKey("allocatable").BeginObject();
  if (cpus > 0) w.PlainKey("cpu").PlainString(FormatCpuNanoCores(cpus * 1000000000));
  if (memory > 0) w.PlainKey("memory").PlainString(FormatMemoryBytes(ClampToInt64(memory)));
  for (const auto& [type, bytes] : other_memory) {
    w.Key(type).PlainString(FormatMemoryBytes(ClampToInt64(bytes)));
  }
  for (const auto& [resource, count] : set.DeviceCounts()) {
    w.Key(resource).PlainString(std::to_string(count));
  }
  w.EndObject();
  w.PlainKey("allocatableTopology");
  internal::WriteResourceSet(w, set);
  if (cpus == 0 && memory == 0) return;
  const ResourceWindows& m = node.machine;
  if (m.cpu.empty() && m.memory.empty()) return;
  w.PlainKey("utilization").BeginObject();
  // The union of the window lengths, as WriteWindows takes them.
  size_t i = 0;
  size_t j = 0;
  while (i < m.cpu.size() || j < m.memory.size()) {
    const Statistics* cpu = nullptr;
    const Statistics* mem = nullptr;
    if (j == m.memory.size() || (i < m.cpu.size() && m.cpu[i].window < m.memory[j].window)) {
      cpu = &m.cpu[i++];
    } else if (i == m.cpu.size() || m.memory[j].window < m.cpu[i].window) {
      mem = &m.memory[j++];
    } else {
      cpu = &m.cpu[i++];
      mem = &m.memory[j++];
    }
    w.PlainKey(CachedDuration(cpu != nullptr ? cpu->window : mem->window)).BeginObject();
    for (const auto& [name, field] :
         {std::pair{"mean", &Statistics::mean}, std::pair{"95th", &Statistics::p95},
          std::pair{"max", &Statistics::max}}) {
      w.PlainKey(name).BeginObject();
      if (cpu != nullptr && cpus > 0) {
        w.PlainKey("cpu").Double(Ratio(cpu->*field, static_cast<double>(cpus) * 1e9));
      }
      if (mem != nullptr && memory > 0) {
        w.PlainKey("memory").Double(Ratio(mem->*field, static_cast<double>(memory)));
      }
      w.EndObject();
    }
    w.EndObject();
  }
  w.EndObject();
}

// The statistics of `windows` of one length, or null.
const Statistics* WindowOf(const StatisticsList& windows, Duration length) {
  for (const Statistics& s : windows) {
    if (s.window == length) return &s;
  }
  return nullptr;
}

// `requests`, `limits` and `ratios` of a container that declares any (render.h).
void WriteDeclared(JsonWriter& w, const ContainerMetrics& container) {
  if (container.requests.empty() && container.limits.empty()) return;
  WriteAmounts(w, "requests", container.requests);
  WriteAmounts(w, "limits", container.limits);
  w.PlainKey("ratios").BeginObject();
  std::vector<Duration> lengths;
  for (const auto* windows : {&container.windows.cpu, &container.windows.memory}) {
    for (const Statistics& s : *windows) lengths.push_back(s.window);
  }
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  for (Duration length : lengths) {
    const Statistics* cpu = WindowOf(container.windows.cpu, length);
    const Statistics* memory = WindowOf(container.windows.memory, length);
    w.PlainKey(CachedDuration(length)).BeginObject();
    WriteRatios(w, "usage/request", cpu, memory, container.requests);
    WriteRatios(w, "usage/limit", cpu, memory, container.limits);
    w.EndObject();
  }
  w.EndObject();
}

// `"podResources": {state, message, time}`.
void WritePodResourcesStatus(JsonWriter& w, const PodResourcesStatus& status) {
  w.PlainKey("podResources").BeginObject();
  w.Key("state").String(status.state);
  if (!status.message.empty()) w.Key("message").String(status.message);
  w.PlainKey("time").PlainString(CachedRfc3339(status.time));
  w.EndObject();
}

// `"<key>": [{metadata{name}, metrics: <windows>}, ...]` (metrics/v1alpha1).
void WriteContainerWindows(JsonWriter& w, std::string_view key,
                           const std::vector<ContainerMetrics>& containers) {
  w.Key(key).BeginArray();
  for (const ContainerMetrics& container : containers) {
    w.BeginObject();
    w.Key("metadata").BeginObject().Key("name").String(container.name).EndObject();
    w.Key("metrics");
    WriteWindows(w, container.windows);
    WriteDeclared(w, container);
    WriteExclusive(w, container.exclusive);
    w.EndObject();
  }
  w.EndArray();
}

void WriteNodeObject(JsonWriter& w, const NodeMetrics& node, const RenderContext& ctx,
                     bool with_type) {
  w.BeginObject();
  if (with_type) WriteTypeMeta(w, "NodeMetrics", ctx.gv);
  WriteMetadata(w, node.name, {}, node.resource_version, node.labels, ctx);
  if (IsMetricsK8sIo(ctx.gv)) {
    WriteTimestampAndWindow(w, UsageTimestamp(node.machine), UsageWindow(node.machine));
    WriteUsage(w, node.machine);
  } else {
    w.Key("machine");
    WriteWindows(w, node.machine);
    WriteContainerWindows(w, "systemContainers", node.system_containers);
    if (node.allocatable) WriteAllocatable(w, node);
    if (node.pod_resources) WritePodResourcesStatus(w, *node.pod_resources);
  }
  w.EndObject();
}

void WritePodObject(JsonWriter& w, const PodMetrics& pod, const RenderContext& ctx,
                    bool with_type) {
  w.BeginObject();
  if (with_type) WriteTypeMeta(w, "PodMetrics", ctx.gv);
  WriteMetadata(w, pod.name, pod.namespace_name, pod.resource_version, pod.labels, ctx);
  if (IsMetricsK8sIo(ctx.gv)) {
    WriteTimestampAndWindow(w, PodUsageTimestamp(pod), UsageWindow(pod.containers.front().windows));
    w.Key("containers").BeginArray();
    for (const ContainerMetrics& container : pod.containers) {
      w.BeginObject();
      w.Key("name").String(container.name);
      WriteUsage(w, container.windows);
      w.EndObject();
    }
    w.EndArray();
  } else {
    w.Key("pod");
    WriteWindows(w, pod.pod);
    WriteContainerWindows(w, "containers", pod.containers);
    WriteExclusive(w, pod.exclusive);
  }
  w.EndObject();
}

void BeginList(JsonWriter& w, std::string_view kind, GroupVersion gv, const Page& page) {
  w.BeginObject();
  WriteTypeMeta(w, kind, gv);
  w.Key("metadata").BeginObject();
  if (!page.resource_version.empty()) w.Key("resourceVersion").String(page.resource_version);
  if (!page.continue_token.empty()) w.Key("continue").String(page.continue_token);
  w.EndObject();
  w.Key("items").BeginArray();
}

void EndList(JsonWriter& w) { w.EndArray().EndObject(); }

// A rough size of one rendered object, so the output grows without many reallocations.
size_t EstimatedObjectBytes(GroupVersion gv) { return IsMetricsK8sIo(gv) ? 320 : 4096; }

// A list of `kind` over the objects of `page`; write(w, object, i) writes objects[i].
template <typename Objects, typename WriteObject>
std::string RenderList(const Objects& objects, const Page& page, std::string_view kind,
                       const RenderContext& ctx, WriteObject write) {
  JsonWriter w(ctx.indent);
  w.Reserve(128 + page.indices.size() * EstimatedObjectBytes(ctx.gv));
  BeginList(w, kind, ctx.gv, page);
  for (size_t i : page.indices) write(w, internal::Deref(objects[i]), i);
  EndList(w);
  return w.Take();
}

// Writes one item of a list (without kind and apiVersion).
struct ListItemWriter {
  const RenderContext& ctx;
  void operator()(JsonWriter& w, const NodeMetrics& node, size_t /*index*/) const {
    WriteNodeObject(w, node, ctx, /*with_type=*/false);
  }
  void operator()(JsonWriter& w, const PodMetrics& pod, size_t /*index*/) const {
    WritePodObject(w, pod, ctx, /*with_type=*/false);
  }
};

constexpr std::string_view kNodeList = "NodeMetricsList";
constexpr std::string_view kPodList = "PodMetricsList";

}  // namespace

std::optional<std::string> RenderNode(const NodeMetrics& node, const RenderContext& ctx) {
  if (!Servable(ctx.gv, node)) return std::nullopt;
  JsonWriter w(ctx.indent);
  w.Reserve(EstimatedObjectBytes(ctx.gv));
  WriteNodeObject(w, node, ctx, /*with_type=*/true);
  return w.Take();
}

std::optional<std::string> RenderPod(const PodMetrics& pod, const RenderContext& ctx) {
  if (!Servable(ctx.gv, pod)) return std::nullopt;
  JsonWriter w(ctx.indent);
  w.Reserve(EstimatedObjectBytes(ctx.gv));
  WritePodObject(w, pod, ctx, /*with_type=*/true);
  return w.Take();
}

std::string RenderNodeListItem(const NodeMetrics& node, const RenderContext& ctx) {
  assert(ctx.gv == GroupVersion::kV1alpha1 && ctx.indent == 0);
  JsonWriter w;
  WriteNodeObject(w, node, ctx, /*with_type=*/false);
  return w.Take();
}

std::string RenderNodeList(SharedNodes nodes, const Page& page, const RenderContext& ctx) {
  return RenderList(nodes, page, kNodeList, ctx, ListItemWriter{ctx});
}

std::string RenderPodList(SharedPods pods, const Page& page, const RenderContext& ctx) {
  return RenderList(pods, page, kPodList, ctx, ListItemWriter{ctx});
}

std::string RenderNodeList(SharedNodes nodes, std::span<const std::string> items, const Page& page,
                           const RenderContext& ctx) {
  assert(ctx.gv == GroupVersion::kV1alpha1 && ctx.indent == 0 && items.size() == nodes.size());
  return RenderList(nodes, page, kNodeList, ctx,
                    [items](JsonWriter& w, const NodeMetrics&, size_t i) { w.Raw(items[i]); });
}

std::string RenderNodeList(std::span<const NodeMetrics> nodes, const ListQuery& query,
                           const RenderContext& ctx) {
  return RenderList(nodes, Select(query, ctx.gv, nodes), kNodeList, ctx, ListItemWriter{ctx});
}

std::string RenderPodList(std::span<const PodMetrics> pods, const ListQuery& query,
                          const RenderContext& ctx) {
  return RenderList(pods, Select(query, ctx.gv, pods), kPodList, ctx, ListItemWriter{ctx});
}

std::string RenderNodeList(SharedNodes nodes, const ListQuery& query, const RenderContext& ctx) {
  return RenderNodeList(nodes, Select(query, ctx.gv, nodes), ctx);
}

std::string RenderPodList(SharedPods pods, const ListQuery& query, const RenderContext& ctx) {
  return RenderPodList(pods, Select(query, ctx.gv, pods), ctx);
}

}  // namespace kubestat::metrics_api
