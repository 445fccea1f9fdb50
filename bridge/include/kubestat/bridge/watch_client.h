// WatchClient: follows kubestat-aggregator's gRPC Watch (kubestat.v1.Aggregator, every node
// and pod, every window) and turns its events into writes on the PushQueue, keeping the
// metrics API server equal to the aggregator's view.
//
//   ADDED, MODIFIED   the object (metrics_api::FromProto) is Put; an object that does not
//                     convert is counted and logged, and skipped.
//   DELETED           a Delete of its key.
//   SNAPSHOT_END      a resync: the API server's nodes and pods are listed
//                     (GET /apis/metrics/v1alpha1/nodes and /pods, limit/continue pages,
//                     metrics/v1alpha1 lists) and every listed object the stream does not
//                     know (not in the snapshot, nor added since) gets a Delete. The
//                     resync runs on a thread of its own, so the stream is read on while
//                     the API server is slow or down; a failed list is retried after a
//                     jittered backoff (retry_base .. retry_max) as long as the stream lasts.
//
// When the stream ends (the aggregator restarts or cuts the watcher off, the connection
// breaks) a new Watch is started after FullJitterDelay(attempt, reconnect_base,
// reconnect_max), where attempt counts streams in a row that ended before their snapshot;
// a new Watch starts with a full snapshot, so each stream resyncs again.
//
// Connection: plain text to a loopback address, or TLS trusting only ca_file. Each Watch
// call carries `authorization: Bearer <token>` read from token_file (re-read when it
// changes, kube::BearerTokenFile) when one is given.
//
// Readiness: snapshot_pushed() turns true, and stays true, once the first stream's
// snapshot and its resync deletes have all been settled by the pushers (PushQueue
// sequence numbers).
//
// Metrics (when a registry is given): kubestat_bridge_watch_streams_total (Watch calls
// started), kubestat_bridge_watch_events_total{type}, kubestat_bridge_resync_deletes_total.
//
// Ownership: borrows the queue, the API server client, the clock and the registry.
// Thread-safety: Start and Stop from one thread; snapshot_pushed and Stats from any.
#ifndef KUBESTAT_BRIDGE_WATCH_CLIENT_H_
#define KUBESTAT_BRIDGE_WATCH_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/bridge/backoff.h"
#include "kubestat/bridge/push_queue.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/time.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::http {
class Client;
}  // namespace kubestat::http

namespace kubestat::bridge {

struct WatchClientOptions {
  // host:port of the aggregator's gRPC server. Default: "127.0.0.1:8081"
  std::string address = "127.0.0.1:8081";
  // PEM file of the CA that signed the aggregator's gRPC serving certificate; empty: plain
  // text, allowed only to a loopback address. Default: ""
  std::string ca_file;
  // File holding the bearer token sent with each Watch (re-read when it changes); empty:
  // none. Default: ""
  std::string token_file;
  // Jittered wait before a new Watch (see the file comment). Default: 500ms, 30s
  Duration reconnect_base = std::chrono::milliseconds(500);
  Duration reconnect_max = std::chrono::seconds(30);
  // Jittered wait before a failed resync list is tried again. Default: 1s, 30s
  Duration retry_base = std::chrono::seconds(1);
  Duration retry_max = std::chrono::seconds(30);
  // Objects per list page of a resync (limit=). Default: 500
  int64_t list_page_size = 500;

  // InvalidArgument naming the field for: an empty address, plain text to an address that
  // is not loopback (127.0.0.0/8, ::1, localhost), a backoff not positive or with max <
  // base, list_page_size < 1.
  [[nodiscard]] absl::Status Validate() const;
};

struct WatchClientStats {
  uint64_t streams = 0;          // Watch calls started
  uint64_t snapshots = 0;        // SNAPSHOT_END events received
  uint64_t events = 0;           // ADDED, MODIFIED and DELETED events received
  uint64_t bad_objects = 0;      // objects that did not convert (skipped)
  uint64_t resyncs = 0;          // resyncs completed
  uint64_t resync_failures = 0;  // failed resync lists (retried)
  uint64_t resync_deletes = 0;   // Deletes enqueued by resyncs
  // Since when no stream has read an event: the first stream end (or refused token) after
  // the last event read; kZeroTime while the current stream has read one (or none ended).
  Timestamp failing_since = kZeroTime;
  std::string last_error;  // how the newest failed stream ended ("" while reading)
};

// The keys of the API server's objects of one resource (every page of its
// metrics/v1alpha1 list). Errors: the client's, Unavailable for a non-2xx answer (with the
// Status message), InvalidArgument for a body that is not a list.
[[nodiscard]] absl::StatusOr<std::vector<ObjectKey>> ListObjectKeys(http::Client& client,
                                                                    metrics_api::Resource resource,
                                                                    int64_t page_size,
                                                                    const std::stop_token& stop);

class WatchClient {
 public:
  // Validates `options` and reads ca_file (InvalidArgument naming the field). `registry`
  // may be null; `random` null: a MakeRandomSource(). No connection is made yet.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<WatchClient>> Create(
      WatchClientOptions options, PushQueue& queue, http::Client& apiserver, const Clock& clock,
      prometheus::Registry* registry, RandomSource random = {});
  ~WatchClient();  // Stop()
  WatchClient(const WatchClient&) = delete;
  WatchClient& operator=(const WatchClient&) = delete;

  // Starts the watch and resync threads. Once.
  void Start();
  // Cancels the stream and a resync in flight, and joins the threads. Idempotent.
  void Stop();
  // Whether the threads run (Start called, Stop not).
  bool running() const;

  // See "Readiness" in the file comment.
  bool snapshot_pushed() const;
  WatchClientStats Stats() const;

 private:
  class Impl;
  explicit WatchClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kubestat::bridge

#endif  // KUBESTAT_BRIDGE_WATCH_CLIENT_H_
