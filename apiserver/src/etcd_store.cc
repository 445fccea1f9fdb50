#include "kubestat/apiserver/etcd_store.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <span>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "etcd_codec.h"
#include "etcd_connection.h"
#include "etcd_watch.h"
#include "kubestat/core/log.h"
#include "write_op_check.h"

namespace kubestat::apiserver {
namespace {

using etcd::CallKind;
using etcd::EndpointStubs;

// The ops of one batch on one key, in batch order.
struct KeyOps {
  ObjectKey key;
  std::string etcd_key;
  std::vector<size_t> ops;
};

// What applying `ops` (indices into `batch`, all on one key) in order does to a key that is
// present or not at the start: the first op that fails, or whether the key ends present.
struct Outcome {
  std::optional<size_t> failing_op;
  bool present = false;
};
Outcome Simulate(const std::vector<WriteOp>& batch, const std::vector<size_t>& ops, bool present) {
  Outcome outcome;
  for (size_t i : ops) {
    switch (batch[i].type) {
      case WriteOp::Type::kCreate:
        if (present) return Outcome{i, present};
        [[fallthrough]];
      case WriteOp::Type::kPut:
        present = true;
        break;
      case WriteOp::Type::kDelete:
        if (!present) return Outcome{i, present};
        [[fallthrough]];
      case WriteOp::Type::kDeleteIfPresent:
        present = false;
        break;
    }
  }
  outcome.present = present;
  return outcome;
}

absl::Status OpError(const std::vector<WriteOp>& batch, size_t i) {
  const std::string key = ObjectKeyString(batch[i].key);
  if (batch[i].type == WriteOp::Type::kCreate) {
    return absl::AlreadyExistsError(absl::StrCat("op ", i, ": ", key, " already exists"));
  }
  return absl::NotFoundError(absl::StrCat("op ", i, ": ", key, " not found"));
}

// etcd refused a Txn for its --max-txn-ops.
bool TooManyOps(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument &&
         absl::StrContains(status.message(), "too many operations");
}

etcdserverpb::Compare KeyCompare(const std::string& key, bool present) {
  etcdserverpb::Compare compare;
  compare.set_key(key);
  if (present) {
    compare.set_target(etcdserverpb::Compare::VERSION);
    compare.set_result(etcdserverpb::Compare::GREATER);
    compare.set_version(0);
  } else {
    compare.set_target(etcdserverpb::Compare::CREATE);
    compare.set_result(etcdserverpb::Compare::EQUAL);
    compare.set_create_revision(0);
  }
  return compare;
}

// A compare no key passes (a version is never negative): for a key whose ops fail whatever
// is stored, so the Txn reads the keys and the first failing op is named.
etcdserverpb::Compare NeverHolds(const std::string& key) {
  etcdserverpb::Compare compare;
  compare.set_key(key);
  compare.set_target(etcdserverpb::Compare::VERSION);
  compare.set_result(etcdserverpb::Compare::LESS);
  compare.set_version(0);
  return compare;
}

}  // namespace

absl::Status EtcdStoreOptions::Validate() const {
  if (endpoints.empty()) return absl::InvalidArgumentError("--etcd-servers: no endpoint");
  if (prefix.empty() || prefix.front() != '/' || prefix.back() != '/') {
    return absl::InvalidArgumentError("--etcd-prefix: must start and end with '/'");
  }
  if (cert_file.empty() != key_file.empty()) {
    return absl::InvalidArgumentError("--etcd-certfile/--etcd-keyfile: give both or neither");
  }
  if (object_ttl.count() < 0)
    return absl::InvalidArgumentError("--object-ttl: must not be negative");
  if (compaction_interval.count() < 0) {
    return absl::InvalidArgumentError("--etcd-compaction-interval: must not be negative");
  }
  if (request_timeout.count() <= 0 || probe_interval.count() <= 0 || ready_window.count() <= 0) {
    return absl::InvalidArgumentError(
        "etcd: request timeout, probe interval and ready window "
        "must be positive");
  }
  if (max_receive_message_bytes <= 0 || list_page_size <= 0) {
    return absl::InvalidArgumentError("etcd: message size and page size must be positive");
  }
  return absl::OkStatus();
}

class EtcdStore::Impl {
 public:
  Impl(EtcdStoreOptions options, const Clock& clock, std::unique_ptr<etcd::Connection> connection)
      : options_(std::move(options)),
        clock_(clock),
        connection_(std::move(connection)),
        watches_(*connection_, options_.prefix, clock, options_.request_timeout,
                 options_.ready_window) {
    next_compaction_ = clock_.MonotonicNow() + options_.compaction_interval;
    probe_ = std::thread([this] { ProbeLoop(); });
  }

