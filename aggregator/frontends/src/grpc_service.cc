#include "kubestat/aggregator/frontends/grpc_service.h"

#include <google/protobuf/unknown_field_set.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "kubestat/core/log.h"
#include "kubestat/metrics_api/proto.h"
#include "kubestat/metrics_api/query.h"

namespace kubestat::aggregator {
namespace {

using metrics_api::GroupVersion;
using metrics_api::kGrpcFieldNames;
using metrics_api::ListQuery;
using metrics_api::MakeListQuery;
using metrics_api::Select;
using metrics_api::ToProtoTimestamp;
using metrics_api::WindowFilter;
using ApiResource = metrics_api::Resource;

enum Method { kListNodes = 0, kListPods = 1, kWatch = 2 };
constexpr std::array<const char*, 3> kMethodNames = {"ListNodes", "ListPods", "Watch"};

std::string_view CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

// absl::Status (from the selector parsers) to the gRPC status a client sees.
grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message().data(), status.message().size()));
}

grpc::Status NotReady() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      "kubestat-aggregator is not ready: the store is being rebuilt or "
                      "discovery has not synced yet");
}

grpc::Status ShuttingDown() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "kubestat-aggregator is shutting down");
}

// Decrements the watcher gauge when a stream ends, whichever way.
class GaugeScope {
 public:
  explicit GaugeScope(prometheus::Gauge* gauge) : gauge_(gauge) {
    if (gauge_ != nullptr) gauge_->Increment();
  }
  ~GaugeScope() {
    if (gauge_ != nullptr) gauge_->Decrement();
  }
  GaugeScope(const GaugeScope&) = delete;
  GaugeScope& operator=(const GaugeScope&) = delete;

 private:
  prometheus::Gauge* gauge_;
};

// Sets the event's object (field `number`: node or pod) to `wire`, an object's serialized
// form, without parsing it: as a length-delimited field the message does not hold, which
// protobuf writes out as it is. On the wire the event is the one with the object set, and a
// reader parses it so. Every watcher that asks for every window is sent objects this way: the
// hub serialized each once, and a watcher only copies the bytes.
void SetObjectWire(v1::WatchEvent* event, int number, const std::string& wire) {
  event->GetReflection()->MutableUnknownFields(event)->AddLengthDelimited(number, wire);
}

// The per-stream view of the feed: which objects this stream has sent (so an upsert is
// ADDED or MODIFIED, and a removal or a selector mismatch is DELETED only when it was sent).
class WatchStreamState {
 public:
  WatchStreamState(std::optional<ListQuery> nodes, std::optional<ListQuery> pods,
                   WindowFilter windows)
      : nodes_(std::move(nodes)), pods_(std::move(pods)), windows_(std::move(windows)) {}

  // The event for `change`, or false when this stream does not see it.
  bool ToEvent(const WatchChange& change, v1::WatchEvent* event) {
    if (change.is_pod) {
      if (!pods_) return false;
      std::pair<std::string, std::string> key(change.namespace_name, change.name);
      bool matches =
          change.kind == WatchChange::Kind::kUpsert && pods_->Matches(change.pod->view());
      if (matches) {
        bool known = !sent_pods_.insert(std::move(key)).second;
        event->set_type(known ? v1::WatchEvent::MODIFIED : v1::WatchEvent::ADDED);
        if (windows_.all()) {
          SetObjectWire(event, v1::WatchEvent::kPodFieldNumber, change.pod->wire());
          return true;
        }
        v1::PodMetrics* pod = event->mutable_pod();
        *pod = change.pod->proto();
        windows_.Apply(pod);
        return true;
      }
      if (sent_pods_.erase(key) == 0) return false;
      event->set_type(v1::WatchEvent::DELETED);
      event->mutable_pod()->set_namespace_(change.namespace_name);
      event->mutable_pod()->set_name(change.name);
      return true;
    }
    if (!nodes_) return false;
    bool matches =
        change.kind == WatchChange::Kind::kUpsert && nodes_->Matches(change.node->view());
    if (matches) {
      bool known = !sent_nodes_.insert(change.name).second;
      event->set_type(known ? v1::WatchEvent::MODIFIED : v1::WatchEvent::ADDED);
      if (windows_.all()) {
        SetObjectWire(event, v1::WatchEvent::kNodeFieldNumber, change.node->wire());
        return true;
      }
      v1::NodeMetrics* node = event->mutable_node();
      *node = change.node->proto();
      windows_.Apply(node);
      return true;
    }
    if (sent_nodes_.erase(change.name) == 0) return false;
    event->set_type(v1::WatchEvent::DELETED);
    event->mutable_node()->set_name(change.name);
    return true;
  }

