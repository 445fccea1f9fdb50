// cpprestsdk's U() macro collides with GoogleTest's template parameters.
#define _TURN_OFF_PLATFORM_STRING
#include "kubestat/scrapers/kubelet_client.h"

#include <cpprest/http_listener.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/ssl.hpp>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kubestat/scrapers/fetch_error.h"
#include "kubestat/scrapers/summary_decoder.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/temp_dir.h"
#include "kubestat/testing/test_pki.h"

namespace kubestat::scrapers {
namespace {

using testing::FreeLoopbackPort;
using testing::TempDir;
using testing::TestCertificate;
using testing::TestPki;
using web::http::http_request;
using web::http::status_codes;

constexpr char kSummary[] =
    R"({"node":{"nodeName":"node-a","systemContainers":[],"startTime":"2026-11-21T09:00:00Z"},)"
    R"("pods":[{"podRef":{"name":"web-1","namespace":"shop","uid":"u1"},"containers":[)"
    R"({"name":"app","cpu":{"time":"2026-11-21T10:00:00Z","usageCoreNanoSeconds":42},)"
    R"("memory":{"time":"2026-11-21T10:00:00Z","workingSetBytes":1024}}]}]})";

// A fake kubelet on loopback: each request goes to `handler`, which answers it whole.
class FakeKubelet {
 public:
  using Handler = std::function<void(http_request)>;

  explicit FakeKubelet(Handler handler, const TestCertificate* tls = nullptr)
      : port_(FreeLoopbackPort()), handler_(std::move(handler)) {
    web::http::experimental::listener::http_listener_config config;
    std::string scheme = "http";
    if (tls != nullptr) {
      scheme = "https";
      auto material = *tls;
      config.set_ssl_context_callback([material](boost::asio::ssl::context& ctx) {
        ctx.use_certificate_chain(boost::asio::buffer(material.cert_pem));
        ctx.use_private_key(boost::asio::buffer(material.key_pem), boost::asio::ssl::context::pem);
      });
    }
    listener_ = std::make_unique<web::http::experimental::listener::http_listener>(
        scheme + "://127.0.0.1:" + std::to_string(port_), config);
    listener_->support([this](http_request request) {
      ++requests_;
      {
        std::lock_guard<std::mutex> lock(mu_);
        authorizations_.push_back(
            request.headers().has("Authorization") ? request.headers()["Authorization"] : "");
        paths_.push_back(request.request_uri().to_string());
      }
      handler_(request);
    });
    listener_->open().wait();
  }
  ~FakeKubelet() { listener_->close().wait(); }

  ScrapeTarget Target() const { return ScrapeTarget{"node-a", "127.0.0.1", port_}; }
  std::vector<std::string> authorizations() const {
    std::lock_guard<std::mutex> lock(mu_);
    return authorizations_;
  }
  std::vector<std::string> paths() const {
    std::lock_guard<std::mutex> lock(mu_);
    return paths_;
  }

 private:
  int port_;
  Handler handler_;
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
  std::atomic<int> requests_{0};
  mutable std::mutex mu_;
  std::vector<std::string> authorizations_;
  std::vector<std::string> paths_;
};

// A kubelet that stalls: on loopback, it reads each connection's request head, sends
// `prefix` (nothing, or the start of an answer) and then neither sends more nor closes
// until it is destroyed. A plain socket peer, not cpprest's http_listener: that listener
// crashes when it is closed while a reply it is still writing from a stream is pending.
class StalledKubelet {
 public:
  explicit StalledKubelet(std::string prefix) : prefix_(std::move(prefix)) {
    listen_fd_ = testing::ListenOnLoopback(8, &port_);
    EXPECT_GE(listen_fd_, 0);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  ~StalledKubelet() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Wakes the blocked accept(), recv()s and send()s; their threads then end.
      ::shutdown(listen_fd_, SHUT_RDWR);
      for (int fd : connections_) ::shutdown(fd, SHUT_RDWR);
      closing_ = true;
    }
    closed_.notify_all();
    acceptor_.join();
    for (std::thread& thread : threads_) thread.join();
    for (int fd : connections_) ::close(fd);
    ::close(listen_fd_);
  }

