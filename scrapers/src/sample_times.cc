#include "kubestat/scrapers/sample_times.h"

#include <cstddef>
#include <string>

#include "absl/strings/str_cat.h"
#include "kubestat/core/time.h"
#include "kubestat/scrapers/fetch_error.h"

namespace kubestat::scrapers {

absl::Status SampleTimeLimits::Validate() const {
  if (max_age <= Duration::zero()) {
    return absl::InvalidArgumentError("--max-sample-age: must be positive");
  }
  if (max_ahead <= Duration::zero()) {
    return absl::InvalidArgumentError("--max-sample-ahead: must be positive");
  }
  return absl::OkStatus();
}

absl::Status CheckSampleTimes(const NodeScrape& scrape, Timestamp scrape_time,
                              const SampleTimeLimits& limits) {
  const Timestamp earliest = scrape_time - limits.max_age;
  const Timestamp latest = scrape_time + limits.max_ahead;
  size_t readings = 0;
  size_t bad = 0;
  std::string first;  // e.g. "pod shop/web-1 cpu"
  Timestamp first_time{};
  // `sample` is a std::optional reading; `object` names its owner, and is called only for
  // the first reading out of range.
  auto check = [&](const auto& sample, const char* resource, const auto& object) {
    if (!sample) return;
    ++readings;
    if (sample->time >= earliest && sample->time <= latest) return;
    if (bad++ == 0) {
      first = absl::StrCat(object(), " ", resource);
      first_time = sample->time;
    }
  };
  auto check_all = [&](const auto& owner, const auto& object) {
    check(owner.cpu, "cpu", object);
    check(owner.memory, "memory", object);
    check(owner.swap, "swap", object);
  };

  check_all(scrape, [] { return std::string("node"); });
  for (const ContainerScrape& c : scrape.system_containers) {
    check_all(c, [&] { return absl::StrCat("system container \"", c.name, "\""); });
  }
  for (const PodScrape& pod : scrape.pods) {
    check_all(pod, [&] { return absl::StrCat("pod ", pod.namespace_name, "/", pod.name); });
    for (const ContainerScrape& c : pod.containers) {
      check_all(c, [&] {
        return absl::StrCat("container ", pod.namespace_name, "/", pod.name, "/", c.name);
      });
    }
  }
  if (bad == 0) return absl::OkStatus();

  const bool early = first_time < earliest;
  return WithFailureReason(
      absl::InvalidArgumentError(absl::StrCat(
          "node \"", scrape.node_name, "\": ", bad, " of ", readings,
          " readings are stamped too far from the scrape at ", FormatRfc3339Nano(scrape_time),
          "; the first: ", first, " at ", FormatRfc3339Nano(first_time),
          first_time == Timestamp{} ? " (the Unix epoch)" : "", ", more than ",
          early ? "--max-sample-age=" : "--max-sample-ahead=",
          FormatDuration(early ? limits.max_age : limits.max_ahead),
          early ? " before it" : " after it")),
      kBadTimestampReason);
}

}  // namespace kubestat::scrapers
