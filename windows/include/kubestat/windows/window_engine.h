// WindowEngine: day-long statistical windows (10s, 1m, 1h, 1d by default) per series.
//
// What it does. The engine takes samples (series, time, value) in increasing time per
// series and answers, for every series, count, mean, min, max, p50, p95 and p99 over each
// window (definitions in window_stats.h). It is pure: no threads, no clock reads, no I/O.
//
// Memory. A day of raw samples per series does not fit the budget (about 2.5 KB per
// series), so the engine keeps:
// - for windows up to `exact_window_limit`: the raw samples (exact everything);
// - for longer windows: the exact count and sum, a min and max per bucket (1h buckets for
//   windows that are a multiple of the rollup width and at least two of them, w/12
//   otherwise), a decrementable QuantileSketch, and for the oldest, partially expired
//   bucket the exact suffix-max and suffix-min records of its remaining samples, so min and
//   max stay exact as samples leave the window.
//
// Expiry: the caller supplies old samples. When a long window's start moves, the engine
// needs the values of the samples leaving it, and when the start enters a bucket it needs
// that bucket's remaining samples. It asks the SampleSource passed to the call, which the
// storage layer implements by reading its persisted samples (it keeps a day plus a
// margin). The source must return exactly the samples that were accepted by Ingest() (or
// covered by RestoreSeries) for that series: the engine subtracts what it returns. A
// source error fails the call and leaves the series unchanged; a source that returns
// samples the engine never counted is reported as DataLoss (the series is then dropped so
// it can be restored; it never crashes the process).
//
// Persistence: complete, aligned buckets of `rollup_width` (1h) are summarised as
// BucketRollup values (count, sum, min, max, sketch) with BuildRollup(); they serialize to
// a few hundred bytes. After a restart RestoreSeries() rebuilds a series from its rollups
// plus the samples of the buckets not covered by one (at most about two rollup widths of
// samples for the default windows), giving query results identical to an engine that
// ingested every sample.
//
// Ownership: the engine owns all series state. It keeps no reference to a SampleSource
// beyond a call.
//
// Thread-safety: none. The caller serializes every call, const ones too (a read keeps what
// it scanned for the next; a lock, or one engine per shard).
//
// Errors: absl::Status values. InvalidArgument for a sample not after the series' newest
// (the caller counts it), NotFound for an unknown series, whatever the source returned for
// a failed read, DataLoss for an inconsistent source or a corrupt rollup.
#ifndef KUBESTAT_WINDOWS_WINDOW_ENGINE_H_
#define KUBESTAT_WINDOWS_WINDOW_ENGINE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/windows/quantile_sketch.h"
#include "kubestat/windows/series_key.h"
#include "kubestat/windows/window_stats.h"

namespace kubestat::windows {

struct Sample {
  Timestamp time;
  uint64_t value = 0;  // nanocores or bytes
  friend bool operator==(const Sample&, const Sample&) = default;
};

// What the engine asks for old samples. Implemented by the store; tests use an in-memory
// fake that keeps every sample.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  // Appends to `out`, in increasing time order, every stored sample of `key` with
  // after < time <= through. An error aborts the engine call that asked.
  [[nodiscard]] virtual absl::Status ReadSamples(const SeriesKey& key, Timestamp after,
                                                 Timestamp through, std::vector<Sample>* out) = 0;
};

// The summary of one series' samples in one aligned bucket [start, start + width).
struct BucketRollup {
  Timestamp start;
  Duration width{0};
  uint64_t count = 0;
  absl::uint128 sum = 0;
  uint64_t min = 0;
  uint64_t max = 0;
  double relative_accuracy = 0;  // of the mapping the sketch was built with
  QuantileSketch sketch;

  friend bool operator==(const BucketRollup&, const BucketRollup&) = default;
};

// Compact binary form (versioned, little-endian, varints). Parse checks every field and
// the consistency of count, sum, min, max and sketch: corrupt bytes give DataLoss.
std::string SerializeRollup(const BucketRollup& rollup);
[[nodiscard]] absl::StatusOr<BucketRollup> ParseRollup(std::string_view bytes);

