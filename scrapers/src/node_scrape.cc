#include "kubestat/scrapers/node_scrape.h"

#include <utility>

namespace kubestat::scrapers {

std::string_view DecodeIssueKindName(DecodeIssueKind kind) {
  switch (kind) {
    case DecodeIssueKind::kAbsurdValue:
      return "absurd_value";
    case DecodeIssueKind::kWrongType:
      return "wrong_type";
    case DecodeIssueKind::kBadTimestamp:
      return "bad_timestamp";
    case DecodeIssueKind::kMissingField:
      return "missing_field";
    case DecodeIssueKind::kDuplicate:
      return "duplicate";
    case DecodeIssueKind::kKubeletScrapeError:
      return "kubelet_scrape_error";
  }
  return "unknown";
}

void DecodeIssues::Add(DecodeIssueKind kind, std::string message) {
  ++counts_[static_cast<size_t>(kind)];
  if (messages_.size() < kMaxMessages) messages_.push_back(std::move(message));
}

uint64_t DecodeIssues::Total() const {
  uint64_t total = 0;
  for (uint64_t count : counts_) total += count;
  return total;
}

std::string DecodeIssues::Summary() const {
  std::string out;
  for (const std::string& message : messages_) {
    if (!out.empty()) out += "; ";
    out += message;
  }
  const uint64_t total = Total();
  if (total > messages_.size()) {
    out += "; and " + std::to_string(total - messages_.size()) + " more";
  }
  return out;
}

size_t NodeScrape::ContainerCount() const {
  size_t count = 0;
  for (const PodScrape& pod : pods) count += pod.containers.size();
  return count;
}

const PodScrape* NodeScrape::FindPod(std::string_view namespace_name, std::string_view name) const {
  for (const PodScrape& pod : pods) {
    if (pod.name == name && pod.namespace_name == namespace_name) return &pod;
  }
  return nullptr;
}

const ContainerScrape* FindContainer(const std::vector<ContainerScrape>& containers,
                                     std::string_view name) {
  for (const ContainerScrape& container : containers) {
    if (container.name == name) return &container;
  }
  return nullptr;
}

}  // namespace kubestat::scrapers
