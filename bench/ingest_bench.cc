// ingest_bench: prints the ingest pipeline's figures (store + window engine, real RocksDB in
// a temporary directory).
//
//   ingest_bench [--scrape_cost=1] [--day_nodes=10] [--day_step_s=10] [--day_workload=synthetic]
//                [--rebuild_nodes=100] [--rebuild_step_s=10] [--rebuild_threads=2]
//                [--rebuild_workload=synthetic] [--rebuild_end=fixed] [--rebuild_churn=sim]
//                [--fill_threads=2] [--store_dir=DIR]
//
// 1. CPU per node scrape (samples, store batch, window update) for a 30-pod and a 110-pod
//    node (2 containers each), measured after 70 minutes of history so the 1h window's
//    expiry reads from the store are included; once with the previous scrape's shape reused
//    (the steady state) and once through the general path (a scrape whose pods changed).
//    Then, on the 30-pod node, the CPU of one read of the node's query views as the
//    publisher makes after each scrape (AggregatorState::ObjectsOfNode), with labels (5 per
//    object) and 2 declared containers per pod from a fake discovery.
// 2. A full day (25 h) for N (--day_nodes) nodes x 30 pods x 2 containers at one scrape per
//    S seconds through the pipeline: memory per node (engine accounting and RSS growth),
//    disk per node-day, then a rebuild of those windows from the store (time per node),
//    checked against the live windows, and the largest p95 error of the 1d window against
//    an exact computation. --day_workload=sim takes the day from kubestat-sim's cluster model
//    instead (rendered as /stats/summary and decoded, as a scrape is): working sets and rates
//    that move smoothly, with pod churn and restarts, rather than values drawn independently
//    at every scrape, for what the store's encoding gains on series that change slowly.
// 3. Rebuild at scale: a store holding 25 h of --rebuild_nodes nodes x 30 pods x 2
//    containers (188 series per node) at one scrape per --rebuild_step_s seconds, filled
//    with NodeHistoryWriter (the records Ingest writes, without running the engine; nodes
//    interleaved by time as the scrape loop writes them, one write per time step), closed
//    without a flush like a killed process, then reopened (WAL replay timed apart) and
//    rebuilt with --rebuild_threads. Prints the time to ready, per node, the CPU time, the
//    bytes read, and checks node 0's windows against its stored samples. With
//    --store_dir the filled store is kept there and reused by later runs with the same
//    shape (the fill of 1,000 nodes takes minutes; the rebuild can then be re-measured).
//    --rebuild_workload=sim fills it from kubestat-sim's model instead (its node and pod
//    names, 188 series per node too, smooth values) and --rebuild_end=now makes its 25 h end
//    at the present, so bench/scripts/restart_load.sh can restart a real aggregator on it against a
//    simulator of the same size. Since such a fill takes long (75-135 minutes for 5,000
//    nodes), --rebuild_end=extend then brings the --store_dir store (filled that way, same
//    nodes and step) up to the present before the rebuild: every node's writer resumed where
//    the store ends, the steps since appended from the same model as the fill writes them,
//    again until less than a step is missing, and the retention applied. A later run with
//    --rebuild_end=now reuses the extended store. --rebuild_churn=none fills it from a model
//    that never replaces a pod, so that every series holds the whole day (and an extension
//    renames none); restart_load.sh then runs its simulator with --pod-lifetime=0.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/aggregator/ingest/series_registry.h"
#include "kubestat/aggregator/query/aggregator_state.h"
#include "kubestat/core/time.h"
#include "kubestat/scrapers/summary_decoder.h"
#include "kubestat/sim/model.h"
#include "kubestat/sim/render.h"
#include "kubestat/storage/store.h"
#include "kubestat/testing/aggregator/fake_label_provider.h"
#include "kubestat/testing/aggregator/ingest_scrape_builder.h"
#include "process_figures.h"

