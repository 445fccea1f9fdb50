// HTTP response compression: the gzip content coding (RFC 1952, via zlib) and the
// Accept-Encoding negotiation that decides when a client may be sent it (RFC 9110 §12.5.3).
//
// Thread-safety: every function is pure and safe to call concurrently.
#ifndef KUBESTAT_CORE_GZIP_H_
#define KUBESTAT_CORE_GZIP_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kubestat {

// True when a request's Accept-Encoding value admits the gzip coding: "gzip" (or its alias
// "x-gzip") is listed with a weight above 0, or it is not listed and "*" is, with a weight
// above 0. Coding names are case-insensitive; parameters other than q are ignored; an entry
// with a malformed weight admits nothing. An empty or absent header admits nothing (the
// server then sends identity, as Kubernetes does).
bool AcceptsGzip(std::string_view accept_encoding);

// One gzip member holding `data`, compressed at `level` (1 fastest ... 9 smallest; values
// outside [1, 9] are clamped). Throws std::bad_alloc when memory runs out, like any other
// allocation.
std::string GzipCompress(std::string_view data, int level = 1);

// The bytes held by `data`, one gzip member or several concatenated (as RFC 1952 allows).
// InvalidArgument for bytes that are not gzip, a corrupt or truncated stream, or trailing
// bytes after a member that do not start another; ResourceExhausted as soon as the output
// would exceed `max_bytes` (so a small bomb cannot take the memory).
[[nodiscard]] absl::StatusOr<std::string> GzipDecompress(std::string_view data, size_t max_bytes);

}  // namespace kubestat

#endif  // KUBESTAT_CORE_GZIP_H_
