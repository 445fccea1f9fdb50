// Static bearer tokens from a file in kube-apiserver's --token-auth-file format.
//
// The file is CSV (RFC 4180, as Go's encoding/csv reads it), one token per record:
//
//   token,user,uid[,"group1,group2,…"]
//   31ada4fd-adec-460c-809a-9e56ceb75269,alice,1001,"team-a,system:monitoring"
//   0b1e0c5b9a,metrics-pusher,,kubestat:pushers
//
//   - at least three columns: token, user name, uid (uid may be empty); a fourth column, if
//     any, is a comma-separated group list (quote it when it holds commas); further columns
//     are ignored;
//   - fields may be quoted ("…", with "" for a quote inside); a quoted field may span lines;
//     blank lines are skipped; "\r\n" counts as "\n"; there are no comments;
//   - a record with an empty token is skipped; a later record for the same token replaces
//     the earlier one (as upstream);
//   - unlike upstream, an empty user name is an error (it would authenticate a nameless
//     user), and empty group names are dropped.
// Errors are InvalidArgument naming the file and the line, never a token.
//
// TokenAuthFile::Lookup stats the file at most once per `check_interval` (measured with the
// injected clock) and re-reads it when its inode, size or modification time changed, so
// tokens can be rotated without a restart. A re-read that fails keeps the previous tokens
// and logs a warning (file name and error only). Thread-safe.
#ifndef KUBESTAT_KUBE_TOKEN_FILE_H_
#define KUBESTAT_KUBE_TOKEN_FILE_H_

#include <cstdint>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/kube/user_info.h"

namespace kubestat::kube {

// Token → user, as read from one file.
using StaticTokens = std::unordered_map<std::string, UserInfo>;

// Parses the file content (see the file comment). `source` names the file in errors.
[[nodiscard]] absl::StatusOr<StaticTokens> ParseTokenAuthFile(std::string_view content,
                                                              std::string_view source);

class TokenAuthFile {
 public:
  // Reads `path` once. NotFound / PermissionDenied / InvalidArgument naming the path when
  // it cannot be read or parsed. `clock` must outlive the returned object.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TokenAuthFile>> Open(std::string path,
                                                                           const Clock& clock,
                                                                           Duration check_interval);

  // The user of `token`, or nullopt when the file does not hold it. May re-read the file
  // first (see the file comment).
  std::optional<UserInfo> Lookup(std::string_view token);

  const std::string& path() const { return path_; }

 private:
  struct FileVersion {
    uint64_t inode = 0;
    int64_t size = -1;
    timespec mtime{};
  };

  TokenAuthFile(std::string path, const Clock& clock, Duration check_interval);
  // Reads the file when it changed since `version_`; mu_ held.
  absl::Status ReloadIfChanged();

  const std::string path_;
  const Clock& clock_;
  const Duration check_interval_;
  std::mutex mu_;
  std::shared_ptr<const StaticTokens> tokens_;
  FileVersion version_;
  Timestamp last_check_{};
};

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_TOKEN_FILE_H_
