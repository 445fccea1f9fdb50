// MemoryStore: the ObjectStore contract (store_contract.h) and what only the memory store
// does: several events per key in one batch, objects shared rather than copied, the bounded
// history behind 410 (whole batches dropped, the exact boundary) and readiness.
#include "kubestat/apiserver/memory_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/apiserver/object_store.h"
#include "kubestat/core/clock.h"
#include "store_contract.h"

namespace kubestat::apiserver {
namespace {

using metrics_api::PodMetrics;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using namespace kubestat::apiserver::testing;  // NOLINT(google-build-using-namespace)

struct MemoryStoreFactory {
  static std::string SkipReason() { return ""; }
  std::unique_ptr<ObjectStore> Make(const Clock& clock) {
    return std::make_unique<MemoryStore>(MemoryStoreOptions{}, clock);
  }
};

}  // namespace

namespace testing {
INSTANTIATE_TYPED_TEST_SUITE_P(Memory, StoreContractTest, MemoryStoreFactory);
}  // namespace testing

namespace {

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

TEST_F(MemoryStoreTest, GetAndListShareTheStoredObjectInsteadOfCopyingIt) {
  WriteOp put = PutPod("shop", "web-1", 4242);
  absl::StatusOr<WriteResult> written = store_.Apply({put});
  ASSERT_TRUE(written.ok());
  // Stored once with its version in its metadata, then shared by every reader.
  const PodMetrics* stored = written->objects.at(0).pod.get();
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(stored->resource_version, std::to_string(written->revision));
  EXPECT_EQ(put.pod->resource_version, "");  // the writer's object is left as it was

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

// A StoreEvent as another store would deliver it: `object` written at `revision`.
StoreEvent Replicated(EventType type, StoredObject object, uint64_t revision, bool last) {
  object.resource_version = revision;
  StoreEvent event;
  event.type = type;
  event.object = std::move(object);
  event.last_of_batch = last;
  return event;
}

StoredObject StoredNode(const std::string& name) {
  StoredObject object;
  object.key = NodeKey(name);
  object.node = NodeObject(name);
  return object;
}

TEST(MemoryStoreMirrorTest, AListInTheMiddleOfAReplicatedBatchReportsThePreviousRevision) {
  FakeClock clock;
  MemoryStore mirror(MemoryStoreOptions{}, clock);
  StoredObject first = StoredNode("node-1");
  first.resource_version = 10;
  mirror.Reset(10, {first}, absl::OkStatus());
  EXPECT_EQ(mirror.Revision(), 10u);
  EXPECT_EQ(mirror.OldestRevision(), 10u);

  ASSERT_TRUE(
      mirror.Replicate(Replicated(EventType::kAdded, StoredNode("node-2"), 12, false)).ok());
  // The object is there at once; the revision waits for the batch's last event.
  absl::StatusOr<ListResult> middle = mirror.List(ObjectKind::kNode, "");
  ASSERT_TRUE(middle.ok());
  EXPECT_THAT(Keys(*middle), ElementsAre("nodes/node-1", "nodes/node-2"));
  EXPECT_EQ(middle->revision, 10u);
  EXPECT_EQ(mirror.Revision(), 10u);

  // A client that watches from that list's revision gets the whole batch, the part it saw
  // in the list again.
  Recorder recorder;
  std::unique_ptr<Subscription> watch = MustWatch(mirror, ObjectKind::kNode, 10, recorder);
  ASSERT_TRUE(mirror.Replicate(Replicated(EventType::kAdded, StoredNode("node-3"), 12, true)).ok());
  EXPECT_EQ(mirror.Revision(), 12u);
  ASSERT_TRUE(
      mirror.Replicate(Replicated(EventType::kDeleted, StoredNode("node-1"), 15, true)).ok());
  EXPECT_THAT(recorder.seen(), ElementsAre(Added("nodes/node-2", 12), Added("nodes/node-3", 12),
                                           Deleted("nodes/node-1", 15)));
  absl::StatusOr<ListResult> after = mirror.List(ObjectKind::kNode, "");
  ASSERT_TRUE(after.ok());
  EXPECT_THAT(Keys(*after), ElementsAre("nodes/node-2", "nodes/node-3"));
  EXPECT_EQ(after->revision, 15u);

  // Older than what the mirror holds: refused, nothing changes.
  EXPECT_EQ(mirror.Replicate(Replicated(EventType::kAdded, StoredNode("node-9"), 14, true)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(mirror.Revision(), 15u);
}

TEST(MemoryStoreMirrorTest, ResetEndsEveryWatchWithItsReasonAndForgetsTheHistory) {
  FakeClock clock;
  MemoryStore mirror(MemoryStoreOptions{}, clock);
  ASSERT_TRUE(mirror.Replicate(Replicated(EventType::kAdded, StoredNode("node-1"), 4, true)).ok());
  std::vector<absl::Status> ended;
  Recorder recorder;
  absl::StatusOr<std::unique_ptr<Subscription>> watch =
      mirror.WatchWithEnd(ObjectKind::kNode, 0, recorder.Callback(),
                          [&](const absl::Status& why) { ended.push_back(why); });
  ASSERT_TRUE(watch.ok());
  EXPECT_THAT(recorder.seen(), ElementsAre(Added("nodes/node-1", 4)));

  mirror.Reset(20, {}, absl::UnavailableError("loading again"));
  EXPECT_THAT(ended, ElementsAre(absl::UnavailableError("loading again")));
  ASSERT_TRUE(mirror.Replicate(Replicated(EventType::kAdded, StoredNode("node-2"), 21, true)).ok());
  EXPECT_THAT(recorder.seen(), ElementsAre(Added("nodes/node-1", 4)));  // nothing after its end
  EXPECT_EQ(mirror.Watch(ObjectKind::kNode, 19, [](const StoreEvent&) {}).status(),
            absl::OutOfRangeError("too old resource version: 19 (20)"));
  (*watch)->Cancel();  // after its end: nothing to do
  EXPECT_EQ(ended.size(), 1u);
}

TEST_F(MemoryStoreTest, IsAlwaysReady) { EXPECT_TRUE(store_.Ready()); }

}  // namespace
}  // namespace kubestat::apiserver
