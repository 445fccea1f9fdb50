// The watch feed per round: WatchHub::OnRound over N nodes x 30 pods (2 containers each)
// when every object changed (the normal case: each scrape moves every endtime) and when
// none did, and the conversion of one pod to its proto message.
#include <benchmark/benchmark.h>

#include <string>

#include "kubestat/aggregator/query/watch_hub.h"
#include "kubestat/metrics_api/proto.h"
#include "kubestat/testing/aggregator/fake_metrics_source.h"

namespace kubestat::aggregator {
namespace {

using testing::BaseTime;
using testing::FakeMetricsSource;
using testing::MakeNode;
using testing::MakePod;

constexpr int kPodsPerNode = 30;

void Fill(FakeMetricsSource& source, int nodes, int round) {
  Timestamp t = BaseTime() + std::chrono::seconds(10) * round;
  for (int n = 0; n < nodes; ++n) {
    std::string node = "node-" + std::to_string(n);
    source.PutNode(MakeNode(node, {{"zone", "a"}}, t, 1000 + static_cast<uint64_t>(n)));
    for (int p = 0; p < kPodsPerNode; ++p) {
      source.PutPod(MakePod("ns-" + std::to_string(p % 10), node + "-pod-" + std::to_string(p),
                            node, {{"app", "web"}}, t, 100 + static_cast<uint64_t>(p), 2));
    }
  }
}

void BM_OnRoundEverythingChanged(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  FakeMetricsSource source;
  WatchHub hub(&source);
  int round = 0;
  for (auto _ : state) {
    state.PauseTiming();
    Fill(source, nodes, ++round);
    state.ResumeTiming();
    hub.OnRound(BaseTime() + std::chrono::seconds(10) * round);
  }
  state.counters["objects"] = nodes * (1 + kPodsPerNode);
  state.counters["objects_per_s"] =
      benchmark::Counter(static_cast<double>(nodes * (1 + kPodsPerNode)),
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_OnRoundEverythingChanged)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

void BM_OnRoundNothingChanged(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  FakeMetricsSource source;
  Fill(source, nodes, 0);
  WatchHub hub(&source);
  hub.OnRound(BaseTime());
  for (auto _ : state) hub.OnRound(BaseTime());
  state.counters["objects"] = nodes * (1 + kPodsPerNode);
}
BENCHMARK(BM_OnRoundNothingChanged)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

void BM_PodToProto(benchmark::State& state) {
  metrics_api::PodMetrics pod =
      MakePod("shop", "web-1", "node-a", {{"app", "web"}}, BaseTime(), 100, 2);
  for (auto _ : state) benchmark::DoNotOptimize(metrics_api::ToProto(pod));
}
BENCHMARK(BM_PodToProto);

}  // namespace
}  // namespace kubestat::aggregator

BENCHMARK_MAIN();
