// Reading a whole local file: configuration, PEM material, token and rules files.
//
// ReadFile returns the file's bytes, or NotFound "<what>: cannot read <path>: <reason>"
// (without "<what>: " when `what` is empty) when it cannot be opened or read, and
// InvalidArgument when it is larger than `max_bytes`, checked before reading it all, so a
// wrong path (a device, a huge log) is refused rather than buffered.
//
// WriteFileAtomically writes a whole file through a temporary one beside it
// (<path>.tmp.<pid>.<n>), created with `mode` from the start (a key is never readable by
// others, not even briefly), synced and renamed into place: a reader sees the old content
// or the new, never a part; Internal naming the file when it cannot. Thread-safe.
#ifndef KUBESTAT_CORE_FILE_H_
#define KUBESTAT_CORE_FILE_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kubestat {

inline constexpr size_t kMaxConfigFileBytes = size_t{16} << 20;

[[nodiscard]] absl::StatusOr<std::string> ReadFile(const std::string& path,
                                                   std::string_view what = "",
                                                   size_t max_bytes = kMaxConfigFileBytes);

[[nodiscard]] absl::Status WriteFileAtomically(const std::string& path, std::string_view content,
                                               unsigned mode = 0644);

}  // namespace kubestat

#endif  // KUBESTAT_CORE_FILE_H_
