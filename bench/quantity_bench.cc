// Quantity parse and format throughput for the values the API serves most: cpu in
// milli/nano cores, memory in Ki/Mi/Gi. Prints items per second per case.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kubestat/apimachinery/quantity.h"

namespace {

void BM_Parse(benchmark::State& state, const char* text) {
  for (auto _ : state) {
    absl::StatusOr<kubestat::Quantity> q = kubestat::Quantity::Parse(text);
    benchmark::DoNotOptimize(q);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_Parse, cpu_120m, "120m");
BENCHMARK_CAPTURE(BM_Parse, mem_309248Ki, "309248Ki");
BENCHMARK_CAPTURE(BM_Parse, mem_1_5Gi, "1.5Gi");
BENCHMARK_CAPTURE(BM_Parse, exp_1e3, "1e3");
BENCHMARK_CAPTURE(BM_Parse, big_9223372036854775808_1, "9223372036854775808.1");

void BM_ParseJson(benchmark::State& state) {
  for (auto _ : state) {
    absl::StatusOr<kubestat::Quantity> q = kubestat::ParseQuantityJson("\"309248Ki\"");
    benchmark::DoNotOptimize(q);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ParseJson);

// String() of quantities that are not in canonical spelling, so the formatter runs.
void BM_String(benchmark::State& state, const kubestat::Quantity& q) {
  for (auto _ : state) {
    std::string s = q.String();
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_String, cpu_nanocores, kubestat::Quantity::FromNanoCores(123456789));
BENCHMARK_CAPTURE(BM_String, mem_bytes, kubestat::Quantity::FromBytes(316669952));
BENCHMARK_CAPTURE(BM_String, mem_1_5Gi, *kubestat::Quantity::Parse("1.5Gi"));
BENCHMARK_CAPTURE(BM_String, big, *kubestat::Quantity::Parse("9223372036854775808.1"));

std::vector<int64_t> Samples(int64_t step, int64_t start) {
  std::vector<int64_t> v;
  v.reserve(1024);
  for (int i = 0; i < 1024; ++i) v.push_back(start + step * i);
  return v;
}

void BM_FormatCpuNanoCores(benchmark::State& state) {
  const std::vector<int64_t> values = Samples(7919113, 1000000);
  size_t i = 0;
  for (auto _ : state) {
    std::string s = kubestat::FormatCpuNanoCores(values[i++ & 1023]);
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FormatCpuNanoCores);

void BM_FormatMemoryBytes(benchmark::State& state) {
  const std::vector<int64_t> values = Samples(int64_t{4096} * 37, int64_t{300} << 20);
  size_t i = 0;
  for (auto _ : state) {
    std::string s = kubestat::FormatMemoryBytes(values[i++ & 1023]);
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FormatMemoryBytes);

// The general path for the same values, for comparison.
void BM_FromNanoCoresString(benchmark::State& state) {
  const std::vector<int64_t> values = Samples(7919113, 1000000);
  size_t i = 0;
  for (auto _ : state) {
    std::string s = kubestat::Quantity::FromNanoCores(values[i++ & 1023]).String();
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FromNanoCoresString);

}  // namespace

BENCHMARK_MAIN();
