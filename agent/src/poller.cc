#include "kubestat/agent/poller.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <sys/stat.h>

#include <utility>
#include <vector>

#include "kubestat/core/absl_view.h"
#include "kubestat/core/log.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/core/time.h"

namespace kubestat::agent {
namespace {

using metrics_api::MethodStatus;
using metrics_api::NodePodResources;

constexpr char kList[] = "List";
constexpr char kAllocatable[] = "GetAllocatableResources";
constexpr char kGet[] = "Get";

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

// ---- podresources values → the document's ----

metrics_api::NumaMemory Convert(const podresources::MemoryBlock& m) {
  return {m.memory_type, m.size_bytes, m.numa_nodes};
}

metrics_api::DeviceSet Convert(const podresources::Devices& d) {
  return {d.resource_name, d.device_ids, d.numa_nodes};
}

metrics_api::DynamicResource Convert(const podresources::DynamicResource& r) {
  metrics_api::DynamicResource out{r.claim_name, r.claim_namespace, {}};
  for (const podresources::ClaimResource& c : r.claim_resources) {
    out.claim_resources.push_back(
        {c.cdi_devices, c.driver_name, c.pool_name, c.device_name, c.share_id});
  }
  return out;
}

template <typename Out, typename In>
std::vector<Out> ConvertAll(const std::vector<In>& in) {
  std::vector<Out> out;
  out.reserve(in.size());
  for (const In& item : in) out.push_back(Convert(item));
  return out;
}

metrics_api::ResourceSet Set(const std::vector<int64_t>& cpus,
                             const std::vector<podresources::MemoryBlock>& memory,
                             const std::vector<podresources::Devices>& devices) {
  return {cpus, ConvertAll<metrics_api::NumaMemory>(memory),
          ConvertAll<metrics_api::DeviceSet>(devices)};
}

std::vector<metrics_api::PodAssignment> Convert(const std::vector<podresources::PodResources>& in) {
  std::vector<metrics_api::PodAssignment> pods;
  pods.reserve(in.size());
  for (const podresources::PodResources& p : in) {
    metrics_api::PodAssignment pod{p.name, p.namespace_name, Set(p.cpu_ids, p.memory, {}), {}};
    pod.containers.reserve(p.containers.size());
    for (const podresources::ContainerResources& c : p.containers) {
      pod.containers.push_back({c.name, Set(c.cpu_ids, c.memory, c.devices),
                                ConvertAll<metrics_api::DynamicResource>(c.dynamic_resources)});
    }
    pods.push_back(std::move(pod));
  }
  return pods;
}

}  // namespace

absl::Status PollerOptions::Validate() const {
  if (node_name.empty()) return absl::InvalidArgumentError("node_name: must not be empty");
  if (absl::Status s = client.Validate(); !s.ok()) return s;
  const Duration timeout = absl::ToChronoNanoseconds(client.call_timeout);
  if (resolution <= 3 * timeout) {
    return absl::InvalidArgumentError(
        StrCat("call_timeout: must be below a third of the resolution (", FormatDuration(timeout),
               " × 3 >= ", FormatDuration(resolution), "): a poll makes three calls"));
  }
  return absl::OkStatus();
}

struct PodResourcesPoller::Metrics {
  explicit Metrics(prometheus::Registry& registry)
      : polls(prometheus::BuildCounter()
                  .Name("kubestat_node_agent_polls_total")
                  .Help("Polls of the kubelet's podresources socket.")
                  .Register(registry)
                  .Add({})),
        calls(prometheus::BuildCounter()
                  .Name("kubestat_node_agent_calls_total")
                  .Help("Calls on the podresources socket, by method and outcome code.")
                  .Register(registry)),
        duration(prometheus::BuildHistogram()
                     .Name("kubestat_node_agent_call_duration_seconds")
                     .Help("Time taken by one call on the podresources socket, by method.")
                     .Register(registry)),
        last_success(prometheus::BuildGauge()
                         .Name("kubestat_node_agent_last_success_timestamp_seconds")
                         .Help("Wall-clock time of the newest successful call, by method.")
                         .Register(registry)),
        socket_changes(prometheus::BuildCounter()
                           .Name("kubestat_node_agent_socket_changes_total")
                           .Help("Changes of the podresources socket file seen between polls "
                                 "(appeared, replaced: a restarted kubelet, removed).")
                           .Register(registry)),
        pods(prometheus::BuildGauge()
                 .Name("kubestat_node_agent_pods")
                 .Help("Pods in the newest successful List answer.")
                 .Register(registry)
                 .Add({})) {}