  ScrapeTarget Target() const { return ScrapeTarget{"node-a", "127.0.0.1", port_}; }
  // The request heads received so far.
  int requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void AcceptLoop() {
    while (true) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      std::lock_guard<std::mutex> lock(mu_);
      connections_.push_back(fd);
      if (closing_) return;  // the destructor closes it with the rest
      threads_.emplace_back([this, fd] { Serve(fd); });
    }
  }
  void Serve(int fd) {
    std::string head;
    char buf[4096];
    while (head.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return;
      head.append(buf, static_cast<size_t>(n));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++requests_;
    }
    size_t sent = 0;
    while (sent < prefix_.size()) {
      const ssize_t n = ::send(fd, prefix_.data() + sent, prefix_.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;  // the client went away (or the destructor shut the socket)
      sent += static_cast<size_t>(n);
    }
    std::unique_lock<std::mutex> lock(mu_);
    closed_.wait(lock, [this] { return closing_; });
  }

  const std::string prefix_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::condition_variable closed_;
  bool closing_ = false;
  int requests_ = 0;
  std::vector<int> connections_;
  std::vector<std::thread> threads_;
};

void ReplySummary(http_request request) {
  request.reply(status_codes::OK, std::string(kSummary), "application/json");
}

KubeletClientOptions PlainOptions() {
  KubeletClientOptions options;
  options.scheme = "http";
  options.timeout = std::chrono::seconds(10);
  return options;
}

std::unique_ptr<KubeletClient> MakeClient(KubeletClientOptions options) {
  auto client = KubeletClient::Create(std::move(options));
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

TEST(KubeletClientTest, ScrapesSummaryWithCpuAndMemoryOnlyAndDecodesIt) {
  FakeKubelet kubelet(ReplySummary);
  auto client = MakeClient(PlainOptions());
  KubeletScraper scraper(*client, RealClock::Get());
  absl::StatusOr<NodeScrape> scrape = scraper.Scrape(kubelet.Target());
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(scrape->node_name, "node-a");
  ASSERT_EQ(scrape->pods.size(), 1u);
  ASSERT_EQ(scrape->pods[0].containers.size(), 1u);
  EXPECT_EQ(scrape->pods[0].containers[0].cpu->usage_core_nanoseconds, 42u);
  EXPECT_EQ(scrape->pods[0].containers[0].memory->working_set_bytes, 1024u);
  EXPECT_EQ(kubelet.paths(), std::vector<std::string>{"/stats/summary?only_cpu_and_memory=true"});
  EXPECT_EQ(kubelet.authorizations(), std::vector<std::string>{""});
}

TEST(KubeletClientTest, ResourceEndpointFetchesMetricsResourceAndUsesTargetNodeName) {
  FakeKubelet kubelet([](http_request request) {
    request.reply(status_codes::OK,
                  std::string("container_memory_working_set_bytes{container=\"app\",namespace="
                              "\"shop\",pod=\"web-1\"} 2048 1700000000000\n"),
                  "text/plain");
  });
  KubeletClientOptions options = PlainOptions();
  options.endpoint = KubeletEndpoint::kResourceMetrics;
  auto client = MakeClient(options);
  KubeletScraper scraper(*client, RealClock::Get());
  absl::StatusOr<NodeScrape> scrape = scraper.Scrape(kubelet.Target());
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(scrape->node_name, "node-a");
  ASSERT_EQ(scrape->pods.size(), 1u);
  EXPECT_EQ(scrape->pods[0].containers[0].memory->working_set_bytes, 2048u);
  EXPECT_EQ(kubelet.paths(), std::vector<std::string>{"/metrics/resource"});
}

TEST(KubeletClientTest, FetchPathGetsAnotherPathOfTheNodeWithTheSameClient) {
  std::string accept;
  FakeKubelet agent([&accept](http_request request) {
    accept = request.headers().has("Accept") ? request.headers()["Accept"] : "";
    request.reply(status_codes::OK, std::string("{}"), "application/json");
  });
  auto client = MakeClient(PlainOptions());
  absl::StatusOr<KubeletResponse> response =
      client->FetchPath(agent.Target(), "/podresources", "application/json");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->body, "{}");
  EXPECT_EQ(agent.paths(), std::vector<std::string>{"/podresources"});
  EXPECT_EQ(accept, "application/json");
}

TEST(KubeletClientTest, SendsBearerTokenAndRereadsTheFileWhenItChanges) {
  TempDir dir;
  std::string token_file = dir.Write("token", "first-token\n");
  FakeKubelet kubelet(ReplySummary);
  KubeletClientOptions options = PlainOptions();
  options.token_file = token_file;
  auto client = MakeClient(options);
  ASSERT_TRUE(client->Fetch(kubelet.Target()).ok());
  ASSERT_TRUE(client->Fetch(kubelet.Target()).ok());
  // Rotation as the kubelet does it: a new file renamed over the old one.
  std::string rotated = dir.Write("token.new", "second-token");
  std::filesystem::rename(rotated, token_file);
  ASSERT_TRUE(client->Fetch(kubelet.Target()).ok());
  EXPECT_EQ(kubelet.authorizations(),
            (std::vector<std::string>{"Bearer first-token", "Bearer first-token",
                                      "Bearer second-token"}));
}

TEST(KubeletClientTest, WrongTokenIsUnauthenticatedWithReasonHttp401) {
  TempDir dir;
  FakeKubelet kubelet([](http_request request) {
    if (request.headers()["Authorization"] == "Bearer right") {
      ReplySummary(request);
    } else {
      request.reply(status_codes::Unauthorized, std::string("Unauthorized"));
    }
  });
  KubeletClientOptions options = PlainOptions();
  options.token_file = dir.Write("token", "wrong");
  auto client = MakeClient(options);
  absl::StatusOr<KubeletResponse> response = client->Fetch(kubelet.Target());
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(FailureReason(response.status()), "http_401");
}

TEST(KubeletClientTest, MissingTokenFileFailsWithReasonAuth) {
  FakeKubelet kubelet(ReplySummary);
  KubeletClientOptions options = PlainOptions();
  options.token_file = "/nonexistent/kubestat/token";
  auto client = MakeClient(options);
  absl::StatusOr<KubeletResponse> response = client->Fetch(kubelet.Target());
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(FailureReason(response.status()), "auth");
}

TEST(KubeletClientTest, ServerErrorHasReasonHttp500) {
  FakeKubelet kubelet([](http_request request) {
    request.reply(status_codes::InternalError, std::string("boom"));
  });
  auto client = MakeClient(PlainOptions());
  absl::StatusOr<KubeletResponse> response = client->Fetch(kubelet.Target());
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(FailureReason(response.status()), "http_500");
  EXPECT_NE(response.status().message().find("boom"), std::string::npos);
}

TEST(KubeletClientTest, DeclaredBodyOverTheCapIsRejected) {
  FakeKubelet kubelet(
      [](http_request request) { request.reply(status_codes::OK, std::string(1 << 20, 'x')); });
  KubeletClientOptions options = PlainOptions();
  options.max_response_bytes = 64 * 1024;
  auto client = MakeClient(options);
  absl::StatusOr<KubeletResponse> response = client->Fetch(kubelet.Target());
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(FailureReason(response.status()), "too_large");
  EXPECT_NE(response.status().message().find("response larger than 65536 bytes"), std::string::npos)
      << response.status();
}

TEST(KubeletClientTest, StreamedBodyOverTheCapStopsReadingAtTheCap) {
  // Chunked, without a Content-Length, and never finished: only the cap can end it.
  StalledKubelet kubelet(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n40000\r\n" +
      std::string(256 * 1024, 'y'));
  KubeletClientOptions options = PlainOptions();
  options.max_response_bytes = 100 * 1024;
  auto client = MakeClient(options);
  absl::StatusOr<KubeletResponse> response = client->Fetch(kubelet.Target());
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(FailureReason(response.status()), "too_large");
  EXPECT_NE(response.status().message().find("response larger than 102400 bytes"),
            std::string::npos);
}

TEST(KubeletClientTest, KubeletThatNeverAnswersTimesOut) {
  StalledKubelet kubelet("");
  KubeletClientOptions options = PlainOptions();
  options.timeout = std::chrono::milliseconds(200);
  auto client = MakeClient(options);
  absl::StatusOr<KubeletResponse> response = client->Fetch(kubelet.Target());
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(FailureReason(response.status()), "timeout");
  EXPECT_EQ(kubelet.requests(), 1);
}

TEST(KubeletClientTest, BodyThatNeverEndsTimesOut) {
  StalledKubelet kubelet(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
      R"({"node":{"nodeName":)");
  KubeletClientOptions options = PlainOptions();
  options.timeout = std::chrono::milliseconds(300);
  auto client = MakeClient(options);
  absl::StatusOr<KubeletResponse> response = client->Fetch(kubelet.Target());
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(FailureReason(response.status()), "timeout");
  EXPECT_EQ(kubelet.requests(), 1);
}

TEST(KubeletClientTest, NothingListeningIsAConnectFailure) {
  auto client = MakeClient(PlainOptions());
  absl::StatusOr<KubeletResponse> response =
      client->Fetch(ScrapeTarget{"node-a", "127.0.0.1", FreeLoopbackPort()});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(FailureReason(response.status()), "connect") << response.status();
}

TEST(KubeletClientTest, GarbageBodyIsADecodeFailure) {
  FakeKubelet kubelet([](http_request request) {
    request.reply(status_codes::OK, std::string("\x01\x02 not json {{{"));
  });
  auto client = MakeClient(PlainOptions());
  KubeletScraper scraper(*client, RealClock::Get());
  absl::StatusOr<NodeScrape> scrape = scraper.Scrape(kubelet.Target());
  ASSERT_FALSE(scrape.ok());
  EXPECT_EQ(FailureReason(scrape.status()), "decode");
}

// One scrape's outcome and the body storage its thread kept after it.
struct KeptAfter {
  absl::StatusOr<NodeScrape> scrape;
  KubeletScraper::KeptBody kept;
};

// Three scrapes of `target`, in turn, on a thread of their own (whose body storage starts
// empty).
std::vector<KeptAfter> ThreeScrapesOnANewThread(KubeletScraper& scraper,
                                                const ScrapeTarget& target) {
  std::vector<KeptAfter> out;
  std::thread([&] {
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<NodeScrape> scrape = scraper.Scrape(target);
      out.push_back({std::move(scrape), KubeletScraper::KeptBodyOfThisThread()});
    }
  }).join();
  return out;
}

