// MemoryStore: revisions per batch, all-or-nothing batches and their errors, lists and gets,
// watches (history then live, the exact 410 boundary, kinds, cancel) and TTL on a
// FakeClock. The race test runs real writer threads while watches start and checks that
// every watch sees every revision after its start exactly once, in order.
#include "kubestat/apiserver/memory_store.h"

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
#include "kubestat/apiserver/object_store.h"
#include "kubestat/core/clock.h"
#include "support/metrics_objects.h"
#include "support/poll.h"

namespace kubestat::apiserver {
namespace {

using metrics_api::NodeMetrics;
using metrics_api::PodMetrics;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// How long a test waits for another thread to get somewhere (only a broken store takes that
// long).
constexpr std::chrono::seconds kReady(20);

ObjectKey NodeKey(const std::string& name) { return ObjectKey{ObjectKind::kNode, "", name}; }
ObjectKey PodKey(const std::string& namespace_name, const std::string& name) {
  return ObjectKey{ObjectKind::kPod, namespace_name, name};
}

std::shared_ptr<const NodeMetrics> NodeObject(const std::string& name, uint64_t v = 100) {
  return std::make_shared<const NodeMetrics>(
      kubestat::testing::MakeNode(name, {{"role", "worker"}}, kubestat::testing::BaseTime(), v));
}
std::shared_ptr<const PodMetrics> PodObject(const std::string& namespace_name,
                                            const std::string& name, uint64_t v = 100) {
  return std::make_shared<const PodMetrics>(kubestat::testing::MakePod(
      namespace_name, name, "node-1", {{"app", "web"}}, kubestat::testing::BaseTime(), v));
}

WriteOp PutNode(const std::string& name, uint64_t v = 100) {
  WriteOp op;
  op.key = NodeKey(name);
  op.node = NodeObject(name, v);
  return op;
}
WriteOp CreateNode(const std::string& name) {
  WriteOp op = PutNode(name);
  op.type = WriteOp::Type::kCreate;
  return op;
}
WriteOp PutPod(const std::string& namespace_name, const std::string& name, uint64_t v = 100) {
  WriteOp op;
  op.key = PodKey(namespace_name, name);
  op.pod = PodObject(namespace_name, name, v);
  return op;
}
WriteOp CreatePod(const std::string& namespace_name, const std::string& name) {
  WriteOp op = PutPod(namespace_name, name);
  op.type = WriteOp::Type::kCreate;
  return op;
}
WriteOp Delete(ObjectKey key, WriteOp::Type type = WriteOp::Type::kDelete) {
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
void PrintTo(const Seen& seen, std::ostream* out) {
  *out << EventTypeName(seen.type) << " " << seen.key << " @" << seen.revision;
}
Seen Added(const std::string& key, uint64_t revision) { return {EventType::kAdded, key, revision}; }
Seen Modified(const std::string& key, uint64_t revision) {
  return {EventType::kModified, key, revision};
}
Seen Deleted(const std::string& key, uint64_t revision) {
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

 private:
  mutable std::mutex mu_;
  std::vector<Seen> seen_;
};

std::unique_ptr<Subscription> MustWatch(MemoryStore& store, ObjectKind kind, uint64_t after,
                                        Recorder& recorder) {
  absl::StatusOr<std::unique_ptr<Subscription>> watch =
      store.Watch(kind, after, recorder.Callback());
  EXPECT_TRUE(watch.ok()) << watch.status();
  return watch.ok() ? std::move(*watch) : nullptr;
}

// Applies batches of one node put each, named node-<first> .. node-<first+count-1>.
void PutNodes(MemoryStore& store, int first, int count) {
  for (int i = first; i < first + count; ++i) {
    ASSERT_TRUE(store.Apply({PutNode("node-" + std::to_string(i))}).ok());
  }
}

class MemoryStoreTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  MemoryStore store_{MemoryStoreOptions{}, clock_};
};

TEST(ObjectStoreNamesTest, KindsKeysAndEventTypesHaveTheirApiNames) {
  EXPECT_EQ(ObjectKindName(ObjectKind::kNode), "nodes");
  EXPECT_EQ(ObjectKindName(ObjectKind::kPod), "pods");
  EXPECT_EQ(ObjectKeyString(NodeKey("node-1")), "nodes/node-1");
  EXPECT_EQ(ObjectKeyString(PodKey("shop", "web-1")), "pods/shop/web-1");
  EXPECT_EQ(EventTypeName(EventType::kAdded), "ADDED");
  EXPECT_EQ(EventTypeName(EventType::kModified), "MODIFIED");
  EXPECT_EQ(EventTypeName(EventType::kDeleted), "DELETED");
}

TEST_F(MemoryStoreTest, EachSuccessfulBatchMovesTheRevisionByExactlyOne) {
  EXPECT_EQ(store_.Revision(), 0u);
  absl::StatusOr<WriteResult> first =
      store_.Apply({PutNode("node-1"), PutNode("node-2"), PutPod("shop", "web-1")});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->revision, 1u);
  EXPECT_EQ(store_.Revision(), 1u);
  absl::StatusOr<WriteResult> second = store_.Apply({PutNode("node-1", 200)});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->revision, 2u);
  EXPECT_EQ(store_.Revision(), 2u);
}

