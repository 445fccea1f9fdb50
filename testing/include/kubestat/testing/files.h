// Reading a file a test made or a program under test wrote.
#ifndef KUBESTAT_TESTING_FILES_H_
#define KUBESTAT_TESTING_FILES_H_

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace kubestat::testing {

// The whole content of the file at `path`, byte for byte; "" when it cannot be read (a
// missing log reads as empty, so a test can poll for a line in it).
std::string ReadAll(const std::filesystem::path& path);

// Overwrites `bytes` bytes of the file at `offset` with bytes drawn from a generator seeded
// with `seed` (`value`, when given, instead), as a bad disk or a torn write leaves it. The
// file keeps its size where the range ends inside it.
void Garble(const std::filesystem::path& path, uintmax_t offset, size_t bytes, uint32_t seed = 42);
void Garble(const std::filesystem::path& path, uintmax_t offset, size_t bytes, char value);

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTING_FILES_H_
