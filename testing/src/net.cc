#include "kubestat/testing/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>

namespace kubestat::testing {

namespace {

// The kernel's range for ports bound to 0 and for the local end of outgoing connections.
void EphemeralRange(int* low, int* high) {
  *low = 32768;
  *high = 60999;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int l = 0, h = 0;
  if (range >> l >> h && l > 0 && h >= l) {
    *low = l;
    *high = h;
  }
}

// Whether nothing listens on or is connected from 127.0.0.1:`port` now.
bool Bindable(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

bool ReserveLoopbackPort(int port) {
  const char* dir = "/tmp/kubestat-test-ports";
  ::mkdir(dir, 01777);
  const std::string path = std::string(dir) + "/" + std::to_string(port);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return false;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return false;
  }
  return true;
}

int FreeLoopbackPort() {
  // Outside the ephemeral range, so that no port bound to 0 and no outgoing connection of
  // another test takes it between now and the server's bind; reserved, so that no other
  // test process picks it too.
  int low = 0, high = 0;
  EphemeralRange(&low, &high);
  int from = 10000, to = low - 1;
  if (to - from < 2000) {
    from = high + 1;
    to = 65535;
  }
  std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  std::uniform_int_distribution<int> pick(from, to);
  for (int attempt = 0; attempt < 2000; ++attempt) {
    const int port = pick(rng);
    if (ReserveLoopbackPort(port) && Bindable(port)) return port;
  }
  std::fprintf(stderr, "FreeLoopbackPort: no free port in %d-%d: %s\n", from, to,
               std::strerror(errno));
  std::abort();
}

int ListenOnLoopback(int backlog, int* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

}  // namespace kubestat::testing
