#include "kubestat/scrapers/resource_metrics_decoder.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "kubestat/core/str_cat.h"

namespace kubestat::scrapers {
namespace {

// The series kubestat reads; everything else is parsed for syntax and skipped.
enum class Metric {
  kUnknown,
  kNodeCpu,
  kNodeMemory,
  kNodeSwap,
  kContainerCpu,
  kContainerMemory,
  kContainerSwap,
  kContainerStartTime,
  kPodCpu,
  kPodMemory,
  kPodSwap,
  kScrapeError,
};

Metric MetricFromName(std::string_view name) {
  if (name.starts_with("container_")) {
    if (name == "container_cpu_usage_seconds_total") return Metric::kContainerCpu;
    if (name == "container_memory_working_set_bytes") return Metric::kContainerMemory;
    if (name == "container_start_time_seconds") return Metric::kContainerStartTime;
    if (name == "container_swap_usage_bytes") return Metric::kContainerSwap;
  } else if (name.starts_with("pod_")) {
    if (name == "pod_cpu_usage_seconds_total") return Metric::kPodCpu;
    if (name == "pod_memory_working_set_bytes") return Metric::kPodMemory;
    if (name == "pod_swap_usage_bytes") return Metric::kPodSwap;
  } else if (name.starts_with("node_")) {
    if (name == "node_cpu_usage_seconds_total") return Metric::kNodeCpu;
    if (name == "node_memory_working_set_bytes") return Metric::kNodeMemory;
    if (name == "node_swap_usage_bytes") return Metric::kNodeSwap;
  } else if (name == "scrape_error" || name == "resource_scrape_error") {
    return Metric::kScrapeError;
  }
  return Metric::kUnknown;
}

// 2^63: above it no counter, byte count or time is plausible (a uint64 underflow lands
// just below 2^64).
constexpr double kMaxValue = 9223372036854775808.0;
constexpr double kNanosPerSecond = 1e9;
// |milliseconds| beyond this overflow int64 nanoseconds.
constexpr int64_t kMaxTimestampMillis = std::numeric_limits<int64_t>::max() / 1'000'000;

bool IsMetricNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool IsMetricNameChar(char c) { return IsMetricNameStart(c) || (c >= '0' && c <= '9'); }
bool IsLabelNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool IsLabelNameChar(char c) { return IsLabelNameStart(c) || (c >= '0' && c <= '9'); }
bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// A Prometheus float: Go's ParseFloat forms, including "NaN", "+Inf", "-Inf" and a leading
// '+'. std::nullopt when `token` is not a number.
std::optional<double> ParseFloat(std::string_view token) {
  if (token.empty()) return std::nullopt;
  bool negative = false;
  if (token.front() == '+' || token.front() == '-') {
    negative = token.front() == '-';
    token.remove_prefix(1);
    if (token.empty() || token.front() == '+' || token.front() == '-') return std::nullopt;
  }
  double value = 0;
  const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (end != token.data() + token.size()) return std::nullopt;
  if (error == std::errc::result_out_of_range) {
    // Overflow or underflow: the magnitude is all that matters for the range checks.
    const size_t exponent = token.find_first_of("eE");
    const bool tiny =
        exponent != std::string_view::npos ? token[exponent + 1] == '-' : token.front() == '0';
    value = tiny ? 0.0 : std::numeric_limits<double>::infinity();
  } else if (error != std::errc()) {
    return std::nullopt;
  }
  return negative ? -value : value;
}

// One parsed sample line. Views point into the payload or into the parser's scratch buffers.
struct SampleLine {
  std::string_view name;
  std::string_view container;
  std::string_view namespace_name;
  std::string_view pod;
  bool has_container = false;
  bool has_namespace = false;
  bool has_pod = false;
  double value = 0;
  std::optional<int64_t> timestamp_ms;
};

// Reads one line of exposition syntax. Label values with escapes are unescaped into
// per-label scratch strings that keep their capacity across lines.
class LineParser {
 public:
  // Parses `line` (no line terminator). Returns an empty string on success, otherwise what
  // is wrong.
  std::string_view Parse(std::string_view line, SampleLine* out) {
    *out = SampleLine{};
    size_t pos = 0;
    const size_t n = line.size();
    while (pos < n && IsBlank(line[pos])) ++pos;
    if (pos == n || !IsMetricNameStart(line[pos])) return "expected a metric name";
    const size_t name_start = pos;
    while (pos < n && IsMetricNameChar(line[pos])) ++pos;
    out->name = line.substr(name_start, pos - name_start);
    while (pos < n && IsBlank(line[pos])) ++pos;
    if (pos < n && line[pos] == '{') {
      ++pos;
      if (std::string_view error = ParseLabels(line, &pos, out); !error.empty()) return error;
      while (pos < n && IsBlank(line[pos])) ++pos;
    }
    // Value.
    const size_t value_start = pos;
    while (pos < n && !IsBlank(line[pos])) ++pos;
    if (value_start == pos) return "expected a value";
    std::optional<double> value = ParseFloat(line.substr(value_start, pos - value_start));
    if (!value.has_value()) return "the value is not a number";
    out->value = *value;
    while (pos < n && IsBlank(line[pos])) ++pos;
    if (pos == n) return {};
    // Timestamp (milliseconds).
    const size_t ts_start = pos;
    while (pos < n && !IsBlank(line[pos])) ++pos;
    int64_t timestamp = 0;
    const auto [end, error] = std::from_chars(line.data() + ts_start, line.data() + pos, timestamp);
    if (end != line.data() + pos) return "the timestamp is not an integer";
    if (error == std::errc::result_out_of_range) {
      // Recorded as a bad timestamp for this series rather than a syntax error.
      timestamp = line[ts_start] == '-' ? std::numeric_limits<int64_t>::min()
                                        : std::numeric_limits<int64_t>::max();
    } else if (error != std::errc()) {
      return "the timestamp is not an integer";
    }
    out->timestamp_ms = timestamp;
    while (pos < n && IsBlank(line[pos])) ++pos;
    if (pos != n) return "unexpected text after the timestamp";
    return {};
  }

