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

[[nodiscard]] absl::StatusOr<Timestamp> ParseRfc3339(std::string_view text);

// "2026-11-21T10:00:10Z": whole seconds, truncated toward the past (metav1.Time's form).
std::string FormatRfc3339(Timestamp t);
// "2026-11-21T10:00:10.5Z": RFC3339Nano, trailing zeros of the fraction dropped.
std::string FormatRfc3339Nano(Timestamp t);

// Go-style durations ("10s", "1m30s", "500ms", "1h", "1d" is not Go but accepted as 24h).
[[nodiscard]] absl::StatusOr<Duration> ParseDuration(std::string_view text);
// The shortest form FormatDuration(ParseDuration(s)) that reads back: "10s", "1m", "1h30m", "1d".
std::string FormatDuration(Duration d);

}  // namespace kubestat

#endif  // KUBESTAT_CORE_TIME_H_
