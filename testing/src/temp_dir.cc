#include "kubestat/testing/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <system_error>

namespace kubestat::testing {

TempDir::TempDir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::fprintf(stderr, "TempDir: cannot make %s: %s\n", pattern.c_str(), std::strerror(errno));
    std::abort();
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::File(const std::string& name) const { return (path_ / name).string(); }

std::string TempDir::Write(const std::string& name, const std::string& contents) const {
  const std::filesystem::path file = path_ / name;
  const std::filesystem::path tmp = file.string() + ".writing";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << contents;
  }
  std::filesystem::rename(tmp, file);
  return file.string();
}

}  // namespace kubestat::testing
