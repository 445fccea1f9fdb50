#include "kubestat/sim/simulator.h"

#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "api_client.h"
#include "backend_proxy.h"
#include "hollow_nodes.h"
#include "hollow_pods.h"
#include "kubeconfig.h"
#include "kubestat/apimachinery/api_error.h"
#include "kubestat/apimachinery/label_selector.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/file.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/core/url.h"
#include "kubestat/http/server.h"
#include "kubestat/sim/access_review.h"
#include "kubestat/sim/render.h"
#include "kubestat/sim/request_info.h"
#include "kubestat/sim/users.h"
#include "podresources_server.h"
#include "prometheus/registry.h"
#include "sim_hash.h"
#include "sim_strings.h"
#include "stored_objects.h"
#include "tls.h"

namespace kubestat::sim {

using http::Request;
using http::Response;
using http::StreamWriter;

namespace {

constexpr const char* kJson = "application/json";
constexpr const char* kPromText = "text/plain; version=0.0.4; charset=utf-8";
constexpr size_t kOversizedBytes = size_t{64} << 20;
constexpr size_t kOversizedQueued = size_t{4} << 20;
constexpr size_t kWatchBacklogLimit = size_t{16} << 20;
// Largest TokenReview / SubjectAccessReview body, and largest proxied request body.
constexpr size_t kReviewBodyLimit = size_t{64} << 10;
constexpr size_t kProxiedBodyLimit = size_t{64} << 20;
// The kubelets' one server: threads for every node together, and connections per node (the
// aggregator keeps one; a few more for tests and curl).
constexpr int kKubeletIoThreads = 2;
constexpr int kKubeletWorkers = 4;
constexpr size_t kKubeletConnections = 8;
constexpr const char* kNotFoundMessage = "the server could not find the requested resource";
constexpr std::string_view kNamespaces[] = {"analytics", "default", "kube-system", "monitoring",
                                            "payments",  "search",  "shop"};

std::string KubeletHostFor(const SimulatorOptions& o, int i) {
  return o.kubelet_address_mode == KubeletAddressMode::kPorts ? "127.0.0.1"
                                                              : KubeletLoopbackAddress(i);
}

// `host` as an IP literal: itself when it is one, else its first address.
absl::StatusOr<std::string> ListenAddress(const std::string& host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  if (!ec) return host;
  boost::asio::io_context io;
  boost::asio::ip::tcp::resolver resolver(io);
  const auto results = resolver.resolve(host, "", ec);
  if (ec || results.empty()) {
    return absl::UnavailableError(absl::StrCat("cannot resolve ", host, ": ", ec.message()));
  }
  return results.begin()->endpoint().address().to_string();
}

// "a=1&b=2" as a map, values still encoded; a key without '=' has an empty value, and a
// repeated key keeps its last value.
std::map<std::string, std::string> SplitQuery(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    if (eq == 0) continue;
    if (eq == std::string_view::npos) {
      out[std::string(pair)] = "";
    } else {
      out[std::string(pair.substr(0, eq))] = std::string(pair.substr(eq + 1));
    }
  }
  return out;
}

// The non-empty segments of a path, still encoded.
std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> parts;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    if (slash != 0) parts.emplace_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

std::string QueryParam(const std::map<std::string, std::string>& q, const std::string& key) {
  auto it = q.find(key);
  return it == q.end() ? std::string() : it->second;
}

Response ReplyError(const ApiError& error) { return http::ErrorResponse(error); }

Response Reply(int code, std::string body, const char* content_type) {
  Response response;
  response.code = code;
  response.body = std::move(body);
  response.content_type = content_type;
  return response;
}

// Paths kube-apiserver's system:public-info-viewer role opens to everyone.
bool IsPublicPath(const std::string& path) {
  if (path == "/version" || path == "/version/") return true;
  for (const char* p : {"/healthz", "/livez", "/readyz"}) {
    if (path == p || (path.rfind(p, 0) == 0 && path[std::string_view(p).size()] == '/')) {
      return true;
    }
  }
  return false;
}

bool IsMetricsGroupPath(const std::string& path) {
  return path.rfind("/apis/metrics.k8s.io/", 0) == 0 || path == "/apis/metrics.k8s.io" ||
         path.rfind("/apis/metrics/", 0) == 0 || path == "/apis/metrics";
}

// The bearer token of "Authorization: Bearer <token>" (scheme in any case), or "".
std::string BearerToken(const Request& req) {
  const std::optional<std::string_view> header = req.Header("Authorization");
  if (!header) return "";
  std::string_view value = *header;
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  const size_t space = value.find(' ');
  if (space == std::string_view::npos) return "";
  std::string scheme(value.substr(0, space));
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "bearer") return "";
  std::string_view token = value.substr(space + 1);
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  if (token.find(' ') != std::string_view::npos) return "";
  return std::string(token);
}

// kube-apiserver's 403 for a request the rules do not allow.
ApiError ForbiddenError(const std::string& user, const RequestInfo& info) {
  const std::string why = ForbiddenMessage(user, info);
  if (!info.is_resource_request) {
    return ApiError(403, StatusReason::kForbidden, "forbidden: " + why);
  }
  return ApiError::Forbidden(info.api_group, info.resource, info.name, why);
}

// The request body, at most `limit` bytes (413 beyond).
absl::StatusOr<std::string> ReadBody(const Request& req, size_t limit) {
  if (req.body.size() > limit) {
    return ApiError::RequestEntityTooLarge(absl::StrCat("limit is ", limit, " bytes")).ToStatus();
  }
  return std::string(req.body);
}

std::string ApiGroupJson(std::string_view group) {
  const std::string g(group);
  return absl::StrCat("{\"name\":\"", g, "\",\"versions\":[{\"groupVersion\":\"", g,
                      "/v1\",\"version\":\"v1\"}],\"preferredVersion\":{\"groupVersion\":\"", g,
                      "/v1\",\"version\":\"v1\"}}");
}

std::string ReviewResourceListJson(std::string_view group, std::string_view resource,
                                   std::string_view kind) {
  return absl::StrCat("{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\",\"groupVersion\":\"",
                      std::string(group), "/v1\",\"resources\":[{\"name\":\"",
                      std::string(resource),
                      "\",\"singularName\":\"\",\"namespaced\":false,\"kind\":\"",
                      std::string(kind), "\",\"verbs\":[\"create\"]}]}");
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Hands a proxied answer to the client as it arrives: the head is awaited by the handler
// (Head()), the body goes through the stream writer once the server provides it.
class ReplySink : public ProxyResponseSink {
 public:
  std::future<absl::StatusOr<ProxiedResponseHead>> Head() { return head_.get_future(); }

  void OnHead(absl::StatusOr<ProxiedResponseHead> head) override {
    head_.set_value(std::move(head));
  }

  void OnData(std::string_view chunk) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (writer_) {
      writer_->Write(std::string(chunk));
    } else {
      pending_.append(chunk);
    }
  }

  void OnEnd(absl::Status) override {
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
    if (writer_) writer_->Finish();
  }

  void Attach(std::shared_ptr<StreamWriter> writer) {
    std::lock_guard<std::mutex> lock(mu_);
    writer_ = std::move(writer);
    writer_->Write(std::move(pending_));
    pending_.clear();
    writer_->Flush();
    if (ended_) writer_->Finish();
  }

 private:
  std::promise<absl::StatusOr<ProxiedResponseHead>> head_;
  std::mutex mu_;
  std::string pending_;
  bool ended_ = false;
  std::shared_ptr<StreamWriter> writer_;
};

// A response body written over time: a watch, an oversized body or a slow drip.
struct Stream {
  enum class Kind {
    kPodWatch,
    kNodeWatch,
    kLimitRangeWatch,
    kConfigMapWatch,
    kOversized,
    kSlowdrip
  };
  Kind kind;
  std::shared_ptr<StreamWriter> writer;  // set when the server starts the stream
  Timestamp deadline;                    // monotonic; the stream is closed then
  // Watches: which pods (namespace and node) or stored objects (namespace and name); empty:
  // all.
  std::string namespace_filter;
  std::string node_filter;
  // Oversized: bytes left to write. Slowdrip: the payload and how much was sent.
  size_t remaining = 0;
  std::string payload;
  size_t sent = 0;
  Timestamp next_drip;
};

// A request held unanswered ("timeout" fault) until it goes away or the simulator stops.
struct Parked {
  std::shared_ptr<StreamWriter> writer;
  std::string answer;  // sent at Stop()
};

