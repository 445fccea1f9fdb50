#include "kubestat/metrics_api/query.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/url.h"
#include "kubestat/metrics_api/internal/usage.h"

namespace kubestat::metrics_api {
namespace {

absl::Status Named(std::string_view name, const absl::Status& status) {
  if (name.empty()) return status;
  return absl::InvalidArgumentError(absl::StrCat(AbslView(name), ": ", status.message()));
}

// The value of a field of an object (see FieldSelector's FieldLookup).
std::string_view NodeField(const NodeMetrics& node, const std::string& field) {
  if (field == kFieldMetadataName) return node.name;
  return {};  // a node has no namespace
}

std::string_view PodField(const PodMetrics& pod, const std::string& field) {
  if (field == kFieldMetadataName) return pod.name;
  if (field == kFieldMetadataNamespace) return pod.namespace_name;
  if (field == kFieldSpecNodeName) return pod.node_name;
  return {};
}

constexpr char kKeySeparator = '\0';

}  // namespace

QueryParams ParseQueryString(std::string_view query) {
  QueryParams params;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string key = PercentDecodeLenient(pair.substr(0, eq), /*plus_is_space=*/true);
    std::string value = eq == std::string_view::npos
                            ? std::string()
                            : PercentDecodeLenient(pair.substr(eq + 1), true);
    params.emplace(std::move(key), std::move(value));  // keeps the first value
  }
  return params;
}

bool PrettyRequested(const QueryParams& params) {
  auto it = params.find("pretty");
  if (it == params.end()) return false;
  // A bare "?pretty" asks for it; a value is read as Go's strconv.ParseBool reads it.
  static constexpr std::string_view kTrue[] = {"", "1", "t", "T", "true", "TRUE", "True"};
  return std::find(std::begin(kTrue), std::end(kTrue), it->second) != std::end(kTrue);
}

bool ListQuery::SelectsAll() const {
  return namespace_name.empty() && labels.Empty() && fields.Empty() && limit == 0 &&
         after.empty() && pressure == LimitPressure::kNone;
}

bool UnderPressure(const ContainerMetrics& container, LimitPressure pressure) {
  const StatisticsList& cpu = container.windows.cpu;
  const StatisticsList& memory = container.windows.memory;
  const bool memory_near = !memory.empty() && container.limits.memory &&
                           memory.back().max * 10 > *container.limits.memory * 9;
  const bool cpu_throttled =
      !cpu.empty() && container.limits.cpu && cpu.back().p95 > *container.limits.cpu;
  switch (pressure) {
    case LimitPressure::kNone:
      return false;
    case LimitPressure::kMemory:
      return memory_near;
    case LimitPressure::kCpu:
      return cpu_throttled;
    case LimitPressure::kAny:
      return memory_near || cpu_throttled;
  }
  return false;
}

bool ListQuery::Matches(const NodeMetrics& node) const {
  if (!labels.Matches(node.labels)) return false;
  if (fields.Empty()) return true;
  return fields.Matches(
      FieldLookup([&node](const std::string& field) { return NodeField(node, field); }));
}

bool ListQuery::Matches(const PodMetrics& pod) const {
  if (!namespace_name.empty() && pod.namespace_name != namespace_name) return false;
  if (!labels.Matches(pod.labels)) return false;
  if (pressure != LimitPressure::kNone &&
      std::none_of(pod.containers.begin(), pod.containers.end(),
                   [this](const ContainerMetrics& c) { return UnderPressure(c, pressure); })) {
    return false;
  }
  if (fields.Empty()) return true;
  return fields.Matches(
      FieldLookup([&pod](const std::string& field) { return PodField(pod, field); }));
}

absl::StatusOr<ListQuery> MakeListQuery(Resource resource, std::string_view namespace_name,
                                        std::string_view label_selector,
                                        std::string_view field_selector, int64_t limit,
                                        std::string_view continue_token, const FieldNames& names) {
  ListQuery query;
  query.resource = resource;
  if (resource == Resource::kPods) query.namespace_name = std::string(namespace_name);
  absl::StatusOr<LabelSelector> labels = LabelSelector::Parse(label_selector);
  if (!labels.ok()) return Named(names.label_selector, labels.status());
  absl::StatusOr<FieldSelector> fields = FieldSelector::Parse(field_selector);
  if (!fields.ok()) return Named(names.field_selector, fields.status());
  absl::Status supported =
      resource == Resource::kNodes
          ? fields->CheckSupported({kFieldMetadataName, kFieldMetadataNamespace})
          : fields->CheckSupported(
                {kFieldMetadataName, kFieldMetadataNamespace, kFieldSpecNodeName});
  if (!supported.ok()) return Named(names.field_selector, supported);
  if (limit < 0) {
    return Named(names.limit,
                 absl::InvalidArgumentError(absl::StrCat("must be zero or positive, not ", limit)));
  }
  if (!continue_token.empty()) {
    absl::StatusOr<std::string> after = DecodeContinue(continue_token);
    if (!after.ok()) return Named(names.continue_token, after.status());
    query.after = *std::move(after);
  }
  query.labels = *std::move(labels);
  query.fields = *std::move(fields);
  query.limit = static_cast<size_t>(std::min(limit, kMaxLimit));
  return query;
}

