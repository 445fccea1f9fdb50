#include "kubestat/apiserver/memory_store.h"

#include <algorithm>
#include <iterator>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "write_op_check.h"

namespace kubestat::apiserver {
namespace {

// Whether a watcher of `kind` that started after `after` is to see `event`.
bool Wants(ObjectKind kind, uint64_t after, const StoreEvent& event) {
  return event.object.key.kind == kind && event.object.resource_version > after;
}

}  // namespace

// Marks the calling thread as the one delivering events while it holds write_mu_, so that
// a Cancel from inside a callback neither deadlocks on write_mu_ nor erases the watcher
// being iterated; unmarks it even when a callback throws.
class MemoryStore::DeliveryScope {
 public:
  explicit DeliveryScope(MemoryStore& store) : store_(store) {
    store_.delivering_thread_.store(std::this_thread::get_id());
  }
  ~DeliveryScope() {
    store_.delivering_thread_.store(std::thread::id());
    store_.PruneWatchersLocked();
  }
  DeliveryScope(const DeliveryScope&) = delete;
  DeliveryScope& operator=(const DeliveryScope&) = delete;

 private:
  MemoryStore& store_;
};

class MemoryStore::WatchHandle final : public Subscription {
 public:
  WatchHandle(MemoryStore& store, uint64_t id) : store_(store), id_(id) {}
  ~WatchHandle() override { store_.Cancel(id_); }
  WatchHandle(const WatchHandle&) = delete;
  WatchHandle& operator=(const WatchHandle&) = delete;

  void Cancel() override { store_.Cancel(id_); }

 private:
  MemoryStore& store_;
  const uint64_t id_;
};

MemoryStore::MemoryStore(MemoryStoreOptions options, const Clock& clock)
    : options_(options), clock_(clock) {}

MemoryStore::~MemoryStore() = default;

absl::StatusOr<WriteResult> MemoryStore::Apply(const std::vector<WriteOp>& ops) {
  for (size_t i = 0; i < ops.size(); ++i) {
    if (absl::Status status = CheckWriteOp(i, ops[i]); !status.ok()) return status;
  }

  std::lock_guard write(write_mu_);
  // The batch is worked out against objects_ as the earlier ops of the batch leave it:
  // staged maps a key the batch touched to its latest event. objects_ is read without mu_:
  // only a holder of write_mu_ changes it.
  std::vector<StoreEvent> events;
  std::vector<std::optional<size_t>> event_of_op;  // the event of each op, if any
  std::map<ObjectKey, size_t> staged;
  auto present = [&](const ObjectKey& key) -> const StoredObject* {
    if (auto it = staged.find(key); it != staged.end()) {
      const StoreEvent& latest = events[it->second];
      return latest.type == EventType::kDeleted ? nullptr : &latest.object;
    }
    auto it = objects_.find(key);
    return it == objects_.end() ? nullptr : &it->second;
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    const WriteOp& op = ops[i];
    const StoredObject* current = present(op.key);
    StoreEvent event;
    switch (op.type) {
      case WriteOp::Type::kCreate:
      case WriteOp::Type::kPut:
        if (current != nullptr && op.type == WriteOp::Type::kCreate) {
          return absl::AlreadyExistsError(
              absl::StrCat("op ", i, ": ", ObjectKeyString(op.key), " already exists"));
        }
        event.type = current == nullptr ? EventType::kAdded : EventType::kModified;
        event.object.key = op.key;
        // CheckOp made sure the op carries exactly the object of its key's kind.
        event.object.node = op.node;
        event.object.pod = op.pod;
        break;
      case WriteOp::Type::kDelete:
      case WriteOp::Type::kDeleteIfPresent:
        if (current == nullptr && op.type == WriteOp::Type::kDelete) {
          return absl::NotFoundError(
              absl::StrCat("op ", i, ": ", ObjectKeyString(op.key), " not found"));
        }
        if (current == nullptr) {
          event_of_op.emplace_back();
          continue;
        }
        event.type = EventType::kDeleted;
        event.object = *current;
        break;
    }
    event_of_op.emplace_back(events.size());
    staged.insert_or_assign(op.key, events.size());
    events.push_back(std::move(event));
  }

  WriteResult result;
  result.revision = events.empty() ? revision_ : CommitLocked(events);
  result.objects.reserve(ops.size());
  result.created.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    result.created.push_back(event_of_op[i].has_value() &&
                             events[*event_of_op[i]].type == EventType::kAdded);
    if (event_of_op[i].has_value()) {
      result.objects.push_back(events[*event_of_op[i]].object);
    } else {
      StoredObject nothing;
      nothing.key = ops[i].key;
      result.objects.push_back(std::move(nothing));
    }
  }
  return result;
}

