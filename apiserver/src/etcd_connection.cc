#include "etcd_connection.h"

#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/file.h"
#include "kubestat/core/log.h"
#include "kubestat/core/time.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/registry.h"

namespace kubestat::apiserver::etcd {
namespace {

bool Unreached(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

// Whether `status` may be retried on another endpoint. etcd's own refusals ("etcdserver: no
// leader", "etcdserver: request timed out") are Unavailable too, but a write may have been
// proposed before them; only a connection that never carried the call is safe to retry.
bool Retryable(CallKind kind, const grpc::Status& status) {
  if (kind == CallKind::kRead) return Unreached(status);
  return status.error_code() == grpc::StatusCode::UNAVAILABLE &&
         !std::string_view(status.error_message()).starts_with("etcdserver:");
}

struct ParsedEndpoint {
  std::string target;  // host:port
  bool tls = false;
};

absl::StatusOr<ParsedEndpoint> ParseEndpoint(std::string_view url) {
  ParsedEndpoint endpoint;
  std::string_view rest;
  if (url.starts_with("https://")) {
    endpoint.tls = true;
    rest = url.substr(8);
  } else if (url.starts_with("http://")) {
    rest = url.substr(7);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--etcd-servers: ", AbslView(url), ": not an http:// or https:// URL"));
  }
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  const size_t colon = rest.rfind(':');
  if (rest.empty() || rest.find('/') != std::string_view::npos || colon == std::string_view::npos ||
      colon == 0 || colon + 1 == rest.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--etcd-servers: ", AbslView(url), ": want scheme://host:port"));
  }
  endpoint.target = std::string(rest);
  return endpoint;
}

absl::StatusOr<std::string> ReadPem(const std::string& path, std::string_view flag) {
  if (path.empty()) return std::string();
  absl::StatusOr<std::string> pem = ReadFile(path, flag);
  if (!pem.ok()) return absl::InvalidArgumentError(pem.status().message());
  return pem;
}

// How long one connectivity watch lasts before it is armed again; bounds the wait of the
// destructor.
constexpr std::chrono::milliseconds kStateWatchSlice(250);

void Increment(prometheus::Counter* counter) {
  if (counter != nullptr) counter->Increment();
}

}  // namespace

// The connection's counters; all null without a registry.
struct Connection::Metrics {
  std::vector<prometheus::Counter*> reconnects;  // per endpoint
  prometheus::Counter* switches = nullptr;
  prometheus::Counter* outages = nullptr;

  Metrics(prometheus::Registry* registry, const std::vector<std::string>& urls) {
    reconnects.assign(urls.size(), nullptr);
    if (registry == nullptr) return;
    auto& reconnect_family =
        prometheus::BuildCounter()
            .Name("kubestat_apiserver_etcd_reconnects_total")
            .Help("Connections to an etcd member made again after the previous one was lost.")
            .Register(*registry);
    for (size_t i = 0; i < urls.size(); ++i) {
      reconnects[i] = &reconnect_family.Add({{"endpoint", urls[i]}});
    }
    switches = &prometheus::BuildCounter()
                    .Name("kubestat_apiserver_etcd_endpoint_switches_total")
                    .Help("Answers from another etcd member than the one that answered last.")
                    .Register(*registry)
                    .Add({});
    outages = &prometheus::BuildCounter()
                   .Name("kubestat_apiserver_etcd_outages_total")
                   .Help("Times no etcd member answered after one had.")
                   .Register(*registry)
                   .Add({});
  }
};

absl::Status FromGrpc(const grpc::Status& status, const std::string& url) {
  if (status.ok()) return absl::OkStatus();
  if (Unreached(status)) {
    return absl::UnavailableError(absl::StrCat("etcd: ", url, ": ", status.error_message()));
  }
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat("etcd: ", status.error_message()));
}

Connection::Connection(const EtcdStoreOptions& options, const Clock& clock,
                       prometheus::Registry* registry)
    : request_timeout_(options.request_timeout),
      ready_window_(options.ready_window),
      clock_(clock),
      metrics_(std::make_unique<Metrics>(registry, options.endpoints)) {}

Connection::~Connection() {
  if (!state_watcher_.joinable()) return;
  {
    std::lock_guard lock(states_mu_);
    stopping_ = true;
    states_.Shutdown();
  }
  state_watcher_.join();
}

absl::StatusOr<std::unique_ptr<Connection>> Connection::Create(const EtcdStoreOptions& options,
                                                               const Clock& clock,
                                                               prometheus::Registry* registry) {
  absl::StatusOr<std::string> ca = ReadPem(options.ca_file, "--etcd-cafile");
  if (!ca.ok()) return ca.status();
  absl::StatusOr<std::string> cert = ReadPem(options.cert_file, "--etcd-certfile");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem(options.key_file, "--etcd-keyfile");
  if (!key.ok()) return key.status();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = *ca;
  ssl.pem_cert_chain = *cert;
  ssl.pem_private_key = *key;

  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  // A peer that vanished without closing the connection is noticed within ~15 s; etcd
  // allows pings every 5 s (--grpc-keepalive-min-time).
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  // A restarted member is reconnected to within 2 s.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  // A connection attempt gives up after 5 s rather than gRPC's 20 s: a member that accepts
  // connections but does not answer them (starting, waiting for a quorum) is tried again
  // soon instead of holding the endpoint for 20 s.
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 5000);