namespace {

using kubestat::Duration;
using kubestat::Timestamp;
using kubestat::aggregator::IngestOptions;
using kubestat::aggregator::Ingestor;
using kubestat::aggregator::testing::SyntheticCluster;

const Timestamp kT0 = Timestamp(std::chrono::hours(24 * 20000));

using kubestat::bench::CpuSeconds;
using kubestat::bench::RssKiB;
using kubestat::bench::ThreadCpuSeconds;
using kubestat::bench::WallSeconds;

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

std::unique_ptr<Ingestor> NewIngestor(kubestat::storage::Store* store, kubestat::Clock* clock,
                                      bool reuse_layout = true) {
  IngestOptions options;
  options.reuse_layout = reuse_layout;
  auto ingestor = Ingestor::Create(options, store, clock);
  if (!ingestor.ok() || !(*ingestor)->Rebuild().ok()) exit(1);
  return std::move(*ingestor);
}

// The CPU of one AggregatorState::ObjectsOfNode of `node` (`pods` pods), averaged over a few
// hundred reads, with what discovery would give: 5 labels on the node and on every pod, and
// 2 declared containers per pod (those the scrape reports).
void NodeReadCost(const Ingestor& ingestor, const std::string& node, size_t pods) {
  using kubestat::aggregator::PodLabels;
  kubestat::aggregator::testing::FakeLabels labels;
  labels.synced = true;
  auto five_labels = [](const std::string& name) {
    kubestat::metrics_api::Labels out;
    for (const char* key : {"app", "team", "tier", "version", "zone"}) {
      out[std::string("example.com/") + key] = name + "-" + key;
    }
    return out;
  };
  labels.nodes[node] = five_labels(node);
  for (const kubestat::aggregator::PodRef& pod : ingestor.ListPods()) {
    PodLabels info{five_labels(pod.name), pod.node, {}};
    std::vector<kubestat::limits::ContainerResources> containers;
    for (const char* container : {"c0", "c1"}) {
      kubestat::limits::ContainerResources declared;
      declared.name = container;
      declared.requests = {100, int64_t{128} << 20};
      declared.limits = {500, int64_t{256} << 20};
      containers.push_back(std::move(declared));
    }
    info.containers = std::move(containers);
    labels.pods[pod.namespace_name + "/" + pod.name] = std::move(info);
  }
  const kubestat::aggregator::AggregatorState state(&ingestor, &labels);
  constexpr int kReads = 300;
  size_t views = 0;
  const double cpu0 = ThreadCpuSeconds();
  for (int i = 0; i < kReads; ++i) {
    std::optional<kubestat::aggregator::NodeObjects> objects = state.ObjectsOfNode(node);
    if (!objects || objects->pods.size() != pods) exit(1);
    views += objects->pods.size() + 1;
  }
  const double cpu = (ThreadCpuSeconds() - cpu0) / kReads;
  printf("node read cpu per node (ObjectsOfNode, %zu pods): %.1f us (%zu views per read)\n", pods,
         cpu * 1e6, views / kReads);
}

// With `reuse_layout` false every scrape takes the general path (keys built, sorted and
// looked up), as a scrape whose pods changed does.
void ScrapeCost(size_t pods, bool reuse_layout) {
  TempDir dir;
  auto store = OpenStore(dir.path + "/db");
  kubestat::FakeClock clock;
  auto ingestor = NewIngestor(store.get(), &clock, reuse_layout);
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
  printf("ingest cpu per node scrape, %zu pods x 2 containers (%zu series)%s: %.3f ms\n", pods,
         2 + 6 + pods * 6, reuse_layout ? "" : ", general path", cpu * 1e3);
  if (reuse_layout && pods == 30) NodeReadCost(*ingestor, cluster.NodeName(0), pods);
}

// The day's scrapes: SyntheticCluster's, or with `sim` the simulator's cluster model's,
// rendered and decoded.
class DayScrapes {
 public:
  DayScrapes(size_t nodes, bool sim) : cluster_(nodes, 30, 2, 2) {
    if (!sim) return;
    kubestat::sim::ClusterModelOptions options;
    options.nodes = static_cast<int>(nodes);
    options.pods_per_node = 30;
    options.cluster_start = kT0 - std::chrono::hours(1);
    auto model = kubestat::sim::ClusterModel::Create(options);
    if (!model.ok()) exit(1);
    model_.emplace(std::move(*model));
  }
  kubestat::scrapers::NodeScrape Scrape(size_t n, Timestamp t) {
    if (!model_) return cluster_.Scrape(n, t);
    std::string body =
        kubestat::sim::RenderSummary(model_->Snapshot(static_cast<int>(n), t), false);
    auto scrape = kubestat::scrapers::DecodeSummaryInPlace(&body);
    if (!scrape.ok()) exit(1);
    return std::move(*scrape);
  }
  std::string NodeName(size_t n) const {
    return model_ ? model_->node(static_cast<int>(n)).name : cluster_.NodeName(n);
  }

