// The ObjectStore contract (object_store.h) as typed tests that every store runs: revisions
// per batch, all-or-nothing batches and their errors, lists and gets, watches (history then
// live, kinds, future revisions, cancel, a race of writers and new watches) and TTL on a
// FakeClock.
//
// A store's test file defines a factory type and instantiates the suite:
//
//   struct MemoryStoreFactory {
//     // Why the store cannot be tested here (its back end is not installed), or "".
//     static std::string SkipReason();
//     // A fresh, empty store on `clock` that no other test shares (nullptr: a failure).
//     std::unique_ptr<ObjectStore> Make(const Clock& clock);
//   };
//   INSTANTIATE_TYPED_TEST_SUITE_P(Memory, StoreContractTest, MemoryStoreFactory);
//
// Revisions are compared relative to the store's revision when the test starts (etcd's
// starts above 0); a store may deliver events on another thread, so tests wait for the
// events they expect (with a deadline) and prove an event absent by waiting for a later one.
#ifndef KUBESTAT_TESTS_APISERVER_STORE_CONTRACT_H_
#define KUBESTAT_TESTS_APISERVER_STORE_CONTRACT_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/apimachinery/api_error.h"
#include "kubestat/apiserver/object_store.h"
#include "kubestat/core/clock.h"
#include "kubestat/testing/metrics_objects.h"
#include "kubestat/testing/poll.h"

namespace kubestat::apiserver::testing {

// How long a test waits for another thread or process to get somewhere (only a broken
// store takes that long).
inline constexpr std::chrono::seconds kReady(20);

inline ObjectKey NodeKey(const std::string& name) { return ObjectKey{ObjectKind::kNode, "", name}; }
inline ObjectKey PodKey(const std::string& namespace_name, const std::string& name) {
  return ObjectKey{ObjectKind::kPod, namespace_name, name};
}

inline std::shared_ptr<const metrics_api::NodeMetrics> NodeObject(const std::string& name,
                                                                  uint64_t v = 100) {
  return std::make_shared<const metrics_api::NodeMetrics>(
      kubestat::testing::MakeNode(name, {{"role", "worker"}}, kubestat::testing::BaseTime(), v));
}
inline std::shared_ptr<const metrics_api::PodMetrics> PodObject(const std::string& namespace_name,
                                                                const std::string& name,
                                                                uint64_t v = 100) {
  return std::make_shared<const metrics_api::PodMetrics>(kubestat::testing::MakePod(
      namespace_name, name, "node-1", {{"app", "web"}}, kubestat::testing::BaseTime(), v));
}

inline WriteOp PutNode(const std::string& name, uint64_t v = 100) {
  WriteOp op;
  op.key = NodeKey(name);
  op.node = NodeObject(name, v);
  return op;
}
inline WriteOp CreateNode(const std::string& name) {
  WriteOp op = PutNode(name);
  op.type = WriteOp::Type::kCreate;
  return op;
}
inline WriteOp PutPod(const std::string& namespace_name, const std::string& name,
                      uint64_t v = 100) {
  WriteOp op;
  op.key = PodKey(namespace_name, name);
  op.pod = PodObject(namespace_name, name, v);
  return op;
}
inline WriteOp CreatePod(const std::string& namespace_name, const std::string& name) {
  WriteOp op = PutPod(namespace_name, name);
  op.type = WriteOp::Type::kCreate;
  return op;
}
inline WriteOp Delete(ObjectKey key, WriteOp::Type type = WriteOp::Type::kDelete) {
  WriteOp op;
  op.type = type;
  op.key = std::move(key);
  return op;
}

// One delivered event, reduced to what the tests compare.
struct Seen {
  EventType type = EventType::kAdded;
  std::string key;
  uint64_t revision = 0;
  friend bool operator==(const Seen&, const Seen&) = default;
};
inline void PrintTo(const Seen& seen, std::ostream* out) {
  *out << EventTypeName(seen.type) << " " << seen.key << " @" << seen.revision;
}
inline Seen Added(const std::string& key, uint64_t revision) {
  return {EventType::kAdded, key, revision};
}
inline Seen Modified(const std::string& key, uint64_t revision) {
  return {EventType::kModified, key, revision};
}
inline Seen Deleted(const std::string& key, uint64_t revision) {
  return {EventType::kDeleted, key, revision};
}

// Records what a watch delivers; readable from any thread.
class Recorder {
 public:
  WatchCallback Callback() {
    return [this](const StoreEvent& event) {
      std::lock_guard lock(mu_);
      seen_.push_back(
          {event.type, ObjectKeyString(event.object.key), event.object.resource_version});
    };
  }
  std::vector<Seen> seen() const {
    std::lock_guard lock(mu_);
    return seen_;
  }
  std::vector<uint64_t> revisions() const {
    std::vector<uint64_t> revisions;
    for (const Seen& seen : seen()) revisions.push_back(seen.revision);
    return revisions;
  }
  // The events once at least `count` arrived (or all there are after `deadline`).
  std::vector<Seen> WaitFor(size_t count, std::chrono::milliseconds deadline = kReady) const {
    kubestat::testing::PollUntil([&] { return seen().size() >= count; }, deadline,
                                 std::chrono::milliseconds(5));
    return seen();
  }

