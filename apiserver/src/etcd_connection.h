// The gRPC side of EtcdStore (etcd_store.h): one channel per etcd endpoint, unary calls with
// a deadline that fail over to the next endpoint, and what the store knows of etcd's health
// and revision from the answers.
//
// Thread-safe: calls may run on any thread at once.
#ifndef KUBESTAT_APISERVER_SRC_ETCD_CONNECTION_H_
#define KUBESTAT_APISERVER_SRC_ETCD_CONNECTION_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "kubestat/apiserver/etcd_store.h"
#include "kubestat/core/clock.h"

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
  // InvalidArgument naming the flag for a bad endpoint URL or unreadable TLS file.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Connection>> Create(
      const EtcdStoreOptions& options, const Clock& clock);

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

  // Records an answer from endpoint `i`.
  void Answered(size_t i);
  // Records a revision an answer carried.
  void SawRevision(int64_t revision);
  // Records that no endpoint answered.
  void Unreachable();
  // Answered within ready_window, and the latest attempt reached etcd.
  bool Ready() const;
  // The newest revision any answer carried.
  uint64_t revision() const { return revision_.load(); }

 private:
  Connection(const EtcdStoreOptions& options, const Clock& clock);

  const Duration request_timeout_;
  const Duration ready_window_;
  const Clock& clock_;
  std::vector<std::unique_ptr<EndpointStubs>> endpoints_;
  std::atomic<size_t> current_ = 0;
  std::atomic<uint64_t> revision_ = 0;
  std::atomic<bool> reachable_ = false;
  std::atomic<int64_t> last_answer_ = 0;  // MonotonicNow nanoseconds
};

// etcd's gRPC status as an absl::Status (see Connection::Unary), naming `url`.
absl::Status FromGrpc(const grpc::Status& status, const std::string& url);

}  // namespace kubestat::apiserver::etcd

#endif  // KUBESTAT_APISERVER_SRC_ETCD_CONNECTION_H_
