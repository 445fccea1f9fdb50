// kubestat::http::Server over real loopback sockets, plain HTTP: raw bytes in, raw answer
// out. Timeouts are configured short (200 ms) where a test needs one to fire, and long
// elsewhere; a test waits for the event (an answer, the socket closing) with a generous
// deadline, never for time to pass.
#include "kubestat/http/server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "http/plain_server_options.h"
#include "http/raw_client.h"
#include "kubestat/core/gzip.h"
#include "kubestat/testing/poll.h"
#include "prometheus/registry.h"

namespace kubestat::http {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::PollUntil;

constexpr auto kShort = std::chrono::milliseconds(200);
constexpr std::chrono::seconds kDeadline = testing::kRawClientDeadline;

using testing::RawClient;
using testing::RawResponse;

// The value of one series of a counter or gauge in `registry`; -1 when absent.
double MetricValue(prometheus::Registry& registry, const std::string& name,
                   const std::map<std::string, std::string>& labels) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      bool match = true;
      for (const auto& [key, value] : labels) {
        bool found = false;
        for (const prometheus::ClientMetric::Label& label : metric.label) {
          found = found || (label.name == key && label.value == value);
        }
        match = match && found;
      }
      if (!match) continue;
      if (family.type == prometheus::MetricType::Gauge) return metric.gauge.value;
      return metric.counter.value;
    }
  }
  return -1;
}

// The request the handler saw last, copied out of the views.
struct Seen {
  std::string method, path, query, body, remote;
  std::optional<std::string> accept;
  std::vector<std::string> groups;
  bool peer = false;
  size_t listener = 0;
};

class ServerTest : public ::testing::Test {
 protected:
  // Starts a plain server with a health listener of 4 slots whose head timeout is long
  // enough that no stalled connection times out while a test runs, however slowly; returns
  // the health port.
  int StartSmallHealthListener() {
    ServerOptions options = PlainOptions();
    options.health_port = 0;
    options.health_max_connections = 4;
    options.health_header_timeout = std::chrono::seconds(60);
    StartServer(options);
    return server_->health_port();
  }

  // Starts a server with `options` and a handler that echoes the path and remembers the
  // request; "/big" answers a 200 KiB body, "/throw" throws.
  void StartServer(ServerOptions options) {
    server_ = std::make_unique<Server>(
        std::move(options),
        [this](const Request& request) {
          {
            std::lock_guard<std::mutex> lock(mu_);
            seen_.method = std::string(request.method);
            seen_.path = std::string(request.path);
            seen_.query = std::string(request.query);
            seen_.body = std::string(request.body);
            seen_.remote = request.remote_address;
            seen_.peer = request.peer_certificate != nullptr;
            seen_.listener = request.listener;
            auto accept = request.Header("accept");
            seen_.accept = accept ? std::optional<std::string>(std::string(*accept)) : std::nullopt;
            seen_.groups.clear();
            for (std::string_view v : request.HeaderValues("X-Group")) seen_.groups.emplace_back(v);
          }
          Response response;
          response.route = "/echo";
          response.content_type = "text/plain";
          if (request.path == "/big") {
            response.route = "/big";
            response.body = std::string(200 * 1024, 'x');
          } else if (request.path == "/throw") {
            throw std::runtime_error("boom");
          } else if (request.path == "/protobuf") {
            response.content_type = "application/vnd.kubernetes.protobuf";
            response.body = std::string("k8s\0", 4);
            response.headers.emplace_back("Vary", "Accept");
          } else if (request.path == "/other") {
            response.content_type = "Application/X-Other; charset=utf-8";
          } else if (request.path == "/none") {
            response.content_type.clear();
          } else if (request.path == "/pre-gzipped") {
            response.content_encoding = "gzip";
            response.body = GzipCompress(std::string(200 * 1024, 'y'));
          } else {
            response.body = "you asked for " + std::string(request.path);
          }
          return response;
        },
        registry_, RealClock::Get());
    ASSERT_TRUE(server_->Start().ok());
  }

  double Rejected(const std::string& reason) {
    return MetricValue(registry_, "kubestat_http_rejected_requests_total",
                       {{"server", "main"}, {"reason", reason}});
  }

  Seen seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

