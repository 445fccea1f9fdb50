// ScrapeBlob: the compact encoding of every series value of one node scrape.
//
// Layout (version 1): a version byte (1), a varint count n, then n pairs of varints
// (series id minus the previous id, minus one for every pair after the first; value). Ids
// are strictly increasing, so a node whose series ids are dense costs about one byte per id
// plus the value's varint (1 to 10 bytes).
//
// Units: whatever the series holds (nanocores, bytes); the blob does not know.
// Decoding validates everything (version, counts, varints, id overflow, trailing bytes) and
// returns DataLoss for malformed bytes; it never crashes. Plain functions, thread-safe.
#ifndef KUBESTAT_STORAGE_SCRAPE_BLOB_H_
#define KUBESTAT_STORAGE_SCRAPE_BLOB_H_

#include <cstdint>
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

// Appends the encoding of `values` (sorted by strictly increasing id) to `out`.
// InvalidArgument when ids are not strictly increasing (nothing is appended).
[[nodiscard]] absl::Status EncodeScrapeBlob(std::span<const SeriesValue> values, std::string* out);

// Replaces *values with the decoded blob. DataLoss on malformed input.
[[nodiscard]] absl::Status DecodeScrapeBlob(std::string_view bytes,
                                            std::vector<SeriesValue>* values);

}  // namespace kubestat::storage

#endif  // KUBESTAT_STORAGE_SCRAPE_BLOB_H_
