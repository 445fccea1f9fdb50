#include "kubestat/aggregator/query/recommender.h"

#include <algorithm>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "kubestat/core/str_cat.h"
#include "kubestat/core/time.h"
#include "kubestat/limits/workload.h"
#include "kubestat/windows/usage_histogram.h"

namespace kubestat::aggregator {
namespace {

using limits::ContainerUsage;
using limits::Recommendation;
using limits::Workload;
using windows::UsageHistogram;

constexpr double kNanocoresPerMillicore = 1e6;

// The samples of one container of a workload, per resource, while they are read.
struct UsageAccumulator {
  UsageHistogram histogram;
  limits::History history;

  void Note(Timestamp from, Timestamp to, uint64_t samples) {
    if (samples == 0) return;
    history.from = history.samples == 0 ? from : std::min(history.from, from);
    history.to = history.samples == 0 ? to : std::max(history.to, to);
    history.samples += samples;
  }
};

struct WorkloadGroup {
  std::string namespace_name;
  Workload workload;
  size_t pods = 0;
  bool selected = false;  // a pod matched the filter's selector
  std::vector<ContainerUsage> containers;
  std::vector<std::array<UsageAccumulator, 2>> usage;  // per container, by limits::Resource

  size_t ContainerIndex(const limits::ContainerResources& c) {
    for (size_t i = 0; i < containers.size(); ++i) {
      if (containers[i].name == c.name) return i;
    }
    ContainerUsage u;
    u.name = c.name;
    u.declared_requests = c.requests;
    u.declared_limits = c.limits;
    containers.push_back(std::move(u));
    usage.emplace_back();
    return containers.size() - 1;
  }
};

limits::UsageSummary Summarize(const UsageHistogram& h, double percentile, double unit) {
  limits::UsageSummary s;
  s.p50 = static_cast<double>(h.Percentile(50)) / unit;
  s.percentile = static_cast<double>(h.Percentile(percentile)) / unit;
  s.max = static_cast<double>(h.max()) / unit;
  return s;
}

size_t LimitsResource(windows::Resource r) {
  return static_cast<size_t>(r == windows::Resource::kCpu ? limits::Resource::kCpu
                                                          : limits::Resource::kMemory);
}

double LowestConfidence(const Recommendation& r) {
  double lowest = 1;
  for (const auto* values : {&r.requests, &r.limits}) {
    for (const limits::RecommendedValue& v : *values) lowest = std::min(lowest, v.confidence);
  }
  return lowest;
}

}  // namespace

// The merged closed buckets of one owner (workload container and resource) in the window
// that starts with bucket `first`, read through `through`.
struct ClosedHistory {
  Timestamp first{};
  Timestamp through{};
  UsageHistogram histogram;
  limits::History history;

  size_t MemoryBytes(size_t owner_bytes) const {
    // The entry, its key and the map and list nodes around them.
    return sizeof(*this) + histogram.MemoryBytes() - sizeof(UsageHistogram) + 2 * owner_bytes + 128;
  }
};

// Least recently used entries by owner, within a byte budget. Not thread-safe: the
// recommender holds `mu` around a request's use of it.
class RecommenderHistoryCache {
 public:
  explicit RecommenderHistoryCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  std::mutex mu;

  // The entry of `owner`, now the most recently used; nullptr when there is none.
  const ClosedHistory* Find(std::string_view owner) {
    auto it = entries_.find(owner);
    if (it == entries_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second.place);
    return &it->second.value;
  }

  void Put(const std::string& owner, ClosedHistory value) {
    if (max_bytes_ == 0) return;
    auto it = entries_.find(owner);
    if (it != entries_.end()) {
      bytes_ -= it->second.bytes;
      order_.erase(it->second.place);
      entries_.erase(it);
    }
    const size_t bytes = value.MemoryBytes(owner.size());
    if (bytes > max_bytes_) return;
    order_.push_front(owner);
    entries_.emplace(owner, Entry{std::move(value), bytes, order_.begin()});
    bytes_ += bytes;
    while (bytes_ > max_bytes_) {
      auto last = entries_.find(order_.back());
      bytes_ -= last->second.bytes;
      entries_.erase(last);
      order_.pop_back();
      ++stats_.evictions;
    }
  }

  void Count(uint64_t hits, uint64_t misses) {
    stats_.hits += hits;
    stats_.misses += misses;
  }

  RecommenderCacheStats Stats() const {
    RecommenderCacheStats s = stats_;
    s.entries = entries_.size();
    s.bytes = bytes_;
    return s;
  }

