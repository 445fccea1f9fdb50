// AggregatorService: the kubestat.v1.Aggregator gRPC service (see aggregator.proto).
//
// ListNodes / ListPods read the MetricsSource's Snapshot() at the time of the call, apply the
// request's namespace, label and field selectors (metrics_api/query.h) and window names, and answer
// with the objects sorted as the source returns them. The response's revision and tick_time are the
// WatchHub's newest revision and last round: the items are at least that new.
//
// Watch subscribes to the WatchHub and streams, for the objects its selection matches:
// every object of the snapshot as ADDED, one SNAPSHOT_END, then after every round ADDED
// for an object new to the stream, MODIFIED for one whose windows or labels changed, and
// DELETED (key only) for one that disappeared or stopped matching. A watcher whose queue
// overflows ends with RESOURCE_EXHAUSTED and a message; Shutdown() ends every stream with
// UNAVAILABLE; a client cancellation ends it at once.
//
// Access: options.access_check is asked before a call reads anything (see GrpcAccessCheck).
// Errors: INVALID_ARGUMENT for a bad selector or window name (the parser's message), or a
// watch choosing neither nodes nor pods; UNAVAILABLE while the source is not Ready() and
// after Shutdown(). Every call is counted in the registry passed in:
//   kubestat_grpc_requests_total{method,code}     counter, one per finished call
//   kubestat_grpc_request_duration_seconds{method} histogram; for Watch, the stream's life
//   kubestat_grpc_watchers                          gauge, open Watch streams
//   kubestat_grpc_watchers_overflowed_total        counter, streams ended for falling behind
// (method: ListNodes, ListPods, Watch; code: the gRPC code name, e.g. OK, INVALID_ARGUMENT).
//
// Ownership: borrows the source, the hub, the registry and the clock; all must outlive the
// service. Register it with a grpc::ServerBuilder; on stop call Shutdown() before
// grpc::Server::Shutdown() so open streams end promptly.
// Thread-safety: gRPC calls the handlers concurrently; Shutdown() may be called from any
// thread.
#ifndef KUBESTAT_AGGREGATOR_FRONTENDS_GRPC_SERVICE_H_
#define KUBESTAT_AGGREGATOR_FRONTENDS_GRPC_SERVICE_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/aggregator/query/metrics_source.h"
#include "kubestat/aggregator/query/watch_hub.h"
#include "kubestat/core/clock.h"
#include "kubestat/v1/aggregator.grpc.pb.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::aggregator {

// What a call reads, for the access check: resource "nodes" or "pods", the namespace of a pod
// call ("" for all namespaces and for nodes), and the verb ("list" or "watch").
struct GrpcAccessRequest {
  std::string_view resource;
  std::string_view namespace_name;
  std::string_view verb;
};
// Asked before each call reads anything (a Watch choosing nodes and pods asks twice); a
// non-OK answer (UNAUTHENTICATED, PERMISSION_DENIED) ends the call with it. `context` gives
// the call's metadata (the bearer token). Called concurrently.
using GrpcAccessCheck =
    std::function<grpc::Status(const grpc::ServerContext& context, const GrpcAccessRequest&)>;

struct AggregatorServiceOptions {
  // The configured window lengths, ascending (their names are what requests may ask for).
  // Must match the engine's. Default: {10s, 1m, 1h, 24h}
  std::vector<Duration> windows = {std::chrono::seconds(10), std::chrono::minutes(1),
                                   std::chrono::hours(1), std::chrono::hours(24)};
  // How long a Watch handler waits for a batch before checking for cancellation and
  // shutdown. Bounds how long a cancelled stream holds its thread. Default: 200ms
  Duration watch_poll_interval = std::chrono::milliseconds(200);
  // Who may call what. Empty: every call is allowed (the binary always sets one).
  // Default: empty
  GrpcAccessCheck access_check;

  // InvalidArgument naming the field (empty or unsorted windows, a non-positive interval).
  [[nodiscard]] absl::Status Validate() const;
};

class AggregatorService final : public v1::Aggregator::Service {
 public:
  // `options` must pass Validate(). `registry` may be null (no metrics); `clock` measures
  // call durations (MonotonicNow).
  AggregatorService(const MetricsSource* source, WatchHub* hub, prometheus::Registry* registry,
                    AggregatorServiceOptions options = {}, const Clock* clock = &RealClock::Get());
  ~AggregatorService() override;

  grpc::Status ListNodes(grpc::ServerContext* context, const v1::ListNodesRequest* request,
                         v1::ListNodesResponse* response) override;
  grpc::Status ListPods(grpc::ServerContext* context, const v1::ListPodsRequest* request,
                        v1::ListPodsResponse* response) override;
  grpc::Status Watch(grpc::ServerContext* context, const v1::WatchRequest* request,
                     grpc::ServerWriter<v1::WatchEvent>* writer) override;

  // Ends every Watch stream (UNAVAILABLE) and shuts the hub down. Idempotent.
  void Shutdown();

 private:
  struct Metrics;
  grpc::Status Check(const grpc::ServerContext* context, const GrpcAccessRequest& request) const;
  grpc::Status DoListNodes(const v1::ListNodesRequest& request, v1::ListNodesResponse* response);
  grpc::Status DoListPods(const v1::ListPodsRequest& request, v1::ListPodsResponse* response);
  grpc::Status DoWatch(grpc::ServerContext* context, const v1::WatchRequest& request,
                       grpc::ServerWriter<v1::WatchEvent>* writer);
  void Record(int method, const grpc::Status& status, Timestamp start);

  const MetricsSource* source_;
  WatchHub* hub_;
  const AggregatorServiceOptions options_;
  const Clock* clock_;
  std::unique_ptr<Metrics> metrics_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_FRONTENDS_GRPC_SERVICE_H_