 private:
  SyntheticCluster cluster_;
  std::optional<kubestat::sim::ClusterModel> model_;
};

// The ingestor's own accounting, by part, in bytes per series.
void PrintMemoryByPart(const char* when, const Ingestor& ingestor, size_t series) {
  const Ingestor::Memory m = ingestor.MemoryByPart();
  const double n = static_cast<double>(std::max<size_t>(series, 1));
  auto per = [n](size_t bytes) { return static_cast<double>(bytes) / n; };
  printf("memory %s, engine + ingest accounting: %.1f bytes per series (%.3f MiB in all)\n", when,
         per(m.total()), static_cast<double>(m.total()) / (1 << 20));
  printf(
      "  windows: index %.1f, series and raw samples %.1f, long windows %.1f, rings %.1f, "
      "sketches %.1f, stacks %.1f\n",
      per(m.windows.index), per(m.windows.series), per(m.windows.long_windows),
      per(m.windows.rings), per(m.windows.sketches), per(m.windows.stacks));
  printf("  ingest: series index %.1f, cpu counters %.1f, nodes %.1f\n", per(m.series_index),
         per(m.cpu_counters), per(m.nodes));
}

void Day(size_t nodes, int step_s, bool sim) {
  TempDir dir;
  auto store = OpenStore(dir.path + "/db");
  kubestat::FakeClock clock;
  const long rss0 = RssKiB();
  auto ingestor = NewIngestor(store.get(), &clock);
  DayScrapes cluster(nodes, sim);
  const Duration step = std::chrono::seconds(step_s);
  const Timestamp end = kT0 + std::chrono::hours(25);
  const double wall0 = WallSeconds();
  uint64_t scrapes = 0;
  printf("day workload: %s\n", sim ? "sim (kubestat-sim's cluster model)" : "synthetic");
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
  PrintMemoryByPart("after the fill", *ingestor, series);
  printf("memory per node, RSS growth during the fill: %.3f MiB\n",
         static_cast<double>(rss1 - rss0) / 1024.0 / nodes);
  const double disk = static_cast<double>(store->DiskBytes());
  printf("disk: %.1f MiB for 25 h -> %.2f MiB per node-day at %d s (x%.1f at 10 s: %.2f MiB)\n",
         disk / (1 << 20), disk / (1 << 20) / nodes * 24 / 25, step_s, step_s / 10.0,
         disk / (1 << 20) / nodes * 24 / 25 * step_s / 10.0);

  // Rebuild from the store.
  const std::vector<kubestat::windows::SeriesWindows> live = ingestor->QueryAll();
  ingestor.reset();
  const long rss2 = RssKiB();
  const double rebuild0 = WallSeconds();
  auto rebuilt = NewIngestor(store.get(), &clock);
  const double rebuild = WallSeconds() - rebuild0;
  printf("rebuild: %.2f s for %zu nodes (%.2f ms per node -> %.1f s for 1000 nodes at 2 threads)\n",
         rebuild, nodes, rebuild * 1e3 / nodes, rebuild / nodes * 1000);
  printf("memory per node after rebuild (RSS growth): %.3f MiB\n",
         static_cast<double>(RssKiB() - rss2) / 1024.0 / nodes);
  PrintMemoryByPart("after the rebuild", *rebuilt, series);
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
        const uint64_t exact = values[kubestat::windows::NearestRank(95, values.size()) - 1];
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

// /proc/self/io: bytes this process read from storage (read_bytes) and through read calls,
// the page cache included (rchar).
std::pair<uint64_t, uint64_t> ReadBytes() {
  std::ifstream io("/proc/self/io");
  std::string line;
  uint64_t storage = 0, rchar = 0;
  while (std::getline(io, line)) {
    if (line.rfind("read_bytes:", 0) == 0) storage = std::strtoull(line.c_str() + 11, nullptr, 10);
    if (line.rfind("rchar:", 0) == 0) rchar = std::strtoull(line.c_str() + 6, nullptr, 10);
  }
  return {storage, rchar};
}

using kubestat::aggregator::NodeHistoryWriter;
using kubestat::windows::ObjectKind;
using kubestat::windows::Resource;
using kubestat::windows::SeriesKey;

// The samples of one node of the synthetic cluster (the shape SyntheticCluster's scrapes
// give after Ingest: rates in nanocores, working-set bytes, pods the sum of their two
// containers, no cpu on the first scrape), in the writer's key order.
class NodeSamples {
 public:
  NodeSamples(const std::vector<SeriesKey>& keys, uint64_t seed, int step_s)
      : rng_(seed), step_s_(static_cast<uint64_t>(step_s)) {
    values_.resize(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      const SeriesKey& k = keys[i];
      Slot slot;
      slot.cpu = k.resource == Resource::kCpu;
      switch (k.kind) {
        case ObjectKind::kNode:
          slot.scale = slot.cpu ? 40000000 : uint64_t{8} << 30;
          break;
        case ObjectKind::kSystemContainer:
          slot.scale = slot.cpu ? 2000000 : uint64_t{200} << 20;
          break;
        case ObjectKind::kContainer:
          slot.scale = slot.cpu ? 1000000 : uint64_t{100} << 20;
          break;
        case ObjectKind::kPod:
          // The pod's containers follow it in key order; same resource.
          for (size_t j = i + 1; j < keys.size() && keys[j].kind == ObjectKind::kContainer &&
                                 keys[j].pod == k.pod && keys[j].pod_namespace == k.pod_namespace;
               ++j) {
            if (keys[j].resource == k.resource) slot.parts.push_back(j);
          }
          break;
      }
      slots_.push_back(std::move(slot));
    }
  }

  std::span<const std::optional<uint64_t>> Next() {
    for (size_t i = 0; i < slots_.size(); ++i) {
      const Slot& slot = slots_[i];
      if (!slot.parts.empty()) continue;
      if (slot.cpu) {
        // A counter advancing by scale * [50, 1000) ns per step, as a rate in nanocores.
        const uint64_t delta = slot.scale * (50 + rng_() % 950);
        values_[i] =
            first_ ? std::nullopt : std::optional<uint64_t>((delta + step_s_ / 2) / step_s_);
      } else {
        values_[i] = slot.scale + rng_() % (slot.scale / 4 + 1);
      }
    }
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].parts.empty()) continue;
      std::optional<uint64_t> sum = 0;
      for (size_t j : slots_[i].parts) {
        sum = sum && values_[j] ? std::optional<uint64_t>(*sum + *values_[j]) : std::nullopt;
      }
      values_[i] = sum;
    }
    first_ = false;
    return values_;
  }

 private:
  struct Slot {
    bool cpu = false;
    uint64_t scale = 0;
    std::vector<size_t> parts;  // a pod's containers
  };
  std::mt19937_64 rng_;
  uint64_t step_s_;
  bool first_ = true;
  std::vector<Slot> slots_;
  std::vector<std::optional<uint64_t>> values_;
};

std::vector<SeriesKey> NodeKeys(const std::string& node, size_t pods) {
  std::vector<SeriesKey> keys;
  for (Resource r : {Resource::kCpu, Resource::kMemory}) {
    keys.push_back(SeriesKey::Node(node, r));
    for (const char* name : {"kubelet", "runtime", "pods"}) {
      keys.push_back(SeriesKey::SystemContainer(node, name, r));
    }
    for (size_t p = 0; p < pods; ++p) {
      const std::string pod = "pod-" + node.substr(5) + "-" + std::to_string(p);
      const std::string ns = p % 2 ? "shop" : "default";
      keys.push_back(SeriesKey::Pod(node, ns, pod, r));
      for (const char* c : {"c0", "c1"}) keys.push_back(SeriesKey::Container(node, ns, pod, c, r));
    }
  }
  return keys;
}

// What the rebuild-at-scale store holds: the synthetic samples over 25 h from the fixed
// kT0, or kubestat-sim's cluster model (its node and pod names, smooth values) over the 25 h
// that end at the present, so that a real aggregator started on the store against a
// kubestat-sim of the same size (bench/scripts/restart_load.sh) restarts as after a short outage.
struct FillShape {
  bool sim = false;
  bool end_now = false;
  // Extend a store filled with `sim` and `end_now` up to the present (ExtendStore) before
  // the rebuild, instead of filling or reusing it as it is.
  bool extend = false;
  // The model's pods are replaced (its mean pod lifetime, 4 h), or never (every series then
  // holds the whole day: kubestat-sim --pod-lifetime=0).
  bool churn = true;
  // The model bench/scripts/restart_load.sh's simulator runs: NODES × 30 pods, its tenants.
  kubestat::sim::ClusterModelOptions ModelOptions(size_t nodes) const {
    kubestat::sim::ClusterModelOptions options;
    options.nodes = static_cast<int>(nodes);
    options.pods_per_node = 30;
    options.tenant_namespaces = static_cast<int>(nodes * 28 / 30);
    if (!churn) options.mean_pod_lifetime = Duration(0);
    return options;
  }
  std::string Describe() const {
    return std::string(sim ? "sim" : "synthetic") + (end_now ? " now" : " fixed") +
           (churn ? "" : " nochurn");
  }
};

