#include "kubestat/aggregator/recommender.h"

#include <algorithm>
#include <map>
#include <memory>
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
      clock_(clock) {}

absl::StatusOr<std::vector<Recommendation>> Recommender::List(std::string_view namespace_name,
                                                              const RecommendationFilter& filter,
                                                              RecommenderCost* cost) const {
  RecommenderCost scratch_cost;
  if (cost == nullptr) cost = &scratch_cost;
  // 1. The workloads of the pods discovery lists.
  const std::vector<scrapers::PodInfo> pods = workloads_.Pods(namespace_name);
  if (!namespace_name.empty() && pods.empty()) {
    return absl::NotFoundError(StrCat("namespace ", namespace_name, " has no pods"));
  }
  std::map<std::pair<std::string, Workload>, WorkloadGroup> groups;
  // (namespace, pod) -> the pod's group and its containers' indexes in it.
  struct PodPlace {
    WorkloadGroup* group;
    std::map<std::string, size_t, std::less<>> container_index;
  };
  std::map<std::pair<std::string, std::string>, PodPlace, std::less<>> places;
  for (const scrapers::PodInfo& pod : pods) {
    Workload workload = limits::WorkloadOf(pod.name, pod.owner_kind, pod.owner_name, pod.labels);
    WorkloadGroup& group = groups[{pod.namespace_name, workload}];
    group.namespace_name = pod.namespace_name;
    group.workload = std::move(workload);
    ++group.pods;
    if (filter.pods.Matches(pod.labels)) group.selected = true;
    PodPlace& place = places[{pod.namespace_name, pod.name}];
    place.group = &group;
    for (const limits::ContainerResources& c : pod.containers) {
      place.container_index[c.name] = group.ContainerIndex(c);
    }
  }

  // 2. Where the history of each workload container goes (its owner, workload_history.h),
  //    and the live container series of its pods, by node, for the newest samples.
  std::map<std::string, UsageAccumulator*, std::less<>> owners;
  for (auto& entry : groups) {
    WorkloadGroup& group = entry.second;
    if (!group.selected) continue;
    for (size_t i = 0; i < group.containers.size(); ++i) {
      for (windows::Resource r : {windows::Resource::kCpu, windows::Resource::kMemory}) {
        owners[HistoryOwner(group.namespace_name, group.workload, group.containers[i].name, r)] =
            &group.usage[i][LimitsResource(r)];
      }
    }
  }
  std::map<storage::NodeId, std::unordered_map<storage::SeriesId, UsageAccumulator*>> by_node;
  for (const StoredSeries& s : ingestor_.ContainerSeries(namespace_name)) {
    auto place = places.find(std::make_pair(s.key.pod_namespace, s.key.pod));
    if (place == places.end() || !place->second.group->selected) continue;
    auto index = place->second.container_index.find(s.key.container);
    if (index == place->second.container_index.end()) continue;
    by_node[s.node][s.id] =
        &place->second.group->usage[index->second][LimitsResource(s.key.resource)];
  }

  // 3. Read: the histograms of the closed buckets before the previous one, of every pod the
  //    workloads had (gone ones too), then the samples since of the live series.
  const Timestamp now = clock_.Now();
  const Duration width = ingestor_.engine_options().rollup_width;
  const Timestamp current = now - Duration(now.time_since_epoch().count() % width.count());
  const Timestamp cut = current - width;
  absl::Status read = store_.ReadHistory(
      HistoryNamespacePrefix(namespace_name), now - options_.history, cut - Duration(1),
      [&](std::string_view owner, storage::SeriesId, Timestamp start, std::string_view bytes) {
        ++cost->history_records;
        cost->history_bytes += bytes.size();
        auto target = owners.find(owner);
        if (target == owners.end()) return;
        absl::StatusOr<UsageHistogram> h = UsageHistogram::Parse(bytes);
        if (!h.ok()) return;  // one unreadable hour leaves the others
        target->second->histogram.Merge(*h);
        target->second->Note(start, start + width - Duration(1), h->count());
      });
  if (!read.ok()) return read;
  for (const auto& entry : by_node) {
    // Named, not a structured binding: clang 14 cannot capture those in a lambda.
    const storage::NodeId node = entry.first;
    const auto& series = entry.second;
    absl::Status s =
        store_.ReadScrapes(node, cut - Duration(1), now,
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

  // 4. Each workload's recommendations, fitted into its namespace's LimitRanges.
  std::map<std::string, std::vector<limits::LimitRange>, std::less<>> limit_ranges;
  std::vector<Recommendation> out;
  for (auto& entry : groups) {
    WorkloadGroup& group = entry.second;
    if (!group.selected) continue;
    for (size_t i = 0; i < group.containers.size(); ++i) {
      for (limits::Resource r : limits::kResources) {
        const size_t ri = static_cast<size_t>(r);
        const UsageAccumulator& a = group.usage[i][ri];
        const double unit = r == limits::Resource::kCpu ? kNanocoresPerMillicore : 1;
        group.containers[i].usage[ri] = {
            Summarize(a.histogram, options_.recommend.cpu_percentile, unit), a.history};
      }
    }
    auto lr = limit_ranges.find(group.namespace_name);
    if (lr == limit_ranges.end()) {
      lr = limit_ranges.emplace(group.namespace_name, workloads_.LimitRanges(group.namespace_name))
               .first;
    }
    for (Recommendation& r :
         limits::Recommend(group.namespace_name, group.workload, group.pods, group.containers,
                           lr->second, options_.recommend, options_.history)) {
      if (LowestConfidence(r) >= filter.min_confidence) out.push_back(std::move(r));
    }
  }
  std::sort(out.begin(), out.end(), [](const Recommendation& a, const Recommendation& b) {
    if (a.namespace_name != b.namespace_name) return a.namespace_name < b.namespace_name;
    return a.Name() < b.Name();
  });
  return out;
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
