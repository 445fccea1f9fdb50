#include "hollow_nodes.h"

#include <simdjson.h>

#include <cstdio>
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
                         Duration renew_interval)
    : client_(client), nodes_(std::move(nodes)), clock_(clock), renew_interval_(renew_interval) {}

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

absl::Status HollowNodes::Register() {
  for (const HollowNode& node : nodes_) {
    std::string uid;
    if (absl::Status s = RegisterNode(node, &uid); !s.ok()) return s;
    if (absl::Status s = RegisterLease(node.name, uid); !s.ok()) return s;
  }
  KLOG(INFO) << "hollow nodes: " << nodes_.size() << " Nodes and their Leases registered";
  return absl::OkStatus();
}

void HollowNodes::Start() {
  renewer_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      cv_.wait_for(lock, renew_interval_, [this] { return stopping_; });
      if (stopping_) break;
      lock.unlock();
      for (const HollowNode& node : nodes_) {
        absl::Status renewed = Renew(node.name);
        if (!renewed.ok()) {
          KLOG(WARNING) << "hollow nodes: " << renewed;
          std::lock_guard count(mu_);
          ++failed_renewals_;
        }
      }
      lock.lock();
    }
  });
}

void HollowNodes::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (renewer_.joinable()) renewer_.join();
}

uint64_t HollowNodes::failed_renewals() const {
  std::lock_guard lock(mu_);
  return failed_renewals_;
}

}  // namespace kubestat::sim
