// Content negotiation: which of the media types a server can write a client's Accept header
// asks for (RFC 9110 §12.5.1), read as kube-apiserver reads it.
//
// The Accept value is a comma-separated list of media ranges ("type/subtype", "type/*",
// "*/*"; a bare "*" is read as "*/*"), each with optional parameters. Types and parameter
// names are case-insensitive. Parameters:
//   q       the weight, a qvalue ("0.5"; ".5" is read as "0.5"); a malformed one, or 0, admits
//           nothing;
//   as, g, v  ask for a conversion (a Table, PartialObjectMetadata, aggregated discovery),
//           which kubestat does not do: such a range is passed over as if not listed, so a
//           client that also lists the plain type gets that (kubectl get's Table request);
//   others  (charset, pretty, stream, ...) are ignored.
// Each offered type takes the weight of the most specific range that matches it (the first
// such range when several are equally specific). The answer is the offered type with the
// highest weight above 0; among equal weights the one matched by the more specific range,
// then by the range listed first, then the one offered first. So client-go's
// "application/vnd.kubernetes.protobuf, */*" and "application/vnd.kubernetes.protobuf,
// application/json" choose protobuf, "application/json, application/vnd.kubernetes.protobuf"
// and "*/*" choose the server's first (JSON).
//
// An absent or empty Accept is "*/*". A header whose every range is malformed, a conversion
// or of weight 0 chooses nothing: the server answers 406 NotAcceptable.
//
// Thread-safety: pure functions; safe from any thread.
#ifndef KUBESTAT_APIMACHINERY_MEDIA_TYPE_H_
#define KUBESTAT_APIMACHINERY_MEDIA_TYPE_H_

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

namespace kubestat {

inline constexpr std::string_view kMediaTypeJson = "application/json";
inline constexpr std::string_view kMediaTypeProtobuf = "application/vnd.kubernetes.protobuf";

// The index into `offered` (lower-case "type/subtype" without parameters, in the server's
// order of preference) of the type to answer in; std::nullopt when `accept` admits none.
std::optional<size_t> NegotiateMediaType(std::string_view accept,
                                         std::span<const std::string_view> offered);

}  // namespace kubestat

#endif  // KUBESTAT_APIMACHINERY_MEDIA_TYPE_H_