 private:
  std::optional<ListQuery> nodes_;
  std::optional<ListQuery> pods_;
  WindowFilter windows_;
  std::set<std::string, std::less<>> sent_nodes_;
  std::set<std::pair<std::string, std::string>> sent_pods_;
};

}  // namespace

struct AggregatorService::Metrics {
  prometheus::Family<prometheus::Counter>* requests = nullptr;
  std::array<prometheus::Histogram*, 3> durations{};
  prometheus::Gauge* watchers = nullptr;
  prometheus::Counter* overflowed = nullptr;
};

absl::Status AggregatorServiceOptions::Validate() const {
  if (windows.empty()) return absl::InvalidArgumentError("windows must not be empty");
  for (size_t i = 0; i < windows.size(); ++i) {
    if (windows[i] <= Duration::zero()) {
      return absl::InvalidArgumentError("windows must be positive");
    }
    if (i > 0 && windows[i] <= windows[i - 1]) {
      return absl::InvalidArgumentError("windows must be ascending and distinct");
    }
  }
  if (watch_poll_interval <= Duration::zero()) {
    return absl::InvalidArgumentError("watch_poll_interval must be positive");
  }
  return absl::OkStatus();
}

AggregatorService::AggregatorService(const MetricsSource* source, WatchHub* hub,
                                     prometheus::Registry* registry,
                                     AggregatorServiceOptions options, const Clock* clock)
    : source_(source),
      hub_(hub),
      options_(std::move(options)),
      clock_(clock),
      metrics_(std::make_unique<Metrics>()) {
  if (registry == nullptr) return;
  metrics_->requests = &prometheus::BuildCounter()
                            .Name("kubestat_grpc_requests_total")
                            .Help("gRPC calls of kubestat.v1.Aggregator by method and status code")
                            .Register(*registry);
  auto& durations = prometheus::BuildHistogram()
                        .Name("kubestat_grpc_request_duration_seconds")
                        .Help(
                            "Duration of kubestat.v1.Aggregator calls; for Watch, the "
                            "stream's lifetime")
                        .Register(*registry);
  const prometheus::Histogram::BucketBoundaries buckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
      1,      2.5,   5,      10,    30,   60,    300,  900, 3600};
  for (size_t m = 0; m < kMethodNames.size(); ++m) {
    metrics_->durations[m] = &durations.Add({{"method", kMethodNames[m]}}, buckets);
  }
  metrics_->watchers = &prometheus::BuildGauge()
                            .Name("kubestat_grpc_watchers")
                            .Help("Open kubestat.v1.Aggregator Watch streams")
                            .Register(*registry)
                            .Add({});
  metrics_->overflowed = &prometheus::BuildCounter()
                              .Name("kubestat_grpc_watchers_overflowed_total")
                              .Help(
                                  "Watch streams ended with RESOURCE_EXHAUSTED because the "
                                  "reader fell too far behind")
                              .Register(*registry)
                              .Add({});
}

AggregatorService::~AggregatorService() = default;

void AggregatorService::Shutdown() {
  shut_down_.store(true, std::memory_order_release);
  hub_->Shutdown();
}

void AggregatorService::Record(int method, const grpc::Status& status, Timestamp start) {
  if (metrics_->requests == nullptr) return;
  std::string code(CodeName(status.error_code()));
  metrics_->requests->Add({{"method", kMethodNames[method]}, {"code", code}}).Increment();
  std::chrono::duration<double> elapsed = clock_->MonotonicNow() - start;
  metrics_->durations[method]->Observe(elapsed.count());
}

