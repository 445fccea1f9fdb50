// EtcdStore against a real etcd (Debian's etcd-server; the tests skip without it): the
// ObjectStore contract (store_contract.h), and what only etcd does: a key named twice in a
// batch, 410 after compaction, lease expiry, two stores sharing one etcd, a restart of
// etcd under a live watch, failover between members, an unreachable etcd, TLS with a client
// certificate, and the options' checks.
#include "kubestat/apiserver/etcd_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kubestat/apiserver/object_store.h"
#include "kubestat/core/clock.h"
#include "kubestat/testing/etcd_process.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"
#include "kubestat/testing/test_pki.h"
#include "store_contract.h"

namespace kubestat::apiserver {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using namespace kubestat::apiserver::testing;  // NOLINT(google-build-using-namespace)
using kubestat::testing::EtcdBinary;
using kubestat::testing::EtcdCluster;
using kubestat::testing::kNoEtcdMessage;
using kubestat::testing::PollUntil;

// One etcd member for every test of this binary that needs no etcd of its own; each store
// gets a prefix of its own.
EtcdCluster& SharedEtcd() {
  static EtcdCluster etcd(1);
  return etcd;
}

std::string FreshPrefix() {
  static std::atomic<int> next = 0;
  return "/kubestat-test/" + std::to_string(next++) + "/";
}

// The etcd request timeout of the store contract's tests; see EtcdStoreFactory.
constexpr Duration kContractRequestTimeout = std::chrono::seconds(20);

EtcdStoreOptions OptionsFor(const std::vector<std::string>& endpoints) {
  EtcdStoreOptions options;
  options.endpoints = endpoints;
  options.prefix = FreshPrefix();
  options.object_ttl = Duration(0);
  options.compaction_interval = Duration(0);
  options.request_timeout = std::chrono::seconds(3);
  return options;
}

std::unique_ptr<EtcdStore> MustCreate(EtcdStoreOptions options, const Clock& clock) {
  absl::StatusOr<std::unique_ptr<EtcdStore>> store = EtcdStore::Create(std::move(options), clock);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

struct EtcdStoreFactory {
  static std::string SkipReason() { return EtcdBinary().empty() ? kNoEtcdMessage : ""; }
  std::unique_ptr<ObjectStore> Make(const Clock& clock) {
    if (!SharedEtcd().ok()) return nullptr;
    // object_ttl 0: ExpireOlderThan works by the written time, as the contract checks.
    EtcdStoreOptions options = OptionsFor(SharedEtcd().ClientUrls());
    // The contract never stops etcd, so a request only waits this long on a machine too
    // busy to answer in the usual 3 s (a watch's creation among them).
    options.request_timeout = kContractRequestTimeout;
    return MustCreate(std::move(options), clock);
  }
};

}  // namespace

namespace testing {
INSTANTIATE_TYPED_TEST_SUITE_P(Etcd, StoreContractTest, EtcdStoreFactory);
}  // namespace testing

namespace {

class EtcdStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (EtcdBinary().empty()) GTEST_SKIP() << kNoEtcdMessage;
    ASSERT_TRUE(SharedEtcd().ok());
  }
  std::unique_ptr<EtcdStore> Make(EtcdStoreOptions options) {
    return MustCreate(std::move(options), clock_);
  }
  std::unique_ptr<EtcdStore> Make() { return Make(OptionsFor(SharedEtcd().ClientUrls())); }

  FakeClock clock_;
};

