#include "kubestat/core/thread.h"

#include <pthread.h>

#include <array>
#include <string>

namespace kubestat {

void NameThisThread(std::string_view name) {
  std::array<char, 16> buffer{};
  name = name.substr(0, buffer.size() - 1);
  name.copy(buffer.data(), name.size());
  (void)pthread_setname_np(pthread_self(), buffer.data());
}

std::string CurrentThreadName() {
  std::array<char, 16> buffer{};
  if (pthread_getname_np(pthread_self(), buffer.data(), buffer.size()) != 0) return "";
  return std::string(buffer.data());
}

}  // namespace kubestat
