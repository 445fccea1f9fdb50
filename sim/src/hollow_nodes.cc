#include "hollow_nodes.h"

#include <simdjson.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <thread>
#include <utility>

#include "kubestat/core/json_writer.h"
#include "kubestat/core/log.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/core/time.h"

namespace kubestat::sim {
namespace {

constexpr char kLeases[] = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
constexpr char kMergePatch[] = "application/merge-patch+json";
constexpr int64_t kLeaseSeconds = 40;  // the kubelet's default nodeLeaseDurationSeconds
// Percent-encoded kubestat.dev/hollow-node=true, which the registered Nodes carry.
constexpr char kSelector[] = "labelSelector=kubestat.dev%2Fhollow-node%3Dtrue";

bool Ok(int code) { return code >= 200 && code < 300; }

// The start of an answer, for an error message.
std::string Shown(const std::string& body) { return body.substr(0, 300); }

std::string UidOf(const std::string& object_json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  std::string_view uid;
  if (parser.parse(object_json).get(root) != simdjson::SUCCESS ||
      root["metadata"]["uid"].get(uid) != simdjson::SUCCESS) {
    return "";
  }
  return std::string(uid);
}

}  // namespace

std::string FormatMicroTime(Timestamp t) {
  const std::string seconds = FormatRfc3339(t);  // 2026-12-06T21:30:00Z
  const int64_t micros =
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count() % 1000000;
  char fraction[16];
  std::snprintf(fraction, sizeof(fraction), ".%06lld", static_cast<long long>(micros));
  return seconds.substr(0, seconds.size() - 1) + fraction + "Z";
}

HollowNodes::HollowNodes(ApiClient& client, std::vector<HollowNode> nodes, const Clock& clock,
                         Duration renew_interval, int parallel)
    : client_(client),
      nodes_(std::move(nodes)),
      clock_(clock),
      renew_interval_(renew_interval),
      parallel_(std::max(1, parallel)) {
  for (const HollowNode& node : nodes_) names_.insert(node.name);
}

HollowNodes::~HollowNodes() { Stop(); }

absl::Status HollowNodes::RegisterNode(const HollowNode& node, std::string* uid) {
  absl::StatusOr<ApiReply> created = client_.Call("POST", "/api/v1/nodes", node.node_json);
  if (!created.ok()) return created.status();
  if (Ok(created->code)) {
    *uid = UidOf(created->body);
    return absl::OkStatus();
  }
  if (created->code != 409) {
    return absl::FailedPreconditionError(
        StrCat("creating Node ", node.name, ": HTTP ", created->code, ": ", Shown(created->body)));
  }
  // There already, as after a restart: this kubelet's status replaces the old one.
  absl::StatusOr<ApiReply> patched = client_.Call(
      "PATCH", StrCat("/api/v1/nodes/", node.name, "/status"), node.node_json, kMergePatch);
  if (!patched.ok()) return patched.status();
  if (!Ok(patched->code)) {
    return absl::FailedPreconditionError(StrCat("updating the status of Node ", node.name,
                                                ": HTTP ", patched->code, ": ",
                                                Shown(patched->body)));
  }
  *uid = UidOf(patched->body);
  return absl::OkStatus();
}

absl::Status HollowNodes::RegisterLease(const std::string& name, const std::string& uid) {
  JsonWriter w;
  w.BeginObject();
  w.Member("apiVersion", "coordination.k8s.io/v1");
  w.Member("kind", "Lease");
  w.Key("metadata").BeginObject();
  w.Member("name", name);
  w.Member("namespace", "kube-node-lease");
  if (!uid.empty()) {
    w.Key("ownerReferences").BeginArray().BeginObject();
    w.Member("apiVersion", "v1").Member("kind", "Node").Member("name", name).Member("uid", uid);
    w.EndObject().EndArray();
  }
  w.EndObject();
  w.Key("spec").BeginObject();
  w.Member("holderIdentity", name);
  w.Key("leaseDurationSeconds").Int(kLeaseSeconds);
  w.Member("renewTime", FormatMicroTime(clock_.Now()));
  w.EndObject();
  w.EndObject();
  absl::StatusOr<ApiReply> created = client_.Call("POST", kLeases, w.str());
  if (!created.ok()) return created.status();
  if (Ok(created->code)) return absl::OkStatus();
  if (created->code == 409) return Renew(name);
  return absl::FailedPreconditionError(
      StrCat("creating Lease ", name, ": HTTP ", created->code, ": ", Shown(created->body)));
}

absl::Status HollowNodes::Renew(const std::string& name) {
  const std::string patch =
      StrCat(R"({"spec":{"holderIdentity":")", name, R"(","renewTime":")",
             FormatMicroTime(clock_.Now()), R"(","leaseDurationSeconds":)", kLeaseSeconds, "}}");
  absl::StatusOr<ApiReply> renewed =
      client_.Call("PATCH", StrCat(kLeases, "/", name), patch, kMergePatch);
  if (!renewed.ok()) return renewed.status();
  if (!Ok(renewed->code)) {
    return absl::FailedPreconditionError(
        StrCat("renewing Lease ", name, ": HTTP ", renewed->code, ": ", Shown(renewed->body)));
  }
  return absl::OkStatus();
}

std::vector<const HollowNode*> HollowNodes::Share(int worker) const {
  std::vector<const HollowNode*> share;
  for (size_t i = static_cast<size_t>(worker); i < nodes_.size();
       i += static_cast<size_t>(parallel_)) {
    share.push_back(&nodes_[i]);
  }
  return share;
}