TEST_F(MemoryStoreTest, EveryObjectOfABatchCarriesTheBatchRevisionAndTime) {
  ASSERT_TRUE(store_.Apply({PutNode("node-1"), PutPod("shop", "web-1")}).ok());
  clock_.Advance(std::chrono::seconds(5));
  const Timestamp second_write = clock_.Now();
  absl::StatusOr<WriteResult> result =
      store_.Apply({PutNode("node-2"), PutPod("shop", "web-2"), Delete(PodKey("shop", "web-1"))});
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->objects.size(), 3u);
  for (const StoredObject& object : result->objects) {
    EXPECT_EQ(object.resource_version, 2u) << ObjectKeyString(object.key);
    EXPECT_EQ(object.written, second_write) << ObjectKeyString(object.key);
  }
  // The deleted pod comes back as it was, with the deleting batch's revision.
  ASSERT_NE(result->objects[2].pod, nullptr);
  EXPECT_EQ(result->objects[2].pod->name, "web-1");

  absl::StatusOr<ListResult> pods = store_.List(ObjectKind::kPod, "");
  ASSERT_TRUE(pods.ok());
  ASSERT_EQ(pods->items.size(), 1u);
  EXPECT_EQ(pods->items[0].resource_version, 2u);
  absl::StatusOr<std::optional<StoredObject>> node_1 = store_.Get(NodeKey("node-1"));
  ASSERT_TRUE(node_1.ok() && node_1->has_value());
  EXPECT_EQ((*node_1)->resource_version, 1u);
  EXPECT_EQ((*node_1)->written, second_write - std::chrono::seconds(5));
  absl::StatusOr<std::optional<StoredObject>> node_2 = store_.Get(NodeKey("node-2"));
  ASSERT_TRUE(node_2.ok() && node_2->has_value());
  EXPECT_EQ((*node_2)->resource_version, 2u);
}

