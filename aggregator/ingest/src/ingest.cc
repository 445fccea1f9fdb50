#include "kubestat/aggregator/ingest/ingest.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ingest_sample_cache.h"
#include "kubestat/aggregator/ingest/series_registry.h"
#include "kubestat/core/log.h"
#include "kubestat/core/thread.h"
#include "kubestat/core/time.h"
#include "kubestat/windows/usage_histogram.h"

namespace kubestat::aggregator {

using internal::IngestSampleCache;
using scrapers::ContainerScrape;
using scrapers::CpuSample;
using scrapers::NodeScrape;
using storage::NodeId;
using storage::SeriesId;
using windows::UsageHistogram;

namespace {

// The previous reading of a cumulative cpu counter.
struct CpuCounter {
  Timestamp time{};
  uint64_t value = 0;
  std::optional<Timestamp> start;
};

struct SeriesState {
  SeriesId id = 0;
  Timestamp newest{};  // time of the newest stored sample
  // The series in the shard's engine, found by the last ingest. The engine's series leaves
  // only with this state (retired, its pod or node deleted) or through that ingest's error.
  windows::WindowEngine::SeriesHandle engine;
};

using PodName = std::pair<std::string, std::string>;  // namespace, name

// The rate between two readings, or nullopt (first reading, reset, restart, stale).
std::optional<uint64_t> CpuRate(const CpuCounter* previous, const std::optional<CpuSample>& cpu,
                                const std::optional<Timestamp>& start, Timestamp at,
                                std::optional<CpuCounter>* next, bool* reset) {
  if (!cpu || !cpu->usage_core_nanoseconds) {
    // No reading this step: keep the previous one, the next rate spans the gap.
    if (previous) *next = *previous;
    return std::nullopt;
  }
  CpuCounter current{cpu->time == Timestamp{} ? at : cpu->time, *cpu->usage_core_nanoseconds,
                     start};
  if (previous == nullptr) {
    *next = current;
    return std::nullopt;
  }
  if ((previous->start && start && *previous->start != *start) || current.value < previous->value) {
    *reset = true;
    *next = current;
    return std::nullopt;
  }
  if (current.time <= previous->time) {
    *next = *previous;  // the same (cached) reading again
    return std::nullopt;
  }
  const auto dt = static_cast<unsigned __int128>(Nanos(current.time) - Nanos(previous->time));
  const unsigned __int128 rate =
      (static_cast<unsigned __int128>(current.value - previous->value) * 1000000000u + dt / 2) / dt;
  *next = current;
  return rate > std::numeric_limits<uint64_t>::max() ? std::numeric_limits<uint64_t>::max()
                                                     : static_cast<uint64_t>(rate);
}

uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}

bool IsPodSeries(const windows::SeriesKey& k) {
  return k.kind == windows::ObjectKind::kPod || k.kind == windows::ObjectKind::kContainer;
}

std::optional<Timestamp> ScrapeTime(const NodeScrape& scrape) {
  if (scrape.cpu && scrape.cpu->time != Timestamp{}) return scrape.cpu->time;
  if (scrape.memory && scrape.memory->time != Timestamp{}) return scrape.memory->time;
  std::optional<Timestamp> newest;
  auto consider = [&](const ContainerScrape& c) {
    if (c.cpu && c.cpu->time != Timestamp{})
      newest = std::max(newest.value_or(c.cpu->time), c.cpu->time);
    if (c.memory && c.memory->time != Timestamp{}) {
      newest = std::max(newest.value_or(c.memory->time), c.memory->time);
    }
  };
  for (const ContainerScrape& c : scrape.system_containers) consider(c);
  for (const auto& pod : scrape.pods) {
    for (const ContainerScrape& c : pod.containers) consider(c);
  }
  return newest;
}

// The usage histogram of a container series' closed bucket: the right-sizing history,
// kept longer than the rollups under the pod's workload (workload_history.h).
void PutUsageHistory(const windows::SeriesKey& key, const PodWorkloads* workloads, SeriesId id,
                     Timestamp bucket_start, std::span<const windows::Sample> samples,
                     storage::ScrapeBatch* batch) {
  if (key.kind != windows::ObjectKind::kContainer || samples.empty()) return;
  UsageHistogram histogram;
  for (const windows::Sample& s : samples) histogram.Add(s.value);
  const std::string owner =
      HistoryOwner(key.pod_namespace, HistoryWorkload(workloads, key.pod_namespace, key.pod),
                   key.container, key.resource);
  batch->PutHistory(owner, id, bucket_start, histogram.Serialize());
}

// A rollup read by Rebuild(): where its bytes are in RebuildScratch::rollup_bytes.
struct StoredRollup {
  SeriesId id = 0;
  size_t offset = 0;
  size_t size = 0;
};

}  // namespace

// What one rebuild thread reuses from node to node.
struct Ingestor::RestoreScratch {
  IngestSampleCache cache;
  std::string rollup_bytes;
  std::vector<StoredRollup> rollups;          // by series id, then bucket start
  std::vector<windows::BucketRollup> parsed;  // of the series being restored
};

// The shape of a node's last scrape, so that the next one with the same objects in the
// same order (the common case: a kubelet reports the same pods scrape after scrape) is
// ingested without building, sorting or looking up series keys. Two series per object
// (cpu, then memory), objects in ForEachObject's order. Built after a scrape that skipped
// nothing; dropped whenever the node's series change outside IngestAt (DeletePod).
// While a node has one, its cpu counters live here (`counters`), not in NodeState::counters.
struct ScrapeLayout {
  std::vector<const windows::SeriesKey*> keys;  // per series: into NodeState::series or `own_keys`
  std::vector<SeriesState*> states;             // per series: null until it has a stored sample
  std::vector<std::optional<CpuCounter>> counters;  // per object (unused for pods)
  std::vector<uint32_t> order;                      // series indices in key order
  std::deque<windows::SeriesKey> own_keys;          // keys of series without a stored sample
  size_t own_keys_in_use = 0;                       // of `own_keys`, those `keys` still points to
  size_t system_containers = 0;
  size_t pods = 0;

  size_t objects() const { return keys.size() / 2; }
  windows::ObjectKind Kind(size_t object) const { return keys[2 * object]->kind; }

  // Whether `scrape` has exactly these objects, in this order.
  bool Matches(const NodeScrape& scrape) const {
    if (scrape.system_containers.size() != system_containers || scrape.pods.size() != pods) {
      return false;
    }
    size_t object = 1;
    for (const ContainerScrape& c : scrape.system_containers) {
      if (keys[2 * object]->container != c.name) return false;
      ++object;
    }
    for (const scrapers::PodScrape& pod : scrape.pods) {
      for (const ContainerScrape& c : pod.containers) {
        if (object >= objects() || Kind(object) != windows::ObjectKind::kContainer) return false;
        const windows::SeriesKey& key = *keys[2 * object];
        if (key.container != c.name || key.pod != pod.name ||
            key.pod_namespace != pod.namespace_name) {
          return false;
        }
        ++object;
      }
      if (object >= objects() || Kind(object) != windows::ObjectKind::kPod) return false;
      const windows::SeriesKey& key = *keys[2 * object];
      if (key.pod != pod.name || key.pod_namespace != pod.namespace_name) return false;
      ++object;
    }
    return object == objects();
  }

  size_t HeapBytes() const {
    // keys and states hold pointers.
    size_t bytes = (keys.capacity() + states.capacity()) * sizeof(void*) +
                   counters.capacity() * sizeof(decltype(counters)::value_type) +
                   order.capacity() * sizeof(decltype(order)::value_type);
    for (const windows::SeriesKey& key : own_keys) {
      bytes += sizeof(windows::SeriesKey) + key.node.capacity() + key.pod_namespace.capacity() +
               key.pod.capacity() + key.container.capacity();
    }
    return bytes;
  }
};