absl::Status HollowNodes::Register() {
  std::vector<absl::Status> results(static_cast<size_t>(parallel_));
  {
    std::vector<std::jthread> workers;
    for (int w = 0; w < parallel_; ++w) {
      workers.emplace_back([this, w, &results] {
        for (const HollowNode* node : Share(w)) {
          std::string uid;
          absl::Status s = RegisterNode(*node, &uid);
          if (s.ok()) s = RegisterLease(node->name, uid);
          if (!s.ok()) {
            results[static_cast<size_t>(w)] = s;
            return;
          }
        }
      });
    }
  }
  for (const absl::Status& s : results) {
    if (!s.ok()) return s;
  }
  KLOG(INFO) << "hollow nodes: " << nodes_.size() << " Nodes and their Leases registered";
  return absl::OkStatus();
}

void HollowNodes::RenewShare(int worker) {
  const std::vector<const HollowNode*> share = Share(worker);
  if (share.empty()) return;
  using Steady = std::chrono::steady_clock;
  // Registration has just renewed every Lease: the first round starts an interval on, and
  // each share is offset a little so that the shares do not renew in step.
  Steady::time_point round =
      Steady::now() + renew_interval_ / parallel_ / static_cast<int64_t>(share.size()) * worker;
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const Steady::time_point now = Steady::now();
    round = now > round + renew_interval_ ? now : round + renew_interval_;
    for (size_t j = 0; j < share.size(); ++j) {
      const Steady::time_point at =
          round + renew_interval_ * static_cast<int64_t>(j) / static_cast<int64_t>(share.size());
      if (cv_.wait_until(lock, at, [this] { return stopping_; })) return;
      lock.unlock();
      absl::Status renewed = Renew(share[j]->name);
      if (!renewed.ok()) KLOG(WARNING) << "hollow nodes: " << renewed;
      lock.lock();
      ++renewals_;
      if (!renewed.ok()) ++failed_renewals_;
    }
  }
}

void HollowNodes::OnNodeEvent(std::string_view line) {
  simdjson::dom::parser parser;
  simdjson::dom::element event;
  std::string_view type, name;
  if (parser.parse(line.data(), line.size()).get(event) != simdjson::SUCCESS ||
      event["type"].get(type) != simdjson::SUCCESS || (type != "ADDED" && type != "MODIFIED") ||
      event["object"]["metadata"]["name"].get(name) != simdjson::SUCCESS ||
      !names_.contains(name)) {
    return;
  }
  std::string_view ready = "absent";
  simdjson::dom::array conditions;
  if (event["object"]["status"]["conditions"].get(conditions) == simdjson::SUCCESS) {
    for (simdjson::dom::element c : conditions) {
      std::string_view condition, status;
      if (c["type"].get(condition) == simdjson::SUCCESS && condition == "Ready" &&
          c["status"].get(status) == simdjson::SUCCESS) {
        ready = status;
      }
    }
  }
  if (ready == "True") return;
  const std::string now = FormatRfc3339(clock_.Now());
  const std::string patch =
      StrCat(R"({"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady",)",
             R"("message":"kubelet is posting ready status","lastHeartbeatTime":")", now,
             R"(","lastTransitionTime":")", now, R"("}]}})");
  absl::StatusOr<ApiReply> patched =
      client_.Call("PATCH", StrCat("/api/v1/nodes/", name, "/status"), patch,
                   "application/strategic-merge-patch+json");
  if (!patched.ok() || !Ok(patched->code)) {
    KLOG(WARNING) << "hollow nodes: reporting Node " << name << " Ready again: "
                  << (patched.ok() ? StrCat("HTTP ", patched->code, ": ", Shown(patched->body))
                                   : std::string(patched.status().message()));
    return;
  }
  KLOG(INFO) << "hollow nodes: Node " << name << " was Ready=" << ready
             << " (a Lease renewed late); reported Ready again";
  std::lock_guard lock(mu_);
  ++readied_;
}

void HollowNodes::FollowNodes(const std::stop_token& stop) {
  std::mutex wait_mu;
  std::condition_variable_any wait;
  while (!stop.stop_requested()) {
    // No resourceVersion: every Node first, as ADDED, then what changes.
    absl::Status watched = client_.Watch(
        StrCat("/api/v1/nodes?watch=true&allowWatchBookmarks=true&timeoutSeconds=300&", kSelector),
        [this](std::string_view line) {
          OnNodeEvent(line);
          return absl::OkStatus();
        },
        stop);
    if (watched.ok()) continue;
    KLOG(WARNING) << "hollow nodes: Node watch: " << watched << "; watching again in 1s";
    std::unique_lock lock(wait_mu);
    wait.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; });
  }
}

void HollowNodes::Start() {
  for (int w = 0; w < parallel_; ++w) renewers_.emplace_back([this, w] { RenewShare(w); });
  follower_ = std::jthread([this](std::stop_token stop) { FollowNodes(stop); });
}

void HollowNodes::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (follower_.joinable()) {
    follower_.request_stop();
    follower_.join();
  }
  for (std::thread& renewer : renewers_) {
    if (renewer.joinable()) renewer.join();
  }
  renewers_.clear();
}

uint64_t HollowNodes::readied() const {
  std::lock_guard lock(mu_);
  return readied_;
}

uint64_t HollowNodes::renewals() const {
  std::lock_guard lock(mu_);
  return renewals_;
}

uint64_t HollowNodes::failed_renewals() const {
  std::lock_guard lock(mu_);
  return failed_renewals_;
}

}  // namespace kubestat::sim