// One node of the simulator's model as the writer's series: the pods of its slots as named
// at `named_at` (the fill's end), each with its containers, the system containers and the
// node; cpu in nanocores, memory the working set, as Ingest stores a scrape. A slot whose pod
// was replaced during the day keeps the name it has at the end (the history of its earlier
// generations is stored under it).
class SimNodeSamples {
 public:
  SimNodeSamples(const kubestat::sim::ClusterModel& model, int node, Timestamp named_at)
      : model_(model), node_(node) {
    const std::string& name = model.node(node).name;
    const kubestat::sim::NodeSnapshot snapshot = model.Snapshot(node, named_at);
    for (Resource r : {Resource::kCpu, Resource::kMemory}) {
      sources_.emplace(SeriesKey::Node(name, r), Source{r, Source::kNode, 0, 0});
      for (int c = 0; c < 3; ++c) {
        sources_.emplace(SeriesKey::SystemContainer(
                             name, std::string(kubestat::sim::kSystemContainerNames[c]), r),
                         Source{r, Source::kSystem, c, 0});
      }
      for (size_t slot = 0; slot < snapshot.pods.size(); ++slot) {
        const kubestat::sim::PodInfo& pod = snapshot.pods[slot].pod;
        const int s = static_cast<int>(slot);
        sources_.emplace(SeriesKey::Pod(name, pod.namespace_name, pod.name, r),
                         Source{r, Source::kPod, s, 0});
        for (const auto& container : snapshot.pods[slot].containers) {
          sources_.emplace(SeriesKey::Container(name, pod.namespace_name, pod.name,
                                                pod.containers[container.index].name, r),
                           Source{r, Source::kContainer, s, container.index});
        }
      }
    }
  }
  std::vector<SeriesKey> Keys() const {
    std::vector<SeriesKey> keys;
    for (const auto& [key, source] : sources_) keys.push_back(key);
    return keys;
  }
  // Call once with the writer's key order before the first Next().
  void Order(const std::vector<SeriesKey>& keys) {
    order_.clear();
    for (const SeriesKey& key : keys) order_.push_back(sources_.at(key));
    values_.assign(keys.size(), std::nullopt);
  }
  std::span<const std::optional<uint64_t>> Next(Timestamp t) {
    const kubestat::sim::NodeSnapshot snapshot = model_.Snapshot(node_, t);
    for (size_t i = 0; i < order_.size(); ++i) {
      const Source& s = order_[i];
      const kubestat::sim::ResourceUsage* usage = nullptr;
      switch (s.kind) {
        case Source::kNode:
          usage = &snapshot.usage;
          break;
        case Source::kSystem:
          usage = &snapshot.system_containers[static_cast<size_t>(s.slot)];
          break;
        case Source::kPod:
          usage = &snapshot.pods[static_cast<size_t>(s.slot)].usage;
          break;
        case Source::kContainer: {
          const auto& containers = snapshot.pods[static_cast<size_t>(s.slot)].containers;
          for (const auto& c : containers) {
            if (c.index == s.container) usage = &c.usage;
          }
          break;
        }
      }
      values_[i] = usage == nullptr ? std::nullopt
                   : s.resource == Resource::kCpu
                       ? std::optional<uint64_t>(usage->usage_nano_cores)
                       : std::optional<uint64_t>(usage->working_set_bytes);
    }
    return values_;
  }

 private:
  struct Source {
    Resource resource;
    enum Kind { kNode, kSystem, kPod, kContainer } kind;
    int slot;       // system container index or pod slot
    int container;  // ContainerSnapshot::index
  };
  const kubestat::sim::ClusterModel& model_;
  int node_;
  std::map<SeriesKey, Source> sources_;
  std::vector<Source> order_;
  std::vector<std::optional<uint64_t>> values_;
};

// The last whole step at or before the present: the end (excluded) of a store that ends
// now.
Timestamp PresentStep(Duration step) {
  return Timestamp((std::chrono::system_clock::now().time_since_epoch() / step) * step);
}

// Runs work(from, to) on `threads` threads, over consecutive ranges of [0, nodes).
void OnThreads(size_t nodes, size_t threads, const std::function<void(size_t, size_t)>& work) {
  std::vector<std::thread> workers;
  for (size_t i = 0; i < threads; ++i) {
    workers.emplace_back(work, nodes * i / threads, nodes * (i + 1) / threads);
  }
  for (std::thread& w : workers) w.join();
}

