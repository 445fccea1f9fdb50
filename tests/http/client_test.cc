// kubestat::http::Client against a kubestat::http::Server over TLS on loopback (self-signed
// serving pair in a temp cert dir, client certificates checked against a test CA), and
// against raw socket peers for chunked and streamed bodies. Deadlines run on a FakeClock moved by
// the test; a waiting test gives up after kGuard, which only a broken feature reaches.
#include "kubestat/http/client.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pplx/pplxtasks.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kubestat/core/clock.h"
#include "kubestat/http/server.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/net.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"
#include "kubestat/testing/test_pki.h"
#include "prometheus/registry.h"

namespace kubestat::http {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::PollUntil;
using testing::ReadAll;
using testing::TempDir;
using testing::TestPki;

constexpr auto kGuard = std::chrono::seconds(20);

// Connections the server holds open (its kubestat_http_open_connections gauge).
double OpenConnections(prometheus::Registry& registry) {
  double open = 0;
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != "kubestat_http_open_connections") continue;
    for (const prometheus::ClientMetric& metric : family.metric) open += metric.gauge.value;
  }
  return open;
}

// Stops `server` once the connections of the clients a test made (all gone by now) have
// closed, so Stop() never walks a connection that is closing on its own at the same time.
// Waits for that event (at most kGuard), not for time to pass.
void StopWhenIdle(Server& server, prometheus::Registry& registry) {
  PollUntil([&] { return OpenConnections(registry) <= 0; }, kGuard);
  server.Stop();
}

// What the handler saw of one request, copied out of the views.
struct Seen {
  std::string method;
  std::string target;
  std::string body;
  std::string content_type;
  std::string authorization;
  std::string user_agent;
  std::string content_length;
  std::vector<std::string> verified_by;
  std::string common_name;
  bool has_certificate = false;
  int remote_port = 0;
};

// A one-shot signal between threads (the handler and the test).
class Gate {
 public:
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Waits until opened; false when kGuard passes first.
  bool Wait() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kGuard, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

class ClientTest : public ::testing::Test {
 protected:
  ClientTest() : client_ca_("client-ca"), stranger_("stranger-ca") {}

  ~ClientTest() override {
    release_.Open();  // a handler held by a test returns, so Stop() does not wait on it
    if (server_ != nullptr) StopWhenIdle(*server_, registry_);
  }

  // Starts the TLS server; the handler records the request and answers with `respond`.
  void Start(const std::function<Response(const Request&)>& respond = nullptr) {
    ServerOptions options;
    options.address = "127.0.0.1";
    options.io_threads = 1;
    options.worker_threads = 4;
    options.tls.cert_dir = dir_.File("certs");
    options.tls.client_cas = {{"client-ca", dir_.Write("client-ca.pem", client_ca_.ca_pem())}};
    server_ = std::make_unique<Server>(
        options,
        [this, respond](const Request& request) {
          Record(request);
          if (respond) return respond(request);
          Response response;
          response.content_type = "text/plain";
          response.body = "answer to " + std::string(request.method);
          return response;
        },
        registry_, RealClock::Get());
    absl::Status started = server_->Start();
    ASSERT_TRUE(started.ok()) << started;
    serving_ca_ = ReadAll(options.tls.cert_dir + "/apiserver.crt");
    ASSERT_THAT(serving_ca_, HasSubstr("BEGIN CERTIFICATE"));
  }

  ClientOptions Options() const {
    ClientOptions options;
    options.base_url = server_->BaseUrl();
    options.ca_pem = serving_ca_;
    return options;
  }

  std::unique_ptr<Client> MakeClient(ClientOptions options) {
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(std::move(options), clock_);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }

  void Record(const Request& request) {
    Seen seen;
    seen.method = std::string(request.method);
    seen.target = std::string(request.target);
    seen.body = std::string(request.body);
    seen.content_type = std::string(request.Header("Content-Type").value_or(""));
    seen.authorization = std::string(request.Header("Authorization").value_or(""));
    seen.user_agent = std::string(request.Header("User-Agent").value_or(""));
    seen.content_length = std::string(request.Header("Content-Length").value_or("none"));
    if (request.peer_certificate != nullptr) {
      seen.has_certificate = true;
      seen.verified_by = request.peer_certificate->verified_by;
      seen.common_name = request.peer_certificate->common_name;
    }
    seen.remote_port = request.remote_port;
    std::lock_guard lock(mu_);
    seen_.push_back(std::move(seen));
  }

  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