 private:
  struct Entry {
    ClosedHistory value;
    size_t bytes = 0;
    std::list<std::string>::iterator place;  // in order_
  };
  const size_t max_bytes_;
  size_t bytes_ = 0;
  std::map<std::string, Entry, std::less<>> entries_;
  std::list<std::string> order_;  // most recently used first
  RecommenderCacheStats stats_;
};

namespace {

// Adds to each owner's accumulator its closed buckets with after < start <= through: from
// the cache, then read from the store (the buckets the cache lacks), and keeps them cached.
absl::Status ReadClosedHistory(const storage::Store& store, RecommenderHistoryCache& cache,
                               Duration width, std::string_view namespace_name, Timestamp after,
                               Timestamp through,
                               const std::map<std::string, UsageAccumulator*, std::less<>>& owners,
                               RecommenderCost* cost) {
  // The window's first bucket: the first bucket start after `after`.
  const Timestamp first =
      after -
      Duration(((after.time_since_epoch().count() % width.count()) + width.count()) %
               width.count()) +
      width;
  // What each owner has (from the cache) and what it still needs read (buckets after
  // `read_after`).
  struct Pending {
    ClosedHistory closed;
    Timestamp read_after{};
  };
  std::lock_guard<std::mutex> lock(cache.mu);
  std::map<std::string_view, Pending> pending;
  Timestamp read_from = through;
  uint64_t hits = 0, misses = 0;
  for (const auto& entry : owners) {
    Pending p;
    const ClosedHistory* cached = cache.Find(entry.first);
    if (cached != nullptr && cached->first == first) {
      p.closed = *cached;
      p.read_after = cached->through;
      ++hits;
    } else {
      p.closed.first = first;
      p.read_after = after;
      ++misses;
    }
    p.closed.through = through;
    read_from = std::min(read_from, p.read_after);
    pending.emplace(entry.first, std::move(p));
  }
  cache.Count(hits, misses);
  cost->cache_hits += hits;
  cost->cache_misses += misses;
  if (read_from < through) {
    absl::Status s = store.ReadHistory(
        HistoryNamespacePrefix(namespace_name), read_from, through,
        [&](std::string_view owner, storage::SeriesId, Timestamp start, std::string_view bytes) {
          ++cost->history_records;
          cost->history_bytes += bytes.size();
          auto target = pending.find(owner);
          if (target == pending.end() || start <= target->second.read_after) return;
          absl::StatusOr<UsageHistogram> h = UsageHistogram::Parse(bytes);
          if (!h.ok()) return;  // one unreadable hour leaves the others
          ClosedHistory& closed = target->second.closed;
          closed.histogram.Merge(*h);
          const Timestamp end = start + width - Duration(1);
          closed.history.from =
              closed.history.samples == 0 ? start : std::min(closed.history.from, start);
          closed.history.to = closed.history.samples == 0 ? end : std::max(closed.history.to, end);
          closed.history.samples += h->count();
        });
    if (!s.ok()) return s;
  }
  for (const auto& entry : owners) {
    ClosedHistory& closed = pending.find(entry.first)->second.closed;
    UsageAccumulator& target = *entry.second;
    target.histogram.Merge(closed.histogram);
    target.Note(closed.history.from, closed.history.to, closed.history.samples);
    cache.Put(entry.first, std::move(closed));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RecommenderOptions::Validate() const {
  if (absl::Status s = recommend.Validate(); !s.ok()) return s;
  if (history < std::chrono::hours(1)) {
    return absl::InvalidArgumentError(
        StrCat("--recommendation-history: must be at least 1h, got ", FormatDuration(history)));
  }
  return absl::OkStatus();
}

Recommender::Recommender(RecommenderOptions options, const Ingestor& ingestor,
                         const storage::Store& store, const WorkloadSource& workloads,
                         const Clock& clock)
    : options_(std::move(options)),
      ingestor_(ingestor),
      store_(store),
      workloads_(workloads),
      clock_(clock),
      cache_(std::make_unique<RecommenderHistoryCache>(options_.cache_bytes)) {}

Recommender::~Recommender() = default;

RecommenderCacheStats Recommender::CacheStats() const {
  std::lock_guard<std::mutex> lock(cache_->mu);
  return cache_->Stats();
}

namespace {

// The workloads of a list: each (namespace, workload) with its pods' containers, and where
// each pod's containers go in it.
struct WorkloadGroups {
  std::map<std::pair<std::string, Workload>, WorkloadGroup> groups;
  // (namespace, pod) -> the pod's group and its containers' indexes in it.
  struct PodPlace {
    WorkloadGroup* group;
    std::map<std::string, size_t, std::less<>> container_index;
  };
  std::map<std::pair<std::string, std::string>, PodPlace, std::less<>> places;
};

// Step 1: the workloads of the pods discovery lists; a group is selected when one of its pods
// matches the filter's label selector.
WorkloadGroups GroupByWorkload(const std::vector<discovery::PodInfo>& pods,
                               const RecommendationFilter& filter) {
  WorkloadGroups out;
  for (const discovery::PodInfo& pod : pods) {
    Workload workload = limits::WorkloadOf(pod.name, pod.owner_kind, pod.owner_name, pod.labels);
    WorkloadGroup& group = out.groups[{pod.namespace_name, workload}];
    group.namespace_name = pod.namespace_name;
    group.workload = std::move(workload);
    ++group.pods;
    if (filter.pods.Matches(pod.labels)) group.selected = true;
    WorkloadGroups::PodPlace& place = out.places[{pod.namespace_name, pod.name}];
    place.group = &group;
    for (const limits::ContainerResources& c : pod.containers) {
      place.container_index[c.name] = group.ContainerIndex(c);
    }
  }
  return out;
}

// Where each selected workload container's usage is gathered: its history's owner key
// (workload_history.h) and, by node, the live container series of its pods.
struct UsageTargets {
  std::map<std::string, UsageAccumulator*, std::less<>> owners;
  std::map<storage::NodeId, std::unordered_map<storage::SeriesId, UsageAccumulator*>> by_node;
};

// Step 2.
UsageTargets TargetsOf(WorkloadGroups& workloads, const std::vector<StoredSeries>& series) {
  UsageTargets out;
  for (auto& entry : workloads.groups) {
    WorkloadGroup& group = entry.second;
    if (!group.selected) continue;
    for (size_t i = 0; i < group.containers.size(); ++i) {
      for (windows::Resource r : {windows::Resource::kCpu, windows::Resource::kMemory}) {
        out.owners[HistoryOwner(group.namespace_name, group.workload, group.containers[i].name,
                                r)] = &group.usage[i][LimitsResource(r)];
      }
    }
  }
  for (const StoredSeries& s : series) {
    auto place = workloads.places.find(std::make_pair(s.key.pod_namespace, s.key.pod));
    if (place == workloads.places.end() || !place->second.group->selected) continue;
    auto index = place->second.container_index.find(s.key.container);
    if (index == place->second.container_index.end()) continue;
    out.by_node[s.node][s.id] =
        &place->second.group->usage[index->second][LimitsResource(s.key.resource)];
  }
  return out;
}

// The previous bucket of each owner, complete once the current one has started: read from the
// samples once and cached per owner (under the owner's key and a 0x01).
struct PreviousBucket {
  std::string key;
  ClosedHistory part;
  bool read = false;  // not cached: read from the samples
};
using PreviousBuckets = std::unordered_map<const UsageAccumulator*, PreviousBucket>;

// Step 3, after the closed buckets: each owner's previous bucket [cut, current) from the cache,
// or marked to be read.
PreviousBuckets LookUpPreviousBuckets(RecommenderHistoryCache& cache, const UsageTargets& targets,
                                      Timestamp cut, Timestamp current) {
  PreviousBuckets previous;
  std::lock_guard<std::mutex> lock(cache.mu);
  for (const auto& entry : targets.owners) {
    PreviousBucket& p = previous[entry.second];
    p.key = entry.first + '\x01';
    const ClosedHistory* cached = cache.Find(p.key);
    if (cached != nullptr && cached->first == cut) {
      p.part = *cached;
    } else {
      p.part.first = cut;
      p.part.through = current - Duration(1);
      p.read = true;
    }
  }
  return previous;
}

// Then the samples: of the previous buckets not cached, and of the current bucket
// [current, now] (every time); the previous buckets join the usage and the cache.
absl::Status ReadRecentSamples(const storage::Store& store, RecommenderHistoryCache& cache,
                               const UsageTargets& targets, PreviousBuckets& previous,
                               Timestamp cut, Timestamp current, Timestamp now,
                               RecommenderCost* cost) {
  for (const auto& entry : targets.by_node) {
    // Named, not a structured binding: clang 14 cannot capture those in a lambda.
    const storage::NodeId node = entry.first;
    const auto& series = entry.second;
    bool read_previous = false;
    for (const auto& target : series) read_previous |= previous[target.second].read;
    if (read_previous) {
      absl::Status s = store.ReadScrapes(
          node, cut - Duration(1), current - Duration(1),
          [&](Timestamp t, std::span<const storage::SeriesValue> values) {
            ++cost->sample_blobs;
            for (const storage::SeriesValue& v : values) {
              auto target = series.find(v.id);
              if (target == series.end()) continue;
              PreviousBucket& p = previous[target->second];
              if (!p.read) continue;
              p.part.histogram.Add(v.value);
              p.part.history.from = p.part.history.samples == 0 ? t : p.part.history.from;
              p.part.history.to = t;
              ++p.part.history.samples;
            }
          });
      if (!s.ok()) return s;
    }
    absl::Status s =
        store.ReadScrapes(node, current - Duration(1), now,
                          [&](Timestamp t, std::span<const storage::SeriesValue> values) {
                            ++cost->sample_blobs;
                            for (const storage::SeriesValue& v : values) {
                              auto target = series.find(v.id);
                              if (target == series.end()) continue;
                              target->second->histogram.Add(v.value);
                              target->second->Note(t, t, 1);
                            }
                          });
    if (!s.ok()) return s;
  }
  std::lock_guard<std::mutex> lock(cache.mu);
  for (auto& entry : previous) {
    UsageAccumulator& target = *const_cast<UsageAccumulator*>(entry.first);
    const ClosedHistory& part = entry.second.part;
    target.histogram.Merge(part.histogram);
    target.Note(part.history.from, part.history.to, part.history.samples);
    if (entry.second.read) cache.Put(entry.second.key, std::move(entry.second.part));
  }
  return absl::OkStatus();
}

// Step 4: each selected workload's recommendations, its usage summarized and fitted into its
// namespace's LimitRanges, in (namespace, name) order.
std::vector<Recommendation> Fit(WorkloadGroups& workloads, const RecommendationFilter& filter,
                                const RecommenderOptions& options, const WorkloadSource& source) {
  std::map<std::string, std::vector<limits::LimitRange>, std::less<>> limit_ranges;
  std::vector<Recommendation> out;
  for (auto& entry : workloads.groups) {
    WorkloadGroup& group = entry.second;
    if (!group.selected) continue;
    for (size_t i = 0; i < group.containers.size(); ++i) {
      for (limits::Resource r : limits::kResources) {
        const size_t ri = static_cast<size_t>(r);
        const UsageAccumulator& a = group.usage[i][ri];
        const double unit = r == limits::Resource::kCpu ? kNanocoresPerMillicore : 1;
        group.containers[i].usage[ri] = {
            Summarize(a.histogram, options.recommend.cpu_percentile, unit), a.history};
      }
    }
    auto lr = limit_ranges.find(group.namespace_name);
    if (lr == limit_ranges.end()) {
      lr = limit_ranges.emplace(group.namespace_name, source.LimitRanges(group.namespace_name))
               .first;
    }
    for (Recommendation& r :
         limits::Recommend(group.namespace_name, group.workload, group.pods, group.containers,
                           lr->second, options.recommend, options.history)) {
      if (LowestConfidence(r) >= filter.min_confidence) out.push_back(std::move(r));
    }
  }
  std::sort(out.begin(), out.end(), [](const Recommendation& a, const Recommendation& b) {
    if (a.namespace_name != b.namespace_name) return a.namespace_name < b.namespace_name;
    return a.Name() < b.Name();
  });
  return out;
}

}  // namespace

absl::StatusOr<std::vector<Recommendation>> Recommender::List(std::string_view namespace_name,
                                                              const RecommendationFilter& filter,
                                                              RecommenderCost* cost) const {
  RecommenderCost scratch_cost;
  if (cost == nullptr) cost = &scratch_cost;
  // 1. The workloads of the pods discovery lists.
  const std::vector<discovery::PodInfo> pods = workloads_.Pods(namespace_name);
  if (!namespace_name.empty() && pods.empty()) {
    return absl::NotFoundError(StrCat("namespace ", namespace_name, " has no pods"));
  }
  WorkloadGroups workloads = GroupByWorkload(pods, filter);
  // 2. Where the usage of each workload container goes.
  const UsageTargets targets = TargetsOf(workloads, ingestor_.ContainerSeries(namespace_name));
  // 3. Read: the histograms of the closed buckets before the previous one, of every pod the
  //    workloads had (gone ones too), then the samples since of the live series.
  const Timestamp now = clock_.Now();
  const Duration width = ingestor_.engine_options().rollup_width;
  const Timestamp current = now - Duration(now.time_since_epoch().count() % width.count());
  const Timestamp cut = current - width;
  if (absl::Status s =
          ReadClosedHistory(store_, *cache_, width, namespace_name, now - options_.history,
                            cut - Duration(1), targets.owners, cost);
      !s.ok()) {
    return s;
  }
  PreviousBuckets previous = LookUpPreviousBuckets(*cache_, targets, cut, current);
  if (cache_observer_) cache_observer_(CacheStats());
  if (absl::Status s =
          ReadRecentSamples(store_, *cache_, targets, previous, cut, current, now, cost);
      !s.ok()) {
    return s;
  }
  // 4. Each workload's recommendations, fitted into its namespace's LimitRanges.
  return Fit(workloads, filter, options_, workloads_);
}

absl::StatusOr<Recommendation> Recommender::Get(std::string_view namespace_name,
                                                std::string_view name) const {
  absl::StatusOr<std::vector<Recommendation>> all = List(namespace_name);
  if (!all.ok()) return all.status();
  for (Recommendation& r : *all) {
    if (r.Name() == name) return std::move(r);
  }
  return absl::NotFoundError(StrCat("recommendation ", name, " not found"));
}

}  // namespace kubestat::aggregator
