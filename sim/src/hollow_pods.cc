#include "hollow_pods.h"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

#include "hollow_nodes.h"
#include "kubestat/apimachinery/quantity.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/core/log.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/core/time.h"

namespace kubestat::sim {
namespace {

constexpr char kMergePatch[] = "application/merge-patch+json";
// Percent-encoded kubestat.dev/hollow=true.
constexpr char kSelector[] = "labelSelector=kubestat.dev%2Fhollow%3Dtrue";

bool Ok(int code) { return code >= 200 && code < 300; }

// Pods a page of the list holds: a page of 500 hollow pods is about 2 MiB.
constexpr int kListPage = 500;

// A continue token in a query: everything but unreserved characters percent-encoded.
std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(ch);
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

bool IsDaemon(const PodInfo& pod) {
  return std::none_of(pod.labels.begin(), pod.labels.end(),
                      [](const auto& label) { return label.first == "pod-template-hash"; });
}

// One app of the model: where its pods are and what the first asks for.
struct App {
  PodInfo first;
  int pods = 0;
  bool daemon = false;
};

void WriteResources(JsonWriter& w, const ContainerSpec& c) {
  w.Key("resources").BeginObject();
  w.Key("requests").BeginObject();
  w.Member("cpu", FormatCpuNanoCores(c.cpu_request_millis * 1'000'000));
  w.Member("memory", FormatMemoryBytes(c.memory_request_bytes));
  w.EndObject();
  if (c.cpu_limit_millis > 0 || c.memory_limit_bytes > 0) {
    w.Key("limits").BeginObject();
    if (c.cpu_limit_millis > 0) w.Member("cpu", FormatCpuNanoCores(c.cpu_limit_millis * 1'000'000));
    if (c.memory_limit_bytes > 0) w.Member("memory", FormatMemoryBytes(c.memory_limit_bytes));
    w.EndObject();
  }
  w.EndObject();
}

// The Deployment or DaemonSet of `app`.
std::string WorkloadJson(const App& app) {
  const PodInfo& pod = app.first;
  JsonWriter w;
  w.BeginObject();
  w.Member("apiVersion", "apps/v1");
  w.Member("kind", app.daemon ? "DaemonSet" : "Deployment");
  w.Key("metadata").BeginObject();
  w.Member("name", pod.app).Member("namespace", pod.namespace_name);
  w.Key("labels").BeginObject().Member("app", pod.app).Member(kHollowPodLabel, "true").EndObject();
  w.EndObject();
  w.Key("spec").BeginObject();
  if (!app.daemon) w.Key("replicas").Int(app.pods);
  w.Key("selector").BeginObject().Key("matchLabels").BeginObject();
  w.Member("app", pod.app).Member(kHollowPodLabel, "true");
  w.EndObject().EndObject();
  w.Key("template").BeginObject();
  w.Key("metadata").BeginObject().Key("labels").BeginObject();
  for (const auto& [key, value] : pod.labels) {
    if (key != "pod-template-hash" && key != "controller-revision-hash") w.Member(key, value);
  }
  w.Member(kHollowPodLabel, "true");
  w.EndObject().EndObject();
  w.Key("spec").BeginObject();
  w.Key("nodeSelector").BeginObject().Member(kHollowNodeLabel, "true").EndObject();
  // No process of these pods ever runs: nothing to wait for when one is deleted.
  w.Key("terminationGracePeriodSeconds").Int(0);
  w.Key("containers").BeginArray();
  for (const ContainerSpec& c : pod.containers) {
    w.BeginObject();
    w.Member("name", c.name);
    w.Member("image", "registry.k8s.io/pause:3.10");
    WriteResources(w, c);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();  // template.spec
  w.EndObject();  // template
  w.EndObject();  // spec
  w.EndObject();
  return w.Take();
}

// The status a kubelet reports for a pod whose containers all run.
std::string RunningStatus(const simdjson::dom::element& pod, const std::string& host,
                          Timestamp now) {
  const std::string at = FormatRfc3339(now);
  JsonWriter w;
  w.BeginObject().Key("status").BeginObject();
  w.Member("phase", "Running");
  w.Member("hostIP", host).Member("podIP", host).Member("startTime", at);
  w.Key("conditions").BeginArray();
  for (const char* type :
       {"PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready", "PodScheduled"}) {
    w.BeginObject().Member("type", type).Member("status", "True");
    w.Member("lastTransitionTime", at).EndObject();
  }
  w.EndArray();
  w.Key("containerStatuses").BeginArray();
  simdjson::dom::array containers;
  if (pod["spec"]["containers"].get(containers) == simdjson::SUCCESS) {
    for (simdjson::dom::element c : containers) {
      std::string_view name, image;
      if (c["name"].get(name) != simdjson::SUCCESS) continue;
      if (c["image"].get(image) != simdjson::SUCCESS) image = "";
      w.BeginObject();
      w.Member("name", name).Member("image", image).Member("imageID", image);
      w.Member("containerID", StrCat("containerd://hollow-", name));
      w.Member("ready", true).Member("started", true);
      w.Key("restartCount").Int(0);
      w.Key("state").BeginObject().Key("running").BeginObject().Member("startedAt", at);
      w.EndObject().EndObject();
      w.EndObject();
    }
  }
  w.EndArray();
  w.EndObject().EndObject();
  return w.Take();
}

}  // namespace

HollowPods::HollowPods(ApiClient& client, const ClusterModel& model, const Clock& clock,
                       int parallel)
    : client_(client),
      model_(model),
      clock_(clock),
      parallel_(std::max(1, parallel)),
      by_node_(model.node_count()) {}

HollowPods::~HollowPods() { Stop(); }

absl::Status HollowPods::CreateWorkloads() {
  const Timestamp now = clock_.Now();
  std::map<std::pair<std::string, std::string>, App> apps;
  for (int n = 0; n < model_.node_count(); ++n) {
    for (int s = 0; s < model_.pods_per_node(); ++s) {
      PodInfo pod = model_.Pod(n, s, now);
      App& app = apps[{pod.namespace_name, pod.app}];
      if (app.pods++ == 0) {
        app.daemon = IsDaemon(pod);
        app.first = std::move(pod);
      }
    }
  }
  std::set<std::string> namespaces;
  for (const auto& [key, app] : apps) namespaces.insert(key.first);
  for (const std::string& ns : namespaces) {
    const std::string body =
        StrCat(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")", ns, R"("}})");
    absl::StatusOr<ApiReply> made = client_.Call("POST", "/api/v1/namespaces", body);
    if (!made.ok()) return made.status();
    if (!Ok(made->code) && made->code != 409) {
      return absl::FailedPreconditionError(StrCat("creating Namespace ", ns, ": HTTP ", made->code,
                                                  ": ", made->body.substr(0, 300)));
    }
  }
  for (const auto& [key, app] : apps) {
    const std::string path =
        StrCat("/apis/apps/v1/namespaces/", key.first, app.daemon ? "/daemonsets" : "/deployments");
    absl::StatusOr<ApiReply> made = client_.Call("POST", path, WorkloadJson(app));
    if (!made.ok()) return made.status();
    if (!Ok(made->code) && made->code != 409) {
      return absl::FailedPreconditionError(
          StrCat("creating ", app.daemon ? "DaemonSet " : "Deployment ", key.first, "/", key.second,
                 ": HTTP ", made->code, ": ", made->body.substr(0, 300)));
    }
  }
  KLOG(INFO) << "hollow nodes: " << apps.size() << " workloads in " << namespaces.size()
             << " namespaces";
  return absl::OkStatus();
}

