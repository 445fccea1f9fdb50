// recommend_bench: the cost of computing every recommendation of a cluster from a week of
// usage history in the store (a component benchmark: a synthetic store, the real Ingestor,
// Recommender and RocksDB).
//
// The store holds, for --nodes nodes x --pods-per-node pods (one or two containers each,
// every 10 pods one Deployment, ten namespaces): 8 days of hourly usage histograms of every
// container series ('H' keys, --hours of them, drawn from a pool of realistic histograms: a
// cpu hour spanning a factor of 3, a memory hour a few percent), the dictionary, and the last
// two hours of samples at --sample-interval (what the newest buckets are read from).
// Printed: write time and disk per node-week of history; then for Recommender::List over
// every namespace and over one: CPU time, wall time, history records and bytes read, sample
// blobs read, and the RSS delta of the call.
//
//   recommend_bench [--nodes 1000] [--pods-per-node 30] [--hours 190] [--sample-interval 60]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/aggregator/ingest/series_registry.h"
#include "kubestat/aggregator/query/recommender.h"
#include "kubestat/core/clock.h"
#include "kubestat/storage/store.h"
#include "kubestat/testing/temp_dir.h"
#include "kubestat/windows/usage_histogram.h"
#include "process_figures.h"

namespace kubestat {
namespace {

using aggregator::IngestOptions;
using aggregator::Ingestor;
using aggregator::Recommender;
using aggregator::RecommenderCacheStats;
using aggregator::RecommenderCost;
using aggregator::RecommenderOptions;
using std::chrono::hours;
using std::chrono::seconds;
using windows::SeriesKey;
using windows::UsageHistogram;

constexpr char kHash[] = "5f6c7b8d9";

using bench::CpuSeconds;
using bench::RssKiB;
using bench::WallSeconds;

struct PodSpec {
  std::string namespace_name;
  std::string name;
  std::string deployment;
  int containers = 1;
};

struct Cluster {
  int nodes = 0;
  int pods_per_node = 0;
  std::vector<std::vector<PodSpec>> pods;  // by node

  Cluster(int n, int per_node) : nodes(n), pods_per_node(per_node), pods(n) {
    for (int node = 0; node < n; ++node) {
      for (int i = 0; i < per_node; ++i) {
        const int global = node * per_node + i;
        const int deployment = global / 10;
        PodSpec pod;
        pod.namespace_name = "ns-" + std::to_string(deployment % 10);
        pod.deployment = "d" + std::to_string(deployment);
        pod.name = pod.deployment + "-" + kHash + "-p" + std::to_string(global);
        pod.containers = 1 + i % 2;
        pods[node].push_back(pod);
      }
    }
  }

  static std::string NodeName(int node) { return "node-" + std::to_string(node); }
};

class BenchWorkloads final : public aggregator::WorkloadSource {
 public:
  explicit BenchWorkloads(const Cluster& cluster) : cluster_(cluster) {}
  std::vector<discovery::PodInfo> Pods(std::string_view namespace_name) const override {
    std::vector<discovery::PodInfo> out;
    for (int node = 0; node < cluster_.nodes; ++node) {
      for (const PodSpec& p : cluster_.pods[node]) {
        if (!namespace_name.empty() && p.namespace_name != namespace_name) continue;
        discovery::PodInfo info;
        info.name = p.name;
        info.namespace_name = p.namespace_name;
        info.node_name = Cluster::NodeName(node);
        info.owner_kind = "ReplicaSet";
        info.owner_name = p.deployment + "-" + kHash;
        info.labels = {{"app", p.deployment}, {"pod-template-hash", kHash}};
        std::vector<limits::ContainerResources> containers;
        for (int c = 0; c < p.containers; ++c) {
          limits::ContainerResources r;
          r.name = c == 0 ? "app" : "sidecar";
          containers.push_back(r);
        }
        info.containers = std::move(containers);
        out.push_back(std::move(info));
      }
    }
    return out;
  }
  std::optional<limits::Workload> WorkloadOfPod(std::string_view, std::string_view) const override {
    return std::nullopt;  // the history is written here under each pod's Deployment
  }
  std::vector<limits::LimitRange> LimitRanges(std::string_view) const override {
    limits::LimitRange lr;
    lr.name = "limits";
    limits::LimitRangeItem item;
    item.min.cpu = 50;
    item.max.memory = int64_t{2} << 30;
    item.max_limit_request_ratio.cpu = 4000;
    lr.items.push_back(item);
    return {lr};
  }