  ~Impl() {
    {
      std::lock_guard lock(probe_mu_);
      stopping_ = true;
    }
    probe_cv_.notify_all();
    probe_.join();
  }

  absl::StatusOr<WriteResult> Apply(const std::vector<WriteOp>& ops) {
    for (size_t i = 0; i < ops.size(); ++i) {
      if (absl::Status status = CheckWriteOp(i, ops[i]); !status.ok()) return status;
    }
    if (ops.empty()) return WriteResult{Revision(), {}, {}};

    // One entry per key, in the order the batch first names it.
    std::vector<KeyOps> keys;
    std::map<ObjectKey, size_t> key_index;
    std::vector<size_t> key_of_op;
    for (size_t i = 0; i < ops.size(); ++i) {
      auto [it, added] = key_index.try_emplace(ops[i].key, keys.size());
      if (added) keys.push_back(KeyOps{ops[i].key, etcd::KeyOf(options_.prefix, ops[i].key), {}});
      keys[it->second].ops.push_back(i);
      key_of_op.push_back(it->second);
    }

    const Timestamp now = clock_.Now();
    // Each key's object before the batch (prev_kv) and the revision its Txn committed at.
    std::vector<std::optional<StoredObject>> current(keys.size());
    std::vector<uint64_t> key_revision(keys.size());
    // A batch of puts and deletes-if-present cannot fail on what is stored: when it has more
    // keys than etcd takes in one Txn (--max-txn-ops) it is committed in several, in order.
    const bool unconditional = std::all_of(ops.begin(), ops.end(), [](const WriteOp& op) {
      return op.type == WriteOp::Type::kPut || op.type == WriteOp::Type::kDeleteIfPresent;
    });
    for (size_t begin = 0; begin < keys.size();) {
      const size_t end =
          unconditional ? std::min(keys.size(), begin + max_txn_keys_.load()) : keys.size();
      const std::span<const KeyOps> chunk(keys.data() + begin, end - begin);
      absl::StatusOr<etcdserverpb::TxnResponse> response = Commit(ops, chunk, now);
      if (!response.ok() && TooManyOps(response.status())) {
        if (unconditional && chunk.size() > 1) {
          // etcd does not tell its limit: halve the Txn until it fits, and keep that size
          // for later batches. Nothing of this Txn was applied; it goes again, smaller.
          const size_t half = chunk.size() / 2;
          size_t seen = max_txn_keys_.load();
          while (seen > half && !max_txn_keys_.compare_exchange_weak(seen, half)) {
          }
          continue;
        }
        return absl::InvalidArgumentError(absl::StrCat(
            response.status().message(), " (a batch of ", ops.size(), " ops on ", keys.size(),
            " keys that may fail on what is stored is one etcd transaction: raise etcd's "
            "--max-txn-ops, or send smaller batches)"));
      }
      if (!response.ok()) return response.status();
      if (!response->succeeded()) return FailedOp(ops, keys, key_of_op, *response);
      const auto revision = static_cast<uint64_t>(response->header().revision());
      for (size_t k = begin; k < end; ++k) {
        key_revision[k] = revision;
        const etcdserverpb::ResponseOp& op_response =
            response->responses(static_cast<int>(k - begin));
        const mvccpb::KeyValue* before = nullptr;
        if (op_response.has_response_put() && op_response.response_put().has_prev_kv()) {
          before = &op_response.response_put().prev_kv();
        } else if (op_response.response_delete_range().prev_kvs_size() > 0) {
          before = &op_response.response_delete_range().prev_kvs(0);
        }
        if (before == nullptr) continue;
        absl::StatusOr<StoredObject> decoded = etcd::Decode(options_.prefix, *before);
        current[k] = decoded.ok() ? *std::move(decoded) : etcd::NameOnly(keys[k].key);
      }
      begin = end;
    }
    WriteResult result;
    result.revision = key_revision.back();
    result.objects.reserve(ops.size());
    result.created.assign(ops.size(), false);
    for (size_t i = 0; i < ops.size(); ++i) {
      std::optional<StoredObject>& object = current[key_of_op[i]];
      StoredObject stored;
      stored.key = ops[i].key;
      if (ops[i].type == WriteOp::Type::kPut || ops[i].type == WriteOp::Type::kCreate) {
        // The Txn's put returned the key's previous value (prev_kv): no read before it.
        result.created[i] = !object.has_value();
        stored.node = ops[i].node;
        stored.pod = ops[i].pod;
        object = stored;
      } else if (object.has_value()) {
        stored = *object;  // shares the object's pointers
        object.reset();
      } else {
        result.objects.push_back(std::move(stored));  // kDeleteIfPresent of an absent key
        continue;
      }
      stored.resource_version = key_revision[key_of_op[i]];
      stored.written = now;
      result.objects.push_back(std::move(stored));
    }
    return result;
  }

