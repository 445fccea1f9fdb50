#include "ingest_sample_cache.h"

#include <algorithm>

namespace kubestat::aggregator::internal {

namespace {
int64_t Nanos(Timestamp t) { return t.time_since_epoch().count(); }
Timestamp AtNanos(int64_t ns) { return Timestamp(Duration(ns)); }
bool Earlier(const Sample& a, const Sample& b) { return a.time < b.time; }
}  // namespace

absl::Status IngestSampleCache::ReadSamples(const SeriesKey& key, Timestamp after,
                                            Timestamp through, std::vector<Sample>* out) {
  const std::optional<storage::SeriesId> id = lookup_(key);
  if (!id) return absl::OkStatus();
  return Read(*id, after, through, out);
}

absl::Status IngestSampleCache::Read(storage::SeriesId id, Timestamp after, Timestamp through,
                                     std::vector<Sample>* out) {
  if (after >= through) return absl::OkStatus();
  if (absl::Status s = EnsureLoaded(Nanos(after), Nanos(through)); !s.ok()) return s;
  auto found = by_series_.find(id);
  if (found == by_series_.end()) return absl::OkStatus();
  const std::vector<Sample>& samples = found->second;
  auto first = std::upper_bound(samples.begin(), samples.end(), Sample{after, 0}, Earlier);
  for (auto it = first; it != samples.end() && it->time <= through; ++it) out->push_back(*it);
  return absl::OkStatus();
}

absl::Status IngestSampleCache::EnsureLoaded(int64_t after, int64_t through) {
  // The parts of (after, through] not covered yet.
  std::vector<std::pair<int64_t, int64_t>> gaps;
  int64_t cursor = after;
  for (const auto& [lo, hi] : covered_) {
    if (hi <= cursor) continue;
    if (lo >= through) break;
    if (lo > cursor) gaps.push_back({cursor, lo});
    cursor = std::max(cursor, hi);
    if (cursor >= through) break;
  }
  if (cursor < through) gaps.push_back({cursor, through});
  if (gaps.empty()) return absl::OkStatus();

  std::vector<storage::SeriesId> touched;
  for (const auto& [lo, hi] : gaps) {
    ++store_reads_;
    absl::Status s =
        store_->ReadScrapes(node_, AtNanos(lo), AtNanos(hi),
                            [&](Timestamp t, std::span<const storage::SeriesValue> values) {
                              for (const storage::SeriesValue& v : values) {
                                std::vector<Sample>& samples = by_series_[v.id];
                                if (!samples.empty() && samples.back().time > t)
                                  touched.push_back(v.id);
                                samples.push_back({t, v.value});
                              }
                            });
    if (!s.ok()) return s;
    covered_.push_back({lo, hi});
  }
  // Ranges loaded before older ones leave some series out of order.
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (storage::SeriesId id : touched) {
    std::vector<Sample>& samples = by_series_[id];
    std::sort(samples.begin(), samples.end(), Earlier);
  }
  // Merge the covered ranges.
  std::sort(covered_.begin(), covered_.end());
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (const auto& range : covered_) {
    if (!merged.empty() && range.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, range.second);
    } else {
      merged.push_back(range);
    }
  }
  covered_ = std::move(merged);
  return absl::OkStatus();
}

}  // namespace kubestat::aggregator::internal
