#include "kubestat/windows/window_engine.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <limits>
#include <set>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "kubestat/core/time.h"
#include "long_window.h"

namespace kubestat::windows {

using internal::AdvancePlan;
using internal::LongWindow;
using internal::LongWindowGeometry;

namespace {

constexpr Duration kMinWindow = std::chrono::milliseconds(1);
constexpr Duration kMaxWindow = std::chrono::hours(24 * 31);
constexpr size_t kMaxWindows = 16;

std::string Describe(Duration d) { return absl::StrCat(d.count(), "ns"); }

}  // namespace

absl::Status WindowEngineOptions::Validate() const {
  if (windows.empty()) return absl::InvalidArgumentError("windows: at least one is needed");
  if (windows.size() > kMaxWindows) {
    return absl::InvalidArgumentError(absl::StrCat("windows: at most ", kMaxWindows));
  }
  std::set<Duration> seen;
  for (Duration w : windows) {
    if (w < kMinWindow || w > kMaxWindow) {
      return absl::InvalidArgumentError(
          absl::StrCat("windows: ", Describe(w), " is outside [1ms, 31d]"));
    }
    if (!seen.insert(w).second) {
      return absl::InvalidArgumentError(absl::StrCat("windows: ", Describe(w), " is repeated"));
    }
  }
  if (exact_window_limit < Duration(0)) {
    return absl::InvalidArgumentError("exact_window_limit: must not be negative");
  }
  if (rollup_width < std::chrono::seconds(1) || rollup_width > kMaxWindow) {
    return absl::InvalidArgumentError("rollup_width: must be in [1s, 31d]");
  }
  if (absl::Status s = SketchMapping::Validate(relative_accuracy); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("relative_accuracy: ", s.message()));
  }
  return absl::OkStatus();
}

struct WindowEngine::Layout {
  struct Window {
    Duration width;
    bool is_long;
    size_t long_index;  // into long_geometry when is_long
  };

  explicit Layout(const WindowEngineOptions& options) : mapping(options.relative_accuracy) {
    rollup_ns = options.rollup_width.count();
    std::vector<Duration> sorted = options.windows;
    std::sort(sorted.begin(), sorted.end());
    for (Duration w : sorted) {
      if (w <= options.exact_window_limit) {
        windows.push_back({w, false, 0});
        max_short_ns = std::max(max_short_ns, w.count());
        continue;
      }
      LongWindowGeometry g;
      g.width_ns = w.count();
      if (g.width_ns % rollup_ns == 0 && g.width_ns >= 2 * rollup_ns) {
        g.bucket_ns = rollup_ns;
      } else {
        g.bucket_ns = std::max<int64_t>(1, g.width_ns / 12);
      }
      g.uses_rollups = g.bucket_ns == rollup_ns;
      g.SetSlots(static_cast<size_t>((g.width_ns + g.bucket_ns - 1) / g.bucket_ns) + 1);
      windows.push_back({w, true, long_geometry.size()});
      long_geometry.push_back(g);
    }
    plans.resize(long_geometry.size());
    expired.resize(long_geometry.size());
    bucket_rest.resize(long_geometry.size());
  }

  SketchMapping mapping;
  std::vector<Window> windows;
  std::vector<LongWindowGeometry> long_geometry;
  int64_t max_short_ns = 0;
  int64_t rollup_ns = 0;
  // Reused by Ingest so that steady-state ingestion does not allocate.
  std::vector<AdvancePlan> plans;
  std::vector<std::vector<Sample>> expired;
  std::vector<std::vector<Sample>> bucket_rest;
};

// Held in the series map's node itself, with its samples and long windows inline for the
// default windows at scrapes of 10 s or more: one allocation per series besides what the
// long windows own.
class WindowEngine::Series {
 public:
  int64_t newest_ns = 0;
  // Samples with time > newest - longest exact window: 6 for the default minute at 10 s, and
  // 7 when a scrape came a little later than the one six before it (scrape times wander by
  // a few milliseconds round to round), so about half the time. Seven inline: a series
  // whose minute once held seven would otherwise keep a heap block for good.
  static constexpr size_t kInlineRaw = 7;
  absl::InlinedVector<Sample, kInlineRaw> raw;
  absl::InlinedVector<LongWindow, 2> longs;  // the default hour and day

