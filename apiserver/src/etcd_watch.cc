#include "etcd_watch.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "etcd_codec.h"
#include "kubestat/core/log.h"
#include "kubestat/core/time.h"

namespace kubestat::apiserver::etcd {
namespace {

constexpr std::chrono::milliseconds kFirstBackoff(100);
constexpr std::chrono::milliseconds kLongestBackoff(2000);

absl::Status TooOld(int64_t after, int64_t compact_revision) {
  return absl::OutOfRangeError(
      absl::StrCat("too old resource version: ", after, " (", compact_revision - 1, ")"));
}

}  // namespace

class WatchMux::Handle final : public Subscription {
 public:
  Handle(WatchMux& mux, int64_t id) : mux_(mux), id_(id) {}
  ~Handle() override { mux_.Cancel(id_); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  void Cancel() override { mux_.Cancel(id_); }

 private:
  WatchMux& mux_;
  const int64_t id_;
};

WatchMux::WatchMux(Connection& connection, std::string prefix, const Clock& clock,
                   Duration request_timeout, Duration give_up_after)
    : connection_(connection),
      prefix_(std::move(prefix)),
      clock_(clock),
      request_timeout_(request_timeout),
      give_up_after_(give_up_after) {
  reader_ = std::thread([this] { ReadLoop(); });
}

WatchMux::~WatchMux() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  {
    std::lock_guard lock(stream_mu_);
    if (context_) context_->TryCancel();
  }
  reader_.join();
}

absl::StatusOr<std::unique_ptr<Subscription>> WatchMux::Watch(ObjectKind kind, uint64_t after,
                                                              WatchCallback callback,
                                                              WatchEndCallback on_end) {
  if (!callback) return absl::InvalidArgumentError("watch: no callback");
  const auto start = static_cast<int64_t>(after) + 1;
  std::unique_lock lock(mu_);
  const int64_t id = next_id_++;
  {
    Watcher& watcher = watchers_[id];
    watcher.kind = kind;
    watcher.next_revision = start;
    watcher.callback = std::move(callback);
    watcher.on_end = std::move(on_end);
    watcher.in_watch_call = true;
    SendCreateLocked(id, watcher);
  }
  const auto deadline = std::chrono::steady_clock::now() + request_timeout_;
  auto decided = [&] {
    auto it = watchers_.find(id);
    return stopping_ || it == watchers_.end() || it->second.state != State::kCreating;
  };
  changed_.wait_until(lock, deadline, decided);

  // etcd creates a watch from a compacted revision and cancels it only later; a range read
  // at the start revision tells now whether it has been compacted.
  auto it = watchers_.find(id);
  if (it != watchers_.end() && it->second.state == State::kCreated &&
      start <= it->second.created_at) {
    lock.unlock();
    const bool compacted = Compacted(kind, start);
    lock.lock();
    if (compacted) {
      changed_.wait_until(lock, deadline, [&] {
        auto found = watchers_.find(id);
        return stopping_ || found == watchers_.end() || found->second.state != State::kCreated;
      });
    }
    it = watchers_.find(id);
  }

  absl::Status refused;
  if (it == watchers_.end() || it->second.state == State::kCreating) {
    refused = absl::UnavailableError(
        absl::StrCat("etcd: no watch created within ", FormatDuration(request_timeout_)));
  } else if (it->second.state == State::kCompacted) {
    refused = TooOld(start - 1, it->second.compact_revision);
  } else if (it->second.state == State::kRefused) {
    refused = absl::UnavailableError(absl::StrCat("etcd refused the watch: ", it->second.refusal));
  }
  if (refused.ok()) {
    it->second.in_watch_call = false;
    return std::make_unique<Handle>(*this, id);
  }
  if (it != watchers_.end()) watchers_.erase(it);
  lock.unlock();
  SendCancel(id);
  return refused;
}

void WatchMux::Cancel(int64_t id) {
  if (std::this_thread::get_id() == reader_id_.load()) {
    // From a callback: the reader holds mu_ and may be iterating this watcher's events.
    if (auto it = watchers_.find(id); it != watchers_.end()) it->second.active = false;
  } else {
    std::lock_guard lock(mu_);  // waits for a callback in progress
    if (watchers_.erase(id) == 0) return;
  }
  SendCancel(id);
}

void WatchMux::SendCreateLocked(int64_t id, const Watcher& watcher) {
  etcdserverpb::WatchRequest request;
  etcdserverpb::WatchCreateRequest* create = request.mutable_create_request();
  const std::string key = KindPrefix(prefix_, watcher.kind);
  create->set_key(key);
  create->set_range_end(PrefixEnd(key));
  create->set_start_revision(watcher.next_revision);
  create->set_prev_kv(true);
  create->set_watch_id(id);
  std::lock_guard lock(stream_mu_);
  // A failed write means the stream broke; the reader re-creates every watch on the next.
  if (stream_) stream_->Write(request);
}

void WatchMux::SendCancel(int64_t id) {
  etcdserverpb::WatchRequest request;
  request.mutable_cancel_request()->set_watch_id(id);
  std::lock_guard lock(stream_mu_);
  if (stream_) stream_->Write(request);
}

bool WatchMux::Compacted(ObjectKind kind, int64_t start) {
  etcdserverpb::RangeRequest request;
  request.set_key(KindPrefix(prefix_, kind));
  request.set_range_end(PrefixEnd(request.key()));
  request.set_revision(start);
  request.set_limit(1);
  request.set_keys_only(true);
  absl::StatusOr<etcdserverpb::RangeResponse> response = connection_.Range(request);
  return response.status().code() == absl::StatusCode::kOutOfRange &&
         absl::StrContains(response.status().message(), "compacted");
}

void WatchMux::ReadLoop() {
  reader_id_.store(std::this_thread::get_id());
  size_t endpoint = connection_.current();
  std::chrono::milliseconds backoff = kFirstBackoff;
  auto down_since = std::chrono::steady_clock::now();
  int failures = 0;  // streams in a row that got no answer
  while (true) {
    auto context = std::make_shared<grpc::ClientContext>();
    // etcd ends the stream when its member loses the leader, rather than letting it stall.
    context->AddMetadata("hasleader", "true");
    EndpointStubs& stubs = connection_.endpoint(endpoint);
    std::shared_ptr<Stream> stream = stubs.watch->Watch(context.get());
    {
      std::lock_guard lock(mu_);
      if (stopping_) {
        context->TryCancel();
      } else {
        {
          std::lock_guard stream_lock(stream_mu_);
          context_ = context;
          stream_ = stream;
        }
        std::erase_if(watchers_, [](const auto& entry) { return !entry.second.active; });
        for (auto& [id, watcher] : watchers_) {
          watcher.state = State::kCreating;
          SendCreateLocked(id, watcher);
        }
      }
    }
    bool answered = false;
    etcdserverpb::WatchResponse response;
    while (stream->Read(&response)) {
      answered = true;
      connection_.Answered(endpoint);
      connection_.SawRevision(response.header().revision());
      std::lock_guard lock(mu_);
      HandleLocked(response);
    }
    {
      std::lock_guard stream_lock(stream_mu_);
      stream_.reset();
      context_.reset();
    }
    const grpc::Status status = stream->Finish();

    std::unique_lock lock(mu_);
    if (stopping_) return;
    const auto now = std::chrono::steady_clock::now();
    failures = answered ? 0 : failures + 1;
    // Logged once per outage and then every 30th attempt, not at every reconnection.
    if (failures <= 1 || failures % 30 == 0) {
      KLOG(WARNING) << "etcd watch stream on " << stubs.url << " ended: " << status.error_message()
                    << "; reconnecting";
    }
    if (answered) {
      backoff = kFirstBackoff;
      down_since = now;
    } else if (now - down_since > give_up_after_) {
      EndAllLocked(absl::UnavailableError(absl::StrCat(
          "etcd: no member answered the watch stream for ", FormatDuration(give_up_after_),
          "; last: ", stubs.url, ": ", status.error_message())));
    }
    endpoint = (endpoint + 1) % connection_.endpoint_count();
    changed_.wait_for(lock, backoff, [&] { return stopping_; });
    if (stopping_) return;
    backoff = std::min(backoff * 2, kLongestBackoff);
  }
}

void WatchMux::HandleLocked(const etcdserverpb::WatchResponse& response) {
  auto it = watchers_.find(response.watch_id());
  if (it == watchers_.end()) return;
  Watcher& watcher = it->second;
  if (response.created() || response.canceled()) {
    if (response.created() && !response.canceled()) {
      watcher.state = State::kCreated;
      watcher.created_at = response.header().revision();
    } else if (response.compact_revision() > 0) {
      watcher.state = State::kCompacted;
      watcher.compact_revision = response.compact_revision();
      if (!watcher.in_watch_call) {
        EndLocked(it, TooOld(watcher.next_revision - 1, watcher.compact_revision));
      }
    } else {
      watcher.state = State::kRefused;
      watcher.refusal = response.cancel_reason();
      if (!watcher.in_watch_call) {
        EndLocked(it, absl::UnavailableError(
                          absl::StrCat("etcd cancelled the watch: ", response.cancel_reason())));
      }
    }
    changed_.notify_all();
    return;
  }
  int64_t last = 0;
  const int count = response.events_size();
  for (int i = 0; i < count; ++i) {
    if (!watcher.active) break;
    const mvccpb::Event& etcd_event = response.events(i);
    const int64_t revision = etcd_event.kv().mod_revision();
    if (revision < watcher.next_revision) continue;
    std::optional<StoreEvent> event = ToEvent(etcd_event);
    if (event.has_value()) {
      event->last_of_batch =
          i + 1 == count || response.events(i + 1).kv().mod_revision() != revision;
      watcher.callback(*event);
    }
    last = revision;
  }
  // etcd sends every event of a revision in one response, so the watch resumes after it.
  if (last > 0) watcher.next_revision = last + 1;
  std::erase_if(watchers_, [](const auto& entry) { return !entry.second.active; });
}

void WatchMux::EndLocked(std::map<int64_t, Watcher>::iterator it, const absl::Status& why) {
  KLOG(WARNING) << "an etcd watch of " << ObjectKindName(it->second.kind)
                << " ended: " << why.message();
  if (it->second.on_end && it->second.active) it->second.on_end(why);
  watchers_.erase(it);
}

void WatchMux::EndAllLocked(const absl::Status& why) {
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    auto next = std::next(it);
    if (!it->second.in_watch_call) EndLocked(it, why);
    it = next;
  }
}