  void ExpectStatusBody(const RawResponse& response, int code) {
    EXPECT_EQ(response.code, code);
    EXPECT_EQ(response.headers.at("content-type"), "application/json");
    EXPECT_EQ(response.headers.at("connection"), "close");
    EXPECT_THAT(response.body, HasSubstr(R"("kind":"Status")"));
    EXPECT_THAT(response.body, HasSubstr("\"code\":" + std::to_string(code)));
  }

  prometheus::Registry registry_;
  std::unique_ptr<Server> server_;
  std::mutex mu_;
  Seen seen_;
};

TEST_F(ServerTest, ServesAGetAndShowsTheHandlerTheRequest) {
  StartServer(PlainOptions());
  RawClient client(server_->port());
  ASSERT_TRUE(client.Send(
      "GET /apis/x%20y?labelSelector=a%3Db HTTP/1.1\r\nHost: h\r\nACCEPT: application/json\r\n"
      "X-Group: one\r\nx-group: two\r\n\r\n"));
  RawResponse response = client.Read();
  ASSERT_TRUE(response.complete);
  EXPECT_EQ(response.code, 200);
  EXPECT_EQ(response.body, "you asked for /apis/x%20y");
  EXPECT_EQ(response.headers.at("content-type"), "text/plain");
  EXPECT_EQ(response.headers.at("vary"), "Accept-Encoding");
  EXPECT_EQ(response.headers.count("connection"), 0u);  // HTTP/1.1 keep-alive by default
  const Seen s = seen();
  EXPECT_EQ(s.method, "GET");
  EXPECT_EQ(s.path, "/apis/x%20y");
  EXPECT_EQ(s.query, "labelSelector=a%3Db");
  EXPECT_EQ(s.accept, "application/json");
  EXPECT_THAT(s.groups, ElementsAre("one", "two"));
  EXPECT_EQ(s.remote, "127.0.0.1");
  EXPECT_FALSE(s.peer);
  EXPECT_EQ(
      MetricValue(registry_, "kubestat_http_requests_total",
                  {{"server", "main"}, {"route", "/echo"}, {"code", "200"}, {"method", "GET"}}),
      1);
  EXPECT_EQ(MetricValue(registry_, "kubestat_http_response_bytes_total",
                        {{"route", "/echo"}, {"content_encoding", "identity"}}),
            static_cast<double>(response.body.size()));
  EXPECT_EQ(MetricValue(registry_, "kubestat_http_connections_total",
                        {{"listener", "main"}, {"result", "accepted"}}),
            1);
}

TEST_F(ServerTest, MoreListenersServeAsTheMainOneAndTellTheHandlerWhichTookTheRequest) {
  ServerOptions options = PlainOptions();
  options.more_listeners = {{"127.0.0.1", 0}, {"127.0.0.1", 0}};
  StartServer(std::move(options));
  const int ports[] = {server_->port(0), server_->port(1), server_->port(2)};
  EXPECT_EQ(ports[0], server_->port());
  EXPECT_NE(ports[1], 0);
  EXPECT_NE(ports[2], 0);
  EXPECT_NE(ports[1], ports[0]);
  EXPECT_NE(ports[2], ports[1]);
  EXPECT_EQ(server_->port(3), 0);  // no such listener
  // Asked in reverse order, so a handler that reported the order of arrival would fail.
  for (size_t listener : {2, 1, 0}) {
    RawClient client(ports[listener]);
    ASSERT_TRUE(client.Send("GET /which HTTP/1.1\r\nHost: h\r\n\r\n"));
    RawResponse response = client.Read();
    ASSERT_TRUE(response.complete);
    EXPECT_EQ(response.code, 200);
    EXPECT_EQ(seen().listener, listener);
  }
}

TEST_F(ServerTest, KeepAliveServesSeveralRequestsThenTheIdleTimeoutCloses) {
  ServerOptions options = PlainOptions();
  options.limits.idle_timeout = kShort;
  StartServer(options);
  RawClient client(server_->port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client.Send("GET /n" + std::to_string(i) + " HTTP/1.1\r\nHost: h\r\n\r\n"));
    RawResponse response = client.Read();
    ASSERT_EQ(response.code, 200);
    EXPECT_EQ(response.body, "you asked for /n" + std::to_string(i));
  }
  // No answer, just the close.
  EXPECT_TRUE(client.WaitClosed());
  EXPECT_TRUE(PollUntil(
      [&] {
        return MetricValue(registry_, "kubestat_http_open_connections", {{"listener", "main"}}) ==
               0;
      },
      kDeadline));
}