  void PushRaw(const Layout& layout, Sample s) {
    if (layout.max_short_ns == 0) return;
    const int64_t keep_after = Nanos(s.time) - layout.max_short_ns;
    auto first_kept = std::find_if(raw.begin(), raw.end(),
                                   [&](const Sample& r) { return Nanos(r.time) > keep_after; });
    raw.erase(raw.begin(), first_kept);
    raw.push_back(s);
  }
};

absl::StatusOr<std::unique_ptr<WindowEngine>> WindowEngine::Create(WindowEngineOptions options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  std::sort(options.windows.begin(), options.windows.end());
  return std::unique_ptr<WindowEngine>(new WindowEngine(std::move(options)));
}

WindowEngine::WindowEngine(WindowEngineOptions options)
    : options_(std::move(options)), layout_(std::make_unique<Layout>(options_)) {}

WindowEngine::~WindowEngine() = default;

absl::Status WindowEngine::Ingest(const SeriesKey& key, Timestamp time, uint64_t value,
                                  SampleSource& source) {
  SeriesHandle handle;
  return Ingest(key, time, value, source, handle);
}

absl::Status WindowEngine::Ingest(const SeriesKey& key, Timestamp time, uint64_t value,
                                  SampleSource& source, SeriesHandle& handle) {
  auto it = handle.valid_ ? handle.it_ : series_.find(key);
  assert((!handle.valid_ || it->first == key) && "a handle of another series");
  const int64_t t = Nanos(time);
  Layout& layout = *layout_;
  if (it == series_.end()) {
    Series series;
    series.newest_ns = t;
    series.longs.resize(layout.long_geometry.size());
    for (size_t i = 0; i < series.longs.size(); ++i) {
      series.longs[i].Start(layout.long_geometry[i], t);
      series.longs[i].Add(layout.long_geometry[i], layout.mapping, t, value);
    }
    series.PushRaw(layout, Sample{time, value});
    handle.it_ = series_.emplace(key, std::move(series)).first;
    handle.valid_ = true;
    return absl::OkStatus();
  }
  // Whatever follows, the series stays unless it is dropped below.
  handle.it_ = it;
  handle.valid_ = true;
  Series& series = it->second;
  if (t <= series.newest_ns) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sample of ", key.ToString(), " at ", FormatRfc3339Nano(time),
        " is not after the newest sample at ", FormatRfc3339Nano(AtNanos(series.newest_ns))));
  }
  // Read everything first: a failed read leaves the series untouched.
  for (size_t i = 0; i < series.longs.size(); ++i) {
    const AdvancePlan plan = series.longs[i].Plan(layout.long_geometry[i], t);
    layout.plans[i] = plan;
    layout.expired[i].clear();
    layout.bucket_rest[i].clear();
    if (plan.expire) {
      if (absl::Status s = source.ReadSamples(key, AtNanos(series.longs[i].lower_ns()),
                                              AtNanos(plan.new_lower), &layout.expired[i]);
          !s.ok()) {
        return s;
      }
    }
    if (plan.load_stacks) {
      if (absl::Status s = source.ReadSamples(key, AtNanos(plan.new_lower),
                                              AtNanos(plan.load_through), &layout.bucket_rest[i]);
          !s.ok()) {
        return s;
      }
    }
  }
  for (size_t i = 0; i < series.longs.size(); ++i) {
    const LongWindowGeometry& g = layout.long_geometry[i];
    if (absl::Status s = series.longs[i].Apply(g, layout.mapping, layout.plans[i],
                                               layout.expired[i], layout.bucket_rest[i]);
        !s.ok()) {
      // The state no longer matches the store; drop it so that it can be restored.
      handle.valid_ = false;
      series_.erase(it);
      return absl::DataLossError(
          absl::StrCat(key.ToString(), ": ", s.message(), "; the series was dropped"));
    }
    series.longs[i].Add(g, layout.mapping, t, value);
  }
  series.PushRaw(layout, Sample{time, value});
  series.newest_ns = t;
  return absl::OkStatus();
}

