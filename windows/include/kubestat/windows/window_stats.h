// WindowStats: the statistics of one series over one window, as the engine reports them.
//
// A window of length w covers the samples with time in (endtime - w, endtime], where
// endtime is the time of the series' newest sample, so every window holds at least one
// sample. Values are in the series' unit (nanocores for cpu, bytes for memory).
//
// Definitions (the tests compute the same by brute force):
// - count, min, max: exact.
// - mean: exact sum / count rounded to the nearest integer, halves up:
//   (sum + count / 2) / count in integer arithmetic.
// - p50, p95, p99: nearest rank. With the window's values sorted ascending as
//   v[1..count], the q-th percentile is v[k] with k = ceil(q * count) clamped to
//   [1, count]. Exact (`exact_percentiles` is true) for windows up to the engine's exact
//   limit (Default: 1m). For longer windows the result r satisfies |r - v[k]| <= 1% of
//   v[k] (a value-relative bound; zero is reported exactly) and min <= r <= max, so a
//   window whose values are all equal reports that value exactly.
//
// Plain value types; thread-compatible.
#ifndef KUBESTAT_WINDOWS_WINDOW_STATS_H_
#define KUBESTAT_WINDOWS_WINDOW_STATS_H_

#include <cstdint>
#include <vector>

#include "kubestat/core/clock.h"
#include "kubestat/windows/series_key.h"

namespace kubestat::windows {

struct WindowStats {
  Duration window{0};  // the window's length (10s, 1m, ...)
  Timestamp endtime;   // time of the series' newest sample
  uint64_t count = 0;
  uint64_t mean = 0;
  uint64_t min = 0;
  uint64_t max = 0;
  uint64_t p50 = 0;
  uint64_t p95 = 0;
  uint64_t p99 = 0;
  bool exact_percentiles = false;

  friend bool operator==(const WindowStats&, const WindowStats&) = default;
};

// The 1-based nearest rank of the `percent`-th percentile among `count` values:
// ceil(percent * count / 100) clamped to [1, count] (integer arithmetic, no rounding).
inline uint64_t NearestRank(uint32_t percent, uint64_t count) {
  uint64_t k = (static_cast<unsigned __int128>(percent) * count + 99) / 100;
  return k < 1 ? 1 : (k > count ? count : k);
}

// Every window of one series, in the order of WindowEngineOptions::windows (ascending).
struct SeriesWindows {
  SeriesKey key;
  Timestamp endtime;
  std::vector<WindowStats> windows;

  friend bool operator==(const SeriesWindows&, const SeriesWindows&) = default;
};

}  // namespace kubestat::windows

#endif  // KUBESTAT_WINDOWS_WINDOW_STATS_H_
