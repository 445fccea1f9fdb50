#include "kubestat/discovery/discovery.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kubestat/core/absl_view.h"

namespace kubestat::discovery {

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

std::optional<SharedLabels> Discovery::NodeLabelsOf(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return std::nullopt;
  return it->second.labels;
}

std::vector<PodInfo> Discovery::Pods() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const std::pair<const std::string, PodInfo>*> entries;
  entries.reserve(pods_.size());
  for (const auto& entry : pods_) entries.push_back(&entry);
  std::sort(entries.begin(), entries.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  std::vector<PodInfo> pods;
  pods.reserve(entries.size());
  for (const auto* entry : entries) pods.push_back(entry->second);
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

std::vector<std::optional<PodLabelsInfo>> Discovery::PodLabelsOf(
    std::span<const PodNameRef> pods) const {
  std::vector<std::optional<PodLabelsInfo>> out(pods.size());
  std::string key;  // "namespace/name", the map's key; reused from pod to pod
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < pods.size(); ++i) {
    key.assign(pods[i].namespace_name);
    key += '/';
    key += pods[i].name;
    auto it = pods_.find(key);
    if (it == pods_.end()) continue;
    const PodInfo& pod = it->second;
    out[i] = PodLabelsInfo{pod.labels, pod.node_name, pod.containers};
  }
  return out;
}

std::vector<LimitRangeInfo> Discovery::LimitRanges(std::string_view namespace_name) const {
  const std::string prefix = absl::StrCat(AbslView(namespace_name), "/");
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LimitRangeInfo> out;
  for (auto it = limit_ranges_.lower_bound(prefix);
       it != limit_ranges_.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    out.push_back(it->second);
  }
  return out;
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

template <typename Tell>
void Discovery::Emit(const Tell& tell) {
  std::vector<ClusterListener*> listeners;
  {
    std::lock_guard<std::mutex> lock(mu_);
    listeners = listeners_;
  }
  for (ClusterListener* listener : listeners) tell(*listener);
}

namespace {

// Applies one change to `objects`: the change to tell listeners (an update of an unknown
// object is an addition, of a known one a modification), or nothing for the deletion of an
// unknown object.
template <typename Map>
std::optional<ChangeType> ApplyTo(Map& objects, const std::string& key, ChangeType type,
                                  const typename Map::mapped_type& value) {
  auto it = objects.find(key);
  if (type == ChangeType::kDeleted) {
    if (it == objects.end()) return std::nullopt;
    objects.erase(it);
    return type;
  }
  const ChangeType emitted = it == objects.end() ? ChangeType::kAdded : ChangeType::kModified;
  objects[key] = value;
  return emitted;
}

// The changes that turn `current` into the whole list `fresh`, as (type, value) pairs: the
// deletions, then the additions and modifications, each in key order whatever the map's.
template <typename Map, typename KeyOf>
std::vector<std::pair<ChangeType, typename Map::mapped_type>> Diff(
    Map& current, std::vector<typename Map::mapped_type> list, KeyOf key_of) {
  using T = typename Map::mapped_type;
  Map fresh;
  for (T& value : list) {
    std::string key = key_of(value);
    fresh[std::move(key)] = std::move(value);
  }
  struct Change {
    ChangeType type;
    const std::string* key;
    const T* value;
  };
  std::vector<Change> found;
  for (const auto& [key, value] : current) {
    if (fresh.find(key) == fresh.end()) found.push_back({ChangeType::kDeleted, &key, &value});
  }
  for (const auto& [key, value] : fresh) {
    auto it = current.find(key);
    if (it == current.end()) {
      found.push_back({ChangeType::kAdded, &key, &value});
    } else if (!(it->second == value)) {
      found.push_back({ChangeType::kModified, &key, &value});
    }
  }
  std::sort(found.begin(), found.end(), [](const Change& a, const Change& b) {
    const bool a_deleted = a.type == ChangeType::kDeleted;
    const bool b_deleted = b.type == ChangeType::kDeleted;
    if (a_deleted != b_deleted) return a_deleted;
    return *a.key < *b.key;
  });
  std::vector<std::pair<ChangeType, T>> changes;
  changes.reserve(found.size());
  for (const Change& change : found) changes.emplace_back(change.type, *change.value);
  current = std::move(fresh);
  return changes;
}

}  // namespace

void Discovery::ApplyNode(ChangeType type, NodeInfo node) {
  std::optional<ChangeType> emitted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    emitted = ApplyTo(nodes_, node.name, type, node);
  }
  if (emitted) Emit([&](ClusterListener& l) { l.OnNodeChange(*emitted, node); });
}

void Discovery::ApplyPod(ChangeType type, PodInfo pod) {
  std::optional<ChangeType> emitted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    emitted = ApplyTo(pods_, pod.Key(), type, pod);
  }
  if (emitted) Emit([&](ClusterListener& l) { l.OnPodChange(*emitted, pod); });
}

void Discovery::ApplyLimitRange(ChangeType type, LimitRangeInfo limit_range) {
  std::optional<ChangeType> emitted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    emitted = ApplyTo(limit_ranges_, limit_range.Key(), type, limit_range);
  }
  if (emitted) Emit([&](ClusterListener& l) { l.OnLimitRangeChange(*emitted, limit_range); });
}

void Discovery::ReplaceNodes(std::vector<NodeInfo> nodes) {
  std::vector<std::pair<ChangeType, NodeInfo>> changes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    changes = Diff(nodes_, std::move(nodes), [](const NodeInfo& n) { return n.name; });
  }
  for (const auto& change : changes) {
    Emit([&](ClusterListener& l) { l.OnNodeChange(change.first, change.second); });
  }
}

void Discovery::ReplacePods(std::vector<PodInfo> pods) {
  std::vector<std::pair<ChangeType, PodInfo>> changes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    changes = Diff(pods_, std::move(pods), [](const PodInfo& p) { return p.Key(); });
  }
  for (const auto& change : changes) {
    Emit([&](ClusterListener& l) { l.OnPodChange(change.first, change.second); });
  }
}

void Discovery::ReplaceLimitRanges(std::vector<LimitRangeInfo> limit_ranges) {
  std::vector<std::pair<ChangeType, LimitRangeInfo>> changes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    changes = Diff(limit_ranges_, std::move(limit_ranges),
                   [](const LimitRangeInfo& lr) { return lr.Key(); });
  }
  for (const auto& change : changes) {
    Emit([&](ClusterListener& l) { l.OnLimitRangeChange(change.first, change.second); });
  }
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

}  // namespace kubestat::discovery