  // A GET reads kExact as kNotOlderThan (object_store.h): the range answers at etcd's newest
  // revision, checked against the one asked.
  absl::StatusOr<std::optional<StoredObject>> Get(const ObjectKey& key,
                                                  const ReadVersion& version) const {
    etcdserverpb::RangeRequest request;
    request.set_key(etcd::KeyOf(options_.prefix, key));
    absl::StatusOr<etcdserverpb::RangeResponse> response = connection_->Range(request);
    if (!response.ok()) return response.status();
    if (version.match == ReadVersion::Match::kNotOlderThan ||
        version.match == ReadVersion::Match::kExact) {
      const auto revision = static_cast<uint64_t>(response->header().revision());
      if (revision < version.revision) return TooLargeResourceVersion(version.revision, revision);
    }
    if (response->kvs_size() == 0) return std::nullopt;
    absl::StatusOr<StoredObject> object = etcd::Decode(options_.prefix, response->kvs(0));
    if (!object.ok()) return object.status();
    return *std::move(object);
  }

  absl::StatusOr<ListResult> List(ObjectKind kind, std::string_view namespace_name,
                                  const ReadVersion& version) const {
    const std::string key_prefix = kind == ObjectKind::kPod && !namespace_name.empty()
                                       ? etcd::NamespacePrefix(options_.prefix, namespace_name)
                                       : etcd::KindPrefix(options_.prefix, kind);
    const bool exact = version.match == ReadVersion::Match::kExact;
    ListResult result;
    absl::Status status = ReadRange(
        key_prefix,
        [&](const mvccpb::KeyValue& kv) {
          absl::StatusOr<StoredObject> object = etcd::Decode(options_.prefix, kv);
          if (object.ok()) {
            result.items.push_back(*std::move(object));
          } else {
            KLOG(WARNING) << "etcd list: skipping " << object.status().message();
          }
        },
        &result.revision, exact ? version.revision : 0);
    if (exact && status.code() == absl::StatusCode::kOutOfRange &&
        absl::StrContains(status.message(), "future revision")) {
      return TooLargeResourceVersion(version.revision, connection_->revision());
    }
    if (!status.ok()) return status;
    if (absl::Status s = CheckReadRevision(version, result.revision); !s.ok()) return s;
    // etcd orders keys by bytes; "a-b/" sorts before "a/", but ObjectKey order puts the
    // namespace "a" first.
    std::sort(result.items.begin(), result.items.end(),
              [](const StoredObject& a, const StoredObject& b) { return a.key < b.key; });
    return result;
  }

  absl::StatusOr<std::unique_ptr<Subscription>> Watch(ObjectKind kind, uint64_t after,
                                                      WatchCallback callback,
                                                      WatchEndCallback on_end) {
    return watches_.Watch(kind, after, std::move(callback), std::move(on_end));
  }