void Send(Stream& s, std::string_view data) {
  if (!data.empty()) s.writer->Write(std::string(data));
}

struct WatchEvent {
  uint64_t resource_version;
  std::string namespace_name;
  std::string node_name;  // a pod's node; a stored object's name
  std::string line;       // the event, newline-terminated
  // The watches it goes to: a pod's, a LimitRange's or a ConfigMap's.
  Stream::Kind kind = Stream::Kind::kPodWatch;
};

}  // namespace

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

struct Simulator::State {
  State(SimulatorOptions o, const Clock& c) : options(std::move(o)), clock(c) {}

  SimulatorOptions options;
  const Clock& clock;
  std::optional<ClusterModel> model;
  FaultTable faults;
  PodResourcesFaultTable podresources_faults;
  std::unique_ptr<PodResourcesSockets> podresources;  // with options.podresources_dir
  std::string apiserver_url;
  std::vector<std::string> kubelet_hosts;
  std::vector<int> kubelet_ports;
  std::string ca_path;
  std::string kubeconfig_path;
  TlsFiles tls;
  TlsFiles apiserver_tls;       // with options.apiserver_tls
  std::string created_tls_dir;  // a temporary directory Stop() removes
  FrontProxyFiles front_proxy;
  std::unique_ptr<BackendProxy> backend;
  // With options.hollow_apiserver: the client of the real API server and the nodes
  // registered there.
  std::unique_ptr<ApiClient> hollow_client;
  std::unique_ptr<HollowNodes> hollow;
  std::unique_ptr<HollowPods> hollow_pods;
  std::optional<UsersFile> users;
  std::map<std::string, std::string> user_kubeconfigs;  // user name -> path

  // The servers' own metrics; the simulator does not expose them.
  prometheus::Registry registry;
  std::unique_ptr<http::Server> apiserver;
  std::unique_ptr<http::Server> kubelet_server;  // every kubelet, node i on listener i

  // Everything below is guarded by mu.
  mutable std::mutex mu;
  bool started = false;
  bool started_hollow = false;  // the nodes are registered in a real API server
  bool stopping = false;
  // The resourceVersion of the state at Start() (see InitialResourceVersion()); nodes keep it.
  uint64_t initial_version = 0;
  uint64_t resource_version = 0;
  std::vector<int64_t> generation;     // per global slot
  std::vector<int> restarts;           // per global slot: sum over containers
  std::vector<uint64_t> slot_version;  // per global slot
  std::deque<WatchEvent> history;
  uint64_t oldest_retained = 1;
  // LimitRanges and ConfigMaps by "namespace/name", each with the resourceVersion of its
  // last change.
  std::map<std::string, std::pair<StoredObject, uint64_t>> limit_ranges;
  std::map<std::string, std::pair<StoredObject, uint64_t>> config_maps;
  std::vector<std::shared_ptr<Stream>> streams;
  std::vector<Parked> parked;  // "timeout" fault: never answered
  uint64_t garbage_counter = 0;

  std::condition_variable cv;
  std::thread ticker;
  std::thread streamer;

  int Slot(int node, int slot) const { return node * options.model.pods_per_node + slot; }

