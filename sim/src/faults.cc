#include "kubestat/sim/faults.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sim_strings.h"

namespace kubestat::sim {
namespace {

constexpr std::pair<Fault, std::string_view> kNames[] = {
    {Fault::kNone, "none"},           {Fault::kTimeout, "timeout"},
    {Fault::kHttp500, "http500"},     {Fault::kGarbage, "garbage"},
    {Fault::kTruncated, "truncated"}, {Fault::kOversized, "oversized"},
    {Fault::kSlowdrip, "slowdrip"},   {Fault::kZeroTimestamp, "zero-timestamp"},
};

constexpr std::pair<PodResourcesFault, std::string_view> kPodResourcesNames[] = {
    {PodResourcesFault::kNone, "none"},
    {PodResourcesFault::kAbsent, "absent"},
    {PodResourcesFault::kNoAllocatable, "no-allocatable"},
    {PodResourcesFault::kNoGet, "no-get"},
    {PodResourcesFault::kSlow, "slow"},
};

template <typename F, size_t N>
std::string_view NameOf(const std::pair<F, std::string_view> (&names)[N], F f) {
  for (const auto& [fault, name] : names) {
    if (fault == f) return name;
  }
  return "none";
}

template <typename F, size_t N>
absl::StatusOr<F> ParseName(const std::pair<F, std::string_view> (&names)[N], std::string_view text,
                            std::string_view choices) {
  const std::string_view trimmed = Sv(absl::StripAsciiWhitespace(Av(text)));
  for (const auto& [fault, name] : names) {
    if (trimmed == name) return fault;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown fault \"", Av(trimmed.substr(0, 64)), "\"; want ", Av(choices)));
}

// "NODE=FAULT,..." with `parse` reading each FAULT.
template <typename F>
absl::StatusOr<std::map<std::string, F>> ParseList(std::string_view text,
                                                   absl::StatusOr<F> (*parse)(std::string_view)) {
  std::map<std::string, F> out;
  for (absl::string_view piece : absl::StrSplit(Av(text), ',', absl::SkipWhitespace())) {
    const std::string_view item = Sv(piece);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("fault \"", Av(item), "\" is not NODE=FAULT"));
    }
    const std::string_view node = Sv(absl::StripAsciiWhitespace(Av(item.substr(0, eq))));
    if (node.empty()) return absl::InvalidArgumentError("fault with an empty node name");
    absl::StatusOr<F> fault = parse(item.substr(eq + 1));
    if (!fault.ok()) return fault.status();
    out[std::string(node)] = *fault;
  }
  return out;
}

}  // namespace

std::string_view FaultName(Fault f) { return NameOf(kNames, f); }

absl::StatusOr<Fault> ParseFault(std::string_view text) {
  return ParseName(kNames, text,
                   "timeout|http500|garbage|truncated|oversized|slowdrip|zero-timestamp|none");
}

absl::StatusOr<std::map<std::string, Fault>> ParseFaultList(std::string_view text) {
  return ParseList(text, ParseFault);
}

std::string_view PodResourcesFaultName(PodResourcesFault f) {
  return NameOf(kPodResourcesNames, f);
}

absl::StatusOr<PodResourcesFault> ParsePodResourcesFault(std::string_view text) {
  return ParseName(kPodResourcesNames, text, "absent|no-allocatable|no-get|slow|none");
}

absl::StatusOr<std::map<std::string, PodResourcesFault>> ParsePodResourcesFaultList(
    std::string_view text) {
  return ParseList(text, ParsePodResourcesFault);
}

}  // namespace kubestat::sim
