// Window engine figures: ingest cost per sample and per node scrape (30-pod and 110-pod
// nodes), query cost for one pod and for every series of a node, and memory per node with
// a full day of windows (the engine's own accounting and the process RSS).
//
// Samples are a deterministic function of (series, time), so the sample source needs no
// memory: it regenerates what the store would return. Every node gets the same workload
// mix, which lets a day of windows be built quickly with RestoreSeries() from hourly
// rollups computed once per distinct series.
//
// Times are process CPU time. Usage: window_bench [--nodes=N] (default 1000)
#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kubestat/core/heap.h"
#include "kubestat/windows/window_engine.h"

namespace {

using kubestat::Duration;
using kubestat::ReadResidentBytes;
using kubestat::Timestamp;
using kubestat::windows::BucketRollup;
using kubestat::windows::Resource;
using kubestat::windows::Sample;
using kubestat::windows::SampleSource;
using kubestat::windows::SeriesKey;
using kubestat::windows::SeriesKeyHash;
using kubestat::windows::WindowEngine;
using std::chrono::hours;
using std::chrono::seconds;

constexpr int64_t kStepSeconds = 10;
const Timestamp kDayStart = Timestamp(seconds(1795219200));  // 2026-11-21T00:00:00Z

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The workload of a series: depends on everything in its key but the node.
uint64_t TemplateOf(const SeriesKey& key) {
  SeriesKey k = key;
  k.node.clear();
  return SeriesKeyHash()(k);
}

// Value of series `tmpl` at sample index `i` (10 s steps from kDayStart): one of five shapes.
uint64_t ValueAt(uint64_t tmpl, int64_t i) {
  const uint64_t r = SplitMix(tmpl ^ static_cast<uint64_t>(i) * 0x100000001b3ULL);
  const double u = static_cast<double>(r >> 11) / 9007199254740992.0;  // [0, 1)
  const double noise = 0.95 + 0.1 * u;
  switch (tmpl % 5) {
    case 0:  // steady cpu
      return static_cast<uint64_t>(250e6 * noise);
    case 1:  // diurnal cpu
      return static_cast<uint64_t>(
          800e6 * (1 + 0.7 * std::sin(2 * M_PI * static_cast<double>(i) / 8640.0)) * noise);
    case 2:  // spiky cpu
      return static_cast<uint64_t>(100e6 * noise * ((r & 63) == 0 ? 25 : 1));
    case 3:  // heavy-tailed (Pareto)
      return static_cast<uint64_t>(std::min(1e13, 1e6 / std::pow(1 - u, 1 / 1.3)));
    default:  // bimodal working set
      return static_cast<uint64_t>(((r & 1) ? 200.0 * (1 << 20) : 1.5 * (1 << 30)) * noise);
  }
}

int64_t IndexOf(Timestamp t) {
  return std::chrono::duration_cast<seconds>(t - kDayStart).count() / kStepSeconds;
}
Timestamp TimeOf(int64_t i) { return kDayStart + seconds(i * kStepSeconds); }

class GeneratedSource : public SampleSource {
 public:
  absl::Status ReadSamples(const SeriesKey& key, Timestamp after, Timestamp through,
                           std::vector<Sample>* out) override {
    const uint64_t tmpl = TemplateOf(key);
    int64_t i = std::max<int64_t>(0, IndexOf(after) + 1);
    while (TimeOf(i) <= after) ++i;
    for (; TimeOf(i) <= through; ++i) out->push_back({TimeOf(i), ValueAt(tmpl, i)});
    return absl::OkStatus();
  }
};

std::vector<SeriesKey> NodeSeries(const std::string& node, int pods) {
  std::vector<SeriesKey> keys;
  for (Resource r : {Resource::kCpu, Resource::kMemory}) {
    keys.push_back(SeriesKey::Node(node, r));
    for (const char* sys : {"kubelet", "runtime", "pods"}) {
      keys.push_back(SeriesKey::SystemContainer(node, sys, r));
    }
    for (int p = 0; p < pods; ++p) {
      const std::string pod = "app-" + std::to_string(p) + "-7d9f8c6b5-x2k4q";
      keys.push_back(SeriesKey::Pod(node, "team-" + std::to_string(p % 7), pod, r));
      for (const char* c : {"app", "sidecar"}) {
        keys.push_back(SeriesKey::Container(node, "team-" + std::to_string(p % 7), pod, c, r));
      }
    }
  }
  return keys;
}

double ResidentMiB() {
  return static_cast<double>(ReadResidentBytes().value_or(0)) / (1024.0 * 1024.0);
}

// Process CPU time: the figures should not depend on what else the machine runs.
struct CpuClock {
  using duration = std::chrono::nanoseconds;
  static std::chrono::time_point<CpuClock, duration> now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return std::chrono::time_point<CpuClock, duration>(
        duration(static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec));
  }
};

