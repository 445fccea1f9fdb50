// Builders of NodeScrape values and a store + ingestor fixture for the ingest tests, the
// restart driver and the ingest benchmark.
#ifndef KUBESTAT_TESTING_AGGREGATOR_INGEST_SCRAPE_BUILDER_H_
#define KUBESTAT_TESTING_AGGREGATOR_INGEST_SCRAPE_BUILDER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/scrapers/node_scrape.h"
#include "kubestat/storage/store.h"

namespace kubestat::aggregator::testing {

inline scrapers::ContainerScrape MakeContainer(std::string name, Timestamp t,
                                               std::optional<uint64_t> cpu_counter,
                                               std::optional<uint64_t> memory,
                                               Timestamp start = Timestamp(std::chrono::hours(1))) {
  scrapers::ContainerScrape c;
  c.name = std::move(name);
  c.start_time = start;
  if (cpu_counter) c.cpu = scrapers::CpuSample{t, cpu_counter, std::nullopt};
  if (memory) c.memory = scrapers::MemorySample{t, memory};
  return c;
}

// A deterministic synthetic workload: `pods` pods of `containers` containers on each
// node, cpu counters advancing by a seeded per-step amount, memory varying around a level.
class SyntheticCluster {
 public:
  SyntheticCluster(size_t nodes, size_t pods, size_t containers, uint64_t seed)
      : nodes_(nodes), pods_(pods), containers_(containers), rng_(seed) {
    counters_.assign(nodes * (1 + 3 + pods * containers), 0);
  }

  std::string NodeName(size_t n) const { return "node-" + std::to_string(n); }

  scrapers::NodeScrape Scrape(size_t n, Timestamp t) {
    scrapers::NodeScrape s;
    s.node_name = NodeName(n);
    s.start_time = Timestamp(std::chrono::hours(1));
    size_t slot = n * (1 + 3 + pods_ * containers_);
    auto next_cpu = [&](uint64_t scale) {
      counters_[slot] += scale * (50 + rng_() % 950);  // nanoseconds of cpu per step
      return counters_[slot++];
    };
    auto next_memory = [&](uint64_t base) { return base + rng_() % (base / 4 + 1); };
    s.cpu = scrapers::CpuSample{t, next_cpu(40000000), std::nullopt};
    s.memory = scrapers::MemorySample{t, next_memory(uint64_t{8} << 30)};
    for (const char* name : {"kubelet", "runtime", "pods"}) {
      s.system_containers.push_back(
          MakeContainer(name, t, next_cpu(2000000), next_memory(uint64_t{200} << 20)));
    }
    for (size_t p = 0; p < pods_; ++p) {
      scrapers::PodScrape pod;
      pod.name = "pod-" + std::to_string(n) + "-" + std::to_string(p);
      pod.namespace_name = p % 2 ? "shop" : "default";
      for (size_t c = 0; c < containers_; ++c) {
        pod.containers.push_back(MakeContainer("c" + std::to_string(c), t, next_cpu(1000000),
                                               next_memory(uint64_t{100} << 20)));
      }
      s.pods.push_back(std::move(pod));
    }
    return s;
  }

  size_t nodes() const { return nodes_; }

 private:
  size_t nodes_, pods_, containers_;
  std::mt19937_64 rng_;
  std::vector<uint64_t> counters_;
};

}  // namespace kubestat::aggregator::testing

#endif  // KUBESTAT_TESTING_AGGREGATOR_INGEST_SCRAPE_BUILDER_H_
