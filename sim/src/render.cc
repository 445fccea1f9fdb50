#include "kubestat/sim/render.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kubestat/apimachinery/quantity.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/core/time.h"

namespace kubestat::sim {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

int64_t UnixSeconds(Timestamp t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

// Whole seconds from `from` to `to`; 0 when `to` is earlier (a snapshot stamped 0).
int64_t SecondsBetween(Timestamp from, Timestamp to) {
  return std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::seconds>(to - from).count());
}

JsonWriter& U64(JsonWriter& w, std::string_view key, uint64_t v) { return w.Key(key).Uint(v); }

void WriteCpu(JsonWriter& w, const ResourceUsage& u, const std::string& time) {
  w.Key("cpu").BeginObject();
  w.Member("time", time);
  U64(w, "usageNanoCores", u.usage_nano_cores);
  U64(w, "usageCoreNanoSeconds", u.usage_core_nano_seconds);
  w.EndObject();
}

void WriteMemory(JsonWriter& w, const ResourceUsage& u, const std::string& time) {
  w.Key("memory").BeginObject();
  w.Member("time", time);
  if (u.available_bytes) U64(w, "availableBytes", *u.available_bytes);
  U64(w, "usageBytes", u.usage_bytes);
  U64(w, "workingSetBytes", u.working_set_bytes);
  U64(w, "rssBytes", u.rss_bytes);
  U64(w, "pageFaults", u.page_faults);
  U64(w, "majorPageFaults", u.major_page_faults);
  w.EndObject();
}

struct FsFigures {
  uint64_t capacity;
  uint64_t used;
  uint64_t inodes;
  uint64_t inodes_used;
};

void WriteFs(JsonWriter& w, std::string_view key, const FsFigures& fs, const std::string& time,
             std::string_view name = {}) {
  if (!key.empty()) w.Key(key);
  w.BeginObject();
  w.Member("time", time);
  U64(w, "availableBytes", fs.capacity - fs.used);
  U64(w, "capacityBytes", fs.capacity);
  U64(w, "usedBytes", fs.used);
  U64(w, "inodesFree", fs.inodes - fs.inodes_used);
  U64(w, "inodes", fs.inodes);
  U64(w, "inodesUsed", fs.inodes_used);
  if (!name.empty()) w.Member("name", name);
  w.EndObject();
}

void WriteNetwork(JsonWriter& w, uint64_t rx, uint64_t tx, const std::string& time) {
  w.Key("network").BeginObject();
  w.Member("time", time);
  w.Member("name", "eth0");
  U64(w, "rxBytes", rx);
  U64(w, "rxErrors", 0);
  U64(w, "txBytes", tx);
  U64(w, "txErrors", 0);
  w.Key("interfaces").BeginArray().BeginObject();
  w.Member("name", "eth0");
  U64(w, "rxBytes", rx);
  U64(w, "rxErrors", 0);
  U64(w, "txBytes", tx);
  U64(w, "txErrors", 0);
  w.EndObject().EndArray();
  w.EndObject();
}

constexpr FsFigures kNodeFs = {100 * kGiB, 21 * kGiB + 123 * 4096, 6553600, 412345};

// A cache of formatted times: a snapshot has one sample time and a few start times.
class TimeStrings {
 public:
  // Valid until the next call (which may add to or clear the cache).
  const std::string& Get(Timestamp t) {
    for (const auto& [k, v] : cache_) {
      if (k == t) return v;
    }
    if (cache_.size() > 64) cache_.clear();
    cache_.emplace_back(t, FormatRfc3339(t));
    return cache_.back().second;
  }

 private:
  std::vector<std::pair<Timestamp, std::string>> cache_;
};

}  // namespace

