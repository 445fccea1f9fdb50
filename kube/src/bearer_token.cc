#include "kubestat/kube/bearer_token.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace kubestat::kube {

BearerTokenFile::BearerTokenFile(std::string path) : path_(std::move(path)) {}

absl::StatusOr<std::string> BearerTokenFile::Get() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    int err = errno;
    std::string message = absl::StrCat("token file ", path_, ": ", std::strerror(err));
    if (err == EACCES) return absl::PermissionDeniedError(message);
    return absl::NotFoundError(message);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (loaded_ && st.st_ino == inode_ && st.st_size == size_ && st.st_mtim.tv_sec == mtime_.tv_sec &&
      st.st_mtim.tv_nsec == mtime_.tv_nsec) {
    return token_;
  }
  std::ifstream in(path_, std::ios::binary);
  if (!in) return absl::PermissionDeniedError(absl::StrCat("token file ", path_, ": cannot open"));
  std::ostringstream contents;
  contents << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(contents.str()));
  if (token.empty())
    return absl::InvalidArgumentError(absl::StrCat("token file ", path_, " is empty"));
  token_ = std::move(token);
  inode_ = st.st_ino;
  size_ = st.st_size;
  mtime_ = st.st_mtim;
  loaded_ = true;
  return token_;
}

}  // namespace kubestat::kube