TEST_F(MemoryStoreTest, AFailingOpStoresNothingOfItsBatchAndSendsNoEvent) {
  ASSERT_TRUE(store_.Apply({PutNode("node-1")}).ok());
  Recorder recorder;
  std::unique_ptr<Subscription> watch = MustWatch(store_, ObjectKind::kNode, 1, recorder);

  absl::StatusOr<WriteResult> result =
      store_.Apply({PutNode("node-2"), PutNode("node-1", 999), CreateNode("node-1")});
  ASSERT_EQ(result.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(store_.Revision(), 1u);
  absl::StatusOr<std::optional<StoredObject>> node_2 = store_.Get(NodeKey("node-2"));
  ASSERT_TRUE(node_2.ok());
  EXPECT_FALSE(node_2->has_value());
  absl::StatusOr<std::optional<StoredObject>> node_1 = store_.Get(NodeKey("node-1"));
  ASSERT_TRUE(node_1.ok() && node_1->has_value());
  EXPECT_EQ((*node_1)->node->machine.cpu[0].min, 100u);  // not the failed batch's 999
  EXPECT_THAT(recorder.seen(), IsEmpty());

  // The watch is alive: the next good batch is revision 2 and arrives.
  ASSERT_TRUE(store_.Apply({PutNode("node-3")}).ok());
  EXPECT_THAT(recorder.seen(), ElementsAre(Added("nodes/node-3", 2)));
}

TEST_F(MemoryStoreTest, CreateOfAPresentKeyIsAlreadyExistsNamingTheOpIndexAndKey) {
  ASSERT_TRUE(store_.Apply({PutPod("shop", "web-1")}).ok());
  absl::StatusOr<WriteResult> result =
      store_.Apply({PutNode("node-1"), CreatePod("shop", "web-2"), CreatePod("shop", "web-1")});
  EXPECT_EQ(result.status(), absl::AlreadyExistsError("op 2: pods/shop/web-1 already exists"));
}

TEST_F(MemoryStoreTest, DeleteOfAnAbsentKeyIsNotFoundNamingTheOpIndexAndKey) {
  absl::StatusOr<WriteResult> result = store_.Apply({PutNode("node-1"), Delete(NodeKey("node-9"))});
  EXPECT_EQ(result.status(), absl::NotFoundError("op 1: nodes/node-9 not found"));
  EXPECT_EQ(store_.Revision(), 0u);
}

TEST_F(MemoryStoreTest, OpsThatDoNotFitTheirKeyAreInvalidArgumentNamingTheOpIndex) {
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

  EXPECT_EQ(store_.Apply({PutNode("node-0"), wrong_name}).status(),
            absl::InvalidArgumentError("op 1: nodes/node-1: the object is nodes/node-2"));
  EXPECT_EQ(store_.Apply({pod_on_node_key}).status(),
            absl::InvalidArgumentError(
                "op 0: nodes/node-1: a node key needs a node object and no pod object"));
  EXPECT_EQ(store_.Apply({PutNode("node-0"), PutNode("node-9"), no_object}).status(),
            absl::InvalidArgumentError(
                "op 2: pods/shop/web-1: a pod key needs a pod object and no node object"));
  EXPECT_EQ(store_.Apply({wrong_namespace}).status(),
            absl::InvalidArgumentError("op 0: pods/shop/web-1: the object is pods/dev/web-1"));
  EXPECT_EQ(store_.Apply({node_key_with_namespace}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_.Apply({pod_key_without_namespace}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_.Revision(), 0u);
  absl::StatusOr<ListResult> nodes = store_.List(ObjectKind::kNode, "");
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(nodes->items, IsEmpty());
}

TEST_F(MemoryStoreTest, OpsOfABatchSeeTheEarlierOpsOfTheSameBatch) {
  Recorder recorder;
  std::unique_ptr<Subscription> watch = MustWatch(store_, ObjectKind::kNode, 0, recorder);
  absl::StatusOr<WriteResult> result =
      store_.Apply({CreateNode("node-1"), PutNode("node-1", 200), Delete(NodeKey("node-1")),
                    CreateNode("node-1")});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->revision, 1u);
  EXPECT_THAT(recorder.seen(), ElementsAre(Added("nodes/node-1", 1), Modified("nodes/node-1", 1),
                                           Deleted("nodes/node-1", 1), Added("nodes/node-1", 1)));
  absl::StatusOr<std::optional<StoredObject>> node = store_.Get(NodeKey("node-1"));
  ASSERT_TRUE(node.ok() && node->has_value());
  EXPECT_EQ((*node)->node->machine.cpu[0].min, 100u);
}

TEST_F(MemoryStoreTest, ListIsSortedByKeyAndSelectsOneNamespaceOfPods) {
  ASSERT_TRUE(store_
                  .Apply({PutPod("shop", "web-2"), PutNode("node-b"), PutPod("dev", "api-1"),
                          PutPod("shop", "db-0"), PutNode("node-a"), PutPod("kube-system", "dns")})
                  .ok());
  ASSERT_TRUE(store_.Apply({PutPod("shop", "web-1")}).ok());

  auto keys = [](const ListResult& list) {
    std::vector<std::string> keys;
    for (const StoredObject& item : list.items) keys.push_back(ObjectKeyString(item.key));
    return keys;
  };
  absl::StatusOr<ListResult> pods = store_.List(ObjectKind::kPod, "");
  ASSERT_TRUE(pods.ok());
  EXPECT_EQ(pods->revision, 2u);
  EXPECT_THAT(keys(*pods), ElementsAre("pods/dev/api-1", "pods/kube-system/dns", "pods/shop/db-0",
                                       "pods/shop/web-1", "pods/shop/web-2"));
  absl::StatusOr<ListResult> shop = store_.List(ObjectKind::kPod, "shop");
  ASSERT_TRUE(shop.ok());
  EXPECT_THAT(keys(*shop), ElementsAre("pods/shop/db-0", "pods/shop/web-1", "pods/shop/web-2"));
  absl::StatusOr<ListResult> none = store_.List(ObjectKind::kPod, "nowhere");
  ASSERT_TRUE(none.ok());
  EXPECT_THAT(none->items, IsEmpty());
  absl::StatusOr<ListResult> nodes = store_.List(ObjectKind::kNode, "");
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(keys(*nodes), ElementsAre("nodes/node-a", "nodes/node-b"));
}

TEST_F(MemoryStoreTest, GetAndListShareTheStoredObjectInsteadOfCopyingIt) {
  WriteOp put = PutPod("shop", "web-1", 4242);
  const PodMetrics* stored = put.pod.get();
  ASSERT_TRUE(store_.Apply({put}).ok());

  absl::StatusOr<std::optional<StoredObject>> got = store_.Get(PodKey("shop", "web-1"));
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->key, PodKey("shop", "web-1"));
  EXPECT_EQ((*got)->pod.get(), stored);
  EXPECT_EQ((*got)->node, nullptr);
  absl::StatusOr<ListResult> listed = store_.List(ObjectKind::kPod, "shop");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->items.size(), 1u);
  EXPECT_EQ(listed->items[0].pod.get(), stored);

  absl::StatusOr<std::optional<StoredObject>> absent = store_.Get(PodKey("shop", "web-9"));
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->has_value());
}

