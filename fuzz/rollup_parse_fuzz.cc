// Parses arbitrary bytes as a stored BucketRollup: corrupt bytes must give an error, never a
// crash; whatever parses must serialize back to bytes that parse to the same rollup.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kubestat/windows/window_engine.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto rollup = kubestat::windows::ParseRollup(bytes);
  if (!rollup.ok()) return 0;
  auto again = kubestat::windows::ParseRollup(kubestat::windows::SerializeRollup(*rollup));
  if (!again.ok() || !(*again == *rollup)) std::abort();
  return 0;
}
