#include "kubestat/bridge/bridge.h"

#include <optional>
#include <utility>

#include "kubestat/apimachinery/api_error.h"
#include "kubestat/bridge/push_queue.h"
#include "kubestat/bridge/pusher.h"
#include "kubestat/bridge/watch_client.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/file.h"
#include "kubestat/core/log.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/core/time.h"
#include "kubestat/http/client.h"
#include "kubestat/http/health_checks.h"
#include "kubestat/http/metrics_endpoint.h"
#include "kubestat/http/server.h"
#include "kubestat/kube/bearer_token.h"
#include "kubestat/kube/delegated_access.h"
#include "kubestat/kube/kube_api_tls.h"
#include "kubestat/kube/kubeconfig.h"
#include "prometheus/registry.h"

namespace kubestat::bridge {
namespace {

// The client options of the metrics API server as the flags give them.
absl::StatusOr<http::ClientOptions> ApiserverClientOptions(
    const BridgeOptions& options, std::shared_ptr<kube::BearerTokenFile>* token_file) {
  http::ClientOptions client;
  client.user_agent = "kubestat-bridge";
  client.timeout = options.apiserver_timeout;
  std::string token_path = options.apiserver_token_file;
  std::optional<kube::KubeApiConfig> api_config;
  if (!options.apiserver_kubeconfig.empty()) {
    absl::StatusOr<kube::KubeApiConfig> api = kube::LoadKubeconfig(options.apiserver_kubeconfig);
    if (!api.ok()) {
      return absl::InvalidArgumentError(
          StrCat("--apiserver-kubeconfig: ", StdView(api.status().message())));
    }
    client.base_url = api->server;
    client.ca_pem = api->ca_pem;
    client.insecure_skip_tls_verify = api->insecure_skip_tls_verify;
    client.bearer_token = api->token;
    client.client_cert_pem = api->client_cert_pem;
    client.client_key_pem = api->client_key_pem;
    token_path = api->token_file;
    api_config = *std::move(api);
  }
  if (!options.apiserver_url.empty()) client.base_url = options.apiserver_url;
  if (!options.apiserver_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadFile(options.apiserver_ca_file, "--apiserver-ca-file");
    if (!ca.ok()) return absl::InvalidArgumentError(ca.status().message());
    client.ca_pem = *std::move(ca);
  } else if (api_config) {
    kube::WatchTlsFiles(*api_config, &client);  // its CA and certificates, re-read on change
  }
  if (!token_path.empty()) {
    auto file = std::make_shared<kube::BearerTokenFile>(token_path);
    if (absl::StatusOr<std::string> token = file->Get(); !token.ok()) {
      return absl::InvalidArgumentError(
          StrCat("--apiserver-token-file: ", StdView(token.status().message())));
    }
    client.bearer_token_source = [file] { return file->Get(); };
    *token_file = std::move(file);
  }
  if (absl::Status s = client.Validate(); !s.ok()) {
    return absl::InvalidArgumentError(StrCat("--apiserver-url: ", StdView(s.message())));
  }
  return client;
}

}  // namespace

// Declared in the order they are built; destroyed in reverse.
struct Bridge::Parts {
  std::shared_ptr<prometheus::Registry> registry;
  std::shared_ptr<kube::BearerTokenFile> token_file;
  std::unique_ptr<http::Client> client;
  std::unique_ptr<PushQueue> queue;
  std::unique_ptr<Pusher> pusher;
  std::unique_ptr<WatchClient> watch;
  std::unique_ptr<kube::DelegatedAccess> access;
  std::optional<kube::AccessGate> gate;
  std::unique_ptr<http::HealthChecks> health;
  std::unique_ptr<http::Server> server;
  bool stopped = false;

  // The checks of /livez (the loops run: a restart mends a stopped one) and /readyz (the
  // aggregator's snapshot is pushed, the aggregator answers, the metrics API server takes
  // the pushes).
  void AddHealthChecks(Duration aggregator_unready_after) {
    health->Add(http::HealthEndpoint::kLivez, "ping", [](Timestamp) { return std::nullopt; });
    health->Add(http::HealthEndpoint::kLivez, "loops",
                [this](Timestamp) -> std::optional<std::string> {
                  if (pusher->running() && watch->running()) return std::nullopt;
                  return "the pusher or the watch has stopped";
                });
    health->Add(http::HealthEndpoint::kReadyz, "ping", [](Timestamp) { return std::nullopt; });
    health->Add(http::HealthEndpoint::kReadyz, "first-snapshot",
                [this](Timestamp) -> std::optional<std::string> {
                  if (watch->snapshot_pushed()) return std::nullopt;
                  return "the aggregator's first snapshot is not pushed yet";
                });
    health->Add(http::HealthEndpoint::kReadyz, "aggregator",
                [this, aggregator_unready_after](Timestamp now) -> std::optional<std::string> {
                  const WatchClientStats stats = watch->Stats();
                  if (stats.failing_since == kZeroTime ||
                      now - stats.failing_since <= aggregator_unready_after) {
                    return std::nullopt;
                  }
                  return StrCat("no watch stream of the aggregator has read an event for ",
                                FormatDuration(now - stats.failing_since), " (more than ",
                                FormatDuration(aggregator_unready_after), "): ", stats.last_error);
                });
    health->Add(http::HealthEndpoint::kReadyz, "apiserver-push",
                [this](Timestamp) -> std::optional<std::string> {
                  const uint32_t failures = pusher->Stats().consecutive_failures;
                  if (failures < kNotReadyAfterFailures) return std::nullopt;
                  return StrCat("pushes to the metrics API server are failing (", failures,
                                " retryable failures in a row)");
                });
  }

