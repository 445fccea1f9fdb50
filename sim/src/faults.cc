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

}  // namespace

std::string_view FaultName(Fault f) {
  for (const auto& [fault, name] : kNames) {
    if (fault == f) return name;
  }
  return "none";
}

absl::StatusOr<Fault> ParseFault(std::string_view text) {
  const std::string_view trimmed = Sv(absl::StripAsciiWhitespace(Av(text)));
  for (const auto& [fault, name] : kNames) {
    if (trimmed == name) return fault;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown fault \"", Av(trimmed.substr(0, 64)),
      "\"; want timeout|http500|garbage|truncated|oversized|slowdrip|zero-timestamp|none"));
}

absl::StatusOr<std::map<std::string, Fault>> ParseFaultList(std::string_view text) {
  std::map<std::string, Fault> out;
  for (absl::string_view piece : absl::StrSplit(Av(text), ',', absl::SkipWhitespace())) {
    const std::string_view item = Sv(piece);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("fault \"", Av(item), "\" is not NODE=FAULT"));
    }
    const std::string_view node = Sv(absl::StripAsciiWhitespace(Av(item.substr(0, eq))));
    if (node.empty()) return absl::InvalidArgumentError("fault with an empty node name");
    absl::StatusOr<Fault> fault = ParseFault(item.substr(eq + 1));
    if (!fault.ok()) return fault.status();
    out[std::string(node)] = *fault;
  }
  return out;
}

Fault FaultTable::Get(const std::string& node) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = faults_.find(node);
  return it == faults_.end() ? Fault::kNone : it->second;
}

void FaultTable::Set(const std::string& node, Fault fault) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fault == Fault::kNone) {
    faults_.erase(node);
  } else {
    faults_[node] = fault;
  }
}

std::map<std::string, Fault> FaultTable::All() const {
  std::lock_guard<std::mutex> lock(mu_);
  return faults_;
}

}  // namespace kubestat::sim
