// Feeds arbitrary bytes to the simulator's GetPodResourcesRequest decoder: a request or an
// InvalidArgument, never a crash; a decoded request's names are pieces of the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kubestat/sim/podresources_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto request = kubestat::sim::DecodeGetRequest(bytes);
  if (request.ok()) {
    if (request->pod_name.size() > size || request->pod_namespace.size() > size) std::abort();
  } else if (request.status().code() != absl::StatusCode::kInvalidArgument) {
    std::abort();
  }
  return 0;
}
