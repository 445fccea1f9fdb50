// The aggregator's TLS as a scanner nobody here wrote sees it: sslscan (Debian package)
// connects with every protocol and cipher suite it knows, and may find only TLS 1.2 and
// 1.3, key exchange by elliptic-curve Diffie-Hellman, and AEAD ciphers.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat {
namespace {

using testing::FindOnPath;
using testing::FreeLoopbackPort;
using testing::HttpsGetReply;
using testing::PollUntil;
using testing::Process;
using testing::ReadAll;
using testing::RunResult;
using testing::TempDir;

TEST(SslscanTest, OnlyTls12And13WithEcdheAndAeadAreAccepted) {
  std::optional<std::string> sslscan = FindOnPath("sslscan");
  if (!sslscan) GTEST_SKIP() << "sslscan is not installed (Debian package `sslscan`); skipping";
  TempDir dir("kubestat-sslscan");
  const int port = FreeLoopbackPort();
  ASSERT_GT(port, 0);
  std::ofstream(dir.path() / "tokens.csv") << "scan-token,scanner,1\n";
  std::ofstream(dir.path() / "rules.yaml") << "rules: []\n";
  // No kubelet answers at this address: the server is what is scanned.
  Process aggregator(
      KUBESTAT_AGGREGATOR_BINARY,
      {"--static-nodes=node-a=127.0.0.1:1", "--kubelet-scheme=http", "--listen-address=127.0.0.1",
       "--secure-port=" + std::to_string(port), "--cert-dir=" + (dir.path() / "certs").string(),
       "--token-auth-file=" + (dir.path() / "tokens.csv").string(),
       "--authorization-rules-file=" + (dir.path() / "rules.yaml").string(), "--grpc-port=0",
       "--storage-dir=" + (dir.path() / "store").string()},
      dir.path() / "aggregator.log");
  ASSERT_TRUE(PollUntil(
      [&] {
        std::optional<testing::HttpReply> reply = HttpsGetReply(port, "/healthz");
        return reply && reply->code == 200;
      },
      std::chrono::seconds(30)))
      << ReadAll(dir.path() / "aggregator.log");

  RunResult scan = testing::Run(*sslscan, {"--no-colour", "127.0.0.1:" + std::to_string(port)},
                                dir.path() / "sslscan.log", std::chrono::seconds(120));
  ASSERT_EQ(scan.exit_code, 0) << scan.output;
  // Protocols.
  for (const char* line : {"SSLv2     disabled", "SSLv3     disabled", "TLSv1.0   disabled",
                           "TLSv1.1   disabled", "TLSv1.2   enabled", "TLSv1.3   enabled"}) {
    EXPECT_NE(scan.output.find(line), std::string::npos) << line << "\n" << scan.output;
  }
  // Every accepted suite: "Accepted  TLSv1.2  256 bits  ECDHE-RSA-AES256-GCM-SHA384 Curve 25519 DHE
  // 253"
  static const std::regex kSuite(R"((Preferred|Accepted)\s+(\S+)\s+\d+ bits\s+(\S+)\s*(.*))");
  std::istringstream lines(scan.output);
  std::string line;
  int tls12 = 0;
  int tls13 = 0;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, kSuite)) continue;
    const std::string protocol = m[2];
    const std::string cipher = m[3];
    const std::string exchange = m[4];
    if (protocol == "TLSv1.3") {
      ++tls13;
      EXPECT_TRUE(cipher == "TLS_AES_128_GCM_SHA256" || cipher == "TLS_AES_256_GCM_SHA384" ||
                  cipher == "TLS_CHACHA20_POLY1305_SHA256")
          << line;
    } else {
      ++tls12;
      EXPECT_EQ(protocol, "TLSv1.2") << line;
      EXPECT_EQ(cipher.rfind("ECDHE-", 0), 0u) << line;
      EXPECT_TRUE(cipher.find("GCM") != std::string::npos ||
                  cipher.find("CHACHA20-POLY1305") != std::string::npos)
          << line;
    }
    // The key exchange is on an elliptic curve, never finite-field DHE.
    EXPECT_TRUE(exchange.find("Curve") != std::string::npos ||
                exchange.find("P-") != std::string::npos)
        << line;
  }
  EXPECT_GT(tls12, 0) << scan.output;
  EXPECT_GT(tls13, 0) << scan.output;
  // Key exchange groups: no finite-field group is offered.
  EXPECT_EQ(scan.output.find("ffdhe"), std::string::npos) << scan.output;
  EXPECT_NE(scan.output.find("Session renegotiation not supported"), std::string::npos)
      << scan.output;
}

}  // namespace
}  // namespace kubestat
