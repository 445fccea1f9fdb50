#include "kubestat/testing/files.h"

#include <fstream>
#include <random>
#include <sstream>

namespace kubestat::testing {

std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

namespace {

void Overwrite(const std::filesystem::path& path, uintmax_t offset, const std::string& bytes) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(static_cast<std::streamoff>(offset));
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

void Garble(const std::filesystem::path& path, uintmax_t offset, size_t bytes, uint32_t seed) {
  std::mt19937 random(seed);
  std::string garbage(bytes, '\0');
  for (char& c : garbage) c = static_cast<char>(random());
  Overwrite(path, offset, garbage);
}

void Garble(const std::filesystem::path& path, uintmax_t offset, size_t bytes, char value) {
  Overwrite(path, offset, std::string(bytes, value));
}

}  // namespace kubestat::testing