struct WindowEngineOptions {
  // Window lengths, each > 0 and distinct; reported in ascending order.
  // Default: {10s, 1m, 1h, 24h}
  std::vector<Duration> windows = {std::chrono::seconds(10), std::chrono::minutes(1),
                                   std::chrono::hours(1), std::chrono::hours(24)};
  // Windows up to this length keep raw samples: exact percentiles. Default: 1m
  Duration exact_window_limit = std::chrono::minutes(1);
  // Width of the aligned buckets summarised by BucketRollup, and of the min/max buckets of
  // long windows that are a multiple of it (at least twice). Default: 1h
  Duration rollup_width = std::chrono::hours(1);
  // The sketch's relative accuracy a, in (0, 0.0095]; see quantile_sketch.h. Default: 0.0095
  double relative_accuracy = SketchMapping::kMaxRelativeAccuracy;

  // InvalidArgument naming the field when a value is out of range.
  [[nodiscard]] absl::Status Validate() const;
};

class WindowEngine {
 public:
  // Options must pass Validate().
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<WindowEngine>> Create(
      WindowEngineOptions options);
  ~WindowEngine();
  WindowEngine(const WindowEngine&) = delete;
  WindowEngine& operator=(const WindowEngine&) = delete;

  const WindowEngineOptions& options() const { return options_; }

  // Adds a sample, creating the series on its first sample. `time` must be after the
  // series' newest sample (InvalidArgument otherwise, nothing changes). May read older
  // samples of `key` from `source` (never the new one, so it does not matter whether the
  // caller has stored it yet).
  [[nodiscard]] absl::Status Ingest(const SeriesKey& key, Timestamp time, uint64_t value,
                                    SampleSource& source);
  // The same for a caller that keeps, beside its own state of each series, where the series
  // is in the engine (see SeriesHandle): with the handle set, the series is not searched for
  // (its key is not even read). Sets the handle; clears it when the series is dropped.
  class SeriesHandle;
  [[nodiscard]] absl::Status Ingest(const SeriesKey& key, Timestamp time, uint64_t value,
                                    SampleSource& source, SeriesHandle& handle);

  // Every window of `key`; NotFound for an unknown (or deleted) series.
  [[nodiscard]] absl::StatusOr<SeriesWindows> Query(const SeriesKey& key) const;
  // Every series of `node` (machine, system containers, pods, containers), in key order.
  std::vector<SeriesWindows> QueryNode(std::string_view node) const;
  // What QueryNode gives, without copying it: calls `visit` for every series of `node`, in
  // key order, with the series' key, the time of its newest sample and its windows (as
  // SeriesWindows holds them). The key is the engine's and the windows are in a buffer
  // reused from series to series: both are valid only during that call. `visit` must not
  // change the engine.
  void VisitNode(std::string_view node,
                 absl::FunctionRef<void(const SeriesKey& key, Timestamp endtime,
                                        std::span<const WindowStats> windows)>
                     visit) const;
  // The pod's own series and its containers' series, in key order.
  std::vector<SeriesWindows> QueryPod(std::string_view node, std::string_view pod_namespace,
                                      std::string_view pod) const;
  // Keys of every series, in key order.
  std::vector<SeriesKey> ListSeries() const;
  bool Contains(const SeriesKey& key) const;
  // Time of the series' newest sample; NotFound if unknown.
  [[nodiscard]] absl::StatusOr<Timestamp> NewestTime(const SeriesKey& key) const;

  // Deletion takes effect at once: the series leave every query. Return how many series
  // were removed.
  size_t DeleteSeries(const SeriesKey& key);
  size_t DeletePod(std::string_view node, std::string_view pod_namespace, std::string_view pod);
  size_t DeleteNode(std::string_view node);

