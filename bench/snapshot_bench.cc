// snapshot_bench: the cost of publishing the query snapshot of a large cluster while its
// nodes are read after their scrapes: NODES nodes x 30 pods, CHANGED nodes re-read between
// two publications (a paced publication mid-round reads a few hundred at 5,000 nodes), each
// publication made from the previous one's unchanged parts against one assembled anew.
//
//   snapshot_bench [NODES=5000] [CHANGED=250] [PUBLICATIONS=20]
//
// Prints the CPU time of Publish() (this thread), p50 and max, for both, and their ratio.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kubestat/aggregator/query/snapshot_source.h"
#include "kubestat/testing/aggregator/parts_source.h"
#include "kubestat/testing/aggregator/synthetic_metrics_source.h"
#include "process_figures.h"

namespace kubestat::aggregator {
namespace {

using ::kubestat::bench::ThreadCpuSeconds;

// Each node's objects from the synthetic cluster; a read returns new views of them, as a
// read after a scrape does.
std::vector<std::string> Fill(const bench::SyntheticMetricsSource& synthetic,
                              testing::PartsSource* live) {
  live->fresh_views = true;
  for (const metrics_api::NodeMetrics& node : synthetic.nodes()) {
    NodeObjects& part = live->parts[node.name];
    part.node_name = node.name;
    part.node = std::make_shared<const metrics_api::NodeMetrics>(node);
  }
  for (const metrics_api::PodMetrics& pod : synthetic.ListPods("")) {
    live->parts[pod.node_name].pods.push_back(std::make_shared<const metrics_api::PodMetrics>(pod));
  }
  std::vector<std::string> names;
  for (auto& [name, part] : live->parts) {
    std::sort(part.pods.begin(), part.pods.end(), [](const auto& a, const auto& b) {
      return std::tie(a->namespace_name, a->name) < std::tie(b->namespace_name, b->name);
    });
    names.push_back(name);
  }
  return names;
}

struct Figures {
  double p50_ms = 0;
  double max_ms = 0;
};

Figures Summarize(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  return {seconds[seconds.size() / 2] * 1e3, seconds.back() * 1e3};
}

int Run(int nodes, int changed, int publications) {
  const bench::SyntheticMetricsSource synthetic(nodes, 30, std::max(1, nodes / 5));
  testing::PartsSource live;
  const std::vector<std::string> names = Fill(synthetic, &live);
  SnapshotSource incremental(&live, true);
  SnapshotSource whole(&live, false);
  for (const std::string& name : names) {
    incremental.RefreshNode(name);
    whole.RefreshNode(name);
  }
  incremental.Publish();
  whole.Publish();
  std::mt19937_64 rng(7);
  std::vector<double> incremental_seconds, whole_seconds;
  for (int p = 0; p < publications; ++p) {
    for (int c = 0; c < changed; ++c) {
      const std::string& name = names[rng() % names.size()];
      incremental.RefreshNode(name);
      whole.RefreshNode(name);
    }
    // The previous snapshots stay held while a publication is timed, as the watch hub holds
    // the objects it last diffed in the aggregator: the replaced views are freed after it, not
    // in it.
    std::shared_ptr<const MetricsSnapshot> held_incremental = incremental.Snapshot();
    std::shared_ptr<const MetricsSnapshot> held_whole = whole.Snapshot();
    double t0 = ThreadCpuSeconds();
    incremental.Publish();
    incremental_seconds.push_back(ThreadCpuSeconds() - t0);
    t0 = ThreadCpuSeconds();
    whole.Publish();
    whole_seconds.push_back(ThreadCpuSeconds() - t0);
    held_incremental.reset();
    held_whole.reset();
  }
  if (incremental.Snapshot()->pods.size() != whole.Snapshot()->pods.size()) {
    fprintf(stderr, "snapshot_bench: the two snapshots differ\n");
    return 1;
  }
  const Figures a = Summarize(incremental_seconds), b = Summarize(whole_seconds);
  printf("publish, %d nodes x 30 pods (%zu pods), %d nodes re-read between publications:\n", nodes,
         incremental.Snapshot()->pods.size(), changed);
  printf("  from the unchanged parts: p50 %.1f ms, max %.1f ms CPU\n", a.p50_ms, a.max_ms);
  printf("  assembled anew:           p50 %.1f ms, max %.1f ms CPU\n", b.p50_ms, b.max_ms);
  printf("  ratio (anew / unchanged parts), p50: %.1f\n", b.p50_ms / a.p50_ms);
  printf("  parts read again whose pods took their predecessors' places: %llu\n",
         static_cast<unsigned long long>(incremental.Stats().parts_in_place));
  return 0;
}

}  // namespace
}  // namespace kubestat::aggregator

int main(int argc, char** argv) {
  const int nodes = argc > 1 ? atoi(argv[1]) : 5000;
  const int changed = argc > 2 ? atoi(argv[2]) : 250;
  const int publications = argc > 3 ? atoi(argv[3]) : 20;
  if (nodes < 1 || changed < 0 || publications < 1) {
    fprintf(stderr, "usage: snapshot_bench [NODES] [CHANGED] [PUBLICATIONS]\n");
    return 2;
  }
  return kubestat::aggregator::Run(nodes, changed, publications);
}
