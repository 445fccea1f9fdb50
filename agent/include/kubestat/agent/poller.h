// PodResourcesPoller: reads the kubelet's podresources socket every resolution and keeps the
// newest answer as a NodePodResources document (metrics_api/node_resources.h).
//
// One poll calls, each with the call timeout:
//   List                     every pod and container, with their exclusive cpus, NUMA
//                            memory, devices and DRA claims;
//   GetAllocatableResources  what the node can hand out;
//   Get                      one pod of the List answer (the first), to learn whether the
//                            kubelet has Get (1.27+); not called when List gave no pod.
// Each method's status in the document is its newest call's (OK, or the code and message of
// the failure: Unavailable with the path for a missing socket, Unimplemented for a kubelet
// that lacks the method, DeadlineExceeded for a slow one); `allocatable` and `pods` are the
// newest answers that succeeded, so an agent whose kubelet went away still shows what it
// last knew, and says so. Nothing here ends the process: every failure is a status and a
// counter.
//
// A restarted kubelet makes a new socket file: before each poll the socket is stat'ed, and
// when its identity (device, inode, change time) differs from the previous poll's, or it
// appeared or went away, the change is counted and logged and the gRPC channel is made anew
// (so the first call does not wait out the old channel's reconnect backoff).
//
// Metrics (registered in the registry given):
//   kubestat_node_agent_polls_total                                counter
//   kubestat_node_agent_calls_total{method,code}                   counter (code: OK,
//       Unimplemented, Unavailable, DeadlineExceeded, ...)
//   kubestat_node_agent_call_duration_seconds{method}              histogram
//   kubestat_node_agent_last_success_timestamp_seconds{method}     gauge (wall clock)
//   kubestat_node_agent_socket_changes_total{change}               counter (appeared,
//       replaced, removed)
//   kubestat_node_agent_pods                                       gauge (newest List)
//
// Threads: PollOnce() from one thread at a time (the loop started by Start(), or a test);
// Latest() and the accessors from any thread. The clock must outlive the poller; the
// registry too.
#ifndef KUBESTAT_AGENT_POLLER_H_
#define KUBESTAT_AGENT_POLLER_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "kubestat/core/clock.h"
#include "kubestat/metrics_api/node_resources.h"
#include "kubestat/podresources/client.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::agent {

struct PollerOptions {
  // Reported as the document's nodeName. Required. Default: ""
  std::string node_name;
  // The socket, the call timeout and the receive limit. Default: podresources' defaults
  podresources::ClientOptions client;
  // Time between polls (the loop of Start()). Default: 10s
  Duration resolution = std::chrono::seconds(10);

  // InvalidArgument naming the field (node_name empty, client options invalid, resolution
  // not positive or not above three call timeouts).
  [[nodiscard]] absl::Status Validate() const;
};

class PodResourcesPoller {
 public:
  // `options` must be valid.
  PodResourcesPoller(PollerOptions options, const Clock& clock, prometheus::Registry& registry);
  ~PodResourcesPoller();  // Stop()s.
  PodResourcesPoller(const PodResourcesPoller&) = delete;
  PodResourcesPoller& operator=(const PodResourcesPoller&) = delete;

  // Polls now and then every resolution of the clock, on a thread of its own.
  void Start();
  // Ends the loop after the poll in progress. Idempotent.
  void Stop();

  // One poll (see the header comment), then the new document is published.
  void PollOnce();

  // The newest document; never null (before the first poll: every method Pending).
  std::shared_ptr<const metrics_api::NodePodResources> Latest() const;
  // When the newest poll started (monotonic clock); std::nullopt before the first.
  std::optional<Timestamp> LastPollStart() const;

  const PollerOptions& options() const { return options_; }

 private:
  struct Metrics;
  // The socket file's identity; std::nullopt when it does not exist.
  struct SocketIdentity {
    uint64_t device = 0;
    uint64_t inode = 0;
    int64_t change_nanos = 0;
    friend bool operator==(const SocketIdentity&, const SocketIdentity&) = default;
  };
  static std::optional<SocketIdentity> Identify(const std::string& path);

  // Counts and logs a change of the socket's identity and makes a new client.
  void FollowSocket();
  // Records a call's outcome in `status` and the metrics.
  void Record(const char* method, const absl::Status& outcome, Duration took,
              metrics_api::MethodStatus& status);

  const PollerOptions options_;
  const Clock& clock_;
  std::unique_ptr<Metrics> metrics_;

  // Used by PollOnce only (one thread at a time).
  std::unique_ptr<podresources::PodResourcesClient> client_;
  std::optional<SocketIdentity> socket_;
  bool polled_ = false;

  mutable std::mutex mu_;  // guards what follows
  std::shared_ptr<const metrics_api::NodePodResources> latest_;
  std::optional<Timestamp> last_poll_start_;
  bool stopping_ = false;
  std::condition_variable cv_;
  std::thread loop_;
};

}  // namespace kubestat::agent

#endif  // KUBESTAT_AGENT_POLLER_H_
