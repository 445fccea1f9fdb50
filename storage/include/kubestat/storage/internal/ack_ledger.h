// AckLedger: how many scrapes of each node the store acknowledged, kept twice so that a
// recovery that did not give them all back can say which and how many.
//
// Every Store::Write of a batch with scrapes puts, in the same atomic WriteBatch, the
// node's running totals under 'M' "ack" node (keys::AckKey): scrapes and samples
// acknowledged so far and the newest scrape's time. Whatever the write-ahead log gives
// back at open therefore holds totals that match exactly the scrapes it holds. Beside the
// database, a small marker file (kMarkerName in the store's directory) holds the totals of
// the writes RocksDB acknowledged, rewritten and synced at most once per
// StoreOptions::ack_marker_interval and at close. At open, a node whose marker totals are
// ahead of its database totals lost the difference: that many scrapes and samples, with
// times after the newest it still holds and up to the newest the marker names.
//
// What the marker cannot see: writes acknowledged after its last rewrite (at most an
// interval before a crash), and batches the backlog wrote later (they carry their totals
// into the database, but the marker learns of the node's totals only at its next direct
// write). Both make the reported loss a floor, never more than was lost, except where a
// backlog dropped scrapes (counted then as StoreStats::scrapes_lost) between two
// acknowledged writes of a node and the log then lost both: those are counted twice.
//
// Marker file: "KSACK1\n\0", u32 count, count × (u32 node, u64 scrapes, u64 samples,
// i64 newest ns), u64 FNV-1a of everything before; big-endian. Written to a temporary
// file, synced, renamed over the marker, and the directory synced.
//
// Thread-safety: every method may be called from any thread.
// Internal to storage: only storage/ and its tests include it (tests/layout checks).
#ifndef KUBESTAT_STORAGE_INTERNAL_ACK_LEDGER_H_
#define KUBESTAT_STORAGE_INTERNAL_ACK_LEDGER_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/storage/store.h"

namespace kubestat::storage {

// A node's running totals of acknowledged scrapes.
struct Ack {
  uint64_t scrapes = 0;
  uint64_t samples = 0;
  int64_t newest = 0;  // ns of the newest scrape; 0 with no scrape
};

using AckTable = std::unordered_map<NodeId, Ack>;

inline constexpr char kMarkerName[] = "KUBESTAT-ACKED";

// fsync of a directory, so that a rename or a new file in it is durable.
absl::Status SyncDirectory(const std::string& dir);

std::string EncodeAck(const Ack& ack);
// False for a value of the wrong size.
bool DecodeAck(std::string_view bytes, Ack* ack);

// The marker of `dir`: NotFound when there is none, DataLoss when it does not decode.
absl::StatusOr<AckTable> ReadAckMarker(const std::string& dir);
// Replaces the marker of `dir` with `table` (synced).
absl::Status WriteAckMarker(const std::string& dir, const AckTable& table);

class AckLedger {
 public:
  explicit AckLedger(std::string dir) : dir_(std::move(dir)) {}

  // Both tables start from the database's totals (at open, after a salvage).
  void Reset(AckTable stored);
  // The totals the batch's scrapes bring their nodes to (one per node, in the order the
  // nodes first appear), to be put in the batch; the ledger counts them as handed out.
  std::vector<std::pair<NodeId, Ack>> Next(std::span<const ScrapeStamp> stamps);
  // RocksDB acknowledged a batch carrying these totals.
  void Acknowledge(std::span<const std::pair<NodeId, Ack>> acks);
  // The nodes whose newest scrape is older than `cutoff_ns`, forgotten (retention).
  std::vector<NodeId> ForgetOlderThan(int64_t cutoff_ns);
  // Rewrites the marker when something was acknowledged since the last rewrite and
  // `interval` has passed since it (any time with `force`). OK when there was nothing to do
  // or another thread is at it.
  absl::Status Persist(std::chrono::steady_clock::duration interval, bool force);

 private:
  const std::string dir_;
  std::mutex mu_;
  AckTable handed_out_;
  AckTable acknowledged_;
  bool dirty_ = false;
  std::chrono::steady_clock::time_point persisted_at_{};
  std::mutex persist_mu_;  // one rewrite at a time, taken before mu_
};

}  // namespace kubestat::storage

#endif  // KUBESTAT_STORAGE_INTERNAL_ACK_LEDGER_H_
