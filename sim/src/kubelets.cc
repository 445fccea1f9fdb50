#include "kubelets.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kubestat/sim/render.h"
#include "sim_hash.h"
#include "sim_http.h"

namespace kubestat::sim {

using http::Request;
using http::Response;

namespace {

constexpr size_t kOversizedBytes = size_t{64} << 20;
// The kubelets' one server: threads for every node together, and connections per node (the
// aggregator keeps one; a few more for tests and curl).
constexpr int kKubeletIoThreads = 2;
constexpr int kKubeletWorkers = 4;
constexpr size_t kKubeletConnections = 8;

std::string KubeletHostFor(const SimulatorOptions& o, int i) {
  return o.kubelet_address_mode == KubeletAddressMode::kPorts ? "127.0.0.1"
                                                              : KubeletLoopbackAddress(i);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kubelets>> Kubelets::Create(
    const SimulatorOptions& options, const Clock& clock, FaultTable& faults,
    PodResourcesFaultTable& podresources_faults) {
  absl::StatusOr<ClusterModel> model = ClusterModel::Create(options.model);
  if (!model.ok()) return model.status();
  for (const auto& [node, fault] : options.faults) {
    if (model->NodeIndex(node) < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--faults: no node called ", node));
    }
    faults.Set(node, fault);
  }
  for (const auto& [node, fault] : options.podresources_faults) {
    if (model->NodeIndex(node) < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--podresources-faults: no node called ", node));
    }
    podresources_faults.Set(node, fault);
  }
  return std::unique_ptr<Kubelets>(
      new Kubelets(options, clock, *std::move(model), faults, podresources_faults));
}

Kubelets::Kubelets(const SimulatorOptions& options, const Clock& clock, ClusterModel model,
                   FaultTable& faults, PodResourcesFaultTable& podresources_faults)
    : options_(options),
      clock_(clock),
      model_(std::move(model)),
      faults_(faults),
      podresources_faults_(podresources_faults),
      streams_(clock) {
  const int nodes = model_.node_count();
  for (int i = 0; i < nodes; ++i) hosts_.push_back(KubeletHostFor(options_, i));
  ports_.assign(nodes, 0);
  if (!options_.podresources_dir.empty()) {
    podresources_ = std::make_unique<PodResourcesSockets>(options_.podresources_dir,
                                                          options_.podresources_slow_delay, model_,
                                                          clock_, podresources_faults_);
  }
  // Pod state as of now; later changes are found by Tick().
  const Timestamp now = Now();
  const int slots = nodes * model_.pods_per_node();
  generation_.resize(slots);
  restarts_.resize(slots);
  for (int n = 0; n < nodes; ++n) {
    for (int p = 0; p < model_.pods_per_node(); ++p) {
      generation_[Slot(n, p)] = model_.Generation(n, p, now);
      restarts_[Slot(n, p)] = RestartsAt(n, p, now);
    }
  }
}

Kubelets::~Kubelets() { Stop(); }

absl::Status Kubelets::Start(const TlsFiles* tls) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    started_ = true;
  }
  if (podresources_) {
    if (absl::Status status = podresources_->Start(); !status.ok()) return status;
  }
  const int nodes = model_.node_count();
  if (nodes == 0) return absl::OkStatus();
  auto port_of = [this](int i) {
    int port = options_.kubelet_port;
    if (port != 0 && options_.kubelet_address_mode == KubeletAddressMode::kPorts) port += i;
    return port;
  };
  SimServerOptions server;
  server.name = "kubelet";
  server.host = hosts_[0];
  server.port = port_of(0);
  server.tls = tls;
  server.io_threads = kKubeletIoThreads;
  server.worker_threads = kKubeletWorkers;
  server.max_connections = kKubeletConnections;
  server.more_listeners.reserve(nodes - 1);
  for (int i = 1; i < nodes; ++i) {
    absl::StatusOr<std::string> address = ListenAddress(hosts_[i]);
    if (!address.ok()) {
      return absl::UnavailableError(
          absl::StrCat("kubelet of ", model_.node(i).name, ": ", address.status().message()));
    }
    server.more_listeners.push_back({*address, port_of(i)});
  }
  absl::StatusOr<std::unique_ptr<http::Server>> started = StartSimServer(
      std::move(server),
      [this](const Request& req) { return Handle(static_cast<int>(req.listener), req); },
      registry_);
  if (!started.ok()) {
    return absl::UnavailableError(absl::StrCat("kubelets: ", started.status().message()));
  }
  server_ = *std::move(started);
  for (int i = 0; i < nodes; ++i) ports_[i] = server_->port(i);
  return absl::OkStatus();
}

void Kubelets::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_ || stopped_) return;
    stopped_ = true;
  }
  streams_.Stop();
  // Closes every connection, open streams included, and joins the server's threads.
  if (server_) server_->Stop();
  if (podresources_) podresources_->Stop();
}

void Kubelets::Tick() {
  std::lock_guard<std::mutex> lock(mu_);
  TickLocked();
}

void Kubelets::ServiceStreams() { streams_.Service(); }

void Kubelets::ServeHollowPods(const HollowPods* pods) { hollow_pods_.store(pods); }

std::string Kubelets::url(int node) const {
  return absl::StrCat(options_.tls ? "https://" : "http://", hosts_[node], ":", ports_[node]);
}

KubeletEndpoint Kubelets::endpoint(int node) const { return {hosts_[node], ports_[node]}; }