 private:
  const Cluster& cluster_;
};

int Main(int argc, char** argv) {
  int nodes = 1000, pods_per_node = 30, history_hours = 190, sample_interval = 60;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = atoi(argv[i + 1]);
    if (flag == "--nodes")
      nodes = value;
    else if (flag == "--pods-per-node")
      pods_per_node = value;
    else if (flag == "--hours")
      history_hours = value;
    else if (flag == "--sample-interval")
      sample_interval = value;
    else {
      fprintf(stderr, "recommend_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  const Cluster cluster(nodes, pods_per_node);
  testing::TempDir dir("kubestat-recommend-bench");
  storage::StoreOptions store_options;
  store_options.dir = dir.File("store");
  store_options.history_retention = hours(192);
  auto store = storage::Store::Open(store_options);
  if (!store.ok()) {
    fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 1;
  }

  // A pool of hourly histograms: cpu (nanocores, an hour spanning a factor of 3 around
  // 20m..800m) and memory (bytes, +-3% around 50Mi..1.5Gi), 360 samples each (10s scrapes).
  std::mt19937_64 rng(7);
  std::vector<std::string> cpu_pool, memory_pool;
  for (int i = 0; i < 64; ++i) {
    UsageHistogram cpu, memory;
    const double cpu_base = 20e6 * std::pow(40.0, i / 63.0);
    const double memory_base = 50.0 * (1 << 20) * std::pow(30.0, i / 63.0);
    std::uniform_real_distribution<double> spread(1.0 / std::sqrt(3.0), std::sqrt(3.0));
    std::uniform_real_distribution<double> wobble(0.97, 1.03);
    for (int s = 0; s < 360; ++s) {
      cpu.Add(static_cast<uint64_t>(cpu_base * spread(rng)));
      memory.Add(static_cast<uint64_t>(memory_base * wobble(rng)));
    }
    cpu_pool.push_back(cpu.Serialize());
    memory_pool.push_back(memory.Serialize());
  }

  const Timestamp now = Timestamp(hours(24 * 20000)) + std::chrono::minutes(30);
  const Timestamp current = now - std::chrono::minutes(30);
  const Timestamp cut = current - hours(1);
  uint64_t history_records = 0, history_value_bytes = 0;
  double t0 = WallSeconds();
  for (int node = 0; node < nodes; ++node) {
    storage::ScrapeBatch batch;
    const storage::NodeId node_id = (*store)->AllocateNodeId();
    batch.AddNode(node_id, Cluster::NodeName(node));
    std::vector<storage::SeriesId> ids;
    for (const PodSpec& p : cluster.pods[node]) {
      for (int c = 0; c < p.containers; ++c) {
        for (windows::Resource r : {windows::Resource::kCpu, windows::Resource::kMemory}) {
          const storage::SeriesId id = (*store)->AllocateSeriesId();
          batch.AddSeries(id, node_id,
                          aggregator::EncodeSeriesKey(
                              SeriesKey::Container(Cluster::NodeName(node), p.namespace_name,
                                                   p.name, c == 0 ? "app" : "sidecar", r)));
          const std::string owner = aggregator::HistoryOwner(
              p.namespace_name, limits::Workload{"Deployment", p.deployment},
              c == 0 ? "app" : "sidecar", r);
          for (int h = 0; h < history_hours; ++h) {
            const std::string& bytes =
                (r == windows::Resource::kCpu ? cpu_pool : memory_pool)[(id * 31 + h) % 64];
            batch.PutHistory(owner, id, cut - hours(history_hours - h), bytes);
            ++history_records;
            history_value_bytes += bytes.size();
          }
          ids.push_back(id);
        }
      }
    }
    if (!(*store)->Write(batch).ok()) return 1;
  }
  if (!(*store)->Flush().ok()) return 1;
  const double write_seconds = WallSeconds() - t0;
  const uint64_t history_disk = (*store)->DiskBytes();
  const double node_weeks = nodes * history_hours / 168.0;
  printf(
      "history: %d nodes x %d pods, %d hours: %llu records, %.1f MB of values; written in "
      "%.1f s; disk %.1f MB = %.0f KB per node-week (%.1f bytes per container-series-hour)\n",
      nodes, pods_per_node, history_hours, static_cast<unsigned long long>(history_records),
      history_value_bytes / 1e6, write_seconds, history_disk / 1e6, history_disk / 1e3 / node_weeks,
      static_cast<double>(history_disk) / history_records);

  // The newest two hours as samples (scrape blobs), every node at every interval.
  {
    std::vector<std::vector<storage::SeriesId>> node_series(nodes);
    absl::StatusOr<storage::Dictionary> dict = (*store)->LoadDictionary();
    if (!dict.ok()) return 1;
    for (const storage::SeriesEntry& e : dict->series) node_series[e.node - 1].push_back(e.id);
    std::uniform_int_distribution<uint64_t> cpu_value(20000000, 800000000);
    for (int node = 0; node < nodes; ++node) {
      storage::ScrapeBatch batch;
      for (Timestamp t = cut; t <= now; t += seconds(sample_interval)) {
        std::vector<storage::SeriesValue> values;
        for (storage::SeriesId id : node_series[node]) values.push_back({id, cpu_value(rng)});
        batch.PutScrape(static_cast<storage::NodeId>(node + 1), t, values);
      }
      if (!(*store)->Write(batch).ok()) return 1;
    }
    if (!(*store)->Flush().ok()) return 1;
  }

  FakeClock clock(now);
  IngestOptions ingest_options;
  auto ingestor = Ingestor::Create(ingest_options, store->get(), &clock);
  if (!ingestor.ok()) return 1;
  t0 = WallSeconds();
  if (absl::Status s = (*ingestor)->Rebuild(); !s.ok()) {
    fprintf(stderr, "rebuild: %s\n", s.ToString().c_str());
    return 1;
  }
  printf("rebuild (not part of the cost): %.1f s, %zu container series\n", WallSeconds() - t0,
         (*ingestor)->ContainerSeries("").size());

  BenchWorkloads workloads(cluster);
  // Each scope from a cold cache (a new recommender), then twice more: the closed hours come
  // from the cache and only the newest samples are read.
  for (const char* ns : {"", "ns-3"}) {
    Recommender recommender(RecommenderOptions{}, **ingestor, **store, workloads, clock);
    for (const char* request : {"first", "next", "next"}) {
      const long rss_before = RssKiB();
      const double cpu_before = CpuSeconds();
      const double wall_before = WallSeconds();
      RecommenderCost cost;
      absl::StatusOr<std::vector<limits::Recommendation>> recs = recommender.List(ns, {}, &cost);
      const double wall = WallSeconds() - wall_before;
      const double cpu = CpuSeconds() - cpu_before;
      const long rss_after = RssKiB();
      if (!recs.ok()) {
        fprintf(stderr, "list: %s\n", recs.status().ToString().c_str());
        return 1;
      }
      uint64_t bounded = 0;
      for (const limits::Recommendation& r : *recs) bounded += !r.requests[0].bound_by.empty();
      const RecommenderCacheStats cache = recommender.CacheStats();
      printf(
          "List(%s), %s request: %zu recommendations (%llu cpu requests moved by the "
          "LimitRange); cpu %.2f s, wall %.2f s; read %llu history records = %.1f MB, %llu "
          "sample blobs; cache %llu hits, %llu misses, %llu entries = %.1f MB; RSS %+ld KiB "
          "(%ld -> %ld)\n",
          *ns ? ns : "every namespace", request, recs->size(),
          static_cast<unsigned long long>(bounded), cpu, wall,
          static_cast<unsigned long long>(cost.history_records), cost.history_bytes / 1e6,
          static_cast<unsigned long long>(cost.sample_blobs),
          static_cast<unsigned long long>(cost.cache_hits),
          static_cast<unsigned long long>(cost.cache_misses),
          static_cast<unsigned long long>(cache.entries), cache.bytes / 1e6, rss_after - rss_before,
          rss_before, rss_after);
    }
  }
  return 0;
}

}  // namespace
}  // namespace kubestat

int main(int argc, char** argv) { return kubestat::Main(argc, argv); }
