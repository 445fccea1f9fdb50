#include "kubestat/storage/scrape_blob.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "kubestat/core/varint.h"

namespace kubestat::storage {

namespace {

constexpr char kVersion1 = 1;
constexpr char kVersion2 = 2;
constexpr uint8_t kChained = 1;
constexpr uint8_t kSameIds = 2;
constexpr uint8_t kKnownFlags = kChained | kSameIds;
// Memory is counted in pages: a residual that is a multiple of this is written divided.
constexpr int64_t kPage = 4096;
// A scrape holds a few thousand series at most; this bounds what a corrupt count reserves.
constexpr uint64_t kMaxValues = 1 << 20;
// The longest distance from a blob to its reference that is written or accepted.
constexpr uint64_t kMaxDistance = uint64_t{1} << 62;

absl::Status CheckIncreasing(std::span<const SeriesValue> values) {
  for (size_t i = 1; i < values.size(); ++i) {
    if (values[i].id <= values[i - 1].id) {
      return absl::InvalidArgumentError(
          absl::StrCat("scrape blob: series ids not strictly increasing at ", values[i].id));
    }
  }
  return absl::OkStatus();
}

void PutIds(std::span<const SeriesValue> values, std::string* out) {
  SeriesId previous = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    PutVarint(out, i == 0 ? values[i].id : values[i].id - previous - 1);
    previous = values[i].id;
  }
}

// Reads n ids in the version 1 form (interleaved with values when `with_values`).
absl::Status GetIds(std::string_view* bytes, uint64_t n, bool with_values,
                    std::vector<SeriesValue>* values) {
  SeriesId previous = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t delta = 0, value = 0;
    if (!GetVarint(bytes, &delta) || (with_values && !GetVarint(bytes, &value))) {
      return absl::DataLossError(absl::StrCat("scrape blob: truncated at value ", i));
    }
    SeriesId id = delta;
    if (i > 0) {
      id = previous + delta + 1;
      if (id <= previous) return absl::DataLossError("scrape blob: series id overflow");
    }
    values->push_back({id, value});
    previous = id;
  }
  return absl::OkStatus();
}

bool SameIds(std::span<const SeriesValue> a, std::span<const SeriesValue> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].id != b[i].id) return false;
  }
  return true;
}

// The index in `sorted` (by id) of `id`, searching from *cursor on and leaving it there,
// so that ids asked in increasing order cost one pass; nullopt when absent.
std::optional<size_t> FindFrom(const std::vector<SeriesValue>& sorted, size_t* cursor,
                               SeriesId id) {
  while (*cursor < sorted.size() && sorted[*cursor].id < id) ++*cursor;
  if (*cursor < sorted.size() && sorted[*cursor].id == id) return *cursor;
  return std::nullopt;
}

void PutResidual(uint64_t value, uint64_t prediction, std::string* out) {
  const auto r = static_cast<int64_t>(value - prediction);
  if (r % kPage == 0) {
    PutVarint(out, (ZigZag(r / kPage) << 1) | 1);
  } else if (ZigZag(r) < (uint64_t{1} << 63)) {
    PutVarint(out, ZigZag(r) << 1);
  } else {
    PutVarint(out, 0);
    PutVarint(out, value);
  }
}

bool GetResidual(std::string_view* bytes, uint64_t prediction, uint64_t* value) {
  uint64_t code = 0;
  if (!GetVarint(bytes, &code)) return false;
  if (code == 0) return GetVarint(bytes, value);
  const int64_t r = UnZigZag(code >> 1);
  // Unsigned arithmetic: wraps exactly as the encoder's subtraction did.
  const uint64_t residual = (code & 1) != 0
                                ? static_cast<uint64_t>(r) * static_cast<uint64_t>(kPage)
                                : static_cast<uint64_t>(r);
  *value = prediction + residual;
  return true;
}

}  // namespace

void BlobChainState::Clear() {
  valid_ = false;
  time_ns_ = 0;
  values_.clear();
  before_.clear();
  has_before_.clear();
}

void BlobChainState::Advance(const BlobChainState* reference, int64_t time_ns,
                             std::span<const SeriesValue> values) {
  values_.assign(values.begin(), values.end());
  before_.assign(values.size(), 0);
  has_before_.assign(values.size(), 0);
  if (reference != nullptr && reference->valid_ && SameIds(values_, reference->values_)) {
    // The common case, a scrape of the same series as the one before: no search.
    for (size_t i = 0; i < values_.size(); ++i) before_[i] = reference->values_[i].value;
    has_before_.assign(values.size(), 1);
  } else if (reference != nullptr && reference->valid_) {
    size_t cursor = 0;
    for (size_t i = 0; i < values_.size(); ++i) {
      if (std::optional<size_t> j = FindFrom(reference->values_, &cursor, values_[i].id)) {
        before_[i] = reference->values_[*j].value;
        has_before_[i] = 1;
      }
    }
  }
  time_ns_ = time_ns;
  valid_ = true;
}

std::optional<uint64_t> BlobChainState::Prediction(size_t* cursor, SeriesId id) const {
  const std::optional<size_t> j = FindFrom(values_, cursor, id);
  if (!j) return std::nullopt;
  // The value in the reference plus the step it made from the value before it.
  return PredictionAt(*j);
}

absl::Status EncodeScrapeBlobV1(std::span<const SeriesValue> values, std::string* out) {
  if (absl::Status s = CheckIncreasing(values); !s.ok()) return s;
  out->push_back(kVersion1);
  PutVarint(out, values.size());
  SeriesId previous = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    PutVarint(out, i == 0 ? values[i].id : values[i].id - previous - 1);
    PutVarint(out, values[i].value);
    previous = values[i].id;
  }
  return absl::OkStatus();
}

