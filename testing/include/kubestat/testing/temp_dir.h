// A scratch directory for one test: made fresh under the system temp dir and removed, with
// everything in it, when the object is destroyed.
//
// Each object owns a directory no other object has (mkdtemp), so tests that run in
// parallel never share one. A directory that cannot be made is a broken test setup: the
// constructor aborts the test binary with a message. Thread-compatible.
#ifndef KUBESTAT_TESTING_TEMP_DIR_H_
#define KUBESTAT_TESTING_TEMP_DIR_H_

#include <filesystem>
#include <string>

namespace kubestat::testing {

class TempDir {
 public:
  // Makes <system temp dir>/<prefix>-XXXXXX (the X's unique).
  explicit TempDir(const std::string& prefix = "kubestat-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The directory, absolute.
  const std::filesystem::path& path() const { return path_; }

  // The path of `name` inside the directory (nothing is created).
  std::string File(const std::string& name) const;

  // Writes `contents` to <path>/<name> (replacing it through a rename, so a reader sees
  // the old or the new file, never half of one) and returns the file's path.
  std::string Write(const std::string& name, const std::string& contents) const;

 private:
  std::filesystem::path path_;
};

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTING_TEMP_DIR_H_
