// Internal: the outcomes of http::Client requests as scraper Statuses with a failure reason
// (fetch_error.h).
#ifndef KUBESTAT_SCRAPERS_SRC_FETCH_STATUS_H_
#define KUBESTAT_SCRAPERS_SRC_FETCH_STATUS_H_

#include <string_view>

#include "absl/status/status.h"

namespace kubestat::scrapers::internal {

// An error from http::Client with its http::FailureReason carried over: timeout, connect,
// tls, read, too_large and auth keep their label; any other becomes "other". Code and
// message are kept.
[[nodiscard]] absl::Status FromClientError(const absl::Status& status);

// A non-2xx answer: reason http_<code>, the message "HTTP <code>: " and the start of the
// body (control bytes blanked). 401 is Unauthenticated, 403 PermissionDenied, 404 NotFound,
// 410 OutOfRange, any other Unavailable.
[[nodiscard]] absl::Status FromHttpCode(int code, std::string_view body);

}  // namespace kubestat::scrapers::internal

#endif  // KUBESTAT_SCRAPERS_SRC_FETCH_STATUS_H_
