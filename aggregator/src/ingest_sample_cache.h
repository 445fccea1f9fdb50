// A SampleSource over one node's scrape blobs in the store, for one ingest or rebuild
// step: time ranges are read from the store once, decoded, and split per series, so that
// the many series of a node asking for the same window edge cost one store read.
#ifndef KUBESTAT_AGGREGATOR_SRC_INGEST_SAMPLE_CACHE_H_
#define KUBESTAT_AGGREGATOR_SRC_INGEST_SAMPLE_CACHE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/aggregator/window_engine.h"
#include "kubestat/storage/store.h"

namespace kubestat::aggregator::internal {

class IngestSampleCache final : public SampleSource {
 public:
  using Lookup = std::function<std::optional<storage::SeriesId>(const SeriesKey&)>;

  IngestSampleCache(const storage::Store* store, storage::NodeId node, Lookup lookup)
      : store_(store), node_(node), lookup_(std::move(lookup)) {}

  // Samples of the series `lookup` maps `key` to; none for an unknown key.
  absl::Status ReadSamples(const SeriesKey& key, Timestamp after, Timestamp through,
                           std::vector<Sample>* out) override;
  // Samples of series `id` with after < time <= through, appended in time order.
  [[nodiscard]] absl::Status Read(storage::SeriesId id, Timestamp after, Timestamp through,
                                  std::vector<Sample>* out);

  uint64_t store_reads() const { return store_reads_; }

 private:
  absl::Status EnsureLoaded(int64_t after, int64_t through);

  const storage::Store* store_;
  storage::NodeId node_;
  Lookup lookup_;
  std::unordered_map<storage::SeriesId, std::vector<Sample>> by_series_;
  std::vector<std::pair<int64_t, int64_t>> covered_;  // disjoint (after, through], sorted
  uint64_t store_reads_ = 0;
};

}  // namespace kubestat::aggregator::internal

#endif  // KUBESTAT_AGGREGATOR_SRC_INGEST_SAMPLE_CACHE_H_
