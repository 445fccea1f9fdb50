// kube::ListWatch: keeps a consumer in step with one Kubernetes collection
// (/api/v1/pods, /apis/apps/v1/namespaces/shop/deployments, ...) by list+watch, as
// client-go's reflector does, over kubestat::http::Client (http/client.h).
//
//   ListWatchOptions options;
//   options.path = "/api/v1/pods";
//   ListWatch pods(options, *list_client, *watch_client, handler);
//   pods.Start();      // a thread of its own lists, then watches, until Stop()
//   ...
//   pods.Stop();
//
// What it does, in a loop until stopped:
//   1. List: GET <path>?limit=<page_size> (and &fieldSelector= when given), then &continue=<token>
//   for each further page,
//      until a page has no continue token. Each item goes to the handler as its JSON text;
//      when every page has been read the handler is told the list is complete and its
//      resourceVersion becomes the resume point. The items of a complete list are the whole
//      collection: whatever the consumer held and the list lacks has been deleted.
//   2. Watch: GET <path>?watch=true&allowWatchBookmarks=true&resourceVersion=<rv>
//      &timeoutSeconds=<watch_timeout>, streamed; each line is a watch event
//      (watch_event.h). ADDED, MODIFIED and DELETED go to the handler and, once it accepts
//      one, its object's resourceVersion becomes the resume point; a BOOKMARK only moves
//      the resume point. When the watch ends (the server's timeoutSeconds, a proxy, a
//      broken connection), it is started again at once from the resume point, so every
//      change arrives exactly once and nothing is listed again.
//   3. Expired: when the server answers the watch with HTTP 410, or sends an ERROR event
//      whose Status says 410 (Expired/Gone), the resume point is too old; when either says
//      "Too large resource version" (504 Timeout), it is newer than the server knows (a
//      kube-apiserver restarted on an older store). Either way the collection is listed
//      again (step 1), and the consumer diffs that list against what it holds.
//   4. Errors: a failed list page (no answer, a non-2xx answer, a body that is not a JSON
//      list) abandons that list, a failed watch ends that watch; either is reported to the
//      handler and retried after retry_backoff (a list from its first page, a watch from
//      the resume point). A watch line that is not a usable event (not JSON, an unknown
//      type, an ERROR other than those of step 3, or one the handler refuses) is reported as an
//      event error and ends the watch, which is then reported as failed with the same status and
//      retried after the backoff. Errors never stop the loop.
//   5. Stop: Stop() cancels the request in flight at once (http::ClientRequest::stop) and
//      ends a backoff wait; it returns once the thread has ended. What the stop interrupts
//      is not reported as an error.
//
// Clients: the list requests go to `list_client` (its ClientOptions::timeout bounds each
// page, max_response_bytes caps a page); the watches to `watch_client`, whose
// ClientOptions::timeout must exceed watch_timeout (it ends a watch that stays silent that
// long). Both may be the same client and may be shared with other ListWatches.
//
// Ownership: borrows both clients and the handler, which must outlive the ListWatch.
// Thread-safety: the handler is called only from the ListWatch's thread, one call at a
// time, in the order above, and never with a ListWatch lock held. Start, Stop and
// resource_version may be called from any thread. retry_backoff is waited in real time
// (tests keep it tiny); request deadlines run on the clients' clocks.
#ifndef KUBESTAT_KUBE_LIST_WATCH_H_
#define KUBESTAT_KUBE_LIST_WATCH_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"
#include "kubestat/core/clock.h"
#include "kubestat/kube/watch_event.h"

namespace kubestat::http {
class Client;
}  // namespace kubestat::http

namespace kubestat::kube {

struct ListWatchOptions {
  // The collection's path, percent-encoded, without a query: "/api/v1/nodes",
  // "/apis/apps/v1/namespaces/shop/deployments". Required. Default: ""
  std::string path;
  // A field selector sent with every list and watch (fieldSelector=), e.g.
  // "metadata.name=extension-apiserver-authentication", as RBAC rules naming resourceNames
  // require of a list or watch; "" for none. Default: ""
  std::string field_selector;
  // Items per list page (limit=). Default: 500
  int page_size = 500;
  // timeoutSeconds asked of each watch (whole seconds, at least 1s); the server ends the
  // watch then and it is resumed. Default: 5m
  Duration watch_timeout = std::chrono::minutes(5);
  // How long a watch may wait for its response head (http::Client::Stream's
  // header_timeout). Default: 60s
  Duration watch_head_timeout = std::chrono::seconds(60);
  // Wait after a failed request before retrying (real time); 0 retries at once.
  // Default: 1s
  Duration retry_backoff = std::chrono::seconds(1);
  // Ask for BOOKMARK events (allowWatchBookmarks=true). Default: true
  bool allow_watch_bookmarks = true;
  // Largest watch event line accepted, in bytes; a longer one fails the watch
  // (ResourceExhausted). Default: 256 MiB
  size_t max_event_bytes = size_t{256} << 20;