// Fills `dir` with 25 h of `nodes` nodes, written as the scrape loop writes them.
void FillStore(const std::string& dir, size_t nodes, int step_s, size_t threads, FillShape shape) {
  auto store = OpenStore(dir);
  const Duration step = std::chrono::seconds(step_s);
  const Timestamp end = shape.end_now ? PresentStep(step) : kT0 + std::chrono::hours(25);
  const Timestamp start = end - std::chrono::hours(25);
  const double wall0 = WallSeconds();
  const kubestat::windows::WindowEngineOptions engine_options;
  std::optional<kubestat::sim::ClusterModel> model;
  if (shape.sim) {
    auto created = kubestat::sim::ClusterModel::Create(shape.ModelOptions(nodes));
    if (!created.ok()) exit(1);
    model.emplace(std::move(*created));
  }
  // Node ids and names in node order, as the scrape loop's first round allocates them.
  std::vector<std::unique_ptr<NodeHistoryWriter>> writers;
  std::vector<NodeSamples> samples;
  std::vector<SimNodeSamples> sim_samples;
  for (size_t n = 0; n < nodes; ++n) {
    std::string name = "node-" + std::to_string(n);
    std::vector<SeriesKey> keys;
    if (model) {
      name = model->node(static_cast<int>(n)).name;
      sim_samples.emplace_back(*model, static_cast<int>(n), end - step);
      keys = sim_samples.back().Keys();
    } else {
      keys = NodeKeys(name, 30);
    }
    auto writer = NodeHistoryWriter::Create(engine_options, store.get(), name, std::move(keys));
    if (!writer.ok()) exit(1);
    if (model) {
      sim_samples.back().Order((*writer)->keys());
    } else {
      samples.emplace_back((*writer)->keys(), 1000 + n, step_s);
    }
    writers.push_back(std::move(*writer));
  }
  std::atomic<uint64_t> bytes{0};
  auto fill = [&](size_t from, size_t to) {
    kubestat::storage::ScrapeBatch batch;
    int hours_done = 0;
    for (Timestamp t = start; t < end; t += step) {
      for (size_t n = from; n < to; ++n) {
        const Timestamp at = t + std::chrono::milliseconds(n % 1000);
        std::span<const std::optional<uint64_t>> values =
            model ? sim_samples[n].Next(t) : samples[n].Next();
        if (!writers[n]->Append(at, values, &batch).ok()) exit(1);
      }
      bytes.fetch_add(batch.ByteSize());
      if (!store->Write(batch).ok()) exit(1);
      batch.Clear();
      if (from == 0 && (t - start) / std::chrono::hours(1) > hours_done) {
        hours_done = static_cast<int>((t - start) / std::chrono::hours(1));
        fprintf(stderr, "  fill: %d h of 25 after %.0f s\n", hours_done, WallSeconds() - wall0);
      }
    }
  };
  OnThreads(nodes, threads, fill);
  size_t series = 0;
  for (const auto& writer : writers) series += writer->keys().size();
  printf(
      "rebuild store: %zu nodes, %zu series (%s), 25 h at %d s to %s filled in %.1f s "
      "(%.0f MiB written, %.0f MiB on disk)\n",
      nodes, series, shape.Describe().c_str(), step_s, kubestat::FormatRfc3339Nano(end).c_str(),
      WallSeconds() - wall0, static_cast<double>(bytes.load()) / (1 << 20),
      static_cast<double>(store->DiskBytes()) / (1 << 20));
  // Closed without a flush: the newest writes are in the WAL only, as after a kill.
}

// Extends the store in `dir`, filled by FillStore with kubestat-sim's model ending now, up
// to the present: resumes each node's writer where the store's records of it end and
// appends every step from there as FillStore writes them (same threads, one write per time
// step per thread, node n at t + n ms mod 1 s), the values going on from the same model;
// then again while the present moved on by a step during the pass, so the store ends as
// one filled now would. The writers' series are the model's pods as named at the first
// pass's end, as FillStore names them at its end: a slot whose pod was replaced since the
// store's end goes on as a new series (its history starts with the extension) and the old
// pod's series is retired, as a running aggregator would have it. Then applies the
// retention at the present. Returns the newest step written (or stored).
Timestamp ExtendStore(const std::string& dir, size_t nodes, int step_s, size_t threads,
                      const FillShape& shape) {
  auto store = OpenStore(dir);
  const Duration step = std::chrono::seconds(step_s);
  const double wall0 = WallSeconds();
  auto model = kubestat::sim::ClusterModel::Create(shape.ModelOptions(nodes));
  if (!model.ok()) exit(1);
  Timestamp end = PresentStep(step);
  const kubestat::windows::WindowEngineOptions engine_options;
  std::vector<std::unique_ptr<NodeHistoryWriter>> writers(nodes);
  std::vector<std::unique_ptr<SimNodeSamples>> samples(nodes);
  std::atomic<size_t> series_new{0}, series_retired{0};
  {
    auto dict = store->LoadDictionary();
    if (!dict.ok()) {
      fprintf(stderr, "ingest_bench: %s\n", std::string(dict.status().message()).c_str());
      exit(1);
    }
    auto stored = kubestat::aggregator::StoredNodesByName(*dict);
    if (!stored.ok()) {
      fprintf(stderr, "ingest_bench: %s\n", std::string(stored.status().message()).c_str());
      exit(1);
    }
    OnThreads(nodes, threads, [&](size_t from, size_t to) {
      for (size_t n = from; n < to; ++n) {
        const int node = static_cast<int>(n);
        auto found = stored->find(model->node(node).name);
        if (found == stored->end()) {
          fprintf(stderr, "ingest_bench: %s holds no node %s\n", dir.c_str(),
                  model->node(node).name.c_str());
          exit(1);
        }
        const kubestat::aggregator::StoredNode& stored_node = found->second;
        samples[n] = std::make_unique<SimNodeSamples>(*model, node, end - step);
        std::vector<SeriesKey> keys = samples[n]->Keys();
        size_t continued = 0;
        for (const SeriesKey& key : keys) continued += stored_node.series.contains(key);
        series_new.fetch_add(keys.size() - continued);
        series_retired.fetch_add(stored_node.series.size() - continued);
        auto writer =
            NodeHistoryWriter::Resume(engine_options, store.get(), stored_node, std::move(keys));
        if (!writer.ok() || !(*writer)->last_scrape()) {
          fprintf(
              stderr, "ingest_bench: resuming %s: %s\n", stored_node.name.c_str(),
              writer.ok() ? "no scrape stored" : std::string(writer.status().message()).c_str());
          exit(1);
        }
        samples[n]->Order((*writer)->keys());
        writers[n] = std::move(*writer);
      }
    });
  }
  const double resumed = WallSeconds() - wall0;
  // Each node goes on at the step after its newest stored scrape (they differ only when
  // an earlier extension was cut short).
  std::vector<Timestamp> next(nodes);
  Timestamp stored_newest = Timestamp::min();
  for (size_t n = 0; n < nodes; ++n) {
    const Timestamp last = *writers[n]->last_scrape();
    next[n] = Timestamp((last.time_since_epoch() / step + 1) * step);
    stored_newest = std::max(stored_newest, last);
  }
  Timestamp from = *std::min_element(next.begin(), next.end());
  Timestamp newest_step = Timestamp((stored_newest.time_since_epoch() / step) * step);
  std::atomic<uint64_t> bytes{0};
  int64_t steps = 0;
  int passes = 0;
  while (from < end) {
    ++passes;
    const double pass0 = WallSeconds();
    OnThreads(nodes, threads, [&](size_t lo, size_t hi) {
      kubestat::storage::ScrapeBatch batch;
      int hours_done = 0;
      for (Timestamp t = from; t < end; t += step) {
        for (size_t n = lo; n < hi; ++n) {
          if (t < next[n]) continue;
          const Timestamp at = t + std::chrono::milliseconds(n % 1000);
          if (!writers[n]->Append(at, samples[n]->Next(t), &batch).ok()) exit(1);
        }
        if (batch.empty()) continue;
        bytes.fetch_add(batch.ByteSize());
        if (!store->Write(batch).ok()) exit(1);
        batch.Clear();
        if (lo == 0 && (t - from) / std::chrono::hours(1) > hours_done) {
          hours_done = static_cast<int>((t - from) / std::chrono::hours(1));
          fprintf(stderr, "  extend pass %d: %d h after %.0f s\n", passes, hours_done,
                  WallSeconds() - pass0);
        }
      }
    });
    steps += (end - from) / step;
    fprintf(stderr, "  extend pass %d: %lld steps to %s in %.1f s\n", passes,
            static_cast<long long>((end - from) / step),
            kubestat::FormatRfc3339Nano(end - step).c_str(), WallSeconds() - pass0);
    newest_step = end - step;
    from = end;
    end = PresentStep(step);
  }
  const double retention0 = WallSeconds();
  if (absl::Status s = store->ApplyRetention(Timestamp(std::chrono::system_clock::now()));
      !s.ok()) {
    fprintf(stderr, "ingest_bench: retention: %s\n", std::string(s.message()).c_str());
    exit(1);
  }
  const double retention = WallSeconds() - retention0;
  printf(
      "rebuild store: extended %s (%zu nodes, sim now at %d s) from %s to %s: %lld steps in "
      "%d passes, %.1f s (resume %.1f s, retention %.1f s); %.0f MiB written, %.0f MiB on "
      "disk; series new (pods replaced since the store's end) %zu, retired %zu\n",
      dir.c_str(), nodes, step_s, kubestat::FormatRfc3339Nano(stored_newest).c_str(),
      kubestat::FormatRfc3339Nano(newest_step).c_str(), static_cast<long long>(steps), passes,
      WallSeconds() - wall0, resumed, retention, static_cast<double>(bytes.load()) / (1 << 20),
      static_cast<double>(store->DiskBytes()) / (1 << 20), series_new.load(),
      series_retired.load());
  // Closed without a flush, as FillStore leaves it.
  return newest_step;
}