namespace {

void FillExact(std::span<const Sample> raw, int64_t after_ns, WindowStats* stats,
               std::vector<uint64_t>* values) {
  values->clear();
  absl::uint128 sum = 0;
  for (const Sample& s : raw) {
    if (Nanos(s.time) <= after_ns) continue;
    values->push_back(s.value);
    sum += s.value;
  }
  stats->exact_percentiles = true;
  stats->count = values->size();
  if (values->empty()) return;
  std::sort(values->begin(), values->end());
  const uint64_t n = values->size();
  stats->mean = static_cast<uint64_t>((sum + n / 2) / n);
  stats->min = values->front();
  stats->max = values->back();
  stats->p50 = (*values)[NearestRank(50, n) - 1];
  stats->p95 = (*values)[NearestRank(95, n) - 1];
  stats->p99 = (*values)[NearestRank(99, n) - 1];
}

}  // namespace

void WindowEngine::FillWindows(const Series& series, WindowStats* out) const {
  const Layout& layout = *layout_;
  const Timestamp endtime = AtNanos(series.newest_ns);
  // The exact windows' values, sorted for the percentiles: one buffer per thread, kept, since
  // a node read asks for every window of a few hundred series.
  thread_local std::vector<uint64_t> values;
  for (const Layout::Window& w : layout.windows) {
    WindowStats& stats = *out++;
    stats = WindowStats{};
    stats.window = w.width;
    stats.endtime = endtime;
    if (w.is_long) {
      series.longs[w.long_index].Fill(layout.long_geometry[w.long_index], layout.mapping, &stats);
    } else {
      FillExact(series.raw, series.newest_ns - w.width.count(), &stats, &values);
    }
  }
}

SeriesWindows WindowEngine::Windows(const SeriesKey& key, const Series& series) const {
  SeriesWindows out;
  out.key = key;
  out.endtime = AtNanos(series.newest_ns);
  out.windows.resize(layout_->windows.size());
  FillWindows(series, out.windows.data());
  return out;
}

absl::StatusOr<SeriesWindows> WindowEngine::Query(const SeriesKey& key) const {
  auto it = series_.find(key);
  if (it == series_.end()) return absl::NotFoundError(absl::StrCat("no series ", key.ToString()));
  return Windows(it->first, it->second);
}

namespace {
bool SamePod(const SeriesKey& k, std::string_view node, std::string_view ns, std::string_view pod) {
  return (k.kind == ObjectKind::kPod || k.kind == ObjectKind::kContainer) && k.node == node &&
         k.pod_namespace == ns && k.pod == pod;
}
}  // namespace

std::vector<SeriesWindows> WindowEngine::QueryNode(std::string_view node) const {
  std::vector<SeriesWindows> out;
  VisitNode(node,
            [&](const SeriesKey& key, Timestamp endtime, std::span<const WindowStats> windows) {
              out.push_back({key, endtime, {windows.begin(), windows.end()}});
            });
  return out;
}

void WindowEngine::VisitNode(
    std::string_view node,
    absl::FunctionRef<void(const SeriesKey&, Timestamp, std::span<const WindowStats>)> visit)
    const {
  // Options allow at most kMaxWindows windows: the buffer lives on the stack.
  std::array<WindowStats, kMaxWindows> buffer;
  assert(layout_->windows.size() <= buffer.size());
  const std::span<const WindowStats> windows(buffer.data(), layout_->windows.size());
  // The map's order is SeriesKey's, which takes no other type: the node's first key (its
  // machine's cpu series, the smallest key of a node) is built to find where it begins.
  for (auto it = series_.lower_bound(SeriesKey::Node(std::string(node), Resource::kCpu));
       it != series_.end() && it->first.node == node; ++it) {
    const Series& series = it->second;
    FillWindows(series, buffer.data());
    visit(it->first, AtNanos(series.newest_ns), windows);
  }
}

std::vector<SeriesWindows> WindowEngine::QueryPod(std::string_view node,
                                                  std::string_view pod_namespace,
                                                  std::string_view pod) const {
  std::vector<SeriesWindows> out;
  for (auto it = series_.lower_bound(SeriesKey::Pod(std::string(node), std::string(pod_namespace),
                                                    std::string(pod), Resource::kCpu));
       it != series_.end() && SamePod(it->first, node, pod_namespace, pod); ++it) {
    out.push_back(Windows(it->first, it->second));
  }
  return out;
}