 private:
  std::string_view ParseLabels(std::string_view line, size_t* pos_in, SampleLine* out) {
    size_t pos = *pos_in;
    const size_t n = line.size();
    while (true) {
      while (pos < n && IsBlank(line[pos])) ++pos;
      if (pos == n) return "unterminated label set";
      if (line[pos] == '}') {
        ++pos;
        break;
      }
      if (!IsLabelNameStart(line[pos])) return "expected a label name";
      const size_t label_start = pos;
      while (pos < n && IsLabelNameChar(line[pos])) ++pos;
      const std::string_view label = line.substr(label_start, pos - label_start);
      while (pos < n && IsBlank(line[pos])) ++pos;
      if (pos == n || line[pos] != '=') return "expected '=' after a label name";
      ++pos;
      while (pos < n && IsBlank(line[pos])) ++pos;
      if (pos == n || line[pos] != '"') return "expected a quoted label value";
      ++pos;
      const size_t value_start = pos;
      bool escaped = false;
      while (pos < n && line[pos] != '"') {
        if (line[pos] == '\\') {
          escaped = true;
          ++pos;  // the escaped character, whatever it is
          if (pos == n) break;
        }
        ++pos;
      }
      if (pos >= n) return "unterminated label value";
      std::string_view value = line.substr(value_start, pos - value_start);
      ++pos;  // closing quote
      std::string* scratch = nullptr;
      std::string_view* slot = nullptr;
      if (label == "container") {
        slot = &out->container;
        out->has_container = true;
        scratch = &container_scratch_;
      } else if (label == "namespace") {
        slot = &out->namespace_name;
        out->has_namespace = true;
        scratch = &namespace_scratch_;
      } else if (label == "pod") {
        slot = &out->pod;
        out->has_pod = true;
        scratch = &pod_scratch_;
      }
      if (slot != nullptr) *slot = escaped ? Unescape(value, scratch) : value;
      while (pos < n && IsBlank(line[pos])) ++pos;
      if (pos < n && line[pos] == ',') {
        ++pos;
      } else if (pos < n && line[pos] != '}') {
        return "expected ',' or '}' after a label value";
      }
    }
    *pos_in = pos;
    return {};
  }

  // \" → ", \\ → \, \n → newline; any other escape is kept as written (as Prometheus does).
  static std::string_view Unescape(std::string_view raw, std::string* scratch) {
    scratch->clear();
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '\\' && i + 1 < raw.size()) {
        const char next = raw[i + 1];
        if (next == '"' || next == '\\') {
          scratch->push_back(next);
          ++i;
          continue;
        }
        if (next == 'n') {
          scratch->push_back('\n');
          ++i;
          continue;
        }
      }
      scratch->push_back(raw[i]);
    }
    return *scratch;
  }