TEST_F(MemoryStoreTest, DeleteIfPresentOfAnAbsentKeyAndAnEmptyBatchChangeNothing) {
  ASSERT_TRUE(store_.Apply({PutNode("node-1")}).ok());
  Recorder recorder;
  std::unique_ptr<Subscription> watch = MustWatch(store_, ObjectKind::kNode, 1, recorder);

  absl::StatusOr<WriteResult> absent =
      store_.Apply({Delete(NodeKey("node-9"), WriteOp::Type::kDeleteIfPresent)});
  ASSERT_TRUE(absent.ok()) << absent.status();
  EXPECT_EQ(absent->revision, 1u);
  ASSERT_EQ(absent->objects.size(), 1u);
  EXPECT_EQ(absent->objects[0].node, nullptr);
  EXPECT_EQ(absent->objects[0].pod, nullptr);
  EXPECT_EQ(absent->objects[0].resource_version, 0u);
  absl::StatusOr<WriteResult> empty = store_.Apply({});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->revision, 1u);
  EXPECT_EQ(store_.Revision(), 1u);
  EXPECT_THAT(recorder.seen(), IsEmpty());

  // Present, it is deleted like kDelete.
  absl::StatusOr<WriteResult> present =
      store_.Apply({Delete(NodeKey("node-1"), WriteOp::Type::kDeleteIfPresent)});
  ASSERT_TRUE(present.ok()) << present.status();
  EXPECT_EQ(present->revision, 2u);
  EXPECT_THAT(recorder.seen(), ElementsAre(Deleted("nodes/node-1", 2)));
}

