#include "kubestat/sim/simulator.h"

#include <arpa/inet.h>
#include <cpprest/http_listener.h>
#include <cpprest/producerconsumerstream.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
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
#include "backend_proxy.h"
#include "kubeconfig.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/core/label_selector.h"
#include "kubestat/core/status.h"
#include "kubestat/sim/access_review.h"
#include "kubestat/sim/render.h"
#include "kubestat/sim/request_info.h"
#include "kubestat/sim/users.h"
#include "sim_hash.h"
#include "sim_strings.h"
#include "tls.h"

namespace kubestat::sim {

using web::http::http_request;
using web::http::http_response;
using web::http::methods;
using web::http::status_code;
using web::http::experimental::listener::http_listener;
using web::http::experimental::listener::http_listener_config;
using Buffer = concurrency::streams::producer_consumer_buffer<uint8_t>;

namespace {

constexpr const char* kJson = "application/json";
constexpr const char* kPromText = "text/plain; version=0.0.4; charset=utf-8";
constexpr size_t kOversizedBytes = size_t{64} << 20;
constexpr size_t kWatchBacklogLimit = size_t{16} << 20;
// Largest TokenReview / SubjectAccessReview body, and largest proxied request body.
constexpr size_t kReviewBodyLimit = size_t{64} << 10;
constexpr size_t kProxiedBodyLimit = size_t{64} << 20;
constexpr const char* kNotFoundMessage = "the server could not find the requested resource";
constexpr uint64_t kInitialResourceVersion = 1000;
constexpr std::string_view kNamespaces[] = {"analytics", "default", "kube-system", "monitoring",
                                            "payments",  "search",  "shop"};

std::string KubeletHostFor(const SimulatorOptions& o, int i) {
  return o.kubelet_address_mode == KubeletAddressMode::kPorts ? "127.0.0.1"
                                                              : KubeletLoopbackAddress(i);
}

// A free TCP port on `host` (the kernel's choice); 0 when none could be found.
int PickFreePort(const std::string& host) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  int port = 0;
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) == 1 &&
      ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    socklen_t len = sizeof(addr);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
  }
  ::close(fd);
  return port;
}

std::string QueryParam(const std::map<std::string, std::string>& q, const std::string& key) {
  auto it = q.find(key);
  return it == q.end() ? std::string() : it->second;
}

void ReplyError(const http_request& req, const ApiError& error) {
  req.reply(static_cast<status_code>(error.code()), error.ToJson(), kJson)
      .then([](pplx::task<void> t) {
        try {
          t.get();
        } catch (...) {
        }
      });
}

void Reply(const http_request& req, int code, std::string body, const char* content_type) {
  req.reply(static_cast<status_code>(code), std::move(body), content_type)
      .then([](pplx::task<void> t) {
        try {
          t.get();
        } catch (...) {
        }
      });
}

void WriteBuffer(Buffer& buf, std::string_view data) {
  if (data.empty()) return;
  buf.putn_nocopy(reinterpret_cast<const uint8_t*>(data.data()), data.size()).wait();
}