  TempDir dir_;
  TestPki client_ca_;
  TestPki stranger_;
  FakeClock clock_;
  prometheus::Registry registry_;
  std::unique_ptr<Server> server_;
  std::string serving_ca_;
  Gate entered_;  // a holding handler has started
  Gate release_;  // lets a holding handler return
  std::mutex mu_;
  std::vector<Seen> seen_;
};

TEST_F(ClientTest, EachMethodReachesTheHandlerWithItsBodyAndTheBearerToken) {
  Start();
  ClientOptions options = Options();
  options.bearer_token = "static-token-1";
  std::unique_ptr<Client> client = MakeClient(options);
  ASSERT_NE(client, nullptr);

  absl::StatusOr<ClientResponse> get = client->Get("/api/v1/nodes?limit=2");
  absl::StatusOr<ClientResponse> post = client->Post("/apis/x/v1/things", R"({"a":1})");
  absl::StatusOr<ClientResponse> put =
      client->Put("/apis/x/v1/things/t", "plain words", "text/plain");
  absl::StatusOr<ClientResponse> del = client->Delete("/apis/x/v1/things/t");
  absl::StatusOr<ClientResponse> empty_post = client->Post("/empty", "");
  for (const auto* r : {&get, &post, &put, &del, &empty_post}) {
    ASSERT_TRUE(r->ok()) << r->status();
    EXPECT_EQ((*r)->code, 200);
    EXPECT_EQ((*r)->content_type, "text/plain");
  }
  EXPECT_EQ(get->body, "answer to GET");
  EXPECT_EQ(post->body, "answer to POST");
  EXPECT_EQ(put->body, "answer to PUT");
  EXPECT_EQ(del->body, "answer to DELETE");
  EXPECT_FALSE(get->Header("content-length").empty());

  std::vector<Seen> s = seen();
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0].method, "GET");
  EXPECT_EQ(s[0].target, "/api/v1/nodes?limit=2");
  EXPECT_EQ(s[0].body, "");
  EXPECT_EQ(s[1].method, "POST");
  EXPECT_EQ(s[1].target, "/apis/x/v1/things");
  EXPECT_EQ(s[1].body, R"({"a":1})");
  EXPECT_EQ(s[1].content_type, "application/json");
  EXPECT_EQ(s[2].method, "PUT");
  EXPECT_EQ(s[2].body, "plain words");
  EXPECT_EQ(s[2].content_type, "text/plain");
  EXPECT_EQ(s[3].method, "DELETE");
  EXPECT_EQ(s[4].method, "POST");
  EXPECT_EQ(s[4].content_length, "0");
  for (const Seen& one : s) {
    EXPECT_EQ(one.authorization, "Bearer static-token-1");
    EXPECT_EQ(one.user_agent, "kubestat");
  }
}

// The client makes cpprestsdk's continuations run where their step finished instead of on
// another thread of the library's pool (this test's process uses pplx first through it).
TEST_F(ClientTest, TheLibrarysContinuationsRunOnTheThreadThatFinishedTheirStep) {
  Start();
  std::unique_ptr<Client> client = MakeClient(Options());
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ClientResponse> get = client->Get("/api/v1/nodes");
  ASSERT_TRUE(get.ok()) << get.status();

  pplx::task_completion_event<int> step;
  std::promise<std::thread::id> ran_on;
  pplx::task<void> next =
      pplx::task<int>(step).then([&ran_on](int) { ran_on.set_value(std::this_thread::get_id()); });
  std::thread::id finished_on;
  std::thread finisher([&] {
    finished_on = std::this_thread::get_id();
    step.set(1);
  });
  finisher.join();
  next.wait();
  EXPECT_EQ(ran_on.get_future().get(), finished_on);
}

TEST_F(ClientTest, TokenSourceIsAskedBeforeEveryRequest) {
  Start();
  std::mutex token_mu;
  std::string token = "rotating-1";
  ClientOptions options = Options();
  options.bearer_token_source = [&]() -> absl::StatusOr<std::string> {
    std::lock_guard lock(token_mu);
    return token;
  };
  std::unique_ptr<Client> client = MakeClient(options);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Get("/a").ok());
  {
    std::lock_guard lock(token_mu);
    token = "rotating-2";
  }
  ASSERT_TRUE(client->Get("/b").ok());
  std::vector<Seen> s = seen();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].authorization, "Bearer rotating-1");
  EXPECT_EQ(s[1].authorization, "Bearer rotating-2");
}