absl::StatusOr<ListQuery> ParseListQuery(const QueryParams& params, Resource resource,
                                         std::string_view namespace_name) {
  const auto value = [&params](std::string_view name) -> std::string_view {
    auto it = params.find(name);
    return it == params.end() ? std::string_view() : std::string_view(it->second);
  };
  int64_t limit = 0;
  if (std::string_view text = value("limit"); !text.empty()) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), limit);
    if (ec != std::errc() || end != text.data() + text.size()) {
      std::string shown(text.substr(0, 32));
      return absl::InvalidArgumentError(
          absl::StrCat("limit: invalid value \"", shown, "\": must be an integer"));
    }
  }
  absl::StatusOr<ListQuery> query =
      MakeListQuery(resource, namespace_name, value("labelSelector"), value("fieldSelector"), limit,
                    value("continue"), kRestFieldNames);
  if (!query.ok()) return query;
  query->indent = PrettyRequested(params) ? 2 : 0;
  if (std::string_view text = value("limitPressure"); !text.empty()) {
    if (resource != Resource::kPods) {
      return absl::InvalidArgumentError("limitPressure: only pods declare limits");
    }
    if (text == "memory") {
      query->pressure = LimitPressure::kMemory;
    } else if (text == "cpu") {
      query->pressure = LimitPressure::kCpu;
    } else if (text == "any") {
      query->pressure = LimitPressure::kAny;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("limitPressure: invalid value \"",
                                                     AbslView(text.substr(0, 32)),
                                                     "\": must be memory, cpu or any"));
    }
  }
  return query;
}

std::string ObjectKey(const NodeMetrics& node) { return node.name; }

std::string ObjectKey(const PodMetrics& pod) {
  std::string key;
  key.reserve(pod.namespace_name.size() + 1 + pod.name.size());
  key.append(pod.namespace_name).push_back(kKeySeparator);
  key.append(pod.name);
  return key;
}

std::string EncodeContinue(std::string_view key) {
  return absl::WebSafeBase64Escape(AbslView(key));
}

absl::StatusOr<std::string> DecodeContinue(std::string_view token) {
  std::string key;
  // Keys are names (at most 253 bytes) or namespace + name: a longer token is no token.
  if (token.size() > 1024 || !absl::WebSafeBase64Unescape(AbslView(token), &key) || key.empty()) {
    return absl::InvalidArgumentError(
        "invalid continue token: pass the token of the previous page as it was returned");
  }
  return key;
}

bool Servable(GroupVersion gv, const NodeMetrics& node) {
  return !IsMetricsK8sIo(gv) || node.machine.HasUsage();
}

bool Servable(GroupVersion gv, const PodMetrics& pod) {
  if (!IsMetricsK8sIo(gv)) return true;
  if (pod.containers.empty()) return false;
  return std::all_of(pod.containers.begin(), pod.containers.end(),
                     [](const ContainerMetrics& c) { return c.windows.HasUsage(); });
}

bool Fresh(GroupVersion gv, const NodeMetrics& node, Timestamp fresh_since) {
  return !IsMetricsK8sIo(gv) || fresh_since == kZeroTime || !Servable(gv, node) ||
         internal::UsageTimestamp(node.machine) >= fresh_since;
}

bool Fresh(GroupVersion gv, const PodMetrics& pod, Timestamp fresh_since) {
  return !IsMetricsK8sIo(gv) || fresh_since == kZeroTime || !Servable(gv, pod) ||
         internal::PodUsageTimestamp(pod) >= fresh_since;
}

std::vector<PodRef> RefsTo(std::span<const std::shared_ptr<const PodMetrics>> pods) {
  std::vector<PodRef> refs;
  refs.reserve(pods.size());
  for (const std::shared_ptr<const PodMetrics>& pod : pods) refs.emplace_back(pod);
  return refs;
}

Timestamp NewestUsage(std::span<const std::shared_ptr<const NodeMetrics>> nodes) {
  Timestamp newest = kZeroTime;
  for (const std::shared_ptr<const NodeMetrics>& node : nodes) {
    if (node->machine.HasUsage())
      newest = std::max(newest, internal::UsageTimestamp(node->machine));
  }
  return newest;
}

}  // namespace kubestat::metrics_api
