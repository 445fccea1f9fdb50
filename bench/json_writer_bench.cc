// JsonWriter throughput on a PodMetrics-like list of 30 pods, and ParseRfc3339 /
// FormatRfc3339Nano / ParseDuration rates. Prints Google Benchmark figures: bytes_per_second
// is the JSON written, items_per_second the timestamps or durations handled.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "kubestat/apimachinery/object_meta.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/core/time.h"

namespace kubestat {
namespace {

constexpr int kPods = 30;
constexpr int kContainersPerPod = 2;

// A PodMetrics list as the v1alpha1 API sends it: per container four windows, each with
// mean/max/min/50th/95th/99th of cpu and memory.
void WritePodMetricsList(JsonWriter& w) {
  static const char* const kWindows[] = {"10s", "1m", "1h", "1d"};
  static const char* const kStats[] = {"mean", "max", "min", "50th", "95th", "99th"};
  const Timestamp end = Timestamp(std::chrono::seconds(1795255210));
  w.BeginObject().Member("kind", "PodMetricsList").Member("apiVersion", "metrics/v1alpha1");
  w.Key("metadata").BeginObject().EndObject();
  w.Key("items").BeginArray();
  for (int p = 0; p < kPods; ++p) {
    ObjectMeta meta;
    meta.name = "web-" + std::to_string(p);
    meta.namespace_name = "shop";
    meta.creation_timestamp = end;
    meta.labels = {{"app", "web"}, {"pod-template-hash", "7d4b9c8f6d"}};
    w.BeginObject().Member("kind", "PodMetrics").Member("apiVersion", "metrics/v1alpha1");
    WriteObjectMeta(w, meta);
    w.Key("containers").BeginArray();
    for (int c = 0; c < kContainersPerPod; ++c) {
      w.BeginObject().Key("metadata").BeginObject().Member("name", c == 0 ? "app" : "sidecar");
      w.EndObject().Key("metrics").BeginObject();
      for (const char* window : kWindows) {
        w.Key(window).BeginObject().Member("endtime", FormatRfc3339(end));
        for (const char* stat : kStats) {
          w.Key(stat).BeginObject().Member("cpu", "120m").Member("memory", "302Mi").EndObject();
        }
        w.Member("count", int64_t{360});
        w.EndObject();
      }
      w.EndObject().EndObject();
    }
    w.EndArray().EndObject();
  }
  w.EndArray().EndObject();
}

void BM_JsonWriterPodMetrics30(benchmark::State& state) {
  const int indent = static_cast<int>(state.range(0));
  size_t bytes = 0;
  for (auto _ : state) {
    JsonWriter w(indent);
    w.Reserve(64 * 1024);
    WritePodMetricsList(w);
    bytes += w.str().size();
    benchmark::DoNotOptimize(w.str().data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["doc_bytes"] =
      static_cast<double>(bytes) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_JsonWriterPodMetrics30)->Arg(0)->Arg(2);

// Escaping alone: a long string with a few characters that need escapes.
void BM_JsonWriterAppendQuoted(benchmark::State& state) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "container \"app\" in pod web-1 on node-7\tcaf\xc3\xa9\n";
  std::string out;
  for (auto _ : state) {
    out.clear();
    JsonWriter::AppendQuoted(out, text);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_JsonWriterAppendQuoted);

void BM_ParseRfc3339(benchmark::State& state) {
  const std::vector<std::string> inputs = {"2026-11-21T10:00:10Z", "2026-11-21T10:00:10.123456789Z",
                                           "2026-11-21T12:00:10+02:00", "2026-11-21T10:00:10.5Z"};
  size_t i = 0;
  for (auto _ : state) {
    auto t = ParseRfc3339(inputs[i++ & 3]);
    benchmark::DoNotOptimize(t);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_ParseRfc3339);

void BM_FormatRfc3339Nano(benchmark::State& state) {
  Timestamp t = Timestamp(std::chrono::seconds(1795255210) + std::chrono::nanoseconds(123456789));
  for (auto _ : state) {
    std::string s = FormatRfc3339Nano(t);
    benchmark::DoNotOptimize(s.data());
    t += std::chrono::milliseconds(1);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_FormatRfc3339Nano);

void BM_ParseDuration(benchmark::State& state) {
  const std::vector<std::string> inputs = {"10s", "1m30s", "1.5h", "500ms"};
  size_t i = 0;
  for (auto _ : state) {
    auto d = ParseDuration(inputs[i++ & 3]);
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_ParseDuration);

}  // namespace
}  // namespace kubestat
