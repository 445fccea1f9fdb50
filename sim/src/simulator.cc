#include "kubestat/sim/simulator.h"

#include <unistd.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api_client.h"
#include "fake_apiserver.h"
#include "hollow_nodes.h"
#include "hollow_pods.h"
#include "kubelets.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/sim/render.h"
#include "tls.h"

namespace kubestat::sim {

uint64_t InitialResourceVersion(Timestamp start) {
  const int64_t micros =
      std::chrono::duration_cast<std::chrono::microseconds>(start.time_since_epoch()).count();
  return static_cast<uint64_t>(std::max<int64_t>(micros, 1));
}

std::string KubeletLoopbackAddress(int index) {
  return absl::StrCat("127.1.", index / 250, ".", index % 250 + 1);
}

absl::Status SimulatorOptions::Validate() const {
  if (absl::Status s = model.Validate(); !s.ok()) return s;
  if (apiserver_port < 0 || apiserver_port > 65535) {
    return absl::InvalidArgumentError("--apiserver-port must be in [0, 65535]");
  }
  if (!hollow_apiserver.empty()) {
    if (hollow_apiserver.rfind("https://", 0) != 0) {
      return absl::InvalidArgumentError("--hollow-apiserver must be an https:// URL");
    }
    if (!metrics_backend.empty() || !users_file.empty() || !kubeconfig_out.empty() ||
        !kubeconfig_dir.empty()) {
      return absl::InvalidArgumentError(
          "--hollow-apiserver fakes no API server: --metrics-backend, --users-file, "
          "--kubeconfig-out and --kubeconfig-dir do not apply");
    }
    if (hollow_lease_renew_interval <= Duration::zero()) {
      return absl::InvalidArgumentError("--hollow-lease-renew-interval must be positive");
    }
  }
  if (kubelet_port < 0 || kubelet_port > 65535) {
    return absl::InvalidArgumentError("--kubelet-port must be in [0, 65535]");
  }
  if (kubelet_address_mode == KubeletAddressMode::kPorts && kubelet_port != 0 &&
      kubelet_port + model.nodes - 1 > 65535) {
    return absl::InvalidArgumentError("--kubelet-port + --nodes exceeds 65535 in ports mode");
  }
  if (kubelet_address_mode == KubeletAddressMode::kLoopback && model.nodes > 250 * 256) {
    return absl::InvalidArgumentError("--nodes exceeds the 127.1.x.y address range");
  }
  if (!metrics_backend.empty() && metrics_backend.rfind("http://", 0) != 0 &&
      metrics_backend.rfind("https://", 0) != 0) {
    return absl::InvalidArgumentError("--metrics-backend must start with http:// or https://");
  }
  if (tick_interval < Duration::zero()) {
    return absl::InvalidArgumentError("--tick must not be negative");
  }
  if (watch_history < 1) return absl::InvalidArgumentError("--watch-history must be >= 1");
  if (metrics_backend.empty() &&
      (!metrics_backend_ca_file.empty() || metrics_backend_insecure_skip_tls_verify)) {
    return absl::InvalidArgumentError(
        "--metrics-backend-ca-file and --metrics-backend-insecure-skip-tls-verify need "
        "--metrics-backend");
  }
  if (!metrics_backend_ca_file.empty() && metrics_backend_insecure_skip_tls_verify) {
    return absl::InvalidArgumentError(
        "--metrics-backend-ca-file and --metrics-backend-insecure-skip-tls-verify exclude each "
        "other");
  }
  if (users_file.empty() && !kubeconfig_user.empty()) {
    return absl::InvalidArgumentError("--kubeconfig-user needs --users-file");
  }
  if (users_file.empty() && !kubeconfig_dir.empty()) {
    return absl::InvalidArgumentError("--kubeconfig-dir needs --users-file");
  }
  for (const auto& [node, fault] : faults) {
    if (node.empty()) return absl::InvalidArgumentError("--faults: empty node name");
  }
  if (!podresources_dir.empty()) {
    // The longest socket path: <dir>/node-NNNN/kubelet.sock, node names being "node-%04d".
    const size_t digits = std::max<size_t>(4, std::to_string(std::max(model.nodes - 1, 0)).size());
    const size_t longest = podresources_dir.size() + std::string_view("/node-").size() + digits +
                           std::string_view("/kubelet.sock").size();
    if (longest > 107) {
      return absl::InvalidArgumentError(
          absl::StrCat("--podresources-dir: \"", podresources_dir, "\" makes socket paths of ",
                       longest, " bytes; a unix socket path holds at most 107"));
    }
  } else if (!podresources_faults.empty()) {
    return absl::InvalidArgumentError("--podresources-faults needs --podresources-dir");
  }
  if (podresources_slow_delay <= Duration::zero()) {
    return absl::InvalidArgumentError("--podresources-slow-delay must be positive");
  }
  return absl::OkStatus();
}

// The wiring: the kubelets always; the fake API server, or in hollow mode the nodes and pods
// registered in a real one; the certificates; the ticker and the streams' servicing.
struct Simulator::State {
  State(SimulatorOptions o, const Clock& c) : options(std::move(o)), clock(c) {}