TEST_F(MemoryStoreTest, WatchReplaysHistoryAboveAfterThenDeliversLiveEvents) {
  ASSERT_TRUE(store_.Apply({PutNode("node-1")}).ok());
  ASSERT_TRUE(store_.Apply({PutNode("node-2"), PutNode("node-1", 200)}).ok());
  ASSERT_TRUE(store_.Apply({Delete(NodeKey("node-2"))}).ok());

  Recorder recorder;
  std::unique_ptr<Subscription> watch = MustWatch(store_, ObjectKind::kNode, 1, recorder);
  EXPECT_THAT(recorder.seen(), ElementsAre(Added("nodes/node-2", 2), Modified("nodes/node-1", 2),
                                           Deleted("nodes/node-2", 3)));
  ASSERT_TRUE(store_.Apply({PutNode("node-3")}).ok());
  EXPECT_THAT(recorder.seen(), ElementsAre(Added("nodes/node-2", 2), Modified("nodes/node-1", 2),
                                           Deleted("nodes/node-2", 3), Added("nodes/node-3", 4)));
}

TEST_F(MemoryStoreTest, AWatchOfOneKindNeverSeesEventsOfTheOther) {
  Recorder nodes;
  Recorder pods;
  ASSERT_TRUE(store_.Apply({PutNode("node-1"), PutPod("shop", "web-1")}).ok());
  std::unique_ptr<Subscription> node_watch = MustWatch(store_, ObjectKind::kNode, 0, nodes);
  std::unique_ptr<Subscription> pod_watch = MustWatch(store_, ObjectKind::kPod, 0, pods);
  ASSERT_TRUE(store_.Apply({PutPod("shop", "web-2"), Delete(NodeKey("node-1"))}).ok());
  ASSERT_TRUE(store_.Apply({PutPod("shop", "web-3")}).ok());

  EXPECT_THAT(nodes.seen(), ElementsAre(Added("nodes/node-1", 1), Deleted("nodes/node-1", 2)));
  EXPECT_THAT(pods.seen(), ElementsAre(Added("pods/shop/web-1", 1), Added("pods/shop/web-2", 2),
                                       Added("pods/shop/web-3", 3)));
}

TEST_F(MemoryStoreTest, AWatchFromAFutureRevisionSeesOnlyEventsAboveIt) {
  PutNodes(store_, 1, 2);  // revisions 1, 2
  Recorder recorder;
  std::unique_ptr<Subscription> watch = MustWatch(store_, ObjectKind::kNode, 4, recorder);
  PutNodes(store_, 3, 2);  // revisions 3, 4
  EXPECT_THAT(recorder.seen(), IsEmpty());
  PutNodes(store_, 5, 1);  // revision 5
  EXPECT_THAT(recorder.seen(), ElementsAre(Added("nodes/node-5", 5)));
}

TEST(MemoryStoreHistoryTest, AWatchBelowTheOldestRememberedRevisionIsOutOfRangeExactly) {
  FakeClock clock;
  MemoryStore store(MemoryStoreOptions{.history_events = 4}, clock);
  PutNodes(store, 1, 10);  // revisions 1..10; events of 7..10 kept
  EXPECT_EQ(store.OldestRevision(), 6u);

  absl::StatusOr<std::unique_ptr<Subscription>> too_old =
      store.Watch(ObjectKind::kNode, 5, [](const StoreEvent&) {});
  EXPECT_EQ(too_old.status(), absl::OutOfRangeError("too old resource version: 5 (6)"));

  Recorder boundary;
  std::unique_ptr<Subscription> at_boundary = MustWatch(store, ObjectKind::kNode, 6, boundary);
  EXPECT_EQ(boundary.revisions(), (std::vector<uint64_t>{7, 8, 9, 10}));
  Recorder current;
  std::unique_ptr<Subscription> at_current = MustWatch(store, ObjectKind::kNode, 10, current);
  EXPECT_THAT(current.seen(), IsEmpty());

  PutNodes(store, 11, 1);
  EXPECT_EQ(store.OldestRevision(), 7u);
  EXPECT_EQ(store.Watch(ObjectKind::kNode, 6, [](const StoreEvent&) {}).status(),
            absl::OutOfRangeError("too old resource version: 6 (7)"));
  EXPECT_EQ(boundary.revisions(), (std::vector<uint64_t>{7, 8, 9, 10, 11}));
  EXPECT_EQ(current.revisions(), (std::vector<uint64_t>{11}));
}

