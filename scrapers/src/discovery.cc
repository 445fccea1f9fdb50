#include "kubestat/scrapers/discovery.h"

#include <arpa/inet.h>

#include <charconv>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kubestat/core/absl_view.h"

namespace kubestat::scrapers {

std::string_view ChangeTypeName(ChangeType type) {
  switch (type) {
    case ChangeType::kAdded:
      return "ADDED";
    case ChangeType::kModified:
      return "MODIFIED";
    case ChangeType::kDeleted:
      return "DELETED";
  }
  return "UNKNOWN";
}

Discovery::~Discovery() = default;

void Discovery::AddListener(ClusterListener* listener) {
  std::lock_guard<std::mutex> lock(mu_);
  listeners_.push_back(listener);
}

bool Discovery::synced() const {
  std::lock_guard<std::mutex> lock(mu_);
  return synced_;
}

bool Discovery::WaitForSync(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return synced_cv_.wait_for(lock, timeout, [this] { return synced_; });
}

std::vector<NodeInfo> Discovery::Nodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<NodeInfo> nodes;
  nodes.reserve(nodes_.size());
  for (const auto& [name, node] : nodes_) nodes.push_back(node);
  return nodes;
}

std::optional<NodeInfo> Discovery::Node(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return std::nullopt;
  return it->second;
}

std::vector<PodInfo> Discovery::Pods() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PodInfo> pods;
  pods.reserve(pods_.size());
  for (const auto& [key, pod] : pods_) pods.push_back(pod);
  return pods;
}

std::optional<PodInfo> Discovery::Pod(std::string_view namespace_name,
                                      std::string_view name) const {
  const std::string key = absl::StrCat(AbslView(namespace_name), "/", AbslView(name));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(key);
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

size_t Discovery::node_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return nodes_.size();
}

size_t Discovery::pod_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pods_.size();
}

DiscoveryStats Discovery::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

KubeApiContact Discovery::kube_api_contact() const {
  std::lock_guard<std::mutex> lock(mu_);
  KubeApiContact oldest;
  for (const auto& [resource, contact] : contact_) {
    if (oldest.failing_since == kZeroTime || contact.failing_since < oldest.failing_since) {
      oldest = contact;
    }
  }
  return oldest;
}

void Discovery::RecordAnswer(int resource) {
  std::lock_guard<std::mutex> lock(mu_);
  contact_.erase(resource);
}

void Discovery::RecordFailure(int resource, Timestamp now, std::string error) {
  std::lock_guard<std::mutex> lock(mu_);
  KubeApiContact& contact = contact_[resource];
  if (contact.failing_since == kZeroTime) contact.failing_since = now;
  contact.last_error = std::move(error);
}

void Discovery::CountStat(uint64_t DiscoveryStats::*field) {
  std::lock_guard<std::mutex> lock(mu_);
  ++(stats_.*field);
}

void Discovery::EmitNode(ChangeType type, const NodeInfo& node) {
  std::vector<ClusterListener*> listeners;
  {
    std::lock_guard<std::mutex> lock(mu_);
    listeners = listeners_;
  }
  for (ClusterListener* listener : listeners) listener->OnNodeChange(type, node);
}

void Discovery::EmitPod(ChangeType type, const PodInfo& pod) {
  std::vector<ClusterListener*> listeners;
  {
    std::lock_guard<std::mutex> lock(mu_);
    listeners = listeners_;
  }
  for (ClusterListener* listener : listeners) listener->OnPodChange(type, pod);
}

void Discovery::ApplyNode(ChangeType type, NodeInfo node) {
  ChangeType emitted = type;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = nodes_.find(node.name);
    if (type == ChangeType::kDeleted) {
      if (it == nodes_.end()) return;
      nodes_.erase(it);
    } else {
      emitted = it == nodes_.end() ? ChangeType::kAdded : ChangeType::kModified;
      nodes_[node.name] = node;
    }
  }
  EmitNode(emitted, node);
}

void Discovery::ApplyPod(ChangeType type, PodInfo pod) {
  ChangeType emitted = type;
  const std::string key = pod.Key();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(key);
    if (type == ChangeType::kDeleted) {
      if (it == pods_.end()) return;
      pods_.erase(it);
    } else {
      emitted = it == pods_.end() ? ChangeType::kAdded : ChangeType::kModified;
      pods_[key] = pod;
    }
  }
  EmitPod(emitted, pod);
}