namespace {

void StampVersion(StoredObject& object, const std::string& version) {
  if (object.node != nullptr && object.node->resource_version != version) {
    auto stamped = std::make_shared<metrics_api::NodeMetrics>(*object.node);
    stamped->resource_version = version;
    object.node = std::move(stamped);
  }
  if (object.pod != nullptr && object.pod->resource_version != version) {
    auto stamped = std::make_shared<metrics_api::PodMetrics>(*object.pod);
    stamped->resource_version = version;
    object.pod = std::move(stamped);
  }
}

}  // namespace

uint64_t MemoryStore::CommitLocked(std::vector<StoreEvent>& events) {
  const Timestamp now = clock_.Now();
  uint64_t revision = 0;
  {
    std::unique_lock lock(mu_);
    revision = ++revision_;
    const std::string version = std::to_string(revision);
    for (StoreEvent& event : events) {
      event.object.resource_version = revision;
      event.object.written = now;
      // A written object carries its version in its metadata too, so that readers render
      // it as it is instead of copying it to stamp it.
      if (event.type != EventType::kDeleted) StampVersion(event.object, version);
      if (event.type == EventType::kDeleted) {
        objects_.erase(event.object.key);
      } else {
        objects_.insert_or_assign(event.object.key, event.object);
      }
    }
  }
  // Per kind, only the batch's last event of that kind ends the batch.
  bool kind_seen[2] = {false, false};
  for (auto event = events.rbegin(); event != events.rend(); ++event) {
    bool& seen = kind_seen[event->object.key.kind == ObjectKind::kNode ? 0 : 1];
    event->last_of_batch = !seen;
    seen = true;
  }
  KeepAndDeliverLocked(events);
  return revision;
}

void MemoryStore::KeepAndDeliverLocked(const std::vector<StoreEvent>& events) {
  {
    std::unique_lock lock(mu_);
    for (const StoreEvent& event : events) {
      // A replicated batch arrives event by event: the rest of a batch already dropped
      // from the history is not kept either, so every kept event stays above oldest_.
      if (event.object.resource_version > oldest_) history_.push_back(event);
    }
    // Whole batches go, oldest first, so every event above oldest_ stays kept.
    while (history_.size() > options_.history_events) {
      oldest_ = history_.front().object.resource_version;
      while (!history_.empty() && history_.front().object.resource_version == oldest_) {
        history_.pop_front();
      }
    }
  }

  DeliveryScope delivery(*this);
  for (const StoreEvent& event : events) {
    for (const auto& [id, watcher] : watchers_) {
      if (watcher.active && Wants(watcher.kind, watcher.after, event)) watcher.callback(event);
    }
  }
}

void MemoryStore::EndWatchersLocked(const absl::Status& why) {
  DeliveryScope delivery(*this);
  for (auto& [id, watcher] : watchers_) {
    if (!watcher.active) continue;
    watcher.active = false;
    if (watcher.on_end) watcher.on_end(why);
  }
}

void MemoryStore::Reset(uint64_t revision, std::vector<StoredObject> objects,
                        const absl::Status& why) {
  std::lock_guard write(write_mu_);
  EndWatchersLocked(why);
  std::map<ObjectKey, StoredObject> fresh;
  for (StoredObject& object : objects) {
    ObjectKey key = object.key;
    fresh.insert_or_assign(std::move(key), std::move(object));
  }
  std::unique_lock lock(mu_);
  objects_ = std::move(fresh);
  history_.clear();
  revision_ = revision;
  oldest_ = revision;
}

void MemoryStore::EndWatches(const absl::Status& why) {
  std::lock_guard write(write_mu_);
  EndWatchersLocked(why);
}

absl::Status MemoryStore::Replicate(const StoreEvent& event) {
  std::lock_guard write(write_mu_);
  const uint64_t revision = event.object.resource_version;
  {
    std::unique_lock lock(mu_);
    if (revision < revision_) {
      return absl::FailedPreconditionError(absl::StrCat("replicated event at revision ", revision,
                                                        " is older than the store's ", revision_));
    }
    // A batch counts (lists and gets report it, Revision() is it) once its last event is in.
    if (event.last_of_batch) revision_ = revision;
    if (event.type == EventType::kDeleted) {
      objects_.erase(event.object.key);
    } else {
      objects_.insert_or_assign(event.object.key, event.object);
    }
  }
  KeepAndDeliverLocked({event});
  return absl::OkStatus();
}