TEST(KubeletScraperBodyTest, ScrapesOnOneThreadReadEachBodyIntoTheStorageOfTheOneBefore) {
  FakeKubelet kubelet(ReplySummary);
  auto client = MakeClient(PlainOptions());
  KubeletScraper scraper(*client, RealClock::Get());
  const std::vector<KeptAfter> after = ThreeScrapesOnANewThread(scraper, kubelet.Target());
  for (const KeptAfter& a : after) {
    ASSERT_TRUE(a.scrape.ok()) << a.scrape.status();
    EXPECT_EQ(a.scrape->node_name, "node-a");
  }
  std::vector<KubeletScraper::KeptBody> kept;
  for (const KeptAfter& a : after) kept.push_back(a.kept);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_GE(kept[0].capacity, std::string_view(kSummary).size() + kSummaryPadding);
  // Each body was read into the storage the one before left (both alive at once otherwise,
  // so a new allocation cannot land at the same address).
  EXPECT_EQ(kept[1].data, kept[0].data);
  EXPECT_EQ(kept[2].data, kept[1].data);
}

TEST(KubeletScraperBodyTest, AFailedScrapeKeepsTheStorage) {
  std::atomic<int> requests{0};
  FakeKubelet kubelet([&](http_request request) {
    switch (requests++) {
      case 0:
        ReplySummary(request);
        break;
      case 1:
        request.reply(status_codes::InternalError, std::string("boom"));
        break;
      default:
        request.reply(status_codes::OK, std::string("\x01\x02 not json {{{"));
    }
  });
  auto client = MakeClient(PlainOptions());
  KubeletScraper scraper(*client, RealClock::Get());
  std::vector<KubeletScraper::KeptBody> kept;
  std::vector<std::string> reasons;
  for (const KeptAfter& a : ThreeScrapesOnANewThread(scraper, kubelet.Target())) {
    reasons.push_back(FailureReason(a.scrape.status()));
    kept.push_back(a.kept);
  }
  EXPECT_EQ(reasons, (std::vector<std::string>{"", "http_500", "decode"}));
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_GE(kept[0].capacity, std::string_view(kSummary).size());
  EXPECT_EQ(kept[1].data, kept[0].data);  // the error answer's body came back
  EXPECT_EQ(kept[2].data, kept[1].data);  // the body that did not decode came back
}

