// kube::ApiReviewTransport against a kubestat::http::Server over TLS on loopback standing in
// for the Kubernetes API: the request it sends, the credentials from a KubeApiConfig, and
// how each answer becomes a body or an error.
#include "kubestat/kube/api_review_transport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kubestat/core/clock.h"
#include "kubestat/http/server.h"
#include "kubestat/kube/review_transport.h"
#include "kubestat/kube/token_review.h"
#include "kubestat/testing/files.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"
#include "kubestat/testing/test_pki.h"
#include "prometheus/registry.h"

namespace kubestat::kube {
namespace {

using kubestat::testing::PollUntil;
using kubestat::testing::ReadAll;
using kubestat::testing::TempDir;
using kubestat::testing::TestPki;

constexpr auto kGuard = std::chrono::seconds(20);
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

constexpr std::string_view kTokenReviewAnswer =
    R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview",)"
    R"("status":{"authenticated":true,"user":{"username":"alice"}}})";

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
void StopWhenIdle(http::Server& server, prometheus::Registry& registry) {
  PollUntil([&] { return OpenConnections(registry) <= 0; }, kGuard);
  server.Stop();
}

struct Seen {
  std::string method;
  std::string target;
  std::string content_type;
  std::string accept;
  std::string authorization;
  std::string body;
  std::string client_cn;
};

class ApiReviewTransportTest : public ::testing::Test {
 protected:
  ApiReviewTransportTest() : client_ca_("client-ca") {}
  ~ApiReviewTransportTest() override {
    if (server_ != nullptr) StopWhenIdle(*server_, registry_);
  }

  // Starts the stand-in API server; `answer` gives the response to every request.
  void Start(const std::function<http::Response(const http::Request&)>& answer) {
    http::ServerOptions options;
    options.address = "127.0.0.1";
    options.io_threads = 1;
    options.worker_threads = 2;
    options.tls.cert_dir = dir_.File("certs");
    options.tls.client_cas = {{"client-ca", dir_.Write("client-ca.pem", client_ca_.ca_pem())}};
    server_ = std::make_unique<http::Server>(
        options,
        [this, answer](const http::Request& request) {
          Seen seen;
          seen.method = std::string(request.method);
          seen.target = std::string(request.target);
          seen.content_type = std::string(request.Header("Content-Type").value_or(""));
          seen.accept = std::string(request.Header("Accept").value_or(""));
          seen.authorization = std::string(request.Header("Authorization").value_or(""));
          seen.body = std::string(request.body);
          if (request.peer_certificate != nullptr) {
            seen.client_cn = request.peer_certificate->common_name;
          }
          {
            std::lock_guard lock(mu_);
            seen_.push_back(seen);
          }
          return answer(request);
        },
        registry_, RealClock::Get());
    absl::Status started = server_->Start();
    ASSERT_TRUE(started.ok()) << started;
    serving_ca_ = ReadAll(options.tls.cert_dir + "/apiserver.crt");
  }

  KubeApiConfig Config() const {
    KubeApiConfig config;
    config.server = server_->BaseUrl();
    config.ca_pem = serving_ca_;
    return config;
  }

  std::unique_ptr<ApiReviewTransport> MakeTransport(const KubeApiConfig& config) {
    absl::StatusOr<std::unique_ptr<ApiReviewTransport>> transport =
        ApiReviewTransport::Create(config, clock_);
    EXPECT_TRUE(transport.ok()) << transport.status();
    return transport.ok() ? std::move(*transport) : nullptr;
  }

  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

  // A Status answer with `code` and `message`.
  static http::Response StatusAnswer(int code, const std::string& message) {
    http::Response response;
    response.code = code;
    response.body = R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
                    R"("message":")" +
                    message + R"(","code":)" + std::to_string(code) + "}";
    return response;
  }

  TempDir dir_;
  TestPki client_ca_;
  FakeClock clock_;
  prometheus::Registry registry_;
  std::unique_ptr<http::Server> server_;
  std::string serving_ca_;
  std::mutex mu_;
  std::vector<Seen> seen_;
};

