// WatchCache: the ObjectStore contract (store_contract.h) in front of a MemoryStore and in
// front of a real etcd (skipped without Debian's etcd-server), and what only the cache does:
// one watch and one list of the backing store per kind whatever the number of watchers and
// lists, a feed the backing store ends (every watch of the mirror ends with its status, the
// kind is loaded again and new watches follow), reads passed to the backing store while a
// kind is not loaded, and a list taken in the middle of a replicated batch.
#include "kubestat/apiserver/watch_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/apiserver/etcd_store.h"
#include "kubestat/apiserver/memory_store.h"
#include "kubestat/apiserver/object_store.h"
#include "kubestat/core/clock.h"
#include "kubestat/testing/etcd_process.h"
#include "kubestat/testing/poll.h"
#include "prometheus/registry.h"
#include "store_contract.h"

namespace kubestat::apiserver {
namespace {

using ::testing::ElementsAre;
using namespace kubestat::apiserver::testing;  // NOLINT(google-build-using-namespace)
using kubestat::testing::EtcdBinary;
using kubestat::testing::EtcdCluster;
using kubestat::testing::kNoEtcdMessage;
using kubestat::testing::PollUntil;

// Waits until both kinds of `cache` are loaded, so that the tests exercise the mirrors.
bool WaitLoaded(const WatchCache& cache) {
  return PollUntil(
      [&] { return cache.Loaded(ObjectKind::kNode) && cache.Loaded(ObjectKind::kPod); }, kReady,
      std::chrono::milliseconds(2));
}

struct CachedMemoryFactory {
  static std::string SkipReason() { return ""; }
  std::unique_ptr<ObjectStore> Make(const Clock& clock) {
    backing = std::make_unique<MemoryStore>(MemoryStoreOptions{}, clock);
    auto cache = std::make_unique<WatchCache>(*backing, WatchCacheOptions{}, clock, nullptr);
    if (!WaitLoaded(*cache)) return nullptr;
    return cache;
  }
  std::unique_ptr<MemoryStore> backing;  // outlives the cache (the fixture destroys it last)
};

EtcdCluster& SharedEtcd() {
  static EtcdCluster etcd(1);
  return etcd;
}

struct CachedEtcdFactory {
  static std::string SkipReason() { return EtcdBinary().empty() ? kNoEtcdMessage : ""; }
  std::unique_ptr<ObjectStore> Make(const Clock& clock) {
    if (!SharedEtcd().ok()) return nullptr;
    static std::atomic<int> next = 0;
    EtcdStoreOptions options;
    options.endpoints = SharedEtcd().ClientUrls();
    options.prefix = "/kubestat-cache-test/" + std::to_string(next++) + "/";
    options.object_ttl = Duration(0);  // ExpireOlderThan by the written time, as checked
    options.compaction_interval = Duration(0);
    // The contract never stops etcd: a request waits this long only on a very busy machine.
    options.request_timeout = std::chrono::seconds(20);
    absl::StatusOr<std::unique_ptr<EtcdStore>> etcd = EtcdStore::Create(options, clock);
    if (!etcd.ok()) return nullptr;
    backing = *std::move(etcd);
    auto cache = std::make_unique<WatchCache>(*backing, WatchCacheOptions{}, clock, nullptr);
    if (!WaitLoaded(*cache)) return nullptr;
    return cache;
  }
  std::unique_ptr<EtcdStore> backing;
};

// A MemoryStore that counts the lists and watches asked of it, can refuse lists, and can end
// the watches it gave out as a backing store does when it loses their history.
class CountingStore final : public ObjectStore {
 public:
  explicit CountingStore(const Clock& clock) : inner_(MemoryStoreOptions{}, clock) {}