  std::string container_scratch_;
  std::string namespace_scratch_;
  std::string pod_scratch_;
};

// Builds the NodeScrape, finding pods by namespace/name through a hash index so a 110-pod
// payload stays linear.
class ScrapeBuilder {
 public:
  ScrapeBuilder(NodeScrape* out, Timestamp scrape_time) : out_(out), scrape_time_(scrape_time) {}

  void Add(const SampleLine& sample, size_t line_number, Metric metric) {
    line_number_ = line_number;
    sample_ = &sample;
    if (metric == Metric::kScrapeError) {
      if (sample.value != 0) {
        Issue(DecodeIssueKind::kKubeletScrapeError,
              "the kubelet reports it failed to collect some stats");
      }
      return;
    }
    std::optional<Timestamp> time = SampleTime();
    switch (metric) {
      case Metric::kNodeCpu:
        SetCpu(&out_->cpu, time);
        return;
      case Metric::kNodeMemory:
        SetBytes(&out_->memory, time);
        return;
      case Metric::kNodeSwap:
        SetBytes(&out_->swap, time);
        return;
      case Metric::kPodCpu:
      case Metric::kPodMemory:
      case Metric::kPodSwap: {
        PodScrape* pod = FindOrAddPod();
        if (pod == nullptr) return;
        if (metric == Metric::kPodCpu) SetCpu(&pod->cpu, time);
        if (metric == Metric::kPodMemory) SetBytes(&pod->memory, time);
        if (metric == Metric::kPodSwap) SetBytes(&pod->swap, time);
        return;
      }
      case Metric::kContainerCpu:
      case Metric::kContainerMemory:
      case Metric::kContainerSwap:
      case Metric::kContainerStartTime: {
        ContainerScrape* container = FindOrAddContainer();
        if (container == nullptr) return;
        if (metric == Metric::kContainerCpu) SetCpu(&container->cpu, time);
        if (metric == Metric::kContainerMemory) SetBytes(&container->memory, time);
        if (metric == Metric::kContainerSwap) SetBytes(&container->swap, time);
        if (metric == Metric::kContainerStartTime) SetStartTime(&container->start_time);
        return;
      }
      case Metric::kScrapeError:
      case Metric::kUnknown:
        return;
    }
  }

 private:
  void Issue(DecodeIssueKind kind, std::string_view what) {
    const SampleLine& s = *sample_;
    std::string series(s.name);
    if (s.has_namespace || s.has_pod || s.has_container) {
      series += StrCat("{");
      if (s.has_container) series += StrCat("container=\"", s.container, "\",");
      if (s.has_namespace) series += StrCat("namespace=\"", s.namespace_name, "\",");
      if (s.has_pod) series += StrCat("pod=\"", s.pod, "\",");
      series.back() = '}';
    }
    out_->issues.Add(kind, StrCat("line ", line_number_, ": ", series, ": ", what));
  }

  std::optional<Timestamp> SampleTime() {
    if (!sample_->timestamp_ms.has_value()) return scrape_time_;
    const int64_t ms = *sample_->timestamp_ms;
    if (ms > kMaxTimestampMillis || ms < -kMaxTimestampMillis) {
      Issue(DecodeIssueKind::kBadTimestamp, "timestamp out of range");
      return std::nullopt;
    }
    return Timestamp(std::chrono::milliseconds(ms));
  }

  // `value` scaled by `scale`, rounded; nullopt (recorded) when absurd.
  std::optional<uint64_t> Checked(double scale) {
    const double value = sample_->value;
    const double scaled = value * scale;
    if (std::isnan(value) || value < 0 || !(scaled <= kMaxValue)) {
      Issue(DecodeIssueKind::kAbsurdValue,
            StrCat("value ", value, " is negative, not finite or above 2^63"));
      return std::nullopt;
    }
    return static_cast<uint64_t>(std::nearbyint(scaled));
  }

  template <typename Sample>
  bool Duplicate(const std::optional<Sample>& slot) {
    if (!slot.has_value()) return false;
    Issue(DecodeIssueKind::kDuplicate, "series repeated; first kept");
    return true;
  }

  void SetCpu(std::optional<CpuSample>* slot, std::optional<Timestamp> time) {
    if (!time.has_value() || Duplicate(*slot)) return;
    std::optional<uint64_t> nanos = Checked(kNanosPerSecond);
    if (!nanos.has_value()) return;
    *slot = CpuSample{.time = *time, .usage_core_nanoseconds = nanos};
  }

