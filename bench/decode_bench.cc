// Decode speed of the kubelet payload decoders, per node and in MB/s.
//
// Payloads are generated here in the shapes real kubelets send, so the benchmark runs
// without ../shared/fixtures:
//   - summary_cpu_memory: /stats/summary?only_cpu_and_memory=true (node with three system
//     containers, pods with containers, cpu and memory blocks only);
//   - summary_full: the full v1.35 shape (psi, io, network with ten interfaces, rootfs, logs,
//     swap, ephemeral-storage, process_stats, node fs/runtime/rlimit);
//   - resource_metrics: /metrics/resource with [STABLE] help, millisecond timestamps and
//     container_start_time_seconds.
// Every pod has two containers. The argument is the number of pods (30 and 110, the kubelet's
// default maximum). When the fixtures are present, the generated full summary is checked to
// decode into the same structure as the captured v1.35 payload (which fields are present
// per pod and container); the result is printed before the benchmarks.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>

#include "kubestat/scrapers/resource_metrics_decoder.h"
#include "kubestat/scrapers/summary_decoder.h"

namespace kubestat::scrapers {
namespace {

constexpr int kContainersPerPod = 2;

// Re-indents compact JSON the way the kubelet writes it (two spaces, one value per line).
std::string Indent(const std::string& compact) {
  std::string out;
  out.reserve(compact.size() * 2);
  int depth = 0;
  bool in_string = false;
  auto newline = [&out, &depth] {
    out.push_back('\n');
    out.append(static_cast<size_t>(depth) * 2, ' ');
  };
  for (size_t i = 0; i < compact.size(); ++i) {
    const char c = compact[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\') {
        out.push_back(compact[++i]);
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        out.push_back(c);
        break;
      case '{':
      case '[':
        out.push_back(c);
        ++depth;
        newline();
        break;
      case '}':
      case ']':
        --depth;
        newline();
        out.push_back(c);
        break;
      case ',':
        out.push_back(c);
        newline();
        break;
      case ':':
        out.append(": ");
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

class PayloadGenerator {
 public:
  explicit PayloadGenerator(uint64_t seed) : rng_(seed) {}

  std::string Summary(int pods, bool full) {
    std::string j = "{\"node\":{\"nodeName\":\"bench-node-1\",\"systemContainers\":[";
    const char* system[] = {"kubelet", "runtime", "pods"};
    for (int i = 0; i < 3; ++i) {
      if (i > 0) j += ",";
      j += "{\"name\":\"" + std::string(system[i]) + "\",\"startTime\":\"" + Time(3) + "\",";
      j += Cpu(full) + "," + Memory(full, true);
      if (full) j += "," + Io() + "," + Swap(false);
      j += "}";
    }
    j += "],\"startTime\":\"2026-06-26T09:18:15Z\"," + Cpu(full) + "," + Memory(full, true);
    if (full) {
      j += "," + Io() + "," + Network() + ",\"fs\":" + Fs() + ",\"runtime\":{\"imageFs\":" + Fs() +
           ",\"containerFs\":" + Fs() + "},\"rlimit\":{\"time\":\"" + Time(40) +
           "\",\"maxpid\":4194304,\"curproc\":" + Num(2000) + "}," + Swap(true);
    }
    j += "},\"pods\":[";
    for (int p = 0; p < pods; ++p) {
      if (p > 0) j += ",";
      j += "{\"podRef\":{\"name\":\"workload-" + std::to_string(p) +
           "-7d4b9c8f5d-x2k9q\",\"namespace\":\"team-" + std::to_string(p % 9) + "\",\"uid\":\"" +
           Uid() + "\"},\"startTime\":\"" + Time(2) + "\",\"containers\":[";
      for (int c = 0; c < kContainersPerPod; ++c) {
        if (c > 0) j += ",";
        j += "{\"name\":\"" + std::string(c == 0 ? "app" : "istio-proxy") + "\",\"startTime\":\"" +
             Time(2) + "\"," + Cpu(full) + "," + Memory(full, false);
        if (full) {
          j += "," + Io() + ",\"rootfs\":" + Fs() + ",\"logs\":" + Fs() + "," + Swap(false);
        }
        j += "}";
      }
      j += "]," + Cpu(full) + "," + Memory(full, false);
      if (full) {
        j += "," + Io() + "," + Network() + ",\"volume\":[{\"time\":\"" + Time(40) +
             "\",\"availableBytes\":" + Num(1e9) + ",\"capacityBytes\":" + Num(1e9) +
             ",\"usedBytes\":12288,\"inodesFree\":" + Num(1e6) +
             ",\"inodes\":1000000,\"inodesUsed\":9,\"name\":\"kube-api-access-" +
             std::to_string(p) + "\"}],\"ephemeral-storage\":" + Fs() +
             ",\"process_stats\":{\"process_count\":" + Num(20) + "}," + Swap(true);
      }
      j += "}";
    }
    j += "]}";
    return Indent(j);
  }

  std::string ResourceMetrics(int pods) {
    const std::string ts = " 1782468875123\n";
    std::string t;
    auto family = [&t](const char* name, const char* help, const char* type) {
      t += std::string("# HELP ") + name + " [STABLE] " + help + "\n# TYPE " + name + " " + type +
           "\n";
    };
    auto container_labels = [](int p, int c) {
      return std::string("{container=\"") + (c == 0 ? "app" : "istio-proxy") +
             "\",namespace=\"team-" + std::to_string(p % 9) + "\",pod=\"workload-" +
             std::to_string(p) + "-7d4b9c8f5d-x2k9q\"} ";
    };
    auto pod_labels = [](int p) {
      return "{namespace=\"team-" + std::to_string(p % 9) + "\",pod=\"workload-" +
             std::to_string(p) + "-7d4b9c8f5d-x2k9q\"} ";
    };
    family("container_cpu_usage_seconds_total",
           "Cumulative cpu time consumed by the container in core-seconds", "counter");
    for (int p = 0; p < pods; ++p) {
      for (int c = 0; c < kContainersPerPod; ++c) {
        t += "container_cpu_usage_seconds_total" + container_labels(p, c) + Seconds() + ts;
      }
    }
    family("container_memory_working_set_bytes", "Current working set of the container in bytes",
           "gauge");
    for (int p = 0; p < pods; ++p) {
      for (int c = 0; c < kContainersPerPod; ++c) {
        t += "container_memory_working_set_bytes" + container_labels(p, c) + Bytes() + ts;
      }
    }
    family("container_start_time_seconds",
           "Start time of the container since unix epoch in "
           "seconds",
           "gauge");
    for (int p = 0; p < pods; ++p) {
      for (int c = 0; c < kContainersPerPod; ++c) {
        t += "container_start_time_seconds" + container_labels(p, c) + "1.7824656e+09" + ts;
      }
    }
    family("node_cpu_usage_seconds_total",
           "Cumulative cpu time consumed by the node in core-seconds", "counter");
    t += "node_cpu_usage_seconds_total " + Seconds() + ts;
    family("node_memory_working_set_bytes", "Current working set of the node in bytes", "gauge");
    t += "node_memory_working_set_bytes " + Bytes() + ts;
    family("pod_cpu_usage_seconds_total", "Cumulative cpu time consumed by the pod in core-seconds",
           "counter");
    for (int p = 0; p < pods; ++p) {
      t += "pod_cpu_usage_seconds_total" + pod_labels(p) + Seconds() + ts;
    }
    family("pod_memory_working_set_bytes", "Current working set of the pod in bytes", "gauge");
    for (int p = 0; p < pods; ++p) {
      t += "pod_memory_working_set_bytes" + pod_labels(p) + Bytes() + ts;
    }
    family("resource_scrape_error",
           "1 if there was an error while getting container metrics, 0 otherwise", "gauge");
    t += "resource_scrape_error 0\n";
    return t;
  }

 private:
  std::string Num(double max) {
    return std::to_string(
        std::uniform_int_distribution<uint64_t>(0, static_cast<uint64_t>(max))(rng_));
  }
  std::string Time(int minute) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "2026-06-26T10:%02d:%02dZ", minute % 60,
                  static_cast<int>(rng_() % 60));
    return buffer;
  }
  std::string Uid() {
    char buffer[40];
    std::snprintf(buffer, sizeof(buffer), "%08x-%04x-%04x-%04x-%012llx",
                  static_cast<unsigned>(rng_()), static_cast<unsigned>(rng_() & 0xffff),
                  static_cast<unsigned>(rng_() & 0xffff), static_cast<unsigned>(rng_() & 0xffff),
                  static_cast<unsigned long long>(rng_() & 0xffffffffffffULL));
    return buffer;
  }
  std::string Seconds() {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.6f",
                  std::uniform_real_distribution<double>(0.01, 90000)(rng_));
    return buffer;
  }
  std::string Bytes() {
    char buffer[32];
    std::snprintf(
        buffer, sizeof(buffer), "%.7e",
        static_cast<double>(std::uniform_int_distribution<uint64_t>(1 << 20, 1ULL << 33)(rng_)));
    return buffer;
  }
  std::string Psi() {
    return "\"psi\":{\"full\":{\"total\":" + Num(200000) +
           ",\"avg10\":0,\"avg60\":0.01,\"avg300\":0},\"some\":{\"total\":" + Num(200000) +
           ",\"avg10\":0,\"avg60\":0.01,\"avg300\":0}}";
  }
  std::string Cpu(bool full) {
    std::string s = "\"cpu\":{\"time\":\"" + Time(14) + "\",\"usageNanoCores\":" + Num(4e9) +
                    ",\"usageCoreNanoSeconds\":" + Num(1e14);
    if (full) s += "," + Psi();
    return s + "}";
  }
  std::string Memory(bool full, bool available) {
    std::string s = "\"memory\":{\"time\":\"" + Time(14) + "\",";
    if (available) s += "\"availableBytes\":" + Num(1e10) + ",";
    s += "\"usageBytes\":" + Num(1e10) + ",\"workingSetBytes\":" + Num(1e10) +
         ",\"rssBytes\":" + Num(1e10) + ",\"pageFaults\":" + Num(1e6) +
         ",\"majorPageFaults\":" + Num(100);
    if (full) s += "," + Psi();
    return s + "}";
  }
  std::string Io() { return "\"io\":{\"time\":\"" + Time(14) + "\"," + Psi() + "}"; }
  std::string Swap(bool with_available) {
    std::string s = "\"swap\":{\"time\":\"" + Time(14) + "\",";
    if (with_available) s += "\"swapAvailableBytes\":" + Num(1e9) + ",";
    return s + "\"swapUsageBytes\":0}";
  }
  std::string Fs() {
    return "{\"time\":\"" + Time(14) + "\",\"availableBytes\":" + Num(1e12) +
           ",\"capacityBytes\":977896124416,\"usedBytes\":" + Num(1e8) +
           ",\"inodesFree\":" + Num(6e7) + ",\"inodes\":60710912,\"inodesUsed\":" + Num(100) + "}";
  }
  std::string Network() {
    std::string s = "\"network\":{\"time\":\"" + Time(14) +
                    "\",\"name\":\"eth0\",\"rxBytes\":" + Num(1e9) +
                    ",\"rxErrors\":0,\"txBytes\":" + Num(1e8) + ",\"txErrors\":0,\"interfaces\":[";
    const char* names[] = {"tunl0",    "gre0", "gretap0", "erspan0", "ip_vti0",
                           "ip6_vti0", "sit0", "ip6tnl0", "ip6gre0", "eth0"};
    for (int i = 0; i < 10; ++i) {
      if (i > 0) s += ",";
      s += "{\"name\":\"" + std::string(names[i]) + "\",\"rxBytes\":" + Num(1e9) +
           ",\"rxErrors\":0,\"txBytes\":" + Num(1e8) + ",\"txErrors\":0}";
    }
    return s + "]}";
  }

  std::mt19937_64 rng_;
};

const std::string& Payload(int kind, int pods) {
  static std::string cache[3][2];
  std::string& slot = cache[kind][pods == 30 ? 0 : 1];
  if (slot.empty()) {
    PayloadGenerator generator(/*seed=*/20261121 + pods);
    slot = kind == 2 ? generator.ResourceMetrics(pods) : generator.Summary(pods, kind == 1);
  }
  return slot;
}

void Report(benchmark::State& state, const std::string& payload) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(payload.size()));
  state.counters["payload_KiB"] = static_cast<double>(payload.size()) / 1024.0;
  state.counters["pods"] = static_cast<double>(state.range(0));
}

