// The test support's loopback ports: outside the kernel's ephemeral range, and never handed
// to two test processes at once.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "kubestat/testing/net.h"

namespace kubestat::testing {
namespace {

TEST(FreeLoopbackPortTest, PortsAreOutsideTheEphemeralRangeAndDistinct) {
  int low = 32768, high = 60999;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> low >> high;
  std::set<int> ports;
  for (int i = 0; i < 50; ++i) {
    const int port = FreeLoopbackPort();
    EXPECT_TRUE(port < low || port > high) << port;
    EXPECT_TRUE(ports.insert(port).second) << port << " handed out twice";
  }
}

TEST(FreeLoopbackPortTest, AnotherProcessCannotTakeAPortThisOneHolds) {
  const int mine = FreeLoopbackPort();
  const int other = FreeLoopbackPort();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Exit code: 1 if it got the port the parent holds, 2 if it could not reserve a fresh one.
    int code = 0;
    if (ReserveLoopbackPort(mine)) code = 1;
    if (code == 0 && FreeLoopbackPort() == mine) code = 1;
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_NE(mine, other);
}

}  // namespace
}  // namespace kubestat::testing