void HollowPods::Start() {
  for (int w = 0; w < parallel_; ++w) {
    callers_.emplace_back([this](std::stop_token stop) { Make(stop); });
  }
  follower_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

void HollowPods::Stop() {
  if (follower_.joinable()) {
    follower_.request_stop();
    follower_.join();
  }
  for (std::jthread& caller : callers_) caller.request_stop();
  callers_.clear();  // joins
}

int HollowPods::FreeSlot(int node, const std::string& app, bool daemon) const {
  const int slots = model_.pods_per_node();
  std::vector<bool> taken(slots, false);
  for (const auto& [uid, pod] : by_node_[node]) taken[pod.slot] = true;
  const Timestamp now = clock_.Now();
  // A DaemonSet's pod takes the slot where the model has that app.
  for (int s = 0; s < slots; ++s) {
    if (!taken[s] && model_.Pod(node, s, now).app == app) return s;
  }
  for (int s = 0; s < slots; ++s) {
    if (taken[s]) continue;
    if (!daemon && IsDaemon(model_.Pod(node, s, now))) continue;
    return s;
  }
  // More pods than slots: they share, in turn.
  return static_cast<int>(by_node_[node].size() % static_cast<size_t>(slots));
}

void HollowPods::Apply(std::string_view pod_json, bool deleted) {
  simdjson::dom::parser parser;
  simdjson::dom::element pod;
  if (parser.parse(pod_json.data(), pod_json.size()).get(pod) != simdjson::SUCCESS) return;
  std::string_view uid, name, ns, node_name, phase, app;
  if (pod["metadata"]["uid"].get(uid) != simdjson::SUCCESS ||
      pod["metadata"]["name"].get(name) != simdjson::SUCCESS ||
      pod["metadata"]["namespace"].get(ns) != simdjson::SUCCESS) {
    return;
  }
  if (pod["spec"]["nodeName"].get(node_name) != simdjson::SUCCESS) node_name = "";
  if (pod["status"]["phase"].get(phase) != simdjson::SUCCESS) phase = "";
  if (pod["metadata"]["labels"]["app"].get(app) != simdjson::SUCCESS) app = "";
  simdjson::dom::element deletion;
  const bool terminating =
      pod["metadata"]["deletionTimestamp"].get(deletion) == simdjson::SUCCESS &&
      !deletion.is_null();
  const int node = node_name.empty() ? -1 : model_.NodeIndex(node_name);
  std::optional<uint64_t> cpu;
  std::string_view cpu_text;
  if (pod["metadata"]["annotations"][kHollowCpuAnnotation].get(cpu_text) == simdjson::SUCCESS) {
    absl::StatusOr<Quantity> q = Quantity::Parse(cpu_text);
    absl::StatusOr<int64_t> nanos = q.ok() ? q->ScaledValue(-9) : q.status();
    if (nanos.ok() && *nanos >= 0) {
      cpu = static_cast<uint64_t>(*nanos);
    } else {
      KLOG(WARNING) << "hollow nodes: pod " << ns << "/" << name << ": " << kHollowCpuAnnotation
                    << " \"" << cpu_text << "\" is not a cpu quantity; ignored";
    }
  }
  {
    std::lock_guard lock(mu_);
    auto known = node_of_uid_.find(std::string(uid));
    if (known != node_of_uid_.end() && (deleted || terminating || known->second != node)) {
      by_node_[known->second].erase(known->first);
      cpu_.erase(known->first);
      node_of_uid_.erase(known);
    }
    if (deleted || node < 0) return;
    if (auto it = node_of_uid_.find(std::string(uid)); it != node_of_uid_.end()) {
      by_node_[it->second].at(it->first).cpu_nano_cores = cpu;
    }
    if (!terminating && !node_of_uid_.contains(std::string(uid))) {
      RealPod real{
          std::string(ns), std::string(name), std::string(uid), std::string(app), {}, 0, cpu};
      simdjson::dom::array containers;
      if (pod["spec"]["containers"].get(containers) == simdjson::SUCCESS) {
        for (simdjson::dom::element c : containers) {
          std::string_view container;
          if (c["name"].get(container) == simdjson::SUCCESS)
            real.containers.emplace_back(container);
        }
      }
      bool daemon = false;
      simdjson::dom::array owners;
      if (pod["metadata"]["ownerReferences"].get(owners) == simdjson::SUCCESS) {
        for (simdjson::dom::element owner : owners) {
          std::string_view kind;
          daemon |= owner["kind"].get(kind) == simdjson::SUCCESS && kind == "DaemonSet";
        }
      }
      real.slot = FreeSlot(node, real.app, daemon);
      node_of_uid_[real.uid] = node;
      by_node_[node].emplace(real.uid, std::move(real));
    }
  }
  const std::string path = StrCat("/api/v1/namespaces/", ns, "/pods/", name);
  if (terminating) {
    // The containers are gone at once (none ran): the kubelet's final delete.
    Queue(path,
          {"DELETE", path, R"({"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0})",
           "", StrCat("deleting pod ", ns, "/", name)});
    return;
  }
  bool ready = phase == "Running";
  simdjson::dom::array conditions;
  if (ready && pod["status"]["conditions"].get(conditions) == simdjson::SUCCESS) {
    ready = false;
    for (simdjson::dom::element c : conditions) {
      std::string_view type, status;
      if (c["type"].get(type) == simdjson::SUCCESS && type == "Ready" &&
          c["status"].get(status) == simdjson::SUCCESS && status == "True") {
        ready = true;
      }
    }
  }
  if (ready) return;
  Queue(path, {"PATCH", path + "/status", RunningStatus(pod, "127.0.0.1", clock_.Now()),
               kMergePatch, StrCat("reporting pod ", ns, "/", name, " Running")});
}

