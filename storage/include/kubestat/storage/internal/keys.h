// Key encoding of the store (layout documented in store.h). Big-endian integers; times as
// int64 nanoseconds with the sign bit flipped so that byte order is time order.
// Internal to storage: only storage/ and its tests include it (tests/layout checks).
#ifndef KUBESTAT_STORAGE_INTERNAL_KEYS_H_
#define KUBESTAT_STORAGE_INTERNAL_KEYS_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "kubestat/core/clock.h"
#include "kubestat/storage/scrape_blob.h"

namespace kubestat::storage::keys {

inline constexpr char kNodeTag = 'N';
inline constexpr char kSeriesTag = 'D';
inline constexpr char kRetiredTag = 'X';
inline constexpr char kBlobTag = 'B';
inline constexpr char kRollupTag = 'R';
inline constexpr char kHistoryTag = 'H';  // node-keyed usage histograms of earlier versions
inline constexpr char kWorkloadHistoryTag = 'W';
inline constexpr char kMetaTag = 'M';

// Blobs and rollups are partitioned by the hour of their time (HourOf, core/clock.h).
inline constexpr int64_t kPartitionNanos = kNanosPerHour;

inline void PutU32(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}
inline void PutU64(std::string* out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}
inline void PutI64(std::string* out, int64_t v) {
  PutU64(out, static_cast<uint64_t>(v) ^ (uint64_t{1} << 63));
}
inline uint32_t GetU32(std::string_view in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}
inline uint64_t GetU64(std::string_view in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}
inline int64_t GetI64(std::string_view in) {
  return static_cast<int64_t>(GetU64(in) ^ (uint64_t{1} << 63));
}

inline std::string NodeKey(NodeId id) {
  std::string k(1, kNodeTag);
  PutU32(&k, id);
  return k;
}
inline std::string SeriesKey(SeriesId id) {
  std::string k(1, kSeriesTag);
  PutU64(&k, id);
  return k;
}
inline std::string RetiredKey(SeriesId id) {
  std::string k(1, kRetiredTag);
  PutU64(&k, id);
  return k;
}

// 'M' "ack" node: the node's count of acknowledged scrapes (ack_ledger.h).
inline constexpr std::string_view kAckPrefix = "Mack";
inline std::string AckKey(NodeId node) {
  std::string k(kAckPrefix);
  PutU32(&k, node);
  return k;
}

// 'B' hour node time: 21 bytes.
inline constexpr size_t kBlobKeySize = 1 + 8 + 4 + 8;
inline std::string BlobPrefix(int64_t hour, NodeId node) {
  std::string k(1, kBlobTag);
  PutI64(&k, hour);
  PutU32(&k, node);
  return k;
}
inline std::string BlobKey(NodeId node, int64_t time) {
  std::string k = BlobPrefix(HourOf(time), node);
  PutI64(&k, time);
  return k;
}
inline int64_t BlobTime(std::string_view key) { return GetI64(key.substr(13)); }

// Scrape blobs are chained (scrape_blob.h) only within a slot of this length, aligned to
// the epoch, so that the first blob of a node in a slot is a key blob and a reader decodes
// any blob from the start of its slot. It divides an hour: chains never cross partitions.
inline constexpr int64_t kChainSlotNanos = int64_t{300} * 1000 * 1000 * 1000;
static_assert(kPartitionNanos % kChainSlotNanos == 0);
// The start of the slot holding `t`, also for times before the epoch (the lowest time for
// the slot that would start before it).
inline int64_t ChainSlotStart(int64_t t) {
  const int64_t into = ((t % kChainSlotNanos) + kChainSlotNanos) % kChainSlotNanos;
  return t < std::numeric_limits<int64_t>::min() + into ? std::numeric_limits<int64_t>::min()
                                                        : t - into;
}

// 'R' hour node bucket_start series: 29 bytes.
inline constexpr size_t kRollupKeySize = 1 + 8 + 4 + 8 + 8;
inline std::string RollupPrefix(int64_t hour, NodeId node) {
  std::string k(1, kRollupTag);
  PutI64(&k, hour);
  PutU32(&k, node);
  return k;
}
// Rollups ('R') and usage histograms ('H') share one layout under their own tags.
inline std::string BucketPrefix(char tag, int64_t hour, NodeId node) {
  std::string k(1, tag);
  PutI64(&k, hour);
  PutU32(&k, node);
  return k;
}
inline std::string BucketKey(char tag, NodeId node, int64_t bucket_start, SeriesId series) {
  std::string k = BucketPrefix(tag, HourOf(bucket_start), node);
  PutI64(&k, bucket_start);
  PutU64(&k, series);
  return k;
}
inline std::string RollupKey(NodeId node, int64_t bucket_start, SeriesId series) {
  std::string k = RollupPrefix(HourOf(bucket_start), node);
  PutI64(&k, bucket_start);
  PutU64(&k, series);
  return k;
}

// 'W' hour owner bucket_start series: the owner is opaque bytes of any length.
inline constexpr size_t kWorkloadHistoryFixedSize = 1 + 8 + 8 + 8;
inline std::string WorkloadHistoryKey(std::string_view owner, int64_t bucket_start,
                                      SeriesId series) {
  std::string k(1, kWorkloadHistoryTag);
  PutI64(&k, HourOf(bucket_start));
  k.append(owner);
  PutI64(&k, bucket_start);
  PutU64(&k, series);
  return k;
}

// The first key of hour partition `hour` under `tag`.
inline std::string PartitionStart(char tag, int64_t hour) {
  std::string k(1, tag);
  PutI64(&k, hour);
  return k;
}

}  // namespace kubestat::storage::keys

#endif  // KUBESTAT_STORAGE_INTERNAL_KEYS_H_