grpc::Status AggregatorService::Check(const grpc::ServerContext* context,
                                      const GrpcAccessRequest& request) const {
  if (!options_.access_check || context == nullptr) return grpc::Status::OK;
  return options_.access_check(*context, request);
}

grpc::Status AggregatorService::ListNodes(grpc::ServerContext* context,
                                          const v1::ListNodesRequest* request,
                                          v1::ListNodesResponse* response) {
  Timestamp start = clock_->MonotonicNow();
  grpc::Status status = Check(context, {"nodes", "", "list"});
  if (status.ok()) status = DoListNodes(*request, response);
  Record(kListNodes, status, start);
  return status;
}

grpc::Status AggregatorService::ListPods(grpc::ServerContext* context,
                                         const v1::ListPodsRequest* request,
                                         v1::ListPodsResponse* response) {
  Timestamp start = clock_->MonotonicNow();
  grpc::Status status = Check(context, {"pods", request->namespace_(), "list"});
  if (status.ok()) status = DoListPods(*request, response);
  Record(kListPods, status, start);
  return status;
}

grpc::Status AggregatorService::Watch(grpc::ServerContext* context, const v1::WatchRequest* request,
                                      grpc::ServerWriter<v1::WatchEvent>* writer) {
  Timestamp start = clock_->MonotonicNow();
  grpc::Status status = grpc::Status::OK;
  if (request->has_nodes()) status = Check(context, {"nodes", "", "watch"});
  if (status.ok() && request->has_pods()) {
    status = Check(context, {"pods", request->pods().namespace_(), "watch"});
  }
  if (status.ok()) status = DoWatch(context, *request, writer);
  Record(kWatch, status, start);
  return status;
}

grpc::Status AggregatorService::DoListNodes(const v1::ListNodesRequest& request,
                                            v1::ListNodesResponse* response) {
  absl::StatusOr<ListQuery> filter =
      MakeListQuery(ApiResource::kNodes, "", request.label_selector(), request.field_selector(),
                    request.limit(), request.continue_(), kGrpcFieldNames);
  if (!filter.ok()) return ToGrpc(filter.status());
  absl::StatusOr<WindowFilter> windows =
      WindowFilter::Create({request.windows().begin(), request.windows().end()}, options_.windows);
  if (!windows.ok()) return ToGrpc(windows.status());
  if (shut_down_.load(std::memory_order_acquire)) return ShuttingDown();
  if (!source_->Ready()) return NotReady();

  // Read the revision first: the items are then at least as new as it says.
  response->set_revision(hub_->revision());
  *response->mutable_tick_time() = ToProtoTimestamp(hub_->last_tick());
  const std::shared_ptr<const MetricsSnapshot> cut = source_->Snapshot();
  const metrics_api::Page page = Select(*filter, GroupVersion::kV1alpha1, cut->nodes);
  response->mutable_items()->Reserve(static_cast<int>(page.indices.size()));
  for (size_t i : page.indices) {
    v1::NodeMetrics* item = response->add_items();
    *item = metrics_api::ToProto(*cut->nodes[i]);
    windows->Apply(item);
  }
  response->set_continue_(page.continue_token);
  return grpc::Status::OK;
}

grpc::Status AggregatorService::DoListPods(const v1::ListPodsRequest& request,
                                           v1::ListPodsResponse* response) {
  absl::StatusOr<ListQuery> filter = MakeListQuery(
      ApiResource::kPods, request.namespace_(), request.label_selector(), request.field_selector(),
      request.limit(), request.continue_(), kGrpcFieldNames);
  if (!filter.ok()) return ToGrpc(filter.status());
  absl::StatusOr<WindowFilter> windows =
      WindowFilter::Create({request.windows().begin(), request.windows().end()}, options_.windows);
  if (!windows.ok()) return ToGrpc(windows.status());
  if (shut_down_.load(std::memory_order_acquire)) return ShuttingDown();
  if (!source_->Ready()) return NotReady();

  response->set_revision(hub_->revision());
  *response->mutable_tick_time() = ToProtoTimestamp(hub_->last_tick());
  const std::shared_ptr<const MetricsSnapshot> cut = source_->Snapshot();
  const auto [first, last] = cut->NamespaceRange(request.namespace_());
  const std::span<const metrics_api::PodRef> pods(cut->pods.data() + first, last - first);
  const metrics_api::Page page = Select(*filter, GroupVersion::kV1alpha1, pods);
  response->mutable_items()->Reserve(static_cast<int>(page.indices.size()));
  for (size_t i : page.indices) {
    v1::PodMetrics* item = response->add_items();
    *item = metrics_api::ToProto(*pods[i]);
    windows->Apply(item);
  }
  response->set_continue_(page.continue_token);
  return grpc::Status::OK;
}