void HollowPods::Queue(const std::string& pod_path, Call call) {
  {
    std::lock_guard lock(calls_mu_);
    auto [it, added] = calls_.insert_or_assign(pod_path, std::move(call));
    if (added) call_order_.push_back(pod_path);
  }
  calls_cv_.notify_one();
}

void HollowPods::Make(const std::stop_token& stop) {
  while (true) {
    Call call;
    {
      std::unique_lock lock(calls_mu_);
      if (!calls_cv_.wait(lock, stop, [this] { return !call_order_.empty(); })) return;
      auto it = calls_.find(call_order_.front());
      call_order_.pop_front();
      call = std::move(it->second);
      calls_.erase(it);
    }
    absl::StatusOr<ApiReply> made =
        client_.Call(call.method, call.path, call.body,
                     call.content_type.empty() ? std::string_view("application/json")
                                               : std::string_view(call.content_type));
    const bool gone_already = call.method == "DELETE" && made.ok() && made->code == 404;
    if (!made.ok() || (!Ok(made->code) && !gone_already)) {
      KLOG(WARNING) << "hollow nodes: " << call.what << ": "
                    << (made.ok() ? StrCat("HTTP ", made->code, ": ", made->body.substr(0, 200))
                                  : std::string(made.status().message()));
    }
  }
}