struct NodeState {
  NodeId id = 0;
  bool persisted = false;  // the node's dictionary entry is in the store
  // The store's SalvageEpoch() when the node's and its series' entries were put and its
  // chain started: behind it, a salvage may have lost them, and they are put (and the
  // chain started) again.
  uint64_t salvage_epoch = 0;
  bool has_scrape = false;
  Timestamp last_scrape{};
  std::map<windows::SeriesKey, SeriesState> series;  // live series with at least one stored sample
  std::unordered_map<windows::SeriesKey, CpuCounter, windows::SeriesKeyHash>
      counters;                          // by cpu key
  std::set<PodName> pods;                // pods in the last scrape
  std::set<PodName> deleted_pods;        // deleted by DeletePod, ignored until they disappear
  std::unique_ptr<ScrapeLayout> layout;  // of the last scrape, when it can be reused
  storage::ScrapeChain chain;            // the node's newest stored blob
  // The store's LossGeneration() its windows agree with: when the store dropped writes it
  // kept in memory, the windows are restored again from what it holds.
  uint64_t loss_generation = 0;
};

struct Ingestor::Shard {
  mutable std::mutex mu;
  std::unique_ptr<windows::WindowEngine> engine;
  std::map<std::string, NodeState, std::less<>> nodes;
};

struct Ingestor::Counters {
  std::atomic<uint64_t> scrapes{0};
  std::atomic<uint64_t> scrapes_rejected{0};
  std::atomic<uint64_t> store_errors{0};
  std::atomic<uint64_t> engine_errors{0};
  std::atomic<uint64_t> samples{0};
  std::atomic<uint64_t> series_created{0};
  std::atomic<uint64_t> series_retired{0};
  std::atomic<uint64_t> rollups_written{0};
  std::atomic<uint64_t> counter_resets{0};
  std::atomic<uint64_t> layout_reuses{0};
  std::atomic<uint64_t> rebuilt_series{0};
  std::atomic<uint64_t> rebuild_errors{0};
  std::atomic<uint64_t> rebuild_damaged_reads{0};
  std::atomic<uint64_t> restores_after_loss{0};
  std::atomic<int64_t> rebuild_nanos{0};
  std::mutex unrestored_mu;  // guards unrestored
  std::vector<std::string> unrestored;

  // Counts a series Rebuild() could not restore, naming it (the first kMaxUnrestoredNamed).
  void Unrestored(std::string what) {
    rebuild_errors.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(unrestored_mu);
    if (unrestored.size() < kMaxUnrestoredNamed) unrestored.push_back(std::move(what));
  }
};

absl::Status IngestOptions::Validate() const {
  if (absl::Status s = engine.Validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("engine.", s.message()));
  }
  if (shards < 1 || shards > 1024)
    return absl::InvalidArgumentError("shards: must be in [1, 1024]");
  if (rebuild_threads < 1 || rebuild_threads > 64) {
    return absl::InvalidArgumentError("rebuild_threads: must be in [1, 64]");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Ingestor>> Ingestor::Create(IngestOptions options,
                                                           storage::Store* store, Clock* clock,
                                                           const PodWorkloads* workloads) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (store == nullptr || clock == nullptr) {
    return absl::InvalidArgumentError("Ingestor needs a store and a clock");
  }
  std::unique_ptr<Ingestor> ingestor(new Ingestor(std::move(options), store, clock, workloads));
  for (size_t i = 0; i < ingestor->options_.shards; ++i) {
    auto shard = std::make_unique<Shard>();
    auto engine = windows::WindowEngine::Create(ingestor->options_.engine);
    if (!engine.ok()) return engine.status();
    shard->engine = std::move(*engine);
    ingestor->shards_.push_back(std::move(shard));
  }
  return ingestor;
}

Ingestor::Ingestor(IngestOptions options, storage::Store* store, Clock* clock,
                   const PodWorkloads* workloads)
    : options_(std::move(options)),
      store_(store),
      clock_(clock),
      workloads_(workloads),
      counters_(std::make_unique<Counters>()) {}

Ingestor::~Ingestor() = default;

Ingestor::Shard& Ingestor::ShardOf(std::string_view node) const {
  return *shards_[std::hash<std::string_view>{}(node) % shards_.size()];
}

absl::Status Ingestor::Ingest(const NodeScrape& scrape) {
  const std::optional<Timestamp> time = ScrapeTime(scrape);
  if (!time) {
    counters_->scrapes_rejected.fetch_add(1, std::memory_order_relaxed);
    return absl::InvalidArgumentError(
        absl::StrCat("scrape of node \"", scrape.node_name, "\" carries no timestamp"));
  }
  return IngestAt(scrape, *time);
}

namespace {

// The objects of a scrape as IngestAt reads them: the node, its system containers, then
// each pod's containers followed by the pod itself (whose readings are their sums). Calls
// `visit(object)` in that order with the scrape entry (null for a pod's own object) and
// the names; returns false when an entry is skipped (an empty or repeated name, a pod
// deleted by DeletePod): such a scrape has no reusable layout.
template <typename Visit>
bool ForEachObject(const NodeScrape& scrape, const std::set<PodName>& deleted_pods,
                   std::set<PodName>* present, Visit&& visit) {
  bool clean = true;
  visit(windows::ObjectKind::kNode, nullptr, std::string_view(), std::string_view(),
        std::string_view(), static_cast<const ContainerScrape*>(nullptr));
  std::set<std::string_view> seen_system;
  for (const ContainerScrape& c : scrape.system_containers) {
    if (c.name.empty() || !seen_system.insert(c.name).second) {
      clean = false;
      continue;
    }
    visit(windows::ObjectKind::kSystemContainer, nullptr, std::string_view(), std::string_view(),
          std::string_view(c.name), &c);
  }
  for (const scrapers::PodScrape& pod : scrape.pods) {
    if (pod.name.empty() || pod.namespace_name.empty()) {
      clean = false;
      continue;
    }
    PodName pod_name{pod.namespace_name, pod.name};
    if (!present->insert(pod_name).second || deleted_pods.contains(pod_name)) {
      clean = false;  // a duplicate (the first one counts), or deleted
      continue;
    }
    std::set<std::string_view> seen;
    for (const ContainerScrape& c : pod.containers) {
      if (c.name.empty() || !seen.insert(c.name).second) {
        clean = false;
        continue;
      }
      visit(windows::ObjectKind::kContainer, &pod, std::string_view(pod.namespace_name),
            std::string_view(pod.name), std::string_view(c.name), &c);
    }
    visit(windows::ObjectKind::kPod, &pod, std::string_view(pod.namespace_name),
          std::string_view(pod.name), std::string_view(),
          static_cast<const ContainerScrape*>(nullptr));
  }
  return clean;
}

}  // namespace

namespace {

// Moves a layout's cpu counters back into the node's map and drops the layout (before the
// node's series change other than through the layout).
void DropLayout(NodeState& node) {
  if (!node.layout) return;
  const ScrapeLayout& layout = *node.layout;
  for (size_t object = 0; object < layout.objects(); ++object) {
    if (layout.counters[object]) {
      node.counters.insert_or_assign(*layout.keys[2 * object], *layout.counters[object]);
    }
  }
  node.layout.reset();
}

// Builds the layout of `scrape` (which skipped nothing) after it was ingested; takes the
// node's cpu counters into it.
void BuildLayout(const NodeScrape& scrape, NodeState& node) {
  auto layout = std::make_unique<ScrapeLayout>();
  layout->system_containers = scrape.system_containers.size();
  layout->pods = scrape.pods.size();
  const std::string& name = scrape.node_name;
  auto add = [&](windows::SeriesKey key) {
    auto it = node.series.find(key);
    if (it != node.series.end()) {
      layout->keys.push_back(&it->first);
      layout->states.push_back(&it->second);
    } else {
      layout->keys.push_back(&layout->own_keys.emplace_back(std::move(key)));
      layout->states.push_back(nullptr);
      ++layout->own_keys_in_use;
    }
  };
  std::set<PodName> present;
  ForEachObject(scrape, node.deleted_pods, &present,
                [&](windows::ObjectKind kind, const scrapers::PodScrape*, std::string_view ns,
                    std::string_view pod, std::string_view container, const ContainerScrape*) {
                  windows::SeriesKey cpu{name,
                                         kind,
                                         std::string(ns),
                                         std::string(pod),
                                         std::string(container),
                                         windows::Resource::kCpu};
                  windows::SeriesKey memory = cpu;
                  memory.resource = windows::Resource::kMemory;
                  if (kind == windows::ObjectKind::kPod) {
                    layout->counters.emplace_back();
                  } else {
                    auto counter = node.counters.find(cpu);
                    layout->counters.push_back(counter == node.counters.end()
                                                   ? std::nullopt
                                                   : std::optional(counter->second));
                  }
                  add(std::move(cpu));
                  add(std::move(memory));
                });
  layout->order.resize(layout->keys.size());
  for (uint32_t i = 0; i < layout->order.size(); ++i) layout->order[i] = i;
  std::sort(layout->order.begin(), layout->order.end(),
            [&](uint32_t a, uint32_t b) { return *layout->keys[a] < *layout->keys[b]; });
  node.counters.clear();
  node.layout = std::move(layout);
}

}  // namespace

