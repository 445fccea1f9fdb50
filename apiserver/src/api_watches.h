// The API server's watches: each a session streaming the store's events that match its
// query (after the initial list, or from a resourceVersion), with bookmarks, a deadline and a
// bound on what a slow client may leave unread; the sweep ends sessions that are done.
// Private to apiserver/src.
// Thread-safe: borrows the options, the store, the clock and the timer, which must outlive it.
#ifndef KUBESTAT_APISERVER_SRC_API_WATCHES_H_
#define KUBESTAT_APISERVER_SRC_API_WATCHES_H_

#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api_request.h"
#include "kubestat/apiserver/api_server.h"

namespace kubestat::apiserver::internal {

class ApiWatches {
 public:
  ApiWatches(const ApiServerOptions& options, ObjectStore& store, const Clock& clock,
             StoreTimer& timer, prometheus::Registry& registry);

  // GET ...?watch=true: a streamed answer that starts the session once the stream is open.
  http::Response Watch(const Target& t, const metrics_api::QueryParams& params);
  // Ends the sessions that overflowed, whose client left or whose deadline passed; sends the
  // bookmarks that are due; updates the watcher gauges.
  void Sweep(Timestamp now);
  // Ends every session (the server stops).
  void EndAll();
  size_t count() const;

 private:
  struct WatchSession {
    ObjectKind kind = ObjectKind::kNode;
    GroupVersion gv = GroupVersion::kV1alpha1;
    ListQuery query;
    std::shared_ptr<http::StreamWriter> writer;
    std::unique_ptr<Subscription> subscription;
    Timestamp deadline;
    bool bookmarks = false;
    Timestamp next_bookmark;
    std::mutex mu;               // orders the writes of events and bookmarks
    uint64_t last_revision = 0;  // guarded by mu: the newest revision written
    bool ended = false;          // guarded by mu
    // Guarded by mu: the bytes of the initial events still allowed on top of the bound,
    // until the client has once caught up to within the bound.
    size_t initial_allowance = 0;
  };

  // Ends a watch: its subscription is cancelled (outside the store's delivery) and its
  // stream finished.
  void End(WatchSession& s);
  // Whether the client of `s` has fallen so far behind that its watch must end (s.mu held).
  bool Overflowed(WatchSession& s);
  // Writes one event line of `session` (its mutex held).
  void Send(WatchSession& s, kube::WatchEventType type, std::string_view object_json,
            std::string_view type_name);
  void StartWatch(const std::shared_ptr<WatchSession>& session, std::optional<uint64_t> from,
                  const ReadVersion& start, bool initial_end_bookmark);
  static ApiError WatchError(const absl::Status& status);
  void EndedByStore(const std::weak_ptr<WatchSession>& weak, const absl::Status& why);
  void Deliver(const std::weak_ptr<WatchSession>& weak, const StoreEvent& event);
  std::string EventLine(const StoreEvent& event, GroupVersion gv);
  void UpdateGauges();

  const ApiServerOptions& options_;
  ObjectStore& store_;
  const Clock& clock_;
  StoreTimer& timer_;
  prometheus::Family<prometheus::Gauge>& watchers_;
  prometheus::Family<prometheus::Counter>& events_;
  // events_ of each EventType, looked up once: every delivered event counts.
  prometheus::Counter* event_counts_[3] = {};
  prometheus::Counter& overflows_;

  // The last watch line rendered per group-version (EventLine).
  struct RenderedLine {
    bool valid = false;
    EventType type = EventType::kAdded;
    uint64_t revision = 0;
    const void* object = nullptr;  // the stored object's identity (one batch may hold two)
    ObjectKey key;
    std::string line;
  };
  std::mutex line_mu_;
  RenderedLine last_lines_[3];  // guarded by line_mu_; indexed by GroupVersion

  mutable std::mutex sessions_mu_;
  std::vector<std::shared_ptr<WatchSession>> sessions_;  // guarded by sessions_mu_
};

}  // namespace kubestat::apiserver::internal

#endif  // KUBESTAT_APISERVER_SRC_API_WATCHES_H_
