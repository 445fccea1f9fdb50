// Decodes arbitrary bytes as a stored scrape blob (version 1, a key blob, or a chained blob
// against a reference built from the input's first bytes): corrupt bytes must give an
// error, never a crash; whatever decodes must encode again, against the same reference,
// to bytes that decode to the same values.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "kubestat/storage/scrape_blob.h"

namespace {

using kubestat::storage::BlobChainState;
using kubestat::storage::SeriesValue;

constexpr int64_t kTime = int64_t{1'700'000'000} * 1'000'000'000;

uint64_t Load64(const uint8_t* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // The reference: k series (ids growing by 1 + a byte), each with a value and the value
  // before it, so that both predictions (step and second difference) are exercised.
  const size_t k = data[0] % 16;
  const size_t header = 1 + k * 17;
  if (size < header) return 0;
  std::vector<SeriesValue> before, reference;
  uint64_t id = 0;
  for (size_t i = 0; i < k; ++i) {
    const uint8_t* p = data + 1 + i * 17;
    id += 1 + p[0];
    before.push_back({id, Load64(p + 1)});
    reference.push_back({id, Load64(p + 9)});
  }
  BlobChainState first, state;
  first.Advance(nullptr, kTime - 2, before);
  state.Advance(&first, kTime - 1, reference);

  const std::string_view bytes(reinterpret_cast<const char*>(data + header), size - header);
  std::vector<SeriesValue> values;
  if (!DecodeScrapeBlob(bytes, kTime, &state, &values).ok()) {
    if (!values.empty()) std::abort();
    return 0;
  }
  const bool chained = kubestat::storage::IsChainedScrapeBlob(bytes);
  std::string again;
  if (!EncodeScrapeBlob(values, kTime, chained ? &state : nullptr, &again).ok()) std::abort();
  std::vector<SeriesValue> decoded;
  if (!DecodeScrapeBlob(again, kTime, &state, &decoded).ok() || decoded != values) std::abort();
  return 0;
}