 private:
  mutable std::mutex mu_;
  std::vector<Seen> seen_;
};

inline std::unique_ptr<Subscription> MustWatch(ObjectStore& store, ObjectKind kind, uint64_t after,
                                               Recorder& recorder) {
  absl::StatusOr<std::unique_ptr<Subscription>> watch =
      store.Watch(kind, after, recorder.Callback());
  EXPECT_TRUE(watch.ok()) << watch.status();
  return watch.ok() ? std::move(*watch) : nullptr;
}

// Applies batches of one node put each, named node-<first> .. node-<first+count-1>.
inline void PutNodes(ObjectStore& store, int first, int count) {
  for (int i = first; i < first + count; ++i) {
    ASSERT_TRUE(store.Apply({PutNode("node-" + std::to_string(i))}).ok());
  }
}

inline std::vector<std::string> Keys(const ListResult& list) {
  std::vector<std::string> keys;
  for (const StoredObject& item : list.items) keys.push_back(ObjectKeyString(item.key));
  return keys;
}

template <typename Factory>
class StoreContractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = Factory::SkipReason(); !why.empty()) GTEST_SKIP() << why;
    store_ = factory_.Make(clock_);
    ASSERT_NE(store_, nullptr);
    base_ = store_->Revision();
  }
  // The revision of the n-th batch this test commits.
  uint64_t R(uint64_t n) const { return base_ + n; }

  FakeClock clock_;
  Factory factory_;
  std::unique_ptr<ObjectStore> store_;
  uint64_t base_ = 0;
};

TYPED_TEST_SUITE_P(StoreContractTest);

TYPED_TEST_P(StoreContractTest, EachSuccessfulBatchMovesTheRevisionByExactlyOne) {
  ObjectStore& store = *this->store_;
  absl::StatusOr<WriteResult> first =
      store.Apply({PutNode("node-1"), PutNode("node-2"), PutPod("shop", "web-1")});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->revision, this->R(1));
  EXPECT_EQ(store.Revision(), this->R(1));
  absl::StatusOr<WriteResult> second = store.Apply({PutNode("node-1", 200)});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->revision, this->R(2));
  EXPECT_EQ(store.Revision(), this->R(2));
}

TYPED_TEST_P(StoreContractTest, EveryObjectOfABatchCarriesTheBatchRevisionAndTime) {
  ObjectStore& store = *this->store_;
  ASSERT_TRUE(store.Apply({PutNode("node-1"), PutPod("shop", "web-1")}).ok());
  this->clock_.Advance(std::chrono::seconds(5));
  const Timestamp second_write = this->clock_.Now();
  absl::StatusOr<WriteResult> result =
      store.Apply({PutNode("node-2"), PutPod("shop", "web-2"), Delete(PodKey("shop", "web-1"))});
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->objects.size(), 3u);
  for (const StoredObject& object : result->objects) {
    EXPECT_EQ(object.resource_version, this->R(2)) << ObjectKeyString(object.key);
    EXPECT_EQ(object.written, second_write) << ObjectKeyString(object.key);
  }
  // The deleted pod comes back as it was, with the deleting batch's revision.
  ASSERT_NE(result->objects[2].pod, nullptr);
  EXPECT_EQ(result->objects[2].pod->name, "web-1");

  absl::StatusOr<ListResult> pods = store.List(ObjectKind::kPod, "");
  ASSERT_TRUE(pods.ok());
  ASSERT_EQ(pods->items.size(), 1u);
  EXPECT_EQ(pods->items[0].resource_version, this->R(2));
  absl::StatusOr<std::optional<StoredObject>> node_1 = store.Get(NodeKey("node-1"));
  ASSERT_TRUE(node_1.ok() && node_1->has_value());
  EXPECT_EQ((*node_1)->resource_version, this->R(1));
  EXPECT_EQ((*node_1)->written, second_write - std::chrono::seconds(5));
  EXPECT_EQ((*node_1)->node->machine.cpu[0].min, 100u);
  absl::StatusOr<std::optional<StoredObject>> node_2 = store.Get(NodeKey("node-2"));
  ASSERT_TRUE(node_2.ok() && node_2->has_value());
  EXPECT_EQ((*node_2)->resource_version, this->R(2));
  // Read objects carry their version in their metadata as well, so readers render them as
  // they are.
  EXPECT_EQ((*node_1)->node->resource_version, std::to_string(this->R(1)));
  EXPECT_EQ((*node_2)->node->resource_version, std::to_string(this->R(2)));
  EXPECT_EQ(pods->items[0].pod->resource_version, std::to_string(this->R(2)));
  absl::StatusOr<std::optional<StoredObject>> absent = store.Get(PodKey("shop", "web-9"));
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->has_value());
}

