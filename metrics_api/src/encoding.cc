#include "kubestat/metrics_api/encoding.h"

#include <span>
#include <string>

#include "kubestat/apimachinery/media_type.h"

namespace kubestat::metrics_api {
namespace {

// In the server's order of preference: JSON first, so "*/*" gets JSON.
constexpr std::string_view kJsonAndProtobuf[] = {kMediaTypeJson, kMediaTypeProtobuf};

std::span<const std::string_view> Offered(bool protobuf_offered) {
  return std::span<const std::string_view>(kJsonAndProtobuf).first(protobuf_offered ? 2 : 1);
}

}  // namespace

std::string_view ContentType(Encoding encoding) {
  return encoding == Encoding::kProtobuf ? kMediaTypeProtobuf : kMediaTypeJson;
}

std::optional<Encoding> NegotiateEncoding(std::string_view accept, bool protobuf_offered) {
  const std::optional<size_t> chosen = NegotiateMediaType(accept, Offered(protobuf_offered));
  if (!chosen) return std::nullopt;
  return *chosen == 0 ? Encoding::kJson : Encoding::kProtobuf;
}

ApiError NotAcceptable(bool protobuf_offered) {
  std::string message = "only the following media types are accepted: ";
  bool first = true;
  for (std::string_view type : Offered(protobuf_offered)) {
    if (!first) message += ", ";
    first = false;
    message += type;
  }
  return ApiError::NotAcceptable(message);
}

}  // namespace kubestat::metrics_api
