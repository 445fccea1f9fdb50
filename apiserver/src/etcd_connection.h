// The gRPC side of EtcdStore (etcd_store.h): one channel per etcd endpoint, unary calls with
// a deadline that fail over to the next endpoint, and what the store knows of etcd's health
// and revision from the answers.
//
// A thread watches every channel's connectivity state and asks an idle one to connect. Calls
// here fail at once on a channel that is not connected (they do not wait for ready, so that
// they fail over), and with the synchronous API only a thread waiting on a channel moves its
// connection attempts on: without the watching thread, a channel whose members all died
// would keep a new connection to a restarted member unread (its SETTINGS frame unseen) until
// gRPC's connect timeout, again and again, and stay unready long after etcd answers.
//
// Thread-safe: calls may run on any thread at once.
#ifndef KUBESTAT_APISERVER_SRC_ETCD_CONNECTION_H_
#define KUBESTAT_APISERVER_SRC_ETCD_CONNECTION_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "kubestat/apiserver/etcd_store.h"
#include "kubestat/core/clock.h"

namespace prometheus {
class Counter;
class Registry;
}  // namespace prometheus

namespace kubestat::apiserver::etcd {

// The stubs of one endpoint.
struct EndpointStubs {
  std::string url;  // as configured, for messages
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<etcdserverpb::KV::Stub> kv;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch;
};

// Whether a failed call may be repeated on another endpoint: reads after any failure to
// reach etcd; writes only when the connection refused them before etcd saw them.
enum class CallKind { kRead, kWrite };

class Connection {
 public:
  // InvalidArgument naming the flag for a bad endpoint URL or unreadable TLS file. Counts in
  // `registry` when not null (see EtcdStore::Create), which must outlive the connection.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Connection>> Create(
      const EtcdStoreOptions& options, const Clock& clock,
      prometheus::Registry* registry = nullptr);
  // Stops the channel watching thread (within kStateWatchSlice).
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs `call` with a fresh context (deadline: request_timeout) on the endpoint that last
  // answered, then on the next ones while the failure allows (CallKind). OK, or the last
  // failure: Unavailable "etcd: <url>: <message>" when etcd could not be reached, else
  // etcd's own code and message.
  using Call = std::function<grpc::Status(EndpointStubs& stubs, grpc::ClientContext& context)>;
  [[nodiscard]] absl::Status Unary(CallKind kind, const Call& call);

  // A read (CallKind::kRead) of `request`; records the answer's revision.
  [[nodiscard]] absl::StatusOr<etcdserverpb::RangeResponse> Range(
      const etcdserverpb::RangeRequest& request);

  size_t endpoint_count() const { return endpoints_.size(); }
  EndpointStubs& endpoint(size_t i) { return *endpoints_[i]; }
  // The endpoint that last answered.
  size_t current() const { return current_.load(); }

  // Records an answer from endpoint `i`: the first after an outage logs once how long etcd
  // did not answer; an answer from another endpoint than the last counts a switch.
  void Answered(size_t i);
  // Records a revision an answer carried.
  void SawRevision(int64_t revision);
  // Records that no endpoint answered; the first time after an answer counts an outage.
  void Unreachable();
  // Answered within ready_window, and the latest attempt reached etcd.
  bool Ready() const;
  // The newest revision any answer carried.
  uint64_t revision() const { return revision_.load(); }

 private:
  struct Metrics;
  Connection(const EtcdStoreOptions& options, const Clock& clock, prometheus::Registry* registry);
  // The channel watching thread (see the file comment).
  void WatchChannels();
  // Asks channel `i` to connect when idle and to tell its next state change on cq_.
  void WatchChannel(size_t i, grpc_connectivity_state last);

  const Duration request_timeout_;
  const Duration ready_window_;
  const Clock& clock_;
  std::vector<std::unique_ptr<EndpointStubs>> endpoints_;
  std::atomic<size_t> current_ = 0;
  std::atomic<uint64_t> revision_ = 0;
  std::atomic<bool> reachable_ = false;
  std::atomic<int64_t> last_answer_ = 0;        // MonotonicNow nanoseconds
  std::atomic<int64_t> unreachable_since_ = 0;  // MonotonicNow nanoseconds; 0: answering
  std::unique_ptr<Metrics> metrics_;

  std::mutex states_mu_;   // orders re-arming a watch with the shutdown of states_
  bool stopping_ = false;  // guarded by states_mu_
  grpc::CompletionQueue states_;
  std::thread state_watcher_;
};

// etcd's gRPC status as an absl::Status (see Connection::Unary), naming `url`.
absl::Status FromGrpc(const grpc::Status& status, const std::string& url);

}  // namespace kubestat::apiserver::etcd

#endif  // KUBESTAT_APISERVER_SRC_ETCD_CONNECTION_H_
