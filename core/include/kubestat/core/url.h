// Percent-decoding of URL paths and query strings (RFC 3986 escapes, as Go's net/url reads
// them).
//
// PercentDecode is strict: a '%' not followed by two hex digits is InvalidArgument
// `invalid URL escape "%zz"` (the escape quoted, non-printable bytes shown as '?'), as
// url.PathUnescape and url.QueryUnescape refuse it. PercentDecodeLenient keeps such an
// escape as written, for callers that match on the text rather than trust it. With
// `plus_is_space` (query text) '+' reads as a space; in paths it stays '+'.
//
// Pure functions; thread-safe.
#ifndef KUBESTAT_CORE_URL_H_
#define KUBESTAT_CORE_URL_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kubestat {

[[nodiscard]] absl::StatusOr<std::string> PercentDecode(std::string_view text, bool plus_is_space);
std::string PercentDecodeLenient(std::string_view text, bool plus_is_space);

}  // namespace kubestat

#endif  // KUBESTAT_CORE_URL_H_
