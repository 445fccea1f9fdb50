// REST rendering cost: a 30-pod namespace and a 1,000-node list, in both APIs, and the
// same requests through RestHandler (routing, query parsing and the source's copy); and the
// list of every pod of a 5,000-node cluster in JSON and in the Kubernetes protobuf, written
// directly and through libprotobuf's generated classes.
#include <benchmark/benchmark.h>

#include <string>

#include "kubestat/aggregator/frontends/rest_handler.h"
#include "kubestat/core/clock.h"
#include "kubestat/metrics_api/query.h"
#include "kubestat/metrics_api/render.h"
#include "kubestat/metrics_api/render_protobuf.h"
#include "kubestat/testing/aggregator/synthetic_metrics_source.h"
#include "kubestat/testing/render_protobuf_reference.h"

namespace kubestat::aggregator {
namespace {

using metrics_api::GroupVersion;
using metrics_api::ListQuery;
using metrics_api::ParseListQuery;
using metrics_api::ParseQueryString;
using metrics_api::RenderContext;
using metrics_api::RenderNodeList;
using metrics_api::RenderPodList;
using metrics_api::RenderPodListProtobuf;
using metrics_api::SharedPods;
using ApiResource = metrics_api::Resource;

const bench::SyntheticMetricsSource& Source() {
  // 1,000 nodes x 30 pods in 1,000 namespaces: 30 pods per namespace.
  static const bench::SyntheticMetricsSource source(1000, 30, 1000);
  return source;
}

RenderContext Context(GroupVersion api) {
  return RenderContext{api, Timestamp(std::chrono::seconds(1795255230)), 0};
}

void RenderNamespacePods(benchmark::State& state, GroupVersion api) {
  const std::vector<metrics_api::PodMetrics>& pods = Source().pods_of("ns-0007");
  const ListQuery query;
  const RenderContext ctx = Context(api);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string body = RenderPodList(pods, query, ctx);
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  state.counters["pods"] = static_cast<double>(pods.size());
  state.counters["bytes"] = static_cast<double>(bytes);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

void RenderAllNodes(benchmark::State& state, GroupVersion api) {
  const std::vector<metrics_api::NodeMetrics>& nodes = Source().nodes();
  const ListQuery query;
  const RenderContext ctx = Context(api);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string body = RenderNodeList(nodes, query, ctx);
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  state.counters["nodes"] = static_cast<double>(nodes.size());
  state.counters["bytes"] = static_cast<double>(bytes);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

void BM_RenderNamespacePodsV1beta1(benchmark::State& state) {
  RenderNamespacePods(state, GroupVersion::kV1beta1);
}
void BM_RenderNamespacePodsV1alpha1(benchmark::State& state) {
  RenderNamespacePods(state, GroupVersion::kV1alpha1);
}
void BM_RenderNodeListV1beta1(benchmark::State& state) {
  RenderAllNodes(state, GroupVersion::kV1beta1);
}
void BM_RenderNodeListV1alpha1(benchmark::State& state) {
  RenderAllNodes(state, GroupVersion::kV1alpha1);
}

// A label selector over every pod of the cluster (30,000), v1beta1.
void BM_RenderAllPodsWithLabelSelectorV1beta1(benchmark::State& state) {
  const std::vector<metrics_api::PodMetrics> pods = Source().ListPods("");
  absl::StatusOr<ListQuery> query = ParseListQuery(
      ParseQueryString("labelSelector=app%3Dapp-7,tier%3Dbackend"), ApiResource::kPods, "");
  const RenderContext ctx = Context(GroupVersion::kV1beta1);
  for (auto _ : state) {
    std::string body = RenderPodList(pods, *query, ctx);
    benchmark::DoNotOptimize(body);
  }
  state.counters["pods"] = static_cast<double>(pods.size());
}

// Every pod of a 5,000-node cluster, 150,000 pods (30 per node, 2 containers each, named
// like app-000123-7d9f8c6b5-x2x9z, 3 labels each), as shared views of a snapshot, the way
// the REST front end lists them. Built once, by the first benchmark that asks for it (a few
// seconds; the process peaks at 1.4 GB while the source holds its copies).
const MetricsSnapshot& LargeCluster() {
  static const auto* snapshot = new std::shared_ptr<const MetricsSnapshot>(
      bench::SyntheticMetricsSource(5000, 30, 1000).Snapshot());
  return **snapshot;
}

// The whole-cluster pod list of v1beta1, rendered by `render`: CPU time per list and its
// bytes. The page is selected once, outside the timing.
template <typename Render>
void RenderLargePodList(benchmark::State& state, Render render) {
  const SharedPods pods(LargeCluster().pods);
  const RenderContext ctx = Context(GroupVersion::kV1beta1);
  const metrics_api::Page page = metrics_api::Select(ListQuery{}, ctx.gv, pods);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string body = render(pods, page, ctx);
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  state.counters["pods"] = static_cast<double>(page.indices.size());
  state.counters["bytes"] = static_cast<double>(bytes);
}
void BM_RenderLargePodListJson(benchmark::State& state) {
  RenderLargePodList(state,
                     [](SharedPods pods, const metrics_api::Page& page, const RenderContext& ctx) {
                       return RenderPodList(pods, page, ctx);
                     });
}
void BM_RenderLargePodListProtobuf(benchmark::State& state) {
  RenderLargePodList(state,
                     [](SharedPods pods, const metrics_api::Page& page, const RenderContext& ctx) {
                       return RenderPodListProtobuf(pods, page, ctx);
                     });
}
void BM_RenderLargePodListProtobufLibprotobuf(benchmark::State& state) {
  RenderLargePodList(state,
                     [](SharedPods pods, const metrics_api::Page& page, const RenderContext& ctx) {
                       return kubestat::testing::ReferencePodListProtobuf(pods, page, ctx);
                     });
}

// Whole requests through the handler: routing, query parsing, the source's copy, render.
void Handle(benchmark::State& state, std::string_view path, std::string_view query) {
  FakeClock clock;
  RestHandler handler(Source(), clock, LivenessCheck{});
  for (auto _ : state) {
    RestResponse response = handler.Handle(RestRequest{"GET", path, query});
    if (response.code != 200) state.SkipWithError("unexpected status");
    benchmark::DoNotOptimize(response);
  }
}
void BM_HandleNamespacePodsV1beta1(benchmark::State& state) {
  Handle(state, "/apis/metrics.k8s.io/v1beta1/namespaces/ns-0007/pods", "");
}
void BM_HandleNodeListV1beta1(benchmark::State& state) {
  Handle(state, "/apis/metrics.k8s.io/v1beta1/nodes", "");
}
void BM_HandleNodeListV1alpha1(benchmark::State& state) {
  Handle(state, "/apis/metrics/v1alpha1/nodes", "");
}

BENCHMARK(BM_RenderNamespacePodsV1beta1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RenderNamespacePodsV1alpha1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RenderNodeListV1beta1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RenderNodeListV1alpha1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RenderAllPodsWithLabelSelectorV1beta1)->Unit(benchmark::kMillisecond);
// A tenth of a second to a second per list: five runs each, their mean, median and spread.
BENCHMARK(BM_RenderLargePodListJson)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_RenderLargePodListProtobuf)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_RenderLargePodListProtobufLibprotobuf)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_HandleNamespacePodsV1beta1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HandleNodeListV1beta1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HandleNodeListV1alpha1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kubestat::aggregator

BENCHMARK_MAIN();
