// RFC 3339 time, as the Kubernetes API and the kubelet write it.
//
// Parsing accepts what real peers send: "2026-11-21T10:00:10Z", fractional seconds of any
// length up to nanoseconds ("…:10.123456789Z"), and numeric offsets ("+02:00", "-07:00"),
// normalised to UTC. Anything else is an InvalidArgument naming the input. Parsing is
// allocation-free and fast enough for decoding every timestamp of a kubelet payload.
// Formatting always writes UTC with a "Z".
#ifndef KUBESTAT_CORE_TIME_H_
#define KUBESTAT_CORE_TIME_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"

namespace kubestat {

// Go's zero time.Time, "0001-01-01T00:00:00Z", which Kubernetes peers send for "unset". It
// lies before the range a Timestamp holds (int64 nanoseconds: 1677-09-21 to 2262-04-11),
// so ParseRfc3339 saturates every earlier time to this value (and every later one to
// Timestamp::max()), and both formatters write it back as "0001-01-01T00:00:00Z".
inline constexpr Timestamp kZeroTime = Timestamp::min();

// Layout YYYY-MM-DDTHH:MM:SS[.F](Z|+hh:mm|-hh:mm): a fraction of 1 to 9 digits; "T" and
// "Z" may be lower case (RFC 3339 section 5.6); seconds 00-59 (no leap second, as Go);
// offsets up to 23:59. Trailing bytes are rejected. Errors: InvalidArgument with the
// (truncated, escaped) input and the reason.
[[nodiscard]] absl::StatusOr<Timestamp> ParseRfc3339(std::string_view text);

// "2026-11-21T10:00:10Z": whole seconds, truncated toward the past (metav1.Time's form).
std::string FormatRfc3339(Timestamp t);
// "2026-11-21T10:00:10.5Z": RFC3339Nano, trailing zeros of the fraction dropped.
std::string FormatRfc3339Nano(Timestamp t);

// Go-style durations ("10s", "1m30s", "500ms", "1.5h", "-2h45m", "1d" is not Go but accepted
// as 24h): an optional sign, then one or more decimal numbers each followed by a unit
// (ns, us, µs, μs, ms, s, m, h, d), or a bare "0". Fractions truncate toward zero to whole
// nanoseconds. Errors: InvalidArgument naming the input for garbage, a missing or unknown
// unit, or a value outside int64 nanoseconds (about ±292 years).
[[nodiscard]] absl::StatusOr<Duration> ParseDuration(std::string_view text);
// The shortest form FormatDuration(ParseDuration(s)) that reads back: "10s", "1m", "1h30m", "1d".
// Zero parts are left out ("1d1h", "1m0.5s"; zero is "0s"); below one second a single unit
// with a decimal fraction is used: "500ms", "1.5us", "7ns" (ASCII "us").
std::string FormatDuration(Duration d);

}  // namespace kubestat

#endif  // KUBESTAT_CORE_TIME_H_
