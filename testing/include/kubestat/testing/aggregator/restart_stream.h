// The deterministic stream of node scrapes the restart test and its driver share, and the
// text dump of every window both compare.
#ifndef KUBESTAT_TESTING_AGGREGATOR_RESTART_STREAM_H_
#define KUBESTAT_TESTING_AGGREGATOR_RESTART_STREAM_H_

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/scrapers/node_scrape.h"

namespace kubestat::aggregator::testing {

// Scrape i of the stream: node i % kNodes at step i / kNodes, every 30 s. Several pods per
// node; container restarts (start time changes), a node counter reset, a pod that leaves
// and comes back, a pod that only exists for a while.
class RestartStream {
 public:
  static constexpr size_t kNodes = 3;
  static constexpr size_t kPods = 4;
  static constexpr size_t kContainers = 2;

  RestartStream() : counters_(kNodes * (1 + kPods * kContainers), 0) {}

  // Must be called with i = 0, 1, 2, ... in order.
  scrapers::NodeScrape Next(uint64_t i) {
    const size_t node = i % kNodes;
    const uint64_t step = i / kNodes;
    const Timestamp t = Timestamp(std::chrono::hours(24 * 20000)) +
                        std::chrono::seconds(30 * step) + std::chrono::milliseconds(node);
    scrapers::NodeScrape s;
    s.node_name = "node-" + std::to_string(node);
    size_t slot = node * (1 + kPods * kContainers);
    auto cpu = [&](uint64_t rate_millicores) {
      counters_[slot] += rate_millicores * 1000000 * 30 + Mix(i, slot) % 7000000;
      return counters_[slot++];
    };
    uint64_t node_counter = cpu(1500 + step % 13 * 50);
    if (node == 1 && step == 150) {  // the node's counter resets
      counters_[node * (1 + kPods * kContainers)] = node_counter = 12345;
    }
    s.cpu = scrapers::CpuSample{t, node_counter, std::nullopt};
    s.memory = scrapers::MemorySample{t, (uint64_t{6} << 30) + Mix(i, 1) % (uint64_t{1} << 28)};
    scrapers::ContainerScrape kubelet;
    kubelet.name = "kubelet";
    kubelet.memory = scrapers::MemorySample{t, (uint64_t{90} << 20) + Mix(i, 2) % 1000000};
    s.system_containers.push_back(kubelet);
    for (size_t p = 0; p < kPods; ++p) {
      const bool away = node == 2 && p == 3 && step >= 100 && step < 120;
      const bool late = node == 0 && p == 2 && step < 60;
      scrapers::PodScrape pod;
      pod.name = "pod-" + std::to_string(node) + "-" + std::to_string(p);
      pod.namespace_name = p % 2 ? "shop" : "default";
      for (size_t c = 0; c < kContainers; ++c) {
        scrapers::ContainerScrape container;
        container.name = "c" + std::to_string(c);
        // Restarts every 97 steps (staggered): a new start time.
        container.start_time =
            Timestamp(std::chrono::hours(1)) + std::chrono::hours((step + p * 13 + c * 29) / 97);
        container.cpu = scrapers::CpuSample{t, cpu(100 + p * 40 + c * 10), std::nullopt};
        container.memory =
            scrapers::MemorySample{t, (uint64_t{100} << 20) * (1 + p) + Mix(i, 3 + c) % 5000000};
        pod.containers.push_back(container);
      }
      if (!away && !late) s.pods.push_back(pod);
    }
    return s;
  }

 private:
  static uint64_t Mix(uint64_t a, uint64_t b) {
    uint64_t x = a * 0x9E3779B97F4A7C15ull + b * 0xC2B2AE3D27D4EB4Full + 1;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return x;
  }
  std::vector<uint64_t> counters_;
};

// Every window of every series, one line per series, all stats exactly.
inline std::string DumpWindows(const Ingestor& ingestor) {
  std::ostringstream out;
  for (const windows::SeriesWindows& series : ingestor.QueryAll()) {
    out << series.key.ToString() << " end=" << series.endtime.time_since_epoch().count();
    for (const windows::WindowStats& w : series.windows) {
      out << " [" << w.window.count() << " n=" << w.count << " mean=" << w.mean << " min=" << w.min
          << " max=" << w.max << " p50=" << w.p50 << " p95=" << w.p95 << " p99=" << w.p99
          << " exact=" << w.exact_percentiles << "]";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace kubestat::aggregator::testing

#endif  // KUBESTAT_TESTING_AGGREGATOR_RESTART_STREAM_H_