// One scrape on its way in (IngestAt): its samples in key order, each with its series (its
// key, and its state when it has a stored sample) and value, and what the node's state takes
// once the batch is written.
struct IngestStep {
  struct Pending {
    const windows::SeriesKey* key;
    SeriesState* state;
    uint64_t value;
    uint32_t layout_index;  // with a layout
  };
  std::vector<Pending> samples;
  std::vector<windows::SeriesKey> retired;
  std::set<PodName> present;
  bool clean = false;  // no entry skipped: the scrape's layout can be kept
  uint64_t resets = 0;
  // The cpu counters after this step: in the layout's order with one, by key without.
  std::vector<std::optional<CpuCounter>> next_layout_counters;
  std::unordered_map<windows::SeriesKey, CpuCounter, windows::SeriesKeyHash> next_counters;
  // Without a layout: the keys of this step (samples point into them).
  std::vector<windows::SeriesKey> owned;
  uint64_t salvage_epoch = 0;  // the store's SalvageEpoch() the batch was made at
  std::vector<std::pair<size_t, SeriesId>> created;  // index into samples, id
  uint64_t rollups = 0;
};

namespace {

// IngestAt's samples from the node's layout of its previous scrape, which this scrape matches.
void SamplesFromLayout(const NodeScrape& scrape, const NodeState& node, Timestamp at,
                       IngestStep& step) {
  const ScrapeLayout& layout = *node.layout;
  const size_t objects = layout.objects();
  std::vector<std::optional<uint64_t>> values(2 * objects);
  step.next_layout_counters.resize(objects);
  auto add = [&](size_t object, const std::optional<CpuSample>& cpu,
                 const std::optional<scrapers::MemorySample>& memory,
                 const std::optional<Timestamp>& start) {
    const std::optional<CpuCounter>& previous = layout.counters[object];
    bool reset = false;
    values[2 * object] = CpuRate(previous ? &*previous : nullptr, cpu, start, at,
                                 &step.next_layout_counters[object], &reset);
    if (reset) ++step.resets;
    if (memory && memory->working_set_bytes) values[2 * object + 1] = *memory->working_set_bytes;
  };
  add(0, scrape.cpu, scrape.memory, scrape.start_time);
  size_t object = 1;
  for (const ContainerScrape& c : scrape.system_containers) {
    add(object++, c.cpu, c.memory, c.start_time);
  }
  for (const scrapers::PodScrape& pod : scrape.pods) {
    std::optional<uint64_t> cpu_sum = 0, memory_sum = 0;
    for (const ContainerScrape& c : pod.containers) {
      add(object, c.cpu, c.memory, c.start_time);
      const std::optional<uint64_t>& rate = values[2 * object];
      const std::optional<uint64_t>& bytes = values[2 * object + 1];
      cpu_sum = cpu_sum && rate ? std::optional(SaturatingAdd(*cpu_sum, *rate)) : std::nullopt;
      memory_sum =
          memory_sum && bytes ? std::optional(SaturatingAdd(*memory_sum, *bytes)) : std::nullopt;
      ++object;
    }
    if (!pod.containers.empty()) {
      values[2 * object] = cpu_sum;
      values[2 * object + 1] = memory_sum;
    }
    ++object;
  }
  step.samples.reserve(values.size());
  for (uint32_t i : layout.order) {
    if (values[i]) step.samples.push_back({layout.keys[i], layout.states[i], *values[i], i});
  }
}

// IngestAt's samples of a scrape without a reusable layout: each object's series by key, and
// the node's series this scrape no longer has, retired.
void SamplesByKey(const NodeScrape& scrape, NodeState& node, Timestamp at, IngestStep& step) {
  std::vector<windows::SeriesKey> alive;
  std::vector<std::pair<size_t, uint64_t>> found;  // index into `owned`, value
  step.clean = ForEachObject(
      scrape, node.deleted_pods, &step.present,
      [&, cpu_sum = std::optional<uint64_t>(0), memory_sum = std::optional<uint64_t>(0),
       containers = size_t{0}](windows::ObjectKind kind, const scrapers::PodScrape*,
                               std::string_view ns, std::string_view pod,
                               std::string_view container, const ContainerScrape* c) mutable {
        windows::SeriesKey cpu_key{scrape.node_name,       kind,
                                   std::string(ns),        std::string(pod),
                                   std::string(container), windows::Resource::kCpu};
        windows::SeriesKey memory_key = cpu_key;
        memory_key.resource = windows::Resource::kMemory;
        std::optional<uint64_t> rate, bytes;
        if (kind == windows::ObjectKind::kPod) {
          if (containers > 0) {
            rate = cpu_sum;
            bytes = memory_sum;
          }
          cpu_sum = 0;
          memory_sum = 0;
          containers = 0;
        } else {
          const std::optional<CpuSample>& cpu = c ? c->cpu : scrape.cpu;
          const std::optional<scrapers::MemorySample>& memory = c ? c->memory : scrape.memory;
          const std::optional<Timestamp>& start = c ? c->start_time : scrape.start_time;
          auto previous = node.counters.find(cpu_key);
          std::optional<CpuCounter> next;
          bool reset = false;
          rate = CpuRate(previous == node.counters.end() ? nullptr : &previous->second, cpu, start,
                         at, &next, &reset);
          if (reset) ++step.resets;
          if (next) step.next_counters.insert_or_assign(cpu_key, *next);
          if (memory && memory->working_set_bytes) bytes = *memory->working_set_bytes;
          if (kind == windows::ObjectKind::kContainer) {
            ++containers;
            cpu_sum =
                cpu_sum && rate ? std::optional(SaturatingAdd(*cpu_sum, *rate)) : std::nullopt;
            memory_sum = memory_sum && bytes ? std::optional(SaturatingAdd(*memory_sum, *bytes))
                                             : std::nullopt;
          }
        }
        if (rate) {
          found.emplace_back(step.owned.size(), *rate);
          step.owned.push_back(cpu_key);
        }
        if (bytes) {
          found.emplace_back(step.owned.size(), *bytes);
          step.owned.push_back(memory_key);
        }
        alive.push_back(std::move(cpu_key));
        alive.push_back(std::move(memory_key));
      });
  std::sort(alive.begin(), alive.end());
  std::sort(found.begin(), found.end(), [&](const auto& a, const auto& b) {
    return step.owned[a.first] < step.owned[b.first];
  });
  for (const auto& [key, state] : node.series) {
    if (!std::binary_search(alive.begin(), alive.end(), key)) step.retired.push_back(key);
  }
  step.samples.reserve(found.size());
  for (const auto& [index, value] : found) {
    auto it = node.series.find(step.owned[index]);
    step.samples.push_back(
        {&step.owned[index], it == node.series.end() ? nullptr : &it->second, value, 0});
  }
}

}  // namespace