  // The PEM of the apiserver's CA with apiserver_tls, else "".
  std::string ApiserverCaPem() const {
    if (apiserver_tls.ca_cert.empty()) return "";
    std::ifstream in(apiserver_tls.ca_cert, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  // Registers every node, with its kubelet's address and port, in options.hollow_apiserver
  // and starts renewing their Leases.
  absl::Status RegisterHollowNodes() {
    ApiClientOptions client;
    client.url = options.hollow_apiserver;
    client.ca_file = options.hollow_ca_file;
    client.client_cert_file = options.hollow_client_cert_file;
    client.client_key_file = options.hollow_client_key_file;
    client.token_file = options.hollow_token_file;
    absl::StatusOr<std::unique_ptr<ApiClient>> made = ApiClient::Create(std::move(client));
    if (!made.ok()) {
      return absl::InvalidArgumentError(
          StrCat("--hollow-apiserver: ", StdView(made.status().message())));
    }
    hollow_client = *std::move(made);
    std::vector<HollowNode> nodes;
    const Timestamp now = clock.Now();
    for (int i = 0; i < model->node_count(); ++i) {
      HollowNode node{model->node(i).name, ""};
      AppendNodeForRegistration(node.node_json, model->node(i),
                                {kubelet_hosts[i], kubelet_ports[i]}, now);
      nodes.push_back(std::move(node));
    }
    hollow = std::make_unique<HollowNodes>(*hollow_client, std::move(nodes), clock,
                                           options.hollow_lease_renew_interval);
    if (absl::Status s = hollow->Register(); !s.ok()) {
      return absl::UnavailableError(StrCat("--hollow-apiserver: ", StdView(s.message())));
    }
    hollow->Start();
    hollow_pods = std::make_unique<HollowPods>(*hollow_client, *model, clock);
    if (absl::Status s = hollow_pods->CreateWorkloads(); !s.ok()) {
      return absl::UnavailableError(StrCat("--hollow-apiserver: ", StdView(s.message())));
    }
    hollow_pods->Start();
    return absl::OkStatus();
  }

  void RemoveCreatedTlsDir() {
    if (created_tls_dir.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(created_tls_dir, ignored);
    created_tls_dir.clear();
  }

  Timestamp Now() const { return model->Quantize(clock.Now()); }

  std::string PodJson(const PodInfo& pod, Timestamp now, uint64_t rv) const {
    std::string out;
    AppendPodJson(out, *model, pod, now, rv);
    return out;
  }

  std::string NodeJson(int i) const {
    std::string out;
    AppendNodeJson(out, model->node(i), {kubelet_hosts[i], kubelet_ports[i]}, initial_version);
    return out;
  }

  // ---- watch events --------------------------------------------------------------

  void PublishLocked(std::string_view type, const PodInfo& pod, Timestamp now) {
    const uint64_t rv = ++resource_version;
    slot_version[Slot(pod.node, pod.slot)] = rv;
    RecordLocked({rv, pod.namespace_name, model->node(pod.node).name,
                  RenderWatchEvent(type, PodJson(pod, now, rv))});
  }

  // Sends an event to the watches it concerns and keeps it for resuming watches.
  void RecordLocked(WatchEvent ev) {
    for (const auto& s : streams) {
      if (Matches(*s, ev)) Send(*s, ev.line);
    }
    history.push_back(std::move(ev));
    while (history.size() > options.watch_history) {
      oldest_retained = history.front().resource_version + 1;
      history.pop_front();
    }
  }

  static bool Matches(const Stream& s, const WatchEvent& ev) {
    return s.kind == ev.kind &&
           (s.namespace_filter.empty() || s.namespace_filter == ev.namespace_name) &&
           (s.node_filter.empty() || s.node_filter == ev.node_name);
  }

  void TickLocked() {
    const Timestamp now = Now();
    const int nodes = model->node_count();
    const int pods = model->pods_per_node();
    for (int n = 0; n < nodes; ++n) {
      for (int p = 0; p < pods; ++p) {
        const int slot = Slot(n, p);
        const int64_t g = model->Generation(n, p, now);
        if (g != generation[slot]) {
          const PodInfo old_pod = model->PodOfGeneration(n, p, generation[slot]);
          PublishLocked("DELETED", old_pod, now);
          generation[slot] = g;
          const PodInfo pod = model->PodOfGeneration(n, p, g);
          PublishLocked("ADDED", pod, now);
          restarts[slot] = RestartsAt(n, p, now);
          continue;
        }
        const int r = RestartsAt(n, p, now);
        if (r != restarts[slot]) {
          restarts[slot] = r;
          PublishLocked("MODIFIED", model->PodOfGeneration(n, p, g), now);
        }
      }
    }
  }

  int RestartsAt(int n, int p, Timestamp now) const {
    int total = 0;
    for (int c = 0; c < options.model.containers_per_pod; ++c) {
      total += model->RestartCount(n, p, c, now);
    }
    return total;
  }

  // ---- streams -------------------------------------------------------------------

  // ---- streams -------------------------------------------------------------------

  std::shared_ptr<Stream> OpenStream(Stream::Kind kind, Duration lifetime) {
    auto s = std::make_shared<Stream>();
    s->kind = kind;
    s->deadline = clock.MonotonicNow() + lifetime;
    return s;
  }

  // A 200 whose body is `s`: when the server starts it, `initial` is written and the
  // stream joins the serviced ones (or ends at once while stopping).
  Response StreamResponse(const std::shared_ptr<Stream>& s, const char* content_type,
                          std::string initial) {
    Response response = Reply(200, "", content_type);
    response.stream = [this, s,
                       initial = std::move(initial)](std::shared_ptr<StreamWriter> writer) mutable {
      std::lock_guard<std::mutex> lock(mu);
      s->writer = std::move(writer);
      Send(*s, initial);
      s->writer->Flush();
      if (stopping) {
        s->writer->Finish();
        return;
      }
      streams.push_back(s);
    };
    return response;
  }

  // Runs every few milliseconds: tops up oversized bodies, drips slow ones, ends streams
  // whose time is up or whose reader went away.
  void ServiceStreams() {
    static const std::string kFiller(1 << 20, 'x');
    std::vector<std::shared_ptr<Stream>> closing;
    {
      std::lock_guard<std::mutex> lock(mu);
      const Timestamp mono = clock.MonotonicNow();
      for (auto it = streams.begin(); it != streams.end();) {
        Stream& s = **it;
        bool done = mono >= s.deadline || s.writer->closed();
        if (!done && s.kind == Stream::Kind::kOversized) {
          while (s.remaining > 0 && s.writer->queued_bytes() < kOversizedQueued) {
            const size_t n = std::min(s.remaining, kFiller.size());
            Send(s, std::string_view(kFiller).substr(0, n));
            s.remaining -= n;
          }
          done = s.remaining == 0;
        } else if (!done && s.kind == Stream::Kind::kSlowdrip) {
          if (RealClock::Get().MonotonicNow() >= s.next_drip) {
            const size_t n = std::min<size_t>(4, s.payload.size() - s.sent);
            Send(s, std::string_view(s.payload).substr(s.sent, n));
            s.sent += n;
            s.next_drip = RealClock::Get().MonotonicNow() + std::chrono::seconds(1);
          }
          done = s.sent >= s.payload.size();
        } else if (!done) {
          done = s.writer->queued_bytes() > kWatchBacklogLimit;  // nobody is reading
        }
        if (done) {
          closing.push_back(*it);
          it = streams.erase(it);
        } else {
          ++it;
        }
      }
      std::erase_if(parked, [](const Parked& p) { return p.writer->closed(); });
    }
    for (auto& s : closing) s->writer->Finish();
  }

  // ---- kubelets ------------------------------------------------------------------

  Response HandleKubelet(int node, const Request& req) {
    if (!options.kubelet_token.empty()) {
      const std::optional<std::string_view> auth = req.Header("Authorization");
      if (!auth || *auth != "Bearer " + options.kubelet_token) {
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
    const Fault fault = faults.Get(model->node(node).name);
    switch (fault) {
      case Fault::kTimeout: {
        std::lock_guard<std::mutex> lock(mu);
        if (!stopping) return Park();
        break;
      }
      case Fault::kHttp500:
        return Reply(500, "Internal Error: failed to get node info\n", "text/plain; charset=utf-8");
      case Fault::kGarbage: {
        uint64_t h;
        {
          std::lock_guard<std::mutex> lock(mu);
          h = Mix(options.model.seed, ++garbage_counter, node);
        }
        std::string bytes(4096, '\0');
        for (size_t i = 0; i < bytes.size(); ++i) {
          if (i % 8 == 0) h = Mix(h, i);
          bytes[i] = static_cast<char>(h >> (8 * (i % 8)));
        }
        return Reply(200, std::move(bytes), summary ? kJson : kPromText);
      }
      case Fault::kOversized: {
        auto s = OpenStream(Stream::Kind::kOversized, std::chrono::minutes(5));
        std::string start = summary ? "{\"node\":{\"nodeName\":\"" : "# HELP ";
        s->remaining = kOversizedBytes - start.size();
        return StreamResponse(s, summary ? kJson : kPromText, std::move(start));
      }
      case Fault::kNone:
      case Fault::kTruncated:
      case Fault::kSlowdrip:
      case Fault::kZeroTimestamp:
        break;
    }
    NodeSnapshot snap = model->Snapshot(node, clock.Now());
    // Hollow nodes report the real pods bound to them.
    if (hollow_pods) hollow_pods->Rewrite(node, snap);
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
      auto s = OpenStream(Stream::Kind::kSlowdrip, std::chrono::minutes(10));
      s->payload = std::move(body);
      return StreamResponse(s, type, "");
    }
    return Reply(200, std::move(body), type);
  }

  // The "timeout" fault: no answer while the client waits; a 503 if the simulator stops
  // first. The server sends no head before the writer's first write. Requires mu.
  Response Park() {
    Response response = ReplyError(ApiError::ServiceUnavailable("shutting down"));
    std::string answer = std::move(response.body);
    response.body.clear();
    response.stream = [this, answer = std::move(answer)](std::shared_ptr<StreamWriter> writer) {
      std::lock_guard<std::mutex> lock(mu);
      if (stopping) {
        writer->Write(answer);
        writer->Finish();
        return;
      }
      parked.push_back(Parked{std::move(writer), answer});
    };
    return response;
  }

  Response HandleApi(const Request& req) {
    try {
      return RouteApi(req);
    } catch (const std::exception& e) {
      return ReplyError(ApiError::InternalError(e.what()));
    }
  }

  Response RouteApi(const Request& req) {
    const std::string path(req.path);
    const auto query = SplitQuery(req.query);
    std::vector<std::string> parts = SplitPath(path);

    const UserInfo* user = nullptr;
    if (users && !IsPublicPath(path)) {
      user = users->Authenticate(BearerToken(req));
      if (user == nullptr) {
        return ReplyError(ApiError::Unauthorized());
      }
      if (!IsMetricsGroupPath(path) || options.authorize_proxied_requests) {
        const RequestInfo info = ParseRequestInfo(
            std::string(req.method), PercentDecodeLenient(path, /*plus_is_space=*/false),
            std::string(req.query));
        if (!users->Authorize(user->name, user->groups, info).allowed) {
          return ReplyError(ForbiddenError(user->name, info));
        }
      }
    }

    if (IsMetricsGroupPath(path)) {
      return Proxy(req, user);
    }
    if (users && (path == "/apis/authentication.k8s.io/v1/tokenreviews" ||
                  path == "/apis/authorization.k8s.io/v1/subjectaccessreviews")) {
      return Review(req, path);
    }
    if (parts.size() >= 2 && parts[0] == "sim" && parts[1] == "v1") {
      if (parts.size() == 6 && parts[2] == "namespaces" && parts[4] == "limitranges") {
        return ChangeStored(kLimitRanges, req, parts[3], parts[5]);
      }
      if (parts.size() == 6 && parts[2] == "namespaces" && parts[4] == "configmaps") {
        return ChangeStored(kConfigMaps, req, parts[3], parts[5]);
      }
      if (parts.size() == 6 && parts[2] == "namespaces" && parts[4] == "pods") {
        if (req.method != "DELETE") {
          return ReplyError(ApiError::MethodNotAllowed("", "pods", req.method));
        }
        return DeletePod(parts[3], parts[5]);
      }
      if (parts.size() >= 3 && (parts[2] == "podresources-faults" || parts[2] == "podresources")) {
        return PodResourcesControl(req, parts);
      }
      return Faults(req, parts);
    }
    if (req.method != "GET") {
      return ReplyError(
          ApiError(405, StatusReason::kMethodNotAllowed,
                   "the server does not allow this method on the requested resource"));
    }
    if (path == "/healthz" || path == "/readyz" || path == "/livez") {
      return Reply(200, "ok", "text/plain; charset=utf-8");
    }
    if (path == "/version") {
      return Reply(
          200,
          "{\"major\":\"1\",\"minor\":\"31\",\"gitVersion\":\"v1.31.4\",\"gitCommit\":"
          "\"kubestat-sim\",\"gitTreeState\":\"clean\",\"buildDate\":\"2026-01-01T00:00:00Z\","
          "\"goVersion\":\"go1.22.0\",\"compiler\":\"gc\",\"platform\":\"linux/amd64\"}",
          kJson);
    }
    if (path == "/api") {
      return Reply(200,
                   absl::StrCat("{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],"
                                "\"serverAddressByClientCIDRs\":[{\"clientCIDR\":\"0.0.0.0/0\","
                                "\"serverAddress\":\"",
                                apiserver_url.substr(apiserver_url.find("//") + 2), "\"}]}"),
                   kJson);
    }
    if (path == "/apis") {
      std::string groups;
      if (users) {
        groups = absl::StrCat(ApiGroupJson("authentication.k8s.io"), ",",
                              ApiGroupJson("authorization.k8s.io"));
      }
      if (backend) {
        if (!groups.empty()) groups += ",";
        groups +=
            // Both versions the backend serves, v1 preferred, as two APIService registrations
            // (v1.metrics.k8s.io, v1beta1.metrics.k8s.io) show them.
            "{\"name\":\"metrics.k8s.io\",\"versions\":[{\"groupVersion\":\"metrics.k8s.io/"
            "v1\",\"version\":\"v1\"},{\"groupVersion\":\"metrics.k8s.io/v1beta1\",\"version\":"
            "\"v1beta1\"}],\"preferredVersion\":{\"groupVersion\":\"metrics.k8s.io/v1\","
            "\"version\":\"v1\"}},"
            "{\"name\":\"metrics\",\"versions\":[{\"groupVersion\":\"metrics/v1alpha1\","
            "\"version\":\"v1alpha1\"}],\"preferredVersion\":{\"groupVersion\":"
            "\"metrics/v1alpha1\",\"version\":\"v1alpha1\"}}";
      }
      return Reply(200,
                   absl::StrCat("{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[",
                                groups, "]}"),
                   kJson);
    }
    if (users) {
      for (const auto& [group, resource, kind] :
           {std::tuple<std::string, std::string, std::string>{"authentication.k8s.io",
                                                              "tokenreviews", "TokenReview"},
            {"authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview"}}) {
        if (path == "/apis/" + group) {
          return Reply(200,
                       absl::StrCat("{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",",
                                    ApiGroupJson(group).substr(1)),
                       kJson);
        }
        if (path == "/apis/" + group + "/v1") {
          return Reply(200, ReviewResourceListJson(group, resource, kind), kJson);
        }
      }
    }
    if (path == "/api/v1") {
      return Reply(
          200,
          "{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":["
          "{\"name\":\"namespaces\",\"singularName\":\"namespace\",\"namespaced\":false,"
          "\"kind\":\"Namespace\",\"verbs\":[\"get\",\"list\"],\"shortNames\":[\"ns\"]},"
          "{\"name\":\"nodes\",\"singularName\":\"node\",\"namespaced\":false,\"kind\":"
          "\"Node\",\"verbs\":[\"get\",\"list\",\"watch\"],\"shortNames\":[\"no\"]},"
          "{\"name\":\"configmaps\",\"singularName\":\"configmap\",\"namespaced\":true,"
          "\"kind\":\"ConfigMap\",\"verbs\":[\"get\",\"list\",\"watch\"],\"shortNames\":"
          "[\"cm\"]},"
          "{\"name\":\"limitranges\",\"singularName\":\"limitrange\",\"namespaced\":true,"
          "\"kind\":\"LimitRange\",\"verbs\":[\"get\",\"list\",\"watch\"],\"shortNames\":"
          "[\"limits\"]},"
          "{\"name\":\"pods\",\"singularName\":\"pod\",\"namespaced\":true,\"kind\":\"Pod\","
          "\"verbs\":[\"get\",\"list\",\"watch\"],\"shortNames\":[\"po\"],\"categories\":"
          "[\"all\"]}]}",
          kJson);
    }
    if (parts.size() >= 3 && parts[0] == "api" && parts[1] == "v1") {
      if (parts[2] == "nodes" && parts.size() <= 4) {
        return Nodes(parts.size() == 4 ? parts[3] : "", query);
      }
      if (parts[2] == "pods" && parts.size() == 3) {
        return Pods("", "", query);
      }
      if (parts[2] == "limitranges" && parts.size() == 3) {
        return Stored(kLimitRanges, "", "", query);
      }
      if (parts[2] == "namespaces") {
        if (parts.size() <= 4) {
          return Namespaces(parts.size() == 4 ? parts[3] : "");
        }
        if (parts[4] == "pods" && parts.size() <= 6) {
          return Pods(parts[3], parts.size() == 6 ? parts[5] : "", query);
        }
        if (parts[4] == "limitranges" && parts.size() <= 6) {
          return Stored(kLimitRanges, parts[3], parts.size() == 6 ? parts[5] : "", query);
        }
        if (parts[4] == "configmaps" && parts.size() <= 6) {
          return Stored(kConfigMaps, parts[3], parts.size() == 6 ? parts[5] : "", query);
        }
      }
    }
    return ReplyError(ApiError(404, StatusReason::kNotFound, kNotFoundMessage));
  }

  bool IsWatch(const std::map<std::string, std::string>& query) const {
    const std::string w = QueryParam(query, "watch");
    return w == "true" || w == "1";
  }

  Duration WatchLifetime(const std::map<std::string, std::string>& query) const {
    int64_t seconds = 0;
    const std::string t = QueryParam(query, "timeoutSeconds");
    if (!t.empty()) seconds = std::strtoll(t.c_str(), nullptr, 10);
    if (seconds <= 0 || seconds > 3600) seconds = 1800;
    return std::chrono::seconds(seconds);
  }

  Response Namespaces(const std::string& name) {
    auto one = [](std::string_view ns) {
      return absl::StrCat("{\"kind\":\"Namespace\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"",
                          std::string(ns),
                          "\",\"resourceVersion\":\"1\",\"creationTimestamp\":"
                          "\"2026-01-01T00:00:00Z\"},\"status\":{\"phase\":\"Active\"}}");
    };
    if (!name.empty()) {
      for (std::string_view ns : kNamespaces) {
        if (ns == name) {
          return Reply(200, one(ns), kJson);
        }
      }
      return ReplyError(ApiError::NotFound("", "namespaces", name));
    }
    std::string out =
        "{\"kind\":\"NamespaceList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
        "\"1\"},\"items\":[";
    bool first = true;
    for (std::string_view ns : kNamespaces) {
      if (!first) out += ",";
      first = false;
      out += one(ns);
    }
    out += "]}";
    return Reply(200, std::move(out), kJson);
  }

  Response Nodes(const std::string& name, const std::map<std::string, std::string>& query) {
    if (!name.empty()) {
      const int i = model->NodeIndex(name);
      if (i < 0) {
        return ReplyError(ApiError::NotFound("", "nodes", name));
      }
      return Reply(200, NodeJson(i), kJson);
    }
    if (IsWatch(query)) {
      auto s = OpenStream(Stream::Kind::kNodeWatch, WatchLifetime(query));
      const std::string rv = QueryParam(query, "resourceVersion");
      std::string initial;
      if (rv.empty() || rv == "0") {
        for (int i = 0; i < model->node_count(); ++i) {
          initial += RenderWatchEvent("ADDED", NodeJson(i));
        }
      } else if (std::optional<std::string> expired =
                     ExpiredWatchEvent(std::strtoull(rv.c_str(), nullptr, 10))) {
        // Nodes do not change while the simulator runs: a known version has no events to
        // replay, an unknown one (another simulator's) makes the client list again.
        Response response = Reply(200, "", kJson);
        response.stream = [event = *std::move(expired)](std::shared_ptr<StreamWriter> writer) {
          writer->Write(event);
          writer->Finish();
        };
        return response;
      }
      return StreamResponse(s, kJson, std::move(initial));
    }
    Response bad_selector;
    const std::optional<LabelSelector> selector = ListSelector(query, &bad_selector);
    if (!selector) return bad_selector;
    std::string out = absl::StrCat(
        "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"",
        CurrentVersion(), "\"},\"items\":[");
    bool first = true;
    for (int i = 0; i < model->node_count(); ++i) {
      if (!LabelsMatch(*selector, model->node(i).labels)) continue;
      if (!first) out += ",";
      first = false;
      out += NodeJson(i);
    }
    out += "]}";
    return Reply(200, std::move(out), kJson);
  }

  uint64_t CurrentVersion() const {
    std::lock_guard<std::mutex> lock(mu);
    return resource_version;
  }

  // The ERROR event (410 Expired) for a watch from `from`, or std::nullopt when the history
  // holds every event after it. A version older than the history, or newer than any handed
  // out (one of an earlier simulator, or made up), is not known here: as kube-apiserver
  // does for a version its watch cache no longer holds, the client is told to list again.
  std::optional<std::string> ExpiredWatchEvent(uint64_t from) const {
    std::lock_guard<std::mutex> lock(mu);
    return ExpiredWatchEventLocked(from);
  }

  std::optional<std::string> ExpiredWatchEventLocked(uint64_t from) const {
    if (from + 1 >= oldest_retained && from <= resource_version) return std::nullopt;
    const std::string message =
        from > resource_version
            ? absl::StrCat("too large resource version: ", from, ", current: ", resource_version)
            : absl::StrCat("too old resource version: ", from, " (", oldest_retained - 1, ")");
    return RenderWatchEvent("ERROR", ApiError::Expired(message).ToJson());
  }

  // The request's labelSelector (empty when absent), applied to lists; watches ignore it.
  // On a malformed selector, sets `error` to a 400 with the parser's message, as the
  // kube-apiserver does, and returns std::nullopt.
  static std::optional<LabelSelector> ListSelector(const std::map<std::string, std::string>& query,
                                                   Response* error) {
    absl::StatusOr<LabelSelector> selector =
        LabelSelector::Parse(PercentDecodeLenient(QueryParam(query, "labelSelector"), true));
    if (!selector.ok()) {
      *error = ReplyError(ApiError::BadRequest(std::string(selector.status().message())));
      return std::nullopt;
    }
    return *std::move(selector);
  }

  // Whether labels (sorted by key) satisfy the selector.
  static bool LabelsMatch(const LabelSelector& selector,
                          const std::vector<std::pair<std::string, std::string>>& labels) {
    return selector.Matches(
        LabelLookup([&labels](const std::string& key) -> std::optional<std::string_view> {
          auto it = std::lower_bound(
              labels.begin(), labels.end(), key,
              [](const auto& label, const std::string& k) { return label.first < k; });
          if (it == labels.end() || it->first != key) return std::nullopt;
          return std::string_view(it->second);
        }));
  }

  // The value a "<field>=X" field selector gives `field`, "" for none. Other field
  // selectors are accepted and ignored.
  static std::string FieldFilter(const std::map<std::string, std::string>& query,
                                 std::string_view field) {
    const std::string fs = PercentDecodeLenient(QueryParam(query, "fieldSelector"), true);
    for (const std::string& prefix : {StrCat(field, "="), StrCat(field, "==")}) {
      const size_t at = fs.find(prefix);
      if (at != std::string::npos) {
        std::string v = fs.substr(at + prefix.size());
        if (!v.empty() && v[0] == '=') v.erase(0, 1);
        return v.substr(0, v.find(','));
      }
    }
    return "";
  }

  Response Pods(const std::string& ns, const std::string& name,
                const std::map<std::string, std::string>& query) {
    const Timestamp now = Now();
    const std::string node_filter = FieldFilter(query, "spec.nodeName");
    std::vector<std::pair<PodInfo, uint64_t>> pods;
    uint64_t list_version;
    {
      std::lock_guard<std::mutex> lock(mu);
      list_version = resource_version;
      for (int n = 0; n < model->node_count(); ++n) {
        if (!node_filter.empty() && model->node(n).name != node_filter) continue;
        for (int p = 0; p < model->pods_per_node(); ++p) {
          const int slot = Slot(n, p);
          PodInfo pod = model->PodOfGeneration(n, p, generation[slot]);
          if (!ns.empty() && pod.namespace_name != ns) continue;
          if (!name.empty() && pod.name != name) continue;
          pods.emplace_back(std::move(pod), slot_version[slot]);
        }
      }
    }
    if (!name.empty()) {
      if (pods.empty()) {
        return ReplyError(ApiError::NotFound("", "pods", name));
      } else {
        return Reply(200, PodJson(pods[0].first, now, pods[0].second), kJson);
      }
    }
    if (IsWatch(query)) return WatchPods(ns, node_filter, query, pods, list_version, now);
    Response bad_selector;
    const std::optional<LabelSelector> selector = ListSelector(query, &bad_selector);
    if (!selector) return bad_selector;
    std::string out = absl::StrCat(
        "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"",
        list_version, "\"},\"items\":[");
    bool first = true;
    for (const auto& [pod, rv] : pods) {
      if (!LabelsMatch(*selector, pod.labels)) continue;
      if (!first) out += ",";
      first = false;
      AppendPodJson(out, *model, pod, now, rv);
    }
    out += "]}";
    return Reply(200, std::move(out), kJson);
  }

  // A pod watch. Without a resourceVersion the pods listed at `list_version` come first as
  // ADDED events, then what happened after `list_version`; from a resourceVersion, the
  // retained events after it (410 in an ERROR event when it is older than the history).
  Response WatchPods(const std::string& ns, const std::string& node_filter,
                     const std::map<std::string, std::string>& query,
                     const std::vector<std::pair<PodInfo, uint64_t>>& current,
                     uint64_t list_version, Timestamp now) {
    return WatchFrom(Stream::Kind::kPodWatch, ns, node_filter, query, list_version, [&] {
      std::string initial;
      for (const auto& [pod, rv] : current) {
        initial += RenderWatchEvent("ADDED", PodJson(pod, now, rv));
      }
      return initial;
    });
  }

  // A watch of pods or LimitRanges: without a resourceVersion, initial() (the ADDED events
  // of the objects listed at `list_version`) first, then what happened after it; from a
  // resourceVersion, the retained events after it (410 in an ERROR event when it is older
  // than the history).
  template <typename Initial>
  Response WatchFrom(Stream::Kind kind, const std::string& ns, const std::string& node_filter,
                     const std::map<std::string, std::string>& query, uint64_t list_version,
                     const Initial& initial_events) {
    auto s = OpenStream(kind, WatchLifetime(query));
    s->namespace_filter = ns;
    s->node_filter = node_filter;
    const std::string rv_text = QueryParam(query, "resourceVersion");
    uint64_t from = std::strtoull(rv_text.c_str(), nullptr, 10);
    std::string initial;
    if (rv_text.empty() || from == 0) {
      // No version: the current state as ADDED events first, as the apiserver does.
      initial = initial_events();
      from = list_version;
    }
    Response response = Reply(200, "", kJson);
    response.stream = [this, s, from,
                       initial = std::move(initial)](std::shared_ptr<StreamWriter> writer) {
      std::lock_guard<std::mutex> lock(mu);
      s->writer = std::move(writer);
      if (std::optional<std::string> expired = ExpiredWatchEventLocked(from)) {
        Send(*s, *expired);
        s->writer->Finish();
        return;
      }
      Send(*s, initial);
      for (const WatchEvent& ev : history) {
        if (ev.resource_version > from && Matches(*s, ev)) Send(*s, ev.line);
      }
      s->writer->Flush();
      if (stopping) {
        s->writer->Finish();
        return;
      }
      streams.push_back(s);
    };
    return response;
  }

  // ---- LimitRanges and ConfigMaps -----------------------------------------------------

  std::map<std::string, std::pair<StoredObject, uint64_t>>& StoreOf(const StoredKind& kind) {
    return kind.kind == kLimitRanges.kind ? limit_ranges : config_maps;
  }
  static Stream::Kind WatchKindOf(const StoredKind& kind) {
    return kind.kind == kLimitRanges.kind ? Stream::Kind::kLimitRangeWatch
                                          : Stream::Kind::kConfigMapWatch;
  }

  // A list (fieldSelector metadata.name=X narrows it, as RBAC's resourceNames need), a get
  // or a watch of `kind` in `ns` ("": every namespace).
  Response Stored(const StoredKind& kind, const std::string& ns, const std::string& name,
                  const std::map<std::string, std::string>& query) {
    const std::string named = name.empty() ? FieldFilter(query, "metadata.name") : name;
    std::vector<std::pair<StoredObject, uint64_t>> items;
    uint64_t list_version;
    {
      std::lock_guard<std::mutex> lock(mu);
      list_version = resource_version;
      for (const auto& [key, entry] : StoreOf(kind)) {
        if (!ns.empty() && entry.first.namespace_name != ns) continue;
        if (!named.empty() && entry.first.name != named) continue;
        items.push_back(entry);
      }
    }
    if (!name.empty()) {
      if (items.empty())
        return ReplyError(ApiError::NotFound("", std::string(kind.resource), name));
      std::string out;
      AppendStoredObjectJson(out, kind, items[0].first, items[0].second);
      return Reply(200, std::move(out), kJson);
    }
    if (IsWatch(query)) {
      return WatchFrom(WatchKindOf(kind), ns, named, query, list_version, [&] {
        std::string initial;
        for (const auto& [object, rv] : items) {
          std::string json;
          AppendStoredObjectJson(json, kind, object, rv);
          initial += RenderWatchEvent("ADDED", json);
        }
        return initial;
      });
    }
    std::string out =
        StrCat("{\"kind\":\"", kind.kind, "List\",\"apiVersion\":\"v1\",\"metadata\":{",
               "\"resourceVersion\":\"", list_version, "\"},\"items\":[");
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out += ",";
      AppendStoredObjectJson(out, kind, items[i].first, items[i].second);
    }
    out += "]}";
    return Reply(200, std::move(out), kJson);
  }

  // PUT /sim/v1/namespaces/{ns}/{limitranges|configmaps}/{name} creates or replaces one (the
  // body: the object, or its spec or data), DELETE removes it; watchers get ADDED, MODIFIED
  // or DELETED. The answer is the object.
  Response ChangeStored(const StoredKind& kind, const Request& req, const std::string& ns,
                        const std::string& name) {
    const std::string resource(kind.resource);
    if (req.method != "PUT" && req.method != "DELETE") {
      return ReplyError(ApiError::MethodNotAllowed("", resource, std::string(req.method)));
    }
    std::string content;
    if (req.method == "PUT") {
      absl::StatusOr<std::string> body = ReadBody(req, kReviewBodyLimit);
      if (!body.ok()) return ReplyError(ApiError::FromStatus(body.status()));
      absl::StatusOr<std::string> parsed = ParseStoredContent(kind, *body);
      if (!parsed.ok()) {
        return ReplyError(ApiError::BadRequest(std::string(parsed.status().message())));
      }
      content = *std::move(parsed);
    }
    std::lock_guard<std::mutex> lock(mu);
    std::map<std::string, std::pair<StoredObject, uint64_t>>& store = StoreOf(kind);
    const std::string key = ns + "/" + name;
    auto it = store.find(key);
    std::string type = "ADDED";
    StoredObject object{ns, name, "", content, clock.Now()};
    if (req.method == "DELETE") {
      if (it == store.end()) return ReplyError(ApiError::NotFound("", resource, name));
      object = it->second.first;
      store.erase(it);
      type = "DELETED";
    } else if (it != store.end()) {
      object.uid = it->second.first.uid;
      object.created = it->second.first.created;
      type = "MODIFIED";
    } else {
      object.uid = StoredObjectUid(Mix(options.model.seed, HashString(key), resource_version));
    }
    const uint64_t rv = ++resource_version;
    if (type != "DELETED") store[key] = {object, rv};
    std::string json;
    AppendStoredObjectJson(json, kind, object, rv);
    RecordLocked({rv, ns, name, RenderWatchEvent(type, json), WatchKindOf(kind)});
    return Reply(200, std::move(json), kJson);
  }

  Response Faults(const Request& req, const std::vector<std::string>& parts) {
    if (parts.size() == 3 && parts[2] == "faults" && req.method == "GET") {
      JsonWriter w;
      w.BeginObject();
      for (const auto& [node, fault] : faults.All()) w.Member(node, FaultName(fault));
      w.EndObject();
      return Reply(200, w.Take(), kJson);
    }
    if (parts.size() == 4 && parts[2] == "faults" &&
        (req.method == "PUT" || req.method == "POST")) {
      const std::string node = parts[3];
      if (model->NodeIndex(node) < 0) {
        return ReplyError(ApiError::NotFound("", "nodes", node));
      }
      const std::string body(req.body);
      absl::StatusOr<Fault> fault = ParseFault(body.substr(0, 256));
      if (!fault.ok()) {
        return ReplyError(ApiError::BadRequest(std::string(fault.status().message())));
      }
      faults.Set(node, *fault);
      return Reply(200, absl::StrCat("{\"", node, "\":\"", std::string(FaultName(*fault)), "\"}"),
                   kJson);
    }
    return ReplyError(ApiError(404, StatusReason::kNotFound, kNotFoundMessage));
  }

  // /sim/v1/podresources-faults[/{node}] and /sim/v1/podresources/{node}/restart.
  Response PodResourcesControl(const Request& req, const std::vector<std::string>& parts) {
    if (!podresources) {
      return ReplyError(ApiError(404, StatusReason::kNotFound,
                                 "the simulator serves no podresources sockets "
                                 "(--podresources-dir is not set)"));
    }
    if (parts[2] == "podresources-faults" && parts.size() == 3 && req.method == "GET") {
      JsonWriter w;
      w.BeginObject();
      for (const auto& [node, fault] : podresources_faults.All()) {
        w.Member(node, PodResourcesFaultName(fault));
      }
      w.EndObject();
      return Reply(200, w.Take(), kJson);
    }
    const bool set = parts[2] == "podresources-faults" && parts.size() == 4 &&
                     (req.method == "PUT" || req.method == "POST");
    const bool restart = parts[2] == "podresources" && parts.size() == 5 && parts[4] == "restart" &&
                         req.method == "POST";
    if (!set && !restart) {
      return ReplyError(ApiError(404, StatusReason::kNotFound, kNotFoundMessage));
    }
    const std::string node = parts[3];
    const int index = model->NodeIndex(node);
    if (index < 0) return ReplyError(ApiError::NotFound("", "nodes", node));
    if (restart) {
      if (absl::Status st = podresources->Restart(index); !st.ok()) {
        return ReplyError(ApiError::InternalError(std::string(st.message())));
      }
      return Reply(200, absl::StrCat("{\"restarted\":\"", node, "\"}"), kJson);
    }
    absl::StatusOr<PodResourcesFault> fault =
        ParsePodResourcesFault(std::string(req.body).substr(0, 256));
    if (!fault.ok()) {
      return ReplyError(ApiError::BadRequest(std::string(fault.status().message())));
    }
    podresources_faults.Set(node, *fault);
    if (absl::Status st = podresources->Apply(index); !st.ok()) {
      return ReplyError(ApiError::InternalError(std::string(st.message())));
    }
    return Reply(
        200, absl::StrCat("{\"", node, "\":\"", std::string(PodResourcesFaultName(*fault)), "\"}"),
        kJson);
  }

  // Deletes the pod `name` listed now in `ns`: its watchers get DELETED for it, then ADDED
  // for its replacement, and the kubelet reports the replacement from now on. The answer
  // is the deleted pod, as kube-apiserver answers a deletion without grace period.
  Response DeletePod(const std::string& ns, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu);
    TickLocked();  // the pods listed now, so that `name` is looked up among them
    const Timestamp now = Now();
    for (int n = 0; n < model->node_count(); ++n) {
      for (int p = 0; p < model->pods_per_node(); ++p) {
        const int slot = Slot(n, p);
        const PodInfo pod = model->PodOfGeneration(n, p, generation[slot]);
        if (pod.namespace_name != ns || pod.name != name) continue;
        std::string body = PodJson(pod, now, slot_version[slot]);
        model->DeletePod(n, p, now);
        TickLocked();
        return Reply(200, std::move(body), kJson);
      }
    }
    return ReplyError(ApiError::NotFound("", "pods", name));
  }

  Response Review(const Request& req, const std::string& path) {
    if (req.method != "POST") {
      const bool tokens = path.find("tokenreviews") != std::string::npos;
      return ReplyError(ApiError::MethodNotAllowed(
          tokens ? "authentication.k8s.io" : "authorization.k8s.io",
          tokens ? "tokenreviews" : "subjectaccessreviews", std::string(req.method)));
    }
    const std::string type(req.Header("Content-Type").value_or(""));
    if (!type.empty() && type.rfind("application/json", 0) != 0) {
      return ReplyError(ApiError::UnsupportedMediaType(
          absl::StrCat("the body of the request was in an unknown format - "
                       "accepted media types include: application/json")));
    }
    absl::StatusOr<std::string> body = ReadBody(req, kReviewBodyLimit);
    if (!body.ok()) {
      return ReplyError(ApiError::FromStatus(body.status()));
    }
    absl::StatusOr<std::string> answer = path.find("tokenreviews") != std::string::npos
                                             ? ReviewToken(*body, *users)
                                             : ReviewSubjectAccess(*body, *users);
    if (!answer.ok()) {
      return ReplyError(ApiError::FromStatus(answer.status()));
    }
    return Reply(201, *std::move(answer), kJson);
  }

  // Forwards a request for the metrics groups to the backend as the aggregation layer
  // does; `user` is the authenticated caller (nullptr without a users file).
  Response Proxy(const Request& req, const UserInfo* user) {
    if (!backend) {
      return ReplyError(ApiError(404, StatusReason::kNotFound, kNotFoundMessage));
    }
    ProxiedRequest out;
    out.method = std::string(req.method);
    out.target = std::string(req.target);
    HeaderList incoming;
    for (const http::HeaderField& h : req.headers) incoming.emplace_back(h.name, h.value);
    out.headers = FrontProxyHeaders(incoming, user);
    absl::StatusOr<std::string> body = ReadBody(req, kProxiedBodyLimit);
    if (!body.ok()) {
      return ReplyError(ApiError::FromStatus(body.status()));
    }
    out.body = *std::move(body);
    auto sink = std::make_shared<ReplySink>();
    std::future<absl::StatusOr<ProxiedResponseHead>> head_future = sink->Head();
    backend->Forward(std::move(out), sink);
    // The backend's head comes within the proxy's step timeout, or with an error when
    // the proxy stops.
    absl::StatusOr<ProxiedResponseHead> head = head_future.get();
    if (!head.ok()) {
      return ReplyError(head.status().code() == absl::StatusCode::kUnavailable
                            ? ApiError::ServiceUnavailable(Sv(head.status().message()))
                            : ApiError::FromStatus(head.status()));
    }
    Response response;
    response.code = head->status;
    response.content_type.clear();
    for (auto& [name, value] : head->headers) {
      if (EqualsIgnoreCase(name, "Content-Type")) {
        response.content_type = value;
      } else if (EqualsIgnoreCase(name, "Content-Encoding")) {
        response.content_encoding = value;
      } else {
        response.headers.emplace_back(std::move(name), std::move(value));
      }
    }
    response.stream = [sink](std::shared_ptr<StreamWriter> writer) {
      sink->Attach(std::move(writer));
    };
    return response;
  }

  // ---- lifecycle -----------------------------------------------------------------
  // Starts a server for `handler` on host:port (0: the kernel picks), over TLS with
  // `tls_files`; `bound_port` receives the port.
  absl::Status StartServer(std::unique_ptr<http::Server>& out, const std::string& name,
                           const std::string& host, int port, const TlsFiles* tls_files,
                           int io_threads, int worker_threads, http::Handler handler,
                           int* bound_port, std::vector<http::ListenerAddress> more = {},
                           size_t max_connections = http::ServerLimits{}.max_connections) {
    absl::StatusOr<std::string> address = ListenAddress(host);
    if (!address.ok()) return address.status();
    http::ServerOptions o;
    o.address = *address;
    o.port = port;
    o.more_listeners = std::move(more);
    o.limits.max_connections = max_connections;
    o.io_threads = io_threads;
    o.worker_threads = worker_threads;
    o.metrics_name = name;
    // As the real components: no cap on requests per connection, no compression of their
    // own, and request bodies up to what the proxy forwards.
    o.limits.max_requests_per_connection = 0;
    o.limits.max_body_bytes = kProxiedBodyLimit;
    o.compression.enabled = false;
    o.tls.enabled = tls_files != nullptr;
    if (tls_files != nullptr) {
      o.tls.cert_file = tls_files->server_cert;
      o.tls.key_file = tls_files->server_key;
    }
    auto server = std::make_unique<http::Server>(std::move(o), std::move(handler), registry,
                                                 RealClock::Get());
    if (absl::Status st = server->Start(); !st.ok()) return st;
    *bound_port = server->port();
    out = std::move(server);
    return absl::OkStatus();
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
  absl::StatusOr<ClusterModel> model = ClusterModel::Create(s.options.model);
  if (!model.ok()) return model.status();
  s.model.emplace(*std::move(model));
  for (const auto& [node, fault] : s.options.faults) {
    if (s.model->NodeIndex(node) < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--faults: no node called ", node));
    }
    s.faults.Set(node, fault);
  }
  for (const auto& [node, fault] : s.options.podresources_faults) {
    if (s.model->NodeIndex(node) < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--podresources-faults: no node called ", node));
    }
    s.podresources_faults.Set(node, fault);
  }
  const int nodes = s.model->node_count();
  for (int i = 0; i < nodes; ++i) s.kubelet_hosts.push_back(KubeletHostFor(s.options, i));
  s.kubelet_ports.assign(nodes, 0);

  if (!s.options.users_file.empty()) {
    absl::StatusOr<UsersFile> users = UsersFile::Load(s.options.users_file);
    if (!users.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--users-file: ", users.status().message()));
    }
    if (!s.options.kubeconfig_user.empty() && users->Find(s.options.kubeconfig_user) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("--kubeconfig-user: no user \"",
                                                     s.options.kubeconfig_user, "\" in ",
                                                     s.options.users_file));
    }
    s.users.emplace(*std::move(users));
  }

  // Certificates: the kubelets' with tls, the front-proxy ones with a metrics backend.
  const bool front_proxy = !s.options.metrics_backend.empty();
  std::string dir = s.options.tls_dir;
  if ((s.options.tls || front_proxy || s.options.apiserver_tls) && dir.empty()) {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "kubestat-sim-tls-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return absl::InternalError("cannot create a temp dir");
    dir = tmpl;
    s.created_tls_dir = tmpl;
  }
  auto fail_early = [&s](absl::Status st) {
    s.RemoveCreatedTlsDir();
    return st;
  };
  if (s.options.tls) {
    std::vector<std::string> ips = s.kubelet_hosts;
    std::sort(ips.begin(), ips.end());
    ips.erase(std::unique(ips.begin(), ips.end()), ips.end());
    absl::StatusOr<TlsFiles> files = GenerateTls(dir, ips);
    if (!files.ok()) return fail_early(files.status());
    s.tls = *files;
    s.ca_path = s.tls.ca_cert;
  }
  if (s.options.apiserver_tls) {
    std::vector<std::string> names = {"localhost"};
    std::vector<std::string> ips = {"127.0.0.1", "::1"};
    const std::string& address = s.options.apiserver_address;
    boost::system::error_code not_ip;
    boost::asio::ip::make_address(address, not_ip);
    if (not_ip) {
      names.push_back(address);
    } else if (address != "127.0.0.1" && address != "0.0.0.0" && address != "::") {
      ips.push_back(address);
    }
    absl::StatusOr<TlsFiles> files = GenerateApiserverTls(dir, names, ips);
    if (!files.ok()) return fail_early(files.status());
    s.apiserver_tls = *files;
  }
  if (front_proxy) {
    absl::StatusOr<FrontProxyFiles> files = GenerateFrontProxy(dir);
    if (!files.ok()) return fail_early(files.status());
    s.front_proxy = *files;
    BackendProxyOptions proxy;
    proxy.url = s.options.metrics_backend;
    proxy.ca_file = s.options.metrics_backend_ca_file;
    proxy.insecure_skip_tls_verify = s.options.metrics_backend_insecure_skip_tls_verify;
    proxy.client_cert_file = s.front_proxy.client_cert;
    proxy.client_key_file = s.front_proxy.client_key;
    absl::StatusOr<std::unique_ptr<BackendProxy>> backend = BackendProxy::Create(proxy);
    if (!backend.ok()) return fail_early(backend.status());
    s.backend = *std::move(backend);
  }

  // Pod state as of now; later changes become watch events.
  const Timestamp now = s.Now();
  const int slots = nodes * s.options.model.pods_per_node;
  s.generation.resize(slots);
  s.restarts.resize(slots);
  s.initial_version = InitialResourceVersion(s.clock.Now());
  s.resource_version = s.initial_version;
  s.oldest_retained = s.initial_version + 1;
  s.slot_version.assign(slots, s.initial_version);
  if (front_proxy) {
    // As kube-apiserver publishes the front proxy's trust for the servers it aggregates.
    absl::StatusOr<std::string> ca = ReadFile(s.front_proxy.ca_cert, "front-proxy CA");
    if (!ca.ok()) return fail_early(ca.status());
    StoredObject trust = ExtensionAuthenticationConfigMap(*ca, s.clock.Now());
    std::string key = trust.namespace_name + "/" + trust.name;
    s.config_maps[std::move(key)] = {std::move(trust), s.initial_version};
  }
  if (s.options.default_limit_ranges) {
    for (StoredObject& lr : DefaultLimitRanges(s.clock.Now())) {
      std::string key = lr.namespace_name + "/" + lr.name;
      s.limit_ranges[std::move(key)] = {std::move(lr), s.initial_version};
    }
  }
  for (int n = 0; n < nodes; ++n) {
    for (int p = 0; p < s.options.model.pods_per_node; ++p) {
      s.generation[s.Slot(n, p)] = s.model->Generation(n, p, now);
      s.restarts[s.Slot(n, p)] = s.RestartsAt(n, p, now);
    }
  }

  auto fail = [this](absl::Status st) {
    Stop();
    return st;
  };
  s.started = true;
  if (!s.options.podresources_dir.empty()) {
    s.podresources = std::make_unique<PodResourcesSockets>(
        s.options.podresources_dir, s.options.podresources_slow_delay, *s.model, s.clock,
        s.podresources_faults);
    if (absl::Status status = s.podresources->Start(); !status.ok()) return fail(status);
  }
  const std::string kubelet_scheme = s.options.tls ? "https" : "http";
  // Every kubelet is one listener of one server (node i on listener i): threads and
  // descriptors do not grow with the nodes, only a listener and its connections do. A held
  // answer (the timeout fault) holds no thread.
  if (nodes > 0) {
    auto port_of = [&s](int i) {
      int port = s.options.kubelet_port;
      if (port != 0 && s.options.kubelet_address_mode == KubeletAddressMode::kPorts) port += i;
      return port;
    };
    std::vector<http::ListenerAddress> more;
    more.reserve(nodes - 1);
    for (int i = 1; i < nodes; ++i) {
      absl::StatusOr<std::string> address = ListenAddress(s.kubelet_hosts[i]);
      if (!address.ok()) {
        return fail(absl::UnavailableError(
            absl::StrCat("kubelet of ", s.model->node(i).name, ": ", address.status().message())));
      }
      more.push_back({*address, port_of(i)});
    }
    State* st = state_.get();
    if (absl::Status status = s.StartServer(
            s.kubelet_server, "kubelet", s.kubelet_hosts[0], port_of(0),
            s.options.tls ? &s.tls : nullptr, kKubeletIoThreads, kKubeletWorkers,
            [st](const Request& req) {
              return st->HandleKubelet(static_cast<int>(req.listener), req);
            },
            &s.kubelet_ports[0], std::move(more), kKubeletConnections);
        !status.ok()) {
      return fail(absl::UnavailableError(absl::StrCat("kubelets: ", status.message())));
    }
    for (int i = 1; i < nodes; ++i) s.kubelet_ports[i] = s.kubelet_server->port(i);
  }
  State* st = state_.get();
  if (!s.options.hollow_apiserver.empty()) {
    if (absl::Status status = s.RegisterHollowNodes(); !status.ok()) return fail(status);
    s.started_hollow = true;
  }
  int api_port = 0;
  if (s.started_hollow) {
    // No fake API server: the real one holds the nodes.
  } else if (absl::Status status = s.StartServer(
                 s.apiserver, "apiserver", s.options.apiserver_address, s.options.apiserver_port,
                 s.options.apiserver_tls ? &s.apiserver_tls : nullptr, 2, 8,
                 [st](const Request& req) { return st->HandleApi(req); }, &api_port);
             !status.ok()) {
    return fail(absl::UnavailableError(absl::StrCat("apiserver: ", status.message())));
  }
  if (!s.started_hollow) {
    s.apiserver_url = absl::StrCat(s.options.apiserver_tls ? "https://" : "http://",
                                   s.options.apiserver_address, ":", api_port);
  }

  if (!s.options.kubeconfig_out.empty()) {
    // Without a users file nobody checks the token; it only has to be there.
    KubeconfigContent content{s.apiserver_url, "kubestat-sim", "kubestat-sim", s.ApiserverCaPem()};
    if (s.users) {
      const UserEntry* user = s.options.kubeconfig_user.empty()
                                  ? &s.users->users().front()
                                  : s.users->Find(s.options.kubeconfig_user);
      content.user = user->info.name;
      content.token = user->token;
    }
    if (absl::Status st = WriteKubeconfig(s.options.kubeconfig_out, content); !st.ok()) {
      return fail(absl::InternalError(absl::StrCat("--kubeconfig-out: ", st.message())));
    }
    s.kubeconfig_path = s.options.kubeconfig_out;
  }
  if (s.users && !s.options.kubeconfig_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(s.options.kubeconfig_dir, ec);
    if (ec) {
      return fail(absl::InternalError(absl::StrCat("--kubeconfig-dir: cannot create ",
                                                   s.options.kubeconfig_dir, ": ", ec.message())));
    }
    for (const UserEntry& user : s.users->users()) {
      std::string file;
      for (char c : user.info.name) file += c == '/' ? "%2F" : std::string(1, c);
      const std::string path =
          (std::filesystem::path(s.options.kubeconfig_dir) / (file + ".kubeconfig")).string();
      KubeconfigContent content{s.apiserver_url, user.info.name, user.token, s.ApiserverCaPem()};
      if (absl::Status st = WriteKubeconfig(path, content); !st.ok()) {
        return fail(absl::InternalError(absl::StrCat("--kubeconfig-dir: ", st.message())));
      }
      s.user_kubeconfigs[user.info.name] = path;
    }
  }

  s.streamer = std::thread([st] {
    std::unique_lock<std::mutex> lock(st->mu);
    while (!st->stopping) {
      lock.unlock();
      st->ServiceStreams();
      lock.lock();
      st->cv.wait_for(lock, std::chrono::milliseconds(10), [st] { return st->stopping; });
    }
  });
  if (s.options.tick_interval > Duration::zero()) {
    s.ticker = std::thread([st] {
      std::unique_lock<std::mutex> lock(st->mu);
      while (!st->stopping) {
        st->cv.wait_for(lock, st->options.tick_interval, [st] { return st->stopping; });
        if (st->stopping) break;
        st->TickLocked();
      }
    });
  }
  return absl::OkStatus();
}

void Simulator::Stop() {
  State& s = *state_;
  std::vector<std::shared_ptr<Stream>> streams;
  std::vector<Parked> parked;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.started || s.stopping) return;
    s.stopping = true;
    streams.swap(s.streams);
    parked.swap(s.parked);
  }
  s.cv.notify_all();
  if (s.ticker.joinable()) s.ticker.join();
  if (s.streamer.joinable()) s.streamer.join();
  if (s.hollow_pods) s.hollow_pods->Stop();
  if (s.hollow) s.hollow->Stop();
  // Ends proxied answers still streaming, and answers handlers waiting for a backend.
  if (s.backend) s.backend->Stop();
  for (auto& stream : streams) stream->writer->Finish();
  for (auto& p : parked) {
    p.writer->Write(std::move(p.answer));
    p.writer->Finish();
  }
  // Closes every connection, open streams included, and joins the servers' threads.
  if (s.apiserver) s.apiserver->Stop();
  if (s.kubelet_server) s.kubelet_server->Stop();
  if (s.podresources) s.podresources->Stop();
  s.RemoveCreatedTlsDir();
}

void Simulator::Tick() {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->model) state_->TickLocked();
}

