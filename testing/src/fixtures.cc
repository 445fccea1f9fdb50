#include "kubestat/testing/fixtures.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace kubestat::testing {
namespace {

std::filesystem::path CandidateDir() {
  if (const char* env = std::getenv("KUBESTAT_FIXTURES"); env != nullptr && *env != '\0') {
    return env;
  }
  return KUBESTAT_DEFAULT_FIXTURES_DIR;
}

}  // namespace

std::optional<std::filesystem::path> FixturesDir() {
  std::filesystem::path dir = CandidateDir();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return std::nullopt;
  return std::filesystem::canonical(dir, ec);
}

std::string MissingFixturesMessage() {
  return "shared fixtures not found at " + CandidateDir().string() +
         " (put the shared/ folder beside the checkout, or set KUBESTAT_FIXTURES); skipping";
}

std::string ReadFixture(const std::string& relative) {
  auto dir = FixturesDir();
  if (!dir) {
    ADD_FAILURE() << MissingFixturesMessage();
    return "";
  }
  std::ifstream in(*dir / relative, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "cannot read fixture " << (*dir / relative).string();
    return "";
  }
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace kubestat::testing