void BM_SummaryCpuMemory(benchmark::State& state) {
  const std::string& payload = Payload(0, static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto scrape = DecodeSummary(payload);
    if (!scrape.ok()) state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(scrape);
  }
  Report(state, payload);
}

void BM_SummaryFull(benchmark::State& state) {
  const std::string& payload = Payload(1, static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto scrape = DecodeSummary(payload);
    if (!scrape.ok()) state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(scrape);
  }
  Report(state, payload);
}

// The same payload decoded without the padding copy (the kubelet client's path).
void BM_SummaryFullInPlace(benchmark::State& state) {
  std::string payload = Payload(1, static_cast<int>(state.range(0)));
  payload.reserve(payload.size() + kSummaryPadding);
  for (auto _ : state) {
    auto scrape = DecodeSummaryInPlace(&payload);
    if (!scrape.ok()) state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(scrape);
  }
  Report(state, payload);
}

void BM_ResourceMetrics(benchmark::State& state) {
  const std::string& payload = Payload(2, static_cast<int>(state.range(0)));
  const Timestamp now{std::chrono::seconds(1782468875)};
  for (auto _ : state) {
    auto scrape = DecodeResourceMetrics(payload, "bench-node-1", now);
    if (!scrape.ok()) state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(scrape);
  }
  Report(state, payload);
}