const ClusterModel& Simulator::model() const { return *state_->model; }
FaultTable& Simulator::faults() { return state_->faults; }
std::string Simulator::apiserver_url() const { return state_->apiserver_url; }
std::string Simulator::kubelet_host(int node) const { return state_->kubelet_hosts[node]; }
int Simulator::kubelet_port(int node) const { return state_->kubelet_ports[node]; }
std::string Simulator::kubelet_url(int node) const {
  return absl::StrCat(state_->options.tls ? "https://" : "http://", state_->kubelet_hosts[node],
                      ":", state_->kubelet_ports[node]);
}
std::string Simulator::ca_path() const { return state_->ca_path; }
std::string Simulator::kubeconfig_path() const { return state_->kubeconfig_path; }
std::string Simulator::front_proxy_ca_path() const { return state_->front_proxy.ca_cert; }
std::string Simulator::apiserver_ca_path() const { return state_->apiserver_tls.ca_cert; }
std::string Simulator::user_kubeconfig_path(const std::string& user) const {
  auto it = state_->user_kubeconfigs.find(user);
  return it == state_->user_kubeconfigs.end() ? "" : it->second;
}
uint64_t Simulator::resource_version() const { return state_->CurrentVersion(); }
PodResourcesFaultTable& Simulator::podresources_faults() { return state_->podresources_faults; }
absl::Status Simulator::ApplyPodResourcesFault(int node) {
  if (!state_->podresources) return absl::FailedPreconditionError("no --podresources-dir");
  return state_->podresources->Apply(node);
}
absl::Status Simulator::RestartPodResources(int node) {
  if (!state_->podresources) return absl::FailedPreconditionError("no --podresources-dir");
  return state_->podresources->Restart(node);
}
std::string Simulator::podresources_socket(int node) const {
  return state_->podresources ? state_->podresources->SocketPath(node) : "";
}

}  // namespace kubestat::sim