  absl::StatusOr<size_t> ExpireOlderThan(Timestamp cutoff) {
    if (options_.object_ttl.count() > 0) return 0;
    etcdserverpb::TxnRequest txn;
    absl::Status status = ReadRange(
        options_.prefix,
        [&](const mvccpb::KeyValue& kv) {
          absl::StatusOr<StoredObject> object = etcd::Decode(options_.prefix, kv);
          if (!object.ok() || object->written >= cutoff) return;
          etcdserverpb::Compare* compare = txn.add_compare();
          compare->set_key(kv.key());
          compare->set_target(etcdserverpb::Compare::MOD);
          compare->set_result(etcdserverpb::Compare::EQUAL);
          compare->set_mod_revision(kv.mod_revision());
          etcdserverpb::DeleteRangeRequest* del = txn.add_success()->mutable_request_delete_range();
          del->set_key(kv.key());
        },
        nullptr);
    if (!status.ok()) return status;
    if (txn.success_size() == 0) return 0;
    etcdserverpb::TxnResponse response;
    status = connection_->Unary(CallKind::kWrite,
                                [&](EndpointStubs& stubs, grpc::ClientContext& context) {
                                  return stubs.kv->Txn(&context, txn, &response);
                                });
    if (!status.ok()) return status;
    connection_->SawRevision(response.header().revision());
    // A key rewritten meanwhile fails its compare: nothing is deleted now; the next sweep
    // sees the rest again.
    return response.succeeded() ? static_cast<size_t>(txn.success_size()) : 0;
  }

  absl::StatusOr<size_t> Count(ObjectKind kind) const {
    const std::string key_prefix = etcd::KindPrefix(options_.prefix, kind);
    etcdserverpb::RangeRequest request;
    request.set_key(key_prefix);
    request.set_range_end(etcd::PrefixEnd(key_prefix));
    request.set_count_only(true);
    absl::StatusOr<etcdserverpb::RangeResponse> response = connection_->Range(request);
    if (!response.ok()) return response.status();
    return static_cast<size_t>(response->count());
  }

  uint64_t Revision() const {
    etcdserverpb::RangeRequest request;
    request.set_key(options_.prefix);
    request.set_count_only(true);
    // On failure the newest revision seen stands.
    (void)connection_->Range(request);
    return connection_->revision();
  }

  bool Ready() const { return connection_->Ready(); }

  absl::Status CompactTo(uint64_t revision) {
    absl::Status status = connection_->Unary(
        CallKind::kWrite, [&](EndpointStubs& stubs, grpc::ClientContext& context) {
          etcdserverpb::CompactionRequest request;
          request.set_revision(static_cast<int64_t>(revision));
          etcdserverpb::CompactionResponse response;
          return stubs.kv->Compact(&context, request, &response);
        });
    // Another replica compacted as far already.
    if (status.code() == absl::StatusCode::kOutOfRange &&
        absl::StrContains(status.message(), "compacted")) {
      return absl::OkStatus();
    }
    return status;
  }

 private:
  // The Txn of a batch (see the file comment of etcd_store.h).
  absl::StatusOr<etcdserverpb::TxnResponse> Commit(const std::vector<WriteOp>& ops,
                                                   std::span<const KeyOps> keys, Timestamp now) {
    etcdserverpb::TxnRequest txn;
    bool needs_lease = false;
    for (const KeyOps& key : keys) {
      const bool from_absent = !Simulate(ops, key.ops, false).failing_op.has_value();
      const bool from_present = !Simulate(ops, key.ops, true).failing_op.has_value();
      if (!from_absent && !from_present) {
        *txn.add_compare() = NeverHolds(key.etcd_key);
      } else if (from_absent != from_present) {
        *txn.add_compare() = KeyCompare(key.etcd_key, from_present);
      }
      const WriteOp& last = ops[key.ops.back()];
      if (last.type == WriteOp::Type::kPut || last.type == WriteOp::Type::kCreate) {
        etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
        put->set_key(key.etcd_key);
        StoredObject object;
        object.node = last.node;
        object.pod = last.pod;
        put->set_value(etcd::EncodeValue(object, now));
        put->set_prev_kv(true);
        needs_lease = true;
      } else {
        etcdserverpb::DeleteRangeRequest* del = txn.add_success()->mutable_request_delete_range();
        del->set_key(key.etcd_key);
        del->set_prev_kv(true);
      }
      etcdserverpb::RangeRequest* read = txn.add_failure()->mutable_request_range();
      read->set_key(key.etcd_key);
      read->set_keys_only(true);
    }

    // An expired lease is NotFound: a new one is granted and the Txn sent once more.
    for (int attempt = 0;; ++attempt) {
      if (needs_lease && options_.object_ttl.count() > 0) {
        absl::StatusOr<int64_t> lease = Lease();
        if (!lease.ok()) return lease.status();
        for (etcdserverpb::RequestOp& op : *txn.mutable_success()) {
          if (op.has_request_put()) op.mutable_request_put()->set_lease(*lease);
        }
      }
      etcdserverpb::TxnResponse response;
      absl::Status status = connection_->Unary(
          CallKind::kWrite, [&](EndpointStubs& stubs, grpc::ClientContext& context) {
            return stubs.kv->Txn(&context, txn, &response);
          });
      if (status.code() == absl::StatusCode::kNotFound && attempt == 0 &&
          absl::StrContains(status.message(), "lease not found")) {
        ForgetLease();
        continue;
      }
      if (status.code() == absl::StatusCode::kInvalidArgument &&
          absl::StrContains(status.message(), "too large")) {
        return absl::InvalidArgumentError(
            absl::StrCat(status.message(), " (a batch of ", ops.size(),
                         " ops is one etcd transaction: raise etcd's --max-request-bytes, or "
                         "send smaller batches)"));
      }
      if (!status.ok()) return status;
      connection_->SawRevision(response.header().revision());
      return response;
    }
  }