absl::Status Ingestor::IngestAt(const NodeScrape& scrape, Timestamp at) {
  if (!ready()) {
    counters_->scrapes_rejected.fetch_add(1, std::memory_order_relaxed);
    return absl::FailedPreconditionError("the store is not rebuilt yet");
  }
  if (scrape.node_name.empty()) {
    counters_->scrapes_rejected.fetch_add(1, std::memory_order_relaxed);
    return absl::InvalidArgumentError("scrape without a node name");
  }
  Shard& shard = ShardOf(scrape.node_name);
  {
    std::lock_guard lock(shard.mu);
    auto node_it = shard.nodes.find(scrape.node_name);
    if (node_it == shard.nodes.end()) {
      node_it = shard.nodes.emplace(scrape.node_name, NodeState{}).first;
      node_it->second.id = store_->AllocateNodeId();
      node_it->second.loss_generation = store_->LossGeneration();
    }
    if (const uint64_t generation = store_->LossGeneration();
        node_it->second.loss_generation != generation) {
      node_it = RestoreAfterLoss(shard, node_it, generation);
    }
    NodeState& node = node_it->second;
    if (node.has_scrape && at <= node.last_scrape) {
      counters_->scrapes_rejected.fetch_add(1, std::memory_order_relaxed);
      return absl::FailedPreconditionError(absl::StrCat(
          "scrape of node ", scrape.node_name, " at ", FormatRfc3339Nano(at),
          " is not after its previous scrape at ", FormatRfc3339Nano(node.last_scrape)));
    }
    const bool same_layout = options_.reuse_layout && node.layout && node.deleted_pods.empty() &&
                             node.layout->Matches(scrape);
    if (!same_layout) DropLayout(node);

    IngestStep step;
    // 1. Samples of this step, in key order.
    if (same_layout) {
      SamplesFromLayout(scrape, node, at, step);
    } else {
      SamplesByKey(scrape, node, at, step);
    }
    // 2. The batch written: node entry, new series, retirements, closed rollups, the blob.
    auto lookup = [&node](const windows::SeriesKey& key) -> std::optional<SeriesId> {
      auto it = node.series.find(key);
      if (it == node.series.end()) return std::nullopt;
      return it->second.id;
    };
    IngestSampleCache cache(store_, node.id, lookup);
    step.salvage_epoch = store_->SalvageEpoch();
    if (absl::Status s = WriteStep(shard, node, scrape, at, cache, step); !s.ok()) return s;
    // 3. Committed: the node's state, then the engine.
    CommitStep(shard, node, scrape, at, same_layout, cache, step);
  }
  if (options_.apply_retention) MaybeApplyRetention(at);
  return absl::OkStatus();
}

absl::Status Ingestor::WriteStep(Shard& shard, NodeState& node, const NodeScrape& scrape,
                                 Timestamp at, IngestSampleCache& cache, IngestStep& step) {
  storage::ScrapeBatch batch;
  const uint64_t salvage_epoch = step.salvage_epoch;
  if (!node.persisted || node.salvage_epoch != salvage_epoch)
    batch.AddNode(node.id, scrape.node_name);
  if (node.persisted && node.salvage_epoch != salvage_epoch) {
    for (const auto& [key, state] : node.series) {
      batch.AddSeries(state.id, node.id, EncodeSeriesKey(key));
    }
    node.chain.Reset();
  }
  for (const windows::SeriesKey& key : step.retired) batch.RetireSeries(node.series.at(key).id, at);
  std::vector<storage::SeriesValue> values;
  values.reserve(step.samples.size());
  const Duration width = options_.engine.rollup_width;
  std::vector<windows::Sample> bucket;
  for (size_t i = 0; i < step.samples.size(); ++i) {
    const IngestStep::Pending& sample = step.samples[i];
    SeriesId id = 0;
    if (sample.state == nullptr) {
      id = store_->AllocateSeriesId();
      batch.AddSeries(id, node.id, EncodeSeriesKey(*sample.key));
      step.created.emplace_back(i, id);
    } else {
      id = sample.state->id;
      const Timestamp previous_bucket = shard.engine->RollupBucketStart(sample.state->newest);
      if (previous_bucket < shard.engine->RollupBucketStart(at)) {
        // This sample closes the bucket of the series' previous sample.
        bucket.clear();
        absl::Status s = cache.Read(id, previous_bucket - Duration(1),
                                    previous_bucket + width - Duration(1), &bucket);
        if (!s.ok()) {
          counters_->store_errors.fetch_add(1, std::memory_order_relaxed);
          return s;
        }
        if (!bucket.empty()) {
          absl::StatusOr<windows::BucketRollup> rollup =
              shard.engine->BuildRollup(previous_bucket, bucket);
          if (rollup.ok()) {
            batch.PutRollup(node.id, id, previous_bucket, windows::SerializeRollup(*rollup));
            PutUsageHistory(*sample.key, workloads_, id, previous_bucket, bucket, &batch);
            ++step.rollups;
          }
        }
      }
    }
    values.push_back({id, sample.value});
  }
  batch.PutScrape(node.id, at, values, &node.chain);
  if (absl::Status s = store_->Write(batch); !s.ok()) {
    counters_->store_errors.fetch_add(1, std::memory_order_relaxed);
    return s;
  }
  return absl::OkStatus();
}

void Ingestor::CommitStep(Shard& shard, NodeState& node, const NodeScrape& scrape, Timestamp at,
                          bool same_layout, IngestSampleCache& cache, IngestStep& step) {
  node.persisted = true;
  node.salvage_epoch = step.salvage_epoch;
  node.has_scrape = true;
  node.last_scrape = at;
  for (const windows::SeriesKey& key : step.retired) {
    node.series.erase(key);
    shard.engine->DeleteSeries(key);
  }
  for (const auto& [index, id] : step.created) {
    IngestStep::Pending& sample = step.samples[index];
    auto it = node.series.emplace(*sample.key, SeriesState{id, at, {}}).first;
    sample.state = &it->second;
    sample.key = &it->first;  // `step.owned` or the layout's own key may go; the map's stays
    if (same_layout) {
      // The layout's own key of a series without a stored sample gives way to the map's.
      ScrapeLayout& layout = *node.layout;
      layout.keys[sample.layout_index] = &it->first;
      layout.states[sample.layout_index] = &it->second;
      if (--layout.own_keys_in_use == 0) std::deque<windows::SeriesKey>().swap(layout.own_keys);
    }
  }
  for (IngestStep::Pending& sample : step.samples) sample.state->newest = at;
  if (same_layout) {
    node.layout->counters = std::move(step.next_layout_counters);
  } else {
    node.counters = std::move(step.next_counters);
    for (auto it = node.deleted_pods.begin(); it != node.deleted_pods.end();) {
      it = step.present.contains(*it) ? std::next(it) : node.deleted_pods.erase(it);
    }
    for (const PodName& p : node.deleted_pods) step.present.erase(p);
    node.pods = std::move(step.present);
  }
  uint64_t engine_errors = 0;
  // Each series through its handle: found by key only the first time.
  for (const IngestStep::Pending& sample : step.samples) {
    if (!shard.engine->Ingest(*sample.key, at, sample.value, cache, sample.state->engine).ok()) {
      ++engine_errors;
    }
  }
  if (!same_layout && step.clean && options_.reuse_layout) BuildLayout(scrape, node);
  counters_->scrapes.fetch_add(1, std::memory_order_relaxed);
  if (same_layout) counters_->layout_reuses.fetch_add(1, std::memory_order_relaxed);
  counters_->samples.fetch_add(step.samples.size(), std::memory_order_relaxed);
  counters_->series_created.fetch_add(step.created.size(), std::memory_order_relaxed);
  counters_->series_retired.fetch_add(step.retired.size(), std::memory_order_relaxed);
  counters_->rollups_written.fetch_add(step.rollups, std::memory_order_relaxed);
  counters_->counter_resets.fetch_add(step.resets, std::memory_order_relaxed);
  counters_->engine_errors.fetch_add(engine_errors, std::memory_order_relaxed);
}

void Ingestor::MaybeApplyRetention(Timestamp time) {
  // The store makes one pass per hour and tries a failed one again a minute later: a gate
  // of the ingestor's own in front would keep that retry from coming until the next hour.
  if (!store_->ApplyRetention(time).ok()) {
    counters_->store_errors.fetch_add(1, std::memory_order_relaxed);
  }
}

