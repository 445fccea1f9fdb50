// Feeds arbitrary bytes to the PodResources response decoders (List, GetAllocatableResources,
// Get): they must return a value
// or an error, never crash, and a successful decode must be deterministic.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kubestat/podresources/client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto list = kubestat::podresources::DecodeListResponse(bytes);
  if (list.ok()) {
    auto again = kubestat::podresources::DecodeListResponse(bytes);
    if (!again.ok() || *again != *list) std::abort();
  }
  auto allocatable = kubestat::podresources::DecodeAllocatableResponse(bytes);
  if (allocatable.ok()) {
    auto again = kubestat::podresources::DecodeAllocatableResponse(bytes);
    if (!again.ok() || !(*again == *allocatable)) std::abort();
  }
  auto pod = kubestat::podresources::DecodeGetResponse(bytes);
  if (pod.ok()) {
    auto again = kubestat::podresources::DecodeGetResponse(bytes);
    if (!again.ok() || !(*again == *pod)) std::abort();
  }
  return 0;
}