// Answers 201 with a TokenReview when the request is what the API server expects, and 400
// naming what is wrong otherwise.
http::Response StrictApiServer(const http::Request& request, const std::string& token) {
  http::Response response;
  std::string wrong;
  if (request.method != "POST") wrong = "method";
  if (request.path != kTokenReviewPath) wrong = "path";
  if (request.Header("Content-Type").value_or("") != "application/json") wrong = "content type";
  if (request.Header("Accept").value_or("") != "application/json") wrong = "accept";
  if (request.Header("Authorization").value_or("") != "Bearer " + token) wrong = "token";
  if (!wrong.empty()) {
    response.code = 400;
    response.body = R"({"kind":"Status","message":"wrong )" + wrong + R"("})";
    return response;
  }
  response.code = 201;
  response.body = std::string(kTokenReviewAnswer);
  return response;
}

TEST_F(ApiReviewTransportTest, CreatedAnswerBodyIsReturned) {
  Start([](const http::Request& request) { return StrictApiServer(request, "api-token"); });
  KubeApiConfig config = Config();
  config.token = "api-token";
  std::unique_ptr<ApiReviewTransport> transport = MakeTransport(config);
  ASSERT_NE(transport, nullptr);
  const std::string body = BuildTokenReviewRequest("reviewed-token", {});
  absl::StatusOr<std::string> answer = transport->Create(kTokenReviewPath, body);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(*answer, kTokenReviewAnswer);
  ASSERT_THAT(seen(), SizeIs(1));
  EXPECT_EQ(seen()[0].body, body);
}

TEST_F(ApiReviewTransportTest, TokenFileIsReadAgainWhenRewritten) {
  std::mutex token_mu;
  std::string expected = "file-token-1";
  Start([&](const http::Request& request) {
    std::lock_guard lock(token_mu);
    return StrictApiServer(request, expected);
  });
  KubeApiConfig config = Config();
  config.token_file = dir_.Write("token", "file-token-1\n");
  std::unique_ptr<ApiReviewTransport> transport = MakeTransport(config);
  ASSERT_NE(transport, nullptr);
  ASSERT_TRUE(transport->Create(kTokenReviewPath, "{}").ok());
  dir_.Write("token", "file-token-2\n");
  {
    std::lock_guard lock(token_mu);
    expected = "file-token-2";
  }
  absl::StatusOr<std::string> answer = transport->Create(kTokenReviewPath, "{}");
  ASSERT_TRUE(answer.ok()) << answer.status();
  std::vector<Seen> s = seen();
  ASSERT_THAT(s, SizeIs(2));
  EXPECT_EQ(s[0].authorization, "Bearer file-token-1");
  EXPECT_EQ(s[1].authorization, "Bearer file-token-2");
}

TEST_F(ApiReviewTransportTest, ClientCertificateOfTheConfigIsPresented) {
  Start([](const http::Request&) {
    http::Response response;
    response.code = 201;
    response.body = "{}";
    return response;
  });
  testing::TestCertificate pair = client_ca_.IssueClient("kubestat-aggregator", {});
  KubeApiConfig config = Config();
  config.client_cert_pem = pair.cert_pem;
  config.client_key_pem = pair.key_pem;
  std::unique_ptr<ApiReviewTransport> transport = MakeTransport(config);
  ASSERT_NE(transport, nullptr);
  ASSERT_TRUE(transport->Create(kSubjectAccessReviewPath, "{}").ok());
  ASSERT_THAT(seen(), SizeIs(1));
  EXPECT_EQ(seen()[0].client_cn, "kubestat-aggregator");
  EXPECT_EQ(seen()[0].authorization, "");
}

TEST_F(ApiReviewTransportTest, ForbiddenIsPermissionDeniedWithTheStatusMessageAndNoToken) {
  // A message that quotes both tokens (as a careless proxy might) and runs past 200 bytes.
  const std::string message = "tokenreviews.authentication.k8s.io is forbidden: token api-token " +
                              std::string("reviewed-token ") + std::string(300, 'z');
  Start([&](const http::Request&) { return StatusAnswer(403, message); });
  KubeApiConfig config = Config();
  config.token = "api-token";
  std::unique_ptr<ApiReviewTransport> transport = MakeTransport(config);
  ASSERT_NE(transport, nullptr);
  absl::StatusOr<std::string> answer =
      transport->Create(kTokenReviewPath, BuildTokenReviewRequest("reviewed-token", {}));
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kPermissionDenied);
  const std::string text(answer.status().message());
  EXPECT_THAT(text, HasSubstr("POST /apis/authentication.k8s.io/v1/tokenreviews: HTTP 403: "
                              "tokenreviews.authentication.k8s.io is forbidden: token [redacted] "
                              "[redacted] zzz"));
  EXPECT_THAT(text, Not(HasSubstr("api-token")));
  EXPECT_THAT(text, Not(HasSubstr("reviewed-token")));
  // The Status message is cut at 200 bytes.
  EXPECT_THAT(text, Not(HasSubstr(std::string(201, 'z'))));
  EXPECT_LT(text.size(), 300u);
}