  SimulatorOptions options;
  const Clock& clock;
  FaultTable faults;
  PodResourcesFaultTable podresources_faults;
  TlsFiles tls;
  TlsFiles apiserver_tls;       // with options.apiserver_tls
  FrontProxyFiles front_proxy;  // with options.metrics_backend
  std::string created_tls_dir;  // a temporary directory Stop() removes
  std::unique_ptr<Kubelets> kubelets;
  std::unique_ptr<FakeApiServer> apiserver;  // without options.hollow_apiserver
  // With options.hollow_apiserver: the client of the real API server and the nodes and pods
  // registered there.
  std::unique_ptr<ApiClient> hollow_client;
  std::unique_ptr<HollowNodes> hollow;
  std::unique_ptr<HollowPods> hollow_pods;

  bool started = false;
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;  // guarded by mu
  std::thread ticker;
  std::thread streamer;

  // Calls to the real API server under way at once for the Leases (registration, then
  // renewals) and for the pods' status writes: a thousand nodes renew 100 Leases a second
  // while thirty thousand pods start, which one connection cannot carry. Each caller, and
  // the pods' list, has its own connection, so renewals never wait on the pods.
  static constexpr int kHollowLeaseCallers = 16;
  static constexpr int kHollowPodCallers = 4;

  // Registers every node, with its kubelet's address and port, in options.hollow_apiserver
  // and starts renewing their Leases; then makes the model's workloads there and has the
  // kubelets report the pods bound to them.
  absl::Status RegisterHollowNodes() {
    ApiClientOptions client;
    client.url = options.hollow_apiserver;
    client.ca_file = options.hollow_ca_file;
    client.client_cert_file = options.hollow_client_cert_file;
    client.client_key_file = options.hollow_client_key_file;
    client.token_file = options.hollow_token_file;
    // and the pods' list, and the Nodes' Ready again
    client.connections = kHollowLeaseCallers + kHollowPodCallers + 2;
    absl::StatusOr<std::unique_ptr<ApiClient>> made = ApiClient::Create(std::move(client));
    if (!made.ok()) {
      return absl::InvalidArgumentError(
          StrCat("--hollow-apiserver: ", StdView(made.status().message())));
    }
    hollow_client = *std::move(made);
    const ClusterModel& model = kubelets->model();
    std::vector<HollowNode> nodes;
    const Timestamp now = clock.Now();
    for (int i = 0; i < model.node_count(); ++i) {
      HollowNode node{model.node(i).name, ""};
      AppendNodeForRegistration(node.node_json, model.node(i), kubelets->endpoint(i), now);
      nodes.push_back(std::move(node));
    }
    hollow =
        std::make_unique<HollowNodes>(*hollow_client, std::move(nodes), clock,
                                      options.hollow_lease_renew_interval, kHollowLeaseCallers);
    if (absl::Status s = hollow->Register(); !s.ok()) {
      return absl::UnavailableError(StrCat("--hollow-apiserver: ", StdView(s.message())));
    }
    hollow->Start();
    hollow_pods = std::make_unique<HollowPods>(*hollow_client, model, clock, kHollowPodCallers);
    kubelets->ServeHollowPods(hollow_pods.get());
    if (absl::Status s = hollow_pods->CreateWorkloads(); !s.ok()) {
      return absl::UnavailableError(StrCat("--hollow-apiserver: ", StdView(s.message())));
    }
    hollow_pods->Start();
    return absl::OkStatus();
  }