absl::StatusOr<bool> Ingestor::DeletePod(std::string_view namespace_name, std::string_view name,
                                         std::string_view node) {
  const PodName pod_name{std::string(namespace_name), std::string(name)};
  bool removed = false;
  // The pod's series on one node, retired in the store and dropped (shard.mu held).
  auto remove_from = [&](Shard& shard, const std::string& node_name,
                         NodeState& state) -> absl::Status {
    if (!state.pods.contains(pod_name)) return absl::OkStatus();
    DropLayout(state);
    storage::ScrapeBatch batch;
    std::vector<windows::SeriesKey> keys;
    for (const auto& [key, series] : state.series) {
      if (IsPodSeries(key) && key.pod_namespace == namespace_name && key.pod == name) {
        batch.RetireSeries(series.id, state.last_scrape);
        keys.push_back(key);
      }
    }
    if (!batch.empty()) {
      if (absl::Status s = store_->Write(batch); !s.ok()) {
        counters_->store_errors.fetch_add(1, std::memory_order_relaxed);
        return s;
      }
    }
    for (const windows::SeriesKey& key : keys) {
      state.series.erase(key);
      state.counters.erase(windows::SeriesKey{key.node, key.kind, key.pod_namespace, key.pod,
                                              key.container, windows::Resource::kCpu});
    }
    shard.engine->DeletePod(node_name, namespace_name, name);
    state.pods.erase(pod_name);
    state.deleted_pods.insert(pod_name);
    counters_->series_retired.fetch_add(keys.size(), std::memory_order_relaxed);
    removed = true;
    return absl::OkStatus();
  };
  if (!node.empty()) {
    Shard& shard = ShardOf(node);
    std::lock_guard lock(shard.mu);
    auto it = shard.nodes.find(node);
    if (it == shard.nodes.end()) return false;
    if (absl::Status s = remove_from(shard, it->first, it->second); !s.ok()) return s;
    return removed;
  }
  for (const auto& shard_ptr : shards_) {
    Shard& shard = *shard_ptr;
    std::lock_guard lock(shard.mu);
    for (auto& [node_name, state] : shard.nodes) {
      if (absl::Status s = remove_from(shard, node_name, state); !s.ok()) return s;
    }
  }
  return removed;
}

absl::StatusOr<bool> Ingestor::DeleteNode(std::string_view name) {
  Shard& shard = ShardOf(name);
  std::lock_guard lock(shard.mu);
  auto it = shard.nodes.find(name);
  if (it == shard.nodes.end()) return false;
  NodeState& node = it->second;
  storage::ScrapeBatch batch;
  for (const auto& [key, state] : node.series) batch.RetireSeries(state.id, node.last_scrape);
  if (!batch.empty()) {
    if (absl::Status s = store_->Write(batch); !s.ok()) {
      counters_->store_errors.fetch_add(1, std::memory_order_relaxed);
      return s;
    }
  }
  counters_->series_retired.fetch_add(node.series.size(), std::memory_order_relaxed);
  shard.engine->DeleteNode(name);
  shard.nodes.erase(it);
  return true;
}

Ingestor::NodeMap::iterator Ingestor::RestoreAfterLoss(Shard& shard, NodeMap::iterator node_it,
                                                       uint64_t generation) {
  const std::string name = node_it->first;
  NodeState& node = node_it->second;
  const NodeId id = node.id;
  const bool persisted = node.persisted;
  const uint64_t salvage_epoch = node.salvage_epoch;
  std::vector<std::pair<SeriesId, windows::SeriesKey>> series;
  series.reserve(node.series.size());
  for (const auto& [key, state] : node.series) {
    series.emplace_back(state.id, key);
    shard.engine->DeleteSeries(key);
  }
  std::set<PodName> deleted_pods = std::move(node.deleted_pods);
  shard.nodes.erase(node_it);
  RestoreScratch scratch{
      IngestSampleCache(store_, 0, nullptr, options_.engine.rollup_width), {}, {}, {}};
  if (absl::Status s = RestoreNode(id, name, series, scratch, /*take_lock=*/false); !s.ok()) {
    counters_->store_errors.fetch_add(1, std::memory_order_relaxed);
    KLOG(ERROR) << "restoring node " << name << " after the store dropped writes: " << s;
  }
  counters_->restores_after_loss.fetch_add(1, std::memory_order_relaxed);
  auto [it, inserted] = shard.nodes.try_emplace(name);
  if (inserted) {
    // Nothing of it is left in the store: it starts anew under its id.
    it->second.id = id;
    it->second.persisted = persisted;
    it->second.salvage_epoch = salvage_epoch;
  }
  it->second.loss_generation = generation;
  it->second.deleted_pods = std::move(deleted_pods);
  return it;
}

absl::Status Ingestor::RestoreNode(
    NodeId node_id, const std::string& name,
    const std::vector<std::pair<SeriesId, windows::SeriesKey>>& stored, RestoreScratch& scratch,
    bool take_lock) {
  Duration longest = Duration(0);
  for (Duration w : options_.engine.windows) longest = std::max(longest, w);
  const Duration retention = store_->options().retention;
  NodeState state;
  state.id = node_id;
  state.persisted = true;
  state.salvage_epoch = store_->SalvageEpoch();
  // Read first: a drop after the reads would be seen at the node's next scrape.
  const uint64_t generation = store_->LossGeneration();
  std::unordered_map<SeriesId, const windows::SeriesKey*> wanted;
  for (const auto& [id, key] : stored) wanted.emplace(id, &key);
  std::unordered_map<SeriesId, Timestamp> newest;
  std::optional<Timestamp> last;
  absl::Status s =
      store_->ReadScrapesBackward(node_id, Timestamp::max(), Timestamp::min(),
                                  [&](Timestamp t, std::span<const storage::SeriesValue> values) {
                                    if (!last) last = t;
                                    if (t <= *last - retention) return false;
                                    for (const storage::SeriesValue& v : values) {
                                      if (wanted.contains(v.id)) newest.try_emplace(v.id, t);
                                    }
                                    return newest.size() < wanted.size();
                                  });
  if (!s.ok()) return s;
  Shard& shard = ShardOf(name);
  storage::ScrapeBatch retire;
  // The rollups as stored bytes, parsed one series at a time right before its restore
  // (while they are hot, into reused buffers): parsing them all first cost as much again
  // in allocation, cache misses and freeing.
  scratch.rollup_bytes.clear();
  scratch.rollups.clear();
  if (last && !newest.empty()) {
    // Only buckets that start inside some series' longest window can be used.
    Timestamp oldest_newest = *last;
    for (const auto& [id, t] : newest) oldest_newest = std::min(oldest_newest, t);
    s = store_->ReadRollups(
        node_id, oldest_newest - longest, *last,
        [&](SeriesId id, Timestamp, std::string_view bytes) {
          if (!newest.contains(id)) return;
          scratch.rollups.push_back({id, scratch.rollup_bytes.size(), bytes.size()});
          scratch.rollup_bytes.append(bytes);
        });
    if (!s.ok()) return s;
    std::stable_sort(scratch.rollups.begin(), scratch.rollups.end(),
                     [](const StoredRollup& a, const StoredRollup& b) { return a.id < b.id; });
  }
  // The series being restored asks for its samples with the key it was given, the map's
  // own: that one is answered without a search.
  const windows::SeriesKey* restoring = nullptr;
  SeriesId restoring_id = 0;
  auto lookup = [&state, &restoring,
                 &restoring_id](const windows::SeriesKey& key) -> std::optional<SeriesId> {
    if (&key == restoring) return restoring_id;
    auto it = state.series.find(key);
    if (it == state.series.end()) return std::nullopt;
    return it->second.id;
  };
  IngestSampleCache& cache = scratch.cache;
  cache.Reset(node_id, lookup);
  std::unique_lock lock(shard.mu, std::defer_lock);
  if (take_lock) lock.lock();
  for (const auto& [id, key] : stored) {
    auto found = newest.find(id);
    if (found == newest.end()) {
      // No data left: the series aged out.
      retire.RetireSeries(id, last.value_or(clock_->Now()));
      continue;
    }
    state.series.emplace(key, SeriesState{id, found->second, {}});
  }
  std::vector<windows::BucketRollup>& parsed = scratch.parsed;
  for (const auto& [key, series] : state.series) {
    parsed.clear();
    // Every bucket closed by a later sample has its rollup (written in that sample's
    // batch), so the hours without one hold none of the series' samples and are not read,
    // unless a rollup could not be parsed.
    windows::WindowEngine::RollupCoverage coverage =
        windows::WindowEngine::RollupCoverage::kComplete;
    auto [first, end] = std::equal_range(
        scratch.rollups.begin(), scratch.rollups.end(), StoredRollup{series.id, 0, 0},
        [](const StoredRollup& a, const StoredRollup& b) { return a.id < b.id; });
    for (auto r = first; r != end; ++r) {
      absl::StatusOr<windows::BucketRollup> rollup =
          windows::ParseRollup(std::string_view(scratch.rollup_bytes).substr(r->offset, r->size));
      if (rollup.ok()) {
        parsed.push_back(std::move(*rollup));
      } else {
        // Without it the engine reads the bucket's samples instead.
        coverage = windows::WindowEngine::RollupCoverage::kPartial;
        counters_->Unrestored(
            absl::StrCat(key.ToString(), " (an hourly rollup: ", rollup.status().message(), ")"));
      }
    }
    restoring = &key;
    restoring_id = series.id;
    const absl::Status rs =
        shard.engine->RestoreSeries(key, series.newest, parsed, cache, coverage);
    restoring = nullptr;
    if (rs.ok()) {
      counters_->rebuilt_series.fetch_add(1, std::memory_order_relaxed);
    } else {
      if (absl::IsDataLoss(rs)) {
        counters_->rebuild_damaged_reads.fetch_add(1, std::memory_order_relaxed);
      }
      counters_->Unrestored(absl::StrCat(key.ToString(), " (", rs.message(), ")"));
    }
    if (IsPodSeries(key)) state.pods.insert({key.pod_namespace, key.pod});
  }
  if (last) {
    state.has_scrape = true;
    state.last_scrape = *last;
  }
  if (!retire.empty()) {
    if (absl::Status ws = store_->Write(retire); !ws.ok()) return ws;
  }
  state.loss_generation = generation;
  if (last && !state.series.empty()) shard.nodes.insert_or_assign(name, std::move(state));
  return absl::OkStatus();
}