  http::Response Handle(const http::Request& request) {
    kube::AccessDecision access = gate->Check(request);
    if (access.refusal) return *std::move(access.refusal);
    if (request.path == "/healthz") return http::TextResponse(200, "ok", "/healthz");
    if (request.path == "/livez" || request.path == "/readyz") {
      const bool livez = request.path == "/livez";
      const http::HealthAnswer answer = health->Answer(
          livez ? http::HealthEndpoint::kLivez : http::HealthEndpoint::kReadyz, request.query);
      return http::TextResponse(answer.code, answer.body, livez ? "/livez" : "/readyz");
    }
    if (http::IsMetricsPath(request.path)) return http::MetricsResponse(request, *registry);
    return http::ErrorResponse(
        ApiError(404, StatusReason::kNotFound, "the server could not find the requested resource"));
  }
};

absl::StatusOr<std::unique_ptr<Bridge>> Bridge::Create(const BridgeOptions& options,
                                                       const Clock& clock) {
  auto p = std::make_unique<Parts>();
  p->registry = std::make_shared<prometheus::Registry>();
  absl::StatusOr<http::ClientOptions> client_options =
      ApiserverClientOptions(options, &p->token_file);
  if (!client_options.ok()) return client_options.status();
  absl::StatusOr<std::unique_ptr<http::Client>> client =
      http::Client::Create(*std::move(client_options), clock);
  if (!client.ok()) return client.status();
  p->client = *std::move(client);
  p->queue = std::make_unique<PushQueue>(p->registry.get());
  p->pusher = std::make_unique<Pusher>(options.PushingOptions(), *p->queue, *p->client, clock,
                                       p->registry.get());
  absl::StatusOr<std::unique_ptr<WatchClient>> watch =
      WatchClient::Create(options.WatchOptions(), *p->queue, *p->client, clock, p->registry.get());
  if (!watch.ok()) {
    return absl::InvalidArgumentError(
        StrCat("--aggregator-*: ", StdView(watch.status().message())));
  }
  p->watch = *std::move(watch);
  absl::StatusOr<std::unique_ptr<kube::DelegatedAccess>> access =
      kube::DelegatedAccess::Create(options.serving, clock, p->registry.get());
  if (!access.ok()) return access.status();
  p->access = *std::move(access);
  p->gate = p->access->Gate("bridge");
  p->health = std::make_unique<http::HealthChecks>(clock);
  p->AddHealthChecks(options.aggregator_unready_after);
  p->health->AttachMetrics(*p->registry);
  Parts* parts = p.get();
  p->server = std::make_unique<http::Server>(
      options.ServingOptions(), [parts](const http::Request& r) { return parts->Handle(r); },
      *p->registry, clock);
  if (absl::Status s = p->server->Start(); !s.ok()) {
    return absl::UnavailableError(
        StrCat("--listen-address/--secure-port/--health-port: ", StdView(s.message())));
  }
  KLOG(INFO) << "serving /metrics, /healthz, /livez and /readyz on " << p->server->BaseUrl();
  return std::unique_ptr<Bridge>(new Bridge(std::move(p)));
}

Bridge::Bridge(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

Bridge::~Bridge() { Stop(); }

void Bridge::Start() {
  parts_->pusher->Start();
  parts_->watch->Start();
}

void Bridge::Stop() {
  Parts& p = *parts_;
  if (p.stopped) return;
  p.stopped = true;
  p.watch->Stop();
  p.pusher->Stop();
  p.server->Stop();
}

std::string Bridge::BaseUrl() const { return parts_->server->BaseUrl(); }
std::string Bridge::HealthBaseUrl() const { return parts_->server->HealthBaseUrl(); }
bool Bridge::ready() const {
  return parts_->health->Answer(http::HealthEndpoint::kReadyz, "").code == 200;
}

}  // namespace kubestat::bridge
