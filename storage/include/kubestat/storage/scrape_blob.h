// ScrapeBlob: the compact encoding of every series value of one node scrape.
//
// Version 2 (written): a version byte (2), a flags byte, then:
//   - with flag kChained (1): a varint, the blob's time minus its reference's time in
//     nanoseconds (> 0). The reference is the previous blob of the same node's chain; the
//     blob can only be decoded with that blob's values at hand (a BlobChainState).
//   - a varint count n;
//   - unless flag kSameIds (2), the ids as in version 1 (the first id, then each id minus
//     the previous minus one); with it, the ids are exactly the reference's;
//   - n values. A series absent from the reference (or every series of a blob that is not
//     chained, a key blob) is its value as a varint. A series present in the reference is
//     a residual against a prediction: the reference's value p1 plus the step it made from
//     the value before it (p1 - p2, when the reference had one), i.e. the second difference,
//     so that a counter growing at a steady rate costs one byte. The residual r (two's
//     complement, wrapping) is written as varint(ZigZag(r / 4096) << 1 | 1) when it is a
//     multiple of 4096 (memory moves in pages), else varint(ZigZag(r) << 1); a residual
//     too large for that form is the escape 0 followed by the value as a varint.
// Version 1 (still read): a version byte (1), a varint count n, then n pairs of varints
// (series id minus the previous id, minus one for every pair after the first; value).
//
// Ids are strictly increasing in both versions. Units: whatever the series holds
// (nanocores, bytes); the blob does not know. Decoding validates everything (version,
// flags, counts, varints, id overflow, the reference's presence and time, trailing bytes)
// and returns DataLoss for malformed bytes; it never crashes. Plain functions, thread-safe;
// a BlobChainState is not.
#ifndef KUBESTAT_STORAGE_SCRAPE_BLOB_H_
#define KUBESTAT_STORAGE_SCRAPE_BLOB_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace kubestat::storage {

using NodeId = uint32_t;
using SeriesId = uint64_t;

struct SeriesValue {
  SeriesId id = 0;
  uint64_t value = 0;
  friend bool operator==(const SeriesValue&, const SeriesValue&) = default;
};

// The newest blob of a chain, as the next chained blob is encoded against and decoded
// with: its time, its values, and for each value the same series' value one blob earlier
// (when that blob had it). Memory: 25 bytes per series.
class BlobChainState {
 public:
  bool empty() const { return !valid_; }
  // The newest blob's time; meaningful when !empty().
  int64_t time_ns() const { return time_ns_; }
  // The newest blob's values, sorted by id.
  const std::vector<SeriesValue>& values() const { return values_; }
  void Clear();
  // Becomes the state after the blob at `time_ns` with `values` (sorted by strictly
  // increasing id), chained to `reference`, or a key blob when `reference` is null: a key
  // blob starts the predictions afresh, for the writer and the reader alike. `reference`
  // must not be this state.
  void Advance(const BlobChainState* reference, int64_t time_ns,
               std::span<const SeriesValue> values);

 private:
  friend absl::Status EncodeScrapeBlob(std::span<const SeriesValue>, int64_t, const BlobChainState*,
                                       std::string*);
  friend absl::Status DecodeScrapeBlob(std::string_view, int64_t, const BlobChainState*,
                                       std::vector<SeriesValue>*);

  // The prediction of series `id`'s next value (the second difference), nullopt when the
  // newest blob lacks it; ids asked in increasing order with one `cursor` cost one pass.
  std::optional<uint64_t> Prediction(size_t* cursor, SeriesId id) const;
  // The prediction of the series of values()[k].
  uint64_t PredictionAt(size_t k) const {
    return has_before_[k] != 0 ? 2 * values_[k].value - before_[k] : values_[k].value;
  }
  // The prediction of the k-th value (series `id`) of a blob chained to this state: by
  // position when the blob has exactly this state's series (`same_ids`), else by id.
  std::optional<uint64_t> PredictionFor(bool same_ids, size_t k, size_t* cursor,
                                        SeriesId id) const {
    if (same_ids) return PredictionAt(k);
    return Prediction(cursor, id);
  }

  bool valid_ = false;
  int64_t time_ns_ = 0;
  std::vector<SeriesValue> values_;
  std::vector<uint64_t> before_;     // before_[k]: the series of values_[k], a blob earlier
  std::vector<uint8_t> has_before_;  // whether before_[k] is known
};

// Appends the version 2 encoding of the scrape at `time_ns` with `values` (sorted by
// strictly increasing id) to `out`: chained to `reference` when it is non-null and not
// empty (its time must be before time_ns), else a key blob. InvalidArgument when ids are
// not strictly increasing or the reference is not older (nothing is appended).
[[nodiscard]] absl::Status EncodeScrapeBlob(std::span<const SeriesValue> values, int64_t time_ns,
                                            const BlobChainState* reference, std::string* out);

// Appends the version 1 encoding (no chaining); kept so that the reading of stores written
// by earlier versions stays tested. InvalidArgument as above.
[[nodiscard]] absl::Status EncodeScrapeBlobV1(std::span<const SeriesValue> values,
                                              std::string* out);

// Replaces *values with the decoded blob at `time_ns`. A chained blob needs `reference`
// holding the blob it was chained to (same time); otherwise FailedPrecondition naming the
// missing reference's time. DataLoss on malformed input; *values is then empty.
[[nodiscard]] absl::Status DecodeScrapeBlob(std::string_view bytes, int64_t time_ns,
                                            const BlobChainState* reference,
                                            std::vector<SeriesValue>* values);

// Whether `bytes` is a chained blob (one that needs its reference to be decoded).
bool IsChainedScrapeBlob(std::string_view bytes);

}  // namespace kubestat::storage

#endif  // KUBESTAT_STORAGE_SCRAPE_BLOB_H_