// One node of the store to restore, with its live series.
struct Ingestor::RebuildNode {
  NodeId id = 0;
  std::string name;
  std::vector<std::pair<SeriesId, windows::SeriesKey>> series;
};

absl::Status Ingestor::Rebuild() {
  const Timestamp started = clock_->MonotonicNow();
  if (absl::Status s = ResetForRebuild(); !s.ok()) return s;
  absl::StatusOr<storage::Dictionary> dict = store_->LoadDictionary();
  if (!dict.ok()) {
    counters_->store_errors.fetch_add(1, std::memory_order_relaxed);
    return dict.status();
  }
  std::map<NodeId, RebuildNode> nodes = NodesToRebuild(*dict);
  if (absl::Status s = RestoreAll(RebuildOrder(nodes)); !s.ok()) return s;
  counters_->rebuild_nanos.store(Nanos(clock_->MonotonicNow()) - Nanos(started));
  ready_.store(true, std::memory_order_release);
  return absl::OkStatus();
}

absl::Status Ingestor::ResetForRebuild() {
  // A second rebuild (after the store was salvaged) starts over: what the first restored
  // may since have been left out of the store.
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mu);
    if (shard->nodes.empty()) continue;
    absl::StatusOr<std::unique_ptr<windows::WindowEngine>> engine =
        windows::WindowEngine::Create(options_.engine);
    if (!engine.ok()) return engine.status();
    shard->engine = *std::move(engine);
    shard->nodes.clear();
  }
  counters_->rebuilt_series.store(0);
  counters_->rebuild_errors.store(0);
  counters_->rebuild_damaged_reads.store(0);
  std::lock_guard<std::mutex> lock(counters_->unrestored_mu);
  counters_->unrestored.clear();
  return absl::OkStatus();
}

std::map<NodeId, Ingestor::RebuildNode> Ingestor::NodesToRebuild(
    const storage::Dictionary& dict) const {
  std::map<NodeId, RebuildNode> nodes;
  for (const storage::NodeEntry& n : dict.nodes) nodes[n.id] = RebuildNode{n.id, n.name, {}};
  for (const storage::SeriesEntry& e : dict.series) {
    auto node = nodes.find(e.node);
    absl::StatusOr<windows::SeriesKey> key = DecodeSeriesKey(e.key);
    if (node == nodes.end() || !key.ok() || key->node != node->second.name) {
      counters_->Unrestored(key.ok() ? absl::StrCat(key->ToString(), " (its node entry is missing)")
                                     : absl::StrCat("series ", e.id, " of node ", e.node,
                                                    " (its dictionary entry is unreadable)"));
      continue;
    }
    node->second.series.emplace_back(e.id, std::move(*key));
  }
  return nodes;
}

std::vector<Ingestor::RebuildNode*> Ingestor::RebuildOrder(
    std::map<NodeId, RebuildNode>& nodes) const {
  // The threads take nodes one at a time from one list that goes round the shards, so
  // they stay balanced to a node and two nodes taken at the same time are nearly always of
  // different shards (a node's restore holds its shard's lock).
  std::vector<std::vector<RebuildNode*>> per_shard(shards_.size());
  std::hash<std::string_view> hash;
  for (auto& [id, node] : nodes) per_shard[hash(node.name) % shards_.size()].push_back(&node);
  std::vector<RebuildNode*> queue;
  queue.reserve(nodes.size());
  for (size_t round = 0; queue.size() < nodes.size(); ++round) {
    for (const std::vector<RebuildNode*>& shard_nodes : per_shard) {
      if (round < shard_nodes.size()) queue.push_back(shard_nodes[round]);
    }
  }
  return queue;
}

absl::Status Ingestor::RestoreAll(const std::vector<RebuildNode*>& queue) {
  std::atomic<size_t> next_node{0};
  std::mutex error_mu;
  absl::Status first_error;
  std::vector<std::thread> threads;
  const size_t thread_count = std::min(options_.rebuild_threads, std::max<size_t>(queue.size(), 1));
  for (size_t t = 0; t < thread_count; ++t) {
    threads.emplace_back([&] {
      NameThisThread("rebuild");
      // Buffers of one thread, reused from node to node.
      RestoreScratch scratch{
          IngestSampleCache(store_, 0, nullptr, options_.engine.rollup_width), {}, {}, {}};
      for (size_t i = next_node.fetch_add(1); i < queue.size(); i = next_node.fetch_add(1)) {
        const RebuildNode* w = queue[i];
        if (absl::Status s = RestoreNode(w->id, w->name, w->series, scratch, /*take_lock=*/true);
            !s.ok()) {
          counters_->store_errors.fetch_add(1, std::memory_order_relaxed);
          std::lock_guard lock(error_mu);
          if (first_error.ok()) {
            first_error = absl::Status(
                s.code(), absl::StrCat("rebuilding node ", w->name, ": ", s.message()));
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return first_error;
}

std::vector<std::string> Ingestor::ListNodes() const {
  std::vector<std::string> names;
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mu);
    for (const auto& [name, node] : shard->nodes) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<PodRef> Ingestor::ListPods() const {
  std::vector<PodRef> pods;
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mu);
    for (const auto& [name, node] : shard->nodes) {
      for (const PodName& p : node.pods) pods.push_back({p.first, p.second, name});
    }
  }
  std::sort(pods.begin(), pods.end(), [](const PodRef& a, const PodRef& b) {
    return std::tie(a.namespace_name, a.name, a.node) < std::tie(b.namespace_name, b.name, b.node);
  });
  return pods;
}

namespace {

// Moves the node's own series, which come first in a node's key order, from `series` into
// `node`; returns where its pods' series begin.
std::vector<windows::SeriesWindows>::iterator TakeNodeSeries(
    std::vector<windows::SeriesWindows>& series, NodeSnapshot* node) {
  auto it = series.begin();
  for (; it != series.end() && !IsPodSeries(it->key); ++it) node->series.push_back(std::move(*it));
  return it;
}

}  // namespace

std::optional<NodeSnapshot> Ingestor::QueryNode(std::string_view name) const {
  Shard& shard = ShardOf(name);
  std::lock_guard lock(shard.mu);
  if (!shard.nodes.contains(name)) return std::nullopt;
  NodeSnapshot snapshot;
  snapshot.name = std::string(name);
  std::vector<windows::SeriesWindows> series = shard.engine->QueryNode(name);
  TakeNodeSeries(series, &snapshot);
  return snapshot;
}

namespace {

// Builds what QueryNodeObjects returns from the visits.
class SnapshotBuilder final : public NodeObjectsVisitor {
 public:
  explicit SnapshotBuilder(std::string_view node) { objects.node.name = std::string(node); }
  void NodeSeries(const windows::SeriesKey& key, Timestamp endtime,
                  std::span<const windows::WindowStats> windows) override {
    objects.node.series.push_back({key, endtime, {windows.begin(), windows.end()}});
  }
  void BeginPod(std::string_view namespace_name, std::string_view name) override {
    objects.pods.push_back(
        {{std::string(namespace_name), std::string(name), objects.node.name}, {}});
  }
  void PodSeries(const windows::SeriesKey& key, Timestamp endtime,
                 std::span<const windows::WindowStats> windows) override {
    objects.pods.back().series.push_back({key, endtime, {windows.begin(), windows.end()}});
  }

  NodeObjectsSnapshot objects;
};

}  // namespace

std::optional<NodeObjectsSnapshot> Ingestor::QueryNodeObjects(std::string_view name) const {
  SnapshotBuilder builder(name);
  if (!VisitNodeObjects(name, builder)) return std::nullopt;
  return std::move(builder.objects);
}

bool Ingestor::VisitNodeObjects(std::string_view name, NodeObjectsVisitor& visitor) const {
  Shard& shard = ShardOf(name);
  std::lock_guard lock(shard.mu);
  auto node = shard.nodes.find(name);
  if (node == shard.nodes.end()) return false;
  // The node's own series come first in its key order, then each pod's, by (namespace, pod):
  // the order of the node's pod list, so one merge pass pairs them. `next` is the first pod
  // not begun yet; `current` the pod whose series are being passed, if any.
  const std::set<PodName>& pods = node->second.pods;
  auto next = pods.begin();
  const PodName* current = nullptr;
  shard.engine->VisitNode(name, [&](const windows::SeriesKey& key, Timestamp endtime,
                                    std::span<const windows::WindowStats> windows) {
    if (!IsPodSeries(key)) {
      visitor.NodeSeries(key, endtime, windows);
      return;
    }
    if (current == nullptr || current->first != key.pod_namespace || current->second != key.pod) {
      current = nullptr;
      // Listed pods before this one have no series: they are begun with none.
      for (; next != pods.end() &&
             std::tie(next->first, next->second) < std::tie(key.pod_namespace, key.pod);
           ++next) {
        visitor.BeginPod(next->first, next->second);
      }
      // A series of a pod the node's list does not hold (deleted) is skipped.
      if (next == pods.end() || next->first != key.pod_namespace || next->second != key.pod) {
        return;
      }
      current = &*next++;
      visitor.BeginPod(current->first, current->second);
    }
    visitor.PodSeries(key, endtime, windows);
  });
  for (; next != pods.end(); ++next) visitor.BeginPod(next->first, next->second);
  return true;
}

std::optional<PodSnapshot> Ingestor::QueryPod(std::string_view namespace_name,
                                              std::string_view name) const {
  const PodName pod_name{std::string(namespace_name), std::string(name)};
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mu);
    for (const auto& [node_name, node] : shard->nodes) {
      if (!node.pods.contains(pod_name)) continue;
      PodSnapshot snapshot;
      snapshot.pod = {pod_name.first, pod_name.second, node_name};
      snapshot.series = shard->engine->QueryPod(node_name, namespace_name, name);
      return snapshot;
    }
  }
  return std::nullopt;
}

std::vector<StoredSeries> Ingestor::ContainerSeries(std::string_view namespace_name) const {
  std::vector<StoredSeries> out;
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mu);
    for (const auto& entry : shard->nodes) {
      const NodeState& node = entry.second;
      for (const auto& [key, state] : node.series) {
        if (key.kind != windows::ObjectKind::kContainer) continue;
        if (!namespace_name.empty() && key.pod_namespace != namespace_name) continue;
        out.push_back({key, node.id, state.id});
      }
    }
  }
  return out;
}

