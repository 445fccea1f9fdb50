// Fuzzes the metrics objects' JSON reader (what a server reads from a writer it does not
// control): arbitrary bytes as a NodeMetrics, a PodMetrics and a WriteBatch document. Whatever
// parses must render again, and its metrics/v1alpha1 rendering must parse back to the same object
// modulo what the document cannot carry (checked by re-rendering).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kubestat/metrics_api/parse.h"
#include "kubestat/metrics_api/render.h"
#include "kubestat/metrics_api/write_batch.h"

namespace {

using kubestat::metrics_api::GroupVersion;
using kubestat::metrics_api::RenderContext;

template <typename Parsed, typename Render, typename Parse>
void RoundTrip(const Parsed& parsed, Render render, Parse parse) {
  const RenderContext alpha{GroupVersion::kV1alpha1, {}, 0};
  const std::string json = *render(parsed.object, alpha);
  auto again = parse(json);
  if (!again.ok()) abort();  // what was rendered must read back
  if (*render(again->object, alpha) != json) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto node = kubestat::metrics_api::ParseNodeMetrics(text); node.ok()) {
    RoundTrip(
        *node,
        [](const auto& o, const RenderContext& c) {
          return kubestat::metrics_api::RenderNode(o, c);
        },
        [](std::string_view j) { return kubestat::metrics_api::ParseNodeMetrics(j); });
  }
  if (auto pod = kubestat::metrics_api::ParsePodMetrics(text); pod.ok()) {
    RoundTrip(
        *pod,
        [](const auto& o, const RenderContext& c) {
          return kubestat::metrics_api::RenderPod(o, c);
        },
        [](std::string_view j) { return kubestat::metrics_api::ParsePodMetrics(j); });
  }
  if (auto batch = kubestat::metrics_api::ParseWriteBatch(text); batch.ok()) {
    // A batch that reads renders to one that reads back with the same items.
    auto again =
        kubestat::metrics_api::ParseWriteBatch(kubestat::metrics_api::RenderWriteBatch(*batch));
    if (!again.ok() || again->items.size() != batch->items.size()) abort();
  }
  return 0;
}
