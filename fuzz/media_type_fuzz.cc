// Fuzzes NegotiateMediaType on arbitrary Accept values: it never crashes, and what it
// chooses is one of the offered types.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "kubestat/apimachinery/media_type.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view accept(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kOffered[] = {kubestat::kMediaTypeJson, kubestat::kMediaTypeProtobuf};
  const std::optional<size_t> chosen = kubestat::NegotiateMediaType(accept, kOffered);
  if (chosen && *chosen >= std::size(kOffered)) std::abort();
  return 0;
}