BENCHMARK(BM_SummaryCpuMemory)->Arg(30)->Arg(110)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SummaryFull)->Arg(30)->Arg(110)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SummaryFullInPlace)->Arg(30)->Arg(110)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ResourceMetrics)->Arg(30)->Arg(110)->Unit(benchmark::kMicrosecond);

// Which optional values a scrape carries, as a string, for comparing shapes.
std::string Shape(const std::optional<CpuSample>& cpu, const std::optional<MemorySample>& memory,
                  const std::optional<SwapSample>& swap, bool start) {
  std::string s;
  s += cpu ? (cpu->usage_core_nanoseconds ? "C" : "c") : "-";
  s += cpu ? (cpu->usage_nano_cores ? "N" : "n") : "-";
  s += memory ? (memory->working_set_bytes ? "M" : "m") : "-";
  s += swap ? (swap->usage_bytes ? "S" : "s") : "-";
  s += start ? "T" : "-";
  return s;
}

std::string PodShape(const PodScrape& pod) {
  std::string s = Shape(pod.cpu, pod.memory, pod.swap, pod.start_time.has_value()) + "[";
  for (const ContainerScrape& c : pod.containers) {
    s += Shape(c.cpu, c.memory, c.swap, c.start_time.has_value()) + ";";
  }
  return s + "]";
}