TEST(KubeletScraperBodyTest, ABodyOverTheKeptCapIsNotKept) {
  // A summary with whitespace past the cap inside it.
  const std::string summary(kSummary);
  const std::string huge =
      "{" + std::string(KubeletScraper::kMaxKeptBodyBytes + 1, ' ') + summary.substr(1);
  std::atomic<int> requests{0};
  FakeKubelet kubelet([&](http_request request) {
    request.reply(status_codes::OK, requests++ == 1 ? huge : summary, "application/json");
  });
  auto client = MakeClient(PlainOptions());
  KubeletScraper scraper(*client, RealClock::Get());
  std::vector<KubeletScraper::KeptBody> kept;
  for (const KeptAfter& a : ThreeScrapesOnANewThread(scraper, kubelet.Target())) {
    EXPECT_TRUE(a.scrape.ok()) << a.scrape.status();
    kept.push_back(a.kept);
  }
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_GE(kept[0].capacity, summary.size());
  // The huge body's storage was freed, not kept ...
  EXPECT_LT(kept[1].capacity, summary.size());
  // ... and the next body's storage is kept again.
  EXPECT_GE(kept[2].capacity, summary.size());
  EXPECT_LE(kept[2].capacity, KubeletScraper::kMaxKeptBodyBytes);
}

