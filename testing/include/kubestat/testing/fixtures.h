// Locating ../shared/fixtures for tests that decode captured payloads or test vectors.
//
// The fixtures live beside the checkout (CI has them); a user's clone may not. A test that
// needs them starts with KUBESTAT_REQUIRE_FIXTURES(), which skips it with a clear message
// when the folder is absent.
#ifndef KUBESTAT_TESTING_FIXTURES_H_
#define KUBESTAT_TESTING_FIXTURES_H_

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>

namespace kubestat::testing {

// The fixtures folder: $KUBESTAT_FIXTURES if set, else ../shared/fixtures beside the
// source tree. std::nullopt when that folder does not exist.
std::optional<std::filesystem::path> FixturesDir();

// The whole content of `relative` under the fixtures folder. Fails the current test (and
// returns "") when the file cannot be read.
std::string ReadFixture(const std::string& relative);

// The message a skipped test prints.
std::string MissingFixturesMessage();

}  // namespace kubestat::testing

#define KUBESTAT_REQUIRE_FIXTURES()                                  \
  do {                                                               \
    if (!::kubestat::testing::FixturesDir()) {                       \
      GTEST_SKIP() << ::kubestat::testing::MissingFixturesMessage(); \
    }                                                                \
  } while (0)

#endif  // KUBESTAT_TESTING_FIXTURES_H_