void RebuildAtScale(std::string dir, size_t nodes, int step_s, size_t fill_threads,
                    size_t rebuild_threads, FillShape fill, bool salvage) {
  std::optional<TempDir> temp;
  if (dir.empty()) {
    temp.emplace();
    dir = temp->path + "/db";
  }
  // The synthetic fixed store's shape keeps its old spelling, so such stores are reused.
  std::string shape = std::to_string(nodes) + " " + std::to_string(step_s);
  if (fill.sim || fill.end_now) shape += " " + fill.Describe();
  std::string filled;
  std::getline(std::ifstream(dir + "/FILLED_BY_INGEST_BENCH"), filled);
  if (fill.extend) {
    if (filled != shape) {
      const std::string found = filled.empty() ? "is missing" : "says \"" + filled + "\"";
      fprintf(stderr,
              "ingest_bench: --rebuild_end=extend extends a store filled with "
              "--rebuild_workload=sim --rebuild_end=now and the same --rebuild_nodes and "
              "--rebuild_step_s (\"%s\"); %s/FILLED_BY_INGEST_BENCH %s\n",
              shape.c_str(), dir.c_str(), found.c_str());
      exit(2);
    }
    const Timestamp newest = ExtendStore(dir, nodes, step_s, fill_threads, fill);
    // The shape stays the first line, so later runs with --rebuild_end=now reuse the store.
    std::ofstream(dir + "/FILLED_BY_INGEST_BENCH")
        << shape << "\nextended to " << kubestat::FormatRfc3339Nano(newest) << "\n";
  } else if (filled != shape) {
    std::filesystem::remove_all(dir);
    FillStore(dir, nodes, step_s, fill_threads, fill);
    std::ofstream(dir + "/FILLED_BY_INGEST_BENCH") << shape << "\n";
  } else {
    printf("rebuild store: reusing %s (%zu nodes, 25 h at %d s, %s)\n", dir.c_str(), nodes, step_s,
           fill.Describe().c_str());
  }

  const long rss0 = RssKiB();
  const auto io0 = ReadBytes();
  const double cpu0 = CpuSeconds();
  const double open0 = WallSeconds();
  auto store = OpenStore(dir);
  const double open = WallSeconds() - open0;
  kubestat::FakeClock clock;
  IngestOptions options;
  options.rebuild_threads = rebuild_threads;
  auto ingestor = Ingestor::Create(options, store.get(), &clock);
  if (!ingestor.ok()) exit(1);
  const double rebuild0 = WallSeconds();
  if (!(*ingestor)->Rebuild().ok()) exit(1);
  const double rebuild = WallSeconds() - rebuild0;
  const double cpu = CpuSeconds() - cpu0;
  const auto io1 = ReadBytes();
  const auto stats = (*ingestor)->Stats();
  printf(
      "rebuild at %d s scrapes, %zu nodes, %zu threads: store open (WAL replay) %.2f s + "
      "rebuild %.2f s = ready in %.2f s\n",
      step_s, nodes, rebuild_threads, open, rebuild, open + rebuild);
  printf(
      "  per node: %.2f ms wall, %.2f ms cpu (open + rebuild); %.1f s for 1000 nodes "
      "(wall, linear)\n",
      (open + rebuild) * 1e3 / nodes, cpu * 1e3 / nodes, (open + rebuild) / nodes * 1000);
  printf(
      "  series rebuilt %llu, errors %llu; read %.0f MiB (%.0f MiB from the device, the rest "
      "from the page cache); RSS growth %.3f MiB per node\n",
      static_cast<unsigned long long>(stats.rebuilt_series),
      static_cast<unsigned long long>(stats.rebuild_errors),
      static_cast<double>(io1.second - io0.second) / (1 << 20),
      static_cast<double>(io1.first - io0.first) / (1 << 20),
      static_cast<double>(RssKiB() - rss0) / 1024.0 / nodes);
  PrintMemoryByPart("after the rebuild at scale", **ingestor, stats.rebuilt_series);

  // Node 0's windows against its stored samples: counts, min, max and mean exact, p95
  // within the sketch's 1%.
  auto dict = store->LoadDictionary();
  if (!dict.ok()) exit(1);
  const std::string node0_name = fill.sim ? "node-0000" : "node-0";
  uint32_t node0 = 0;
  for (const auto& n : dict->nodes) {
    if (n.name == node0_name) node0 = n.id;
  }
  std::map<uint64_t, SeriesKey> key_of;
  for (const auto& e : dict->series) {
    auto key = kubestat::aggregator::DecodeSeriesKey(e.key);
    if (e.node == node0 && key.ok()) key_of.emplace(e.id, *key);
  }
  // Node 0's stored samples, read once: all a rebuild may use, the retention (26 h) before
  // the newest scrape (a filled store holds 25 h, an extended one up to the retention).
  std::map<uint64_t, std::vector<std::pair<Timestamp, uint64_t>>> stored;
  Timestamp newest_scrape = Timestamp::min();
  (void)store->ReadScrapesBackward(
      node0, Timestamp::max(), Timestamp::min(),
      [&](Timestamp t, std::span<const kubestat::storage::SeriesValue>) {
        newest_scrape = t;
        return false;
      });
  (void)store->ReadScrapes(node0, newest_scrape - store->options().retention, newest_scrape,
                           [&](Timestamp t, std::span<const kubestat::storage::SeriesValue> v) {
                             for (const auto& sv : v) stored[sv.id].emplace_back(t, sv.value);
                           });
  auto all = (*ingestor)->QueryAll();
  size_t checked = 0, bad = 0;
  for (const auto& w : all) {
    if (w.key.node != node0_name) continue;
    uint64_t id = 0;
    for (const auto& [i, k] : key_of) {
      if (k == w.key) id = i;
    }
    for (const auto& win : w.windows) {
      std::vector<uint64_t> values;
      for (const auto& [t, v] : stored[id]) {
        if (t > win.endtime - win.window && t <= win.endtime) values.push_back(v);
      }
      std::sort(values.begin(), values.end());
      ++checked;
      unsigned __int128 sum = 0;
      for (uint64_t v : values) sum += v;
      if (values.empty() || values.size() != win.count || values.front() != win.min ||
          values.back() != win.max || (sum + values.size() / 2) / values.size() != win.mean) {
        ++bad;
        continue;
      }
      const uint64_t exact = values[kubestat::windows::NearestRank(95, values.size()) - 1];
      if (std::fabs(static_cast<double>(win.p95) - static_cast<double>(exact)) >
          0.01 * static_cast<double>(exact)) {
        ++bad;
      }
    }
  }
  printf("  %s windows checked against the stored samples: %zu, mismatches %zu\n",
         node0_name.c_str(), checked, bad);
  if (bad != 0 || checked == 0 || stats.rebuild_errors != 0 ||
      stats.rebuilt_series != dict->series.size()) {
    exit(1);
  }
  if (!salvage) return;
  // What a salvage costs: a copy of every key into a new database, then the swap (nothing is
  // damaged here, so every key is kept: the most a salvage of this store can take).
  const uint64_t disk0 = store->DiskBytes();
  const double salvage_cpu0 = CpuSeconds();
  const double salvage0 = WallSeconds();
  absl::StatusOr<kubestat::storage::SalvageReport> report = store->Salvage();
  const double took = WallSeconds() - salvage0;
  if (!report.ok() || !report->lost.empty()) {
    fprintf(stderr, "ingest_bench: salvage: %s\n", report.status().ToString().c_str());
    exit(1);
  }
  printf(
      "  salvage (a copy of the whole store, %.0f MiB on disk): %.2f s wall, %.2f s cpu, "
      "%llu keys (%.0f MiB) kept: %.1f MiB/s of store; %.1f ms per node\n",
      static_cast<double>(disk0) / (1 << 20), took, CpuSeconds() - salvage_cpu0,
      static_cast<unsigned long long>(report->kept_keys),
      static_cast<double>(report->kept_bytes) / (1 << 20),
      static_cast<double>(disk0) / (1 << 20) / took, took * 1e3 / nodes);
  std::filesystem::remove_all(report->quarantine_dir);
  // The copy holds what the store held: later runs may reuse it (the marker went with the
  // old files).
  std::ofstream(dir + "/FILLED_BY_INGEST_BENCH") << shape << "\n";
}
// A flag whose value is one of two words: sets *out to whether it is `yes`; false, with a
// message, for any other value.
bool ParseChoice(const char* flag, const char* value, const char* yes, const char* no, bool* out) {
  if (strcmp(value, yes) != 0 && strcmp(value, no) != 0) {
    fprintf(stderr, "ingest_bench: %s is %s or %s\n", flag, yes, no);
    return false;
  }
  *out = strcmp(value, yes) == 0;
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  bool scrape_cost = true;
  size_t day_nodes = 10;
  int day_step = 10;
  bool day_sim = false;
  size_t rebuild_nodes = 100;
  int rebuild_step = 10;
  size_t rebuild_threads = 2;
  size_t fill_threads = 2;
  FillShape fill;
  std::string store_dir;
  bool salvage = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&](std::string_view flag) -> const char* {
      return arg.starts_with(flag) ? argv[i] + flag.size() : nullptr;
    };
    if (const char* v = value("--scrape_cost=")) {
      scrape_cost = std::atoi(v) != 0;
    } else if (const char* v = value("--day_nodes=")) {
      day_nodes = std::strtoul(v, nullptr, 10);
    } else if (const char* v = value("--day_step_s=")) {
      day_step = std::atoi(v);
    } else if (const char* v = value("--day_workload=")) {
      if (!ParseChoice("--day_workload", v, "sim", "synthetic", &day_sim)) return 2;
    } else if (const char* v = value("--rebuild_nodes=")) {
      rebuild_nodes = std::strtoul(v, nullptr, 10);
    } else if (const char* v = value("--rebuild_step_s=")) {
      rebuild_step = std::atoi(v);
    } else if (const char* v = value("--rebuild_threads=")) {
      rebuild_threads = std::strtoul(v, nullptr, 10);
    } else if (const char* v = value("--rebuild_workload=")) {
      if (!ParseChoice("--rebuild_workload", v, "sim", "synthetic", &fill.sim)) return 2;
    } else if (const char* v = value("--rebuild_end=")) {
      if (strcmp(v, "fixed") != 0 && strcmp(v, "now") != 0 && strcmp(v, "extend") != 0) {
        fprintf(stderr, "ingest_bench: --rebuild_end is fixed, now or extend\n");
        return 2;
      }
      fill.end_now = strcmp(v, "fixed") != 0;
      fill.extend = strcmp(v, "extend") == 0;
    } else if (const char* v = value("--rebuild_churn=")) {
      if (!ParseChoice("--rebuild_churn", v, "sim", "none", &fill.churn)) return 2;
    } else if (const char* v = value("--fill_threads=")) {
      fill_threads = std::strtoul(v, nullptr, 10);
    } else if (const char* v = value("--store_dir=")) {
      store_dir = v;
    } else if (const char* v = value("--salvage=")) {
      salvage = std::atoi(v) != 0;
    } else {
      printf(
          "ingest_bench [--scrape_cost=1] [--day_nodes=10] [--day_step_s=10]\n"
          "             [--day_workload=synthetic]\n"
          "             [--rebuild_nodes=100] [--rebuild_step_s=10] [--rebuild_threads=2]\n"
          "             [--rebuild_workload=synthetic] [--rebuild_end=fixed]\n"
          "             [--rebuild_churn=sim] [--fill_threads=2] [--store_dir=] [--salvage=0]\n"
          "  --scrape_cost      measure the CPU per node scrape (0 skips)\n"
          "  --day_nodes        nodes of the day through the pipeline (0 skips)\n"
          "  --day_step_s       their scrape interval, seconds\n"
          "  --day_workload     synthetic (values drawn at every scrape) or sim (the\n"
          "                     simulator's model: smooth, with churn)\n"
          "  --rebuild_nodes    nodes of the rebuild-at-scale store (0 skips)\n"
          "  --rebuild_step_s   its scrape interval, seconds\n"
          "  --rebuild_threads  IngestOptions::rebuild_threads for that rebuild\n"
          "  --rebuild_workload synthetic (as --day_workload) or sim: kubestat-sim's model,\n"
          "                     its node and pod names (as bench/scripts/restart_load.sh's sim)\n"
          "  --rebuild_end      fixed (25 h from a fixed day), now (the 25 h ending now) or\n"
          "                     extend: a --store_dir filled with sim and now is extended\n"
          "                     to the present (its nodes resumed where the store ends), then\n"
          "                     rebuilt; later runs with now reuse it\n"
          "  --rebuild_churn    sim (the model replaces pods, 4 h mean lifetime) or none\n"
          "                     (no pod replaced: every series holds the whole day; run the\n"
          "                     simulator with --pod-lifetime=0 against it)\n"
          "  --fill_threads     threads writing that store\n"
          "  --store_dir        keep that store here and reuse it when it has the same shape\n"
          "                     (default: a temporary directory, removed at exit)\n"
          "  --salvage          after the rebuild, time a salvage of that store (Salvage()\n"
          "                     copies every key: nothing is damaged)\n");
      return strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  if (day_step <= 0 || rebuild_step <= 0 || rebuild_threads < 1 || rebuild_threads > 64 ||
      fill_threads < 1) {
    fprintf(stderr, "ingest_bench: steps must be > 0 and thread counts in range\n");
    return 2;
  }
  if (fill.extend && (!fill.sim || store_dir.empty() || rebuild_nodes == 0)) {
    fprintf(stderr,
            "ingest_bench: --rebuild_end=extend needs --rebuild_workload=sim, --store_dir and "
            "--rebuild_nodes > 0 (a store filled with --rebuild_end=now)\n");
    return 2;
  }
  if (scrape_cost) {
    for (bool reuse : {true, false}) {
      ScrapeCost(30, reuse);
      ScrapeCost(110, reuse);
    }
  }
  if (day_nodes > 0) Day(day_nodes, day_step, day_sim);
  if (rebuild_nodes > 0) {
    RebuildAtScale(store_dir, rebuild_nodes, rebuild_step, fill_threads, rebuild_threads, fill,
                   salvage);
  }
  return 0;
}