TEST_F(ServerTest, PipelinedRequestsAreAnsweredInOrder) {
  StartServer(PlainOptions());
  RawClient client(server_->port());
  ASSERT_TRUE(client.Send(
      "GET /a HTTP/1.1\r\nHost: h\r\n\r\nPOST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n"
      "xyzGET /c HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"));
  EXPECT_EQ(client.Read().body, "you asked for /a");
  EXPECT_EQ(client.Read().body, "you asked for /b");
  RawResponse last = client.Read();
  EXPECT_EQ(last.body, "you asked for /c");
  EXPECT_EQ(last.headers.at("connection"), "close");
  EXPECT_TRUE(client.WaitClosed());
}

TEST_F(ServerTest, SilentConnectionIsClosedAfterTheHeaderTimeoutWithoutAnAnswer) {
  ServerOptions options = PlainOptions();
  options.limits.header_timeout = kShort;
  StartServer(options);
  RawClient client(server_->port());
  EXPECT_TRUE(client.WaitClosed());
  EXPECT_EQ(Rejected("timeout"), 0);
}

TEST_F(ServerTest, PartialHeadIsAnswered408AfterTheHeaderTimeout) {
  ServerOptions options = PlainOptions();
  options.limits.header_timeout = kShort;
  StartServer(options);
  RawClient client(server_->port());
  ASSERT_TRUE(client.Send("GET / HTTP/1.1\r\nHost: h\r\nX-Slow: "));
  RawResponse response = client.Read();
  ExpectStatusBody(response, 408);
  EXPECT_TRUE(client.WaitClosed());
  EXPECT_EQ(Rejected("timeout"), 1);
}

TEST_F(ServerTest, BodyThatDoesNotArriveIsAnswered408AfterTheReadTimeout) {
  ServerOptions options = PlainOptions();
  options.limits.read_timeout = kShort;
  StartServer(options);
  RawClient client(server_->port());
  ASSERT_TRUE(client.Send("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc"));
  ExpectStatusBody(client.Read(), 408);
  EXPECT_TRUE(client.WaitClosed());
}

TEST_F(ServerTest, ContentLengthOverTheLimitIs413BeforeAnyBodyIsSent) {
  ServerOptions options = PlainOptions();
  options.limits.max_body_bytes = 1024;
  StartServer(options);
  RawClient client(server_->port());
  // Only the head: the answer must not wait for the body (timeouts are a minute).
  ASSERT_TRUE(client.Send("PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1073741824\r\n\r\n"));
  RawResponse response = client.Read();
  ExpectStatusBody(response, 413);
  EXPECT_THAT(response.body, HasSubstr(R"("reason":"RequestEntityTooLarge")"));
  EXPECT_TRUE(client.WaitClosed());
  EXPECT_EQ(Rejected("body_too_large"), 1);
  EXPECT_EQ(seen().path, "");  // the handler never ran
}