TEST_F(ClientTest, TokenSourceErrorFailsTheRequestWithoutSendingIt) {
  Start();
  ClientOptions options = Options();
  options.bearer_token_source = []() -> absl::StatusOr<std::string> {
    return absl::NotFoundError("token file /var/run/token: No such file");
  };
  std::unique_ptr<Client> client = MakeClient(options);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ClientResponse> r = client->Get("/a?b=c");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("GET /a: bearer token: token file"));
  EXPECT_EQ(FailureReason(r.status()), "auth");
  EXPECT_TRUE(seen().empty());
}

TEST_F(ClientTest, AnAuthorizationFieldOfTheRequestReplacesTheToken) {
  Start();
  ClientOptions options = Options();
  options.bearer_token = "client-token";
  std::unique_ptr<Client> client = MakeClient(options);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Get("/a", {{"Authorization", "Bearer per-request"}}).ok());
  ASSERT_EQ(seen().size(), 1u);
  EXPECT_EQ(seen()[0].authorization, "Bearer per-request");
}

TEST_F(ClientTest, ServerCertificateNotSignedByTheConfiguredCaFails) {
  Start();
  ClientOptions options = Options();
  options.ca_pem = stranger_.ca_pem();
  std::unique_ptr<Client> client = MakeClient(options);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ClientResponse> r = client->Get("/secret?x=1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("GET /secret: TLS: the server's certificate was refused: "));
  EXPECT_EQ(FailureReason(r.status()), "tls");
  EXPECT_TRUE(seen().empty());
}

TEST_F(ClientTest, CertificateForAnotherHostIsRefused) {
  TestPki server_ca("server-ca");
  testing::TestCertificate pair = server_ca.IssueServer("elsewhere", {"DNS:elsewhere.example"});
  ServerOptions options;
  options.address = "127.0.0.1";
  options.tls.cert_file = dir_.Write("server.crt", pair.cert_pem);
  options.tls.key_file = dir_.Write("server.key", pair.key_pem);
  server_ = std::make_unique<Server>(
      options, [](const Request&) { return Response{}; }, registry_, RealClock::Get());
  ASSERT_TRUE(server_->Start().ok());
  ClientOptions client_options;
  client_options.base_url = server_->BaseUrl();
  client_options.ca_pem = server_ca.ca_pem();
  std::unique_ptr<Client> client = MakeClient(client_options);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ClientResponse> r = client->Get("/a");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(FailureReason(r.status()), "tls");
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("not valid for the host name"));
}

TEST_F(ClientTest, WithoutCaTheSystemRootsDoNotTrustTheSelfSignedServer) {
  Start();
  ClientOptions options = Options();
  options.ca_pem.clear();
  std::unique_ptr<Client> client = MakeClient(options);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ClientResponse> r = client->Get("/a");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(FailureReason(r.status()), "tls") << r.status();

  options.insecure_skip_tls_verify = true;
  std::unique_ptr<Client> insecure = MakeClient(options);
  ASSERT_NE(insecure, nullptr);
  absl::StatusOr<ClientResponse> accepted = insecure->Get("/a");
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_EQ(accepted->code, 200);
}

TEST_F(ClientTest, ClientCertificateIsPresentedAndVerified) {
  Start();
  testing::TestCertificate pair = client_ca_.IssueClient("system:kube-aggregator", {"group-a"});
  ClientOptions options = Options();
  options.client_cert_pem = pair.cert_pem;
  options.client_key_pem = pair.key_pem;
  std::unique_ptr<Client> with_cert = MakeClient(options);
  std::unique_ptr<Client> without_cert = MakeClient(Options());
  ASSERT_NE(with_cert, nullptr);
  ASSERT_NE(without_cert, nullptr);
  ASSERT_TRUE(with_cert->Get("/a").ok());
  ASSERT_TRUE(without_cert->Get("/b").ok());
  std::vector<Seen> s = seen();
  ASSERT_EQ(s.size(), 2u);
  ASSERT_TRUE(s[0].has_certificate);
  EXPECT_THAT(s[0].verified_by, ElementsAre("client-ca"));
  EXPECT_EQ(s[0].common_name, "system:kube-aggregator");
  EXPECT_FALSE(s[1].has_certificate);
}