TEST(MemoryStoreHistoryTest, HistoryIsDroppedInWholeBatches) {
  FakeClock clock;
  MemoryStore store(MemoryStoreOptions{.history_events = 3}, clock);
  ASSERT_TRUE(store.Apply({PutNode("a-1"), PutNode("a-2")}).ok());  // revision 1
  ASSERT_TRUE(store.Apply({PutNode("b-1"), PutNode("b-2")}).ok());  // 2: drops 1 whole
  ASSERT_TRUE(store.Apply({PutNode("c-1"), PutNode("c-2")}).ok());  // 3: drops 2 whole
  EXPECT_EQ(store.OldestRevision(), 2u);

  EXPECT_EQ(store.Watch(ObjectKind::kNode, 1, [](const StoreEvent&) {}).status(),
            absl::OutOfRangeError("too old resource version: 1 (2)"));
  Recorder recorder;
  std::unique_ptr<Subscription> watch = MustWatch(store, ObjectKind::kNode, 2, recorder);
  EXPECT_THAT(recorder.seen(), ElementsAre(Added("nodes/c-1", 3), Added("nodes/c-2", 3)));
}

TEST(MemoryStoreHistoryTest, ABatchLargerThanTheHistoryIsNotKeptButTheCurrentRevisionWatches) {
  FakeClock clock;
  MemoryStore store(MemoryStoreOptions{.history_events = 1}, clock);
  ASSERT_TRUE(store.Apply({PutNode("node-1")}).ok());                     // revision 1, kept
  ASSERT_TRUE(store.Apply({PutNode("node-2"), PutNode("node-3")}).ok());  // 2, not kept
  EXPECT_EQ(store.OldestRevision(), 2u);
  EXPECT_EQ(store.Watch(ObjectKind::kNode, 1, [](const StoreEvent&) {}).status(),
            absl::OutOfRangeError("too old resource version: 1 (2)"));
  Recorder recorder;
  std::unique_ptr<Subscription> watch = MustWatch(store, ObjectKind::kNode, 2, recorder);
  EXPECT_THAT(recorder.seen(), IsEmpty());
}

