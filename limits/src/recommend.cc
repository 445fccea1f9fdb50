#include "kubestat/limits/recommend.h"

#include <cmath>
#include <cstdint>
#include <utility>

#include "kubestat/core/str_cat.h"

namespace kubestat::limits {
namespace {

int64_t WithMargin(double value, double margin) {
  const double scaled = std::ceil(value * (1 + margin));
  if (!(scaled >= 0)) return 0;
  if (scaled >= 9.0e18) return INT64_C(9000000000000000000);
  return static_cast<int64_t>(scaled);
}

}  // namespace

absl::Status RecommendOptions::Validate() const {
  if (!(cpu_percentile > 0 && cpu_percentile <= 100)) {
    return absl::InvalidArgumentError(
        StrCat("--recommend-cpu-percentile must be in (0, 100], got ", cpu_percentile));
  }
  if (!(cpu_margin >= 0 && cpu_margin <= 10)) {
    return absl::InvalidArgumentError(
        StrCat("--recommend-cpu-margin must be in [0, 10], got ", cpu_margin));
  }
  if (!(memory_margin >= 0 && memory_margin <= 10)) {
    return absl::InvalidArgumentError(
        StrCat("--recommend-memory-margin must be in [0, 10], got ", memory_margin));
  }
  return absl::OkStatus();
}

ContainerWant WantFor(std::string name, const UsageSummary& cpu, const UsageSummary& memory,
                      const RecommendOptions& options) {
  ContainerWant want;
  want.name = std::move(name);
  Wanted& c = want.want[static_cast<size_t>(Resource::kCpu)];
  c.request = WithMargin(cpu.percentile, options.cpu_margin);
  c.limit = WithMargin(cpu.max, options.cpu_margin);
  Wanted& m = want.want[static_cast<size_t>(Resource::kMemory)];
  m.request = WithMargin(memory.max, options.memory_margin);
  m.limit = m.request;
  return want;
}

}  // namespace kubestat::limits