  // --- Persistence ---
  // Start of the aligned rollup bucket holding `time`.
  Timestamp RollupBucketStart(Timestamp time) const;
  // Summarises the samples of one complete bucket starting at `bucket_start` (which must be
  // aligned). Samples must lie in the bucket in increasing time; there must be at least
  // one. InvalidArgument otherwise. A bucket is complete once a sample of the series at or
  // after its end has been accepted; persist its rollup then (buckets without samples
  // need none).
  [[nodiscard]] absl::StatusOr<BucketRollup> BuildRollup(Timestamp bucket_start,
                                                         std::span<const Sample> samples) const;
  // What the rollups given to RestoreSeries() cover.
  enum class RollupCoverage {
    // Some complete buckets with samples may lack a rollup: their samples are read.
    kPartial,
    // Every complete bucket in which the series has samples has its rollup, so a complete
    // bucket without one holds none of its samples and is not read. True of what the
    // ingest pipeline stores: a bucket's rollup is written in the batch of the first
    // sample after it, so only the series' newest bucket lacks one (and a series that
    // began during the day has none before its first sample, which is why this matters).
    kComplete,
  };
  // Replaces any state of `key` with the state an engine would have after ingesting every
  // stored sample of `key` up to `newest` (which must be the time of its newest stored
  // sample). `rollups` are used for complete buckets inside the windows (any order; others
  // ignored); every other needed sample is read from `source`, except, with kComplete, those
  // of complete buckets without a rollup. FailedPrecondition if no sample is stored at
  // `newest`; DataLoss if a rollup does not match the options.
  [[nodiscard]] absl::Status RestoreSeries(const SeriesKey& key, Timestamp newest,
                                           std::span<const BucketRollup> rollups,
                                           SampleSource& source,
                                           RollupCoverage coverage = RollupCoverage::kPartial);

  // --- Accounting ---
  size_t SeriesCount() const;
  // Bytes owned by the engine, by part, computed from container sizes and capacities (the
  // allocator's own overhead per block is not counted).
  struct Memory {
    size_t index = 0;         // the series map: its nodes and the keys' strings
    size_t series = 0;        // per-series records and their raw samples (short windows)
    size_t long_windows = 0;  // the long windows' records (count, sum, bounds)
    size_t rings = 0;         // the long windows' min and max per bucket
    size_t sketches = 0;      // the long windows' percentile sketches
    size_t stacks = 0;        // the suffix min and max of partially expired buckets
    size_t total() const { return index + series + long_windows + rings + sketches + stacks; }
    Memory& operator+=(const Memory& other) {
      index += other.index;
      series += other.series;
      long_windows += other.long_windows;
      rings += other.rings;
      sketches += other.sketches;
      stacks += other.stacks;
      return *this;
    }
  };
  Memory MemoryByPart() const;
  size_t MemoryBytes() const { return MemoryByPart().total(); }

 private:
  class Series;
  struct Layout;
  explicit WindowEngine(WindowEngineOptions options);
  SeriesWindows Windows(const SeriesKey& key, const Series& series) const;
  // Fills out[0, options_.windows.size()) with the series' windows.
  void FillWindows(const Series& series, WindowStats* out) const;

  // Series is complete where the map's members are used (window_engine.cc).
  using SeriesMap = std::map<SeriesKey, Series>;

 public:
  // One series' place in the engine, as Ingest last found it. It stays right for as long as
  // the series stays in the engine: the holder clears it (Reset) or drops it whenever the
  // series may leave by other means (DeleteSeries, DeletePod, DeleteNode), which is why it is
  // meant to live in the holder's own state of that series and go with it.
  class SeriesHandle {
   public:
    void Reset() { valid_ = false; }
    bool valid() const { return valid_; }

   private:
    friend class WindowEngine;
    SeriesMap::iterator it_;
    bool valid_ = false;
  };

 private:
  WindowEngineOptions options_;
  std::unique_ptr<Layout> layout_;
  SeriesMap series_;
};

}  // namespace kubestat::windows

#endif  // KUBESTAT_WINDOWS_WINDOW_ENGINE_H_