TEST(MemoryStoreHistoryTest, WithoutHistoryOnlyTheCurrentRevisionOrLaterWatches) {
  FakeClock clock;
  MemoryStore store(MemoryStoreOptions{.history_events = 0}, clock);
  Recorder from_start;
  std::unique_ptr<Subscription> first = MustWatch(store, ObjectKind::kNode, 0, from_start);
  PutNodes(store, 1, 3);
  EXPECT_EQ(from_start.revisions(), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(store.Watch(ObjectKind::kNode, 2, [](const StoreEvent&) {}).status(),
            absl::OutOfRangeError("too old resource version: 2 (3)"));
  Recorder late;
  std::unique_ptr<Subscription> second = MustWatch(store, ObjectKind::kNode, 3, late);
  PutNodes(store, 4, 1);
  EXPECT_EQ(late.revisions(), (std::vector<uint64_t>{4}));
}

TEST(MemoryStoreTtlTest, ExpireDeletesTheObjectsNobodyRefreshedInOneRevision) {
  FakeClock clock;
  MemoryStore store(MemoryStoreOptions{}, clock);
  const Timestamp start = clock.Now();
  ASSERT_TRUE(
      store.Apply({PutNode("node-1"), PutNode("node-2"), PutPod("shop", "web-1")}).ok());  // 1
  clock.Advance(std::chrono::seconds(30));
  ASSERT_TRUE(store.Apply({PutNode("node-1", 300)}).ok());  // 2: refreshes node-1
  Recorder nodes;
  Recorder pods;
  std::unique_ptr<Subscription> node_watch = MustWatch(store, ObjectKind::kNode, 2, nodes);
  std::unique_ptr<Subscription> pod_watch = MustWatch(store, ObjectKind::kPod, 2, pods);

  clock.Advance(std::chrono::seconds(30));
  absl::StatusOr<size_t> expired = store.ExpireOlderThan(start + std::chrono::seconds(10));
  ASSERT_TRUE(expired.ok()) << expired.status();
  EXPECT_EQ(*expired, 2u);
  EXPECT_EQ(store.Revision(), 3u);
  EXPECT_THAT(nodes.seen(), ElementsAre(Deleted("nodes/node-2", 3)));
  EXPECT_THAT(pods.seen(), ElementsAre(Deleted("pods/shop/web-1", 3)));
  absl::StatusOr<ListResult> left = store.List(ObjectKind::kNode, "");
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->items.size(), 1u);
  EXPECT_EQ(left->items[0].key, NodeKey("node-1"));
  absl::StatusOr<ListResult> no_pods = store.List(ObjectKind::kPod, "");
  ASSERT_TRUE(no_pods.ok());
  EXPECT_THAT(no_pods->items, IsEmpty());

  // Nothing older than the cutoff is left: no batch, no revision, no event.
  absl::StatusOr<size_t> again = store.ExpireOlderThan(start + std::chrono::seconds(10));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, 0u);
  EXPECT_EQ(store.Revision(), 3u);
  EXPECT_EQ(nodes.seen().size(), 1u);

  // The cutoff is exclusive: node-1 written exactly at it stays.
  absl::StatusOr<size_t> at_write = store.ExpireOlderThan(start + std::chrono::seconds(30));
  ASSERT_TRUE(at_write.ok());
  EXPECT_EQ(*at_write, 0u);
  absl::StatusOr<size_t> after_write =
      store.ExpireOlderThan(start + std::chrono::seconds(30) + std::chrono::nanoseconds(1));
  ASSERT_TRUE(after_write.ok());
  EXPECT_EQ(*after_write, 1u);
  EXPECT_THAT(nodes.seen(), ElementsAre(Deleted("nodes/node-2", 3), Deleted("nodes/node-1", 4)));
}

TEST_F(MemoryStoreTest, CancelAndDestroyingTheSubscriptionStopDeliveries) {
  Recorder cancelled;
  Recorder destroyed;
  Recorder kept;
  std::unique_ptr<Subscription> cancel = MustWatch(store_, ObjectKind::kNode, 0, cancelled);
  std::unique_ptr<Subscription> destroy = MustWatch(store_, ObjectKind::kNode, 0, destroyed);
  std::unique_ptr<Subscription> keep = MustWatch(store_, ObjectKind::kNode, 0, kept);
  PutNodes(store_, 1, 1);
  cancel->Cancel();
  cancel->Cancel();  // idempotent
  destroy.reset();
  PutNodes(store_, 2, 1);

  EXPECT_EQ(cancelled.revisions(), (std::vector<uint64_t>{1}));
  EXPECT_EQ(destroyed.revisions(), (std::vector<uint64_t>{1}));
  EXPECT_EQ(kept.revisions(), (std::vector<uint64_t>{1, 2}));
}

