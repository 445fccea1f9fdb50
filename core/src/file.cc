#include "kubestat/core/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "kubestat/core/absl_view.h"

namespace kubestat {

absl::StatusOr<std::string> ReadFile(const std::string& path, std::string_view what,
                                     size_t max_bytes) {
  const std::string prefix = what.empty() ? "" : absl::StrCat(AbslView(what), ": ");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(prefix, "cannot read ", path, ": ", strerror(errno)));
  }
  std::string contents;
  char buffer[64 * 1024];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) {
    if (contents.size() + static_cast<size_t>(in.gcount()) > max_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(prefix, path, " is larger than ", max_bytes, " bytes"));
    }
    contents.append(buffer, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) {
    return absl::NotFoundError(absl::StrCat(prefix, "cannot read ", path, ": ", strerror(errno)));
  }
  return contents;
}

absl::Status WriteFileAtomically(const std::string& path, std::string_view content, unsigned mode) {
  static std::atomic<uint64_t> sequence{0};
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid(), ".", sequence.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot create ", tmp, ": ", strerror(errno)));
  }
  size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string error = strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return absl::InternalError(absl::StrCat("cannot write ", tmp, ": ", error));
    }
    written += static_cast<size_t>(n);
  }
  ::fchmod(fd, mode);
  if (::fsync(fd) != 0 || ::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string error = strerror(errno);
    ::unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot write ", path, ": ", error));
  }
  return absl::OkStatus();
}

}  // namespace kubestat