size_t HollowPods::pending_calls() const {
  std::lock_guard lock(calls_mu_);
  return call_order_.size();
}

std::string HollowPods::List() {
  std::set<std::string> listed_uids;
  std::string rv;
  std::string next;
  do {
    std::string path = StrCat("/api/v1/pods?", kSelector, "&limit=", kListPage);
    if (!next.empty()) path += StrCat("&continue=", PercentEncode(next));
    absl::StatusOr<ApiReply> listed = client_.Call("GET", path);
    if (!listed.ok() || !Ok(listed->code)) {
      // A continue token that expired (410) as any other failure: a new list from the start.
      KLOG(WARNING) << "hollow nodes: listing pods: "
                    << (listed.ok() ? StrCat("HTTP ", listed->code)
                                    : std::string(listed.status().message()));
      return "";
    }
    simdjson::dom::parser parser;
    simdjson::dom::element list;
    std::string_view page_rv;
    simdjson::dom::array items;
    if (parser.parse(listed->body).get(list) != simdjson::SUCCESS ||
        list["metadata"]["resourceVersion"].get(page_rv) != simdjson::SUCCESS ||
        list["items"].get(items) != simdjson::SUCCESS) {
      KLOG(WARNING) << "hollow nodes: listing pods: an answer that is not a PodList";
      return "";
    }
    rv = std::string(page_rv);
    std::string_view token;
    next = list["metadata"]["continue"].get(token) == simdjson::SUCCESS ? std::string(token) : "";
    for (simdjson::dom::element item : items) {
      std::string_view uid;
      if (item["metadata"]["uid"].get(uid) == simdjson::SUCCESS) listed_uids.emplace(uid);
      Apply(simdjson::minify(item), false);
    }
  } while (!next.empty());
  // What the list does not hold is gone.
  std::lock_guard lock(mu_);
  for (auto it = node_of_uid_.begin(); it != node_of_uid_.end();) {
    if (listed_uids.contains(it->first)) {
      ++it;
      continue;
    }
    by_node_[it->second].erase(it->first);
    cpu_.erase(it->first);
    it = node_of_uid_.erase(it);
  }
  return rv;
}