// A source of TLS material whose answer the test changes.
class SwitchableTls {
 public:
  void Set(absl::StatusOr<ClientTls> tls) {
    std::lock_guard lock(mu_);
    tls_ = std::move(tls);
  }
  absl::StatusOr<ClientTls> Get() {
    std::lock_guard lock(mu_);
    ++calls_;
    return tls_;
  }
  int calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  absl::StatusOr<ClientTls> tls_ = absl::UnavailableError("not set");
  int calls_ = 0;
};

TEST_F(ClientTest, ATlsSourceIsAskedAtEachNewConnectionAndItsNewCaTrustedFromThenOn) {
  Start();
  auto source = std::make_shared<SwitchableTls>();
  source->Set(ClientTls{stranger_.ca_pem(), "", ""});
  ClientOptions options = Options();  // its ca_pem is the right one: the source replaces it
  options.tls_source = [source] { return source->Get(); };
  std::unique_ptr<Client> client = MakeClient(options);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ClientResponse> refused = client->Get("/a");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(FailureReason(refused.status()), "tls") << refused.status();

  // The server's CA on disk now (as after a control plane came back with a new one).
  source->Set(ClientTls{serving_ca_, "", ""});
  absl::StatusOr<ClientResponse> accepted = client->Get("/b");
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_EQ(accepted->code, 200);
  // A kept connection is reused without asking.
  const int calls = source->calls();
  ASSERT_TRUE(client->Get("/c").ok());
  EXPECT_EQ(source->calls(), calls);

  // A client certificate from the source is presented.
  testing::TestCertificate pair = client_ca_.IssueClient("rotated-user", {});
  source->Set(ClientTls{serving_ca_, pair.cert_pem, pair.key_pem});
  std::unique_ptr<Client> fresh = MakeClient(options);
  ASSERT_NE(fresh, nullptr);
  ASSERT_TRUE(fresh->Get("/d").ok());
  ASSERT_FALSE(seen().empty());
  EXPECT_EQ(seen().back().common_name, "rotated-user");

  // A source that fails fails the connection without sending anything.
  source->Set(absl::PermissionDeniedError("the CA file cannot be read"));
  std::unique_ptr<Client> failing = MakeClient(options);
  ASSERT_NE(failing, nullptr);
  const size_t before = seen().size();
  absl::StatusOr<ClientResponse> failed = failing->Get("/e");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(failed.status().message()),
              HasSubstr("GET /e: TLS: the CA file cannot be read"));
  EXPECT_EQ(seen().size(), before);
}

TEST_F(ClientTest, AStreamTakesItsTlsFromTheSourceAtEachConnection) {
  Start();
  auto source = std::make_shared<SwitchableTls>();
  source->Set(ClientTls{stranger_.ca_pem(), "", ""});
  ClientOptions options = Options();
  options.tls_source = [source] { return source->Get(); };
  std::unique_ptr<Client> client = MakeClient(options);
  ASSERT_NE(client, nullptr);
  ClientRequest request;
  request.path_and_query = "/watch";
  std::string body;
  int code = 0;
  std::string error_body;
  const auto stream = [&] {
    body.clear();
    return client->Stream(
        request, std::chrono::seconds(10),
        [&body](std::string_view chunk) {
          body.append(chunk);
          return true;
        },
        &code, &error_body);
  };
  const absl::Status refused = stream();
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(FailureReason(refused), "tls") << refused;
  source->Set(ClientTls{serving_ca_, "", ""});
  const absl::Status accepted = stream();
  ASSERT_TRUE(accepted.ok()) << accepted;
  EXPECT_EQ(code, 200);
  EXPECT_EQ(body, "answer to GET");
}

TEST_F(ClientTest, NonSuccessAnswersAreResponses) {
  Start([](const Request& request) {
    Response response;
    response.code = request.path == "/missing" ? 404 : 503;
    response.body = R"({"kind":"Status","code":)" + std::to_string(response.code) + "}";
    response.headers = {{"Retry-After", "3"}};
    return response;
  });
  std::unique_ptr<Client> client = MakeClient(Options());
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ClientResponse> missing = client->Get("/missing");
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_EQ(missing->code, 404);
  EXPECT_EQ(missing->content_type, "application/json");
  EXPECT_EQ(missing->body, R"({"kind":"Status","code":404})");
  absl::StatusOr<ClientResponse> busy = client->Post("/busy", "{}");
  ASSERT_TRUE(busy.ok()) << busy.status();
  EXPECT_EQ(busy->code, 503);
  EXPECT_EQ(busy->Header("retry-after"), "3");
}