  // InvalidArgument naming the first bad field: a path that does not start with '/' or
  // holds a '?'; page_size < 1; watch_timeout < 1s; watch_head_timeout <= 0;
  // retry_backoff < 0; max_event_bytes 0.
  [[nodiscard]] absl::Status Validate() const;
};

// A failure ListWatch reports (and then retries).
struct ListWatchError {
  enum class Stage {
    kList,   // a list page request, or its body
    kWatch,  // a watch request, or its stream
    kEvent,  // one line of a watch stream
  };
  Stage stage = Stage::kList;
  // kList and kWatch:
  //   - no complete answer: http::Client's error as it returned it (its FailureReason
  //     label: timeout, connect, tls, read, auth, ...);
  //   - a non-2xx answer: when its body is a Status, ApiError(code, the Status's reason,
  //     "GET <path>: HTTP <code>: <message>").ToStatus(); otherwise Unavailable
  //     "GET <path>: HTTP <code>"; http_code tells the code either way;
  //   - a list page that is not a JSON list: InvalidArgument; a watch line longer than
  //     max_event_bytes: ResourceExhausted; a watch ended by a bad event: that event's
  //     status.
  // kEvent: InvalidArgument from ParseWatchEvent or ParseObjectMeta; for an ERROR event
  //   other than 410, its Status as ApiError::ToStatus() (message "watch error: ...");
  //   or the status the handler returned.
  absl::Status status;
  // The HTTP code of a non-2xx answer; 0 for every other failure.
  int http_code = 0;
};

// What a ListWatch tells its consumer. Called on the ListWatch's thread (see the file
// comment); the views are valid only during the call.
class ListWatchHandler {
 public:
  virtual ~ListWatchHandler() = default;

  // A list begins (the first one or a relist). Items a consumer gathered from an earlier
  // list that did not complete are to be dropped.
  virtual void OnListStart() {}
  // One item of the list being read, as its JSON text exactly as received, in the
  // server's order, page after page.
  virtual void OnListItem(std::string_view object_json) = 0;
  // Every page has been read: the items since OnListStart are the whole collection at
  // `resource_version`, which resource_version() already returns. Not called for a list
  // that failed or was stopped part way.
  virtual void OnListComplete(std::string_view resource_version) = 0;
  // An ADDED, MODIFIED or DELETED event. OK: applied, and the resume point moves to the
  // object's resourceVersion after this returns. An error: the event is reported as a
  // kEvent error with this status and the watch ends (retried after the backoff from the
  // resume point, which did not move).
  [[nodiscard]] virtual absl::Status OnEvent(const WatchEvent& event) = 0;

  // Observations, for counters and logs.
  // A watch request is about to be sent.
  virtual void OnWatchStart() {}
  // The server answered a watch request with a 2xx head: the watch is open (events may
  // take a while to come).
  virtual void OnWatchOpen() {}
  // The resume point has expired (HTTP 410 or an ERROR event with 410) or is newer than
  // the server knows ("Too large resource version"); a relist follows.
  virtual void OnExpired() {}
  // A failure (see ListWatchError); a retry follows after the backoff.
  virtual void OnError(const ListWatchError& error) { (void)error; }
};

class ListWatch {
 public:
  // `options` must be valid (Validate() OK): a bad one is a programming error and asserts.
  ListWatch(ListWatchOptions options, http::Client& list_client, http::Client& watch_client,
            ListWatchHandler& handler);
  ~ListWatch();  // Stop()
  ListWatch(const ListWatch&) = delete;
  ListWatch& operator=(const ListWatch&) = delete;

  // Starts the thread that lists and watches. Once; a call after the first, or after
  // Stop(), does nothing.
  void Start();
  // Stops the loop (see the file comment) and joins the thread. Idempotent; also fine
  // without Start().
  void Stop();

  // The resume point: the resourceVersion of the last complete list, or of the last
  // accepted event or bookmark since; "" before the first list completes.
  std::string resource_version() const;

 private:
  void Run(const std::stop_token& stop);
  // "&fieldSelector=<escaped>", or "" without one.
  std::string FieldSelectorQuery() const;
  // One whole list (every page); an OK status when it completed.
  ListWatchError List(const std::stop_token& stop);
  // One watch request from the resume point, until it ends; *expired when the server said
  // 410.
  ListWatchError Watch(const std::stop_token& stop, bool* expired);
  // Handles one line of a watch stream; *expired when it was an ERROR with 410.
  absl::Status HandleLine(std::string_view line, bool* expired);
  // Waits retry_backoff; false when stopped meanwhile.
  bool Backoff(const std::stop_token& stop);
  void SetResourceVersion(std::string resource_version);

  const ListWatchOptions options_;
  http::Client& list_client_;
  http::Client& watch_client_;
  ListWatchHandler& handler_;

  mutable std::mutex mu_;
  std::condition_variable_any backoff_cv_;
  std::string resource_version_;  // guarded by mu_
  bool started_ = false;          // guarded by mu_
  bool stopped_ = false;          // guarded by mu_
  std::mutex join_mu_;            // one Stop() joins at a time
  std::jthread thread_;
};

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_LIST_WATCH_H_