void MemoryStore::PruneWatchersLocked() {
  std::erase_if(watchers_, [](const auto& entry) { return !entry.second.active; });
}

absl::StatusOr<std::optional<StoredObject>> MemoryStore::Get(const ObjectKey& key) const {
  std::shared_lock lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<ListResult> MemoryStore::List(ObjectKind kind,
                                             std::string_view namespace_name) const {
  const bool one_namespace = kind == ObjectKind::kPod && !namespace_name.empty();
  ObjectKey first;
  first.kind = kind;
  if (one_namespace) first.namespace_name = namespace_name;

  std::shared_lock lock(mu_);
  ListResult result;
  result.revision = revision_;
  for (auto it = objects_.lower_bound(first); it != objects_.end(); ++it) {
    const ObjectKey& key = it->first;
    if (key.kind != kind || (one_namespace && key.namespace_name != namespace_name)) break;
    result.items.push_back(it->second);
  }
  return result;
}

absl::StatusOr<size_t> MemoryStore::Count(ObjectKind kind) const {
  std::shared_lock lock(mu_);
  // Nodes sort before pods (ObjectKey order), so pods start where nodes end.
  auto pods = objects_.lower_bound(ObjectKey{ObjectKind::kPod, "", ""});
  return static_cast<size_t>(kind == ObjectKind::kNode ? std::distance(objects_.begin(), pods)
                                                       : std::distance(pods, objects_.end()));
}

absl::StatusOr<std::unique_ptr<Subscription>> MemoryStore::Watch(ObjectKind kind, uint64_t after,
                                                                 WatchCallback callback) {
  return WatchWithEnd(kind, after, std::move(callback), nullptr);
}

absl::StatusOr<std::unique_ptr<Subscription>> MemoryStore::WatchWithEnd(
    ObjectKind kind, uint64_t after, WatchCallback callback, const WatchEndCallback& on_end) {
  if (!callback) return absl::InvalidArgumentError("watch: no callback");

  std::lock_guard write(write_mu_);
  if (after < oldest_) {
    return absl::OutOfRangeError(
        absl::StrCat("too old resource version: ", after, " (", oldest_, ")"));
  }
  {
    DeliveryScope delivery(*this);
    auto first = std::upper_bound(history_.begin(), history_.end(), after,
                                  [](uint64_t revision, const StoreEvent& event) {
                                    return revision < event.object.resource_version;
                                  });
    for (auto it = first; it != history_.end(); ++it) {
      if (Wants(kind, after, *it)) callback(*it);
    }
  }
  const uint64_t id = next_watcher_id_++;
  Watcher watcher;
  watcher.kind = kind;
  watcher.after = after;
  watcher.callback = std::move(callback);
  watcher.on_end = on_end;
  watchers_.emplace(id, std::move(watcher));
  return std::make_unique<WatchHandle>(*this, id);
}

void MemoryStore::Cancel(uint64_t id) {
  if (delivering_thread_.load() == std::this_thread::get_id()) {
    // Called from a callback: this thread holds write_mu_ and may be iterating watchers_,
    // so the watcher is only marked; the delivery drops it when it ends.
    if (auto it = watchers_.find(id); it != watchers_.end()) it->second.active = false;
    return;
  }
  std::lock_guard write(write_mu_);
  watchers_.erase(id);
}

absl::StatusOr<size_t> MemoryStore::ExpireOlderThan(Timestamp cutoff) {
  std::lock_guard write(write_mu_);
  std::vector<StoreEvent> events;
  for (const auto& [key, object] : objects_) {
    if (object.written < cutoff) events.push_back(StoreEvent{EventType::kDeleted, object});
  }
  if (events.empty()) return 0;
  CommitLocked(events);
  return events.size();
}

uint64_t MemoryStore::Revision() const {
  std::shared_lock lock(mu_);
  return revision_;
}

uint64_t MemoryStore::OldestRevision() const {
  std::shared_lock lock(mu_);
  return oldest_;
}

bool MemoryStore::Ready() const { return true; }

}  // namespace kubestat::apiserver