namespace {

// The changes that turn `current` into `fresh` (keyed maps), as (type, value) pairs.
template <typename T>
std::vector<std::pair<ChangeType, T>> Diff(std::map<std::string, T, std::less<>>& current,
                                           std::map<std::string, T, std::less<>> fresh) {
  std::vector<std::pair<ChangeType, T>> changes;
  for (auto& [key, value] : current) {
    if (fresh.find(key) == fresh.end()) changes.emplace_back(ChangeType::kDeleted, value);
  }
  for (auto& [key, value] : fresh) {
    auto it = current.find(key);
    if (it == current.end()) {
      changes.emplace_back(ChangeType::kAdded, value);
    } else if (!(it->second == value)) {
      changes.emplace_back(ChangeType::kModified, value);
    }
  }
  current = std::move(fresh);
  return changes;
}

}  // namespace

void Discovery::ReplaceNodes(std::vector<NodeInfo> nodes) {
  std::map<std::string, NodeInfo, std::less<>> fresh;
  for (NodeInfo& node : nodes) {
    std::string name = node.name;
    fresh[std::move(name)] = std::move(node);
  }
  std::vector<std::pair<ChangeType, NodeInfo>> changes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    changes = Diff(nodes_, std::move(fresh));
  }
  for (const auto& [type, node] : changes) EmitNode(type, node);
}

void Discovery::ReplacePods(std::vector<PodInfo> pods) {
  std::map<std::string, PodInfo, std::less<>> fresh;
  for (PodInfo& pod : pods) {
    std::string key = pod.Key();
    fresh[std::move(key)] = std::move(pod);
  }
  std::vector<std::pair<ChangeType, PodInfo>> changes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    changes = Diff(pods_, std::move(fresh));
  }
  for (const auto& [type, pod] : changes) EmitPod(type, pod);
}

void Discovery::MarkListed(int resource, int resources) {
  std::vector<ClusterListener*> listeners;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.lists;
    listed_ |= 1u << resource;
    if (sync_announced_ || listed_ != (1u << resources) - 1) return;
    sync_announced_ = true;
    listeners = listeners_;
  }
  // Listeners hear of the sync before synced() turns true, so whoever waits for it sees
  // everything the listeners were told.
  for (ClusterListener* listener : listeners) listener->OnSynced();
  {
    std::lock_guard<std::mutex> lock(mu_);
    synced_ = true;
  }
  synced_cv_.notify_all();
}

absl::StatusOr<std::vector<NodeInfo>> ParseStaticNodes(std::string_view spec) {
  std::vector<NodeInfo> nodes;
  std::set<std::string> names;
  for (absl::string_view raw : absl::StrSplit(AbslView(spec), ',', absl::SkipWhitespace())) {
    std::string_view entry = StdView(absl::StripAsciiWhitespace(raw));
    auto bad = [&](std::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("--static-nodes: entry \"", AbslView(entry), "\": ", AbslView(why)));
    };
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) return bad("want name=host[:port]");
    NodeInfo node;
    node.name = std::string(entry.substr(0, eq));
    std::string_view host_port = entry.substr(eq + 1);
    std::string_view host = host_port;
    std::string_view port;
    if (!host_port.empty() && host_port.front() == '[') {
      size_t close = host_port.find(']');
      if (close == std::string_view::npos) return bad("unterminated [IPv6 address]");
      host = host_port.substr(1, close - 1);
      std::string_view rest = host_port.substr(close + 1);
      if (!rest.empty()) {
        if (rest.front() != ':') return bad("want [address]:port");
        port = rest.substr(1);
      }
    } else if (size_t colon = host_port.rfind(':'); colon != std::string_view::npos) {
      if (host_port.find(':') != colon) return bad("put an IPv6 address in brackets");
      host = host_port.substr(0, colon);
      port = host_port.substr(colon + 1);
    }
    if (host.empty()) return bad("empty host");
    if (!port.empty() || host_port.back() == ':') {
      int value = 0;
      auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
      if (error != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535) {
        return bad("port is not a number in 1..65535");
      }
      node.kubelet_port = value;
    }
    std::string host_text(host);
    unsigned char scratch[16];
    const bool is_ip = inet_pton(AF_INET, host_text.c_str(), scratch) == 1 ||
                       inet_pton(AF_INET6, host_text.c_str(), scratch) == 1;
    node.addresses.push_back({is_ip ? "InternalIP" : "Hostname", host_text});
    if (!names.insert(node.name).second) return bad("node listed twice");
    nodes.push_back(std::move(node));
  }
  if (nodes.empty()) return absl::InvalidArgumentError("--static-nodes: no nodes given");
  return nodes;
}

void StaticDiscovery::Start() {
  ReplaceNodes(initial_);
  MarkListed(0, 1);
}

}  // namespace kubestat::scrapers
