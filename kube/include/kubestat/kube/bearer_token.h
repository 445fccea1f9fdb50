// A bearer token read from a file and re-read when the file changes (token rotation).
//
// Kubernetes rotates projected service-account tokens by replacing the file; the kubelet
// and API server accept the new token at once. Get() stats the file on every call (cheap)
// and reads it again when its modification time, size or inode changed, so a rotated token
// is used from the next request on. Leading and trailing whitespace is stripped.
// Thread-safe.
#ifndef KUBESTAT_KUBE_BEARER_TOKEN_H_
#define KUBESTAT_KUBE_BEARER_TOKEN_H_

#include <cstdint>
#include <ctime>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"

namespace kubestat::kube {

class BearerTokenFile {
 public:
  explicit BearerTokenFile(std::string path);

  // The current token. NotFound/PermissionDenied/InvalidArgument (empty file) naming the
  // path when the file cannot be used; a later call retries.
  [[nodiscard]] absl::StatusOr<std::string> Get();

  const std::string& path() const { return path_; }

 private:
  const std::string path_;
  std::mutex mu_;
  bool loaded_ = false;
  uint64_t inode_ = 0;
  int64_t size_ = -1;
  timespec mtime_{};
  std::string token_;
};

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_BEARER_TOKEN_H_
