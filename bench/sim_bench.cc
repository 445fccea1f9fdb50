// Cost of serving one node's kubelet endpoints from the model: the snapshot (model
// evaluation) plus the rendering, per request. "cores@1000n/10s" is the CPU a simulator
// of 1,000 such nodes spends when every node is scraped once every 10 s.
#include <benchmark/benchmark.h>

#include "kubestat/sim/model.h"
#include "kubestat/sim/render.h"

namespace kubestat::sim {
namespace {

enum class Endpoint { kSummary, kSummaryCpuMemory, kResource };

void Render(benchmark::State& state, Endpoint endpoint) {
  ClusterModelOptions options;
  options.nodes = 8;
  options.pods_per_node = static_cast<int>(state.range(0));
  const ClusterModel model = *ClusterModel::Create(options);
  Timestamp t = Timestamp(std::chrono::seconds(1795255200));
  size_t bytes = 0;
  int node = 0;
  for (auto _ : state) {
    const NodeSnapshot snap = model.Snapshot(node, t);
    std::string body = endpoint == Endpoint::kResource
                           ? RenderResourceMetrics(snap)
                           : RenderSummary(snap, endpoint == Endpoint::kSummaryCpuMemory);
    bytes = body.size();
    benchmark::DoNotOptimize(body);
    node = (node + 1) % options.nodes;
    t += std::chrono::seconds(10);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  // per-request seconds * 1000 nodes / 10 s
  state.counters["cores@1000n/10s"] = benchmark::Counter(
      0.01, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_SummaryFull(benchmark::State& s) { Render(s, Endpoint::kSummary); }
void BM_SummaryCpuMemory(benchmark::State& s) { Render(s, Endpoint::kSummaryCpuMemory); }
void BM_MetricsResource(benchmark::State& s) { Render(s, Endpoint::kResource); }
BENCHMARK(BM_SummaryFull)->Arg(30)->Arg(110)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SummaryCpuMemory)->Arg(30)->Arg(110)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MetricsResource)->Arg(30)->Arg(110)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kubestat::sim

BENCHMARK_MAIN();
