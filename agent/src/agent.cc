#include "kubestat/agent/agent.h"

#include <optional>
#include <utility>

#include "kubestat/agent/poller.h"
#include "kubestat/apimachinery/api_error.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/log.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/core/time.h"
#include "kubestat/http/metrics_endpoint.h"
#include "kubestat/http/server.h"
#include "kubestat/kube/delegated_access.h"
#include "kubestat/metrics_api/node_resources.h"
#include "kubestat/metrics_api/query.h"
#include "prometheus/registry.h"

namespace kubestat::agent {

constexpr std::string_view kPodResourcesPath = "/podresources";

// Declared in the order they are built; destroyed in reverse.
struct NodeAgent::Parts {
  AgentOptions options;
  const Clock* clock = nullptr;
  std::shared_ptr<prometheus::Registry> registry;
  std::unique_ptr<PodResourcesPoller> poller;
  std::unique_ptr<kube::DelegatedAccess> access;
  std::optional<kube::AccessGate> gate;
  std::unique_ptr<http::Server> server;
  bool stopped = false;

  // Why the poll loop is not live, or std::nullopt while it is.
  std::optional<std::string> NotLive() const {
    const std::optional<Timestamp> last = poller->LastPollStart();
    if (!last) return std::nullopt;  // the first poll is about to start
    const Duration allowed = 2 * options.resolution + 3 * options.call_timeout;
    const Duration since = clock->MonotonicNow() - *last;
    if (since <= allowed) return std::nullopt;
    return StrCat("no poll of the podresources socket started in ", FormatDuration(since),
                  " (allowed: ", FormatDuration(allowed), ")");
  }

  http::Response Handle(const http::Request& request) {
    kube::AccessDecision access = gate->Check(request);
    if (access.refusal) return *std::move(access.refusal);
    if (request.path == "/healthz" || request.path == "/livez") {
      if (std::optional<std::string> why = NotLive()) {
        return http::TextResponse(503, *std::move(why), "/healthz");
      }
      return http::TextResponse(200, "ok", "/healthz");
    }
    if (request.path == "/readyz") {
      const std::shared_ptr<const metrics_api::NodePodResources> doc = poller->Latest();
      if (doc->list.ok()) return http::TextResponse(200, "ok", "/readyz");
      return http::TextResponse(503,
                                doc->list.code == "Pending"
                                    ? std::string("the podresources socket has not been read yet")
                                    : StrCat("List on the podresources socket: ", doc->list.code,
                                             ": ", doc->list.message),
                                "/readyz");
    }
    if (http::IsMetricsPath(request.path)) return http::MetricsResponse(request, *registry);
    if (request.path == kPodResourcesPath) {
      const int indent =
          metrics_api::PrettyRequested(metrics_api::ParseQueryString(request.query)) ? 2 : 0;
      http::Response response;
      response.body = metrics_api::RenderNodePodResources(*poller->Latest(), indent);
      response.route = kPodResourcesPath;
      return response;
    }
    return http::ErrorResponse(
        ApiError(404, StatusReason::kNotFound, "the server could not find the requested resource"));
  }
};

absl::StatusOr<std::unique_ptr<NodeAgent>> NodeAgent::Create(const AgentOptions& options,
                                                             const Clock& clock) {
  auto p = std::make_unique<Parts>();
  p->options = options;
  p->clock = &clock;
  p->registry = std::make_shared<prometheus::Registry>();
  p->poller = std::make_unique<PodResourcesPoller>(options.PollingOptions(), clock, *p->registry);
  absl::StatusOr<std::unique_ptr<kube::DelegatedAccess>> access =
      kube::DelegatedAccess::Create(options.serving, clock, p->registry.get());
  if (!access.ok()) return access.status();
  p->access = *std::move(access);
  p->gate = p->access->Gate("node-agent");
  if (absl::Status s = p->gate->Validate(); !s.ok()) return s;
  Parts* parts = p.get();
  p->server = std::make_unique<http::Server>(
      options.ServingOptions(), [parts](const http::Request& r) { return parts->Handle(r); },
      *p->registry, clock);
  if (absl::Status s = p->server->Start(); !s.ok()) {
    return absl::UnavailableError(
        StrCat("--listen-address/--secure-port/--health-port: ", StdView(s.message())));
  }
  KLOG(INFO) << "serving /podresources, /metrics, /healthz, /livez and /readyz on "
             << p->server->BaseUrl() << " for node " << options.node_name << ", reading "
             << options.podresources_socket << " every " << FormatDuration(options.resolution);
  return std::unique_ptr<NodeAgent>(new NodeAgent(std::move(p)));
}

NodeAgent::NodeAgent(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

NodeAgent::~NodeAgent() { Stop(); }

void NodeAgent::Start() { parts_->poller->Start(); }

void NodeAgent::Stop() {
  Parts& p = *parts_;
  if (p.stopped) return;
  p.stopped = true;
  p.poller->Stop();
  p.server->Stop();
}

std::string NodeAgent::BaseUrl() const { return parts_->server->BaseUrl(); }

}  // namespace kubestat::agent