void HollowPods::Run(const std::stop_token& stop) {
  std::string rv;
  while (!stop.stop_requested()) {
    if (rv.empty()) rv = List();
    if (rv.empty()) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    const std::string path =
        StrCat("/api/v1/pods?watch=true&allowWatchBookmarks=true&timeoutSeconds=300&", kSelector,
               "&resourceVersion=", rv);
    absl::Status watched = client_.Watch(
        path,
        [&](std::string_view line) -> absl::Status {
          simdjson::dom::parser parser;
          simdjson::dom::element event;
          std::string_view type;
          if (parser.parse(line.data(), line.size()).get(event) != simdjson::SUCCESS ||
              event["type"].get(type) != simdjson::SUCCESS) {
            return absl::InvalidArgumentError("a watch line that is not an event");
          }
          if (type == "ERROR") return absl::OutOfRangeError("watch expired");
          std::string_view version;
          if (event["object"]["metadata"]["resourceVersion"].get(version) == simdjson::SUCCESS) {
            rv = std::string(version);
          }
          if (type != "BOOKMARK") Apply(simdjson::minify(event["object"]), type == "DELETED");
          return absl::OkStatus();
        },
        stop);
    if (!watched.ok()) {
      KLOG(WARNING) << "hollow nodes: pod watch: " << watched << "; listing again";
      rv.clear();
    }
  }
}

void HollowPods::Rewrite(int node, NodeSnapshot& snapshot) const {
  std::vector<PodSnapshot> pods;
  std::lock_guard lock(mu_);
  for (const auto& [uid, real] : by_node_[node]) {
    if (real.slot >= static_cast<int>(snapshot.pods.size())) continue;
    PodSnapshot pod = snapshot.pods[real.slot];
    pod.pod.name = real.name;
    pod.pod.namespace_name = real.namespace_name;
    pod.pod.uid = real.uid;
    for (size_t c = 0; c < pod.pod.containers.size() && c < real.containers.size(); ++c) {
      pod.pod.containers[c].name = real.containers[c];
    }
    if (!pod.containers.empty()) {
      ResourceUsage& usage = pod.containers[0].usage;
      const uint64_t model_rate = usage.usage_nano_cores;
      const uint64_t model_cumulative = usage.usage_core_nano_seconds;
      CpuTrack& track = cpu_[uid];
      const auto cumulative_of = [&] {
        if (!track.overriding) {
          return static_cast<uint64_t>(
              std::max<int64_t>(0, static_cast<int64_t>(model_cumulative) + track.offset));
        }
        const double seconds = std::chrono::duration<double>(snapshot.time - track.since).count();
        return track.at_since +
               static_cast<uint64_t>(std::max(0.0, seconds) * static_cast<double>(track.rate));
      };
      if (real.cpu_nano_cores && (!track.overriding || track.rate != *real.cpu_nano_cores)) {
        track.at_since = std::max(cumulative_of(), track.last);
        track.since = snapshot.time;
        track.rate = *real.cpu_nano_cores;
        track.overriding = true;
      } else if (!real.cpu_nano_cores && track.overriding) {
        const uint64_t now = std::max(cumulative_of(), track.last);
        track.overriding = false;
        track.offset = static_cast<int64_t>(now) - static_cast<int64_t>(model_cumulative);
      }
      const uint64_t served = std::max(cumulative_of(), track.last);
      track.last = served;
      const uint64_t rate = track.overriding ? track.rate : model_rate;
      // The pod's sums follow its first container.
      pod.usage.usage_core_nano_seconds += served - usage.usage_core_nano_seconds;
      pod.usage.usage_nano_cores = pod.usage.usage_nano_cores - usage.usage_nano_cores + rate;
      usage.usage_core_nano_seconds = served;
      usage.usage_nano_cores = rate;
    }
    pods.push_back(std::move(pod));
  }
  snapshot.pods = std::move(pods);
}

size_t HollowPods::running() const {
  std::lock_guard lock(mu_);
  return node_of_uid_.size();
}

}  // namespace kubestat::sim