TEST(KubeletScraperRecycleTest, ARecycledScrapeIsDecodedIntoAgainAndOnlyUpToTheCap) {
  FakeKubelet kubelet(ReplySummary);
  auto client = MakeClient(PlainOptions());
  KubeletScraper scraper(*client, RealClock::Get());
  std::vector<size_t> kept_pods;
  std::vector<absl::StatusOr<NodeScrape>> scrapes;
  std::thread([&] {
    kept_pods.push_back(KubeletScraper::KeptScrapePodsOfThisThread());
    absl::StatusOr<NodeScrape> first = scraper.Scrape(kubelet.Target());
    ASSERT_TRUE(first.ok()) << first.status();
    scrapes.push_back(*first);
    scraper.Recycle(*std::move(first));
    kept_pods.push_back(KubeletScraper::KeptScrapePodsOfThisThread());
    absl::StatusOr<NodeScrape> second = scraper.Scrape(kubelet.Target());
    // The kept scrape's storage went into the second result.
    kept_pods.push_back(KubeletScraper::KeptScrapePodsOfThisThread());
    scrapes.push_back(std::move(second));
    // A scrape with room for more pods than the cap is freed, not kept.
    NodeScrape large;
    large.pods.reserve(KubeletScraper::kMaxKeptPods + 1);
    scraper.Recycle(std::move(large));
    kept_pods.push_back(KubeletScraper::KeptScrapePodsOfThisThread());
  }).join();
  ASSERT_EQ(scrapes.size(), 2u);
  ASSERT_TRUE(scrapes[1].ok()) << scrapes[1].status();
  EXPECT_EQ(*scrapes[1], *scrapes[0]);
  ASSERT_FALSE(scrapes[0]->pods.empty());
  EXPECT_EQ(kept_pods, (std::vector<size_t>{0, scrapes[0]->pods.capacity(), 0, 0}));
}

