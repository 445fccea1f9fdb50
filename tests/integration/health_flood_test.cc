// kubestat-sim and kubestat-aggregator as real processes, the aggregator's health listener
// (--health-port, HTTPS, open without credentials) flooded from 127.0.0.2 with hundreds of
// connections that never finish a TLS handshake or never send a byte, each opened again as
// soon as the server closes it, while the probes come from 127.0.0.1 (as the kubelet's come
// from its node's address, not the flood's): every /livez and /readyz probe is answered 200,
// the metrics API stays fresh through kubectl, and the listener counts the connections it
// closed to make room. bench/scripts/health_flood.sh has the flood and the probes from one address.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat {
namespace {

using testing::FreeLoopbackPort;
using testing::PollUntil;
using testing::Process;
using testing::TempDir;
using testing::WaitForLog;

// Keeps `count` connections from 127.0.0.2 open to 127.0.0.1:port that stall: even ones
// send the first bytes of a TLS record and stop, odd ones send nothing. A connection the
// server closes is opened again on the next pass, until Stop().
class StalledConnectionFlood {
 public:
  StalledConnectionFlood(int port, int count) : port_(port), fds_(count, -1) {
    thread_ = std::thread([this] { Run(); });
  }
  ~StalledConnectionFlood() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (int& fd : fds_) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }
  long opened() const { return opened_; }

 private:
  void Run() {
    static constexpr unsigned char kRecordStart[] = {0x16, 0x03, 0x01, 0x02, 0x00};
    while (!stop_) {
      for (size_t i = 0; i < fds_.size() && !stop_; ++i) {
        int& fd = fds_[i];
        if (fd >= 0) {
          char byte;
          const ssize_t n = ::recv(fd, &byte, 1, MSG_DONTWAIT);
          if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            ::close(fd);
            fd = -1;
          }
          continue;
        }
        fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in from{};
        from.sin_family = AF_INET;
        from.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1);
        ::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from));
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<uint16_t>(port_));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
          ::close(fd);
          fd = -1;
          continue;
        }
        ++opened_;
        if (i % 2 == 0) ::send(fd, kRecordStart, sizeof(kRecordStart), MSG_NOSIGNAL);
      }
      // One pass over every slot, then the next: the flood reopens as fast as it is closed,
      // without spinning on a slot the server keeps open.
      std::this_thread::yield();
    }
  }

  const int port_;
  std::vector<int> fds_;
  std::atomic<bool> stop_{false};
  std::atomic<long> opened_{0};
  std::thread thread_;
};

TEST(HealthFloodTest, ProbesAreAnsweredAndTheApiStaysFreshWhileTheHealthPortIsFlooded) {
  if (!testing::FindOnPath("kubectl")) GTEST_SKIP() << "kubectl is not installed; skipping";
  TempDir scratch("kubestat-health-flood-it");
  const std::filesystem::path& dir = scratch.path();
  const int port = FreeLoopbackPort();
  const int health_port = FreeLoopbackPort();
  std::vector<std::string> sim_flags = testing::SimFlags(dir, 3, 5, FreeLoopbackPort());
  sim_flags.push_back("--metrics-backend=http://127.0.0.1:" + std::to_string(port));
  Process sim(KUBESTAT_SIM_BINARY, sim_flags, dir / "sim.log");
  ASSERT_TRUE(WaitForLog(dir / "sim.log", "READY", std::chrono::seconds(60)));
  Process aggregator(KUBESTAT_AGGREGATOR_BINARY,
                     testing::SimAggregatorFlags(dir, port, dir / "store", "1s", "500ms",
                                                 {"--health-port=" + std::to_string(health_port)}),
                     dir / "aggregator.log");
  auto probe = [&](const std::string& path) {
    const std::optional<testing::HttpReply> reply = testing::HttpsGetReply(health_port, path);
    return reply ? reply->code : 0;
  };
  ASSERT_TRUE(PollUntil([&] { return probe("/readyz") == 200; }, std::chrono::seconds(60)))
      << testing::ReadAll((dir / "aggregator.log").string());

  {
    StalledConnectionFlood flood(health_port, 400);
    ASSERT_TRUE(PollUntil([&] { return flood.opened() >= 400; }, std::chrono::seconds(60)));
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(probe("/livez"), 200) << "probe " << i;
      EXPECT_EQ(probe("/readyz"), 200) << "probe " << i;
    }
    EXPECT_TRUE(testing::ServesFreshThroughKubectl(dir, std::chrono::seconds(30)))
        << "the metrics API did not serve a fresh scrape during the flood";
    flood.Stop();
  }
  const std::string metrics = testing::HttpGet(port, "/metrics").value_or("");
  EXPECT_GT(testing::MetricValue(metrics,
                                 "kubestat_http_connections_total{listener=\"health\","
                                 "result=\"evicted\",server=\"secure\"}"),
            0)
      << metrics;
  EXPECT_EQ(testing::MetricValue(metrics,
                                 "kubestat_http_connections_total{listener=\"health\","
                                 "result=\"over_capacity\",server=\"secure\"}"),
            0);
}

}  // namespace
}  // namespace kubestat
