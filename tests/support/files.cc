#include "support/files.h"

#include <fstream>
#include <sstream>

namespace kubestat::testing {

std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

}  // namespace kubestat::testing