TEST_F(EtcdStoreTest, AKeyNamedSeveralTimesInABatchGetsItsNetEffectAsOneEvent) {
  std::unique_ptr<EtcdStore> store = Make();
  ASSERT_NE(store, nullptr);
  const uint64_t base = store->Revision();
  Recorder recorder;
  std::unique_ptr<Subscription> watch = MustWatch(*store, ObjectKind::kNode, base, recorder);
  absl::StatusOr<WriteResult> result =
      store->Apply({CreateNode("node-1"), PutNode("node-1", 200), Delete(NodeKey("node-1")),
                    CreateNode("node-1"), PutNode("node-2", 300)});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->revision, base + 1);
  ASSERT_EQ(result->objects.size(), 5u);
  // The delete (op 2) answers the object op 1 stored.
  ASSERT_NE(result->objects[2].node, nullptr);
  EXPECT_EQ(result->objects[2].node->machine.cpu[0].min, 200u);
  EXPECT_THAT(recorder.WaitFor(2),
              ElementsAre(Added("nodes/node-1", base + 1), Added("nodes/node-2", base + 1)));
  absl::StatusOr<std::optional<StoredObject>> node = store->Get(NodeKey("node-1"));
  ASSERT_TRUE(node.ok() && node->has_value());
  EXPECT_EQ((*node)->node->machine.cpu[0].min, 100u);
}

TEST_F(EtcdStoreTest, AWatchBelowTheCompactedRevisionIsOutOfRangeExactly) {
  std::unique_ptr<EtcdStore> store = Make();
  ASSERT_NE(store, nullptr);
  const uint64_t base = store->Revision();
  PutNodes(*store, 1, 5);  // base+1 .. base+5
  ASSERT_TRUE(store->CompactTo(base + 3).ok());
  ASSERT_TRUE(store->CompactTo(base + 2).ok());  // already compacted further: fine

  absl::StatusOr<std::unique_ptr<Subscription>> too_old =
      store->Watch(ObjectKind::kNode, base + 1, [](const StoreEvent&) {});
  EXPECT_EQ(too_old.status(),
            absl::OutOfRangeError("too old resource version: " + std::to_string(base + 1) + " (" +
                                  std::to_string(base + 2) + ")"));
  Recorder boundary;
  std::unique_ptr<Subscription> at_boundary =
      MustWatch(*store, ObjectKind::kNode, base + 2, boundary);
  EXPECT_EQ(boundary.WaitFor(3).size(), 3u);
  EXPECT_EQ(boundary.revisions(), (std::vector<uint64_t>{base + 3, base + 4, base + 5}));
}

TEST_F(EtcdStoreTest, ObjectsNobodyRewritesExpireByLeaseAndWatchersSeeDeleted) {
  EtcdStoreOptions options = OptionsFor(SharedEtcd().ClientUrls());
  options.object_ttl = std::chrono::seconds(2);
  std::unique_ptr<EtcdStore> store = Make(options);
  ASSERT_NE(store, nullptr);
  const uint64_t base = store->Revision();
  Recorder nodes;
  std::unique_ptr<Subscription> watch = MustWatch(*store, ObjectKind::kNode, base, nodes);
  ASSERT_TRUE(store->Apply({PutNode("node-1"), PutNode("node-2")}).ok());
  absl::StatusOr<size_t> expired = store->ExpireOlderThan(clock_.Now() + std::chrono::hours(1));
  ASSERT_TRUE(expired.ok());
  EXPECT_EQ(*expired, 0u);  // leases do it

  // etcd deletes both keys of the lease in one revision once it runs out (a few seconds).
  const std::vector<Seen> seen = nodes.WaitFor(4);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[2].type, EventType::kDeleted);
  EXPECT_EQ(seen[3].type, EventType::kDeleted);
  EXPECT_EQ(seen[2].revision, seen[3].revision);
  absl::StatusOr<ListResult> left = store->List(ObjectKind::kNode, "");
  ASSERT_TRUE(left.ok());
  EXPECT_THAT(left->items, IsEmpty());

  // A write after the lease ran out gets a new lease.
  absl::StatusOr<WriteResult> again = store->Apply({PutNode("node-3")});
  ASSERT_TRUE(again.ok()) << again.status();
}