TEST_F(ApiReviewTransportTest, EachCodeMapsToItsStatus) {
  Start([](const http::Request& request) {
    const int code = std::stoi(std::string(request.path.substr(1)));
    return StatusAnswer(code, "answered " + std::to_string(code));
  });
  std::unique_ptr<ApiReviewTransport> transport = MakeTransport(Config());
  ASSERT_NE(transport, nullptr);
  const std::vector<std::pair<int, absl::StatusCode>> cases = {
      {401, absl::StatusCode::kUnauthenticated},    {403, absl::StatusCode::kPermissionDenied},
      {500, absl::StatusCode::kUnavailable},        {503, absl::StatusCode::kUnavailable},
      {429, absl::StatusCode::kUnavailable},        {404, absl::StatusCode::kFailedPrecondition},
      {422, absl::StatusCode::kFailedPrecondition},
  };
  for (const auto& [code, status_code] : cases) {
    absl::StatusOr<std::string> answer = transport->Create("/" + std::to_string(code), "{}");
    ASSERT_FALSE(answer.ok()) << code;
    EXPECT_EQ(answer.status().code(), status_code) << code;
    EXPECT_THAT(std::string(answer.status().message()),
                HasSubstr("HTTP " + std::to_string(code) + ": answered " + std::to_string(code)));
  }
}

TEST_F(ApiReviewTransportTest, ServerDownIsUnavailable) {
  Start([](const http::Request&) { return http::Response{}; });
  KubeApiConfig config = Config();
  config.token = "api-token";
  server_->Stop();
  std::unique_ptr<ApiReviewTransport> transport = MakeTransport(config);
  ASSERT_NE(transport, nullptr);
  absl::StatusOr<std::string> answer =
      transport->Create(kTokenReviewPath, BuildTokenReviewRequest("reviewed-token", {}));
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(answer.status().message()),
              HasSubstr("POST /apis/authentication.k8s.io/v1/tokenreviews: connecting"));
  EXPECT_THAT(std::string(answer.status().message()), Not(HasSubstr("token-")));
}

TEST_F(ApiReviewTransportTest, UnreadableTokenFileIsUnavailable) {
  Start([](const http::Request&) { return http::Response{}; });
  KubeApiConfig config = Config();
  config.token_file = dir_.File("missing-token");
  std::unique_ptr<ApiReviewTransport> transport = MakeTransport(config);
  ASSERT_NE(transport, nullptr);
  absl::StatusOr<std::string> answer = transport->Create(kTokenReviewPath, "{}");
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(answer.status().message()), HasSubstr("missing-token"));
  EXPECT_TRUE(seen().empty());
}

TEST(ApiReviewTransportConfigTest, UnusableConfigIsInvalidArgument) {
  FakeClock clock;
  KubeApiConfig config;
  config.server = "https://10.0.0.1:6443";
  config.token = "t";
  config.token_file = "/var/run/token";
  EXPECT_EQ(ApiReviewTransport::Create(config, clock).status().code(),
            absl::StatusCode::kInvalidArgument);
  config.token_file.clear();
  config.ca_pem = "not PEM";
  absl::Status status = ApiReviewTransport::Create(config, clock).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("ca_pem"));
  config.ca_pem.clear();
  config.server = "";
  EXPECT_EQ(ApiReviewTransport::Create(config, clock).status().code(),
            absl::StatusCode::kInvalidArgument);
  config.server = "https://10.0.0.1:6443/";
  EXPECT_TRUE(ApiReviewTransport::Create(config, clock).ok());
}

}  // namespace
}  // namespace kubestat::kube