  // The error of a batch whose compares failed: its ops replayed in order against the keys
  // as the failure branch read them.
  absl::Status FailedOp(const std::vector<WriteOp>& ops, const std::vector<KeyOps>& keys,
                        const std::vector<size_t>& key_of_op,
                        const etcdserverpb::TxnResponse& response) {
    std::vector<bool> present(keys.size());
    for (size_t k = 0; k < keys.size() && k < static_cast<size_t>(response.responses_size()); ++k) {
      present[k] = response.responses(static_cast<int>(k)).response_range().kvs_size() > 0;
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      const size_t k = key_of_op[i];
      Outcome step = Simulate(ops, {i}, present[k]);
      if (step.failing_op.has_value()) return OpError(ops, i);
      present[k] = step.present;
    }
    return absl::AbortedError("etcd: the batch conflicted with a concurrent write; try again");
  }

  // Reads every key under `key_prefix`, list_page_size keys per call, all at revision `at`, or
  // (0) at the revision of the first page (stored in *revision when not null).
  absl::Status ReadRange(const std::string& key_prefix,
                         const std::function<void(const mvccpb::KeyValue&)>& each,
                         uint64_t* revision, uint64_t at_revision = 0) const {
    const std::string end = etcd::PrefixEnd(key_prefix);
    std::string from = key_prefix;
    auto at = static_cast<int64_t>(at_revision);
    while (true) {
      etcdserverpb::RangeRequest request;
      request.set_key(from);
      request.set_range_end(end);
      request.set_limit(options_.list_page_size);
      request.set_revision(at);
      absl::StatusOr<etcdserverpb::RangeResponse> response = connection_->Range(request);
      if (!response.ok()) return response.status();
      if (at == 0) at = response->header().revision();
      if (revision != nullptr) *revision = static_cast<uint64_t>(at);
      for (const mvccpb::KeyValue& kv : response->kvs()) each(kv);
      if (!response->more() || response->kvs_size() == 0) return absl::OkStatus();
      from = response->kvs(response->kvs_size() - 1).key() + '\0';
    }
  }

  // The lease of the current quarter of object_ttl, granted when there is none.
  absl::StatusOr<int64_t> Lease() {
    std::lock_guard lock(lease_mu_);
    const Timestamp now = clock_.MonotonicNow();
    const Duration bucket = options_.object_ttl / 4;
    if (lease_id_ != 0 && now - lease_granted_ < bucket) return lease_id_;
    const auto ttl_seconds =
        std::chrono::ceil<std::chrono::seconds>(options_.object_ttl + bucket).count();
    etcdserverpb::LeaseGrantResponse response;
    absl::Status status = connection_->Unary(
        CallKind::kWrite, [&](EndpointStubs& stubs, grpc::ClientContext& context) {
          etcdserverpb::LeaseGrantRequest request;
          request.set_ttl(ttl_seconds);
          return stubs.lease->LeaseGrant(&context, request, &response);
        });
    if (!status.ok()) return status;
    if (!response.error().empty()) {
      return absl::UnavailableError(absl::StrCat("etcd: lease grant: ", response.error()));
    }
    lease_id_ = response.id();
    lease_granted_ = now;
    return lease_id_;
  }