  prometheus::Counter& polls;
  prometheus::Family<prometheus::Counter>& calls;
  prometheus::Family<prometheus::Histogram>& duration;
  prometheus::Family<prometheus::Gauge>& last_success;
  prometheus::Family<prometheus::Counter>& socket_changes;
  prometheus::Gauge& pods;
};

PodResourcesPoller::PodResourcesPoller(PollerOptions options, const Clock& clock,
                                       prometheus::Registry& registry)
    : options_(std::move(options)),
      clock_(clock),
      metrics_(std::make_unique<Metrics>(registry)),
      latest_(std::make_shared<const NodePodResources>(NodePodResources{
          .node_name = options_.node_name, .socket = options_.client.socket_path})) {}

PodResourcesPoller::~PodResourcesPoller() { Stop(); }

std::optional<PodResourcesPoller::SocketIdentity> PodResourcesPoller::Identify(
    const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return SocketIdentity{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                        static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
}

void PodResourcesPoller::FollowSocket() {
  const std::optional<SocketIdentity> now = Identify(options_.client.socket_path);
  if (polled_ && now != socket_) {
    const char* change = !socket_ ? "appeared" : !now ? "removed" : "replaced";
    metrics_->socket_changes.Add({{"change", change}}).Increment();
    KLOG(INFO) << "the podresources socket " << options_.client.socket_path << ": " << change
               << (now && socket_ ? " (the kubelet restarted)" : "");
    client_.reset();  // a new channel: the old one may be waiting out a reconnect backoff
  }
  socket_ = now;
  if (client_ == nullptr) {
    absl::StatusOr<std::unique_ptr<podresources::PodResourcesClient>> client =
        podresources::PodResourcesClient::Create(options_.client);
    // The options were validated; Create fails only on invalid options.
    if (client.ok()) client_ = *std::move(client);
  }
}

void PodResourcesPoller::Record(const char* method, const absl::Status& outcome, Duration took,
                                MethodStatus& status) {
  const Timestamp now = clock_.Now();
  status.code = std::string(metrics_api::StatusCodeName(outcome.code()));
  status.message = std::string(StdView(outcome.message()));
  status.time = now;
  metrics_->calls.Add({{"method", method}, {"code", status.code}}).Increment();
  metrics_->duration
      .Add({{"method", method}},
           prometheus::Histogram::BucketBoundaries{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2, 5})
      .Observe(Seconds(took));
  if (outcome.ok()) {
    status.last_success = now;
    metrics_->last_success.Add({{"method", method}}).Set(Seconds(now.time_since_epoch()));
  } else {
    KVLOG(1) << "podresources " << method << ": " << outcome;
  }
}

void PodResourcesPoller::PollOnce() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_poll_start_ = clock_.MonotonicNow();
  }
  metrics_->polls.Increment();
  FollowSocket();
  polled_ = true;
  NodePodResources doc = *Latest();
  if (client_ == nullptr) return;  // not reached: the options are valid

  Timestamp started = clock_.MonotonicNow();
  absl::StatusOr<std::vector<podresources::PodResources>> pods = client_->List();
  Record(kList, pods.status(), clock_.MonotonicNow() - started, doc.list);
  if (pods.ok()) {
    doc.pods = Convert(*pods);
    metrics_->pods.Set(static_cast<double>(pods->size()));
  }

  started = clock_.MonotonicNow();
  absl::StatusOr<podresources::AllocatableResources> allocatable =
      client_->GetAllocatableResources();
  Record(kAllocatable, allocatable.status(), clock_.MonotonicNow() - started, doc.allocatable_call);
  if (allocatable.ok()) {
    doc.allocatable = Set(allocatable->cpu_ids, allocatable->memory, allocatable->devices);
  }

  if (pods.ok() && !pods->empty()) {
    started = clock_.MonotonicNow();
    absl::StatusOr<podresources::PodResources> pod =
        client_->Get(pods->front().namespace_name, pods->front().name);
    // A pod that ended between the two calls is NotFound: the kubelet has Get all the same.
    absl::Status outcome = pod.status();
    if (outcome.code() == absl::StatusCode::kNotFound) outcome = absl::OkStatus();
    Record(kGet, outcome, clock_.MonotonicNow() - started, doc.get);
  }

  doc.time = clock_.Now();
  auto published = std::make_shared<const NodePodResources>(std::move(doc));
  std::lock_guard<std::mutex> lock(mu_);
  latest_ = std::move(published);
}

std::shared_ptr<const NodePodResources> PodResourcesPoller::Latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

std::optional<Timestamp> PodResourcesPoller::LastPollStart() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_poll_start_;
}

void PodResourcesPoller::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (loop_.joinable() || stopping_) return;
  loop_ = std::thread([this] {
    Timestamp next = clock_.MonotonicNow();
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      if (clock_.MonotonicNow() >= next) {
        lock.unlock();
        PollOnce();
        lock.lock();
        // Polls keep their phase; ones missed entirely (a slow kubelet) are skipped.
        const Timestamp now = clock_.MonotonicNow();
        do {
          next += options_.resolution;
        } while (next <= now);
        continue;
      }
      // Re-reads the clock at least every 50 ms (a FakeClock notifies nobody).
      cv_.wait_for(lock,
                   std::min<Duration>(next - clock_.MonotonicNow(), std::chrono::milliseconds(50)));
    }
  });
}

void PodResourcesPoller::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (loop_.joinable()) loop_.join();
}

}  // namespace kubestat::agent