TYPED_TEST_P(StoreContractTest, AFailingOpStoresNothingOfItsBatchAndSendsNoEvent) {
  ObjectStore& store = *this->store_;
  ASSERT_TRUE(store.Apply({PutNode("node-1")}).ok());
  Recorder recorder;
  std::unique_ptr<Subscription> watch = MustWatch(store, ObjectKind::kNode, this->R(1), recorder);

  absl::StatusOr<WriteResult> result =
      store.Apply({PutNode("node-2"), PutNode("node-1", 999), CreateNode("node-1")});
  ASSERT_EQ(result.status().code(), absl::StatusCode::kAlreadyExists) << result.status();
  EXPECT_EQ(store.Revision(), this->R(1));
  absl::StatusOr<std::optional<StoredObject>> node_2 = store.Get(NodeKey("node-2"));
  ASSERT_TRUE(node_2.ok());
  EXPECT_FALSE(node_2->has_value());
  absl::StatusOr<std::optional<StoredObject>> node_1 = store.Get(NodeKey("node-1"));
  ASSERT_TRUE(node_1.ok() && node_1->has_value());
  EXPECT_EQ((*node_1)->node->machine.cpu[0].min, 100u);  // not the failed batch's 999

  // The watch is alive: the next good batch is the next revision and is the first event.
  ASSERT_TRUE(store.Apply({PutNode("node-3")}).ok());
  EXPECT_THAT(recorder.WaitFor(1), ::testing::ElementsAre(Added("nodes/node-3", this->R(2))));
}

TYPED_TEST_P(StoreContractTest, CreateOfAPresentKeyIsAlreadyExistsNamingTheOpIndexAndKey) {
  ObjectStore& store = *this->store_;
  ASSERT_TRUE(store.Apply({PutPod("shop", "web-1")}).ok());
  absl::StatusOr<WriteResult> result =
      store.Apply({PutNode("node-1"), CreatePod("shop", "web-2"), CreatePod("shop", "web-1")});
  EXPECT_EQ(result.status(), absl::AlreadyExistsError("op 2: pods/shop/web-1 already exists"));
  EXPECT_EQ(store.Revision(), this->R(1));
}

TYPED_TEST_P(StoreContractTest, DeleteOfAnAbsentKeyIsNotFoundNamingTheOpIndexAndKey) {
  ObjectStore& store = *this->store_;
  absl::StatusOr<WriteResult> result = store.Apply({PutNode("node-1"), Delete(NodeKey("node-9"))});
  EXPECT_EQ(result.status(), absl::NotFoundError("op 1: nodes/node-9 not found"));
  EXPECT_EQ(store.Revision(), this->R(0));
  // A key the batch itself creates first may be deleted by a later op.
  absl::StatusOr<WriteResult> created_then_deleted =
      store.Apply({CreateNode("node-5"), Delete(NodeKey("node-5")), Delete(NodeKey("node-5"))});
  EXPECT_EQ(created_then_deleted.status(), absl::NotFoundError("op 2: nodes/node-5 not found"));
}