  // The kubelets' certificates with tls, the apiserver's with apiserver_tls, the front
  // proxy's with a metrics backend, in options.tls_dir or a new temporary directory.
  absl::Status GenerateCertificates() {
    const bool front = !options.metrics_backend.empty();
    std::string dir = options.tls_dir;
    if ((options.tls || front || options.apiserver_tls) && dir.empty()) {
      std::string tmpl =
          (std::filesystem::temp_directory_path() / "kubestat-sim-tls-XXXXXX").string();
      if (::mkdtemp(tmpl.data()) == nullptr) {
        return absl::InternalError("cannot create a temp dir");
      }
      dir = tmpl;
      created_tls_dir = tmpl;
    }
    if (options.tls) {
      std::vector<std::string> ips = kubelets->hosts();
      std::sort(ips.begin(), ips.end());
      ips.erase(std::unique(ips.begin(), ips.end()), ips.end());
      absl::StatusOr<TlsFiles> files = GenerateTls(dir, ips);
      if (!files.ok()) return files.status();
      tls = *files;
    }
    if (options.apiserver_tls) {
      std::vector<std::string> names = {"localhost"};
      std::vector<std::string> ips = {"127.0.0.1", "::1"};
      const std::string& address = options.apiserver_address;
      boost::system::error_code not_ip;
      boost::asio::ip::make_address(address, not_ip);
      if (not_ip) {
        names.push_back(address);
      } else if (address != "127.0.0.1" && address != "0.0.0.0" && address != "::") {
        ips.push_back(address);
      }
      absl::StatusOr<TlsFiles> files = GenerateApiserverTls(dir, names, ips);
      if (!files.ok()) return files.status();
      apiserver_tls = *files;
    }
    if (front) {
      absl::StatusOr<FrontProxyFiles> files = GenerateFrontProxy(dir);
      if (!files.ok()) return files.status();
      front_proxy = *files;
    }
    return absl::OkStatus();
  }

  void RemoveCreatedTlsDir() {
    if (created_tls_dir.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(created_tls_dir, ignored);
    created_tls_dir.clear();
  }

  // The streamer services the streamed answers every 10 ms; the ticker, with a
  // tick_interval, ticks the kubelets.
  void StartThreads() {
    streamer = std::thread([this] {
      std::unique_lock<std::mutex> lock(mu);
      while (!stopping) {
        lock.unlock();
        kubelets->ServiceStreams();
        if (apiserver) apiserver->ServiceStreams();
        lock.lock();
        cv.wait_for(lock, std::chrono::milliseconds(10), [this] { return stopping; });
      }
    });
    if (options.tick_interval > Duration::zero()) {
      ticker = std::thread([this] {
        std::unique_lock<std::mutex> lock(mu);
        while (!stopping) {
          cv.wait_for(lock, options.tick_interval, [this] { return stopping; });
          if (stopping) break;
          lock.unlock();
          kubelets->Tick();
          lock.lock();
        }
      });
    }
  }
};

Simulator::Simulator(SimulatorOptions options, const Clock& clock)
    : state_(std::make_unique<State>(std::move(options), clock)) {}

Simulator::~Simulator() { Stop(); }

absl::Status Simulator::Start() {
  State& s = *state_;
  if (s.started) return absl::FailedPreconditionError("Start() called twice");
  if (absl::Status st = s.options.Validate(); !st.ok()) return st;
  // The pods ask for what the podresources sockets report.
  if (!s.options.podresources_dir.empty()) s.options.model.node_topology = true;
  absl::StatusOr<std::unique_ptr<Kubelets>> kubelets =
      Kubelets::Create(s.options, s.clock, s.faults, s.podresources_faults);
  if (!kubelets.ok()) return kubelets.status();
  s.kubelets = *std::move(kubelets);
  const bool hollow = !s.options.hollow_apiserver.empty();
  if (!hollow) {
    s.apiserver = std::make_unique<FakeApiServer>(
        s.options, s.clock, *s.kubelets,
        KubeletFaults{&s.kubelets->model(), &s.faults, &s.podresources_faults,
                      s.kubelets->podresources()});
    if (absl::Status st = s.apiserver->LoadUsers(); !st.ok()) return st;
  }
  auto fail_early = [&s](absl::Status st) {
    s.RemoveCreatedTlsDir();
    return st;
  };
  if (absl::Status st = s.GenerateCertificates(); !st.ok()) return fail_early(st);
  if (s.apiserver) {
    if (absl::Status st =
            s.apiserver->Prepare(s.options.metrics_backend.empty() ? nullptr : &s.front_proxy,
                                 InitialResourceVersion(s.clock.Now()));
        !st.ok()) {
      return fail_early(st);
    }
  }

  auto fail = [this](absl::Status st) {
    Stop();
    return st;
  };
  s.started = true;
  if (absl::Status st = s.kubelets->Start(s.options.tls ? &s.tls : nullptr); !st.ok()) {
    return fail(st);
  }
  if (hollow) {
    // No fake API server: the real one holds the nodes.
    if (absl::Status st = s.RegisterHollowNodes(); !st.ok()) return fail(st);
  } else if (absl::Status st =
                 s.apiserver->Start(s.options.apiserver_tls ? &s.apiserver_tls : nullptr);
             !st.ok()) {
    return fail(st);
  }
  s.StartThreads();
  return absl::OkStatus();
}

void Simulator::Stop() {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.started || s.stopping) return;
    s.stopping = true;
  }
  s.cv.notify_all();
  if (s.ticker.joinable()) s.ticker.join();
  if (s.streamer.joinable()) s.streamer.join();
  if (s.hollow_pods) s.hollow_pods->Stop();
  if (s.hollow) s.hollow->Stop();
  if (s.apiserver) s.apiserver->Stop();
  s.kubelets->Stop();
  s.RemoveCreatedTlsDir();
}