std::vector<SeriesKey> WindowEngine::ListSeries() const {
  std::vector<SeriesKey> keys;
  keys.reserve(series_.size());
  for (const auto& [key, series] : series_) keys.push_back(key);
  return keys;
}

bool WindowEngine::Contains(const SeriesKey& key) const { return series_.contains(key); }

absl::StatusOr<Timestamp> WindowEngine::NewestTime(const SeriesKey& key) const {
  auto it = series_.find(key);
  if (it == series_.end()) return absl::NotFoundError(absl::StrCat("no series ", key.ToString()));
  return AtNanos(it->second.newest_ns);
}

size_t WindowEngine::DeleteSeries(const SeriesKey& key) { return series_.erase(key); }

size_t WindowEngine::DeletePod(std::string_view node, std::string_view pod_namespace,
                               std::string_view pod) {
  auto first = series_.lower_bound(SeriesKey::Pod(std::string(node), std::string(pod_namespace),
                                                  std::string(pod), Resource::kCpu));
  auto last = first;
  size_t n = 0;
  while (last != series_.end() && SamePod(last->first, node, pod_namespace, pod)) {
    ++last;
    ++n;
  }
  series_.erase(first, last);
  return n;
}

size_t WindowEngine::DeleteNode(std::string_view node) {
  auto first = series_.lower_bound(SeriesKey::Node(std::string(node), Resource::kCpu));
  auto last = first;
  size_t n = 0;
  while (last != series_.end() && last->first.node == node) {
    ++last;
    ++n;
  }
  series_.erase(first, last);
  return n;
}

Timestamp WindowEngine::RollupBucketStart(Timestamp time) const {
  LongWindowGeometry g;
  g.bucket_ns = layout_->rollup_ns;
  return AtNanos(g.BucketOf(Nanos(time)) * layout_->rollup_ns);
}

absl::StatusOr<BucketRollup> WindowEngine::BuildRollup(Timestamp bucket_start,
                                                       std::span<const Sample> samples) const {
  const Layout& layout = *layout_;
  if (RollupBucketStart(bucket_start) != bucket_start) {
    return absl::InvalidArgumentError(
        absl::StrCat("rollup bucket start ", FormatRfc3339Nano(bucket_start), " is not aligned"));
  }
  if (samples.empty()) return absl::InvalidArgumentError("a rollup needs at least one sample");
  const int64_t start = Nanos(bucket_start);
  BucketRollup rollup;
  rollup.start = bucket_start;
  rollup.width = options_.rollup_width;
  rollup.relative_accuracy = options_.relative_accuracy;
  rollup.min = std::numeric_limits<uint64_t>::max();
  int64_t previous = std::numeric_limits<int64_t>::min();
  for (const Sample& s : samples) {
    const int64_t t = Nanos(s.time);
    if (t < start || t - start >= layout.rollup_ns || t <= previous) {
      return absl::InvalidArgumentError(absl::StrCat("rollup sample at ", FormatRfc3339Nano(s.time),
                                                     " is outside the bucket or out of order"));
    }
    previous = t;
    ++rollup.count;
    rollup.sum += s.value;
    rollup.min = std::min(rollup.min, s.value);
    rollup.max = std::max(rollup.max, s.value);
    rollup.sketch.Add(layout.mapping, s.value);
  }
  return rollup;
}

