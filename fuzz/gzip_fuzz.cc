// Fuzzes the gzip coding: GzipDecompress on arbitrary bytes (an error or at most the cap,
// never a crash), AcceptsGzip on arbitrary header values, and the round trip of arbitrary
// data through GzipCompress and GzipDecompress.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kubestat/core/gzip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  constexpr size_t kCap = 1 << 20;
  absl::StatusOr<std::string> decoded = kubestat::GzipDecompress(bytes, kCap);
  if (decoded.ok() && decoded->size() > kCap) std::abort();
  (void)kubestat::AcceptsGzip(bytes);

  absl::StatusOr<std::string> round =
      kubestat::GzipDecompress(kubestat::GzipCompress(bytes, size % 9 + 1), size);
  if (!round.ok() || *round != bytes) std::abort();
  return 0;
}
