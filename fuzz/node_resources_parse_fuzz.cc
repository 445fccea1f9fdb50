// Fuzzes the reader of the node agent's /podresources document (what the aggregator reads
// from every node): arbitrary bytes give a document or an InvalidArgument, never a crash, and
// whatever parses renders to a document that reads back to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kubestat/metrics_api/node_resources.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto parsed = kubestat::metrics_api::ParseNodePodResources(bytes);
  if (!parsed.ok()) {
    if (parsed.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  const std::string json = kubestat::metrics_api::RenderNodePodResources(*parsed);
  auto again = kubestat::metrics_api::ParseNodePodResources(json);
  if (!again.ok()) std::abort();
  if (kubestat::metrics_api::RenderNodePodResources(*again) != json) std::abort();
  return 0;
}