double Seconds(CpuClock::duration d) { return std::chrono::duration<double>(d).count(); }

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, std::string(s.message()).c_str());
    std::exit(1);
  }
}

// Hourly rollups of every complete hour up to `newest_index`, per workload template.
class RollupCache {
 public:
  const std::vector<BucketRollup>& For(const WindowEngine& engine, const SeriesKey& key,
                                       int64_t newest_index) {
    const uint64_t tmpl = TemplateOf(key);
    auto it = cache_.find(tmpl);
    if (it != cache_.end()) return it->second;
    std::vector<BucketRollup> rollups;
    const int64_t per_hour = 3600 / kStepSeconds;
    std::vector<Sample> bucket;
    for (int64_t h = 0; (h + 1) * per_hour - 1 <= newest_index; ++h) {
      bucket.clear();
      for (int64_t i = h * per_hour; i < (h + 1) * per_hour; ++i) {
        bucket.push_back({TimeOf(i), ValueAt(tmpl, i)});
      }
      auto rollup = engine.BuildRollup(TimeOf(h * per_hour), bucket);
      Check(rollup.status(), "BuildRollup");
      rollups.push_back(*std::move(rollup));
    }
    return cache_.emplace(tmpl, std::move(rollups)).first->second;
  }

 private:
  std::map<uint64_t, std::vector<BucketRollup>> cache_;
};

struct ScrapeFigures {
  double per_sample_ns;
  double per_scrape_us;
};

// Ingests `scrapes` more scrapes of every node after `*index`, timing them.
ScrapeFigures TimeScrapes(WindowEngine& engine, GeneratedSource& source,
                          const std::vector<std::vector<SeriesKey>>& nodes, int64_t* index,
                          int scrapes) {
  std::vector<std::vector<uint64_t>> templates;
  for (const auto& keys : nodes) {
    templates.emplace_back();
    for (const SeriesKey& k : keys) templates.back().push_back(TemplateOf(k));
  }
  uint64_t samples = 0;
  const auto start = CpuClock::now();
  for (int s = 0; s < scrapes; ++s) {
    ++*index;
    const Timestamp t = TimeOf(*index);
    for (size_t n = 0; n < nodes.size(); ++n) {
      for (size_t k = 0; k < nodes[n].size(); ++k) {
        Check(engine.Ingest(nodes[n][k], t, ValueAt(templates[n][k], *index), source), "Ingest");
        ++samples;
      }
    }
  }
  const double elapsed = Seconds(CpuClock::now() - start);
  return {elapsed * 1e9 / static_cast<double>(samples),
          elapsed * 1e6 / static_cast<double>(scrapes * nodes.size())};
}

}  // namespace