  std::unique_ptr<Connection> connection(new Connection(options, clock, registry));
  for (const std::string& url : options.endpoints) {
    absl::StatusOr<ParsedEndpoint> parsed = ParseEndpoint(url);
    if (!parsed.ok()) return parsed.status();
    auto stubs = std::make_unique<EndpointStubs>();
    stubs->url = url;
    stubs->channel = grpc::CreateCustomChannel(
        parsed->target,
        parsed->tls ? grpc::SslCredentials(ssl) : grpc::InsecureChannelCredentials(), args);
    stubs->kv = etcdserverpb::KV::NewStub(stubs->channel);
    stubs->lease = etcdserverpb::Lease::NewStub(stubs->channel);
    stubs->watch = etcdserverpb::Watch::NewStub(stubs->channel);
    connection->endpoints_.push_back(std::move(stubs));
  }
  Connection* watched = connection.get();
  connection->state_watcher_ = std::thread([watched] { watched->WatchChannels(); });
  return connection;
}

void Connection::WatchChannel(size_t i, grpc_connectivity_state last) {
  std::lock_guard lock(states_mu_);
  if (stopping_) return;
  endpoints_[i]->channel->NotifyOnStateChange(
      last, std::chrono::system_clock::now() + kStateWatchSlice, &states_,
      reinterpret_cast<void*>(i));  // NOLINT(performance-no-int-to-ptr): the tag is an index
}

void Connection::WatchChannels() {
  // Per endpoint: the state last seen, and whether it was ever connected (a connection
  // after that is a reconnect).
  std::vector<grpc_connectivity_state> last(endpoints_.size());
  std::vector<bool> connected(endpoints_.size(), false);
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    last[i] = endpoints_[i]->channel->GetState(/*try_to_connect=*/true);
    connected[i] = last[i] == GRPC_CHANNEL_READY;
    WatchChannel(i, last[i]);
  }
  void* tag = nullptr;
  bool changed = false;  // false: the watch's deadline passed
  while (states_.Next(&tag, &changed)) {
    const auto i = reinterpret_cast<size_t>(tag);
    // An idle channel (its connection closed by the peer) connects again at once.
    const grpc_connectivity_state state = endpoints_[i]->channel->GetState(true);
    if (state == GRPC_CHANNEL_READY && last[i] != GRPC_CHANNEL_READY) {
      if (connected[i]) Increment(metrics_->reconnects[i]);
      connected[i] = true;
    }
    last[i] = state;
    WatchChannel(i, state);
  }
}

absl::Status Connection::Unary(CallKind kind, const Call& call) {
  const size_t count = endpoints_.size();
  const size_t first = current_.load();
  absl::Status last;
  bool reached = false;
  for (size_t attempt = 0; attempt < count; ++attempt) {
    const size_t i = (first + attempt) % count;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + request_timeout_);
    const grpc::Status status = call(*endpoints_[i], context);
    if (status.ok()) {
      Answered(i);
      return absl::OkStatus();
    }
    last = FromGrpc(status, endpoints_[i]->url);
    if (!Unreached(status)) reached = true;  // etcd answered, with an error
    if (!Retryable(kind, status)) break;
  }
  if (!reached) Unreachable();
  return last;
}

absl::StatusOr<etcdserverpb::RangeResponse> Connection::Range(
    const etcdserverpb::RangeRequest& request) {
  etcdserverpb::RangeResponse response;
  absl::Status status =
      Unary(CallKind::kRead, [&](EndpointStubs& stubs, grpc::ClientContext& context) {
        return stubs.kv->Range(&context, request, &response);
      });
  if (!status.ok()) return status;
  SawRevision(response.header().revision());
  return response;
}

void Connection::Answered(size_t i) {
  const int64_t now = clock_.MonotonicNow().time_since_epoch().count();
  if (current_.exchange(i) != i) Increment(metrics_->switches);
  last_answer_.store(now);
  if (reachable_.exchange(true)) return;
  const int64_t since = unreachable_since_.exchange(0);
  if (since == 0) return;  // the first answer after the start
  const auto down = std::chrono::round<std::chrono::milliseconds>(Duration(now - since));
  // Only the endpoint's URL as configured: no credential is part of it.
  KLOG(INFO) << "etcd answers again after " << FormatDuration(down) << " (at " << endpoints_[i]->url
             << ")";
}

void Connection::SawRevision(int64_t revision) {
  if (revision <= 0) return;
  uint64_t seen = revision_.load();
  while (seen < static_cast<uint64_t>(revision) &&
         !revision_.compare_exchange_weak(seen, static_cast<uint64_t>(revision))) {
  }
}

void Connection::Unreachable() {
  if (!reachable_.exchange(false)) return;
  int64_t none = 0;
  if (unreachable_since_.compare_exchange_strong(
          none, clock_.MonotonicNow().time_since_epoch().count())) {
    Increment(metrics_->outages);
  }
}

bool Connection::Ready() const {
  if (!reachable_.load()) return false;
  const int64_t since = clock_.MonotonicNow().time_since_epoch().count() - last_answer_.load();
  return since <= ready_window_.count();
}

}  // namespace kubestat::apiserver::etcd