void Kubelets::ReadPods(std::string_view node_name,
                        absl::FunctionRef<void(std::span<const PodInfo>)> read) const {
  std::vector<PodInfo> pods;
  std::lock_guard<std::mutex> lock(mu_);
  for (int n = 0; n < model_.node_count(); ++n) {
    if (!node_name.empty() && model_.node(n).name != node_name) continue;
    for (int p = 0; p < model_.pods_per_node(); ++p) {
      pods.push_back(model_.PodOfGeneration(n, p, generation_[Slot(n, p)]));
    }
  }
  read(pods);
}

bool Kubelets::DeletePod(std::string_view ns, std::string_view name,
                         absl::FunctionRef<void(const PodInfo& pod, Timestamp now)> deleting) {
  std::lock_guard<std::mutex> lock(mu_);
  TickLocked();  // the pods running now, so that `name` is looked up among them
  const Timestamp now = Now();
  for (int n = 0; n < model_.node_count(); ++n) {
    for (int p = 0; p < model_.pods_per_node(); ++p) {
      const PodInfo pod = model_.PodOfGeneration(n, p, generation_[Slot(n, p)]);
      if (pod.namespace_name != ns || pod.name != name) continue;
      deleting(pod, now);
      model_.DeletePod(n, p, now);
      TickLocked();
      return true;
    }
  }
  return false;
}

void Kubelets::SetPodWatcher(PodWatcher* watcher) {
  std::lock_guard<std::mutex> lock(mu_);
  watcher_ = watcher;
}

int Kubelets::RestartsAt(int n, int p, Timestamp now) const {
  int total = 0;
  for (int c = 0; c < options_.model.containers_per_pod; ++c) {
    total += model_.RestartCount(n, p, c, now);
  }
  return total;
}

void Kubelets::Publish(std::string_view type, const PodInfo& pod, Timestamp now) {
  if (watcher_ != nullptr) watcher_->OnPodEvent(type, pod, now);
}

void Kubelets::TickLocked() {
  const Timestamp now = Now();
  const int nodes = model_.node_count();
  const int pods = model_.pods_per_node();
  for (int n = 0; n < nodes; ++n) {
    for (int p = 0; p < pods; ++p) {
      const int slot = Slot(n, p);
      const int64_t g = model_.Generation(n, p, now);
      if (g != generation_[slot]) {
        Publish("DELETED", model_.PodOfGeneration(n, p, generation_[slot]), now);
        generation_[slot] = g;
        Publish("ADDED", model_.PodOfGeneration(n, p, g), now);
        restarts_[slot] = RestartsAt(n, p, now);
        continue;
      }
      const int r = RestartsAt(n, p, now);
      if (r != restarts_[slot]) {
        restarts_[slot] = r;
        Publish("MODIFIED", model_.PodOfGeneration(n, p, g), now);
      }
    }
  }
}

std::string Kubelets::Garbage(int node) {
  uint64_t h;
  {
    std::lock_guard<std::mutex> lock(mu_);
    h = Mix(options_.model.seed, ++garbage_counter_, node);
  }
  std::string bytes(4096, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i % 8 == 0) h = Mix(h, i);
    bytes[i] = static_cast<char>(h >> (8 * (i % 8)));
  }
  return bytes;
}

Response Kubelets::Handle(int node, const Request& req) {
  if (!options_.kubelet_token.empty()) {
    const std::optional<std::string_view> auth = req.Header("Authorization");
    if (!auth || *auth != "Bearer " + options_.kubelet_token) {
      return Reply(401, "Unauthorized\n", "text/plain; charset=utf-8");
    }
  }
  const std::string path(req.path);
  if (path == "/healthz") return Reply(200, "ok", "text/plain; charset=utf-8");
  const bool summary = path == "/stats/summary" || path == "/stats/summary/";
  const bool resource = path == "/metrics/resource";
  if (req.method != "GET" || (!summary && !resource)) {
    return Reply(404, "404 page not found\n", "text/plain; charset=utf-8");
  }
  const Fault fault = faults_.Get(model_.node(node).name);
  switch (fault) {
    case Fault::kTimeout:
      if (!streams_.stopping()) return streams_.Hold();
      break;
    case Fault::kHttp500:
      return Reply(500, "Internal Error: failed to get node info\n", "text/plain; charset=utf-8");
    case Fault::kGarbage:
      return Reply(200, Garbage(node), summary ? kJson : kPromText);
    case Fault::kOversized: {
      auto s = streams_.Open(Stream::Kind::kOversized, std::chrono::minutes(5));
      std::string start = summary ? "{\"node\":{\"nodeName\":\"" : "# HELP ";
      s->remaining = kOversizedBytes - start.size();
      return streams_.Respond(s, summary ? kJson : kPromText, std::move(start));
    }
    case Fault::kNone:
    case Fault::kTruncated:
    case Fault::kSlowdrip:
    case Fault::kZeroTimestamp:
      break;
  }
  NodeSnapshot snap = model_.Snapshot(node, clock_.Now());
  // Hollow nodes report the real pods bound to them.
  if (const HollowPods* hollow = hollow_pods_.load()) hollow->Rewrite(node, snap);
  // The renderers stamp every reading with the snapshot's time.
  if (fault == Fault::kZeroTimestamp) snap.time = Timestamp{};
  std::string body;
  if (summary) {
    const auto query = SplitQuery(req.query);
    body = RenderSummary(snap, QueryParam(query, "only_cpu_and_memory") == "true");
  } else {
    body = RenderResourceMetrics(snap);
  }
  const char* type = summary ? kJson : kPromText;
  if (fault == Fault::kTruncated) {
    body.resize(body.size() / 2);
  } else if (fault == Fault::kSlowdrip) {
    auto s = streams_.Open(Stream::Kind::kSlowdrip, std::chrono::minutes(10));
    s->payload = std::move(body);
    return streams_.Respond(s, type, "");
  }
  return Reply(200, std::move(body), type);
}

}  // namespace kubestat::sim