TYPED_TEST_P(StoreContractTest, OpsThatDoNotFitTheirKeyAreInvalidArgumentNamingTheOpIndex) {
  ObjectStore& store = *this->store_;
  WriteOp wrong_name = PutNode("node-1");
  wrong_name.node = NodeObject("node-2");
  WriteOp pod_on_node_key = PutNode("node-1");
  pod_on_node_key.node = nullptr;
  pod_on_node_key.pod = PodObject("shop", "node-1");
  WriteOp no_object = CreatePod("shop", "web-1");
  no_object.pod = nullptr;
  WriteOp wrong_namespace = PutPod("shop", "web-1");
  wrong_namespace.pod = PodObject("dev", "web-1");
  WriteOp node_key_with_namespace = PutNode("node-1");
  node_key_with_namespace.key.namespace_name = "shop";
  WriteOp pod_key_without_namespace = Delete(PodKey("", "web-1"));

  EXPECT_EQ(store.Apply({PutNode("node-0"), wrong_name}).status(),
            absl::InvalidArgumentError("op 1: nodes/node-1: the object is nodes/node-2"));
  EXPECT_EQ(store.Apply({pod_on_node_key}).status(),
            absl::InvalidArgumentError(
                "op 0: nodes/node-1: a node key needs a node object and no pod object"));
  EXPECT_EQ(store.Apply({PutNode("node-0"), PutNode("node-9"), no_object}).status(),
            absl::InvalidArgumentError(
                "op 2: pods/shop/web-1: a pod key needs a pod object and no node object"));
  EXPECT_EQ(store.Apply({wrong_namespace}).status(),
            absl::InvalidArgumentError("op 0: pods/shop/web-1: the object is pods/dev/web-1"));
  EXPECT_EQ(store.Apply({node_key_with_namespace}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Apply({pod_key_without_namespace}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Revision(), this->R(0));
  absl::StatusOr<ListResult> nodes = store.List(ObjectKind::kNode, "");
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(nodes->items, ::testing::IsEmpty());
}

TYPED_TEST_P(StoreContractTest, ListIsSortedByKeyAndSelectsOneNamespaceOfPods) {
  ObjectStore& store = *this->store_;
  ASSERT_TRUE(store
                  .Apply({PutPod("shop", "web-2"), PutNode("node-b"), PutPod("dev", "api-1"),
                          PutPod("shop", "db-0"), PutNode("node-a"), PutPod("kube-system", "dns"),
                          PutPod("shop-eu", "web-1"), PutPod("sho", "x")})
                  .ok());
  ASSERT_TRUE(store.Apply({PutPod("shop", "web-1")}).ok());

  absl::StatusOr<ListResult> pods = store.List(ObjectKind::kPod, "");
  ASSERT_TRUE(pods.ok());
  EXPECT_EQ(pods->revision, this->R(2));
  EXPECT_THAT(Keys(*pods), ::testing::ElementsAre("pods/dev/api-1", "pods/kube-system/dns",
                                                  "pods/sho/x", "pods/shop/db-0", "pods/shop/web-1",
                                                  "pods/shop/web-2", "pods/shop-eu/web-1"));
  absl::StatusOr<ListResult> shop = store.List(ObjectKind::kPod, "shop");
  ASSERT_TRUE(shop.ok());
  EXPECT_THAT(Keys(*shop),
              ::testing::ElementsAre("pods/shop/db-0", "pods/shop/web-1", "pods/shop/web-2"));
  absl::StatusOr<ListResult> none = store.List(ObjectKind::kPod, "nowhere");
  ASSERT_TRUE(none.ok());
  EXPECT_THAT(none->items, ::testing::IsEmpty());
  absl::StatusOr<ListResult> nodes = store.List(ObjectKind::kNode, "");
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(Keys(*nodes), ::testing::ElementsAre("nodes/node-a", "nodes/node-b"));
}

// A read the store cannot answer at the revision asked: 504 Timeout "Too large resource
// version" as kube-apiserver answers it.
inline void ExpectTooLarge(const absl::Status& status, uint64_t wanted) {
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  const ApiError error = ApiError::FromStatus(status);
  EXPECT_EQ(error.code(), 504);
  EXPECT_EQ(error.reason(), StatusReason::kTimeout);
  EXPECT_THAT(error.message(),
              ::testing::StartsWith("Too large resource version: " + std::to_string(wanted)));
  ASSERT_EQ(error.details().causes.size(), 1u);
  EXPECT_EQ(error.details().causes[0].reason, "ResourceVersionTooLarge");
}

TYPED_TEST_P(StoreContractTest, ReadsNotOlderThanAReachedRevisionSeeItAndABeyondOneIsTooLarge) {
  ObjectStore& store = *this->store_;
  ASSERT_TRUE(store.Apply({PutNode("node-1")}).ok());
  ASSERT_TRUE(store.Apply({PutPod("shop", "web-1")}).ok());
  using Match = ReadVersion::Match;

  absl::StatusOr<ListResult> pods =
      store.ListAt(ObjectKind::kPod, "", {Match::kNotOlderThan, this->R(2)});
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_GE(pods->revision, this->R(2));
  EXPECT_THAT(Keys(*pods), ::testing::ElementsAre("pods/shop/web-1"));
  absl::StatusOr<ListResult> nodes =
      store.ListAt(ObjectKind::kNode, "", {Match::kNotOlderThan, this->R(1)});
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_GE(nodes->revision, this->R(1));
  EXPECT_THAT(Keys(*nodes), ::testing::ElementsAre("nodes/node-1"));
  absl::StatusOr<std::optional<StoredObject>> pod =
      store.GetAt(PodKey("shop", "web-1"), {Match::kNotOlderThan, this->R(2)});
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_TRUE(pod->has_value());
  // Any state: never newer than the store, and what the store holds once it settled.
  ASSERT_TRUE(kubestat::testing::PollUntil(
      [&] {
        absl::StatusOr<ListResult> any = store.ListAt(ObjectKind::kPod, "", {Match::kAny, 0});
        return any.ok() && any->revision <= store.Revision() && any->items.size() == 1;
      },
      kReady, std::chrono::milliseconds(2)));
  absl::StatusOr<std::optional<StoredObject>> any_node =
      store.GetAt(NodeKey("node-1"), {Match::kAny, 0});
  ASSERT_TRUE(any_node.ok()) << any_node.status();
  EXPECT_TRUE(any_node->has_value());

  const uint64_t beyond = this->R(2) + 1000;
  ExpectTooLarge(store.ListAt(ObjectKind::kNode, "", {Match::kNotOlderThan, beyond}).status(),
                 beyond);
  ExpectTooLarge(store.GetAt(NodeKey("node-1"), {Match::kNotOlderThan, beyond}).status(), beyond);
}

TYPED_TEST_P(StoreContractTest, AnExactListIsTheStateAtThatRevisionOrExpired) {
  ObjectStore& store = *this->store_;
  ASSERT_TRUE(store.Apply({PutNode("node-1")}).ok());
  ASSERT_TRUE(store.Apply({PutNode("node-2")}).ok());
  using Match = ReadVersion::Match;
  // The cache's mirror reaches the newest revision as its feed brings it.
  absl::StatusOr<ListResult> now;
  ASSERT_TRUE(kubestat::testing::PollUntil(
      [&] {
        now = store.ListAt(ObjectKind::kNode, "", {Match::kExact, this->R(2)});
        return now.ok();
      },
      kReady, std::chrono::milliseconds(2)))
      << now.status();
  EXPECT_EQ(now->revision, this->R(2));
  EXPECT_THAT(Keys(*now), ::testing::ElementsAre("nodes/node-1", "nodes/node-2"));
  // An older revision: its state where the store keeps it (etcd), else 410 Expired.
  absl::StatusOr<ListResult> before =
      store.ListAt(ObjectKind::kNode, "", {Match::kExact, this->R(1)});
  if (before.ok()) {
    EXPECT_EQ(before->revision, this->R(1));
    EXPECT_THAT(Keys(*before), ::testing::ElementsAre("nodes/node-1"));
  } else {
    EXPECT_EQ(before.status().code(), absl::StatusCode::kOutOfRange) << before.status();
    EXPECT_EQ(ApiError::FromStatus(before.status()).code(), 410);
  }
  const uint64_t beyond = this->R(2) + 1000;
  ExpectTooLarge(store.ListAt(ObjectKind::kNode, "", {Match::kExact, beyond}).status(), beyond);
}

TYPED_TEST_P(StoreContractTest, PutsAndCreatesTellWhetherTheyMadeTheirKey) {
  ObjectStore& store = *this->store_;
  absl::StatusOr<WriteResult> first = store.Apply({PutNode("node-1"), CreatePod("shop", "web-1")});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(first->created, ::testing::ElementsAre(true, true));
  absl::StatusOr<WriteResult> second = store.Apply(
      {PutNode("node-1", 200), PutNode("node-2"), Delete(NodeKey("node-1")), PutNode("node-1"),
       Delete(NodeKey("node-3"), WriteOp::Type::kDeleteIfPresent), PutPod("shop", "web-1")});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_THAT(second->created, ::testing::ElementsAre(false, true, false, true, false, false));
}

TYPED_TEST_P(StoreContractTest, CountIsTheNumberOfObjectsOfEachKind) {
  ObjectStore& store = *this->store_;
  auto count = [&](ObjectKind kind) {
    absl::StatusOr<size_t> n = store.Count(kind);
    EXPECT_TRUE(n.ok()) << n.status();
    return n.value_or(999);
  };
  EXPECT_EQ(count(ObjectKind::kNode), 0u);
  EXPECT_EQ(count(ObjectKind::kPod), 0u);
  ASSERT_TRUE(store
                  .Apply({PutNode("node-1"), PutNode("node-2"), PutPod("shop", "web-1"),
                          PutPod("a", "x"), PutPod("zoo", "y")})
                  .ok());
  EXPECT_EQ(count(ObjectKind::kNode), 2u);
  EXPECT_EQ(count(ObjectKind::kPod), 3u);
  ASSERT_TRUE(store.Apply({Delete(NodeKey("node-1")), Delete(PodKey("a", "x"))}).ok());
  EXPECT_EQ(count(ObjectKind::kNode), 1u);
  EXPECT_EQ(count(ObjectKind::kPod), 2u);
}

TYPED_TEST_P(StoreContractTest, DeleteIfPresentOfAnAbsentKeyAndAnEmptyBatchChangeNothing) {
  ObjectStore& store = *this->store_;
  ASSERT_TRUE(store.Apply({PutNode("node-1")}).ok());
  Recorder recorder;
  std::unique_ptr<Subscription> watch = MustWatch(store, ObjectKind::kNode, this->R(1), recorder);

  absl::StatusOr<WriteResult> absent =
      store.Apply({Delete(NodeKey("node-9"), WriteOp::Type::kDeleteIfPresent)});
  ASSERT_TRUE(absent.ok()) << absent.status();
  EXPECT_EQ(absent->revision, this->R(1));
  ASSERT_EQ(absent->objects.size(), 1u);
  EXPECT_EQ(absent->objects[0].key, NodeKey("node-9"));
  EXPECT_EQ(absent->objects[0].node, nullptr);
  EXPECT_EQ(absent->objects[0].pod, nullptr);
  EXPECT_EQ(absent->objects[0].resource_version, 0u);
  absl::StatusOr<WriteResult> empty = store.Apply({});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->revision, this->R(1));
  EXPECT_EQ(store.Revision(), this->R(1));

  // Present, it is deleted like kDelete; that is the first event the watch sees.
  absl::StatusOr<WriteResult> present =
      store.Apply({Delete(NodeKey("node-1"), WriteOp::Type::kDeleteIfPresent)});
  ASSERT_TRUE(present.ok()) << present.status();
  EXPECT_EQ(present->revision, this->R(2));
  EXPECT_THAT(recorder.WaitFor(1), ::testing::ElementsAre(Deleted("nodes/node-1", this->R(2))));
}

TYPED_TEST_P(StoreContractTest, WatchReplaysHistoryAboveAfterThenDeliversLiveEvents) {
  ObjectStore& store = *this->store_;
  ASSERT_TRUE(store.Apply({PutNode("node-1")}).ok());
  ASSERT_TRUE(store.Apply({PutNode("node-2"), PutNode("node-1", 200)}).ok());
  ASSERT_TRUE(store.Apply({Delete(NodeKey("node-2"))}).ok());

  Recorder recorder;
  std::unique_ptr<Subscription> watch = MustWatch(store, ObjectKind::kNode, this->R(1), recorder);
  EXPECT_THAT(recorder.WaitFor(3), ::testing::ElementsAre(Added("nodes/node-2", this->R(2)),
                                                          Modified("nodes/node-1", this->R(2)),
                                                          Deleted("nodes/node-2", this->R(3))));
  ASSERT_TRUE(store.Apply({PutNode("node-3")}).ok());
  EXPECT_THAT(recorder.WaitFor(4), ::testing::ElementsAre(Added("nodes/node-2", this->R(2)),
                                                          Modified("nodes/node-1", this->R(2)),
                                                          Deleted("nodes/node-2", this->R(3)),
                                                          Added("nodes/node-3", this->R(4))));
}

TYPED_TEST_P(StoreContractTest, DeletedEventsCarryTheObjectAsItWas) {
  ObjectStore& store = *this->store_;
  ASSERT_TRUE(store.Apply({PutPod("shop", "web-1", 4242)}).ok());
  std::mutex mu;
  std::vector<StoreEvent> events;
  absl::StatusOr<std::unique_ptr<Subscription>> watch =
      store.Watch(ObjectKind::kPod, this->R(0), [&](const StoreEvent& event) {
        std::lock_guard lock(mu);
        events.push_back(event);
      });
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE(store.Apply({Delete(PodKey("shop", "web-1"))}).ok());
  ASSERT_TRUE(kubestat::testing::PollUntil(
      [&] {
        std::lock_guard lock(mu);
        return events.size() >= 2;
      },
      kReady));
  std::lock_guard lock(mu);
  const StoreEvent& deleted = events[1];
  EXPECT_EQ(deleted.type, EventType::kDeleted);
  EXPECT_EQ(deleted.object.resource_version, this->R(2));
  ASSERT_NE(deleted.object.pod, nullptr);
  EXPECT_EQ(deleted.object.pod->name, "web-1");
  EXPECT_EQ(deleted.object.pod->labels.at("app"), "web");
  ASSERT_FALSE(deleted.object.pod->pod.cpu.empty());
  EXPECT_EQ(deleted.object.pod->pod.cpu[0].min, 4242u);
}

TYPED_TEST_P(StoreContractTest, AWatchOfOneKindNeverSeesEventsOfTheOther) {
  ObjectStore& store = *this->store_;
  Recorder nodes;
  Recorder pods;
  ASSERT_TRUE(store.Apply({PutNode("node-1"), PutPod("shop", "web-1")}).ok());
  std::unique_ptr<Subscription> node_watch = MustWatch(store, ObjectKind::kNode, this->R(0), nodes);
  std::unique_ptr<Subscription> pod_watch = MustWatch(store, ObjectKind::kPod, this->R(0), pods);
  ASSERT_TRUE(store.Apply({PutPod("shop", "web-2"), Delete(NodeKey("node-1"))}).ok());
  ASSERT_TRUE(store.Apply({PutPod("shop", "web-3")}).ok());
  ASSERT_TRUE(store.Apply({PutNode("node-4")}).ok());

  EXPECT_THAT(nodes.WaitFor(3), ::testing::ElementsAre(Added("nodes/node-1", this->R(1)),
                                                       Deleted("nodes/node-1", this->R(2)),
                                                       Added("nodes/node-4", this->R(4))));
  EXPECT_THAT(pods.WaitFor(3), ::testing::ElementsAre(Added("pods/shop/web-1", this->R(1)),
                                                      Added("pods/shop/web-2", this->R(2)),
                                                      Added("pods/shop/web-3", this->R(3))));
}

TYPED_TEST_P(StoreContractTest, AWatchFromAFutureRevisionSeesOnlyEventsAboveIt) {
  ObjectStore& store = *this->store_;
  PutNodes(store, 1, 2);
  Recorder recorder;
  std::unique_ptr<Subscription> watch = MustWatch(store, ObjectKind::kNode, this->R(4), recorder);
  PutNodes(store, 3, 3);
  EXPECT_THAT(recorder.WaitFor(1), ::testing::ElementsAre(Added("nodes/node-5", this->R(5))));
}

TYPED_TEST_P(StoreContractTest, CancelAndDestroyingTheSubscriptionStopDeliveries) {
  ObjectStore& store = *this->store_;
  Recorder cancelled;
  Recorder destroyed;
  Recorder kept;
  std::unique_ptr<Subscription> cancel = MustWatch(store, ObjectKind::kNode, this->R(0), cancelled);
  std::unique_ptr<Subscription> destroy =
      MustWatch(store, ObjectKind::kNode, this->R(0), destroyed);
  std::unique_ptr<Subscription> keep = MustWatch(store, ObjectKind::kNode, this->R(0), kept);
  PutNodes(store, 1, 1);
  cancelled.WaitFor(1);
  destroyed.WaitFor(1);
  cancel->Cancel();
  cancel->Cancel();  // idempotent
  destroy.reset();
  PutNodes(store, 2, 1);

  EXPECT_EQ(kept.WaitFor(2).size(), 2u);
  EXPECT_EQ(cancelled.revisions(), (std::vector<uint64_t>{this->R(1)}));
  EXPECT_EQ(destroyed.revisions(), (std::vector<uint64_t>{this->R(1)}));
  EXPECT_EQ(kept.revisions(), (std::vector<uint64_t>{this->R(1), this->R(2)}));
}

TYPED_TEST_P(StoreContractTest, CancelFromInsideACallbackStopsLaterDeliveries) {
  ObjectStore& store = *this->store_;
  std::unique_ptr<Subscription> watch;
  std::mutex mu;
  std::vector<uint64_t> seen;
  std::atomic<bool> ready = false;
  absl::StatusOr<std::unique_ptr<Subscription>> started =
      store.Watch(ObjectKind::kNode, this->R(0), [&](const StoreEvent& event) {
        std::lock_guard lock(mu);
        seen.push_back(event.object.resource_version);
        while (!ready) std::this_thread::yield();
        watch->Cancel();
      });
  ASSERT_TRUE(started.ok()) << started.status();
  watch = std::move(*started);
  ready = true;
  // Two events in one batch: the second is not delivered once the first cancelled.
  ASSERT_TRUE(store.Apply({PutNode("node-1"), PutNode("node-2")}).ok());
  PutNodes(store, 3, 1);
  // The store still takes new watches; once this one saw both batches, the cancelled one
  // had its chance to (wrongly) see more.
  Recorder recorder;
  std::unique_ptr<Subscription> next = MustWatch(store, ObjectKind::kNode, this->R(0), recorder);
  EXPECT_EQ(recorder.WaitFor(3).size(), 3u);
  std::lock_guard lock(mu);
  EXPECT_EQ(seen, (std::vector<uint64_t>{this->R(1)}));
}

TYPED_TEST_P(StoreContractTest, CancelFromAnotherThreadWaitsForTheCallbackInProgress) {
  ObjectStore& store = *this->store_;
  std::atomic<bool> in_callback = false;
  std::atomic<bool> entered = false;
  std::atomic<bool> cancelling = false;
  std::atomic<int> calls = 0;
  absl::StatusOr<std::unique_ptr<Subscription>> watch =
      store.Watch(ObjectKind::kNode, this->R(0), [&](const StoreEvent&) {
        in_callback = true;
        entered = true;
        ++calls;
        while (!cancelling) std::this_thread::yield();
        // Still running after Cancel was called: a Cancel that did not wait would return in
        // this stretch and see in_callback.
        for (int i = 0; i < 20000; ++i) std::this_thread::yield();
        in_callback = false;
      });
  ASSERT_TRUE(watch.ok()) << watch.status();
  std::thread writer([&] { PutNodes(store, 1, 1); });
  ASSERT_TRUE(kubestat::testing::PollUntil([&] { return entered.load(); }, kReady));
  cancelling = true;
  (*watch)->Cancel();
  EXPECT_FALSE(in_callback.load());
  writer.join();
  PutNodes(store, 2, 1);
  Recorder later;
  std::unique_ptr<Subscription> next = MustWatch(store, ObjectKind::kNode, this->R(1), later);
  later.WaitFor(1);
  EXPECT_EQ(calls.load(), 1);
}

// Writers on several threads commit batches (two node events and a pod event each) while
// another thread starts watches at revisions it has just read, some a little behind. Every
// watch must see exactly the node events of every revision above its start, in order, each
// batch's two events together and in batch order.
TYPED_TEST_P(StoreContractTest, WatchesStartedWhileWritersRaceSeeEveryLaterEventExactlyOnce) {
  ObjectStore& store = *this->store_;
  constexpr int kWriters = 4;
  constexpr int kMinBatchesPerWriter = 100;
  // A writer that reached this many waits for the watches (a slow build starts them slowly).
  constexpr int kMaxBatchesPerWriter = 300;
  constexpr int kTailBatchesPerWriter = 20;  // after the last watch started
  constexpr int kWatches = 24;
  std::atomic<bool> watches_started = false;

  std::vector<std::thread> writers;
  writers.reserve(kWriters);
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      const std::string prefix = "w" + std::to_string(w);
      auto commit = [&](int i) {
        const auto v = static_cast<uint64_t>(i);
        absl::StatusOr<WriteResult> result = store.Apply(
            {PutNode(prefix + "-a", v), PutPod("shop", prefix, v), PutNode(prefix + "-b", v)});
        EXPECT_TRUE(result.ok()) << result.status();
      };
      int i = 0;
      for (; i < kMinBatchesPerWriter || (!watches_started && i < kMaxBatchesPerWriter); ++i) {
        commit(i);
      }
      while (!watches_started) std::this_thread::yield();
      for (int tail = 0; tail < kTailBatchesPerWriter; ++tail) commit(i + tail);
    });
  }

  struct StartedWatch {
    uint64_t after = 0;
    std::unique_ptr<Recorder> recorder = std::make_unique<Recorder>();
    std::unique_ptr<Subscription> subscription;
  };
  std::vector<StartedWatch> watches(kWatches);
  std::thread watcher([&] {
    while (store.Revision() < this->R(20)) std::this_thread::yield();
    for (int j = 0; j < kWatches; ++j) {
      StartedWatch& watch = watches[j];
      watch.after = store.Revision() - static_cast<uint64_t>(j % 4);
      watch.subscription = MustWatch(store, ObjectKind::kNode, watch.after, *watch.recorder);
      std::this_thread::yield();
    }
    watches_started = true;
  });
  watcher.join();
  for (std::thread& writer : writers) writer.join();

  const uint64_t last = store.Revision();
  ASSERT_GE(last, this->R(kWriters * kMinBatchesPerWriter));
  for (StartedWatch& watch : watches) {
    ASSERT_NE(watch.subscription, nullptr);
    // The writers' tails guarantee that every watch started with batches still to come.
    ASSERT_LT(watch.after, last);
    const std::vector<Seen> seen = watch.recorder->WaitFor(2 * (last - watch.after), 3 * kReady);
    watch.subscription->Cancel();
    ASSERT_EQ(seen.size(), 2 * (last - watch.after)) << "watch after " << watch.after;
    for (size_t k = 0; k < seen.size(); k += 2) {
      const uint64_t revision = watch.after + 1 + k / 2;
      ASSERT_EQ(seen[k].revision, revision) << "watch after " << watch.after;
      ASSERT_EQ(seen[k + 1].revision, revision) << "watch after " << watch.after;
      const std::string writer = seen[k].key.substr(0, seen[k].key.size() - 2);
      EXPECT_EQ(seen[k].key, writer + "-a");
      EXPECT_EQ(seen[k + 1].key, writer + "-b");
    }
  }
}