  void ForgetLease() {
    std::lock_guard lock(lease_mu_);
    lease_id_ = 0;
  }

  // Probes etcd every probe_interval (Ready()) and compacts on schedule.
  void ProbeLoop() {
    std::unique_lock lock(probe_mu_);
    while (!stopping_) {
      lock.unlock();
      const uint64_t revision = Revision();
      if (options_.compaction_interval.count() > 0 && clock_.MonotonicNow() >= next_compaction_ &&
          Ready()) {
        if (compact_to_ > 0) {
          if (absl::Status s = CompactTo(compact_to_); !s.ok()) {
            KLOG(WARNING) << "etcd compaction to " << compact_to_ << ": " << s.message();
          }
        }
        compact_to_ = revision;
        next_compaction_ = clock_.MonotonicNow() + options_.compaction_interval;
      }
      lock.lock();
      probe_cv_.wait_for(lock, options_.probe_interval, [&] { return stopping_; });
    }
  }

  const EtcdStoreOptions options_;
  const Clock& clock_;
  std::unique_ptr<etcd::Connection> connection_;
  // The most keys one Txn of an unconditional batch carries: unbounded until etcd refused a
  // Txn as too many operations, then halved until one fits.
  std::atomic<size_t> max_txn_keys_ = std::numeric_limits<size_t>::max();
  etcd::WatchMux watches_;

  std::mutex lease_mu_;
  int64_t lease_id_ = 0;  // guarded by lease_mu_
  Timestamp lease_granted_;

  // Used by the probe thread only.
  Timestamp next_compaction_;
  uint64_t compact_to_ = 0;

  std::mutex probe_mu_;
  std::condition_variable probe_cv_;
  bool stopping_ = false;  // guarded by probe_mu_
  std::thread probe_;
};

absl::StatusOr<std::unique_ptr<EtcdStore>> EtcdStore::Create(EtcdStoreOptions options,
                                                             const Clock& clock,
                                                             prometheus::Registry* registry) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<etcd::Connection>> connection =
      etcd::Connection::Create(options, clock, registry);
  if (!connection.ok()) return connection.status();
  return std::unique_ptr<EtcdStore>(
      new EtcdStore(std::make_unique<Impl>(std::move(options), clock, *std::move(connection))));
}

EtcdStore::EtcdStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EtcdStore::~EtcdStore() = default;

absl::StatusOr<WriteResult> EtcdStore::Apply(const std::vector<WriteOp>& ops) {
  return impl_->Apply(ops);
}
absl::StatusOr<std::optional<StoredObject>> EtcdStore::Get(const ObjectKey& key) const {
  return impl_->Get(key, ReadVersion{});
}
absl::StatusOr<ListResult> EtcdStore::List(ObjectKind kind, std::string_view namespace_name) const {
  return impl_->List(kind, namespace_name, ReadVersion{});
}
absl::StatusOr<std::optional<StoredObject>> EtcdStore::GetAt(const ObjectKey& key,
                                                             const ReadVersion& version) const {
  return impl_->Get(key, version);
}
absl::StatusOr<ListResult> EtcdStore::ListAt(ObjectKind kind, std::string_view namespace_name,
                                             const ReadVersion& version) const {
  return impl_->List(kind, namespace_name, version);
}
absl::StatusOr<std::unique_ptr<Subscription>> EtcdStore::Watch(ObjectKind kind, uint64_t after,
                                                               WatchCallback callback) {
  return impl_->Watch(kind, after, std::move(callback), nullptr);
}
absl::StatusOr<std::unique_ptr<Subscription>> EtcdStore::WatchWithEnd(
    ObjectKind kind, uint64_t after, WatchCallback callback, const WatchEndCallback& on_end) {
  return impl_->Watch(kind, after, std::move(callback), on_end);
}
absl::StatusOr<size_t> EtcdStore::ExpireOlderThan(Timestamp cutoff) {
  return impl_->ExpireOlderThan(cutoff);
}
absl::StatusOr<size_t> EtcdStore::Count(ObjectKind kind) const { return impl_->Count(kind); }
uint64_t EtcdStore::Revision() const { return impl_->Revision(); }
bool EtcdStore::Ready() const { return impl_->Ready(); }
absl::Status EtcdStore::CompactTo(uint64_t revision) { return impl_->CompactTo(revision); }

}  // namespace kubestat::apiserver
