// A small file system for disk-full tests: a 4 MiB tmpfs mounted on a directory for the
// object's life (unmounted by the destructor), and a filler file beside what the test keeps
// there to bring its free space down.
//
// Mounting needs root and mount permission; where it is refused mounted() is false and
// error() says why, for the test to skip with. Thread-compatible.
#ifndef KUBESTAT_TESTING_SMALL_VOLUME_H_
#define KUBESTAT_TESTING_SMALL_VOLUME_H_

#include <cstdint>
#include <filesystem>
#include <string>

namespace kubestat::testing {

class SmallVolume {
 public:
  // Creates `dir` if needed and mounts the tmpfs on it.
  explicit SmallVolume(std::filesystem::path dir);
  ~SmallVolume();
  SmallVolume(const SmallVolume&) = delete;
  SmallVolume& operator=(const SmallVolume&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  const std::filesystem::path& path() const { return dir_; }

  // Bytes free to this process (statvfs f_bavail); 0 when it cannot be read.
  uint64_t FreeBytes() const;
  // Grows the filler file until at most `leave` bytes (and a block) are free.
  void FillLeaving(uint64_t leave);
  // Removes the filler file.
  void Empty();

 private:
  std::filesystem::path dir_;
  bool mounted_ = false;
  std::string error_;
};

}  // namespace kubestat::testing

#endif  // KUBESTAT_TESTING_SMALL_VOLUME_H_