TEST_F(EtcdStoreTest, TwoStoresOnOneEtcdServeTheSameObjectsAndEvents) {
  EtcdStoreOptions options = OptionsFor(SharedEtcd().ClientUrls());
  std::unique_ptr<EtcdStore> first = Make(options);
  std::unique_ptr<EtcdStore> second = Make(options);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  const uint64_t base = first->Revision();
  Recorder on_second;
  std::unique_ptr<Subscription> watch = MustWatch(*second, ObjectKind::kPod, base, on_second);

  ASSERT_TRUE(first->Apply({PutPod("shop", "web-1"), PutPod("shop", "web-2")}).ok());
  ASSERT_TRUE(second->Apply({Delete(PodKey("shop", "web-1"))}).ok());
  EXPECT_EQ(second->Apply({CreatePod("shop", "web-2")}).status(),
            absl::AlreadyExistsError("op 0: pods/shop/web-2 already exists"));

  EXPECT_THAT(on_second.WaitFor(3),
              ElementsAre(Added("pods/shop/web-1", base + 1), Added("pods/shop/web-2", base + 1),
                          Deleted("pods/shop/web-1", base + 2)));
  absl::StatusOr<ListResult> a = first->List(ObjectKind::kPod, "shop");
  absl::StatusOr<ListResult> b = second->List(ObjectKind::kPod, "shop");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->revision, b->revision);
  EXPECT_THAT(Keys(*a), ElementsAre("pods/shop/web-2"));
  EXPECT_EQ(Keys(*a), Keys(*b));
  EXPECT_EQ(first->Revision(), second->Revision());
}

// A store on `etcd` with a watch of the nodes from its start (recorder_), that has seen
// `nodes` batches (node-1 ..).
class EtcdFailureTest : public EtcdStoreTest {
 protected:
  void StartWatching(EtcdCluster& etcd, int nodes) {
    ASSERT_TRUE(etcd.ok());
    store_ = Make(OptionsFor(etcd.ClientUrls()));
    ASSERT_NE(store_, nullptr);
    base_ = store_->Revision();
    watch_ = MustWatch(*store_, ObjectKind::kNode, base_, recorder_);
    PutNodes(*store_, 1, nodes);
    ASSERT_EQ(recorder_.WaitFor(nodes).size(), static_cast<size_t>(nodes));
    EXPECT_TRUE(store_->Ready());
  }

  std::unique_ptr<EtcdStore> store_;
  uint64_t base_ = 0;
  Recorder recorder_;
  std::unique_ptr<Subscription> watch_;
};

TEST_F(EtcdFailureTest, AWatchResumesAcrossAnEtcdRestartWithoutLosingOrRepeatingEvents) {
  EtcdCluster etcd(1);
  StartWatching(etcd, 2);
  if (HasFatalFailure()) return;
  EtcdStore* store = store_.get();
  const uint64_t base = base_;
  Recorder& recorder = recorder_;

  etcd.Kill(0);
  EXPECT_EQ(store->Apply({PutNode("node-x")}).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(store->Ready());
  ASSERT_TRUE(etcd.Restart(0));

  // The store reconnects by itself; the watch goes on from where it was.
  ASSERT_TRUE(PollUntil([&] { return store->Apply({PutNode("node-3")}).ok(); }, kReady,
                        std::chrono::milliseconds(100)));
  PutNodes(*store, 4, 1);
  EXPECT_TRUE(store->Ready());
  EXPECT_EQ(recorder.WaitFor(4).size(), 4u);
  EXPECT_EQ(recorder.revisions(), (std::vector<uint64_t>{base + 1, base + 2, base + 3, base + 4}));
}

TEST_F(EtcdFailureTest, ReadsWritesAndWatchesGoOnWhenOneOfThreeMembersDies) {
  EtcdCluster etcd(3);
  StartWatching(etcd, 1);
  if (HasFatalFailure()) return;
  EtcdStore* store = store_.get();
  Recorder& recorder = recorder_;

  etcd.Kill(0);  // the member the store talks to first
  ASSERT_TRUE(PollUntil([&] { return store->Apply({PutNode("node-2")}).ok(); }, kReady,
                        std::chrono::milliseconds(100)));
  PutNodes(*store, 3, 1);
  absl::StatusOr<ListResult> nodes = store->List(ObjectKind::kNode, "");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_THAT(Keys(*nodes), ElementsAre("nodes/node-1", "nodes/node-2", "nodes/node-3"));
  const std::vector<Seen> seen = recorder.WaitFor(3);
  ASSERT_GE(seen.size(), 3u);
  EXPECT_EQ(seen.back(), Added("nodes/node-3", nodes->revision));
  EXPECT_TRUE(store->Ready());
}

TEST_F(EtcdStoreTest, AWatchEndsWhenNoMemberAnswersForTheReadyWindow) {
  EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.ok());
  EtcdStoreOptions options = OptionsFor(etcd.ClientUrls());
  options.ready_window = std::chrono::seconds(1);
  std::unique_ptr<EtcdStore> store = Make(options);
  ASSERT_NE(store, nullptr);
  std::mutex mu;
  std::optional<absl::Status> ended;
  absl::StatusOr<std::unique_ptr<Subscription>> watch = store->WatchWithEnd(
      ObjectKind::kNode, store->Revision(), [](const StoreEvent&) {},
      [&](const absl::Status& why) {
        std::lock_guard lock(mu);
        ended = why;
      });
  ASSERT_TRUE(watch.ok()) << watch.status();
  etcd.Kill(0);
  ASSERT_TRUE(PollUntil(
      [&] {
        std::lock_guard lock(mu);
        return ended.has_value();
      },
      kReady));
  std::lock_guard lock(mu);
  EXPECT_EQ(ended->code(), absl::StatusCode::kUnavailable) << *ended;
}

