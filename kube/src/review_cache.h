// Internal: the answer cache shared by TokenReviewer and SubjectAccessReviewer.
//
// Keys are SHA-256 digests (so a cached token is never held in memory as such); each entry
// expires at its own time (clock MonotonicNow); at most `max_entries` are kept, the least
// recently used evicted first. Lookups for a key whose fetch is under way wait for it
// instead of fetching again. Thread-safe; `fetch` runs without the lock.
#ifndef KUBESTAT_KUBE_SRC_REVIEW_CACHE_H_
#define KUBESTAT_KUBE_SRC_REVIEW_CACHE_H_

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "kubestat/core/clock.h"

namespace kubestat::kube::internal {

// Raw 32-byte SHA-256 digest.
std::string Sha256(std::string_view data);
// Lowercase hex of `bytes`.
std::string Hex(std::string_view bytes);

enum class CacheLookup { kHit, kMiss, kCoalesced };

template <typename Value>
class ReviewCache {
 public:
  ReviewCache(const Clock& clock, size_t max_entries) : clock_(clock), max_entries_(max_entries) {}

  // The cached value for `key`, or the result of `fetch()`, stored for `ttl_of(value)`
  // (not stored when that is <= 0). `observe` is told which, as soon as that is known (for
  // kCoalesced before waiting; it runs under the cache's lock, so it must not call back).
  Value Get(const std::string& key, const std::function<Value()>& fetch,
            const std::function<Duration(const Value&)>& ttl_of,
            const std::function<void(CacheLookup)>& observe) {
    std::unique_lock<std::mutex> lock(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      if (clock_.MonotonicNow() < it->second.expires) {
        lru_.splice(lru_.begin(), lru_, it->second.position);
        observe(CacheLookup::kHit);
        return it->second.value;
      }
      lru_.erase(it->second.position);
      entries_.erase(it);
    }
    if (auto it = pending_.find(key); it != pending_.end()) {
      std::shared_ptr<Pending> pending = it->second;
      observe(CacheLookup::kCoalesced);
      done_.wait(lock, [&pending] { return pending->value.has_value(); });
      return *pending->value;
    }
    auto pending = std::make_shared<Pending>();
    pending_.emplace(key, pending);
    observe(CacheLookup::kMiss);
    lock.unlock();

    Value value = fetch();
    const Duration ttl = ttl_of(value);

    lock.lock();
    if (ttl > Duration::zero()) Insert(key, value, clock_.MonotonicNow() + ttl);
    pending->value = value;
    pending_.erase(key);
    lock.unlock();
    done_.notify_all();
    return value;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.size();
  }

 private:
  struct Entry {
    Value value;
    Timestamp expires;
    std::list<std::string>::iterator position;
  };
  struct Pending {
    std::optional<Value> value;
  };

  // mu_ held.
  void Insert(const std::string& key, const Value& value, Timestamp expires) {
    if (auto it = entries_.find(key); it != entries_.end()) {
      lru_.erase(it->second.position);
      entries_.erase(it);
    }
    while (entries_.size() >= max_entries_ && !lru_.empty()) {
      entries_.erase(lru_.back());
      lru_.pop_back();
    }
    lru_.push_front(key);
    entries_.emplace(key, Entry{value, expires, lru_.begin()});
  }

  const Clock& clock_;
  const size_t max_entries_;
  mutable std::mutex mu_;
  std::condition_variable done_;
  std::unordered_map<std::string, Entry> entries_;
  // Most recently used first.
  std::list<std::string> lru_;
  std::unordered_map<std::string, std::shared_ptr<Pending>> pending_;
};

}  // namespace kubestat::kube::internal

#endif  // KUBESTAT_KUBE_SRC_REVIEW_CACHE_H_
