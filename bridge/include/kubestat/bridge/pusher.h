// Pusher: a small pool of workers that take batches from the PushQueue and write them to
// the metrics API server over http::Client (keep-alive connections, one request per worker
// at a time).
//
// Modes:
//   kBulk (default): one POST metrics_api::kWriteBatchPath per batch, its body
//     RenderWriteBatch (write_batch.h), applied by the server all or nothing.
//   kPut: for any Kubernetes-style server, one request per object, in the batch's order:
//     PUT /apis/metrics/v1alpha1/nodes/{name} or /namespaces/{ns}/pods/{name} with the
//     metrics/v1alpha1 object (render.h), DELETE of the same path for a gone object.
//
// Outcomes, per object:
//   acknowledged  a 2xx, or 404 to a DELETE (gone either way): settled, counted as pushed by
//                 code; a put's end-to-end lag (its newest window endtime to now) observed.
//   refused       400, 403, 404, 413, 422 and any other 4xx but 401, 408 and 429: never
//                 retried; counted as failed by code and logged once per object (until the
//                 object is acknowledged again) with the server's Status message. A refused
//                 bulk batch of several objects is split in halves and each half pushed again
//                 at once, so that only the objects the server refuses are dropped (a batch
//                 is refused whole for one bad item, or for one namespace the bridge may not
//                 write).
//   retryable     no complete answer (connection, TLS, timeout), 401, 408, 429 and 5xx: the
//                 objects go back to the queue (PushQueue::Return), a retry is counted, and
//                 every worker waits before its next request: the server's Retry-After
//                 (whole seconds, at most 5m) on a 429 or 503 that has one, otherwise
//                 FullJitterDelay(consecutive failures, retry_base, retry_max). The first
//                 acknowledged push resets the count.
// Waits run on the injected clock (backoff.h) and end at Stop; Stop also cancels requests
// in flight, whose objects go back to the queue uncounted.
//
// Metrics (when a registry is given):
//   kubestat_bridge_pushed_objects_total{code}   objects acknowledged, by HTTP code
//   kubestat_bridge_failed_objects_total{code}   objects refused for good, by HTTP code
//   kubestat_bridge_push_retries_total{code}     failed attempts that will be retried, by
//       HTTP code or http::FailureReason ("connect", "timeout", ...)
//   kubestat_bridge_push_lag_seconds             newest window endtime → acknowledged push
//
// Ownership: borrows the queue, the client, the clock and the registry, which must outlive
// it. Thread-safety: Start and Stop from one thread; Stats from any.
#ifndef KUBESTAT_BRIDGE_PUSHER_H_
#define KUBESTAT_BRIDGE_PUSHER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/bridge/backoff.h"
#include "kubestat/bridge/push_queue.h"
#include "kubestat/core/clock.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::http {
class Client;
}  // namespace kubestat::http

namespace kubestat::bridge {

enum class PushMode { kBulk, kPut };

// "bulk" -> kBulk, "put" -> kPut; InvalidArgument for anything else.
[[nodiscard]] absl::StatusOr<PushMode> ParsePushMode(std::string_view text);

// The path of a put mode request for `key`: "/apis/metrics/v1alpha1/nodes/node-1",
// "/apis/metrics/v1alpha1/namespaces/shop/pods/web-1" (each segment percent-encoded).
std::string ObjectPath(const ObjectKey& key);

struct PusherOptions {
  // Default: kBulk
  PushMode mode = PushMode::kBulk;
  // Most objects per batch (per bulk request; per turn of a worker in put mode).
  // Default: 500
  size_t max_batch_objects = 500;
  // Most bytes of items per bulk body (RenderWriteItem sizes), well under the server's
  // 3 MiB body limit. Default: 1048576 (1 MiB)
  size_t max_batch_bytes = size_t{1} << 20;
  // Workers, each with at most one request in flight. Default: 4
  int max_in_flight = 4;
  // First and largest ceiling of the jittered retry delay. Default: 500ms, 30s
  Duration retry_base = std::chrono::milliseconds(500);
  Duration retry_max = std::chrono::seconds(30);

  // InvalidArgument naming the field for: max_batch_objects or max_batch_bytes 0,
  // max_in_flight outside 1..64, retry_base not positive, retry_max below retry_base.
  [[nodiscard]] absl::Status Validate() const;
};

// Counts since the pusher was made.
struct PusherStats {
  std::map<std::string, uint64_t> pushed;   // objects acknowledged, by HTTP code
  std::map<std::string, uint64_t> failed;   // objects refused for good, by HTTP code
  std::map<std::string, uint64_t> retries;  // retried attempts, by code or failure reason
  uint64_t requests = 0;                    // requests sent (answered or not)
  uint32_t consecutive_failures = 0;        // retryable failures since the last success
  // No request starts before this MonotonicNow reading (the current backoff).
  Timestamp retry_not_before{};
};

class Pusher {
 public:
  // `options` must have passed Validate(). `registry` may be null; `random` null: a
  // MakeRandomSource().
  Pusher(PusherOptions options, PushQueue& queue, http::Client& client, const Clock& clock,
         prometheus::Registry* registry, RandomSource random = {});
  ~Pusher();  // Stop()
  Pusher(const Pusher&) = delete;
  Pusher& operator=(const Pusher&) = delete;

  // Starts the workers. Once.
  void Start();
  // Stops and joins the workers; taken items go back to the queue. Idempotent.
  void Stop();
  // Whether the workers run (Start called, Stop not).
  bool running() const;

  PusherStats Stats() const;

 private:
  struct Metrics;
  // What one request came to.
  struct Attempt {
    absl::Status transport;  // not OK: no complete answer
    int code = 0;
    std::string body;
    std::string retry_after;
  };
  enum class Verdict { kAcknowledged, kRefused, kRetry, kCancelled };

  void Work(const std::stop_token& stop);
  // Pushes `items` (taken from the queue) and settles every one of them.
  void PushBulk(std::vector<PushItem> items, const std::stop_token& stop);
  void PushEach(std::vector<PushItem> items, const std::stop_token& stop);
  Attempt Send(const std::string& method, const std::string& path, std::string body,
               const std::stop_token& stop);
  Verdict Judge(const Attempt& attempt, bool is_delete) const;
  void Acknowledged(const std::vector<PushItem>& items, int code);
  void Refused(const std::vector<PushItem>& items, const Attempt& attempt);
  void Retry(std::vector<PushItem> items, const Attempt& attempt);
  Timestamp Gate() const;

  const PusherOptions options_;
  PushQueue& queue_;
  http::Client& client_;
  const Clock& clock_;
  RandomSource random_;
  std::unique_ptr<Metrics> metrics_;

  mutable std::mutex mu_;
  PusherStats stats_;
  std::set<ObjectKey> logged_refusals_;
  std::vector<std::jthread> workers_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace kubestat::bridge

#endif  // KUBESTAT_BRIDGE_PUSHER_H_
