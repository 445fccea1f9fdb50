#include "kubestat/kube/request_credentials.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/strings/match.h"
#include "kubestat/core/absl_view.h"

namespace kubestat::kube {
namespace {

// ASCII case-insensitive equality (header names, auth schemes).
bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return absl::EqualsIgnoreCase(AbslView(a), AbslView(b));
}

}  // namespace

std::optional<std::string_view> HeaderList::First(std::string_view name) const {
  for (const auto& [key, value] : headers_) {
    if (EqualsIgnoreCase(key, name)) return std::string_view(value);
  }
  return std::nullopt;
}

std::vector<std::string_view> HeaderList::All(std::string_view name) const {
  std::vector<std::string_view> values;
  for (const auto& [key, value] : headers_) {
    if (EqualsIgnoreCase(key, name)) values.emplace_back(value);
  }
  return values;
}

void HeaderList::ForEach(
    const std::function<void(std::string_view, std::string_view)>& visit) const {
  for (const auto& [key, value] : headers_) visit(key, value);
}

bool ClientCertificate::VerifiedBy(std::string_view bundle) const {
  return std::find(verified_by.begin(), verified_by.end(), bundle) != verified_by.end();
}

}  // namespace kubestat::kube
