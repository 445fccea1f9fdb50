#include "kubestat/aggregator/rest_render.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "kubestat/core/json_writer.h"
#include "kubestat/core/quantity.h"
#include "kubestat/core/time.h"

namespace kubestat::aggregator {
namespace {

// Engine values are unsigned; a quantity is built from an int64. Values beyond int64 are
// not physical (9.2 exabytes, 9.2e9 cores), so clamping loses nothing real.
int64_t ClampToInt64(uint64_t value) {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  return static_cast<int64_t>(std::min(value, kMax));
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string DecodeQueryComponent(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+') {
      out.push_back(' ');
    } else if (c == '%' && i + 2 < text.size() && HexValue(text[i + 1]) >= 0 &&
               HexValue(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2])));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

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

const std::vector<WindowStats>* WindowsOf(const std::optional<SeriesWindows>& series) {
  if (!series || series->windows.empty()) return nullptr;
  return &series->windows;
}

// One statistic of a window, for both resources.
void WriteStat(JsonWriter& w, std::string_view name, uint64_t WindowStats::*field,
               const WindowStats* cpu, const WindowStats* memory) {
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
void WriteWindow(JsonWriter& w, const WindowStats* cpu, const WindowStats* memory) {
  const WindowStats& any = cpu != nullptr ? *cpu : *memory;
  w.PlainKey(CachedDuration(any.window)).BeginObject();
  Timestamp endtime = any.endtime;
  uint64_t count = any.count;
  if (cpu != nullptr && memory != nullptr) {
    endtime = std::max(cpu->endtime, memory->endtime);
    count = std::max(cpu->count, memory->count);
  }
  w.PlainKey("endtime").PlainString(CachedRfc3339(endtime));
  WriteStat(w, "mean", &WindowStats::mean, cpu, memory);
  WriteStat(w, "max", &WindowStats::max, cpu, memory);
  WriteStat(w, "95th", &WindowStats::p95, cpu, memory);
  WriteStat(w, "min", &WindowStats::min, cpu, memory);
  WriteStat(w, "50th", &WindowStats::p50, cpu, memory);
  WriteStat(w, "99th", &WindowStats::p99, cpu, memory);
  w.PlainKey("count").Uint(count);
  w.EndObject();
}

// The <windows> object: the union of cpu's and memory's window lengths, ascending (both
// lists are ascending; they normally hold the same lengths).
void WriteWindows(JsonWriter& w, const ResourceWindows& windows) {
  w.BeginObject();
  static const std::vector<WindowStats> kNone;
  const std::vector<WindowStats>& cpu = windows.cpu ? windows.cpu->windows : kNone;
  const std::vector<WindowStats>& memory = windows.memory ? windows.memory->windows : kNone;
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

void WriteTypeMeta(JsonWriter& w, std::string_view kind, MetricsApi api) {
  w.Key("kind").String(kind);
  w.Key("apiVersion").String(ApiGroupVersion(api));
}

void WriteMetadata(JsonWriter& w, std::string_view name, std::string_view namespace_name,
                   const Labels& labels, const RenderContext& ctx) {
  w.Key("metadata").BeginObject();
  w.Key("name").String(name);
  if (!namespace_name.empty()) w.Key("namespace").String(namespace_name);
  if (IsMetricsK8sIo(ctx.api)) w.Key("creationTimestamp").String(CachedRfc3339(ctx.now));
  WriteLabels(w, labels);
  w.EndObject();
}

bool HasUsage(const ResourceWindows& windows) {
  return WindowsOf(windows.cpu) != nullptr && WindowsOf(windows.memory) != nullptr;
}

// `"usage": {cpu, memory}` from the shortest windows (HasUsage must hold).
void WriteUsage(JsonWriter& w, const ResourceWindows& windows) {
  w.PlainKey("usage").BeginObject();
  w.PlainKey("cpu").PlainString(
      FormatCpuNanoCores(ClampToInt64(windows.cpu->windows.front().mean)));
  w.PlainKey("memory").PlainString(
      FormatMemoryBytes(ClampToInt64(windows.memory->windows.front().mean)));
  w.EndObject();
}

// The newest end of the shortest windows (HasUsage must hold).
Timestamp UsageTimestamp(const ResourceWindows& windows) {
  return std::max(windows.cpu->windows.front().endtime, windows.memory->windows.front().endtime);
}

void WriteTimestampAndWindow(JsonWriter& w, Timestamp timestamp, Duration window) {
  w.PlainKey("timestamp").PlainString(CachedRfc3339(timestamp));
  w.PlainKey("window").PlainString(CachedDuration(window));
}

void WriteNodeObject(JsonWriter& w, const NodeView& node, const RenderContext& ctx,
                     bool with_type) {
  w.BeginObject();
  if (with_type) WriteTypeMeta(w, "NodeMetrics", ctx.api);
  WriteMetadata(w, node.name, {}, node.labels, ctx);
  if (IsMetricsK8sIo(ctx.api)) {
    WriteTimestampAndWindow(w, UsageTimestamp(node.machine),
                            node.machine.cpu->windows.front().window);
    WriteUsage(w, node.machine);
  } else {
    w.Key("machine");
    WriteWindows(w, node.machine);
    w.Key("systemContainers").BeginArray();
    for (const ContainerView& container : node.system_containers) {
      w.BeginObject();
      w.Key("metadata").BeginObject().Key("name").String(container.name).EndObject();
      w.Key("metrics");
      WriteWindows(w, container.windows);
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
}

void WritePodObject(JsonWriter& w, const PodView& pod, const RenderContext& ctx, bool with_type) {
  w.BeginObject();
  if (with_type) WriteTypeMeta(w, "PodMetrics", ctx.api);
  WriteMetadata(w, pod.name, pod.namespace_name, pod.labels, ctx);
  if (IsMetricsK8sIo(ctx.api)) {
    Timestamp timestamp = UsageTimestamp(pod.containers.front().windows);
    for (const ContainerView& container : pod.containers) {
      timestamp = std::max(timestamp, UsageTimestamp(container.windows));
    }
    WriteTimestampAndWindow(w, timestamp,
                            pod.containers.front().windows.cpu->windows.front().window);
    w.Key("containers").BeginArray();
    for (const ContainerView& container : pod.containers) {
      w.BeginObject();
      w.Key("name").String(container.name);
      WriteUsage(w, container.windows);
      w.EndObject();
    }
    w.EndArray();
  } else {
    w.Key("pod");
    WriteWindows(w, pod.pod);
    w.Key("containers").BeginArray();
    for (const ContainerView& container : pod.containers) {
      w.BeginObject();
      w.Key("metadata").BeginObject().Key("name").String(container.name).EndObject();
      w.Key("metrics");
      WriteWindows(w, container.windows);
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
}

void BeginList(JsonWriter& w, std::string_view kind, MetricsApi api) {
  w.BeginObject();
  WriteTypeMeta(w, kind, api);
  w.Key("metadata").BeginObject().EndObject();
  w.Key("items").BeginArray();
}

void EndList(JsonWriter& w) { w.EndArray().EndObject(); }

// A rough size of one rendered object, so the output grows without many reallocations.
size_t EstimatedObjectBytes(MetricsApi api) { return IsMetricsK8sIo(api) ? 320 : 4096; }

void WriteGroupVersion(JsonWriter& w, MetricsApi api) {
  w.BeginObject();
  w.Key("groupVersion").String(ApiGroupVersion(api));
  w.Key("version").String(ApiVersionName(api));
  w.EndObject();
}

void WriteGroup(JsonWriter& w, MetricsApi api, bool with_type) {
  w.BeginObject();
  if (with_type) {
    w.Key("kind").String("APIGroup");
    w.Key("apiVersion").String("v1");
  }
  w.Key("name").String(ApiGroupName(api));
  const std::span<const MetricsApi> versions = GroupVersions(api);
  w.Key("versions").BeginArray();
  for (MetricsApi version : versions) WriteGroupVersion(w, version);
  w.EndArray();
  w.Key("preferredVersion");
  WriteGroupVersion(w, versions.front());
  w.EndObject();
}

void WriteResource(JsonWriter& w, std::string_view name, bool namespaced, std::string_view kind) {
  w.BeginObject();
  w.Key("name").String(name);
  w.Key("singularName").String("");
  w.Key("namespaced").Bool(namespaced);
  w.Key("kind").String(kind);
  w.Key("verbs").BeginArray().String("get").String("list").EndArray();
  w.EndObject();
}

}  // namespace

std::string_view ApiGroupName(MetricsApi api) {
  return IsMetricsK8sIo(api) ? kGroupMetricsK8sIo : kGroupMetrics;
}

std::string_view ApiVersionName(MetricsApi api) {
  switch (api) {
    case MetricsApi::kV1alpha1:
      return "v1alpha1";
    case MetricsApi::kV1beta1:
      return "v1beta1";
    case MetricsApi::kV1:
      return "v1";
  }
  assert(false && "unknown MetricsApi");
  return "";
}

std::string_view ApiGroupVersion(MetricsApi api) {
  switch (api) {
    case MetricsApi::kV1alpha1:
      return "metrics/v1alpha1";
    case MetricsApi::kV1beta1:
      return "metrics.k8s.io/v1beta1";
    case MetricsApi::kV1:
      return "metrics.k8s.io/v1";
  }
  assert(false && "unknown MetricsApi");
  return "";
}

bool IsMetricsK8sIo(MetricsApi api) { return api != MetricsApi::kV1alpha1; }

std::span<const MetricsApi> GroupVersions(MetricsApi api) {
  // The preferred version first, as kube-apiserver lists a group's versions.
  static constexpr MetricsApi kMetricsK8sIo[] = {MetricsApi::kV1, MetricsApi::kV1beta1};
  static constexpr MetricsApi kMetrics[] = {MetricsApi::kV1alpha1};
  if (IsMetricsK8sIo(api)) return kMetricsK8sIo;
  return kMetrics;
}

std::string_view MetricsResourceName(MetricsResource resource) {
  return resource == MetricsResource::kNodes ? "nodes" : "pods";
}

QueryParams ParseQueryString(std::string_view query) {
  QueryParams params;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string key = DecodeQueryComponent(pair.substr(0, eq));
    std::string value =
        eq == std::string_view::npos ? std::string() : DecodeQueryComponent(pair.substr(eq + 1));
    params.emplace(std::move(key), std::move(value));  // keeps the first value
  }
  return params;
}

bool PrettyRequested(const QueryParams& params) {
  auto it = params.find("pretty");
  if (it == params.end()) return false;
  // A bare "?pretty" asks for it; a value is read as Go's strconv.ParseBool reads it.
  static constexpr std::string_view kTrue[] = {"", "1", "t", "T", "true", "TRUE", "True"};
  for (std::string_view t : kTrue) {
    if (it->second == t) return true;
  }
  return false;
}

absl::StatusOr<MetricsQuery> ParseMetricsQuery(const QueryParams& params,
                                               MetricsResource resource) {
  MetricsQuery query;
  query.indent = PrettyRequested(params) ? 2 : 0;
  if (auto it = params.find("labelSelector"); it != params.end()) {
    absl::StatusOr<LabelSelector> labels = LabelSelector::Parse(it->second);
    if (!labels.ok()) return labels.status();
    query.labels = *std::move(labels);
  }
  if (auto it = params.find("fieldSelector"); it != params.end()) {
    absl::StatusOr<FieldSelector> fields = FieldSelector::Parse(it->second);
    if (!fields.ok()) return fields.status();
    absl::Status supported =
        resource == MetricsResource::kNodes
            ? fields->CheckSupported({kFieldMetadataName, kFieldMetadataNamespace})
            : fields->CheckSupported(
                  {kFieldMetadataName, kFieldMetadataNamespace, kFieldSpecNodeName});
    if (!supported.ok()) return supported;
    query.fields = *std::move(fields);
  }
  return query;
}

bool MatchesQuery(const MetricsQuery& query, const NodeView& node) {
  if (!query.labels.Matches(node.labels)) return false;
  if (query.fields.Empty()) return true;
  return query.fields.Matches(FieldLookup([&node](const std::string& field) -> std::string_view {
    if (field == kFieldMetadataName) return node.name;
    return {};  // a node has no namespace
  }));
}

bool MatchesQuery(const MetricsQuery& query, const PodView& pod) {
  if (!query.labels.Matches(pod.labels)) return false;
  if (query.fields.Empty()) return true;
  return query.fields.Matches(FieldLookup([&pod](const std::string& field) -> std::string_view {
    if (field == kFieldMetadataName) return pod.name;
    if (field == kFieldMetadataNamespace) return pod.namespace_name;
    if (field == kFieldSpecNodeName) return pod.node_name;
    return {};
  }));
}

bool Servable(MetricsApi api, const NodeView& node) {
  return !IsMetricsK8sIo(api) || HasUsage(node.machine);
}

bool Servable(MetricsApi api, const PodView& pod) {
  if (!IsMetricsK8sIo(api)) return true;
  if (pod.containers.empty()) return false;
  return std::all_of(pod.containers.begin(), pod.containers.end(),
                     [](const ContainerView& c) { return HasUsage(c.windows); });
}

std::optional<std::string> RenderNode(const NodeView& node, const RenderContext& ctx) {
  if (!Servable(ctx.api, node)) return std::nullopt;
  JsonWriter w(ctx.indent);
  w.Reserve(EstimatedObjectBytes(ctx.api));
  WriteNodeObject(w, node, ctx, /*with_type=*/true);
  return w.Take();
}

std::optional<std::string> RenderPod(const PodView& pod, const RenderContext& ctx) {
  if (!Servable(ctx.api, pod)) return std::nullopt;
  JsonWriter w(ctx.indent);
  w.Reserve(EstimatedObjectBytes(ctx.api));
  WritePodObject(w, pod, ctx, /*with_type=*/true);
  return w.Take();
}

namespace {

const NodeView& Deref(const NodeView& node) { return node; }
const PodView& Deref(const PodView& pod) { return pod; }
template <typename View>
const View& Deref(const std::shared_ptr<const View>& view) {
  return *view;
}

// A list of `kind` over the servable objects of `items` that match `query`; write(w, view,
// i) writes items[i].
template <typename Item, typename WriteObject>
std::string RenderList(std::span<const Item> items, std::string_view kind,
                       const MetricsQuery& query, const RenderContext& ctx, WriteObject write) {
  JsonWriter w(ctx.indent);
  w.Reserve(128 + items.size() * EstimatedObjectBytes(ctx.api));
  BeginList(w, kind, ctx.api);
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& view = Deref(items[i]);
    if (Servable(ctx.api, view) && MatchesQuery(query, view)) write(w, view, i);
  }
  EndList(w);
  return w.Take();
}

// Writes one item of a list (without kind and apiVersion).
struct ListItemWriter {
  const RenderContext& ctx;
  void operator()(JsonWriter& w, const NodeView& node, size_t /*index*/) const {
    WriteNodeObject(w, node, ctx, /*with_type=*/false);
  }
  void operator()(JsonWriter& w, const PodView& pod, size_t /*index*/) const {
    WritePodObject(w, pod, ctx, /*with_type=*/false);
  }
};

}  // namespace

std::string RenderNodeList(std::span<const NodeView> nodes, const MetricsQuery& query,
                           const RenderContext& ctx) {
  return RenderList(nodes, "NodeMetricsList", query, ctx, ListItemWriter{ctx});
}

std::string RenderNodeList(std::span<const std::shared_ptr<const NodeView>> nodes,
                           const MetricsQuery& query, const RenderContext& ctx) {
  return RenderList(nodes, "NodeMetricsList", query, ctx, ListItemWriter{ctx});
}

std::string RenderNodeListItem(const NodeView& node, const RenderContext& ctx) {
  assert(ctx.api == MetricsApi::kV1alpha1 && ctx.indent == 0);
  JsonWriter w;
  WriteNodeObject(w, node, ctx, /*with_type=*/false);
  return w.Take();
}

std::string RenderNodeList(std::span<const std::shared_ptr<const NodeView>> nodes,
                           std::span<const std::string> items, const MetricsQuery& query,
                           const RenderContext& ctx) {
  assert(ctx.api == MetricsApi::kV1alpha1 && ctx.indent == 0 && items.size() == nodes.size());
  return RenderList(nodes, "NodeMetricsList", query, ctx,
                    [items](JsonWriter& w, const NodeView&, size_t i) { w.Raw(items[i]); });
}

std::string RenderPodList(std::span<const PodView> pods, const MetricsQuery& query,
                          const RenderContext& ctx) {
  return RenderList(pods, "PodMetricsList", query, ctx, ListItemWriter{ctx});
}

std::string RenderPodList(std::span<const std::shared_ptr<const PodView>> pods,
                          const MetricsQuery& query, const RenderContext& ctx) {
  return RenderList(pods, "PodMetricsList", query, ctx, ListItemWriter{ctx});
}

std::string RenderApiResourceList(MetricsApi api, int indent) {
  JsonWriter w(indent);
  w.BeginObject();
  w.Key("kind").String("APIResourceList");
  w.Key("apiVersion").String("v1");
  w.Key("groupVersion").String(ApiGroupVersion(api));
  w.Key("resources").BeginArray();
  WriteResource(w, "nodes", /*namespaced=*/false, "NodeMetrics");
  WriteResource(w, "pods", /*namespaced=*/true, "PodMetrics");
  w.EndArray();
  w.EndObject();
  return w.Take();
}

std::string RenderApiGroup(MetricsApi api, int indent) {
  JsonWriter w(indent);
  WriteGroup(w, api, /*with_type=*/true);
  return w.Take();
}

std::string RenderApiGroupList(int indent) {
  JsonWriter w(indent);
  w.BeginObject();
  w.Key("kind").String("APIGroupList");
  w.Key("apiVersion").String("v1");
  w.Key("groups").BeginArray();
  WriteGroup(w, MetricsApi::kV1, /*with_type=*/false);
  WriteGroup(w, MetricsApi::kV1alpha1, /*with_type=*/false);
  w.EndArray();
  w.EndObject();
  return w.Take();
}

std::string RenderApiVersions(int indent) {
  JsonWriter w(indent);
  w.BeginObject();
  w.Key("kind").String("APIVersions");
  w.Key("versions").BeginArray().EndArray();
  w.Key("serverAddressByClientCIDRs").BeginArray().EndArray();
  w.EndObject();
  return w.Take();
}

}  // namespace kubestat::aggregator