// Compares the generated full summary with the captured v1.35 payload, when present.
void CrossCheckWithFixture() {
  std::filesystem::path dir = KUBESTAT_BENCH_FIXTURES_DIR;
  if (const char* env = std::getenv("KUBESTAT_FIXTURES")) dir = env;
  const std::filesystem::path file =
      dir / "summary/nri-kubernetes_k8s-v1.35.0_containerd_stats-summary.json";
  std::ifstream in(file);
  if (!in) {
    std::printf("cross-check: %s not found; skipped\n", file.c_str());
    return;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string captured_text = buffer.str();
  absl::StatusOr<NodeScrape> captured = DecodeSummary(captured_text);
  absl::StatusOr<NodeScrape> generated = DecodeSummary(Payload(1, 30));
  if (!captured.ok() || !generated.ok() || captured->pods.empty()) {
    std::printf("cross-check: FAILED to decode\n");
    return;
  }
  // A captured pod has one container; compare its shape with the generated pods' shape for
  // one container.
  std::string captured_shape = PodShape(captured->pods[0]);
  PodScrape one = generated->pods[0];
  one.containers.resize(1);
  const std::string generated_shape = PodShape(one);
  const std::string node_captured =
      Shape(captured->cpu, captured->memory, captured->swap, captured->start_time.has_value());
  const std::string node_generated =
      Shape(generated->cpu, generated->memory, generated->swap, generated->start_time.has_value());
  const bool same = captured_shape == generated_shape && node_captured == node_generated &&
                    captured->issues.empty() && generated->issues.empty();
  std::printf(
      "cross-check with v1.35 fixture: %s (node %s vs %s, pod %s vs %s; bytes per pod %.0f "
      "captured with 1 container, %.0f generated with %d)\n",
      same ? "same structure" : "DIFFERENT", node_captured.c_str(), node_generated.c_str(),
      captured_shape.c_str(), generated_shape.c_str(),
      static_cast<double>(captured_text.size()) / static_cast<double>(captured->pods.size()),
      static_cast<double>(Payload(1, 30).size()) / 30.0, kContainersPerPod);
}

}  // namespace
}  // namespace kubestat::scrapers

int main(int argc, char** argv) {
  kubestat::scrapers::CrossCheckWithFixture();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
