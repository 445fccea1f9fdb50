// The value one scrape of one node yields, whichever kubelet endpoint it came from.
//
// A NodeScrape is produced by DecodeSummary (kubelet /stats/summary) or
// DecodeResourceMetrics (kubelet /metrics/resource) and consumed by the scrape loop and the
// store. It is a plain value: it owns all of its strings, holds no references into the
// payload it was decoded from, and is safe to move between threads (not to mutate from two
// threads at once).
//
// Units: cpu as cumulative core-nanoseconds (`usage_core_nanoseconds`, a counter since the
// object started) and, from the summary only, instantaneous nano-cores; memory as working
// set bytes; times as wall-clock nanoseconds since the Unix epoch (kubestat::Timestamp).
//
// Absence is explicit: a field the kubelet did not send, sent as null, or sent with a value
// that was rejected is std::nullopt, never zero. A zero is a zero the kubelet reported.
// Values rejected while decoding are counted in NodeScrape::issues, so the scrape loop can
// export them as counters without failing the whole node.
#ifndef KUBESTAT_SCRAPERS_NODE_SCRAPE_H_
#define KUBESTAT_SCRAPERS_NODE_SCRAPE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kubestat/core/clock.h"

namespace kubestat::scrapers {

// One cpu reading. `time` is when the kubelet took it.
struct CpuSample {
  Timestamp time{};
  // Cumulative cpu time in core-nanoseconds since the object started.
  std::optional<uint64_t> usage_core_nanoseconds{};
  // Instantaneous usage in nano-cores (1e9 = one core), averaged by the kubelet over its
  // own housekeeping interval. Only the summary reports it.
  std::optional<uint64_t> usage_nano_cores{};

  friend bool operator==(const CpuSample&, const CpuSample&) = default;
};

// One memory reading. `time` is when the kubelet took it.
struct MemorySample {
  Timestamp time{};
  // Working set in bytes (what the kubelet and the eviction manager use).
  std::optional<uint64_t> working_set_bytes{};

  friend bool operator==(const MemorySample&, const MemorySample&) = default;
};

// One swap reading (newer kubelets only). `time` is when the kubelet took it.
struct SwapSample {
  Timestamp time{};
  // Swap in use, in bytes.
  std::optional<uint64_t> usage_bytes{};

  friend bool operator==(const SwapSample&, const SwapSample&) = default;
};

// A container of a pod, or a system container of the node ("kubelet", "runtime", "pods",
// "misc", …).
struct ContainerScrape {
  std::string name{};
  // When the container (this instance of it) started; a change means it restarted.
  std::optional<Timestamp> start_time{};
  std::optional<CpuSample> cpu{};
  std::optional<MemorySample> memory{};
  std::optional<SwapSample> swap{};

  friend bool operator==(const ContainerScrape&, const ContainerScrape&) = default;
};

// A pod on the node. `cpu` and `memory` are the pod-level values as the kubelet reports them
// (its cgroup, which includes overhead); kubestat stores its own sum of the containers.
struct PodScrape {
  std::string name{};
  std::string namespace_name{};
  // The pod's metadata.uid; empty when the format does not carry it (/metrics/resource).
  std::string uid{};
  std::optional<Timestamp> start_time{};
  std::vector<ContainerScrape> containers{};
  std::optional<CpuSample> cpu{};
  std::optional<MemorySample> memory{};
  std::optional<SwapSample> swap{};

  friend bool operator==(const PodScrape&, const PodScrape&) = default;
};

// Which kubelet endpoint a scrape was decoded from.
enum class ScrapeFormat {
  kSummary,          // GET /stats/summary (JSON)
  kResourceMetrics,  // GET /metrics/resource (Prometheus text 0.0.4)
};

// Why a value was rejected (or a problem noted) while decoding. Stable: the names returned
// by DecodeIssueKindName are used as metric label values.
enum class DecodeIssueKind {
  kAbsurdValue = 0,     // negative, NaN, infinite, or above 2^63 (e.g. a uint64 underflow)
  kWrongType,           // e.g. a string where a number was expected
  kBadTimestamp,        // unparseable or out-of-range time
  kMissingField,        // a required field (a name, a pod reference) absent or empty
  kDuplicate,           // the same series twice in one payload; the first one is kept
  kKubeletScrapeError,  // the kubelet itself reported it failed to collect stats
};
inline constexpr size_t kDecodeIssueKindCount = 6;

// "absurd_value", "wrong_type", "bad_timestamp", "missing_field", "duplicate",
// "kubelet_scrape_error".
std::string_view DecodeIssueKindName(DecodeIssueKind kind);

// Counts of values rejected while decoding one payload, per kind, with a short
// human-readable message for the first few (e.g. `pod kube-system/coredns container
// "coredns": cpu.usageCoreNanoSeconds: negative value -1`).
class DecodeIssues {
 public:
  // At most this many messages are kept; counts are always complete.
  static constexpr size_t kMaxMessages = 8;

  void Add(DecodeIssueKind kind, std::string message);

  uint64_t Count(DecodeIssueKind kind) const { return counts_[static_cast<size_t>(kind)]; }
  uint64_t Total() const;
  bool empty() const { return Total() == 0; }
  // The first kMaxMessages messages, in the order they were added.
  const std::vector<std::string>& messages() const { return messages_; }
  // The messages joined with "; ", for logs.
  std::string Summary() const;

  friend bool operator==(const DecodeIssues&, const DecodeIssues&) = default;

 private:
  std::array<uint64_t, kDecodeIssueKindCount> counts_{};
  std::vector<std::string> messages_;
};

// Everything one scrape of one node yields.
struct NodeScrape {
  std::string node_name{};
  std::optional<Timestamp> start_time{};
  std::optional<CpuSample> cpu{};
  std::optional<MemorySample> memory{};
  std::optional<SwapSample> swap{};
  // The node's system containers (summary only): "kubelet", "runtime", "pods", "misc", …
  std::vector<ContainerScrape> system_containers{};
  std::vector<PodScrape> pods{};
  ScrapeFormat format = ScrapeFormat::kSummary;
  DecodeIssues issues{};

  // Number of pod containers (not system containers) over all pods.
  size_t ContainerCount() const;
  // The pod with this namespace and name, or nullptr. Linear scan.
  const PodScrape* FindPod(std::string_view namespace_name, std::string_view name) const;

  friend bool operator==(const NodeScrape&, const NodeScrape&) = default;
};

// The container with this name in `containers`, or nullptr. Linear scan.
const ContainerScrape* FindContainer(const std::vector<ContainerScrape>& containers,
                                     std::string_view name);

}  // namespace kubestat::scrapers

#endif  // KUBESTAT_SCRAPERS_NODE_SCRAPE_H_