// cpprestsdk's asio listener runs the ssl context callback held in its config for every
// accepted connection, including one accepted while the listener closes, after close()
// returned; and a listener whose close() has not finished must not be destroyed. Such
// listeners are kept (reachable, a few hundred bytes each) until the process exits.
void RetireListener(std::unique_ptr<http_listener> listener) {
  static std::mutex mu;
  static auto* retired = new std::vector<std::unique_ptr<http_listener>>();
  std::lock_guard<std::mutex> lock(mu);
  retired->push_back(std::move(listener));
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
std::string BearerToken(const http_request& req) {
  const auto& headers = req.headers();
  auto it = headers.find("Authorization");
  if (it == headers.end()) return "";
  std::string_view value = it->second;
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
absl::StatusOr<std::string> ReadBody(const http_request& req, size_t limit) {
  const std::string too_large = absl::StrCat("limit is ", limit, " bytes");
  if (req.headers().content_length() > limit) {
    return ApiError::RequestEntityTooLarge(too_large).ToStatus();
  }
  std::string body;
  try {
    concurrency::streams::streambuf<uint8_t> in = req.body().streambuf();
    std::vector<uint8_t> chunk(64 * 1024);
    while (true) {
      const size_t n = in.getn(chunk.data(), chunk.size()).get();
      if (n == 0) break;
      body.append(reinterpret_cast<const char*>(chunk.data()), n);
      if (body.size() > limit) return ApiError::RequestEntityTooLarge(too_large).ToStatus();
    }
  } catch (const std::exception& e) {
    return ApiError::BadRequest(absl::StrCat("reading the request body: ", e.what())).ToStatus();
  }
  return body;
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

// Sends a proxied answer to the client as it arrives.
class ReplySink : public ProxyResponseSink {
 public:
  explicit ReplySink(http_request req) : req_(std::move(req)) {}

  void OnHead(absl::StatusOr<ProxiedResponseHead> head) override {
    if (!head.ok()) {
      const ApiError error = head.status().code() == absl::StatusCode::kUnavailable
                                 ? ApiError::ServiceUnavailable(Sv(head.status().message()))
                                 : ApiError::FromStatus(head.status());
      ReplyError(req_, error);
      return;
    }
    http_response resp(static_cast<status_code>(head->status));
    std::string content_type;
    for (const auto& [name, value] : head->headers) {
      if (utility::details::str_iequal(name, "Content-Type")) {
        content_type = value;
        continue;
      }
      resp.headers().add(name, value);
    }
    if (head->has_body) {
      if (head->content_length) {
        resp.set_body(buffer_.create_istream(), *head->content_length, content_type);
      } else {
        resp.set_body(buffer_.create_istream(), content_type);
      }
      if (content_type.empty()) resp.headers().remove("Content-Type");
    } else if (!content_type.empty()) {
      resp.headers().add("Content-Type", content_type);
    }
    req_.reply(resp).then([](pplx::task<void> t) {
      try {
        t.get();
      } catch (...) {
      }
    });
  }

  void OnData(std::string_view chunk) override { WriteBuffer(buffer_, chunk); }

  void OnEnd(absl::Status) override { buffer_.close(std::ios_base::out).wait(); }

 private:
  http_request req_;
  Buffer buffer_;
};

// A response body written over time: a watch, an oversized body or a slow drip.
struct Stream {
  enum class Kind { kPodWatch, kNodeWatch, kOversized, kSlowdrip };
  Kind kind;
  Buffer buffer;
  Timestamp deadline;  // monotonic; the stream is closed then
  // Watches: which pods (namespace and node; empty: all).
  std::string namespace_filter;
  std::string node_filter;
  // Oversized: bytes left to write. Slowdrip: the payload and how much was sent.
  size_t remaining = 0;
  std::string payload;
  size_t sent = 0;
  Timestamp next_drip;
};

struct WatchEvent {
  uint64_t resource_version;
  std::string namespace_name;
  std::string node_name;
  std::string line;  // the event, newline-terminated
};

}  // namespace

std::string KubeletLoopbackAddress(int index) {
  return absl::StrCat("127.1.", index / 250, ".", index % 250 + 1);
}

absl::Status SimulatorOptions::Validate() const {
  if (absl::Status s = model.Validate(); !s.ok()) return s;
  if (apiserver_port < 0 || apiserver_port > 65535) {
    return absl::InvalidArgumentError("--apiserver-port must be in [0, 65535]");
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
  return absl::OkStatus();
}

struct Simulator::State {
  State(SimulatorOptions o, const Clock& c) : options(std::move(o)), clock(c) {}

  SimulatorOptions options;
  const Clock& clock;
  std::optional<ClusterModel> model;
  FaultTable faults;
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
  std::optional<UsersFile> users;
  std::map<std::string, std::string> user_kubeconfigs;  // user name -> path

  std::unique_ptr<http_listener> apiserver;
  std::vector<std::unique_ptr<http_listener>> kubelets;

  // Everything below is guarded by mu.
  mutable std::mutex mu;
  bool started = false;
  bool stopping = false;
  uint64_t resource_version = kInitialResourceVersion;
  std::vector<int64_t> generation;     // per global slot
  std::vector<int> restarts;           // per global slot: sum over containers
  std::vector<uint64_t> slot_version;  // per global slot
  std::deque<WatchEvent> history;
  uint64_t oldest_retained = kInitialResourceVersion + 1;
  std::vector<std::shared_ptr<Stream>> streams;
  std::vector<http_request> parked;  // "timeout" fault: never answered
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
    AppendNodeJson(out, model->node(i), {kubelet_hosts[i], kubelet_ports[i]},
                   kInitialResourceVersion);
    return out;
  }

  // ---- watch events --------------------------------------------------------------

  void PublishLocked(std::string_view type, const PodInfo& pod, Timestamp now) {
    const uint64_t rv = ++resource_version;
    slot_version[Slot(pod.node, pod.slot)] = rv;
    WatchEvent ev{rv, pod.namespace_name, model->node(pod.node).name,
                  RenderWatchEvent(type, PodJson(pod, now, rv))};
    for (const auto& s : streams) {
      if (s->kind == Stream::Kind::kPodWatch && Matches(*s, ev)) WriteBuffer(s->buffer, ev.line);
    }
    history.push_back(std::move(ev));
    while (history.size() > options.watch_history) {
      oldest_retained = history.front().resource_version + 1;
      history.pop_front();
    }
  }

  static bool Matches(const Stream& s, const WatchEvent& ev) {
    return (s.namespace_filter.empty() || s.namespace_filter == ev.namespace_name) &&
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

  std::shared_ptr<Stream> OpenStream(Stream::Kind kind, Duration lifetime) {
    auto s = std::make_shared<Stream>();
    s->kind = kind;
    s->deadline = clock.MonotonicNow() + lifetime;
    return s;
  }

  void ReplyWithStream(const http_request& req, const std::shared_ptr<Stream>& s,
                       const char* content_type) {
    http_response resp(status_code(200));
    resp.set_body(s->buffer.create_istream(), content_type);
    req.reply(resp).then([](pplx::task<void> t) {
      try {
        t.get();
      } catch (...) {
      }
    });
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
        bool done = mono >= s.deadline;
        if (!done && s.kind == Stream::Kind::kOversized) {
          while (s.remaining > 0 && s.buffer.in_avail() < (size_t{4} << 20)) {
            const size_t n = std::min(s.remaining, kFiller.size());
            WriteBuffer(s.buffer, std::string_view(kFiller).substr(0, n));
            s.remaining -= n;
          }
          done = s.remaining == 0;
        } else if (!done && s.kind == Stream::Kind::kSlowdrip) {
          if (RealClock::Get().MonotonicNow() >= s.next_drip) {
            const size_t n = std::min<size_t>(4, s.payload.size() - s.sent);
            WriteBuffer(s.buffer, std::string_view(s.payload).substr(s.sent, n));
            s.sent += n;
            s.next_drip = RealClock::Get().MonotonicNow() + std::chrono::seconds(1);
          }
          done = s.sent >= s.payload.size();
        } else if (!done) {
          done = s.buffer.in_avail() > kWatchBacklogLimit;  // nobody is reading
        }
        if (done) {
          closing.push_back(*it);
          it = streams.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& s : closing) s->buffer.close(std::ios_base::out).wait();
  }

  // ---- kubelets ------------------------------------------------------------------

  void HandleKubelet(int node, http_request req) {
    if (!options.kubelet_token.empty()) {
      const auto& headers = req.headers();
      auto it = headers.find("Authorization");
      if (it == headers.end() || it->second != "Bearer " + options.kubelet_token) {
        Reply(req, 401, "Unauthorized\n", "text/plain; charset=utf-8");
        return;
      }
    }
    const std::string path = req.relative_uri().path();
    if (path == "/healthz") {
      Reply(req, 200, "ok", "text/plain; charset=utf-8");
      return;
    }
    const bool summary = path == "/stats/summary" || path == "/stats/summary/";
    const bool resource = path == "/metrics/resource";
    if (req.method() != methods::GET || (!summary && !resource)) {
      Reply(req, 404, "404 page not found\n", "text/plain; charset=utf-8");
      return;
    }
    const Fault fault = faults.Get(model->node(node).name);
    switch (fault) {
      case Fault::kTimeout: {
        std::lock_guard<std::mutex> lock(mu);
        if (!stopping) {
          parked.push_back(std::move(req));
          return;
        }
        break;
      }
      case Fault::kHttp500:
        Reply(req, 500, "Internal Error: failed to get node info\n", "text/plain; charset=utf-8");
        return;
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
        Reply(req, 200, std::move(bytes), summary ? kJson : kPromText);
        return;
      }
      case Fault::kOversized: {
        auto s = OpenStream(Stream::Kind::kOversized, std::chrono::minutes(5));
        const std::string start = summary ? "{\"node\":{\"nodeName\":\"" : "# HELP ";
        WriteBuffer(s->buffer, start);
        s->remaining = kOversizedBytes - start.size();
        ReplyWithStream(req, s, summary ? kJson : kPromText);
        std::lock_guard<std::mutex> lock(mu);
        streams.push_back(s);
        return;
      }
      case Fault::kNone:
      case Fault::kTruncated:
      case Fault::kSlowdrip:
        break;
    }
    const NodeSnapshot snap = model->Snapshot(node, clock.Now());
    std::string body;
    if (summary) {
      const auto query = web::uri::split_query(req.relative_uri().query());
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
      ReplyWithStream(req, s, type);
      std::lock_guard<std::mutex> lock(mu);
      streams.push_back(s);
      return;
    }
    Reply(req, 200, std::move(body), type);
  }

  // ---- apiserver -----------------------------------------------------------------

  void HandleApi(http_request req) {
    try {
      RouteApi(req);
    } catch (const std::exception& e) {
      ReplyError(req, ApiError::InternalError(e.what()));
    }
  }

  void RouteApi(http_request& req) {
    const std::string path = req.relative_uri().path();
    const auto query = web::uri::split_query(req.relative_uri().query());
    std::vector<std::string> parts = web::uri::split_path(path);

    const UserInfo* user = nullptr;
    if (users && !IsPublicPath(path)) {
      user = users->Authenticate(BearerToken(req));
      if (user == nullptr) {
        ReplyError(req, ApiError::Unauthorized());
        return;
      }
      if (!IsMetricsGroupPath(path) || options.authorize_proxied_requests) {
        const RequestInfo info =
            ParseRequestInfo(req.method(), web::uri::decode(path), req.relative_uri().query());
        if (!users->Authorize(user->name, user->groups, info).allowed) {
          ReplyError(req, ForbiddenError(user->name, info));
          return;
        }
      }
    }

    if (IsMetricsGroupPath(path)) {
      Proxy(req, user);
      return;
    }
    if (users && (path == "/apis/authentication.k8s.io/v1/tokenreviews" ||
                  path == "/apis/authorization.k8s.io/v1/subjectaccessreviews")) {
      Review(req, path);
      return;
    }
    if (parts.size() >= 2 && parts[0] == "sim" && parts[1] == "v1") {
      Faults(req, parts);
      return;
    }
    if (req.method() != methods::GET) {
      ReplyError(req, ApiError(405, StatusReason::kMethodNotAllowed,
                               "the server does not allow this method on the requested resource"));
      return;
    }
    if (path == "/healthz" || path == "/readyz" || path == "/livez") {
      Reply(req, 200, "ok", "text/plain; charset=utf-8");
      return;
    }
    if (path == "/version") {
      Reply(req, 200,
            "{\"major\":\"1\",\"minor\":\"31\",\"gitVersion\":\"v1.31.4\",\"gitCommit\":"
            "\"kubestat-sim\",\"gitTreeState\":\"clean\",\"buildDate\":\"2026-01-01T00:00:00Z\","
            "\"goVersion\":\"go1.22.0\",\"compiler\":\"gc\",\"platform\":\"linux/amd64\"}",
            kJson);
      return;
    }
    if (path == "/api") {
      Reply(req, 200,
            absl::StrCat("{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],"
                         "\"serverAddressByClientCIDRs\":[{\"clientCIDR\":\"0.0.0.0/0\","
                         "\"serverAddress\":\"",
                         apiserver_url.substr(apiserver_url.find("//") + 2), "\"}]}"),
            kJson);
      return;
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
            "{\"name\":\"metrics.k8s.io\",\"versions\":[{\"groupVersion\":\"metrics.k8s.io/"
            "v1beta1\",\"version\":\"v1beta1\"}],\"preferredVersion\":{\"groupVersion\":"
            "\"metrics.k8s.io/v1beta1\",\"version\":\"v1beta1\"}},"
            "{\"name\":\"metrics\",\"versions\":[{\"groupVersion\":\"metrics/v1alpha1\","
            "\"version\":\"v1alpha1\"}],\"preferredVersion\":{\"groupVersion\":"
            "\"metrics/v1alpha1\",\"version\":\"v1alpha1\"}}";
      }
      Reply(req, 200,
            absl::StrCat("{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[", groups,
                         "]}"),
            kJson);
      return;
    }
    if (users) {
      for (const auto& [group, resource, kind] :
           {std::tuple<std::string, std::string, std::string>{"authentication.k8s.io",
                                                              "tokenreviews", "TokenReview"},
            {"authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview"}}) {
        if (path == "/apis/" + group) {
          Reply(req, 200,
                absl::StrCat("{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",",
                             ApiGroupJson(group).substr(1)),
                kJson);
          return;
        }
        if (path == "/apis/" + group + "/v1") {
          Reply(req, 200, ReviewResourceListJson(group, resource, kind), kJson);
          return;
        }
      }
    }
    if (path == "/api/v1") {
      Reply(req, 200,
            "{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":["
            "{\"name\":\"namespaces\",\"singularName\":\"namespace\",\"namespaced\":false,"
            "\"kind\":\"Namespace\",\"verbs\":[\"get\",\"list\"],\"shortNames\":[\"ns\"]},"
            "{\"name\":\"nodes\",\"singularName\":\"node\",\"namespaced\":false,\"kind\":"
            "\"Node\",\"verbs\":[\"get\",\"list\",\"watch\"],\"shortNames\":[\"no\"]},"
            "{\"name\":\"pods\",\"singularName\":\"pod\",\"namespaced\":true,\"kind\":\"Pod\","
            "\"verbs\":[\"get\",\"list\",\"watch\"],\"shortNames\":[\"po\"],\"categories\":"
            "[\"all\"]}]}",
            kJson);
      return;
    }
    if (parts.size() >= 3 && parts[0] == "api" && parts[1] == "v1") {
      if (parts[2] == "nodes" && parts.size() <= 4) {
        Nodes(req, parts.size() == 4 ? parts[3] : "", query);
        return;
      }
      if (parts[2] == "pods" && parts.size() == 3) {
        Pods(req, "", "", query);
        return;
      }
      if (parts[2] == "namespaces") {
        if (parts.size() <= 4) {
          Namespaces(req, parts.size() == 4 ? parts[3] : "");
          return;
        }
        if (parts[4] == "pods" && parts.size() <= 6) {
          Pods(req, parts[3], parts.size() == 6 ? parts[5] : "", query);
          return;
        }
      }
    }
    ReplyError(req, ApiError(404, StatusReason::kNotFound, kNotFoundMessage));
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

  void Namespaces(http_request& req, const std::string& name) {
    auto one = [](std::string_view ns) {
      return absl::StrCat("{\"kind\":\"Namespace\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"",
                          std::string(ns),
                          "\",\"resourceVersion\":\"1\",\"creationTimestamp\":"
                          "\"2026-01-01T00:00:00Z\"},\"status\":{\"phase\":\"Active\"}}");
    };
    if (!name.empty()) {
      for (std::string_view ns : kNamespaces) {
        if (ns == name) {
          Reply(req, 200, one(ns), kJson);
          return;
        }
      }
      ReplyError(req, ApiError::NotFound("", "namespaces", name));
      return;
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
    Reply(req, 200, std::move(out), kJson);
  }

  void Nodes(http_request& req, const std::string& name,
             const std::map<std::string, std::string>& query) {
    if (!name.empty()) {
      const int i = model->NodeIndex(name);
      if (i < 0) {
        ReplyError(req, ApiError::NotFound("", "nodes", name));
        return;
      }
      Reply(req, 200, NodeJson(i), kJson);
      return;
    }
    if (IsWatch(query)) {
      auto s = OpenStream(Stream::Kind::kNodeWatch, WatchLifetime(query));
      const std::string rv = QueryParam(query, "resourceVersion");
      if (rv.empty() || rv == "0") {
        for (int i = 0; i < model->node_count(); ++i) {
          WriteBuffer(s->buffer, RenderWatchEvent("ADDED", NodeJson(i)));
        }
      }
      ReplyWithStream(req, s, kJson);
      std::lock_guard<std::mutex> lock(mu);
      streams.push_back(s);
      return;
    }
    const std::optional<LabelSelector> selector = ListSelector(req, query);
    if (!selector) return;
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
    Reply(req, 200, std::move(out), kJson);
  }

  uint64_t CurrentVersion() const {
    std::lock_guard<std::mutex> lock(mu);
    return resource_version;
  }

  // The request's labelSelector (empty when absent), applied to lists; watches ignore it.
  // On a malformed selector, replies 400 with the parser's message, as the kube-apiserver
  // does, and returns std::nullopt.
  static std::optional<LabelSelector> ListSelector(
      http_request& req, const std::map<std::string, std::string>& query) {
    absl::StatusOr<LabelSelector> selector =
        LabelSelector::Parse(web::uri::decode(QueryParam(query, "labelSelector")));
    if (!selector.ok()) {
      ReplyError(req, ApiError::BadRequest(std::string(selector.status().message())));
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

  // The node a "spec.nodeName=X" field selector names, "" for none. Other field selectors
  // are accepted and ignored.
  static std::string NodeFilter(const std::map<std::string, std::string>& query) {
    const std::string fs = web::uri::decode(QueryParam(query, "fieldSelector"));
    for (const std::string prefix : {"spec.nodeName=", "spec.nodeName=="}) {
      const size_t at = fs.find(prefix);
      if (at != std::string::npos) {
        std::string v = fs.substr(at + prefix.size());
        if (!v.empty() && v[0] == '=') v.erase(0, 1);
        return v.substr(0, v.find(','));
      }
    }
    return "";
  }

  void Pods(http_request& req, const std::string& ns, const std::string& name,
            const std::map<std::string, std::string>& query) {
    const Timestamp now = Now();
    const std::string node_filter = NodeFilter(query);
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
        ReplyError(req, ApiError::NotFound("", "pods", name));
      } else {
        Reply(req, 200, PodJson(pods[0].first, now, pods[0].second), kJson);
      }
      return;
    }
    if (IsWatch(query)) {
      WatchPods(req, ns, node_filter, query, pods, now);
      return;
    }
    const std::optional<LabelSelector> selector = ListSelector(req, query);
    if (!selector) return;
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
    Reply(req, 200, std::move(out), kJson);
  }

  void WatchPods(http_request& req, const std::string& ns, const std::string& node_filter,
                 const std::map<std::string, std::string>& query,
                 const std::vector<std::pair<PodInfo, uint64_t>>& current, Timestamp now) {
    auto s = OpenStream(Stream::Kind::kPodWatch, WatchLifetime(query));
    s->namespace_filter = ns;
    s->node_filter = node_filter;
    const std::string rv_text = QueryParam(query, "resourceVersion");
    const uint64_t from = std::strtoull(rv_text.c_str(), nullptr, 10);
    std::lock_guard<std::mutex> lock(mu);
    if (rv_text.empty() || from == 0) {
      // No version: the current state as ADDED events first, as the apiserver does.
      for (const auto& [pod, rv] : current) {
        WriteBuffer(s->buffer, RenderWatchEvent("ADDED", PodJson(pod, now, rv)));
      }
    } else if (from + 1 < oldest_retained) {
      const std::string status = ApiError::Expired(absl::StrCat("too old resource version: ", from,
                                                                " (", oldest_retained - 1, ")"))
                                     .ToJson();
      WriteBuffer(s->buffer, RenderWatchEvent("ERROR", status));
      s->buffer.close(std::ios_base::out).wait();
      ReplyWithStream(req, s, kJson);
      return;
    } else {
      for (const WatchEvent& ev : history) {
        if (ev.resource_version > from && Matches(*s, ev)) WriteBuffer(s->buffer, ev.line);
      }
    }
    ReplyWithStream(req, s, kJson);
    streams.push_back(s);
  }

  void Faults(http_request& req, const std::vector<std::string>& parts) {
    if (parts.size() == 3 && parts[2] == "faults" && req.method() == methods::GET) {
      JsonWriter w;
      w.BeginObject();
      for (const auto& [node, fault] : faults.All()) w.Member(node, FaultName(fault));
      w.EndObject();
      Reply(req, 200, w.Take(), kJson);
      return;
    }
    if (parts.size() == 4 && parts[2] == "faults" &&
        (req.method() == methods::PUT || req.method() == methods::POST)) {
      const std::string node = parts[3];
      if (model->NodeIndex(node) < 0) {
        ReplyError(req, ApiError::NotFound("", "nodes", node));
        return;
      }
      std::string body;
      try {
        body = req.extract_utf8string(true).get();
      } catch (const std::exception& e) {
        ReplyError(req, ApiError::BadRequest(e.what()));
        return;
      }
      absl::StatusOr<Fault> fault = ParseFault(body.substr(0, 256));
      if (!fault.ok()) {
        ReplyError(req, ApiError::BadRequest(std::string(fault.status().message())));
        return;
      }
      faults.Set(node, *fault);
      Reply(req, 200, absl::StrCat("{\"", node, "\":\"", std::string(FaultName(*fault)), "\"}"),
            kJson);
      return;
    }
    ReplyError(req, ApiError(404, StatusReason::kNotFound, kNotFoundMessage));
  }

  void Review(http_request& req, const std::string& path) {
    if (req.method() != methods::POST) {
      const bool tokens = path.find("tokenreviews") != std::string::npos;
      ReplyError(
          req, ApiError::MethodNotAllowed(tokens ? "authentication.k8s.io" : "authorization.k8s.io",
                                          tokens ? "tokenreviews" : "subjectaccessreviews",
                                          std::string(req.method())));
      return;
    }
    const std::string type = req.headers().content_type();
    if (!type.empty() && type.rfind("application/json", 0) != 0) {
      ReplyError(req, ApiError::UnsupportedMediaType(
                          absl::StrCat("the body of the request was in an unknown format - "
                                       "accepted media types include: application/json")));
      return;
    }
    absl::StatusOr<std::string> body = ReadBody(req, kReviewBodyLimit);
    if (!body.ok()) {
      ReplyError(req, ApiError::FromStatus(body.status()));
      return;
    }
    absl::StatusOr<std::string> answer = path.find("tokenreviews") != std::string::npos
                                             ? ReviewToken(*body, *users)
                                             : ReviewSubjectAccess(*body, *users);
    if (!answer.ok()) {
      ReplyError(req, ApiError::FromStatus(answer.status()));
      return;
    }
    Reply(req, 201, *std::move(answer), kJson);
  }

  // Forwards a request for the metrics groups to the backend as the aggregation layer
  // does; `user` is the authenticated caller (nullptr without a users file).
  void Proxy(http_request& req, const UserInfo* user) {
    if (!backend) {
      ReplyError(req, ApiError(404, StatusReason::kNotFound, kNotFoundMessage));
      return;
    }
    ProxiedRequest out;
    out.method = req.method();
    out.target = req.relative_uri().to_string();
    HeaderList incoming;
    for (const auto& [k, v] : req.headers()) incoming.emplace_back(k, v);
    out.headers = FrontProxyHeaders(incoming, user);
    absl::StatusOr<std::string> body = ReadBody(req, kProxiedBodyLimit);
    if (!body.ok()) {
      ReplyError(req, ApiError::FromStatus(body.status()));
      return;
    }
    out.body = *std::move(body);
    backend->Forward(std::move(out), std::make_shared<ReplySink>(req));
  }

  // ---- lifecycle -----------------------------------------------------------------

  absl::Status OpenListener(std::unique_ptr<http_listener>& out, const std::string& scheme,
                            const std::string& host, int port, const TlsFiles* tls_files,
                            std::function<void(http_request)> handler, int* bound_port) {
    const bool pick = port == 0;
    std::string last_error;
    for (int attempt = 0; attempt < (pick ? 8 : 1); ++attempt) {
      const int p = pick ? PickFreePort(host) : port;
      if (p == 0) {
        last_error = "no free port";
        continue;
      }
      http_listener_config config;
      if (tls_files != nullptr) {
        const TlsFiles files = *tls_files;
        config.set_ssl_context_callback([files](boost::asio::ssl::context& ctx) {
          ctx.set_options(boost::asio::ssl::context::default_workarounds |
                          boost::asio::ssl::context::no_sslv2 |
                          boost::asio::ssl::context::no_sslv3);
          ctx.use_certificate_chain_file(files.server_cert);
          ctx.use_private_key_file(files.server_key, boost::asio::ssl::context::pem);
        });
      }
      auto listener = std::make_unique<http_listener>(
          web::uri(absl::StrCat(scheme, "://", host, ":", p)), config);
      listener->support(handler);
      try {
        listener->open().wait();
        *bound_port = p;
        out = std::move(listener);
        return absl::OkStatus();
      } catch (const std::exception& e) {
        last_error = e.what();
      }
    }
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", host, ":", port, ": ", last_error));
  }
};

Simulator::Simulator(SimulatorOptions options, const Clock& clock)
    : state_(std::make_unique<State>(std::move(options), clock)) {}

Simulator::~Simulator() { Stop(); }

absl::Status Simulator::Start() {
  State& s = *state_;
  if (s.started) return absl::FailedPreconditionError("Start() called twice");
  if (absl::Status st = s.options.Validate(); !st.ok()) return st;
  absl::StatusOr<ClusterModel> model = ClusterModel::Create(s.options.model);
  if (!model.ok()) return model.status();
  s.model.emplace(*std::move(model));
  for (const auto& [node, fault] : s.options.faults) {
    if (s.model->NodeIndex(node) < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--faults: no node called ", node));
    }
    s.faults.Set(node, fault);
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
  s.slot_version.assign(slots, kInitialResourceVersion);
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
  const std::string kubelet_scheme = s.options.tls ? "https" : "http";
  s.kubelets.resize(nodes);
  for (int i = 0; i < nodes; ++i) {
    int port = s.options.kubelet_port;
    if (port != 0 && s.options.kubelet_address_mode == KubeletAddressMode::kPorts) port += i;
    State* st = state_.get();
    if (absl::Status status = s.OpenListener(
            s.kubelets[i], kubelet_scheme, s.kubelet_hosts[i], port,
            s.options.tls ? &s.tls : nullptr,
            [st, i](http_request req) { st->HandleKubelet(i, std::move(req)); },
            &s.kubelet_ports[i]);
        !status.ok()) {
      return fail(absl::UnavailableError(
          absl::StrCat("kubelet of ", s.model->node(i).name, ": ", status.message())));
    }
  }
  int api_port = 0;
  State* st = state_.get();
  if (absl::Status status = s.OpenListener(
          s.apiserver, s.options.apiserver_tls ? "https" : "http", s.options.apiserver_address,
          s.options.apiserver_port, s.options.apiserver_tls ? &s.apiserver_tls : nullptr,
          [st](http_request req) { st->HandleApi(std::move(req)); }, &api_port);
      !status.ok()) {
    return fail(absl::UnavailableError(absl::StrCat("apiserver: ", status.message())));
  }
  s.apiserver_url = absl::StrCat(s.options.apiserver_tls ? "https://" : "http://",
                                 s.options.apiserver_address, ":", api_port);

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
  std::vector<http_request> parked;
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
  // Ends proxied answers still streaming, so that closing the listener does not wait on them.
  if (s.backend) s.backend->Stop();
  for (auto& stream : streams) stream->buffer.close(std::ios_base::out).wait();
  for (auto& req : parked) ReplyError(req, ApiError::ServiceUnavailable("shutting down"));
  auto close = [](std::unique_ptr<http_listener>& l, bool tls) {
    if (!l) return;
    // cpprestsdk's close() waits for every connection it counts; an HTTPS connection whose
    // peer vanished mid-handshake can stay counted for good, so the wait is bounded and a
    // listener still closing is kept rather than destroyed under its own close().
    auto closed = std::make_shared<std::promise<void>>();
    std::future<void> done = closed->get_future();
    try {
      l->close().then([closed](pplx::task<void> t) {
        try {
          t.get();
        } catch (...) {
        }
        closed->set_value();
      });
    } catch (...) {
      closed->set_value();
    }
    const bool finished = done.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
    if (tls || !finished) {
      RetireListener(std::move(l));
    } else {
      l.reset();
    }
  };
  close(s.apiserver, s.options.apiserver_tls);
  for (auto& l : s.kubelets) close(l, s.options.tls);
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

}  // namespace kubestat::sim