void Simulator::Tick() {
  if (state_->kubelets) state_->kubelets->Tick();
}

const ClusterModel& Simulator::model() const { return state_->kubelets->model(); }
FaultTable& Simulator::faults() { return state_->faults; }
std::string Simulator::apiserver_url() const {
  return state_->apiserver ? state_->apiserver->url() : "";
}
std::string Simulator::kubelet_host(int node) const { return state_->kubelets->hosts()[node]; }
int Simulator::kubelet_port(int node) const { return state_->kubelets->port(node); }
std::string Simulator::kubelet_url(int node) const { return state_->kubelets->url(node); }
std::string Simulator::ca_path() const { return state_->tls.ca_cert; }
std::string Simulator::kubeconfig_path() const {
  return state_->apiserver ? state_->apiserver->kubeconfig_path() : "";
}
std::string Simulator::front_proxy_ca_path() const { return state_->front_proxy.ca_cert; }
std::string Simulator::apiserver_ca_path() const { return state_->apiserver_tls.ca_cert; }
std::string Simulator::user_kubeconfig_path(const std::string& user) const {
  return state_->apiserver ? state_->apiserver->user_kubeconfig_path(user) : "";
}
uint64_t Simulator::resource_version() const {
  return state_->apiserver ? state_->apiserver->resource_version() : 0;
}
PodResourcesFaultTable& Simulator::podresources_faults() { return state_->podresources_faults; }
absl::Status Simulator::ApplyPodResourcesFault(int node) {
  PodResourcesSockets* sockets = state_->kubelets ? state_->kubelets->podresources() : nullptr;
  if (sockets == nullptr) return absl::FailedPreconditionError("no --podresources-dir");
  return sockets->Apply(node);
}
absl::Status Simulator::RestartPodResources(int node) {
  PodResourcesSockets* sockets = state_->kubelets ? state_->kubelets->podresources() : nullptr;
  if (sockets == nullptr) return absl::FailedPreconditionError("no --podresources-dir");
  return sockets->Restart(node);
}
std::string Simulator::podresources_socket(int node) const {
  PodResourcesSockets* sockets = state_->kubelets ? state_->kubelets->podresources() : nullptr;
  return sockets != nullptr ? sockets->SocketPath(node) : "";
}

}  // namespace kubestat::sim