TEST_F(ClientTest, ResponseOverTheCapIsResourceExhausted) {
  Start([](const Request& request) {
    Response response;
    response.content_type = "text/plain";
    response.body = std::string(request.path == "/big" ? 4097 : 4096, 'x');
    return response;
  });
  ClientOptions options = Options();
  options.max_response_bytes = 4096;
  std::unique_ptr<Client> client = MakeClient(options);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ClientResponse> fits = client->Get("/fits");
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(fits->body.size(), 4096u);
  absl::StatusOr<ClientResponse> big = client->Get("/big");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(big.status().message()),
              HasSubstr("GET /big: response larger than 4096"));
  EXPECT_EQ(FailureReason(big.status()), "too_large");
}

TEST_F(ClientTest, HandlerThatDoesNotAnswerBeforeTheDeadlineIsDeadlineExceeded) {
  Start([this](const Request&) {
    entered_.Open();
    release_.Wait();
    return Response{};
  });
  ClientOptions options = Options();
  options.timeout = std::chrono::seconds(30);
  std::unique_ptr<Client> client = MakeClient(options);
  ASSERT_NE(client, nullptr);
  auto outcome = std::async(std::launch::async, [&] { return client->Get("/slow?watch=1"); });
  ASSERT_TRUE(entered_.Wait());
  clock_.Advance(std::chrono::seconds(30));
  ASSERT_EQ(outcome.wait_for(kGuard), std::future_status::ready);
  absl::StatusOr<ClientResponse> r = outcome.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("GET /slow: no complete response within 30s"));
  EXPECT_EQ(FailureReason(r.status()), "timeout");
}

TEST_F(ClientTest, StopAbandonsTheRequest) {
  Start([this](const Request&) {
    entered_.Open();
    release_.Wait();
    return Response{};
  });
  std::unique_ptr<Client> client = MakeClient(Options());
  ASSERT_NE(client, nullptr);
  std::stop_source stop;
  ClientRequest request;
  request.path_and_query = "/hold";
  request.stop = stop.get_token();
  auto outcome = std::async(std::launch::async, [&] { return client->Do(request); });
  ASSERT_TRUE(entered_.Wait());
  stop.request_stop();
  ASSERT_EQ(outcome.wait_for(kGuard), std::future_status::ready);
  absl::StatusOr<ClientResponse> r = outcome.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(FailureReason(r.status()), "cancelled");
}

TEST_F(ClientTest, SequentialRequestsReuseConnections) {
  Start();
  std::unique_ptr<Client> client = MakeClient(Options());
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(client->Get("/a").ok());
  std::vector<Seen> s = seen();
  ASSERT_EQ(s.size(), 20u);
  std::set<int> ports;
  for (const Seen& one : s) ports.insert(one.remote_port);
  // A request gives its connection back before it returns: the next one always finds it.
  EXPECT_EQ(ports.size(), 1u);
}

TEST_F(ClientTest, ConcurrentRequestsFromManyThreadsAllSucceed) {
  Start([](const Request& request) {
    Response response;
    response.content_type = "text/plain";
    response.body = std::string(request.target);
    return response;
  });
  std::unique_ptr<Client> client = MakeClient(Options());
  ASSERT_NE(client, nullptr);
  std::vector<std::thread> threads;
  threads.reserve(6);
  std::mutex mu;
  std::set<std::string> answers;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        const std::string path = "/t" + std::to_string(t) + "/" + std::to_string(i);
        absl::StatusOr<ClientResponse> r = client->Get(path);
        std::lock_guard lock(mu);
        if (r.ok() && r->code == 200 && r->body == path) answers.insert(path);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(answers.size(), 30u);
}

TEST_F(ClientTest, NoListenerIsUnavailable) {
  Start();
  ClientOptions options = Options();
  server_->Stop();
  std::unique_ptr<Client> client = MakeClient(options);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ClientResponse> r = client->Get("/a");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("GET /a: connecting: "));
  EXPECT_EQ(FailureReason(r.status()), "connect");
}