std::string RenderSummary(const NodeSnapshot& snap, bool only_cpu_and_memory) {
  JsonWriter w;
  w.Reserve(only_cpu_and_memory ? 512 + snap.pods.size() * 1100 : 2048 + snap.pods.size() * 2600);
  TimeStrings times;
  const std::string now = FormatRfc3339(snap.time);
  const NodeInfo& node = *snap.node;
  // A copy: the Get() calls below may grow or clear the cache the reference would point into.
  const std::string node_start = times.Get(node.start_time);

  w.BeginObject();
  w.Key("node").BeginObject();
  w.Member("nodeName", node.name);
  w.Key("systemContainers").BeginArray();
  for (size_t i = 0; i < snap.system_containers.size(); ++i) {
    const ResourceUsage& u = snap.system_containers[i];
    w.BeginObject();
    w.Member("name", kSystemContainerNames[i]);
    w.Member("startTime", times.Get(u.start_time));
    WriteCpu(w, u, now);
    WriteMemory(w, u, now);
    w.EndObject();
  }
  w.EndArray();
  w.Member("startTime", node_start);
  WriteCpu(w, snap.usage, now);
  WriteMemory(w, snap.usage, now);
  if (!only_cpu_and_memory) {
    const uint64_t uptime = static_cast<uint64_t>(SecondsBetween(node.start_time, snap.time));
    WriteNetwork(w, uptime * 310000, uptime * 120000, now);
    WriteFs(w, "fs", kNodeFs, now);
    w.Key("runtime").BeginObject();
    const FsFigures image_fs = {kNodeFs.capacity, 9 * kGiB + 4096 * 77, kNodeFs.inodes, 98765};
    WriteFs(w, "imageFs", image_fs, now);
    WriteFs(w, "containerFs", image_fs, now);
    w.EndObject();
    w.Key("rlimit").BeginObject();
    w.Member("time", now);
    w.Key("maxpid").Int(4194304);
    w.Key("curproc").Int(static_cast<int64_t>(180 + snap.pods.size() * 9));
    w.EndObject();
  }
  w.EndObject();  // node

  w.Key("pods").BeginArray();
  for (const PodSnapshot& pod : snap.pods) {
    w.BeginObject();
    w.Key("podRef").BeginObject();
    w.Member("name", pod.pod.name);
    w.Member("namespace", pod.pod.namespace_name);
    w.Member("uid", pod.pod.uid);
    w.EndObject();
    const std::string& pod_start = times.Get(pod.pod.start_time);
    w.Member("startTime", pod_start);
    w.Key("containers").BeginArray();
    for (const ContainerSnapshot& c : pod.containers) {
      w.BeginObject();
      w.Member("name", pod.pod.containers[c.index].name);
      w.Member("startTime", times.Get(c.usage.start_time));
      WriteCpu(w, c.usage, now);
      WriteMemory(w, c.usage, now);
      if (!only_cpu_and_memory) {
        const uint64_t rootfs = 40960 + static_cast<uint64_t>(c.index) * 8192;
        WriteFs(w, "rootfs", {kNodeFs.capacity, rootfs, kNodeFs.inodes, 12}, now);
        WriteFs(w, "logs",
                {kNodeFs.capacity, 16384 + static_cast<uint64_t>(c.restart_count) * 4096,
                 kNodeFs.inodes, 2},
                now);
      }
      w.EndObject();
    }
    w.EndArray();
    WriteCpu(w, pod.usage, now);
    WriteMemory(w, pod.usage, now);
    if (!only_cpu_and_memory) {
      const uint64_t age = static_cast<uint64_t>(SecondsBetween(pod.pod.start_time, snap.time));
      const uint64_t per_second = 2000 + 997 * static_cast<uint64_t>(pod.pod.slot);
      WriteNetwork(w, age * per_second * 3, age * per_second, now);
      w.Key("volume").BeginArray();
      const std::string volume = "kube-api-access-" + pod.pod.uid.substr(0, 5);
      WriteFs(w, "", {64 * 1024 * 1024, 12288, 1003038, 9}, now, volume);
      w.EndArray();
      const uint64_t ephemeral = 40960 * pod.containers.size() + 16384;
      WriteFs(w, "ephemeral-storage", {kNodeFs.capacity, ephemeral, kNodeFs.inodes, 25}, now);
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

std::string FormatPrometheusFloat(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == 0) return "0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string_view sci(buf, res.ptr - buf);
  const size_t e = sci.find('e');
  const int exp = std::atoi(std::string(sci.substr(e + 1)).c_str());
  // strconv's 'g' with the shortest precision switches to exponent form at 1e6 and below 1e-4.
  if (exp < -4 || exp >= 6) return std::string(sci);
  // Fixed notation with the same (shortest) digits.
  auto fixed = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);
  return std::string(buf, fixed.ptr - buf);
}

namespace {

void AppendLabelValue(std::string& out, std::string_view v) {
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
}

}  // namespace

std::string RenderResourceMetrics(const NodeSnapshot& snap) {
  std::string out;
  out.reserve(1024 + snap.pods.size() * 900);
  const std::string ts = absl::StrCat(" ", UnixSeconds(snap.time) * 1000, "\n");

  struct ContainerRef {
    const PodSnapshot* pod;
    const ContainerSnapshot* c;
    const std::string* name;
  };
  std::vector<ContainerRef> containers;
  std::vector<const PodSnapshot*> pods;
  for (const PodSnapshot& p : snap.pods) {
    pods.push_back(&p);
    for (const ContainerSnapshot& c : p.containers) {
      containers.push_back({&p, &c, &p.pod.containers[c.index].name});
    }
  }
  std::sort(containers.begin(), containers.end(), [](const ContainerRef& a, const ContainerRef& b) {
    if (*a.name != *b.name) return *a.name < *b.name;
    if (a.pod->pod.namespace_name != b.pod->pod.namespace_name) {
      return a.pod->pod.namespace_name < b.pod->pod.namespace_name;
    }
    return a.pod->pod.name < b.pod->pod.name;
  });
  std::sort(pods.begin(), pods.end(), [](const PodSnapshot* a, const PodSnapshot* b) {
    if (a->pod.namespace_name != b->pod.namespace_name) {
      return a->pod.namespace_name < b->pod.namespace_name;
    }
    return a->pod.name < b->pod.name;
  });

  auto container_labels = [&](const ContainerRef& r) {
    out += "{container=\"";
    AppendLabelValue(out, *r.name);
    out += "\",namespace=\"";
    AppendLabelValue(out, r.pod->pod.namespace_name);
    out += "\",pod=\"";
    AppendLabelValue(out, r.pod->pod.name);
    out += "\"} ";
  };
  auto pod_labels = [&](const PodSnapshot* p) {
    out += "{namespace=\"";
    AppendLabelValue(out, p->pod.namespace_name);
    out += "\",pod=\"";
    AppendLabelValue(out, p->pod.name);
    out += "\"} ";
  };
  auto cpu_seconds = [](const ResourceUsage& u) {
    return static_cast<double>(u.usage_core_nano_seconds) / 1e9;
  };

  out +=
      "# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the "
      "container in core-seconds\n# TYPE container_cpu_usage_seconds_total counter\n";
  for (const ContainerRef& r : containers) {
    out += "container_cpu_usage_seconds_total";
    container_labels(r);
    out += FormatPrometheusFloat(cpu_seconds(r.c->usage));
    out += ts;
  }
  out +=
      "# HELP container_memory_working_set_bytes [STABLE] Current working set of the container "
      "in bytes\n# TYPE container_memory_working_set_bytes gauge\n";
  for (const ContainerRef& r : containers) {
    out += "container_memory_working_set_bytes";
    container_labels(r);
    out += FormatPrometheusFloat(static_cast<double>(r.c->usage.working_set_bytes));
    out += ts;
  }
  out +=
      "# HELP container_start_time_seconds [STABLE] Start time of the container since unix "
      "epoch in seconds\n# TYPE container_start_time_seconds gauge\n";
  for (const ContainerRef& r : containers) {
    out += "container_start_time_seconds";
    container_labels(r);
    out += FormatPrometheusFloat(static_cast<double>(UnixSeconds(r.c->usage.start_time)));
    out += "\n";
  }
  out +=
      "# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in "
      "core-seconds\n# TYPE node_cpu_usage_seconds_total counter\nnode_cpu_usage_seconds_total ";
  out += FormatPrometheusFloat(cpu_seconds(snap.usage));
  out += ts;
  out +=
      "# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes\n"
      "# TYPE node_memory_working_set_bytes gauge\nnode_memory_working_set_bytes ";
  out += FormatPrometheusFloat(static_cast<double>(snap.usage.working_set_bytes));
  out += ts;
  out +=
      "# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in "
      "core-seconds\n# TYPE pod_cpu_usage_seconds_total counter\n";
  for (const PodSnapshot* p : pods) {
    out += "pod_cpu_usage_seconds_total";
    pod_labels(p);
    out += FormatPrometheusFloat(cpu_seconds(p->usage));
    out += ts;
  }
  out +=
      "# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes\n"
      "# TYPE pod_memory_working_set_bytes gauge\n";
  for (const PodSnapshot* p : pods) {
    out += "pod_memory_working_set_bytes";
    pod_labels(p);
    out += FormatPrometheusFloat(static_cast<double>(p->usage.working_set_bytes));
    out += ts;
  }
  out +=
      "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container "
      "metrics, 0 otherwise\n# TYPE resource_scrape_error gauge\nresource_scrape_error 0\n";
  return out;
}

namespace {

// Canonical Kubernetes quantities, as a kube-apiserver prints them.
std::string CpuQuantity(int64_t millis) { return FormatCpuNanoCores(millis * 1'000'000); }
std::string MemoryQuantity(int64_t bytes) { return FormatMemoryBytes(bytes); }

void WriteLabels(JsonWriter& w, const std::vector<std::pair<std::string, std::string>>& labels) {
  w.Key("labels").BeginObject();
  for (const auto& [k, v] : labels) w.Member(k, v);
  w.EndObject();
}

}  // namespace

namespace {

// The Node; without a resource version, as a client creates it (heartbeat `heartbeat`).
void WriteNode(std::string& out, const NodeInfo& node, const KubeletEndpoint& endpoint,
               std::optional<uint64_t> resource_version, Timestamp heartbeat) {
  JsonWriter w;
  const std::string created = FormatRfc3339(heartbeat);
  w.BeginObject();
  w.Member("kind", "Node");
  w.Member("apiVersion", "v1");
  w.Key("metadata").BeginObject();
  w.Member("name", node.name);
  if (resource_version) {
    w.Member("uid", node.uid);
    w.Member("resourceVersion", absl::StrCat(*resource_version));
    w.Member("creationTimestamp", created);
    WriteLabels(w, node.labels);
  } else {
    // A registered hollow node carries the label its workloads' pods select.
    std::vector<std::pair<std::string, std::string>> labels = node.labels;
    labels.emplace_back("kubestat.dev/hollow-node", "true");
    std::sort(labels.begin(), labels.end());
    WriteLabels(w, labels);
  }
  w.EndObject();
  w.Key("spec").BeginObject();
  const std::string cidr =
      absl::StrCat("10.", 64 + node.index / 256, ".", node.index % 256, ".0/24");
  w.Member("podCIDR", cidr);
  w.Key("podCIDRs").BeginArray().String(cidr).EndArray();
  w.EndObject();
  w.Key("status").BeginObject();
  for (const char* key : {"capacity", "allocatable"}) {
    const bool cap = key[0] == 'c';
    w.Key(key).BeginObject();
    w.Member("cpu", CpuQuantity(cap ? node.cpu_capacity_millis : node.cpu_allocatable_millis));
    w.Member("ephemeral-storage", "100Gi");
    w.Member("memory",
             MemoryQuantity(cap ? node.memory_capacity_bytes : node.memory_allocatable_bytes));
    w.Member("pods", "110");
    // Devices (ClusterModelOptions::node_topology).
    if (node.gpus > 0) w.Member(kGpuResourceName, absl::StrCat(node.gpus));
    w.EndObject();
  }
  w.Key("conditions").BeginArray().BeginObject();
  w.Member("type", "Ready");
  w.Member("status", "True");
  w.Member("lastHeartbeatTime", created);
  w.Member("lastTransitionTime", created);
  w.Member("reason", "KubeletReady");
  w.Member("message", "kubelet is posting ready status");
  w.EndObject().EndArray();
  w.Key("addresses").BeginArray();
  w.BeginObject().Member("type", "InternalIP").Member("address", endpoint.ip).EndObject();
  w.BeginObject().Member("type", "Hostname").Member("address", node.name).EndObject();
  w.EndArray();
  w.Key("daemonEndpoints").BeginObject().Key("kubeletEndpoint").BeginObject();
  w.Key("Port").Int(endpoint.port);
  w.EndObject().EndObject();
  w.Key("nodeInfo").BeginObject();
  w.Member("machineID", std::string_view(node.uid).substr(0, 8));
  w.Member("systemUUID", node.uid);
  w.Member("bootID", node.uid);
  w.Member("kernelVersion", "6.1.0-28-amd64");
  w.Member("osImage", "Debian GNU/Linux 12 (bookworm)");
  w.Member("containerRuntimeVersion", "containerd://1.7.24");
  w.Member("kubeletVersion", "v1.31.4");
  w.Member("kubeProxyVersion", "v1.31.4");
  w.Member("operatingSystem", "linux");
  w.Member("architecture", "amd64");
  w.EndObject();
  w.EndObject();  // status
  w.EndObject();
  out += w.str();
}

}  // namespace

void AppendNodeJson(std::string& out, const NodeInfo& node, const KubeletEndpoint& endpoint,
                    uint64_t resource_version) {
  WriteNode(out, node, endpoint, resource_version, node.start_time);
}

void AppendNodeForRegistration(std::string& out, const NodeInfo& node,
                               const KubeletEndpoint& endpoint, Timestamp now) {
  WriteNode(out, node, endpoint, std::nullopt, now);
}

namespace {

// The pod's controller, as Deployment and DaemonSet pods have one: a ReplicaSet
// "<app>-<pod-template-hash>" (whose owner is the Deployment <app>), or the DaemonSet <app>.
void WriteOwnerReference(JsonWriter& w, const PodInfo& pod) {
  std::string kind = "DaemonSet";
  std::string name = pod.app;
  for (const auto& [key, value] : pod.labels) {
    if (key == "pod-template-hash") {
      kind = "ReplicaSet";
      name = absl::StrCat(pod.app, "-", value);
    }
  }
  w.Key("ownerReferences").BeginArray().BeginObject();
  w.Member("apiVersion", "apps/v1");
  w.Member("kind", kind);
  w.Member("name", name);
  w.Member("uid", absl::StrCat("owner-", pod.namespace_name, "-", name));
  w.Member("controller", true);
  w.Member("blockOwnerDeletion", true);
  w.EndObject().EndArray();
}

}  // namespace

void AppendPodJson(std::string& out, const ClusterModel& model, const PodInfo& pod, Timestamp now,
                   uint64_t resource_version) {
  JsonWriter w;
  const std::string created = FormatRfc3339(pod.start_time);
  const NodeInfo& node = model.node(pod.node);
  w.BeginObject();
  w.Member("kind", "Pod");
  w.Member("apiVersion", "v1");
  w.Key("metadata").BeginObject();
  w.Member("name", pod.name);
  w.Member("namespace", pod.namespace_name);
  w.Member("uid", pod.uid);
  w.Member("resourceVersion", absl::StrCat(resource_version));
  w.Member("creationTimestamp", created);
  WriteLabels(w, pod.labels);
  WriteOwnerReference(w, pod);
  w.EndObject();
  w.Key("spec").BeginObject();
  w.Member("nodeName", node.name);
  w.Key("containers").BeginArray();
  for (const ContainerSpec& c : pod.containers) {
    w.BeginObject();
    w.Member("name", c.name);
    w.Member("image", absl::StrCat("registry.example/", pod.app, "/", c.name, ":1.0"));
    w.Key("resources").BeginObject();
    w.Key("requests").BeginObject();
    w.Member("cpu", CpuQuantity(c.cpu_request_millis));
    w.Member("memory", MemoryQuantity(c.memory_request_bytes));
    // Devices (ClusterModelOptions::node_topology): extended resources have limit = request.
    if (c.gpus > 0) w.Member(kGpuResourceName, absl::StrCat(c.gpus));
    w.EndObject();
    if (c.cpu_limit_millis > 0 || c.memory_limit_bytes > 0 || c.gpus > 0) {
      w.Key("limits").BeginObject();
      if (c.cpu_limit_millis > 0) w.Member("cpu", CpuQuantity(c.cpu_limit_millis));
      if (c.memory_limit_bytes > 0) w.Member("memory", MemoryQuantity(c.memory_limit_bytes));
      if (c.gpus > 0) w.Member(kGpuResourceName, absl::StrCat(c.gpus));
      w.EndObject();
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.Member("restartPolicy", "Always");
  w.EndObject();
  w.Key("status").BeginObject();
  w.Member("phase", "Running");
  w.Key("conditions").BeginArray();
  for (const char* type : {"Initialized", "Ready", "ContainersReady", "PodScheduled"}) {
    w.BeginObject();
    w.Member("type", type);
    w.Member("status", "True");
    w.Member("lastTransitionTime", created);
    w.EndObject();
  }
  w.EndArray();
  w.Member("podIP",
           absl::StrCat("10.", 64 + pod.node / 256, ".", pod.node % 256, ".", 2 + pod.slot % 250));
  w.Member("startTime", created);
  w.Key("containerStatuses").BeginArray();
  const bool alive = pod.generation == model.Generation(pod.node, pod.slot, now);
  for (size_t i = 0; i < pod.containers.size(); ++i) {
    const int c = static_cast<int>(i);
    // A pod that is no longer alive (a DELETED event) shows its state when it ended.
    const Timestamp at = alive ? now
                               : model.GenerationStart(pod.node, pod.slot, pod.generation + 1) -
                                     std::chrono::seconds(1);
    w.BeginObject();
    w.Member("name", pod.containers[i].name);
    w.Key("state").BeginObject().Key("running").BeginObject();
    w.Member("startedAt", FormatRfc3339(model.ContainerStart(pod.node, pod.slot, c, at)));
    w.EndObject().EndObject();
    w.Member("ready", true);
    w.Key("restartCount").Int(model.RestartCount(pod.node, pod.slot, c, at));
    w.Member("image",
             absl::StrCat("registry.example/", pod.app, "/", pod.containers[i].name, ":1.0"));
    w.Member("started", true);
    w.EndObject();
  }
  w.EndArray();
  // Requests are always set, so a pod is Burstable unless its limits equal them.
  w.Member("qosClass", IsGuaranteed(pod) ? "Guaranteed" : "Burstable");
  w.EndObject();  // status
  w.EndObject();
  out += w.str();
}

std::string RenderWatchEvent(std::string_view type, std::string_view object_json) {
  std::string out;
  out.reserve(object_json.size() + 40);
  out += "{\"type\":\"";
  out += type;
  out += "\",\"object\":";
  out += object_json;
  out += "}\n";
  return out;
}

}  // namespace kubestat::sim
