// kubestat::http::Server over TLS on loopback, driven by an OpenSSL client: protocol
// versions and suites, client certificates against named CA bundles, certificate files
// re-read on change, the self-signed pair in a cert dir.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "kubestat/core/clock.h"
#include "kubestat/http/server.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"
#include "kubestat/testing/test_pki.h"
#include "prometheus/registry.h"

namespace kubestat::http {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::PollUntil;
using testing::ReadAll;
using testing::TempDir;
using testing::TestKeyType;
using testing::TestPki;

struct ClientSettings {
  int min_version = TLS1_2_VERSION;
  int max_version = 0;            // 0 = highest
  std::string cipher_list;        // TLS 1.2 and below; empty = OpenSSL's default
  bool security_level_0 = false;  // let the client offer what modern defaults forbid
  std::string cert_pem;
  std::string key_pem;
};

struct TlsOutcome {
  bool handshake = false;
  int version = 0;
  std::string cipher;
  std::string served_cn;  // CN of the certificate the server presented
  int code = 0;
  std::string body;
};

std::string SubjectCn(X509* cert) {
  char cn[256] = {0};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn));
  return cn;
}

// One TLS connection to 127.0.0.1:port: handshake, then GET `path` with Connection: close
// (when the handshake succeeded). Reads give up after 20 s.
TlsOutcome TlsGet(int port, const std::string& path, const ClientSettings& settings) {
  // OpenSSL writes to the socket with write(2): a server that closes first must not kill
  // the test with SIGPIPE.
  static const bool sigpipe_ignored = [] { return std::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();
  (void)sigpipe_ignored;
  TlsOutcome outcome;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_min_proto_version(ctx, settings.min_version);
  if (settings.max_version != 0) SSL_CTX_set_max_proto_version(ctx, settings.max_version);
  if (settings.security_level_0) SSL_CTX_set_security_level(ctx, 0);
  if (!settings.cipher_list.empty()) SSL_CTX_set_cipher_list(ctx, settings.cipher_list.c_str());
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  if (!settings.cert_pem.empty()) {
    BIO* cert_bio =
        BIO_new_mem_buf(settings.cert_pem.data(), static_cast<int>(settings.cert_pem.size()));
    X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
    BIO* key_bio =
        BIO_new_mem_buf(settings.key_pem.data(), static_cast<int>(settings.key_pem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
    SSL_CTX_use_certificate(ctx, cert);
    SSL_CTX_use_PrivateKey(ctx, key);
    X509_free(cert);
    EVP_PKEY_free(key);
    BIO_free(cert_bio);
    BIO_free(key_bio);
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval timeout{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  SSL* ssl = nullptr;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    outcome.handshake = SSL_connect(ssl) == 1;
  }
  if (outcome.handshake) {
    outcome.version = SSL_version(ssl);
    outcome.cipher = SSL_get_cipher_name(ssl);
    if (X509* served = SSL_get1_peer_certificate(ssl)) {
      outcome.served_cn = SubjectCn(served);
      X509_free(served);
    }
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
    SSL_write(ssl, request.data(), static_cast<int>(request.size()));
    std::string response;
    char buf[16384];
    int n;
    while ((n = SSL_read(ssl, buf, sizeof(buf))) > 0) response.append(buf, static_cast<size_t>(n));
    if (response.size() > 12) outcome.code = std::stoi(response.substr(9, 3));
    const size_t head_end = response.find("\r\n\r\n");
    if (head_end != std::string::npos) outcome.body = response.substr(head_end + 4);
  }
  if (ssl != nullptr) SSL_free(ssl);
  ::close(fd);
  SSL_CTX_free(ctx);
  ERR_clear_error();
  return outcome;
}

// Answers with what the server knew of the client's certificate.
Response DescribePeer(const Request& request) {
  Response response;
  response.content_type = "text/plain";
  if (request.peer_certificate == nullptr) {
    response.body = "no certificate";
    return response;
  }
  const PeerCertificate& peer = *request.peer_certificate;
  std::string verified, orgs;
  for (const std::string& name : peer.verified_by) verified += (verified.empty() ? "" : ",") + name;
  for (const std::string& org : peer.organizations) orgs += (orgs.empty() ? "" : ",") + org;
  response.body = "verified_by=" + verified + ";cn=" + peer.common_name + ";o=" + orgs;
  return response;
}

class ServerTlsTest : public ::testing::Test {
 protected:
  ServerTlsTest() : server_ca_("server-ca"), ca_a_("ca-a"), ca_b_("ca-b"), stranger_("stranger") {}

  // A serving pair named `cn` written to server.crt / server.key.
  void WriteServingPair(const std::string& cn) {
    testing::TestCertificate pair =
        server_ca_.IssueServer(cn, {"DNS:localhost", "IP:127.0.0.1"}, TestKeyType::kRsa2048);
    cert_file_ = dir_.Write("server.crt", pair.cert_pem);
    key_file_ = dir_.Write("server.key", pair.key_pem);
  }

  ServerOptions Options() {
    ServerOptions options;
    options.address = "127.0.0.1";
    options.io_threads = 1;
    options.worker_threads = 1;
    options.tls.cert_file = cert_file_;
    options.tls.key_file = key_file_;
    options.tls.client_cas = {{"A", dir_.Write("a.pem", ca_a_.ca_pem())},
                              {"B", dir_.Write("b.pem", ca_b_.ca_pem())}};
    return options;
  }

  void Start(ServerOptions options, const Clock& clock = RealClock::Get()) {
    server_ = std::make_unique<Server>(std::move(options), DescribePeer, registry_, clock);
    absl::Status started = server_->Start();
    ASSERT_TRUE(started.ok()) << started;
  }

  double HandshakeFailures() {
    for (const prometheus::MetricFamily& family : registry_.Collect()) {
      if (family.name != "kubestat_http_connections_total") continue;
      for (const prometheus::ClientMetric& metric : family.metric) {
        for (const auto& label : metric.label) {
          if (label.name == "result" && label.value == "tls_handshake_failed") {
            return metric.counter.value;
          }
        }
      }
    }
    return -1;
  }

  TempDir dir_;
  TestPki server_ca_;
  TestPki ca_a_;
  TestPki ca_b_;
  TestPki stranger_;
  std::string cert_file_;
  std::string key_file_;
  prometheus::Registry registry_;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerTlsTest, Tls12WithAnEcdheAeadSuiteIsServed) {
  WriteServingPair("server-1");
  Start(Options());
  EXPECT_EQ(server_->BaseUrl(), "https://127.0.0.1:" + std::to_string(server_->port()));
  ClientSettings client;
  client.max_version = TLS1_2_VERSION;
  client.cipher_list = "ECDHE-RSA-AES128-GCM-SHA256";
  TlsOutcome outcome = TlsGet(server_->port(), "/x", client);
  ASSERT_TRUE(outcome.handshake);
  EXPECT_EQ(outcome.version, TLS1_2_VERSION);
  EXPECT_EQ(outcome.cipher, "ECDHE-RSA-AES128-GCM-SHA256");
  EXPECT_EQ(outcome.code, 200);
  EXPECT_EQ(outcome.body, "no certificate");
  client.cipher_list = "ECDHE-RSA-CHACHA20-POLY1305";
  EXPECT_TRUE(TlsGet(server_->port(), "/x", client).handshake);
}

TEST_F(ServerTlsTest, Tls13IsServed) {
  WriteServingPair("server-1");
  Start(Options());
  ClientSettings client;
  client.min_version = TLS1_3_VERSION;
  TlsOutcome outcome = TlsGet(server_->port(), "/x", client);
  ASSERT_TRUE(outcome.handshake);
  EXPECT_EQ(outcome.version, TLS1_3_VERSION);
  EXPECT_EQ(outcome.code, 200);
}

TEST_F(ServerTlsTest, Tls11IsRefused) {
  WriteServingPair("server-1");
  Start(Options());
  ClientSettings client;
  client.min_version = TLS1_1_VERSION;
  client.max_version = TLS1_1_VERSION;
  client.security_level_0 = true;
  client.cipher_list = "ECDHE-RSA-AES128-SHA:AES128-SHA:@SECLEVEL=0";
  EXPECT_FALSE(TlsGet(server_->port(), "/x", client).handshake);
  // The server counts the failure after sending its alert: wait for the count.
  const bool counted =
      PollUntil([&] { return HandshakeFailures() == 1; }, std::chrono::seconds(20));
  EXPECT_TRUE(counted);
}

TEST_F(ServerTlsTest, SuitesWithoutEcdheOrWithoutAeadAreRefused) {
  WriteServingPair("server-1");  // RSA: the server could use these suites if it allowed them
  Start(Options());
  ClientSettings client;
  client.max_version = TLS1_2_VERSION;
  for (const char* suite : {"AES128-GCM-SHA256", "DHE-RSA-AES128-GCM-SHA256",
                            "ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA384"}) {
    client.cipher_list = suite;
    EXPECT_FALSE(TlsGet(server_->port(), "/x", client).handshake) << suite;
  }
}

TEST_F(ServerTlsTest, ConfiguredSuitesRestrictTls12) {
  WriteServingPair("server-1");
  ServerOptions options = Options();
  options.tls.cipher_suites = {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"};
  Start(options);
  ClientSettings client;
  client.max_version = TLS1_2_VERSION;
  client.cipher_list = "ECDHE-RSA-AES128-GCM-SHA256";
  EXPECT_FALSE(TlsGet(server_->port(), "/x", client).handshake);
  client.cipher_list = "ECDHE-RSA-AES256-GCM-SHA384";
  EXPECT_TRUE(TlsGet(server_->port(), "/x", client).handshake);
}

TEST_F(ServerTlsTest, ClientCertificateFromCaAIsVerifiedByAWithItsNames) {
  WriteServingPair("server-1");
  Start(Options());
  testing::TestCertificate alice = ca_a_.IssueClient("alice", {"system:masters", "team-a"});
  ClientSettings client;
  client.cert_pem = alice.cert_pem;
  client.key_pem = alice.key_pem;
  for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    client.min_version = client.max_version = version;
    TlsOutcome outcome = TlsGet(server_->port(), "/whoami", client);
    ASSERT_TRUE(outcome.handshake);
    EXPECT_EQ(outcome.body, "verified_by=A;cn=alice;o=system:masters,team-a") << version;
  }
  testing::TestCertificate bob = ca_b_.IssueClient("bob", {});
  client.cert_pem = bob.cert_pem;
  client.key_pem = bob.key_pem;
  EXPECT_EQ(TlsGet(server_->port(), "/whoami", client).body, "verified_by=B;cn=bob;o=");
}

TEST_F(ServerTlsTest, ClientCertificateFromAnUnknownCaGivesNoIdentity) {
  WriteServingPair("server-1");
  Start(Options());
  testing::TestCertificate mallory = stranger_.IssueClient("admin", {"system:masters"});
  ClientSettings client;
  client.cert_pem = mallory.cert_pem;
  client.key_pem = mallory.key_pem;
  TlsOutcome outcome = TlsGet(server_->port(), "/whoami", client);
  ASSERT_TRUE(outcome.handshake);  // requested, not required: the connection proceeds
  EXPECT_EQ(outcome.body, "verified_by=;cn=;o=");
  // A serving certificate of a trusted CA is not a client certificate.
  testing::TestCertificate server_only = ca_a_.IssueServer("not-a-client", {"DNS:x"});
  client.cert_pem = server_only.cert_pem;
  client.key_pem = server_only.key_pem;
  EXPECT_EQ(TlsGet(server_->port(), "/whoami", client).body, "verified_by=;cn=;o=");
}

TEST_F(ServerTlsTest, ReplacedCertificateFilesAreServedOnTheNextHandshake) {
  FakeClock clock;
  WriteServingPair("server-1");
  Start(Options(), clock);
  EXPECT_EQ(TlsGet(server_->port(), "/", ClientSettings{}).served_cn, "server-1");

  WriteServingPair("server-2");
  clock.Advance(std::chrono::seconds(2));
  EXPECT_EQ(TlsGet(server_->port(), "/", ClientSettings{}).served_cn, "server-2");

  // A broken pair keeps the previous one.
  dir_.Write("server.crt", "not a certificate");
  clock.Advance(std::chrono::seconds(2));
  TlsOutcome kept = TlsGet(server_->port(), "/", ClientSettings{});
  EXPECT_TRUE(kept.handshake);
  EXPECT_EQ(kept.served_cn, "server-2");

  WriteServingPair("server-3");
  // Within a second of the last check nothing is looked at.
  EXPECT_EQ(TlsGet(server_->port(), "/", ClientSettings{}).served_cn, "server-2");
  clock.Advance(std::chrono::seconds(2));
  EXPECT_EQ(TlsGet(server_->port(), "/", ClientSettings{}).served_cn, "server-3");
}

TEST_F(ServerTlsTest, SelfSignedPairIsCreatedInTheCertDirAndReused) {
  const std::string cert_dir = dir_.File("certs");
  ServerOptions options;
  options.address = "127.0.0.1";
  options.tls.cert_dir = cert_dir;
  options.tls.self_signed_hosts = {"metrics.example", "10.1.2.3"};
  Start(options);
  const std::string cert_path = cert_dir + "/apiserver.crt";
  const std::string key_path = cert_dir + "/apiserver.key";
  struct stat key_stat;
  ASSERT_EQ(::stat(key_path.c_str(), &key_stat), 0);
  EXPECT_EQ(key_stat.st_mode & 0777, 0600);
  const std::string pem = ReadAll(cert_path);
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  ASSERT_NE(cert, nullptr);
  EXPECT_EQ(X509_check_host(cert, "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(cert, "metrics.example", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(cert, "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(cert, "::1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(cert, "10.1.2.3", 0), 1);
  const std::string served_cn = SubjectCn(cert);
  X509_free(cert);
  TlsOutcome outcome = TlsGet(server_->port(), "/", ClientSettings{});
  ASSERT_TRUE(outcome.handshake);
  EXPECT_EQ(outcome.served_cn, served_cn);
  server_->Stop();

  // A second start finds the pair and keeps it.
  const std::string key_before = ReadAll(key_path);
  prometheus::Registry registry;
  Server again(options, DescribePeer, registry, RealClock::Get());
  ASSERT_TRUE(again.Start().ok());
  EXPECT_EQ(ReadAll(cert_path), pem);
  EXPECT_EQ(ReadAll(key_path), key_before);
  EXPECT_EQ(TlsGet(again.port(), "/", ClientSettings{}).served_cn, served_cn);
}

TEST_F(ServerTlsTest, OverTheCapATlsConnectionIsClosedWithoutAHandshake) {
  WriteServingPair("server-1");
  ServerOptions options = Options();
  options.limits.max_connections = 1;
  Start(options);
  const int held = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(held, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  // Wait until the server has taken the held connection (its gauge says so).
  const bool counted = PollUntil(
      [&] {
        bool taken = false;
        for (const prometheus::MetricFamily& family : registry_.Collect()) {
          if (family.name != "kubestat_http_open_connections") continue;
          for (const auto& metric : family.metric) {
            for (const auto& label : metric.label) {
              taken = taken || (label.value == "main" && metric.gauge.value == 1);
            }
          }
        }
        return taken;
      },
      std::chrono::seconds(20));
  ASSERT_TRUE(counted);
  EXPECT_FALSE(TlsGet(server_->port(), "/", ClientSettings{}).handshake);
  ::close(held);
}

TEST(ServerTlsStartTest, AMissingKeyFileFailsStartNamingIt) {
  prometheus::Registry registry;
  ServerOptions options;
  options.address = "127.0.0.1";
  options.tls.cert_file = "/nonexistent/server.crt";
  options.tls.key_file = "/nonexistent/server.key";
  Server server(options, DescribePeer, registry, RealClock::Get());
  absl::Status status = server.Start();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(status.message()), HasSubstr("/nonexistent/server.crt"));
}

}  // namespace
}  // namespace kubestat::http