absl::Status EncodeScrapeBlob(std::span<const SeriesValue> values, int64_t time_ns,
                              const BlobChainState* reference, std::string* out) {
  if (absl::Status s = CheckIncreasing(values); !s.ok()) return s;
  if (reference != nullptr && !reference->empty() && reference->time_ns() >= time_ns) {
    return absl::InvalidArgumentError(absl::StrCat("scrape blob: reference at ",
                                                   reference->time_ns(),
                                                   "ns is not before the blob at ", time_ns, "ns"));
  }
  const uint64_t distance =
      reference == nullptr || reference->empty()
          ? 0
          : static_cast<uint64_t>(time_ns) - static_cast<uint64_t>(reference->time_ns());
  // A reference further away than any chain spans (over a century) makes a key blob.
  const bool chained = distance != 0 && distance <= kMaxDistance;
  const bool same_ids = chained && SameIds(values, reference->values_);
  out->push_back(kVersion2);
  out->push_back(static_cast<char>((chained ? kChained : 0) | (same_ids ? kSameIds : 0)));
  if (chained) PutVarint(out, distance);
  PutVarint(out, values.size());
  if (!same_ids) PutIds(values, out);
  size_t cursor = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const SeriesValue& v = values[i];
    std::optional<uint64_t> prediction;
    if (chained) prediction = reference->PredictionFor(same_ids, i, &cursor, v.id);
    if (prediction) {
      PutResidual(v.value, *prediction, out);
    } else {
      PutVarint(out, v.value);
    }
  }
  return absl::OkStatus();
}

bool IsChainedScrapeBlob(std::string_view bytes) {
  return bytes.size() >= 2 && bytes[0] == kVersion2 &&
         (static_cast<uint8_t>(bytes[1]) & kChained) != 0;
}

absl::Status DecodeScrapeBlob(std::string_view bytes, int64_t time_ns,
                              const BlobChainState* reference, std::vector<SeriesValue>* values) {
  values->clear();
  if (bytes.empty()) return absl::DataLossError("scrape blob: empty");
  const char version = bytes.front();
  if (version != kVersion1 && version != kVersion2) {
    return absl::DataLossError(absl::StrCat("scrape blob: unknown version ",
                                            static_cast<int>(static_cast<uint8_t>(version))));
  }
  bytes.remove_prefix(1);
  uint8_t flags = 0;
  if (version == kVersion2) {
    if (bytes.empty()) return absl::DataLossError("scrape blob: no flags");
    flags = static_cast<uint8_t>(bytes.front());
    bytes.remove_prefix(1);
    if ((flags & ~kKnownFlags) != 0 || ((flags & kChained) == 0 && (flags & kSameIds) != 0)) {
      return absl::DataLossError(absl::StrCat("scrape blob: unknown flags ", flags));
    }
  }
  const bool chained = (flags & kChained) != 0;
  const bool same_ids = (flags & kSameIds) != 0;  // implies chained (checked above)
  if (chained) {
    uint64_t distance = 0;
    if (!GetVarint(&bytes, &distance)) return absl::DataLossError("scrape blob: truncated");
    const auto reference_ns = static_cast<int64_t>(static_cast<uint64_t>(time_ns) - distance);
    if (distance == 0 || distance > kMaxDistance) {
      return absl::DataLossError(
          absl::StrCat("scrape blob: chained at a distance of ", distance, "ns, out of range"));
    }
    if (reference == nullptr || reference->empty() || reference->time_ns() != reference_ns) {
      return absl::FailedPreconditionError(absl::StrCat(
          "scrape blob: chained to the blob at ", reference_ns, "ns, which was not read",
          reference == nullptr || reference->empty()
              ? std::string()
              : absl::StrCat(" (the previous blob is at ", reference->time_ns(), "ns)")));
    }
  }
  uint64_t n = 0;
  // Each value takes a byte at least (two with its id).
  const uint64_t min_bytes_per_value = same_ids ? 1 : 2;
  if (!GetVarint(&bytes, &n) || n > kMaxValues || n > bytes.size() / min_bytes_per_value) {
    return absl::DataLossError("scrape blob: bad value count");
  }
  values->reserve(n);
  if (version == kVersion1) {
    if (absl::Status s = GetIds(&bytes, n, /*with_values=*/true, values); !s.ok()) {
      values->clear();
      return s;
    }
  } else {
    if (same_ids) {
      if (n != reference->values_.size()) {
        return absl::DataLossError("scrape blob: count differs from its reference's");
      }
      values->assign(reference->values_.begin(), reference->values_.end());
    } else if (absl::Status s = GetIds(&bytes, n, /*with_values=*/false, values); !s.ok()) {
      values->clear();
      return s;
    }
    size_t cursor = 0;
    for (uint64_t i = 0; i < n; ++i) {
      SeriesValue& v = (*values)[i];
      std::optional<uint64_t> prediction;
      if (chained) prediction = reference->PredictionFor(same_ids, i, &cursor, v.id);
      const bool ok =
          prediction ? GetResidual(&bytes, *prediction, &v.value) : GetVarint(&bytes, &v.value);
      if (!ok) {
        values->clear();
        return absl::DataLossError(absl::StrCat("scrape blob: truncated at value ", i));
      }
    }
  }
  if (!bytes.empty()) {
    values->clear();
    return absl::DataLossError(absl::StrCat("scrape blob: ", bytes.size(), " trailing bytes"));
  }
  return absl::OkStatus();
}

}  // namespace kubestat::storage
