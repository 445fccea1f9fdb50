#include "kubestat/limits/workload.h"

#include <cctype>

namespace kubestat::limits {
namespace {

// The alphabet of Kubernetes' rand.SafeEncodeString (no vowels, no confusable characters).
constexpr std::string_view kHashAlphabet = "bcdfghjklmnpqrstvwxz2456789";

bool LooksLikeTemplateHash(std::string_view s) {
  if (s.size() < 5 || s.size() > 10) return false;
  for (char c : s) {
    if (kHashAlphabet.find(c) == std::string_view::npos) return false;
  }
  return true;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Workload WorkloadOf(std::string_view pod_name, std::string_view owner_kind,
                    std::string_view owner_name, const std::map<std::string, std::string>& labels) {
  if (owner_kind.empty() || owner_name.empty()) return {"Pod", std::string(pod_name)};
  if (owner_kind == "ReplicaSet") {
    const size_t dash = owner_name.rfind('-');
    if (dash != std::string_view::npos && dash > 0) {
      const std::string_view suffix = owner_name.substr(dash + 1);
      auto label = labels.find("pod-template-hash");
      const bool by_label = label != labels.end() && label->second == suffix;
      const bool by_name = label == labels.end() && LooksLikeTemplateHash(suffix);
      if (by_label || by_name) return {"Deployment", std::string(owner_name.substr(0, dash))};
    }
  }
  return {std::string(owner_kind), std::string(owner_name)};
}

std::string RecommendationName(const Workload& workload, std::string_view container) {
  std::string name = Lower(workload.kind);
  name += '.';
  name += workload.name;
  name += '.';
  name += container;
  return name;
}

std::optional<RecommendationRef> ParseRecommendationName(std::string_view name) {
  const size_t first = name.find('.');
  const size_t last = name.rfind('.');
  if (first == std::string_view::npos || last == first || first == 0 || last + 1 == name.size() ||
      last == first + 1) {
    return std::nullopt;
  }
  return RecommendationRef{std::string(name.substr(0, first)),
                           std::string(name.substr(first + 1, last - first - 1)),
                           std::string(name.substr(last + 1))};
}

}  // namespace kubestat::limits