TYPED_TEST_P(StoreContractTest, WatchWithoutACallbackIsInvalidArgument) {
  EXPECT_EQ(this->store_->Watch(ObjectKind::kNode, 0, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TYPED_TEST_P(StoreContractTest, ExpireDeletesTheObjectsNobodyRefreshedInOneRevision) {
  ObjectStore& store = *this->store_;
  FakeClock& clock = this->clock_;
  const Timestamp start = clock.Now();
  ASSERT_TRUE(
      store.Apply({PutNode("node-1"), PutNode("node-2"), PutPod("shop", "web-1")}).ok());  // 1
  clock.Advance(std::chrono::seconds(30));
  ASSERT_TRUE(store.Apply({PutNode("node-1", 300)}).ok());  // 2: refreshes node-1
  Recorder nodes;
  Recorder pods;
  std::unique_ptr<Subscription> node_watch = MustWatch(store, ObjectKind::kNode, this->R(2), nodes);
  std::unique_ptr<Subscription> pod_watch = MustWatch(store, ObjectKind::kPod, this->R(2), pods);

  clock.Advance(std::chrono::seconds(30));
  absl::StatusOr<size_t> expired = store.ExpireOlderThan(start + std::chrono::seconds(10));
  ASSERT_TRUE(expired.ok()) << expired.status();
  EXPECT_EQ(*expired, 2u);
  EXPECT_EQ(store.Revision(), this->R(3));
  EXPECT_THAT(nodes.WaitFor(1), ::testing::ElementsAre(Deleted("nodes/node-2", this->R(3))));
  EXPECT_THAT(pods.WaitFor(1), ::testing::ElementsAre(Deleted("pods/shop/web-1", this->R(3))));
  absl::StatusOr<ListResult> left = store.List(ObjectKind::kNode, "");
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->items.size(), 1u);
  EXPECT_EQ(left->items[0].key, NodeKey("node-1"));
  absl::StatusOr<ListResult> no_pods = store.List(ObjectKind::kPod, "");
  ASSERT_TRUE(no_pods.ok());
  EXPECT_THAT(no_pods->items, ::testing::IsEmpty());

  // Nothing older than the cutoff is left: no batch, no revision, no event.
  absl::StatusOr<size_t> again = store.ExpireOlderThan(start + std::chrono::seconds(10));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, 0u);
  EXPECT_EQ(store.Revision(), this->R(3));

  // The cutoff is exclusive: node-1 written exactly at it stays.
  absl::StatusOr<size_t> at_write = store.ExpireOlderThan(start + std::chrono::seconds(30));
  ASSERT_TRUE(at_write.ok());
  EXPECT_EQ(*at_write, 0u);
  absl::StatusOr<size_t> after_write =
      store.ExpireOlderThan(start + std::chrono::seconds(30) + std::chrono::nanoseconds(1));
  ASSERT_TRUE(after_write.ok());
  EXPECT_EQ(*after_write, 1u);
  EXPECT_THAT(nodes.WaitFor(2), ::testing::ElementsAre(Deleted("nodes/node-2", this->R(3)),
                                                       Deleted("nodes/node-1", this->R(4))));
}

REGISTER_TYPED_TEST_SUITE_P(
    StoreContractTest, EachSuccessfulBatchMovesTheRevisionByExactlyOne,
    EveryObjectOfABatchCarriesTheBatchRevisionAndTime,
    AFailingOpStoresNothingOfItsBatchAndSendsNoEvent,
    CreateOfAPresentKeyIsAlreadyExistsNamingTheOpIndexAndKey,
    DeleteOfAnAbsentKeyIsNotFoundNamingTheOpIndexAndKey,
    OpsThatDoNotFitTheirKeyAreInvalidArgumentNamingTheOpIndex,
    ListIsSortedByKeyAndSelectsOneNamespaceOfPods, CountIsTheNumberOfObjectsOfEachKind,
    DeleteIfPresentOfAnAbsentKeyAndAnEmptyBatchChangeNothing,
    WatchReplaysHistoryAboveAfterThenDeliversLiveEvents, DeletedEventsCarryTheObjectAsItWas,
    AWatchOfOneKindNeverSeesEventsOfTheOther, AWatchFromAFutureRevisionSeesOnlyEventsAboveIt,
    CancelAndDestroyingTheSubscriptionStopDeliveries, CancelFromInsideACallbackStopsLaterDeliveries,
    CancelFromAnotherThreadWaitsForTheCallbackInProgress,
    WatchesStartedWhileWritersRaceSeeEveryLaterEventExactlyOnce,
    WatchWithoutACallbackIsInvalidArgument, ExpireDeletesTheObjectsNobodyRefreshedInOneRevision,
    ReadsNotOlderThanAReachedRevisionSeeItAndABeyondOneIsTooLarge,
    AnExactListIsTheStateAtThatRevisionOrExpired, PutsAndCreatesTellWhetherTheyMadeTheirKey);

}  // namespace kubestat::apiserver::testing

#endif  // KUBESTAT_TESTS_APISERVER_STORE_CONTRACT_H_