grpc::Status AggregatorService::DoWatch(grpc::ServerContext* context,
                                        const v1::WatchRequest& request,
                                        grpc::ServerWriter<v1::WatchEvent>* writer) {
  if (!request.has_nodes() && !request.has_pods()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "a watch must choose nodes, pods or both (set WatchRequest.nodes "
                        "and/or WatchRequest.pods, even empty)");
  }
  std::optional<ListQuery> nodes;
  if (request.has_nodes()) {
    absl::StatusOr<ListQuery> filter =
        MakeListQuery(ApiResource::kNodes, "", request.nodes().label_selector(),
                      request.nodes().field_selector(), 0, "", kGrpcFieldNames);
    if (!filter.ok()) return ToGrpc(filter.status());
    nodes = *std::move(filter);
  }
  std::optional<ListQuery> pods;
  if (request.has_pods()) {
    absl::StatusOr<ListQuery> filter = MakeListQuery(
        ApiResource::kPods, request.pods().namespace_(), request.pods().label_selector(),
        request.pods().field_selector(), 0, "", kGrpcFieldNames);
    if (!filter.ok()) return ToGrpc(filter.status());
    pods = *std::move(filter);
  }
  absl::StatusOr<WindowFilter> windows =
      WindowFilter::Create({request.windows().begin(), request.windows().end()}, options_.windows);
  if (!windows.ok()) return ToGrpc(windows.status());
  if (shut_down_.load(std::memory_order_acquire)) return ShuttingDown();
  if (!source_->Ready()) return NotReady();

  absl::StatusOr<std::unique_ptr<WatchSubscription>> subscription = hub_->Subscribe();
  if (!subscription.ok()) return ShuttingDown();
  GaugeScope open_watcher(metrics_->watchers);
  WatchStreamState stream(std::move(nodes), std::move(pods), *std::move(windows));

  while (true) {
    if (context->IsCancelled()) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled the watch");
    }
    std::shared_ptr<const WatchBatch> batch;
    switch ((*subscription)->Next(&batch, options_.watch_poll_interval)) {
      case WatchSubscription::Result::kTimeout:
        continue;
      case WatchSubscription::Result::kClosed:
        return ShuttingDown();
      case WatchSubscription::Result::kOverflow:
        if (metrics_->overflowed != nullptr) metrics_->overflowed->Increment();
        KLOG(WARNING) << "gRPC watch from " << context->peer()
                      << " ended: the reader fell behind by more than the queue allows";
        return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                            "the watch fell too far behind the aggregator's rounds and was "
                            "ended; start a new watch (it begins with a fresh snapshot)");
      case WatchSubscription::Result::kBatch:
        break;
    }
    google::protobuf::Timestamp tick = ToProtoTimestamp(batch->tick);
    v1::WatchEvent event;
    for (const WatchChange& change : batch->changes) {
      event.Clear();
      if (!stream.ToEvent(change, &event)) continue;
      event.set_revision(change.revision);
      *event.mutable_tick_time() = tick;
      if (!writer->Write(event)) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
      }
    }
    if (batch->snapshot) {
      event.Clear();
      event.set_type(v1::WatchEvent::SNAPSHOT_END);
      event.set_revision(batch->snapshot_end_revision);
      *event.mutable_tick_time() = tick;
      if (!writer->Write(event)) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
      }
    }
  }
}

}  // namespace kubestat::aggregator
