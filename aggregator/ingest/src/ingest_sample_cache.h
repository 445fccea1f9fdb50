// A SampleSource over one node's scrape blobs in the store, for one ingest or rebuild
// step: time ranges are read from the store once, decoded, and split per series, so that
// the many series of a node asking for the same window edge cost one store read.
//
// Layout: every range read from the store is kept as one segment, its samples grouped by
// series (a column per series, in time order) in one flat array. Segments are disjoint and
// kept in time order, so a read walks the few segments it overlaps and copies one
// contiguous run from each: ranges may be asked for in any order (a rebuild asks for the
// newest minute before the older hour) without re-sorting anything already loaded.
//
// Not thread-safe: one cache per node and thread.
#ifndef KUBESTAT_AGGREGATOR_INGEST_SRC_INGEST_SAMPLE_CACHE_H_
#define KUBESTAT_AGGREGATOR_INGEST_SRC_INGEST_SAMPLE_CACHE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/storage/store.h"
#include "kubestat/windows/series_key.h"
#include "kubestat/windows/window_engine.h"
#include "kubestat/windows/window_stats.h"

namespace kubestat::aggregator::internal {

class IngestSampleCache final : public windows::SampleSource {
 public:
  using Lookup = std::function<std::optional<storage::SeriesId>(const windows::SeriesKey&)>;

  // `max_hole_fill`: a read whose range ends in a hole between loaded ranges loads the
  // whole hole when it is at most this long, so that a caller walking a window forward in
  // small steps (a rebuild restoring the 1h window bucket by bucket) costs one store read,
  // not one per step. Zero loads exactly what is asked.
  IngestSampleCache(const storage::Store* store, storage::NodeId node, Lookup lookup,
                    Duration max_hole_fill = Duration(0))
      : store_(store),
        node_(node),
        lookup_(std::move(lookup)),
        max_hole_fill_(max_hole_fill.count()) {}

  // Samples of the series `lookup` maps `key` to; none for an unknown key.
  absl::Status ReadSamples(const windows::SeriesKey& key, Timestamp after, Timestamp through,
                           std::vector<windows::Sample>* out) override;
  // Samples of series `id` with after < time <= through, appended in time order.
  [[nodiscard]] absl::Status Read(storage::SeriesId id, Timestamp after, Timestamp through,
                                  std::vector<windows::Sample>* out);
  // Loads (after, through] now (one store read for what is not loaded yet), so that later
  // reads inside it cost no store access.
  [[nodiscard]] absl::Status Prefetch(Timestamp after, Timestamp through);

  // Forgets what was loaded and serves `node` from now on (same max_hole_fill), keeping the
  // buffers: a rebuild thread reuses one cache for node after node without allocating again.
  void Reset(storage::NodeId node, Lookup lookup);

  uint64_t store_reads() const { return store_reads_; }
  uint64_t blobs_decoded() const { return blobs_decoded_; }

 private:
  // The samples of every series in (after, through].
  struct Segment {
    int64_t after = 0;
    int64_t through = 0;
    // Column c (a series) is samples[begin[c], begin[c + 1]); columns at or past
    // begin.size() - 1 (series first seen after this segment was loaded) are empty.
    std::vector<uint32_t> begin;
    std::vector<windows::Sample> samples;
  };
  // A decoded value before it is put into its column.
  struct Cell {
    uint32_t column;
    windows::Sample sample;
  };

  absl::Status EnsureLoaded(int64_t after, int64_t through);
  absl::Status Load(int64_t after, int64_t through, Segment* segment);
  uint32_t ColumnOf(size_t position, storage::SeriesId id);

  const storage::Store* store_;
  storage::NodeId node_;
  Lookup lookup_;
  int64_t max_hole_fill_;
  std::unordered_map<storage::SeriesId, uint32_t> column_of_;
  std::vector<Segment> segments_;  // disjoint, by time
  std::vector<Segment> spare_;     // emptied segments whose buffers are reused
  // The previous blob's ids and their columns: consecutive scrapes of a node carry the
  // same series in the same order, so most values find their column without hashing.
  std::vector<storage::SeriesId> previous_ids_;
  std::vector<uint32_t> previous_columns_;
  std::vector<Cell> cells_;     // scratch of Load()
  std::vector<uint32_t> next_;  // scratch of Load()
  uint64_t store_reads_ = 0;
  uint64_t blobs_decoded_ = 0;
};

}  // namespace kubestat::aggregator::internal

#endif  // KUBESTAT_AGGREGATOR_INGEST_SRC_INGEST_SAMPLE_CACHE_H_