TEST_F(EtcdStoreTest, AnUnreachableEtcdIsUnavailableAndNotReady) {
  EtcdStoreOptions options =
      OptionsFor({"http://127.0.0.1:" + std::to_string(kubestat::testing::FreeLoopbackPort())});
  options.request_timeout = std::chrono::seconds(1);
  std::unique_ptr<EtcdStore> store = Make(options);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Apply({PutNode("node-1")}).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store->Get(NodeKey("node-1")).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store->List(ObjectKind::kNode, "").status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store->Watch(ObjectKind::kNode, 0, [](const StoreEvent&) {}).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_FALSE(store->Ready());
}

TEST_F(EtcdStoreTest, SpeaksTlsWithAClientCertificate) {
  kubestat::testing::TestPki pki;
  kubestat::testing::TempDir dir("kubestat-etcd-tls");
  const kubestat::testing::TestCertificate serving = pki.IssueServer("etcd", {"IP:127.0.0.1"});
  const kubestat::testing::TestCertificate client = pki.IssueClient("kubestat-apiserver", {});
  kubestat::testing::EtcdTls tls;
  tls.cert_file = dir.Write("etcd.crt", serving.cert_pem);
  tls.key_file = dir.Write("etcd.key", serving.key_pem);
  tls.client_ca_file = dir.Write("ca.crt", pki.ca_pem());
  EtcdCluster etcd(1, tls);
  ASSERT_TRUE(etcd.ok());

  EtcdStoreOptions options = OptionsFor(etcd.ClientUrls());
  options.ca_file = tls.client_ca_file;
  options.cert_file = dir.Write("client.crt", client.cert_pem);
  options.key_file = dir.Write("client.key", client.key_pem);
  std::unique_ptr<EtcdStore> store = Make(options);
  ASSERT_NE(store, nullptr);
  const uint64_t base = store->Revision();
  ASSERT_TRUE(store->Apply({PutNode("node-1")}).ok());
  Recorder recorder;
  std::unique_ptr<Subscription> watch = MustWatch(*store, ObjectKind::kNode, base, recorder);
  EXPECT_THAT(recorder.WaitFor(1), ElementsAre(Added("nodes/node-1", base + 1)));

  // Without a client certificate etcd refuses the connection.
  options.cert_file.clear();
  options.key_file.clear();
  options.request_timeout = std::chrono::seconds(1);
  std::unique_ptr<EtcdStore> anonymous = Make(options);
  ASSERT_NE(anonymous, nullptr);
  EXPECT_EQ(anonymous->Get(NodeKey("node-1")).status().code(), absl::StatusCode::kUnavailable);
}