int main(int argc, char** argv) {
  int node_count = 1000;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--nodes=", 8) == 0) {
      node_count = std::atoi(argv[i] + 8);
    } else {
      std::fprintf(stderr, "usage: %s [--nodes=N]  (default 1000)\n", argv[0]);
      return 2;
    }
  }
  GeneratedSource source;
  RollupCache rollups;
  // Newest sample: a day and 20 minutes after the start, so every window is full.
  const int64_t newest_index = (86400 + 1200) / kStepSeconds;

  auto created = WindowEngine::Create({});
  Check(created.status(), "Create");
  WindowEngine& engine = **created;

  // Keys first, so the RSS growth below is the engine's alone.
  std::vector<std::vector<SeriesKey>> nodes;
  size_t series_count = 0;
  for (int n = 0; n < node_count; ++n) {
    nodes.push_back(NodeSeries("node-" + std::to_string(n), 30));
    series_count += nodes.back().size();
  }
  for (const SeriesKey& k : nodes[0]) rollups.For(engine, k, newest_index);

  const double rss_before = ResidentMiB();
  const auto fill_start = CpuClock::now();
  for (const auto& keys : nodes) {
    for (const SeriesKey& k : keys) {
      Check(engine.RestoreSeries(k, TimeOf(newest_index), rollups.For(engine, k, newest_index),
                                 source),
            "RestoreSeries");
    }
  }
  const double fill_seconds = Seconds(CpuClock::now() - fill_start);
  const double rss_after = ResidentMiB();
  const double engine_mib = static_cast<double>(engine.MemoryBytes()) / (1024.0 * 1024.0);

  std::printf(
      "window engine, %d nodes x 30 pods (%zu series, %zu per node), a day of 10 s "
      "samples per series\n",
      node_count, series_count, nodes[0].size());
  std::printf("  restore from hourly rollups: %.2f s (%.1f us per series)\n", fill_seconds,
              fill_seconds * 1e6 / static_cast<double>(series_count));
  std::printf(
      "  memory, engine accounting: %.1f MiB total, %.3f MiB per node, %.0f bytes "
      "per series\n",
      engine_mib, engine_mib / node_count,
      engine_mib * 1024 * 1024 / static_cast<double>(series_count));
  std::printf("  memory, process RSS growth: %.1f MiB total, %.3f MiB per node\n",
              rss_after - rss_before, (rss_after - rss_before) / node_count);

  int64_t index = newest_index;
  const ScrapeFigures at_scale = TimeScrapes(engine, source, nodes, &index, 6);
  std::printf(
      "  ingest (steady state, %zu series in the engine): %.0f ns per sample, "
      "%.1f us per 30-pod node scrape\n",
      series_count, at_scale.per_sample_ns, at_scale.per_scrape_us);
  const ScrapeFigures after = TimeScrapes(engine, source, nodes, &index, 6);
  const double engine_after_mib = static_cast<double>(engine.MemoryBytes()) / (1024.0 * 1024.0);
  std::printf("  ingest, next minute: %.0f ns per sample; engine memory then %.3f MiB per node\n",
              after.per_sample_ns, engine_after_mib / node_count);

  // Queries.
  {
    const int queries = 20000;
    size_t series_seen = 0;
    auto start = CpuClock::now();
    for (int q = 0; q < queries; ++q) {
      const std::string node = "node-" + std::to_string(q % node_count);
      const int p = q % 30;
      series_seen += engine
                         .QueryPod(node, "team-" + std::to_string(p % 7),
                                   "app-" + std::to_string(p) + "-7d9f8c6b5-x2k4q")
                         .size();
    }
    double elapsed = Seconds(CpuClock::now() - start);
    std::printf("  query one pod (pod + 2 containers, cpu and memory = %zu series): %.2f us\n",
                series_seen / queries, elapsed * 1e6 / queries);
    const int node_queries = 500;
    series_seen = 0;
    start = CpuClock::now();
    for (int q = 0; q < node_queries; ++q) {
      series_seen += engine.QueryNode("node-" + std::to_string(q % node_count)).size();
    }
    elapsed = Seconds(CpuClock::now() - start);
    std::printf("  query a whole node (%zu series): %.1f us\n", series_seen / node_queries,
                elapsed * 1e6 / node_queries);
  }

  // A 110-pod node in its own engine.
  {
    auto big = WindowEngine::Create({});
    Check(big.status(), "Create");
    std::vector<std::vector<SeriesKey>> one = {NodeSeries("big-node", 110)};
    for (const SeriesKey& k : one[0]) {
      Check((*big)->RestoreSeries(k, TimeOf(newest_index), rollups.For(**big, k, newest_index),
                                  source),
            "RestoreSeries");
    }
    int64_t big_index = newest_index;
    const ScrapeFigures f = TimeScrapes(**big, source, one, &big_index, 360);
    std::printf("  110-pod node (%zu series): %.0f ns per sample, %.1f us per scrape; %.3f MiB\n",
                one[0].size(), f.per_sample_ns, f.per_scrape_us,
                static_cast<double>((*big)->MemoryBytes()) / (1024.0 * 1024.0));
  }
  return 0;
}