  absl::StatusOr<WriteResult> Apply(const std::vector<WriteOp>& ops) override {
    return inner_.Apply(ops);
  }
  absl::StatusOr<std::optional<StoredObject>> Get(const ObjectKey& key) const override {
    ++gets;
    return inner_.Get(key);
  }
  absl::StatusOr<ListResult> List(ObjectKind kind, std::string_view namespace_name) const override {
    ++lists;
    if (refuse_lists) return absl::UnavailableError("refused for the test");
    return inner_.List(kind, namespace_name);
  }
  absl::StatusOr<std::unique_ptr<Subscription>> Watch(ObjectKind kind, uint64_t after,
                                                      WatchCallback callback) override {
    return WatchWithEnd(kind, after, std::move(callback), nullptr);
  }
  absl::StatusOr<std::unique_ptr<Subscription>> WatchWithEnd(
      ObjectKind kind, uint64_t after, WatchCallback callback,
      const WatchEndCallback& on_end) override {
    ++watches;
    WatchCallback held = [this, callback = std::move(callback)](const StoreEvent& event) {
      std::unique_lock lock(hold_mu_);
      if (holding_) {
        held_.push_back([callback, event] { callback(event); });
        return;
      }
      lock.unlock();
      callback(event);
    };
    return inner_.WatchWithEnd(kind, after, std::move(held), on_end);
  }

  // Keeps the events of every watch from their watchers until ReleaseEvents (a feed that
  // falls behind); call neither while a write is in progress.
  void HoldEvents() {
    std::lock_guard lock(hold_mu_);
    holding_ = true;
  }
  void ReleaseEvents() {
    std::vector<std::function<void()>> held;
    {
      std::lock_guard lock(hold_mu_);
      holding_ = false;
      held.swap(held_);
    }
    for (const std::function<void()>& deliver : held) deliver();
  }
  absl::StatusOr<size_t> ExpireOlderThan(Timestamp cutoff) override {
    return inner_.ExpireOlderThan(cutoff);
  }
  uint64_t Revision() const override { return inner_.Revision(); }
  bool Ready() const override { return true; }

  // Ends every watch given out so far, as a store that compacted past them.
  void EndWatches(const absl::Status& why) { inner_.EndWatches(why); }

  mutable std::atomic<int> gets = 0;
  mutable std::atomic<int> lists = 0;
  std::atomic<int> watches = 0;
  std::atomic<bool> refuse_lists = false;

 private:
  MemoryStore inner_;
  std::mutex hold_mu_;
  bool holding_ = false;                     // guarded by hold_mu_
  std::vector<std::function<void()>> held_;  // guarded by hold_mu_
};

double CounterValue(prometheus::Registry& registry, const std::string& name,
                    const std::string& label, const std::string& value) {
  double sum = 0;
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      for (const prometheus::ClientMetric::Label& l : metric.label) {
        if (l.name == label && l.value == value) sum += metric.counter.value;
      }
    }
  }
  return sum;
}

}  // namespace

namespace testing {
INSTANTIATE_TYPED_TEST_SUITE_P(CachedMemory, StoreContractTest, CachedMemoryFactory);
INSTANTIATE_TYPED_TEST_SUITE_P(CachedEtcd, StoreContractTest, CachedEtcdFactory);
}  // namespace testing

namespace {

TEST(WatchCacheTest, ManyWatchersAndListsCostOneWatchAndOneListOfTheBackingStorePerKind) {
  FakeClock clock;
  CountingStore backing(clock);
  ASSERT_TRUE(backing.Apply({PutNode("node-1"), PutPod("shop", "web-1")}).ok());
  WatchCache cache(backing, WatchCacheOptions{}, clock, nullptr);
  ASSERT_TRUE(WaitLoaded(cache));
  EXPECT_EQ(backing.lists.load(), 2);
  EXPECT_EQ(backing.watches.load(), 2);

  std::vector<Recorder> recorders(20);
  std::vector<std::unique_ptr<Subscription>> watches;
  for (Recorder& recorder : recorders) {
    watches.push_back(MustWatch(cache, ObjectKind::kPod, backing.Revision(), recorder));
  }
  const uint64_t base = backing.Revision();
  ASSERT_TRUE(cache.Apply({PutPod("shop", "web-2")}).ok());
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<ListResult> list = cache.List(ObjectKind::kPod, "shop");
    ASSERT_TRUE(list.ok());
    EXPECT_THAT(Keys(*list), ElementsAre("pods/shop/web-1", "pods/shop/web-2"));
    absl::StatusOr<std::optional<StoredObject>> got = cache.Get(PodKey("shop", "web-2"));
    ASSERT_TRUE(got.ok());
    ASSERT_TRUE(got->has_value());
  }
  for (const Recorder& recorder : recorders) {
    EXPECT_THAT(recorder.WaitFor(1), ElementsAre(Added("pods/shop/web-2", base + 1)));
  }
  EXPECT_EQ(backing.lists.load(), 2);
  EXPECT_EQ(backing.watches.load(), 2);
  EXPECT_EQ(backing.gets.load(), 0);
}

