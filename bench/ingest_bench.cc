// ingest_bench: prints the ingest pipeline's figures (store + window engine, real RocksDB in
// a temporary directory).
//
//   ingest_bench [--day_nodes=N] [--day_step_s=S]
//
// 1. CPU per node scrape (samples, store batch, window update) for a 30-pod and a 110-pod
//    node (2 containers each), measured after 70 minutes of history so the 1h window's
//    expiry reads from the store are included.
// 2. A full day (25 h) for N nodes x 30 pods x 2 containers at one scrape per S seconds
//    through the pipeline: memory per node (engine accounting and RSS growth), disk per
//    node-day, then a rebuild of those windows from the store (time per node), and the
//    largest p95 error of the 1d window against an exact computation.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "aggregator/ingest_scrape_builder.h"
#include "kubestat/aggregator/ingest.h"
#include "kubestat/aggregator/series_registry.h"
#include "kubestat/storage/store.h"

namespace {

using kubestat::Duration;
using kubestat::Timestamp;
using kubestat::aggregator::IngestOptions;
using kubestat::aggregator::Ingestor;
using kubestat::aggregator::testing::SyntheticCluster;

const Timestamp kT0 = Timestamp(std::chrono::hours(24 * 20000));

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

long RssKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

struct TempDir {
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ingest-bench-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) abort();
    path = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

std::unique_ptr<kubestat::storage::Store> OpenStore(const std::string& dir) {
  kubestat::storage::StoreOptions options;
  options.dir = dir;
  auto store = kubestat::storage::Store::Open(options);
  if (!store.ok()) {
    fprintf(stderr, "%s\n", std::string(store.status().message()).c_str());
    exit(1);
  }
  return std::move(*store);
}

std::unique_ptr<Ingestor> NewIngestor(kubestat::storage::Store* store, kubestat::Clock* clock) {
  auto ingestor = Ingestor::Create(IngestOptions{}, store, clock);
  if (!ingestor.ok() || !(*ingestor)->Rebuild().ok()) exit(1);
  return std::move(*ingestor);
}

void ScrapeCost(size_t pods) {
  TempDir dir;
  auto store = OpenStore(dir.path + "/db");
  kubestat::FakeClock clock;
  auto ingestor = NewIngestor(store.get(), &clock);
  SyntheticCluster cluster(1, pods, 2, 1);
  const Duration step = std::chrono::seconds(10);
  Timestamp t = kT0;
  for (; t < kT0 + std::chrono::minutes(70); t += step) {
    if (!ingestor->Ingest(cluster.Scrape(0, t)).ok()) exit(1);
  }
  // Pre-build the scrapes: the generator is not what is measured.
  std::vector<kubestat::scrapers::NodeScrape> scrapes;
  for (int i = 0; i < 360; ++i) scrapes.push_back(cluster.Scrape(0, t + step * i));
  const double cpu0 = CpuSeconds();
  for (const auto& s : scrapes) {
    if (!ingestor->Ingest(s).ok()) exit(1);
  }
  const double cpu = (CpuSeconds() - cpu0) / static_cast<double>(scrapes.size());
  printf("ingest cpu per node scrape, %zu pods x 2 containers (%zu series): %.3f ms\n", pods,
         2 + 6 + pods * 6, cpu * 1e3);
}

void Day(size_t nodes, int step_s) {
  TempDir dir;
  auto store = OpenStore(dir.path + "/db");
  kubestat::FakeClock clock;
  const long rss0 = RssKiB();
  auto ingestor = NewIngestor(store.get(), &clock);
  SyntheticCluster cluster(nodes, 30, 2, 2);
  const Duration step = std::chrono::seconds(step_s);
  const Timestamp end = kT0 + std::chrono::hours(25);
  const double wall0 = WallSeconds();
  uint64_t scrapes = 0;
  for (Timestamp t = kT0; t < end; t += step) {
    for (size_t n = 0; n < nodes; ++n) {
      if (!ingestor->IngestAt(cluster.Scrape(n, t), t + std::chrono::milliseconds(n)).ok()) exit(1);
      ++scrapes;
    }
  }
  const double fill = WallSeconds() - wall0;
  const long rss1 = RssKiB();
  if (!store->Flush().ok()) exit(1);
  const size_t series = ingestor->QueryAll().size();
  printf("day fill: %zu nodes, %llu scrapes every %d s over 25 h in %.1f s (%.3f ms/scrape)\n",
         nodes, static_cast<unsigned long long>(scrapes), step_s, fill,
         fill * 1e3 / static_cast<double>(scrapes));
  printf("series: %zu (%.0f per node)\n", series, static_cast<double>(series) / nodes);
  printf("memory per node, engine + ingest accounting: %.3f MiB\n",
         static_cast<double>(ingestor->MemoryBytes()) / nodes / (1 << 20));
  printf("memory per node, RSS growth during the fill: %.3f MiB\n",
         static_cast<double>(rss1 - rss0) / 1024.0 / nodes);
  const double disk = static_cast<double>(store->DiskBytes());
  printf("disk: %.1f MiB for 25 h -> %.2f MiB per node-day at %d s (x%.1f at 10 s: %.2f MiB)\n",
         disk / (1 << 20), disk / (1 << 20) / nodes * 24 / 25, step_s, step_s / 10.0,
         disk / (1 << 20) / nodes * 24 / 25 * step_s / 10.0);

  // Rebuild from the store.
  const std::vector<kubestat::aggregator::SeriesWindows> live = ingestor->QueryAll();
  ingestor.reset();
  const long rss2 = RssKiB();
  const double rebuild0 = WallSeconds();
  auto rebuilt = NewIngestor(store.get(), &clock);
  const double rebuild = WallSeconds() - rebuild0;
  printf("rebuild: %.2f s for %zu nodes (%.2f ms per node -> %.1f s for 1000 nodes at 2 threads)\n",
         rebuild, nodes, rebuild * 1e3 / nodes, rebuild / nodes * 1000);
  printf("memory per node after rebuild (RSS growth): %.3f MiB\n",
         static_cast<double>(RssKiB() - rss2) / 1024.0 / nodes);
  const auto restored = rebuilt->QueryAll();
  size_t equal = 0;
  for (size_t i = 0; i < std::min(live.size(), restored.size()); ++i) {
    equal += live[i].windows[0] == restored[i].windows[0] &&
             live[i].windows[3].p95 == restored[i].windows[3].p95;
  }
  printf("rebuilt series equal to live (10s window, 1d p95): %zu of %zu\n", equal, live.size());

  // p95 of the 1d window against exact, for every series of node 0.
  std::map<uint64_t, std::vector<uint64_t>> by_id;
  auto dict = store->LoadDictionary();
  std::map<std::string, uint64_t> id_of;
  double worst = 0;
  size_t checked = 0;
  if (dict.ok()) {
    uint32_t node0 = 0;
    for (const auto& n : dict->nodes) {
      if (n.name == cluster.NodeName(0)) node0 = n.id;
    }
    const Timestamp newest = end - step + std::chrono::milliseconds(0);
    (void)store->ReadScrapes(node0, newest - std::chrono::hours(24), newest,
                             [&](Timestamp, std::span<const kubestat::storage::SeriesValue> v) {
                               for (const auto& sv : v) by_id[sv.id].push_back(sv.value);
                             });
    for (const auto& w : restored) {
      if (w.key.node != cluster.NodeName(0)) continue;
      for (const auto& e : dict->series) {
        auto key = kubestat::aggregator::DecodeSeriesKey(e.key);
        if (!key.ok() || !(*key == w.key)) continue;
        std::vector<uint64_t> values = by_id[e.id];
        if (values.size() != w.windows[3].count || values.empty()) continue;
        std::sort(values.begin(), values.end());
        const uint64_t exact = values[kubestat::aggregator::NearestRank(95, values.size()) - 1];
        if (exact == 0) continue;
        worst = std::max(
            worst, std::fabs(static_cast<double>(w.windows[3].p95) - static_cast<double>(exact)) /
                       static_cast<double>(exact));
        ++checked;
      }
    }
  }
  printf("1d p95 vs exact over %zu series: worst relative error %.4f%%\n", checked, worst * 100);
}

}  // namespace

int main(int argc, char** argv) {
  size_t day_nodes = 10;
  int day_step = 30;
  for (int i = 1; i < argc; ++i) {
    if (strncmp(argv[i], "--day_nodes=", 12) == 0)
      day_nodes = std::strtoul(argv[i] + 12, nullptr, 10);
    if (strncmp(argv[i], "--day_step_s=", 13) == 0) day_step = std::atoi(argv[i] + 13);
    if (strcmp(argv[i], "--help") == 0) {
      printf("ingest_bench [--day_nodes=10] [--day_step_s=30]\n");
      return 0;
    }
  }
  ScrapeCost(30);
  ScrapeCost(110);
  Day(day_nodes, day_step);
  return 0;
}