class KubeletTlsTest : public ::testing::Test {
 protected:
  KubeletClientOptions TlsOptions(const std::string& ca_pem) {
    KubeletClientOptions options;
    options.timeout = std::chrono::seconds(10);
    options.ca_file = dir_.Write("ca.crt", ca_pem);
    return options;
  }
  TempDir dir_;
  TestPki pki_;
  TestCertificate serving_ = pki_.IssueServer("node-a", {"IP:127.0.0.1"});
};

TEST_F(KubeletTlsTest, VerifiesTheKubeletCertificateAgainstTheGivenCa) {
  FakeKubelet kubelet(ReplySummary, &serving_);
  auto client = MakeClient(TlsOptions(pki_.ca_pem()));
  KubeletScraper scraper(*client, RealClock::Get());
  absl::StatusOr<NodeScrape> scrape = scraper.Scrape(kubelet.Target());
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(scrape->node_name, "node-a");
}

TEST_F(KubeletTlsTest, CertificateFromAnotherCaIsATlsFailure) {
  FakeKubelet kubelet(ReplySummary, &serving_);
  TestPki other("another-ca");
  auto client = MakeClient(TlsOptions(other.ca_pem()));
  absl::StatusOr<KubeletResponse> response = client->Fetch(kubelet.Target());
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(FailureReason(response.status()), "tls") << response.status();
}

TEST_F(KubeletTlsTest, CertificateForAnotherAddressIsATlsFailure) {
  TestCertificate wrong_host = pki_.IssueServer("node-b", {"IP:127.0.0.2"});
  FakeKubelet kubelet(ReplySummary, &wrong_host);
  auto client = MakeClient(TlsOptions(pki_.ca_pem()));
  absl::StatusOr<KubeletResponse> response = client->Fetch(kubelet.Target());
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(FailureReason(response.status()), "tls") << response.status();
}

TEST_F(KubeletTlsTest, InsecureModeSkipsVerification) {
  FakeKubelet kubelet(ReplySummary, &serving_);
  TestPki other("another-ca");
  KubeletClientOptions options = TlsOptions(other.ca_pem());
  options.insecure_skip_tls_verify = true;
  auto client = MakeClient(options);
  absl::StatusOr<KubeletResponse> response = client->Fetch(kubelet.Target());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_NE(response->body.find("node-a"), std::string::npos);
}

TEST(KubeletClientOptionsTest, RejectsBadValuesNamingTheFlag) {
  KubeletClientOptions options;
  options.scheme = "ftp";
  EXPECT_NE(options.Validate().message().find("--kubelet-scheme"), std::string::npos);
  options = KubeletClientOptions();
  options.timeout = Duration::zero();
  EXPECT_NE(options.Validate().message().find("--kubelet-timeout"), std::string::npos);
  options = KubeletClientOptions();
  options.ca_file = "/nonexistent/ca.crt";
  auto client = KubeletClient::Create(options);
  ASSERT_FALSE(client.ok());
  EXPECT_NE(client.status().message().find("--kubelet-certificate-authority"), std::string::npos);
  EXPECT_TRUE(KubeletClientOptions().Validate().ok());
}

TEST(KubeletClientOptionsTest, ParsesEndpointNames) {
  EXPECT_EQ(*ParseKubeletEndpoint("summary"), KubeletEndpoint::kSummary);
  EXPECT_EQ(*ParseKubeletEndpoint("resource"), KubeletEndpoint::kResourceMetrics);
  EXPECT_FALSE(ParseKubeletEndpoint("stats").ok());
}

}  // namespace
}  // namespace kubestat::scrapers