TEST(WatchCacheTest, AnyStateReadsAnswerAtOnceFromABehindMirrorAndNotOlderThanReadsDoNot) {
  FakeClock clock;
  CountingStore backing(clock);
  prometheus::Registry registry;
  WatchCacheOptions options;
  options.read_wait = Duration(0);  // a mirror that is behind is read past at once
  WatchCache cache(backing, options, clock, &registry);
  ASSERT_TRUE(WaitLoaded(cache));
  absl::StatusOr<WriteResult> first = cache.Apply({PutNode("node-1")});
  ASSERT_TRUE(first.ok());
  backing.HoldEvents();
  absl::StatusOr<WriteResult> second = cache.Apply({PutNode("node-2")});
  ASSERT_TRUE(second.ok());
  const int lists = backing.lists.load();
  const int gets = backing.gets.load();
  using Match = ReadVersion::Match;

  // resourceVersion=0: the mirror as it is, without the write it has not seen, and no read
  // of the backing store.
  absl::StatusOr<ListResult> any = cache.ListAt(ObjectKind::kNode, "", {Match::kAny, 0});
  ASSERT_TRUE(any.ok()) << any.status();
  EXPECT_EQ(any->revision, first->revision);
  EXPECT_THAT(Keys(*any), ElementsAre("nodes/node-1"));
  absl::StatusOr<std::optional<StoredObject>> any_get =
      cache.GetAt(NodeKey("node-2"), {Match::kAny, 0});
  ASSERT_TRUE(any_get.ok());
  EXPECT_FALSE(any_get->has_value());
  EXPECT_EQ(backing.lists.load(), lists);
  EXPECT_EQ(backing.gets.load(), gets);

  // Unset and a revision the mirror has not reached: the backing store, with the write.
  absl::StatusOr<ListResult> latest = cache.List(ObjectKind::kNode, "");
  ASSERT_TRUE(latest.ok());
  EXPECT_THAT(Keys(*latest), ElementsAre("nodes/node-1", "nodes/node-2"));
  absl::StatusOr<ListResult> at_least =
      cache.ListAt(ObjectKind::kNode, "", {Match::kNotOlderThan, second->revision});
  ASSERT_TRUE(at_least.ok()) << at_least.status();
  EXPECT_THAT(Keys(*at_least), ElementsAre("nodes/node-1", "nodes/node-2"));
  absl::StatusOr<std::optional<StoredObject>> at_least_get =
      cache.GetAt(NodeKey("node-2"), {Match::kNotOlderThan, second->revision});
  ASSERT_TRUE(at_least_get.ok());
  EXPECT_TRUE(at_least_get->has_value());
  EXPECT_EQ(backing.lists.load(), lists + 2);
  EXPECT_EQ(backing.gets.load(), gets + 1);
  EXPECT_EQ(CounterValue(registry, "kubestat_apiserver_watch_cache_backing_reads_total", "reason",
                         "behind"),
            3);

  // Once the mirror holds the revision, it answers.
  backing.ReleaseEvents();
  ASSERT_TRUE(PollUntil(
      [&] {
        absl::StatusOr<ListResult> now = cache.ListAt(ObjectKind::kNode, "", {Match::kAny, 0});
        return now.ok() && now->items.size() == 2;
      },
      kReady, std::chrono::milliseconds(2)));
  at_least = cache.ListAt(ObjectKind::kNode, "", {Match::kNotOlderThan, second->revision});
  ASSERT_TRUE(at_least.ok());
  EXPECT_THAT(Keys(*at_least), ElementsAre("nodes/node-1", "nodes/node-2"));
  EXPECT_EQ(backing.lists.load(), lists + 2);
}