TEST_F(ClientTest, MalformedRequestsAreRefusedBeforeSending) {
  Start();
  std::unique_ptr<Client> client = MakeClient(Options());
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->Get("no-slash").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client->Get("/a b").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client->Do("GE T", "/a").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client->Get("/a", {{"X-Evil", "a\r\nInjected: 1"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FailureReason(client->Get("/a b").status()), "request");
  EXPECT_TRUE(seen().empty());
}

// A plain-HTTP peer on loopback for answers written step by step by the test: it takes one
// connection and reads the request head, then sends what the test hands it (Send) and closes
// the connection when told (Close).
class StreamPeer {
 public:
  StreamPeer() {
    listen_fd_ = testing::ListenOnLoopback(4, &port_);
    EXPECT_GE(listen_fd_, 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~StreamPeer() {
    Close();
    ::shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    ::close(listen_fd_);
  }

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Waits until the request head has arrived and returns it ("" when kGuard passed first).
  std::string WaitForHead() {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, kGuard, [this] { return !head_.empty(); });
    return head_;
  }

  void Send(std::string bytes) {
    std::lock_guard lock(mu_);
    outbox_.push_back(std::move(bytes));
    cv_.notify_all();
  }
  // A chunk of a chunked body.
  void SendChunk(std::string_view data) {
    std::ostringstream size_hex;
    size_hex << std::hex << data.size();
    Send(size_hex.str() + "\r\n" + std::string(data) + "\r\n");
  }
  // Closes the connection once everything handed to Send has been sent.
  void Close() {
    std::lock_guard lock(mu_);
    closing_ = true;
    cv_.notify_all();
  }

 private:
  void Serve() {
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) return;
    timeval timeout{20, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    std::string head;
    char buf[4096];
    while (head.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      head.append(buf, static_cast<size_t>(n));
    }
    {
      std::lock_guard lock(mu_);
      head_ = head.empty() ? "(none)" : head;
      cv_.notify_all();
    }
    while (true) {
      std::string out;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return !outbox_.empty() || closing_; });
        if (outbox_.empty()) break;
        out = std::move(outbox_.front());
        outbox_.erase(outbox_.begin());
      }
      size_t sent = 0;
      while (sent < out.size()) {
        const ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
    }
    ::close(fd);
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string head_;
  std::vector<std::string> outbox_;
  bool closing_ = false;
};

constexpr std::string_view kChunkedHead =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";

// A whole chunked answer of `chunks` chunks of `chunk_bytes` 'y's (no Content-Length, so a
// cap is found while reading), then the connection closes.
void SendChunkedBody(StreamPeer& peer, int chunks, size_t chunk_bytes) {
  peer.Send(std::string(kChunkedHead));
  for (int i = 0; i < chunks; ++i) peer.SendChunk(std::string(chunk_bytes, 'y'));
  peer.Send("0\r\n\r\n");
  peer.Close();
}

TEST(ClientChunkedTest, BodyGrowingPastTheCapIsResourceExhausted) {
  StreamPeer peer;
  SendChunkedBody(peer, /*chunks=*/64, /*chunk_bytes=*/size_t{16} * 1024);  // 1 MiB
  ClientOptions options;
  options.base_url = peer.base_url();
  options.max_response_bytes = size_t{256} * 1024;
  FakeClock clock;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options, clock);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<ClientResponse> r = (*client)->Get("/stream");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_EQ(FailureReason(r.status()), "too_large");
}

TEST(ClientChunkedTest, ChunkedBodyUnderTheCapIsReadWhole) {
  StreamPeer peer;
  SendChunkedBody(peer, /*chunks=*/16, /*chunk_bytes=*/1000);
  ClientOptions options;
  options.base_url = peer.base_url();
  options.max_response_bytes = 16000;
  FakeClock clock;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options, clock);
  ASSERT_TRUE(client.ok()) << client.status();
  ClientRequest request;
  request.path_and_query = "/stream";
  request.body_spare_capacity = 64;
  absl::StatusOr<ClientResponse> r = (*client)->Do(request);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, std::string(16000, 'y'));
  EXPECT_GE(r->body.capacity(), 16000u + 64u);
}

// What a stream's callback was given, for the test thread to wait on.
class Received {
 public:
  bool Add(std::string_view chunk) {
    std::lock_guard lock(mu_);
    text_.append(chunk);
    cv_.notify_all();
    return keep_going_;
  }
  // Waits until `text` has been received in all; false when kGuard passes first.
  bool WaitFor(std::string_view text) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kGuard, [&] { return text_ == text; });
  }
  std::string text() {
    std::lock_guard lock(mu_);
    return text_;
  }
  void StopAfterNext() {
    std::lock_guard lock(mu_);
    keep_going_ = false;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string text_;
  bool keep_going_ = true;
};

class ClientStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ClientOptions options;
    options.base_url = peer_.base_url();
    options.bearer_token = "stream-token";
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options, clock_);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  // Starts a stream of GET `path` on another thread.
  std::future<absl::Status> StartStream(const std::string& path, std::stop_token stop = {}) {
    ClientRequest request;
    request.path_and_query = path;
    request.stop = std::move(stop);
    return std::async(std::launch::async, [this, request] {
      return client_->Stream(
          request, kHeaderTimeout, [this](std::string_view chunk) { return received_.Add(chunk); },
          &status_code_, &error_body_);
    });
  }

  static constexpr Duration kHeaderTimeout = std::chrono::seconds(10);
  StreamPeer peer_;
  FakeClock clock_;
  std::unique_ptr<Client> client_;
  Received received_;
  int status_code_ = 0;
  std::string error_body_;
};

TEST_F(ClientStreamTest, ChunksAreDeliveredAsTheyArriveWithoutABodyDeadline) {
  std::future<absl::Status> outcome = StartStream("/api/v1/pods?watch=true");
  const std::string head = peer_.WaitForHead();
  EXPECT_THAT(head, HasSubstr("GET /api/v1/pods?watch=true HTTP/1.1\r\n"));
  EXPECT_THAT(head, HasSubstr("Bearer stream-token\r\n"));
  peer_.Send(std::string(kChunkedHead));
  peer_.SendChunk("{\"type\":\"ADDED\"}\n");
  // Delivered while the body is still open.
  ASSERT_TRUE(received_.WaitFor("{\"type\":\"ADDED\"}\n")) << received_.text();
  // Past the header timeout: a body has no deadline.
  clock_.Advance(kHeaderTimeout * 3);
  peer_.SendChunk("{\"type\":\"DELETED\"}\n");
  ASSERT_TRUE(received_.WaitFor("{\"type\":\"ADDED\"}\n{\"type\":\"DELETED\"}\n"));
  peer_.Send("0\r\n\r\n");
  ASSERT_EQ(outcome.wait_for(kGuard), std::future_status::ready);
  absl::Status status = outcome.get();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(status_code_, 200);
  EXPECT_EQ(error_body_, "");
}

TEST_F(ClientStreamTest, CallbackReturningFalseEndsTheStreamOk) {
  received_.StopAfterNext();
  std::future<absl::Status> outcome = StartStream("/watch");
  ASSERT_FALSE(peer_.WaitForHead().empty());
  peer_.Send(std::string(kChunkedHead));
  peer_.SendChunk("first\n");
  // The body never ends; the callback's false does.
  ASSERT_EQ(outcome.wait_for(kGuard), std::future_status::ready);
  absl::Status status = outcome.get();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(received_.text(), "first\n");
}

TEST_F(ClientStreamTest, StopWhileTheBodyIsOpenIsCancelled) {
  std::stop_source stop;
  std::future<absl::Status> outcome = StartStream("/watch", stop.get_token());
  ASSERT_FALSE(peer_.WaitForHead().empty());
  peer_.Send(std::string(kChunkedHead));
  peer_.SendChunk("x\n");
  ASSERT_TRUE(received_.WaitFor("x\n"));
  stop.request_stop();
  ASSERT_EQ(outcome.wait_for(kGuard), std::future_status::ready);
  absl::Status status = outcome.get();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_EQ(FailureReason(status), "cancelled");
}

TEST_F(ClientStreamTest, HeadNotWithinTheHeaderTimeoutIsDeadlineExceeded) {
  std::future<absl::Status> outcome = StartStream("/watch?x=1");
  ASSERT_FALSE(peer_.WaitForHead().empty());
  clock_.Advance(kHeaderTimeout);
  ASSERT_EQ(outcome.wait_for(kGuard), std::future_status::ready);
  absl::Status status = outcome.get();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("GET /watch: no response head within 10s"));
  EXPECT_EQ(FailureReason(status), "timeout");
}