TEST_F(MemoryStoreTest, CancelFromInsideACallbackStopsLaterDeliveries) {
  std::unique_ptr<Subscription> watch;
  std::vector<uint64_t> seen;
  absl::StatusOr<std::unique_ptr<Subscription>> started =
      store_.Watch(ObjectKind::kNode, 0, [&](const StoreEvent& event) {
        seen.push_back(event.object.resource_version);
        watch->Cancel();
      });
  ASSERT_TRUE(started.ok()) << started.status();
  watch = std::move(*started);
  // Two events in one batch: the second is not delivered once the first cancelled.
  ASSERT_TRUE(store_.Apply({PutNode("node-1"), PutNode("node-2")}).ok());
  PutNodes(store_, 3, 1);
  EXPECT_EQ(seen, (std::vector<uint64_t>{1}));
  // The store still takes new watches (write lock released, watcher list consistent).
  Recorder recorder;
  std::unique_ptr<Subscription> next = MustWatch(store_, ObjectKind::kNode, 1, recorder);
  EXPECT_EQ(recorder.revisions(), (std::vector<uint64_t>{2}));
}

TEST_F(MemoryStoreTest, CancelFromAnotherThreadWaitsForTheCallbackInProgress) {
  std::atomic<bool> in_callback = false;
  std::atomic<bool> entered = false;
  std::atomic<bool> cancelling = false;
  std::atomic<int> calls = 0;
  std::unique_ptr<Subscription> watch = *store_.Watch(ObjectKind::kNode, 0, [&](const StoreEvent&) {
    in_callback = true;
    entered = true;
    ++calls;
    while (!cancelling) std::this_thread::yield();
    // Still running after Cancel was called: a Cancel that did not wait would return in
    // this stretch and see in_callback.
    for (int i = 0; i < 20000; ++i) std::this_thread::yield();
    in_callback = false;
  });
  std::thread writer([&] { PutNodes(store_, 1, 1); });
  ASSERT_TRUE(kubestat::testing::PollUntil([&] { return entered.load(); }, kReady));
  cancelling = true;
  watch->Cancel();
  EXPECT_FALSE(in_callback.load());
  writer.join();
  PutNodes(store_, 2, 1);
  EXPECT_EQ(calls.load(), 1);
}

// Writers on several threads commit batches (two node events and a pod event each) while
// another thread starts watches at revisions it has just read, some a little behind. Every
// watch must see exactly the node events of every revision above its start, in order, each
// batch's two events together and in batch order.
TEST_F(MemoryStoreTest, WatchesStartedWhileWritersRaceSeeEveryLaterEventExactlyOnce) {
  constexpr int kWriters = 4;
  constexpr int kMinBatchesPerWriter = 200;
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
        absl::StatusOr<WriteResult> result = store_.Apply(
            {PutNode(prefix + "-a", v), PutPod("shop", prefix, v), PutNode(prefix + "-b", v)});
        EXPECT_TRUE(result.ok()) << result.status();
      };
      int i = 0;
      for (; i < kMinBatchesPerWriter || !watches_started; ++i) commit(i);
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
    while (store_.Revision() < 20) std::this_thread::yield();
    for (int j = 0; j < kWatches; ++j) {
      StartedWatch& watch = watches[j];
      watch.after = store_.Revision() - static_cast<uint64_t>(j % 4);
      watch.subscription = MustWatch(store_, ObjectKind::kNode, watch.after, *watch.recorder);
      std::this_thread::yield();
    }
    watches_started = true;
  });
  watcher.join();
  for (std::thread& writer : writers) writer.join();

  const uint64_t last = store_.Revision();
  ASSERT_GE(last, static_cast<uint64_t>(kWriters * kMinBatchesPerWriter));
  for (StartedWatch& watch : watches) {
    ASSERT_NE(watch.subscription, nullptr);
    watch.subscription->Cancel();
    // The writers' tails guarantee that every watch started with batches still to come.
    ASSERT_LT(watch.after, last);
    const std::vector<Seen> seen = watch.recorder->seen();
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

TEST_F(MemoryStoreTest, WatchWithoutACallbackIsInvalidArgument) {
  EXPECT_EQ(store_.Watch(ObjectKind::kNode, 0, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(MemoryStoreTest, IsAlwaysReady) { EXPECT_TRUE(store_.Ready()); }

}  // namespace
}  // namespace kubestat::apiserver
