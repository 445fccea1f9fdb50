// EtcdStore: the ObjectStore (object_store.h) kept in an etcd v3 cluster, spoken to over
// etcd's gRPC API, so that several kubestat-apiserver replicas serve the same objects.
//
// Keys and values: every object lives under one prefix (default "/registry/kubestat/"), at
// <prefix>nodes/<name> and <prefix>pods/<namespace>/<name>, so a list of one kind or of one
// namespace's pods is one range read. A value is one format byte (1), the time of the write
// (int64 nanoseconds since the Unix epoch, big-endian) and the object serialized as a
// kubestat.v1 NodeMetrics or PodMetrics (metrics_api/proto.h). A value that does not decode
// is skipped by List and watches (and logged) and is DataLoss for Get.
//
// Revisions: resource_version is the etcd revision of the write (mod_revision); lists, gets
// and WriteResult carry the revision etcd answered at. etcd's revision counts every write to
// the cluster, including other prefixes: revisions are increasing, not consecutive. GetAt
// checks the revision its range read answered at; ListAt with kExact reads the range at that
// revision (etcd keeps it until compacted: then OutOfRange, a future one is
// TooLargeResourceVersion).
//
// Apply: one etcd Txn per batch, so a batch is one revision, all or nothing (but see
// --max-txn-ops below). The ops are
// checked as MemoryStore checks them (InvalidArgument, same messages), then folded per key:
// etcd allows one change per key in a Txn, so a key the batch names several times gets its
// net effect (its last object, or deleted), with a single event, and its ops' preconditions
// become compares (kCreate: create_revision == 0; kDelete: version > 0, each as the earlier
// ops of the batch leave the key). When a compare fails, the Txn reads the batch's keys in
// its failure branch, at the same revision, and the first op that fails against them gives
// the error MemoryStore gives: AlreadyExists "op <i>: <key> already exists" or NotFound
// "op <i>: <key> not found". A batch that changes nothing (no ops, or deletes of absent
// keys) does not move etcd's revision (an etcd Txn that changes no key does not); its
// WriteResult::revision is the current one.
// etcd limits a Txn to --max-txn-ops operations per branch (default 128; a key is one) and
// does not say its limit. A batch of only kPut and kDeleteIfPresent ops (the bridge's bulk
// write), which cannot fail on what is stored, is then committed in several Txns in key
// order: a Txn etcd refuses as too many operations is sent again halved, and the store keeps
// that size for later batches. Such a batch is then several revisions, increasing in key
// order: each object carries its Txn's revision, WriteResult::revision is the last, and a
// failure (etcd unreachable) part way leaves the Txns before it applied (each key
// is all or nothing, the batch is not; the writer retries the batch, which is idempotent). A
// batch with kCreate or kDelete stays one Txn, and one larger than etcd's limit is refused
// (InvalidArgument naming --max-txn-ops), as one above --max-request-bytes is.
//
// Watches: one bidirectional etcd Watch stream per store carries every subscription (watch
// ids chosen by the store), read by one thread, which runs the callbacks: a subscription
// sees its events one at a time, in revision order (one batch's keys in op order). A watch
// asks etcd for events from after + 1 with the previous value, so DELETED carries the
// object as it was, with the deleting revision and, as written, the time the store saw the
// event (a lease expiry has no writer; when etcd no longer has the previous value the
// object carries only its name and namespace). Watch returns once etcd created the watch;
// an `after` etcd has compacted is OutOfRange "too old resource version: <after>
// (<oldest>)", oldest being the compaction revision - 1 (the oldest `after` still served).
// When the stream breaks (the member died, the network failed) the thread reconnects, to
// the next endpoint in turn with backoff, and re-creates every subscription from the
// revision after its last delivered batch: no event is lost or repeated. A subscription
// that cannot resume (compacted meanwhile) ends: WatchWithEnd's on_end is called with
// OutOfRange and nothing more is delivered; every subscription ends so (Unavailable) when no
// member answered the stream for ready_window. Callbacks must not block, throw or
// call Watch or WatchWithEnd (that would deadlock); they may call Get, List, Apply, Cancel
// and destroy a Subscription.
// Cancel() (and the destructor) waits for a callback of the store in progress on another
// thread; from inside a callback it only marks the subscription. Idempotent.
//
// TTL by leases (object_ttl > 0): writes attach a lease that expires object_ttl plus a
// quarter of it after it was granted; one lease is granted per quarter of object_ttl and
// shared by every write in it (never one per write). etcd deletes the keys of an expired
// lease in one revision, so an object nobody rewrites is gone between object_ttl and 1.25 x
// object_ttl after its last write and watchers see DELETED. ExpireOlderThan then answers
// 0 and reads nothing. With object_ttl = 0 no lease is used and ExpireOlderThan works as in
// MemoryStore (reads every object, deletes those written before the cutoff in one Txn that
// compares their mod_revision, so a concurrent rewrite is not lost).
//
// Compaction: every compaction_interval the store compacts etcd to the revision it read one
// interval earlier, so watches can resume from anything newer than one interval (as
// kube-apiserver does); every replica may do it, etcd ignores a compaction to a revision
// already compacted. 0 disables it (another etcd client compacts).
//
// Endpoints and failure: one gRPC channel per endpoint; a call goes to the endpoint that
// last answered and, when it is unreachable (Unavailable, or a deadline for reads), to the
// next one. Writes are retried on another endpoint only when the call was refused before
// etcd saw it (Unavailable), never after a deadline, so a kCreate is not applied twice.
// Every unary call has request_timeout as deadline; answers above max_receive_message_bytes
// are refused and lists read list_page_size keys per call, all at the first page's revision.
// Unreachable etcd is Unavailable "etcd: <endpoint>: <message>". Ready() is true while the
// last call (or the probe every probe_interval) reached a quorum within ready_window. A
// thread keeps every endpoint's channel connecting (reconnect backoff 200 ms to 2 s, a
// connection attempt given up after 5 s), so after an outage of every member the store
// answers within a few seconds of a quorum being back, and logs once "etcd answers again
// after <how long>".
// http:// endpoints use plaintext (meant for loopback); https:// ones TLS with ca_file (or
// the system roots) and the client certificate cert_file/key_file when given.
//
// Thread-safety: every method is safe from any thread. Ownership: borrows the clock (the
// written time and the lease and compaction schedules), which must outlive the store; every
// Subscription must be destroyed before its store.
#ifndef KUBESTAT_APISERVER_ETCD_STORE_H_
#define KUBESTAT_APISERVER_ETCD_STORE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/apiserver/object_store.h"
#include "kubestat/core/clock.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::apiserver {

