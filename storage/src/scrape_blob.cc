#include "kubestat/storage/scrape_blob.h"

#include "absl/strings/str_cat.h"
#include "kubestat/core/varint.h"

namespace kubestat::storage {

namespace {

constexpr char kVersion = 1;
// A scrape holds a few thousand series at most; this bounds what a corrupt count reserves.
constexpr uint64_t kMaxValues = 1 << 20;

}  // namespace

absl::Status EncodeScrapeBlob(std::span<const SeriesValue> values, std::string* out) {
  for (size_t i = 1; i < values.size(); ++i) {
    if (values[i].id <= values[i - 1].id) {
      return absl::InvalidArgumentError(
          absl::StrCat("scrape blob: series ids not strictly increasing at ", values[i].id));
    }
  }
  out->push_back(kVersion);
  PutVarint(out, values.size());
  SeriesId previous = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    PutVarint(out, i == 0 ? values[i].id : values[i].id - previous - 1);
    PutVarint(out, values[i].value);
    previous = values[i].id;
  }
  return absl::OkStatus();
}

absl::Status DecodeScrapeBlob(std::string_view bytes, std::vector<SeriesValue>* values) {
  values->clear();
  if (bytes.empty() || bytes.front() != kVersion) {
    return absl::DataLossError(
        bytes.empty() ? "scrape blob: empty"
                      : absl::StrCat("scrape blob: unknown version ",
                                     static_cast<int>(static_cast<uint8_t>(bytes.front()))));
  }
  bytes.remove_prefix(1);
  uint64_t n = 0;
  if (!GetVarint(&bytes, &n) || n > kMaxValues || n > bytes.size() / 2) {
    return absl::DataLossError("scrape blob: bad value count");
  }
  values->reserve(n);
  SeriesId previous = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t delta = 0, value = 0;
    if (!GetVarint(&bytes, &delta) || !GetVarint(&bytes, &value)) {
      values->clear();
      return absl::DataLossError(absl::StrCat("scrape blob: truncated at value ", i));
    }
    SeriesId id = delta;
    if (i > 0) {
      id = previous + delta + 1;
      if (id <= previous) {
        values->clear();
        return absl::DataLossError("scrape blob: series id overflow");
      }
    }
    values->push_back({id, value});
    previous = id;
  }
  if (!bytes.empty()) {
    values->clear();
    return absl::DataLossError(absl::StrCat("scrape blob: ", bytes.size(), " trailing bytes"));
  }
  return absl::OkStatus();
}

}  // namespace kubestat::storage