std::vector<NodeSnapshot> Ingestor::QueryNodes() const {
  std::vector<NodeSnapshot> nodes;
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mu);
    for (const auto& [name, node] : shard->nodes) {
      NodeSnapshot snapshot;
      snapshot.name = name;
      std::vector<windows::SeriesWindows> series = shard->engine->QueryNode(name);
      TakeNodeSeries(series, &snapshot);
      nodes.push_back(std::move(snapshot));
    }
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const NodeSnapshot& a, const NodeSnapshot& b) { return a.name < b.name; });
  return nodes;
}

std::vector<PodSnapshot> Ingestor::QueryPods(std::string_view namespace_name) const {
  std::vector<PodSnapshot> pods;
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mu);
    for (const auto& [name, node] : shard->nodes) {
      for (const PodName& p : node.pods) {
        if (!namespace_name.empty() && p.first != namespace_name) continue;
        PodSnapshot snapshot;
        snapshot.pod = {p.first, p.second, name};
        snapshot.series = shard->engine->QueryPod(name, p.first, p.second);
        pods.push_back(std::move(snapshot));
      }
    }
  }
  std::sort(pods.begin(), pods.end(), [](const PodSnapshot& a, const PodSnapshot& b) {
    return std::tie(a.pod.namespace_name, a.pod.name, a.pod.node) <
           std::tie(b.pod.namespace_name, b.pod.name, b.pod.node);
  });
  return pods;
}

std::vector<windows::SeriesWindows> Ingestor::QueryAll() const {
  std::vector<std::pair<std::string, std::vector<windows::SeriesWindows>>> per_node;
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mu);
    for (const auto& [name, node] : shard->nodes) {
      per_node.emplace_back(name, shard->engine->QueryNode(name));
    }
  }
  std::sort(per_node.begin(), per_node.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<windows::SeriesWindows> all;
  for (auto& [name, series] : per_node) {
    for (windows::SeriesWindows& w : series) all.push_back(std::move(w));
  }
  return all;
}

std::vector<std::string> Ingestor::UnrestoredSeries() const {
  std::lock_guard<std::mutex> lock(counters_->unrestored_mu);
  return counters_->unrestored;
}

IngestStats Ingestor::Stats() const {
  IngestStats s;
  s.scrapes = counters_->scrapes.load();
  s.scrapes_rejected = counters_->scrapes_rejected.load();
  s.store_errors = counters_->store_errors.load();
  s.engine_errors = counters_->engine_errors.load();
  s.samples = counters_->samples.load();
  s.series_created = counters_->series_created.load();
  s.series_retired = counters_->series_retired.load();
  s.rollups_written = counters_->rollups_written.load();
  s.counter_resets = counters_->counter_resets.load();
  s.layout_reuses = counters_->layout_reuses.load();
  s.rebuilt_series = counters_->rebuilt_series.load();
  s.rebuild_errors = counters_->rebuild_errors.load();
  s.rebuild_damaged_reads = counters_->rebuild_damaged_reads.load();
  s.restores_after_loss = counters_->restores_after_loss.load();
  s.rebuild_seconds = static_cast<double>(counters_->rebuild_nanos.load()) / 1e9;
  return s;
}

Ingestor::Memory Ingestor::MemoryByPart() const {
  constexpr size_t kTreeNode = 4 * sizeof(void*);
  constexpr size_t kHashNode = 2 * sizeof(void*);
  auto heap = [](const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; };
  auto key_heap = [&](const windows::SeriesKey& k) {
    return heap(k.node) + heap(k.pod_namespace) + heap(k.pod) + heap(k.container);
  };
  Memory m;
  m.nodes = sizeof(*this);
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mu);
    m.nodes += sizeof(Shard);
    m.windows += shard->engine->MemoryByPart();
    for (const auto& [name, node] : shard->nodes) {
      m.nodes += kTreeNode + sizeof(std::pair<const std::string, NodeState>) + heap(name);
      for (const auto& [key, state] : node.series) {
        m.series_index +=
            kTreeNode + sizeof(std::pair<const windows::SeriesKey, SeriesState>) + key_heap(key);
      }
      m.cpu_counters += node.counters.bucket_count() * sizeof(void*);
      for (const auto& [key, counter] : node.counters) {
        m.cpu_counters +=
            kHashNode + sizeof(std::pair<const windows::SeriesKey, CpuCounter>) + key_heap(key);
      }
      for (const PodName& p : node.pods) {
        m.nodes += kTreeNode + sizeof(PodName) + heap(p.first) + heap(p.second);
      }
      if (node.layout) m.nodes += sizeof(ScrapeLayout) + node.layout->HeapBytes();
    }
  }
  return m;
}

// --- NodeHistoryWriter ---

struct NodeHistoryWriter::OpenBucket {
  SeriesId id = 0;  // 0 until the series' first sample (store ids start at 1)
  Timestamp start{};
  std::vector<windows::Sample> samples;  // of the bucket starting at `start`
};