TEST_F(ServerTest, ChunkedBodyOverTheLimitIs413AndOneWithinReachesTheHandler) {
  ServerOptions options = PlainOptions();
  options.limits.max_body_bytes = 1024;
  StartServer(options);
  {
    RawClient client(server_->port());
    ASSERT_TRUE(
        client.Send("PUT /ok HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
    EXPECT_EQ(client.Read().code, 200);
    EXPECT_EQ(seen().body, "hello world");
  }
  RawClient client(server_->port());
  ASSERT_TRUE(
      client.Send("PUT /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "400\r\n" +
                  std::string(1024, 'a') + "\r\n1\r\n"));
  ExpectStatusBody(client.Read(), 413);
  EXPECT_EQ(Rejected("body_too_large"), 1);
}

TEST_F(ServerTest, NegativeAndHugeContentLengthsAre400) {
  StartServer(PlainOptions());
  for (const char* length : {"-5", "18446744073709551615"}) {
    RawClient client(server_->port());
    ASSERT_TRUE(client.Send(std::string("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: ") + length +
                            "\r\n\r\n"));
    ExpectStatusBody(client.Read(), 400);
    EXPECT_TRUE(client.WaitClosed()) << length;
  }
  EXPECT_EQ(Rejected("malformed"), 2);
}

TEST_F(ServerTest, BareLineFeedsAre400) {
  StartServer(PlainOptions());
  RawClient client(server_->port());
  ASSERT_TRUE(client.Send("GET / HTTP/1.1\nHost: h\n\n"));
  ExpectStatusBody(client.Read(), 400);
  EXPECT_TRUE(client.WaitClosed());
}

TEST_F(ServerTest, Http99Is505) {
  StartServer(PlainOptions());
  RawClient client(server_->port());
  ASSERT_TRUE(client.Send("GET / HTTP/9.9\r\nHost: h\r\n\r\n"));
  ExpectStatusBody(client.Read(), 505);
  EXPECT_EQ(Rejected("version_not_supported"), 1);
}

TEST_F(ServerTest, TraceIs405AndEchoesNothing) {
  StartServer(PlainOptions());
  RawClient client(server_->port());
  ASSERT_TRUE(client.Send("TRACE / HTTP/1.1\r\nHost: h\r\nCookie: secret-token\r\n\r\n"));
  RawResponse response = client.Read();
  ExpectStatusBody(response, 405);
  EXPECT_THAT(response.body, Not(HasSubstr("secret-token")));
  EXPECT_THAT(client.pending(), Not(HasSubstr("secret-token")));
  EXPECT_EQ(response.headers.at("allow"), "GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS");
  EXPECT_EQ(Rejected("method_not_allowed"), 1);
}

TEST_F(ServerTest, GarbageIs400WithAStatusBody) {
  StartServer(PlainOptions());
  RawClient client(server_->port());
  ASSERT_TRUE(client.Send(std::string("\x01\x02garbage\xff\r\n\r\n", 14)));
  RawResponse response = client.Read();
  ExpectStatusBody(response, 400);
  EXPECT_THAT(response.body, HasSubstr(R"("reason":"BadRequest")"));
  EXPECT_EQ(Rejected("malformed"), 1);
}

TEST_F(ServerTest, HugeRequestLineAndLongTargetAre414) {
  ServerOptions options = PlainOptions();
  options.limits.max_target_bytes = 1024;
  options.limits.max_header_bytes = 8192;
  StartServer(options);
  {
    RawClient client(server_->port());
    ASSERT_TRUE(client.Send("GET /" + std::string(2000, 'a') + " HTTP/1.1\r\nHost: h\r\n\r\n"));
    ExpectStatusBody(client.Read(), 414);
  }
  RawClient client(server_->port());
  // A request line that never ends: refused at the head limit, not buffered further.
  client.Send("GET /" + std::string(64 * 1024, 'a'));
  ExpectStatusBody(client.Read(), 414);
  EXPECT_EQ(Rejected("uri_too_long"), 2);
}

TEST_F(ServerTest, HugeHeaderAndTooManyHeadersAre431) {
  ServerOptions options = PlainOptions();
  options.limits.max_header_bytes = 8192;
  options.limits.max_header_count = 10;
  StartServer(options);
  {
    RawClient client(server_->port());
    client.Send("GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + std::string(64 * 1024, 'a'));
    ExpectStatusBody(client.Read(), 431);
  }
  std::string many = "GET / HTTP/1.1\r\nHost: h\r\n";
  for (int i = 0; i < 10; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  RawClient client(server_->port());
  ASSERT_TRUE(client.Send(many + "\r\n"));
  ExpectStatusBody(client.Read(), 431);
  EXPECT_EQ(Rejected("header_too_large"), 1);
  EXPECT_EQ(Rejected("too_many_headers"), 1);
}

TEST_F(ServerTest, ConnectionsOverTheCapGet503WhileTheHealthListenerAnswers) {
  ServerOptions options = PlainOptions();
  options.limits.max_connections = 2;
  options.health_port = 0;
  StartServer(options);
  ASSERT_GT(server_->health_port(), 0);
  auto held1 = std::make_unique<RawClient>(server_->port());
  RawClient held2(server_->port());
  ASSERT_TRUE(PollUntil(
      [&] {
        return MetricValue(registry_, "kubestat_http_open_connections", {{"listener", "main"}}) ==
               2;
      },
      kDeadline));
  RawClient over(server_->port());
  ASSERT_TRUE(over.connected());
  RawResponse refused = over.Read();
  EXPECT_EQ(refused.code, 503);
  EXPECT_THAT(refused.body, HasSubstr(R"("reason":"ServiceUnavailable")"));
  EXPECT_TRUE(over.WaitClosed());
  EXPECT_EQ(MetricValue(registry_, "kubestat_http_connections_total",
                        {{"listener", "main"}, {"result", "over_capacity"}}),
            1);
  EXPECT_EQ(Rejected("over_capacity"), 1);

  RawClient health(server_->health_port());
  ASSERT_TRUE(health.Send("GET /livez HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(health.Read().code, 200);
  ASSERT_TRUE(health.Send("GET /readyz HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(health.Read().code, 200);
  // Only health paths there.
  ASSERT_TRUE(health.Send("GET /apis HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(health.Read().code, 404);

  // A freed slot is usable again.
  held1.reset();
  ASSERT_TRUE(PollUntil(
      [&] {
        return MetricValue(registry_, "kubestat_http_open_connections", {{"listener", "main"}}) ==
               1;
      },
      kDeadline));
  RawClient again(server_->port());
  ASSERT_TRUE(again.Send("GET /back HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(again.Read().code, 200);
}

// A flood that fills the health listener with connections that never finish a request (or
// never start one) cannot keep a probe out: each newcomer takes the slot of the connection
// that has made the least progress, and connections sending nothing are not handed over by
// the kernel at all.
TEST_F(ServerTest, AHealthListenerFullOfStalledConnectionsStillAnswersEveryProbe) {
  const int port = StartSmallHealthListener();
  ASSERT_GT(port, 0);
  std::vector<std::unique_ptr<RawClient>> silent;
  for (int i = 0; i < 8; ++i) {
    silent.push_back(std::make_unique<RawClient>(port));
    ASSERT_TRUE(silent.back()->connected());
  }
  std::vector<std::unique_ptr<RawClient>> stalled;
  for (int i = 0; i < 4; ++i) {
    stalled.push_back(std::make_unique<RawClient>(port));
    ASSERT_TRUE(stalled.back()->Send("GET /livez HTTP/1.1\r\nHost: h\r\n"));
    // One at a time, so that their order of arrival is known.
    ASSERT_TRUE(PollUntil(
        [&] {
          return MetricValue(registry_, "kubestat_http_open_connections",
                             {{"listener", "health"}}) == i + 1;
        },
        kDeadline));
  }
  for (int i = 0; i < 6; ++i) {
    RawClient probe(port);
    ASSERT_TRUE(probe.Send("GET /readyz HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"));
    EXPECT_EQ(probe.Read().code, 200) << "probe " << i;
  }
  // The first probe found the listener full of stalled connections and closed the oldest;
  // later ones may have found a slot free.
  EXPECT_GE(MetricValue(registry_, "kubestat_http_connections_total",
                        {{"listener", "health"}, {"result", "evicted"}}),
            1);
  EXPECT_EQ(MetricValue(registry_, "kubestat_http_connections_total",
                        {{"listener", "health"}, {"result", "over_capacity"}}),
            0);
  EXPECT_TRUE(stalled.front()->WaitClosed());
}

// At the health listener's cap, the connection closed to make room is one of the address
// that holds the most slots, even when another address's connection is older.
TEST_F(ServerTest, TheHealthListenerMakesRoomAtTheBusiestAddressFirst) {
  const int port = StartSmallHealthListener();
  auto open_health = [&] {
    return MetricValue(registry_, "kubestat_http_open_connections", {{"listener", "health"}});
  };
  RawClient quiet(port, 0, "127.0.0.3");
  ASSERT_TRUE(quiet.Send("GET /livez HTTP/1.1\r\nHost: h\r\n"));
  ASSERT_TRUE(PollUntil([&] { return open_health() == 1; }, kDeadline));
  std::vector<std::unique_ptr<RawClient>> busy;
  for (int i = 0; i < 3; ++i) {
    busy.push_back(std::make_unique<RawClient>(port, 0, "127.0.0.2"));
    ASSERT_TRUE(busy.back()->Send("GET /livez HTTP/1.1\r\nHost: h\r\n"));
    ASSERT_TRUE(PollUntil([&] { return open_health() == i + 2; }, kDeadline));
  }
  RawClient probe(port, 0, "127.0.0.2");
  ASSERT_TRUE(probe.Send("GET /readyz HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(probe.Read().code, 200);
  EXPECT_TRUE(busy.front()->WaitClosed());
  // The older connection of the quiet address kept its slot and finishes its request.
  ASSERT_TRUE(quiet.Send("\r\n"));
  EXPECT_EQ(quiet.Read().code, 200);
}

TEST_F(ServerTest, TheLastAllowedRequestOfAConnectionClosesIt) {
  ServerOptions options = PlainOptions();
  options.limits.max_requests_per_connection = 2;
  StartServer(options);
  RawClient client(server_->port());
  ASSERT_TRUE(client.Send("GET /1 HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(client.Read().headers.count("connection"), 0u);
  ASSERT_TRUE(client.Send("GET /2 HTTP/1.1\r\nHost: h\r\n\r\n"));
  RawResponse second = client.Read();
  EXPECT_EQ(second.code, 200);
  EXPECT_EQ(second.headers.at("connection"), "close");
  EXPECT_TRUE(client.WaitClosed());
}

TEST_F(ServerTest, GzipOnlyWhenAcceptedLargeEnoughAndNotAlreadyEncoded) {
  StartServer(PlainOptions());
  RawClient client(server_->port());
  ASSERT_TRUE(client.Send("GET /big HTTP/1.1\r\nHost: h\r\nAccept-Encoding: gzip\r\n\r\n"));
  RawResponse gzipped = client.Read();
  ASSERT_EQ(gzipped.code, 200);
  EXPECT_EQ(gzipped.headers.at("content-encoding"), "gzip");
  EXPECT_EQ(gzipped.headers.at("vary"), "Accept-Encoding");
  absl::StatusOr<std::string> plain = GzipDecompress(gzipped.body, 1 << 20);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, std::string(200 * 1024, 'x'));
  EXPECT_EQ(MetricValue(registry_, "kubestat_http_response_bytes_total",
                        {{"route", "/big"}, {"content_encoding", "gzip"}}),
            static_cast<double>(gzipped.body.size()));

  ASSERT_TRUE(client.Send("GET /big HTTP/1.1\r\nHost: h\r\nAccept-Encoding: gzip;q=0\r\n\r\n"));
  RawResponse refused = client.Read();
  EXPECT_EQ(refused.headers.count("content-encoding"), 0u);
  EXPECT_EQ(refused.body.size(), 200u * 1024);

  ASSERT_TRUE(client.Send("GET /small HTTP/1.1\r\nHost: h\r\nAccept-Encoding: gzip\r\n\r\n"));
  EXPECT_EQ(client.Read().headers.count("content-encoding"), 0u);

  ASSERT_TRUE(client.Send("GET /pre-gzipped HTTP/1.1\r\nHost: h\r\nAccept-Encoding: gzip\r\n\r\n"));
  RawResponse once = client.Read();
  EXPECT_EQ(once.headers.at("content-encoding"), "gzip");
  absl::StatusOr<std::string> inner = GzipDecompress(once.body, 1 << 20);
  ASSERT_TRUE(inner.ok());  // compressed once, not twice
  EXPECT_EQ(*inner, std::string(200 * 1024, 'y'));
}

TEST_F(ServerTest, HeadAnswersWithHeadersOnly) {
  StartServer(PlainOptions());
  RawClient client(server_->port());
  ASSERT_TRUE(client.Send("HEAD /thing HTTP/1.1\r\nHost: h\r\n\r\n"));
  client.ExpectHeadOnly();
  RawResponse response = client.Read();
  EXPECT_EQ(response.code, 200);
  EXPECT_EQ(response.headers.at("content-length"),
            std::to_string(std::string("you asked for /thing").size()));
  // The next bytes on the connection are the next answer, not a body.
  ASSERT_TRUE(client.Send("GET /after HTTP/1.1\r\nHost: h\r\n\r\n"));
  RawResponse next = client.Read();
  EXPECT_EQ(next.code, 200);
  EXPECT_EQ(next.body, "you asked for /after");
}

TEST_F(ServerTest, AHandlerExceptionBecomesA500Status) {
  StartServer(PlainOptions());
  RawClient client(server_->port());
  ASSERT_TRUE(client.Send("GET /throw HTTP/1.1\r\nHost: h\r\n\r\n"));
  RawResponse response = client.Read();
  EXPECT_EQ(response.code, 500);
  EXPECT_THAT(response.body, HasSubstr(R"("reason":"InternalError")"));
}

TEST_F(ServerTest, AnswersAreCountedByTheMediaTypeOfTheirBody) {
  StartServer(PlainOptions());
  RawClient client(server_->port());
  for (const char* path : {"/protobuf", "/protobuf", "/echo", "/other", "/none", "/throw"}) {
    ASSERT_TRUE(client.Send(std::string("GET ") + path + " HTTP/1.1\r\nHost: h\r\n\r\n"));
    RawResponse response = client.Read();
    ASSERT_TRUE(response.complete) << path;
    // The handler's Vary joins the server's in one field.
    EXPECT_EQ(response.headers.at("vary"),
              std::string_view(path) == "/protobuf" ? "Accept-Encoding, Accept" : "Accept-Encoding")
        << path;
  }
  const auto answers = [&](const std::string& content_type) {
    return MetricValue(registry_, "kubestat_http_responses_total",
                       {{"server", "main"}, {"route", "/echo"}, {"content_type", content_type}});
  };
  EXPECT_EQ(answers("application/vnd.kubernetes.protobuf"), 2);
  EXPECT_EQ(answers("text/plain"), 1);
  EXPECT_EQ(answers("other"), 1);
  EXPECT_EQ(answers("none"), 1);
  // The handler's exception became a JSON Status.
  EXPECT_EQ(
      MetricValue(registry_, "kubestat_http_responses_total",
                  {{"server", "main"}, {"route", "other"}, {"content_type", "application/json"}}),
      1);
}

TEST_F(ServerTest, ExpectContinueGetsAn100BeforeTheBody) {
  StartServer(PlainOptions());
  RawClient client(server_->port());
  ASSERT_TRUE(client.Send(
      "PUT /c HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"));
  RawResponse interim = client.Read();
  EXPECT_EQ(interim.code, 100);
  ASSERT_TRUE(client.Send("body"));
  RawResponse final_response = client.Read();
  EXPECT_EQ(final_response.code, 200);
  EXPECT_EQ(seen().body, "body");
}

// A handler that blocks until released, to fill the worker pool.
TEST(ServerBusyTest, HealthPathsAnswerWhileWorkersAreBusyAndAFullQueueGets429) {
  prometheus::Registry registry;
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> blocked{0};
  ServerOptions options = PlainOptions();
  options.worker_threads = 1;
  options.limits.max_queued_requests = 1;
  Server server(
      options,
      [&](const Request& request) {
        Response response;
        if (request.path == "/slow") {
          ++blocked;
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return release; });
        }
        response.body = "ok";
        return response;
      },
      registry, RealClock::Get());
  ASSERT_TRUE(server.Start().ok());
  RawClient running(server.port());
  ASSERT_TRUE(running.Send("GET /slow HTTP/1.1\r\nHost: h\r\n\r\n"));
  ASSERT_TRUE(PollUntil([&] { return blocked.load() == 1; }, kDeadline));
  RawClient queued(server.port());
  ASSERT_TRUE(queued.Send("GET /slow HTTP/1.1\r\nHost: h\r\n\r\n"));
  // The queue (one slot) is now taken once the request is parsed; a third is refused.
  RawResponse refused;
  ASSERT_TRUE(PollUntil(
      [&] {
        RawClient third(server.port());
        third.Send("GET /other HTTP/1.1\r\nHost: h\r\n\r\n");
        refused = third.Read();
        return refused.code == 429;
      },
      kDeadline));
  EXPECT_EQ(refused.headers.at("retry-after"), "1");
  RawClient probe(server.port());
  ASSERT_TRUE(probe.Send("GET /livez HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(probe.Read().code, 200);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  EXPECT_EQ(running.Read().code, 200);
  EXPECT_EQ(queued.Read().code, 200);
  server.Stop();
}

TEST(ServerLifecycleTest, StopReturnsWithClientsConnectedAndIsIdempotent) {
  prometheus::Registry registry;
  ServerOptions options = PlainOptions();
  Server server(
      options, [](const Request&) { return Response{}; }, registry, RealClock::Get());
  ASSERT_TRUE(server.Start().ok());
  RawClient idle(server.port());
  RawClient partial(server.port());
  ASSERT_TRUE(partial.Send("GET / HTTP/1.1\r\nHo"));
  server.Stop();
  EXPECT_TRUE(idle.WaitClosed());
  EXPECT_TRUE(partial.WaitClosed());
  server.Stop();
  EXPECT_EQ(server.Start().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ServerLifecycleTest, StartNamesTheAddressWhenThePortIsTaken) {
  prometheus::Registry registry;
  Server first(
      PlainOptions(), [](const Request&) { return Response{}; }, registry, RealClock::Get());
  ASSERT_TRUE(first.Start().ok());
  ServerOptions options = PlainOptions();
  options.port = first.port();
  options.metrics_name = "second";
  Server second(
      options, [](const Request&) { return Response{}; }, registry, RealClock::Get());
  absl::Status status = second.Start();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("127.0.0.1:" + std::to_string(first.port())));
}

TEST(ServerLifecycleTest, BaseUrlShowsLoopbackForWildcardAddresses) {
  prometheus::Registry registry;
  ServerOptions options = PlainOptions();
  options.address = "0.0.0.0";
  Server v4(
      options, [](const Request&) { return Response{}; }, registry, RealClock::Get());
  ASSERT_TRUE(v4.Start().ok());
  EXPECT_EQ(v4.BaseUrl(), "http://127.0.0.1:" + std::to_string(v4.port()));
  options.address = "::";
  options.metrics_name = "v6";
  Server v6(
      options, [](const Request&) { return Response{}; }, registry, RealClock::Get());
  if (v6.Start().ok()) {
    EXPECT_EQ(v6.BaseUrl(), "http://[::1]:" + std::to_string(v6.port()));
  }
}

TEST(ServerOptionsTest, ValidateNamesTheField) {
  ServerOptions options;
  EXPECT_TRUE(options.Validate().ok());
  auto message = [](const ServerOptions& o) { return std::string(o.Validate().message()); };
  ServerOptions bad = options;
  bad.limits.max_connections = 0;
  EXPECT_THAT(message(bad), HasSubstr("limits.max_connections"));
  bad = options;
  bad.address = "localhost";
  EXPECT_THAT(message(bad), HasSubstr("address"));
  bad = options;
  bad.allowed_methods.push_back("TRACE");
  EXPECT_THAT(message(bad), HasSubstr("allowed_methods"));
  bad = options;
  bad.limits.header_timeout = std::chrono::milliseconds(0);
  EXPECT_THAT(message(bad), HasSubstr("limits.header_timeout"));
  bad = options;
  bad.tls.cipher_suites = {"TLS_RSA_WITH_AES_128_GCM_SHA256"};
  EXPECT_THAT(message(bad), HasSubstr("--tls-cipher-suites"));
  bad = options;
  bad.tls.min_version = "VersionTLS11";
  EXPECT_THAT(message(bad), HasSubstr("--tls-min-version"));
  bad = options;
  bad.tls.cert_file = "/x.crt";
  EXPECT_THAT(message(bad), HasSubstr("tls.cert_file"));
  bad = options;
  bad.health_port = 70000;
  EXPECT_THAT(message(bad), HasSubstr("health_port"));
  bad = options;
  bad.more_listeners = {{"127.0.0.2", 0}, {"kubelet-1", 0}};
  EXPECT_THAT(message(bad), HasSubstr("more_listeners"));
  bad = options;
  bad.more_listeners = {{"127.0.0.2", 65536}};
  EXPECT_THAT(message(bad), HasSubstr("more_listeners"));
}

}  // namespace
}  // namespace kubestat::http
