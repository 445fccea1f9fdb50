#include "ingest_sample_cache.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace kubestat::aggregator::internal {

absl::Status IngestSampleCache::ReadSamples(const windows::SeriesKey& key, Timestamp after,
                                            Timestamp through, std::vector<windows::Sample>* out) {
  const std::optional<storage::SeriesId> id = lookup_(key);
  if (!id) return absl::OkStatus();
  return Read(*id, after, through, out);
}

absl::Status IngestSampleCache::Prefetch(Timestamp after, Timestamp through) {
  if (after >= through) return absl::OkStatus();
  return EnsureLoaded(Nanos(after), Nanos(through));
}

void IngestSampleCache::Reset(storage::NodeId node, Lookup lookup) {
  node_ = node;
  lookup_ = std::move(lookup);
  column_of_.clear();
  previous_ids_.clear();
  previous_columns_.clear();
  for (Segment& segment : segments_) spare_.push_back(std::move(segment));
  segments_.clear();
}

absl::Status IngestSampleCache::Read(storage::SeriesId id, Timestamp after, Timestamp through,
                                     std::vector<windows::Sample>* out) {
  if (after >= through) return absl::OkStatus();
  const int64_t lo = Nanos(after), hi = Nanos(through);
  if (absl::Status s = EnsureLoaded(lo, hi); !s.ok()) return s;
  auto found = column_of_.find(id);
  if (found == column_of_.end()) return absl::OkStatus();
  const uint32_t column = found->second;
  // The first segment that ends after `after`; segments are disjoint and in time order.
  auto segment = std::upper_bound(segments_.begin(), segments_.end(), lo,
                                  [](int64_t t, const Segment& s) { return t < s.through; });
  for (; segment != segments_.end() && segment->after < hi; ++segment) {
    if (column + 1 >= segment->begin.size()) continue;
    const windows::Sample* first = segment->samples.data() + segment->begin[column];
    const windows::Sample* last = segment->samples.data() + segment->begin[column + 1];
    auto later = [](Timestamp t, const windows::Sample& s) { return t < s.time; };
    first = std::upper_bound(first, last, after, later);
    out->insert(out->end(), first, std::upper_bound(first, last, through, later));
  }
  return absl::OkStatus();
}

absl::Status IngestSampleCache::EnsureLoaded(int64_t after, int64_t through) {
  // The parts of (after, through] not covered yet, each loaded as a new segment.
  int64_t cursor = after;
  auto it = std::upper_bound(segments_.begin(), segments_.end(), cursor,
                             [](int64_t t, const Segment& s) { return t < s.through; });
  while (cursor < through) {
    if (it != segments_.end() && it->after <= cursor) {
      cursor = it->through;  // covered up to there
      ++it;
      continue;
    }
    int64_t gap_end = it == segments_.end() ? through : std::min(through, it->after);
    if (it != segments_.end() && gap_end < it->after && it->after - cursor <= max_hole_fill_) {
      gap_end = it->after;  // the rest of the hole is likely asked for next
    }
    Segment segment;
    if (!spare_.empty()) {
      segment = std::move(spare_.back());
      spare_.pop_back();
    }
    if (absl::Status s = Load(cursor, gap_end, &segment); !s.ok()) return s;
    it = segments_.insert(it, std::move(segment));
    ++it;
    cursor = gap_end;
  }
  return absl::OkStatus();
}

uint32_t IngestSampleCache::ColumnOf(size_t position, storage::SeriesId id) {
  if (position < previous_ids_.size() && previous_ids_[position] == id) {
    return previous_columns_[position];
  }
  auto [found, inserted] = column_of_.try_emplace(id, static_cast<uint32_t>(column_of_.size()));
  if (position >= previous_ids_.size()) {
    previous_ids_.resize(position + 1);
    previous_columns_.resize(position + 1);
  }
  previous_ids_[position] = id;
  previous_columns_[position] = found->second;
  return found->second;
}

absl::Status IngestSampleCache::Load(int64_t after, int64_t through, Segment* segment) {
  ++store_reads_;
  cells_.clear();
  absl::Status s = store_->ReadScrapes(
      node_, AtNanos(after), AtNanos(through),
      [&](Timestamp t, std::span<const storage::SeriesValue> values) {
        ++blobs_decoded_;
        for (size_t i = 0; i < values.size(); ++i) {
          cells_.push_back({ColumnOf(i, values[i].id), windows::Sample{t, values[i].value}});
        }
      });
  if (!s.ok()) return s;
  if (cells_.size() > std::numeric_limits<uint32_t>::max()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("reading node ", node_, ": too many samples in one range"));
  }
  // A counting sort by column; stable, so each column stays in time order.
  segment->after = after;
  segment->through = through;
  segment->begin.assign(column_of_.size() + 1, 0);
  for (const Cell& c : cells_) ++segment->begin[c.column + 1];
  for (size_t c = 1; c < segment->begin.size(); ++c) segment->begin[c] += segment->begin[c - 1];
  segment->samples.resize(cells_.size());
  next_.assign(segment->begin.begin(), segment->begin.end() - 1);
  for (const Cell& c : cells_) segment->samples[next_[c.column]++] = c.sample;
  return absl::OkStatus();
}

}  // namespace kubestat::aggregator::internal
