#include "kubestat/kube/request_credentials.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace kubestat::kube {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
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
