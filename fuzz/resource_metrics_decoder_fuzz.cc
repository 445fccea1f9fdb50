// Feeds arbitrary bytes to the /metrics/resource decoder: it must return a value or an
// error, never crash, leak or read out of bounds; a decoded scrape keeps the decoder's
// invariants.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kubestat/scrapers/resource_metrics_decoder.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const kubestat::Timestamp scrape_time{std::chrono::seconds(1795255200)};
  auto scrape = kubestat::scrapers::DecodeResourceMetrics(input, "fuzz-node", scrape_time);
  if (!scrape.ok()) return 0;
  constexpr uint64_t kMax = uint64_t{1} << 63;
  Check(scrape->node_name == "fuzz-node");
  Check(!scrape->cpu || !scrape->cpu->usage_core_nanoseconds ||
        *scrape->cpu->usage_core_nanoseconds <= kMax);
  for (const auto& pod : scrape->pods) {
    Check(!pod.name.empty() && !pod.namespace_name.empty() && pod.uid.empty());
    Check(!pod.memory || !pod.memory->working_set_bytes || *pod.memory->working_set_bytes <= kMax);
    for (const auto& container : pod.containers) {
      Check(!container.name.empty());
      Check(!container.cpu || !container.cpu->usage_core_nanoseconds ||
            *container.cpu->usage_core_nanoseconds <= kMax);
      Check(!container.cpu || !container.cpu->usage_nano_cores);
    }
  }
  return 0;
}
