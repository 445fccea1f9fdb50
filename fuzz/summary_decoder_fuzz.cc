// Feeds arbitrary bytes to the /stats/summary decoder: it must return a value or an error,
// never crash, leak or read out of bounds. Every entry point is exercised (decoding into a
// scrape reused from earlier inputs too), and a decoded scrape is checked for the decoder's
// own invariants.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kubestat/scrapers/summary_decoder.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

void CheckInvariants(const kubestat::scrapers::NodeScrape& scrape) {
  constexpr uint64_t kMax = uint64_t{1} << 63;
  Check(!scrape.node_name.empty());
  auto check_cpu = [](const auto& cpu) {
    if (!cpu) return;
    Check(!cpu->usage_core_nanoseconds || *cpu->usage_core_nanoseconds <= kMax);
    Check(!cpu->usage_nano_cores || *cpu->usage_nano_cores <= kMax);
  };
  auto check_memory = [](const auto& memory) {
    if (!memory) return;
    Check(!memory->working_set_bytes || *memory->working_set_bytes <= kMax);
  };
  check_cpu(scrape.cpu);
  check_memory(scrape.memory);
  for (const auto& container : scrape.system_containers) {
    Check(!container.name.empty());
    check_cpu(container.cpu);
    check_memory(container.memory);
  }
  for (const auto& pod : scrape.pods) {
    Check(!pod.name.empty() && !pod.namespace_name.empty());
    check_cpu(pod.cpu);
    check_memory(pod.memory);
    for (const auto& container : pod.containers) {
      Check(!container.name.empty());
      check_cpu(container.cpu);
      check_memory(container.memory);
    }
  }
  Check(scrape.issues.messages().size() <= kubestat::scrapers::DecodeIssues::kMaxMessages);
  Check(scrape.issues.messages().size() <= scrape.issues.Total());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto copied = kubestat::scrapers::DecodeSummary(input);
  if (copied.ok()) CheckInvariants(*copied);

  std::string buffer(input);
  auto in_place = kubestat::scrapers::DecodeSummaryInPlace(&buffer);
  Check(copied.ok() == in_place.ok());
  Check(buffer == input);
  if (copied.ok()) Check(*copied == *in_place);

  // Into a reused scrape: one of an earlier input (the previous call's, kept across calls),
  // then this input's own, each giving what a new scrape gives.
  static kubestat::scrapers::NodeScrape reused;
  std::string again(input);
  Check(kubestat::scrapers::DecodeSummaryInPlace(&again, &reused).ok() == copied.ok());
  if (copied.ok()) Check(reused == *copied);
  again.assign(input);
  Check(kubestat::scrapers::DecodeSummaryInPlace(&again, &reused).ok() == copied.ok());
  if (copied.ok()) Check(reused == *copied);
  return 0;
}
