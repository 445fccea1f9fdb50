// Reading a file a test made or a program under test wrote.
#ifndef KUBESTAT_TESTS_SUPPORT_FILES_H_
#define KUBESTAT_TESTS_SUPPORT_FILES_H_

#include <filesystem>
#include <string>

namespace kubestat::testing {

// The whole content of the file at `path`, byte for byte; "" when it cannot be read (a
// missing log reads as empty, so a test can poll for a line in it).
std::string ReadAll(const std::filesystem::path& path);

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTS_SUPPORT_FILES_H_