std::optional<StoreEvent> WatchMux::ToEvent(const mvccpb::Event& etcd_event) const {
  StoreEvent event;
  if (etcd_event.type() == mvccpb::Event::DELETE) {
    event.type = EventType::kDeleted;
    absl::StatusOr<StoredObject> before = Decode(prefix_, etcd_event.prev_kv());
    if (before.ok()) {
      event.object = *std::move(before);
    } else {
      // The previous value is compacted away or does not decode: the key still names it.
      std::optional<ObjectKey> key = ParseKey(prefix_, etcd_event.kv().key());
      if (!key.has_value()) return std::nullopt;
      event.object = NameOnly(*key);
    }
    event.object.resource_version = static_cast<uint64_t>(etcd_event.kv().mod_revision());
    event.object.written = clock_.Now();
    return event;
  }
  absl::StatusOr<StoredObject> object = Decode(prefix_, etcd_event.kv());
  if (!object.ok()) {
    KLOG(WARNING) << "etcd watch: skipping " << object.status().message();
    return std::nullopt;
  }
  event.type = etcd_event.kv().create_revision() == etcd_event.kv().mod_revision()
                   ? EventType::kAdded
                   : EventType::kModified;
  event.object = *std::move(object);
  return event;
}

}  // namespace kubestat::apiserver::etcd