TEST(EtcdTxnLimitTest, ABulkWriteBeyondEtcdsMaxTxnOpsLandsWholeInIncreasingRevisions) {
  if (EtcdBinary().empty()) GTEST_SKIP() << kNoEtcdMessage;
  EtcdCluster etcd(1, std::nullopt, std::chrono::seconds(60), /*max_txn_ops=*/8);
  ASSERT_TRUE(etcd.ok());
  FakeClock clock;
  std::unique_ptr<EtcdStore> store = MustCreate(OptionsFor(etcd.ClientUrls()), clock);
  ASSERT_NE(store, nullptr);
  const uint64_t start = store->Revision();
  Recorder recorder;
  std::unique_ptr<Subscription> watch = MustWatch(*store, ObjectKind::kNode, start, recorder);
  std::vector<WriteOp> bulk;
  std::vector<std::string> names;
  for (int i = 0; i < 50; ++i) {
    names.push_back(absl::StrFormat("node-%02d", i));
    bulk.push_back(PutNode(names.back()));
  }

  for (int round = 0; round < 2; ++round) {  // the second round learned etcd's limit
    const uint64_t before = store->Revision();
    absl::StatusOr<WriteResult> written = store->Apply(bulk);
    ASSERT_TRUE(written.ok()) << written.status();
    ASSERT_EQ(written->objects.size(), 50u);
    std::vector<uint64_t> revisions;
    for (const StoredObject& object : written->objects) {
      revisions.push_back(object.resource_version);
    }
    EXPECT_GT(revisions.front(), before);
    EXPECT_TRUE(std::is_sorted(revisions.begin(), revisions.end()));
    EXPECT_LT(revisions.front(), revisions.back()) << "one Txn of 50 keys passed etcd's limit of 8";
    EXPECT_EQ(written->revision, revisions.back());
    absl::StatusOr<ListResult> list = store->List(ObjectKind::kNode, "");
    ASSERT_TRUE(list.ok());
    std::vector<std::string> listed;
    for (size_t i = 0; i < list->items.size(); ++i) {
      listed.push_back(list->items[i].key.name);
      EXPECT_EQ(list->items[i].resource_version, revisions[i]) << list->items[i].key.name;
    }
    EXPECT_EQ(listed, names);
  }
  const std::vector<Seen> seen = recorder.WaitFor(100);
  ASSERT_EQ(seen.size(), 100u);
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].type, i < 50 ? EventType::kAdded : EventType::kModified);
    EXPECT_EQ(seen[i].key, "nodes/" + names[i % 50]);
    if (i > 0) {
      EXPECT_LE(seen[i - 1].revision, seen[i].revision);
    }
  }

  // Creates may fail on what is stored: one Txn or none, never part of the batch.
  std::vector<WriteOp> creates;
  for (int i = 0; i < 10; ++i) creates.push_back(CreateNode(absl::StrFormat("new-%02d", i)));
  absl::StatusOr<WriteResult> refused = store->Apply(creates);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("--max-txn-ops"));
  absl::StatusOr<size_t> count = store->Count(ObjectKind::kNode);
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 50u);
}

TEST(EtcdStoreOptionsTest, BadOptionsNameTheirFlag) {
  FakeClock clock;
  auto error = [&](const EtcdStoreOptions& options) {
    absl::StatusOr<std::unique_ptr<EtcdStore>> store = EtcdStore::Create(options, clock);
    return store.ok() ? std::string("ok") : std::string(store.status().message());
  };
  EtcdStoreOptions options;
  EXPECT_EQ(error(options), "--etcd-servers: no endpoint");
  options.endpoints = {"127.0.0.1:2379"};
  EXPECT_THAT(error(options), ::testing::HasSubstr("--etcd-servers: 127.0.0.1:2379"));
  options.endpoints = {"http://127.0.0.1:2379"};
  options.prefix = "registry";
  EXPECT_THAT(error(options), ::testing::HasSubstr("--etcd-prefix"));
  options.prefix = "/registry/";
  options.cert_file = "/nonexistent/cert.pem";
  EXPECT_THAT(error(options), ::testing::HasSubstr("--etcd-certfile/--etcd-keyfile"));
  options.key_file = "/nonexistent/key.pem";
  EXPECT_THAT(error(options), ::testing::HasSubstr("--etcd-certfile"));
}

}  // namespace
}  // namespace kubestat::apiserver
