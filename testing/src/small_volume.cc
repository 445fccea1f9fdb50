#include "kubestat/testing/small_volume.h"

#include <sys/mount.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

namespace kubestat::testing {

SmallVolume::SmallVolume(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::filesystem::create_directories(dir_);
  mounted_ = mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=4m") == 0;
  if (!mounted_) error_ = std::strerror(errno);
}

SmallVolume::~SmallVolume() {
  if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
}

uint64_t SmallVolume::FreeBytes() const {
  struct statvfs fs {};
  if (statvfs(dir_.c_str(), &fs) != 0) return 0;
  return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
}

void SmallVolume::FillLeaving(uint64_t leave) {
  std::ofstream filler(dir_ / "filler", std::ios::binary | std::ios::app);
  const std::string block(4096, 'x');
  while (FreeBytes() > leave + block.size()) {
    filler.write(block.data(), static_cast<std::streamsize>(block.size()));
    filler.flush();
    if (!filler) return;
  }
}

void SmallVolume::Empty() { std::filesystem::remove(dir_ / "filler"); }

}  // namespace kubestat::testing
