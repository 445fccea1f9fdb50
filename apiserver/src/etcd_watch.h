// EtcdStore's watches (etcd_store.h): every subscription of one store on one bidirectional
// etcd Watch stream, created with the store's own watch ids, read by one thread that runs
// the callbacks, reconnects to the next endpoint when the stream breaks and re-creates every
// subscription from the revision after its last delivered batch.
//
// Locking: mu_ guards the subscriptions and is held while a callback runs, so a Cancel from
// another thread waits for it; stream_mu_ (taken after mu_) guards writes to the stream.
#ifndef KUBESTAT_APISERVER_SRC_ETCD_WATCH_H_
#define KUBESTAT_APISERVER_SRC_ETCD_WATCH_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "etcd_connection.h"
#include "grpcpp/grpcpp.h"
#include "kubestat/apiserver/object_store.h"
#include "kubestat/core/clock.h"

namespace kubestat::apiserver::etcd {

class WatchMux {
 public:
  // Borrows the connection and the clock; starts the reader thread.
  WatchMux(Connection& connection, std::string prefix, const Clock& clock, Duration request_timeout,
           Duration give_up_after);
  // Stops the reader; every Subscription must be gone before.
  ~WatchMux();
  WatchMux(const WatchMux&) = delete;
  WatchMux& operator=(const WatchMux&) = delete;

  // See EtcdStore::WatchWithEnd.
  [[nodiscard]] absl::StatusOr<std::unique_ptr<Subscription>> Watch(ObjectKind kind, uint64_t after,
                                                                    WatchCallback callback,
                                                                    WatchEndCallback on_end);

 private:
  class Handle;
  enum class State { kCreating, kCreated, kCompacted, kRefused };
  struct Watcher {
    ObjectKind kind = ObjectKind::kNode;
    int64_t next_revision = 1;  // the first revision not yet delivered
    WatchCallback callback;
    WatchEndCallback on_end;
    State state = State::kCreating;
    bool in_watch_call = false;  // Watch() still decides; it handles a compaction itself
    bool active = true;          // false once cancelled from inside a callback
    int64_t compact_revision = 0;
    int64_t created_at = 0;  // etcd's revision when the watch was created
    std::string refusal;
  };
  using Stream = grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>;

  void Cancel(int64_t id);
  void ReadLoop();
  // Sends the create request of watcher `id` (needs mu_ held) when a stream is open.
  void SendCreateLocked(int64_t id, const Watcher& watcher);
  void SendCancel(int64_t id);
  void HandleLocked(const etcdserverpb::WatchResponse& response);
  // Ends watcher `it` with `why` (needs mu_ held): on_end runs and it is dropped.
  void EndLocked(std::map<int64_t, Watcher>::iterator it, const absl::Status& why);
  // Ends every watcher when etcd has not answered for give_up_after_ (needs mu_ held).
  void EndAllLocked(const absl::Status& why);
  // The store event of an etcd event; std::nullopt (logged) when its key does not decode.
  std::optional<StoreEvent> ToEvent(const mvccpb::Event& event) const;
  // Whether etcd has compacted the revisions a watch of `kind` from `start` needs.
  bool Compacted(ObjectKind kind, int64_t start);

  Connection& connection_;
  const std::string prefix_;
  const Clock& clock_;
  const Duration request_timeout_;
  const Duration give_up_after_;

  std::mutex mu_;
  std::condition_variable changed_;
  std::map<int64_t, Watcher> watchers_;
  int64_t next_id_ = 1;
  bool stopping_ = false;
  std::atomic<std::thread::id> reader_id_;

  std::mutex stream_mu_;
  std::shared_ptr<grpc::ClientContext> context_;
  std::shared_ptr<Stream> stream_;

  std::thread reader_;
};

}  // namespace kubestat::apiserver::etcd

#endif  // KUBESTAT_APISERVER_SRC_ETCD_WATCH_H_
