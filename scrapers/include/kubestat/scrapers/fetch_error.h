// Why a scrape or an API request failed, as a short label for metrics and logs.
//
// Transport code attaches a reason to the absl::Status it returns (as a status payload), so
// the scrape loop can count failures by reason without parsing messages. Reasons:
//   timeout     no complete answer within the per-request timeout
//   connect     the connection could not be made (refused, unreachable, name not resolved)
//   tls         the TLS handshake failed (certificate not trusted, wrong host, bad config)
//   read        the connection broke after the response started (a truncated body)
//   http_<code> the peer answered with a non-2xx status, e.g. http_401, http_500
//   too_large   the body exceeded the size cap (reading stopped there)
//   decode      the body was not a valid payload
//   bad_timestamp
//               the payload's readings are stamped too far from the time of the scrape (a
//               time of 0, stale, far ahead; see sample_times.h)
//   auth        the client's own credentials could not be loaded (token file)
//   other       anything else
#ifndef KUBESTAT_SCRAPERS_FETCH_ERROR_H_
#define KUBESTAT_SCRAPERS_FETCH_ERROR_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace kubestat::scrapers {

// Returns `status` with `reason` attached. `status` must not be OK.
[[nodiscard]] absl::Status WithFailureReason(absl::Status status, std::string_view reason);

// The reason attached to `status`; "decode" for an InvalidArgument without one (what the
// decoders return), "other" for any other status without one, "" for OK.
std::string FailureReason(const absl::Status& status);

}  // namespace kubestat::scrapers

#endif  // KUBESTAT_SCRAPERS_FETCH_ERROR_H_