TEST(WatchCacheTest, AnEndedFeedEndsTheMirrorsWatchesAndTheKindIsLoadedAgain) {
  FakeClock clock;
  CountingStore backing(clock);
  prometheus::Registry registry;
  WatchCacheOptions options;
  options.retry_interval = std::chrono::milliseconds(5);
  WatchCache cache(backing, options, clock, &registry);
  ASSERT_TRUE(WaitLoaded(cache));

  std::mutex mu;
  std::vector<absl::Status> ended;
  Recorder before;
  absl::StatusOr<std::unique_ptr<Subscription>> watch = cache.WatchWithEnd(
      ObjectKind::kNode, backing.Revision(), before.Callback(), [&](const absl::Status& why) {
        std::lock_guard lock(mu);
        ended.push_back(why);
      });
  ASSERT_TRUE(watch.ok()) << watch.status();

  // The backing store loses the history of the cache's watches, and writes go on.
  backing.refuse_lists = true;
  backing.EndWatches(absl::OutOfRangeError("too old resource version: 3 (9)"));
  ASSERT_TRUE(PollUntil([&] { return !cache.Loaded(ObjectKind::kNode); }, kReady));
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(ended.size(), 1u);
    EXPECT_EQ(ended[0].code(), absl::StatusCode::kOutOfRange);
    EXPECT_EQ(ended[0].message(), "too old resource version: 3 (9)");
  }
  ASSERT_TRUE(cache.Apply({PutNode("node-1")}).ok());
  // Meanwhile reads are the backing store's (which refuses lists here).
  EXPECT_EQ(cache.List(ObjectKind::kNode, "").status().code(), absl::StatusCode::kUnavailable);
  EXPECT_GE(CounterValue(registry, "kubestat_apiserver_watch_cache_backing_reads_total", "reason",
                         "loading"),
            1);

  // The loader tries again until the backing store lists again.
  ASSERT_TRUE(PollUntil(
      [&] {
        return CounterValue(registry, "kubestat_apiserver_watch_cache_loads_total", "result",
                            "failed") >= 2;
      },
      kReady));
  backing.refuse_lists = false;
  ASSERT_TRUE(WaitLoaded(cache));
  const int lists = backing.lists.load();
  absl::StatusOr<ListResult> list = cache.List(ObjectKind::kNode, "");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_THAT(Keys(*list), ElementsAre("nodes/node-1"));
  EXPECT_EQ(backing.lists.load(), lists);  // answered by the reloaded mirror

  Recorder after;
  std::unique_ptr<Subscription> again = MustWatch(cache, ObjectKind::kNode, list->revision, after);
  ASSERT_TRUE(cache.Apply({PutNode("node-2")}).ok());
  EXPECT_THAT(after.WaitFor(1), ElementsAre(Added("nodes/node-2", list->revision + 1)));
  EXPECT_THAT(before.seen(), ::testing::IsEmpty());  // ended: saw nothing after its end
  EXPECT_GE(
      CounterValue(registry, "kubestat_apiserver_watch_cache_events_total", "resource", "nodes"),
      1);
}

TEST(WatchCacheTest, KindsNotLoadedAreReadAndWatchedOnTheBackingStore) {
  FakeClock clock;
  CountingStore backing(clock);
  backing.refuse_lists = true;
  ASSERT_TRUE(backing.Apply({PutNode("node-1")}).ok());
  WatchCacheOptions options;
  options.retry_interval = std::chrono::milliseconds(5);
  WatchCache cache(backing, options, clock, nullptr);
  EXPECT_FALSE(cache.Loaded(ObjectKind::kNode));

  absl::StatusOr<std::optional<StoredObject>> got = cache.Get(NodeKey("node-1"));
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->has_value());
  EXPECT_GE(backing.gets.load(), 1);
  const int watches = backing.watches.load();
  Recorder recorder;
  std::unique_ptr<Subscription> watch = MustWatch(cache, ObjectKind::kNode, 0, recorder);
  EXPECT_EQ(backing.watches.load(), watches + 1);
  EXPECT_THAT(recorder.WaitFor(1), ElementsAre(Added("nodes/node-1", 1)));
}

}  // namespace
}  // namespace kubestat::apiserver