TEST_F(ClientStreamTest, NonSuccessAnswerGoesToTheErrorBodyNotTheCallback) {
  std::future<absl::Status> outcome = StartStream("/watch");
  ASSERT_FALSE(peer_.WaitForHead().empty());
  peer_.Send("HTTP/1.1 410 Gone\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n");
  peer_.Send("{\"reason\":\"Gone\"");
  ASSERT_EQ(outcome.wait_for(kGuard), std::future_status::ready);
  absl::Status status = outcome.get();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(status_code_, 410);
  EXPECT_EQ(error_body_, "{\"reason\":\"Gone\"");
  EXPECT_EQ(received_.text(), "");
}

TEST_F(ClientStreamTest, ConnectionBrokenDuringTheBodyIsUnavailable) {
  std::future<absl::Status> outcome = StartStream("/watch");
  ASSERT_FALSE(peer_.WaitForHead().empty());
  peer_.Send(std::string(kChunkedHead));
  peer_.SendChunk("partial\n");
  ASSERT_TRUE(received_.WaitFor("partial\n"));
  peer_.Close();  // without the last chunk
  ASSERT_EQ(outcome.wait_for(kGuard), std::future_status::ready);
  absl::Status status = outcome.get();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_EQ(FailureReason(status), "read");
}

TEST_F(ClientStreamTest, MalformedRequestIsRefusedBeforeSending) {
  ClientRequest request;
  request.path_and_query = "no-slash";
  absl::Status status = client_->Stream(
      request, kHeaderTimeout, [](std::string_view) { return true; }, &status_code_, &error_body_);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FailureReason(status), "request");
  request.path_and_query = "/ok";
  status = client_->Stream(
      request, Duration::zero(), [](std::string_view) { return true; }, &status_code_,
      &error_body_);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

TEST(ClientOptionsTest, ValidateNamesTheBadField) {
  TestPki pki;
  testing::TestCertificate pair = pki.IssueClient("u", {});
  testing::TestCertificate other = pki.IssueClient("v", {});
  auto error_of = [](const ClientOptions& options) {
    return std::string(options.Validate().message());
  };
  ClientOptions ok;
  ok.base_url = "https://10.0.0.1:6443";
  EXPECT_TRUE(ok.Validate().ok());
  ok.base_url = "https://rancher.example/k8s/clusters/c-1";
  EXPECT_TRUE(ok.Validate().ok());

  ClientOptions o = ok;
  o.base_url = "";
  EXPECT_THAT(error_of(o), HasSubstr("ClientOptions.base_url"));
  o.base_url = "https://10.0.0.1:6443/";
  EXPECT_THAT(error_of(o), HasSubstr("trailing slash"));
  o.base_url = "ftp://10.0.0.1";
  EXPECT_THAT(error_of(o), HasSubstr("scheme"));
  o.base_url = "https://10.0.0.1:6443?x=1";
  EXPECT_THAT(error_of(o), HasSubstr("query"));

  o = ok;
  o.base_url = "http://127.0.0.1:8080";
  o.tls_source = [] { return absl::StatusOr<ClientTls>(ClientTls{}); };
  EXPECT_THAT(error_of(o), HasSubstr("ClientOptions.tls_source needs an https base_url"));

  o = ok;
  o.ca_pem = "not a certificate";
  EXPECT_THAT(error_of(o), HasSubstr("ClientOptions.ca_pem"));
  o = ok;
  o.client_cert_pem = pair.cert_pem;
  EXPECT_THAT(error_of(o), HasSubstr("client_key_pem"));
  o.client_key_pem = other.key_pem;
  EXPECT_THAT(error_of(o), HasSubstr("does not match"));
  o.client_key_pem = pair.key_pem;
  EXPECT_TRUE(o.Validate().ok()) << o.Validate();
  o.base_url = "http://127.0.0.1:8080";
  EXPECT_THAT(error_of(o), HasSubstr("need an https base_url"));

  o = ok;
  o.bearer_token = "t";
  o.bearer_token_source = [] { return absl::StatusOr<std::string>("u"); };
  EXPECT_THAT(error_of(o), HasSubstr("at most one"));
  o = ok;
  o.bearer_token = "secret-value\r\nX: y";
  EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(error_of(o), Not(HasSubstr("secret-value")));
  o = ok;
  o.timeout = Duration::zero();
  EXPECT_THAT(error_of(o), HasSubstr("ClientOptions.timeout"));
  o = ok;
  o.max_response_bytes = 0;
  EXPECT_THAT(error_of(o), HasSubstr("ClientOptions.max_response_bytes"));

  FakeClock clock;
  o = ok;
  o.ca_pem = "garbage";
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(o, clock);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kubestat::http
