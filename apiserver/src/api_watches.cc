#include "api_watches.h"

#include <algorithm>
#include <utility>

#include "kubestat/core/absl_view.h"
#include "kubestat/core/log.h"

namespace kubestat::apiserver::internal {

ApiWatches::ApiWatches(const ApiServerOptions& options, ObjectStore& store, const Clock& clock,
                       StoreTimer& timer, prometheus::Registry& registry)
    : options_(options),
      store_(store),
      clock_(clock),
      timer_(timer),
      watchers_(prometheus::BuildGauge()
                    .Name("kubestat_apiserver_watchers")
                    .Help("Open watches, by resource.")
                    .Register(registry)),
      events_(prometheus::BuildCounter()
                  .Name("kubestat_apiserver_watch_events_total")
                  .Help("Watch events sent, by type.")
                  .Register(registry)),
      overflows_(prometheus::BuildCounter()
                     .Name("kubestat_apiserver_watch_overflows_total")
                     .Help("Watches ended because their client fell too far behind.")
                     .Register(registry)
                     .Add({})) {
  for (EventType type : {EventType::kAdded, EventType::kModified, EventType::kDeleted}) {
    event_counts_[static_cast<size_t>(type)] =
        &events_.Add({{"type", std::string(EventTypeName(type))}});
  }
}

void ApiWatches::Sweep(Timestamp now) {
  std::vector<std::shared_ptr<WatchSession>> sessions;
  {
    std::lock_guard lock(sessions_mu_);
    sessions = sessions_;
  }
  std::vector<std::shared_ptr<WatchSession>> ended;
  for (const std::shared_ptr<WatchSession>& s : sessions) {
    bool overflowed;
    {
      std::lock_guard lock(s->mu);
      overflowed = s->ended;
    }
    if (overflowed || s->writer->closed() || now >= s->deadline) {
      End(*s);
      ended.push_back(s);
      continue;
    }
    if (s->bookmarks && now >= s->next_bookmark) {
      std::lock_guard lock(s->mu);
      s->writer->Write(kube::WriteWatchEvent(kube::WatchEventType::kBookmark,
                                             BookmarkObject(s->kind, s->gv, s->last_revision,
                                                            /*initial_events_end=*/false)));
      s->next_bookmark = now + options_.bookmark_interval;
      events_.Add({{"type", "BOOKMARK"}}).Increment();
    }
  }
  if (!ended.empty()) {
    std::lock_guard lock(sessions_mu_);
    std::erase_if(sessions_, [&](const std::shared_ptr<WatchSession>& s) {
      return std::find(ended.begin(), ended.end(), s) != ended.end();
    });
  }
  UpdateGauges();
}

void ApiWatches::EndAll() {
  std::vector<std::shared_ptr<WatchSession>> sessions;
  {
    std::lock_guard lock(sessions_mu_);
    sessions.swap(sessions_);
  }
  for (const std::shared_ptr<WatchSession>& s : sessions) End(*s);
}

size_t ApiWatches::count() const {
  std::lock_guard lock(sessions_mu_);
  return sessions_.size();
}

void ApiWatches::UpdateGauges() {
  size_t by_kind[2] = {0, 0};
  {
    std::lock_guard lock(sessions_mu_);
    for (const auto& s : sessions_) ++by_kind[s->kind == ObjectKind::kNode ? 0 : 1];
  }
  watchers_.Add({{"resource", "nodes"}}).Set(static_cast<double>(by_kind[0]));
  watchers_.Add({{"resource", "pods"}}).Set(static_cast<double>(by_kind[1]));
}

// Ends a watch: its subscription is cancelled (outside the store's delivery) and its
// stream finished.
void ApiWatches::End(WatchSession& s) {
  {
    std::lock_guard lock(s.mu);
    s.ended = true;
  }
  if (s.subscription) s.subscription->Cancel();  // idempotent
  s.writer->Finish();
}

// Whether the client of `s` has fallen so far behind that its watch must end (s.mu held):
// its unsent events are bounded, not buffered without end. The client lists and watches
// again, as after a 410. The initial events of a watch without a resourceVersion (the
// whole state, as large as a LIST answer) come on top of the bound until the client has
// read down to it once, so that a watch of a large cluster is not ended at its start.
bool ApiWatches::Overflowed(WatchSession& s) {
  const size_t queued = s.writer->queued_bytes();
  if (queued <= options_.max_watch_queue_bytes) {
    s.initial_allowance = 0;
    return false;
  }
  if (queued - options_.max_watch_queue_bytes <= s.initial_allowance) return false;
  s.ended = true;
  s.writer->Finish();
  overflows_.Increment();
  KLOG(WARNING) << "a watch of " << ObjectKindName(s.kind) << " fell more than "
                << options_.max_watch_queue_bytes << " bytes behind and was ended";
  return true;
}

http::Response ApiWatches::Watch(const Target& t, const metrics_api::QueryParams& params) {
  absl::StatusOr<ListQuery> query =
      metrics_api::ParseListQuery(params, ResourceOf(t.kind), t.namespace_name);
  if (!query.ok())
    return http::ErrorResponse(ApiError::BadRequest(StdView(query.status().message())));
  query->limit = 0;  // a watch has no pages
  query->after.clear();
  std::optional<uint64_t> from;  // std::nullopt: start with a list
  // The list a watch without a revision starts with: the newest state (unset), or any state
  // the store holds ("0", as kube-apiserver serves it from its cache).
  ReadVersion start;
  if (auto it = params.find("resourceVersion"); it != params.end() && !it->second.empty()) {
    if (it->second == "0") {
      start.match = ReadVersion::Match::kAny;
    } else {
      from = ParseRevision(it->second);
      if (!from) return http::ErrorResponse(BadResourceVersion(it->second));
    }
  }
  Duration timeout = options_.watch_timeout;
  if (auto it = params.find("timeoutSeconds"); it != params.end() && !it->second.empty()) {
    std::optional<uint64_t> seconds = ParseRevision(it->second);
    if (!seconds)
      return http::ErrorResponse(ApiError::BadRequest("timeoutSeconds: must be a number"));
    timeout = std::min<Duration>(std::chrono::seconds(*seconds), options_.max_watch_timeout);
  }
  auto session = std::make_shared<WatchSession>();
  session->kind = t.kind;
  session->gv = t.gv;
  session->query = *std::move(query);
  session->deadline = clock_.Now() + timeout;
  session->bookmarks = TrueParam(params, "allowWatchBookmarks");
  session->next_bookmark = clock_.Now() + options_.bookmark_interval;
  const bool initial_end_bookmark = TrueParam(params, "sendInitialEvents") && !from;
  http::Response response;
  response.route = t.route;
  response.stream = [this, session, from, start,
                     initial_end_bookmark](std::shared_ptr<http::StreamWriter> writer) {
    session->writer = std::move(writer);
    StartWatch(session, from, start, initial_end_bookmark);
  };
  return response;
}

// Writes one event line of `session` (its mutex held).
void ApiWatches::Send(WatchSession& s, kube::WatchEventType type, std::string_view object_json,
                      std::string_view type_name) {
  s.writer->Write(kube::WriteWatchEvent(type, object_json));
  events_.Add({{"type", std::string(type_name)}}).Increment();
}

void ApiWatches::StartWatch(const std::shared_ptr<WatchSession>& session,
                            std::optional<uint64_t> from, const ReadVersion& start,
                            bool initial_end_bookmark) {
  WatchSession& s = *session;
  uint64_t after = from.value_or(0);
  if (!from) {
    absl::StatusOr<ListResult> list =
        timer_.Timed("list", [&] { return store_.ListAt(s.kind, s.query.namespace_name, start); });
    if (!list.ok()) {
      std::lock_guard lock(s.mu);
      Send(s, kube::WatchEventType::kError, ApiError::FromStatus(list.status()).ToJson(), "ERROR");
      s.writer->Finish();
      return;
    }
    const RenderContext ctx{s.gv, clock_.Now(), 0};
    std::lock_guard lock(s.mu);
    for (const StoredObject& o : list->items) {
      if (s.writer->closed()) return;
      if (Matches(s.query, s.gv, o))
        Send(s, kube::WatchEventType::kAdded, RenderStored(o, ctx), "ADDED");
    }
    s.initial_allowance = s.writer->queued_bytes();
    after = list->revision;
    s.last_revision = after;
    if (initial_end_bookmark) {
      Send(s, kube::WatchEventType::kBookmark,
           BookmarkObject(s.kind, s.gv, after, /*initial_events_end=*/true), "BOOKMARK");
    }
  } else {
    std::lock_guard lock(s.mu);
    s.last_revision = after;
  }
  std::weak_ptr<WatchSession> weak = session;
  absl::StatusOr<std::unique_ptr<Subscription>> subscription = store_.WatchWithEnd(
      s.kind, after, [this, weak](const StoreEvent& event) { Deliver(weak, event); },
      [this, weak](const absl::Status& why) { EndedByStore(weak, why); });
  if (!subscription.ok()) {
    std::lock_guard lock(s.mu);
    Send(s, kube::WatchEventType::kError, WatchError(subscription.status()).ToJson(), "ERROR");
    s.writer->Finish();
    return;
  }
  s.subscription = *std::move(subscription);
  std::lock_guard lock(sessions_mu_);
  sessions_.push_back(session);
}

// 410 Expired when the store no longer has the history a watch needs (the client lists
// again), else the store's error.
ApiError ApiWatches::WatchError(const absl::Status& status) {
  return status.code() == absl::StatusCode::kOutOfRange
             ? ApiError::Expired(StdView(status.message()))
             : ApiError::FromStatus(status);
}

// The store ended a watch's subscription on its own (etcd compacted past it, or stayed
// unreachable): the client gets an ERROR event and the stream ends, instead of a watch
// that silently stalls.
void ApiWatches::EndedByStore(const std::weak_ptr<WatchSession>& weak, const absl::Status& why) {
  std::shared_ptr<WatchSession> session = weak.lock();
  if (!session) return;
  WatchSession& s = *session;
  std::lock_guard lock(s.mu);
  if (s.ended || s.writer->closed()) return;
  s.ended = true;
  Send(s, kube::WatchEventType::kError, WatchError(why).ToJson(), "ERROR");
  s.writer->Finish();
}

// A store event for one watch: sent when it matches, and the resume point moves.
void ApiWatches::Deliver(const std::weak_ptr<WatchSession>& weak, const StoreEvent& event) {
  std::shared_ptr<WatchSession> session = weak.lock();
  if (!session) return;
  WatchSession& s = *session;
  std::lock_guard lock(s.mu);
  if (s.ended || s.writer->closed() || Overflowed(s)) return;
  // An object the watch never showed (other namespace, selector, no usage) is not shown
  // leaving either.
  if (Matches(s.query, s.gv, event.object)) {
    s.writer->Write(EventLine(event, s.gv));
    event_counts_[static_cast<size_t>(event.type)]->Increment();
  }
  s.last_revision = std::max(s.last_revision, event.object.resource_version);
}

// The watch line of `event` in `gv`. The store hands one event to every subscription in
// turn, so the line rendered for the first watcher of each group-version is kept and
// copied to the others instead of rendered again.
std::string ApiWatches::EventLine(const StoreEvent& event, GroupVersion gv) {
  std::lock_guard lock(line_mu_);
  RenderedLine& last = last_lines_[static_cast<size_t>(gv)];
  const void* object = event.object.node ? static_cast<const void*>(event.object.node.get())
                                         : static_cast<const void*>(event.object.pod.get());
  if (!last.valid || last.type != event.type || last.revision != event.object.resource_version ||
      last.object != object || last.key != event.object.key) {
    last.valid = true;
    last.object = object;
    last.type = event.type;
    last.revision = event.object.resource_version;
    last.key = event.object.key;
    last.line = kube::WriteWatchEvent(
        ToWatchType(event.type), RenderStored(event.object, RenderContext{gv, clock_.Now(), 0}));
  }
  return last.line;
}

}  // namespace kubestat::apiserver::internal