namespace {

// Sorts a writer's keys; InvalidArgument for an empty node name, or a key of another node
// or twice.
absl::Status SortWriterKeys(std::string_view node_name, std::vector<windows::SeriesKey>* keys) {
  if (node_name.empty()) return absl::InvalidArgumentError("NodeHistoryWriter: empty node name");
  std::sort(keys->begin(), keys->end());
  for (size_t i = 0; i < keys->size(); ++i) {
    const windows::SeriesKey& key = (*keys)[i];
    if (key.node != node_name) {
      return absl::InvalidArgumentError(absl::StrCat("NodeHistoryWriter: series ", key.ToString(),
                                                     " is not of node ", std::string(node_name)));
    }
    if (i > 0 && key == (*keys)[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("NodeHistoryWriter: series ", key.ToString(), " given twice"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::map<std::string, StoredNode, std::less<>>> StoredNodesByName(
    const storage::Dictionary& dictionary) {
  std::unordered_map<NodeId, StoredNode> by_id;
  for (const storage::NodeEntry& n : dictionary.nodes) by_id[n.id] = StoredNode{n.id, n.name, {}};
  for (const storage::SeriesEntry& e : dictionary.series) {
    auto node = by_id.find(e.node);
    absl::StatusOr<windows::SeriesKey> key = DecodeSeriesKey(e.key);
    if (node == by_id.end() || !key.ok() || key->node != node->second.name) {
      return absl::DataLossError(absl::StrCat(
          "series ", e.id, " of node ", e.node, ": ",
          key.ok() ? "its node entry is missing or another's" : "its key is unreadable"));
    }
    node->second.series.emplace(std::move(*key), e.id);
  }
  std::map<std::string, StoredNode, std::less<>> by_name;
  for (auto& [id, node] : by_id) {
    auto [it, added] = by_name.try_emplace(node.name);
    if (added || it->second.id < id) it->second = std::move(node);
  }
  return by_name;
}

absl::StatusOr<std::unique_ptr<NodeHistoryWriter>> NodeHistoryWriter::Create(
    const windows::WindowEngineOptions& options, storage::Store* store, std::string node_name,
    std::vector<windows::SeriesKey> keys, const PodWorkloads* workloads) {
  if (store == nullptr) return absl::InvalidArgumentError("NodeHistoryWriter needs a store");
  if (absl::Status s = SortWriterKeys(node_name, &keys); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<windows::WindowEngine>> engine =
      windows::WindowEngine::Create(options);
  if (!engine.ok()) return engine.status();
  const NodeId node_id = store->AllocateNodeId();
  return std::unique_ptr<NodeHistoryWriter>(new NodeHistoryWriter(
      std::move(*engine), store, node_id, std::move(node_name), std::move(keys), workloads));
}

absl::StatusOr<std::unique_ptr<NodeHistoryWriter>> NodeHistoryWriter::Resume(
    const windows::WindowEngineOptions& options, storage::Store* store, const StoredNode& node,
    std::vector<windows::SeriesKey> keys, const PodWorkloads* workloads) {
  if (store == nullptr) return absl::InvalidArgumentError("NodeHistoryWriter needs a store");
  if (absl::Status s = SortWriterKeys(node.name, &keys); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<windows::WindowEngine>> engine =
      windows::WindowEngine::Create(options);
  if (!engine.ok()) return engine.status();
  std::unique_ptr<NodeHistoryWriter> writer(new NodeHistoryWriter(
      std::move(*engine), store, node.id, node.name, std::move(keys), workloads));
  writer->node_written_ = true;
  for (const auto& [key, id] : node.series) {
    auto it = std::lower_bound(writer->keys_.begin(), writer->keys_.end(), key);
    if (it != writer->keys_.end() && *it == key) {
      writer->open_[static_cast<size_t>(it - writer->keys_.begin())].id = id;
    } else {
      writer->retire_.push_back(id);
    }
  }
  if (absl::Status s = writer->LoadOpenBuckets(); !s.ok()) return s;
  return writer;
}

absl::Status NodeHistoryWriter::LoadOpenBuckets() {
  // The continued series by id: a blob's values come sorted by id, so one merge per blob.
  std::vector<std::pair<SeriesId, size_t>> wanted;  // id, index into keys_
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (open_[i].id != 0) wanted.emplace_back(open_[i].id, i);
  }
  std::sort(wanted.begin(), wanted.end());
  // Newest first: a series' first value seen is its newest sample, which opens its bucket;
  // the scan ends once every series is found and no older scrape can be in an open bucket,
  // or at the retention, as Rebuild() ends.
  const Duration retention = store_->options().retention;
  size_t found = 0;
  Timestamp oldest_start = Timestamp::max();
  auto visit = [&](Timestamp t, std::span<const storage::SeriesValue> values) {
    if (!last_) last_ = t;
    if (t <= *last_ - retention) return false;
    auto w = wanted.begin();
    for (const storage::SeriesValue& v : values) {
      while (w != wanted.end() && w->first < v.id) ++w;
      if (w == wanted.end()) break;
      if (w->first != v.id) continue;
      OpenBucket& open = open_[w->second];
      if (open.samples.empty()) {
        open.start = engine_->RollupBucketStart(t);
        oldest_start = std::min(oldest_start, open.start);
        ++found;
      } else if (t < open.start) {
        continue;
      }
      open.samples.push_back({t, v.value});
    }
    return found < wanted.size() || t > oldest_start;
  };
  absl::Status s = store_->ReadScrapesBackward(node_id_, Timestamp::max(), Timestamp::min(), visit);
  if (!s.ok()) return s;
  for (OpenBucket& open : open_) {
    if (open.id != 0 && open.samples.empty()) {
      // No sample left: Rebuild() retires such a series, and its object's next sample
      // starts a new one.
      retire_.push_back(open.id);
      open.id = 0;
    }
    std::reverse(open.samples.begin(), open.samples.end());
  }
  return absl::OkStatus();
}

NodeHistoryWriter::NodeHistoryWriter(std::unique_ptr<windows::WindowEngine> engine,
                                     storage::Store* store, NodeId node_id, std::string node_name,
                                     std::vector<windows::SeriesKey> keys,
                                     const PodWorkloads* workloads)
    : engine_(std::move(engine)),
      store_(store),
      workloads_(workloads),
      node_name_(std::move(node_name)),
      keys_(std::move(keys)),
      node_id_(node_id),
      open_(keys_.size()) {}

NodeHistoryWriter::~NodeHistoryWriter() = default;

absl::Status NodeHistoryWriter::Append(Timestamp time,
                                       std::span<const std::optional<uint64_t>> values,
                                       storage::ScrapeBatch* batch) {
  if (values.size() != keys_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("NodeHistoryWriter: ", values.size(),
                                                   " values for ", keys_.size(), " series"));
  }
  if (last_ && time <= *last_) {
    return absl::InvalidArgumentError(absl::StrCat("NodeHistoryWriter: scrape of node ", node_name_,
                                                   " at ", FormatRfc3339Nano(time),
                                                   " is not after its previous scrape"));
  }
  if (!node_written_) batch->AddNode(node_id_, node_name_);
  node_written_ = true;
  for (SeriesId id : retire_) batch->RetireSeries(id, time);
  retire_.clear();
  const Timestamp bucket_start = engine_->RollupBucketStart(time);
  values_.clear();
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (!values[i]) continue;
    OpenBucket& open = open_[i];
    if (open.id == 0) {
      open.id = store_->AllocateSeriesId();
      batch->AddSeries(open.id, node_id_, EncodeSeriesKey(keys_[i]));
      open.start = bucket_start;
    } else if (open.start < bucket_start) {
      // This sample closes the bucket of the series' previous sample, as in IngestAt.
      absl::StatusOr<windows::BucketRollup> rollup = engine_->BuildRollup(open.start, open.samples);
      if (rollup.ok()) {
        batch->PutRollup(node_id_, open.id, open.start, windows::SerializeRollup(*rollup));
        PutUsageHistory(keys_[i], workloads_, open.id, open.start, open.samples, batch);
      }
      open.samples.clear();
      open.start = bucket_start;
    }
    open.samples.push_back({time, *values[i]});
    values_.push_back({open.id, *values[i]});
  }
  batch->PutScrape(node_id_, time, values_, &chain_);
  last_ = time;
  return absl::OkStatus();
}

}  // namespace kubestat::aggregator
