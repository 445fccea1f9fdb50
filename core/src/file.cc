#include "kubestat/core/file.h"

#include <cerrno>
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

}  // namespace kubestat
