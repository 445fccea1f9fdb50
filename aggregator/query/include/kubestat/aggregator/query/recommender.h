// Recommender: the metrics/v1alpha1 Recommendation objects, computed on demand from the
// store's usage history and discovery's pods and LimitRanges.
//
// What it does. The pods discovery lists are grouped by workload (limits/workload.h); each
// container of a workload gets one Recommendation (limits/recommendation.h) from the samples
// of that container in every pod the workload had:
//   - closed rollup buckets older than the previous one: the usage histograms the store keeps
//     for `history` under the workload and container (workload_history.h, storage/store.h
//     'W'), one seek per hour for a namespace or the whole cluster; they include the pods
//     that are gone (a rolled Deployment's old pods, a StatefulSet pod's earlier series);
//   - the previous and the current bucket: the samples themselves (store blobs) of the live
//     series, since a bucket's histogram is written only when the series' next sample
//     closes it.
// Merging the hourly histograms gives the percentile of every sample of the history, within
// the histogram's 5% (usage_histogram.h); the max is exact.
//
// The cache. Closed buckets never change, so per workload container and resource the merge
// of its closed buckets in the window is kept (a histogram) with the window's first bucket
// and the newest bucket read, and so is the merge of the previous bucket's samples (complete
// once the current bucket has started): a later request reads only the buckets closed since
// and the current bucket's samples. When the window's start moves past a bucket (once per
// bucket width, an hour) an entry is read again whole, so the first request after the hour
// turns pays what an uncached request pays, and later ones do not. The cache holds at most
// `cache_bytes` (least recently used entries are evicted, counted); requests read the
// closed history one at a time (a lock around the cache and the reads that fill it).
//
// Limitations. A pod that left within the last two buckets contributes its closed hours
// only (the newest samples are read for live series); its last, open bucket is never
// written.
//
// Errors: NotFound for a namespace without pods (List with a namespace, Get) or an unknown
// name; a store read error as it came.
// Ownership: borrows the ingestor, the store, the workload source and the clock.
// Thread-safety: const methods, safe from any thread when the borrowed parts are.
#ifndef KUBESTAT_AGGREGATOR_QUERY_RECOMMENDER_H_
#define KUBESTAT_AGGREGATOR_QUERY_RECOMMENDER_H_

#include <functional>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/aggregator/ingest/workload_history.h"
#include "kubestat/apimachinery/label_selector.h"
#include "kubestat/core/clock.h"
#include "kubestat/discovery/cluster_objects.h"
#include "kubestat/limits/recommendation.h"
#include "kubestat/storage/store.h"

namespace kubestat::aggregator {

struct RecommenderOptions {
  // --recommend-cpu-percentile, --recommend-cpu-margin, --recommend-memory-margin.
  // Default: RecommendOptions{} (95, 0.15, 0.15)
  limits::RecommendOptions recommend;
  // How far back usage is read (--recommendation-history; the store keeps the usage
  // histograms as long). Default: 192h (8 days)
  Duration history = std::chrono::hours(192);
  // Bytes the cache of merged closed history may hold (--recommendation-cache-mib); 0
  // turns it off. About 1 KB per container and resource (two entries: the closed hours and
  // the previous hour): a cluster-wide list at 1,000 nodes x 30 pods holds 26 MB, at 5,000
  // nodes some 130 MB. Default: 192 MiB
  size_t cache_bytes = size_t{192} << 20;

  // InvalidArgument naming the flag.
  [[nodiscard]] absl::Status Validate() const;
};

// Pods and LimitRanges as discovery knows them (and, for the ingestor, the workload of a
// pod). Implementations must be thread-safe.
class WorkloadSource : public PodWorkloads {
 public:
  // The pods of `namespace_name` (every pod when empty).
  virtual std::vector<discovery::PodInfo> Pods(std::string_view namespace_name) const = 0;
  // The LimitRanges of a namespace.
  virtual std::vector<limits::LimitRange> LimitRanges(std::string_view namespace_name) const = 0;
};

// What to list.
struct RecommendationFilter {
  // Only workloads with a pod whose labels match. Default: everything
  LabelSelector pods;
  // Only recommendations whose lowest confidence is at least this, in [0, 1]. Default: 0
  double min_confidence = 0;
};

// What one computation read, for benchmarks and logs.
struct RecommenderCost {
  uint64_t history_records = 0;  // usage histograms read
  uint64_t history_bytes = 0;    // their bytes (values)
  uint64_t sample_blobs = 0;     // scrape blobs read for the newest buckets
  uint64_t cache_hits = 0;       // containers and resources whose closed history was cached
  uint64_t cache_misses = 0;     // ... that was read whole
};

// The cache's figures since start, for /metrics.
struct RecommenderCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;  // entries evicted to stay within cache_bytes
  uint64_t entries = 0;    // now
  uint64_t bytes = 0;      // now (approximate)
};

class RecommenderHistoryCache;

class Recommender {
 public:
  Recommender(RecommenderOptions options, const Ingestor& ingestor, const storage::Store& store,
              const WorkloadSource& workloads, const Clock& clock);
  ~Recommender();
  Recommender(const Recommender&) = delete;
  Recommender& operator=(const Recommender&) = delete;

  const RecommenderOptions& options() const { return options_; }

  // The recommendations of a namespace (all namespaces when empty), sorted by (namespace,
  // name). NotFound when `namespace_name` is given and has no pod.
  [[nodiscard]] absl::StatusOr<std::vector<limits::Recommendation>> List(
      std::string_view namespace_name, const RecommendationFilter& filter = {},
      RecommenderCost* cost = nullptr) const;
  // One recommendation by name ("deployment.web.app"); NotFound when there is none.
  [[nodiscard]] absl::StatusOr<limits::Recommendation> Get(std::string_view namespace_name,
                                                           std::string_view name) const;

  RecommenderCacheStats CacheStats() const;
  // Called with CacheStats() after every request (for /metrics); set before requests are
  // served. Default: none
  void SetCacheObserver(std::function<void(const RecommenderCacheStats&)> observer) {
    cache_observer_ = std::move(observer);
  }

 private:
  RecommenderOptions options_;
  const Ingestor& ingestor_;
  const storage::Store& store_;
  const WorkloadSource& workloads_;
  const Clock& clock_;
  std::unique_ptr<RecommenderHistoryCache> cache_;
  std::function<void(const RecommenderCacheStats&)> cache_observer_;
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_QUERY_RECOMMENDER_H_