struct EtcdStoreOptions {
  // Client URLs of the etcd members, "http://host:port" or "https://host:port" (--etcd-servers).
  // Required. Default: none
  std::vector<std::string> endpoints;
  // The key prefix every object lives under; ends with '/'. Default: /registry/kubestat/
  std::string prefix = "/registry/kubestat/";
  // PEM files for https endpoints: the CA that signed the members' certificates (empty: the
  // system roots), and this client's certificate and key (both or neither). Default: none
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  // Objects not rewritten for this long are deleted by their lease; 0: no leases. Default: 5m
  Duration object_ttl = std::chrono::minutes(5);
  // How often to compact etcd's history, to the revision of one interval earlier; 0: never.
  // Default: 5m
  Duration compaction_interval = std::chrono::minutes(5);
  // Deadline of every unary call to etcd, and of Watch's wait for the watch. Default: 5s
  Duration request_timeout = std::chrono::seconds(5);
  // How often the store checks that etcd answers, and how long an answer counts for Ready().
  // Default: 2s, 10s
  Duration probe_interval = std::chrono::seconds(2);
  Duration ready_window = std::chrono::seconds(10);
  // The largest gRPC message accepted from etcd. Default: 64 MiB
  int max_receive_message_bytes = 64 << 20;
  // Keys read per range call of a List or ExpireOlderThan. Default: 1000
  int64_t list_page_size = 1000;

  // InvalidArgument naming the option (as its flag) when one is unusable.
  [[nodiscard]] absl::Status Validate() const;
};

class EtcdStore final : public ObjectStore {
 public:
  // Validates the options and reads the TLS files; etcd need not be up yet (Ready() is
  // false until it answers). Starts the watch, probe and channel threads. With a registry
  // (which must outlive the store) it counts kubestat_apiserver_etcd_reconnects_total
  // {endpoint} (a member connected to again after its connection was lost),
  // kubestat_apiserver_etcd_endpoint_switches_total (an answer from another member than the
  // last) and kubestat_apiserver_etcd_outages_total (no member answered after one had).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<EtcdStore>> Create(
      EtcdStoreOptions options, const Clock& clock, prometheus::Registry* registry = nullptr);
  ~EtcdStore() override;

  EtcdStore(const EtcdStore&) = delete;
  EtcdStore& operator=(const EtcdStore&) = delete;

  [[nodiscard]] absl::StatusOr<WriteResult> Apply(const std::vector<WriteOp>& ops) override;
  [[nodiscard]] absl::StatusOr<std::optional<StoredObject>> Get(
      const ObjectKey& key) const override;
  [[nodiscard]] absl::StatusOr<ListResult> List(ObjectKind kind,
                                                std::string_view namespace_name) const override;
  [[nodiscard]] absl::StatusOr<std::optional<StoredObject>> GetAt(
      const ObjectKey& key, const ReadVersion& version) const override;
  [[nodiscard]] absl::StatusOr<ListResult> ListAt(ObjectKind kind, std::string_view namespace_name,
                                                  const ReadVersion& version) const override;
  // One count_only range read: no object is read or decoded.
  [[nodiscard]] absl::StatusOr<size_t> Count(ObjectKind kind) const override;
  [[nodiscard]] absl::StatusOr<std::unique_ptr<Subscription>> Watch(
      ObjectKind kind, uint64_t after, WatchCallback callback) override;
  [[nodiscard]] absl::StatusOr<std::unique_ptr<Subscription>> WatchWithEnd(
      ObjectKind kind, uint64_t after, WatchCallback callback,
      const WatchEndCallback& on_end) override;
  // 0 without reading when leases expire objects (object_ttl > 0); see the file comment.
  [[nodiscard]] absl::StatusOr<size_t> ExpireOlderThan(Timestamp cutoff) override;
  // etcd's current revision; the newest one seen when etcd does not answer.
  uint64_t Revision() const override;
  bool Ready() const override;

  // Compacts etcd's history up to `revision` (watches may then start after revision - 1 or
  // later). For the compaction schedule and tests.
  [[nodiscard]] absl::Status CompactTo(uint64_t revision);

 private:
  class Impl;
  explicit EtcdStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kubestat::apiserver

#endif  // KUBESTAT_APISERVER_ETCD_STORE_H_