  template <typename Sample>
  void SetBytes(std::optional<Sample>* slot, std::optional<Timestamp> time) {
    if (!time.has_value() || Duplicate(*slot)) return;
    std::optional<uint64_t> bytes = Checked(1.0);
    if (!bytes.has_value()) return;
    Sample sample{};
    sample.time = *time;
    if constexpr (std::is_same_v<Sample, MemorySample>) {
      sample.working_set_bytes = bytes;
    } else {
      sample.usage_bytes = bytes;
    }
    *slot = sample;
  }

  void SetStartTime(std::optional<Timestamp>* slot) {
    if (slot->has_value()) {
      Issue(DecodeIssueKind::kDuplicate, "series repeated; first kept");
      return;
    }
    const double seconds = sample_->value;
    // Nanoseconds since the epoch must fit int64: about year 2262.
    if (std::isnan(seconds) || seconds < 0 || !(seconds < 9.2e9)) {
      Issue(DecodeIssueKind::kAbsurdValue,
            StrCat("start time ", seconds, " is not a plausible Unix time"));
      return;
    }
    // Whole and fractional seconds apart, so whole-second start times stay exact.
    const double whole = std::floor(seconds);
    const int64_t nanos = static_cast<int64_t>(whole) * 1'000'000'000 +
                          static_cast<int64_t>(std::nearbyint((seconds - whole) * 1e9));
    *slot = Timestamp(std::chrono::nanoseconds(nanos));
  }

  PodScrape* FindOrAddPod() {
    const SampleLine& s = *sample_;
    if (s.namespace_name.empty() || s.pod.empty()) {
      Issue(DecodeIssueKind::kMissingField, "missing namespace or pod label");
      return nullptr;
    }
    const size_t hash =
        std::hash<std::string_view>{}(s.namespace_name) * 31 + std::hash<std::string_view>{}(s.pod);
    auto it = pod_index_.find(hash);
    if (it != pod_index_.end()) {
      PodScrape& pod = out_->pods[it->second];
      if (pod.namespace_name == s.namespace_name && pod.name == s.pod) return &pod;
      // A hash collision: fall back to a scan (never seen in practice).
      for (PodScrape& other : out_->pods) {
        if (other.namespace_name == s.namespace_name && other.name == s.pod) return &other;
      }
    }
    PodScrape& pod = out_->pods.emplace_back();
    pod.namespace_name.assign(s.namespace_name);
    pod.name.assign(s.pod);
    if (it == pod_index_.end()) pod_index_.emplace(hash, out_->pods.size() - 1);
    return &pod;
  }

  ContainerScrape* FindOrAddContainer() {
    const SampleLine& s = *sample_;
    if (s.container.empty()) {
      Issue(DecodeIssueKind::kMissingField, "missing container label");
      return nullptr;
    }
    PodScrape* pod = FindOrAddPod();
    if (pod == nullptr) return nullptr;
    for (ContainerScrape& container : pod->containers) {
      if (container.name == s.container) return &container;
    }
    ContainerScrape& container = pod->containers.emplace_back();
    container.name.assign(s.container);
    return &container;
  }

  NodeScrape* out_;
  Timestamp scrape_time_;
  std::unordered_map<size_t, size_t> pod_index_;
  const SampleLine* sample_ = nullptr;
  size_t line_number_ = 0;
};

}  // namespace

absl::StatusOr<NodeScrape> DecodeResourceMetrics(std::string_view text, std::string_view node_name,
                                                 Timestamp scrape_time) {
  NodeScrape scrape;
  scrape.format = ScrapeFormat::kResourceMetrics;
  scrape.node_name.assign(node_name);
  ScrapeBuilder builder(&scrape, scrape_time);
  LineParser parser;
  SampleLine sample;
  size_t line_number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t first = 0;
    while (first < line.size() && IsBlank(line[first])) ++first;
    if (first == line.size()) continue;
    if (line[first] == '#') {
      if (line.substr(first) == "# EOF") break;
      continue;
    }
    if (std::string_view error = parser.Parse(line, &sample); !error.empty()) {
      return absl::InvalidArgumentError(StrCat("kubelet /metrics/resource line ", line_number, ": ",
                                               error, ": ", line.substr(0, 200)));
    }
    const Metric metric = MetricFromName(sample.name);
    if (metric == Metric::kUnknown) continue;
    builder.Add(sample, line_number, metric);
  }
  return scrape;
}

}  // namespace kubestat::scrapers