absl::Status WindowEngine::RestoreSeries(const SeriesKey& key, Timestamp newest,
                                         std::span<const BucketRollup> rollups,
                                         SampleSource& source, RollupCoverage coverage) {
  const Layout& layout = *layout_;
  const int64_t t_newest = Nanos(newest);
  std::map<int64_t, const BucketRollup*> by_start;
  for (const BucketRollup& r : rollups) {
    if (r.width != options_.rollup_width || r.relative_accuracy != options_.relative_accuracy) {
      return absl::DataLossError(absl::StrCat(
          key.ToString(), ": a rollup at ", FormatRfc3339Nano(r.start),
          " was built with another rollup width or sketch accuracy than this engine uses"));
    }
    by_start[Nanos(r.start)] = &r;
  }
  // Reads (after, through], checking what the source returns.
  std::vector<Sample> samples;
  auto read = [&](int64_t after, int64_t through) -> absl::Status {
    samples.clear();
    if (absl::Status s = source.ReadSamples(key, AtNanos(after), AtNanos(through), &samples);
        !s.ok()) {
      return s;
    }
    int64_t previous = after;
    for (const Sample& s : samples) {
      const int64_t t = Nanos(s.time);
      if (t <= previous || t > through) {
        return absl::DataLossError(absl::StrCat(
            key.ToString(), ": the sample source returned samples out of range or order"));
      }
      previous = t;
    }
    return absl::OkStatus();
  };

  Series series;
  series.newest_ns = t_newest;
  if (absl::Status s = read(t_newest - std::max<int64_t>(layout.max_short_ns, 1), t_newest);
      !s.ok()) {
    return s;
  }
  if (samples.empty() || Nanos(samples.back().time) != t_newest) {
    return absl::FailedPreconditionError(
        absl::StrCat(key.ToString(), ": no stored sample at ", FormatRfc3339Nano(newest)));
  }
  for (const Sample& s : samples) series.PushRaw(layout, s);

  series.longs.resize(layout.long_geometry.size());
  for (size_t i = 0; i < series.longs.size(); ++i) {
    const LongWindowGeometry& g = layout.long_geometry[i];
    LongWindow& lw = series.longs[i];
    const int64_t lower = t_newest - g.width_ns;
    lw.Reset(g, lower);
    for (int64_t b = g.BucketOf(lower + 1); b <= g.BucketOf(t_newest); ++b) {
      const int64_t bucket_start = b * g.bucket_ns;
      const int64_t bucket_last = bucket_start + g.bucket_ns - 1;
      if (g.uses_rollups && bucket_start > lower && bucket_last <= t_newest) {
        auto found = by_start.find(bucket_start);
        if (found != by_start.end()) {
          lw.AddRollup(g, *found->second);
          continue;
        }
        if (coverage == RollupCoverage::kComplete) continue;  // no samples of the series there
      }
      if (absl::Status s = read(std::max(lower, bucket_start - 1), std::min(t_newest, bucket_last));
          !s.ok()) {
        return s;
      }
      for (const Sample& s : samples) lw.Add(g, layout.mapping, Nanos(s.time), s.value);
    }
    int64_t bucket = 0, through = 0;
    if (lw.NeedsStacks(g, &bucket, &through)) {
      if (absl::Status s = read(lower, through); !s.ok()) return s;
      lw.LoadStacks(g, bucket, samples);
    }
  }
  series_.insert_or_assign(key, std::move(series));
  return absl::OkStatus();
}

size_t WindowEngine::SeriesCount() const { return series_.size(); }

WindowEngine::Memory WindowEngine::MemoryByPart() const {
  // A red-black tree node: three pointers and a colour, then the value.
  constexpr size_t kMapNodeOverhead = 4 * sizeof(void*);
  auto string_heap = [](const std::string& s) {
    // Short strings live inside the object (libstdc++ keeps up to 15 characters inline).
    return s.capacity() > 15 ? s.capacity() + 1 : 0;
  };
  Memory m;
  m.index = sizeof(*this) + sizeof(Layout);
  // What an inlined vector holds beyond its inline capacity lives on the heap.
  auto spilled = [](const auto& v, size_t inline_capacity, size_t element) {
    return v.capacity() > inline_capacity ? v.capacity() * element : 0;
  };
  for (const auto& [key, series] : series_) {
    m.index += kMapNodeOverhead + sizeof(std::pair<const SeriesKey, Series>) - sizeof(Series);
    m.index += string_heap(key.node) + string_heap(key.pod_namespace) + string_heap(key.pod) +
               string_heap(key.container);
    m.series += sizeof(Series) - sizeof(Series::longs) +
                spilled(series.raw, Series::kInlineRaw, sizeof(Sample));
    m.long_windows += sizeof(Series::longs) + spilled(series.longs, 2, sizeof(LongWindow));
    for (size_t i = 0; i < series.longs.size(); ++i) {
      const LongWindow& lw = series.longs[i];
      m.rings += lw.RingBytes(layout_->long_geometry[i]);
      m.sketches += lw.SketchBytes();
      m.stacks += lw.StackBytes();
    }
  }
  return m;
}

}  // namespace kubestat::windows
