#include "kubestat/kube/authenticator.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <fstream>
#include <memory>
#include <string>

#include "auth_test_support.h"
#include "kubestat/core/clock.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::kube {
namespace {

using ::kubestat::kube::testing::CounterValue;
using ::kubestat::kube::testing::FakeReviewTransport;

constexpr char kSecretToken[] = "s3cr3t-t0ken-value-0123456789";

std::string Authenticated(std::string user, std::vector<std::string> groups) {
  std::string g;
  for (const std::string& group : groups) g += (g.empty() ? "\"" : ",\"") + group + "\"";
  return R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","status":{)"
         R"("authenticated":true,"user":{"username":")" +
         user + R"(","groups":[)" + g + "]}}}";
}

class AuthenticatorTest : public ::testing::Test {
 protected:
  AuthenticatorTest() {
    std::ofstream(token_file_path_) << "file-token,carol,c-1,\"team-c,ops\"\n";
    options_.front_proxy.enabled = true;
    options_.front_proxy.allowed_names = {"front-proxy-client"};
    options_.client_certificates = true;
    options_.token_auth_file = token_file_path_;
    options_.token_review = true;
  }

  std::unique_ptr<Authenticator> Make() {
    absl::StatusOr<std::unique_ptr<Authenticator>> a =
        Authenticator::Create(options_, clock_, &transport_, &registry_);
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? std::move(*a) : nullptr;
  }

  double Attempts(std::string method, std::string result) {
    return CounterValue(registry_, "kubestat_authentication_attempts_total",
                        {{"method", method}, {"result", result}});
  }

  kubestat::testing::TempDir dir_;
  std::string token_file_path_ = dir_.File("tokens.csv");
  FakeClock clock_;
  FakeReviewTransport transport_;
  prometheus::Registry registry_;
  AuthenticatorOptions options_;
};

TEST_F(AuthenticatorTest, FrontProxyWinsOnAQualifiedConnection) {
  auto authn = Make();
  const HeaderList headers({{"X-Remote-User", "alice"},
                            {"X-Remote-Group", "team-a"},
                            {"Authorization", "Bearer file-token"}});
  const ClientCertificate cert{{"requestheader-client-ca"}, "front-proxy-client", {}};
  AuthenticationResult result = authn->Authenticate({headers, &cert});
  ASSERT_EQ(result.outcome, AuthenticationOutcome::kAuthenticated);
  EXPECT_EQ(result.method, AuthenticationMethod::kFrontProxy);
  EXPECT_EQ(result.user.name, "alice");
  EXPECT_EQ(result.user.groups, (std::vector<std::string>{"team-a", "system:authenticated"}));
  EXPECT_EQ(Attempts("front_proxy", "authenticated"), 1);
}

TEST_F(AuthenticatorTest, TheClustersTrustReplacesTheAllowedNamesHeadersAndClientCertificates) {
  auto authn = Make();
  const HeaderList headers({{"X-Proxy-User", "alice"}, {"X-Remote-User", "mallory"}});
  const ClientCertificate proxy{{"requestheader-client-ca"}, "aggregator", {}};
  const ClientCertificate user{{"client-ca"}, "bob", {"team-b"}};
  // The flags' names: the proxy's CN is not among them.
  EXPECT_EQ(authn->Authenticate({headers, &proxy}).outcome, AuthenticationOutcome::kRejected);
  FrontProxyOptions published;
  published.enabled = true;
  published.allowed_names = {"aggregator"};
  published.username_headers = {"X-Proxy-User"};
  ASSERT_TRUE(authn->SetClusterTrust(published, /*client_certificates=*/false).ok());
  AuthenticationResult proxied = authn->Authenticate({headers, &proxy});
  ASSERT_EQ(proxied.outcome, AuthenticationOutcome::kAuthenticated);
  EXPECT_EQ(proxied.user.name, "alice");
  // Client certificates no longer authenticate: bob is nobody.
  EXPECT_EQ(authn->Authenticate({HeaderList(), &user}).outcome,
            AuthenticationOutcome::kNoCredentials);
  // A trust that does not validate changes nothing.
  FrontProxyOptions broken = published;
  broken.username_headers.clear();
  EXPECT_FALSE(authn->SetClusterTrust(broken, true).ok());
  EXPECT_EQ(authn->Authenticate({headers, &proxy}).user.name, "alice");
  EXPECT_EQ(authn->Authenticate({HeaderList(), &user}).outcome,
            AuthenticationOutcome::kNoCredentials);
}

TEST_F(AuthenticatorTest, ForgedProxyHeadersWithoutCertificateAreNotBelieved) {
  auto authn = Make();
  const HeaderList headers(
      {{"X-Remote-User", "system:admin"}, {"X-Remote-Group", "system:masters"}});
  AuthenticationResult result = authn->Authenticate({headers, nullptr});
  EXPECT_EQ(result.outcome, AuthenticationOutcome::kNoCredentials);
  EXPECT_EQ(Attempts("none", "no_credentials"), 1);
  // With a user certificate, the headers are ignored and the certificate names the user.
  const ClientCertificate cert{{"client-ca"}, "dave", {"team-d"}};
  result = authn->Authenticate({headers, &cert});
  ASSERT_EQ(result.outcome, AuthenticationOutcome::kAuthenticated);
  EXPECT_EQ(result.method, AuthenticationMethod::kClientCertificate);
  EXPECT_EQ(result.user.name, "dave");
}

TEST_F(AuthenticatorTest, ClientCertificateNamesUserAndGroups) {
  auto authn = Make();
  const HeaderList headers;
  const ClientCertificate cert{{"client-ca"}, "system:node:n1", {"system:nodes", "extra-o"}};
  AuthenticationResult result = authn->Authenticate({headers, &cert});
  ASSERT_EQ(result.outcome, AuthenticationOutcome::kAuthenticated);
  EXPECT_EQ(result.method, AuthenticationMethod::kClientCertificate);
  UserInfo expected;
  expected.name = "system:node:n1";
  expected.groups = {"system:nodes", "extra-o", "system:authenticated"};
  EXPECT_EQ(result.user, expected);
  EXPECT_EQ(Attempts("client_certificate", "authenticated"), 1);
}

TEST_F(AuthenticatorTest, UntrustedCertificateIsRejectedUnlessATokenAuthenticates) {
  auto authn = Make();
  const ClientCertificate cert{{}, "mallory", {"system:masters"}};
  const HeaderList none;
  AuthenticationResult result = authn->Authenticate({none, &cert});
  EXPECT_EQ(result.outcome, AuthenticationOutcome::kRejected);
  EXPECT_EQ(result.reason, "client certificate is not signed by the client CA");
  EXPECT_EQ(Attempts("client_certificate", "rejected"), 1);

  const HeaderList bearer({{"Authorization", "Bearer file-token"}});
  result = authn->Authenticate({bearer, &cert});
  ASSERT_EQ(result.outcome, AuthenticationOutcome::kAuthenticated);
  EXPECT_EQ(result.user.name, "carol");

  const ClientCertificate empty_cn{{"client-ca"}, "", {"g"}};
  result = authn->Authenticate({none, &empty_cn});
  EXPECT_EQ(result.outcome, AuthenticationOutcome::kRejected);
}

TEST_F(AuthenticatorTest, TokenFileComesBeforeTokenReview) {
  auto authn = Make();
  const HeaderList headers({{"authorization", "bEaReR file-token"}});
  AuthenticationResult result = authn->Authenticate({headers, nullptr});
  ASSERT_EQ(result.outcome, AuthenticationOutcome::kAuthenticated);
  EXPECT_EQ(result.method, AuthenticationMethod::kTokenFile);
  UserInfo expected;
  expected.name = "carol";
  expected.uid = "c-1";
  expected.groups = {"team-c", "ops", "system:authenticated"};
  EXPECT_EQ(result.user, expected);
  EXPECT_EQ(transport_.call_count(), 0u);
  EXPECT_EQ(Attempts("token_file", "authenticated"), 1);
}

TEST_F(AuthenticatorTest, UnknownFileTokenFallsThroughToTokenReview) {
  auto authn = Make();
  transport_.Push(Authenticated("system:serviceaccount:mon:prom", {"system:serviceaccounts"}));
  const HeaderList headers({{"Authorization", std::string("Bearer ") + kSecretToken}});
  AuthenticationResult result = authn->Authenticate({headers, nullptr});
  ASSERT_EQ(result.outcome, AuthenticationOutcome::kAuthenticated);
  EXPECT_EQ(result.method, AuthenticationMethod::kTokenReview);
  EXPECT_EQ(result.user.name, "system:serviceaccount:mon:prom");
  EXPECT_EQ(result.user.groups,
            (std::vector<std::string>{"system:serviceaccounts", "system:authenticated"}));
  ASSERT_EQ(transport_.call_count(), 1u);
  EXPECT_EQ(transport_.calls()[0].body,
            std::string(R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview",)") +
                R"("spec":{"token":")" + kSecretToken + R"("}})");
  EXPECT_EQ(Attempts("token_review", "authenticated"), 1);
}

TEST_F(AuthenticatorTest, TokenReviewRejectionAndErrorKeepTheTokenSecret) {
  auto authn = Make();
  transport_.Push(
      std::string(R"({"kind":"TokenReview","status":{"authenticated":false,"error":"token )") +
      kSecretToken + R"( has expired"}})");
  const HeaderList headers({{"Authorization", std::string("Bearer ") + kSecretToken}});
  AuthenticationResult result = authn->Authenticate({headers, nullptr});
  EXPECT_EQ(result.outcome, AuthenticationOutcome::kRejected);
  EXPECT_EQ(result.reason.find(kSecretToken), std::string::npos) << result.reason;
  EXPECT_NE(result.reason.find("has expired"), std::string::npos) << result.reason;
  EXPECT_NE(result.reason.find(TokenFingerprint(kSecretToken)), std::string::npos);
  EXPECT_EQ(Attempts("token_review", "rejected"), 1);

  const std::string other = "another-secret-token-abcdef";
  transport_.Push(absl::UnavailableError("connection refused"));
  const HeaderList other_headers({{"Authorization", "Bearer " + other}});
  result = authn->Authenticate({other_headers, nullptr});
  EXPECT_EQ(result.outcome, AuthenticationOutcome::kError);
  EXPECT_EQ(result.reason.find(other), std::string::npos);
  EXPECT_NE(result.reason.find("token review failed: connection refused"), std::string::npos)
      << result.reason;
  EXPECT_EQ(Attempts("token_review", "error"), 1);
}

TEST_F(AuthenticatorTest, UnknownTokenWithoutTokenReviewIsRejected) {
  options_.token_review = false;
  auto authn = Make();
  const HeaderList headers({{"Authorization", std::string("Bearer ") + kSecretToken}});
  AuthenticationResult result = authn->Authenticate({headers, nullptr});
  EXPECT_EQ(result.outcome, AuthenticationOutcome::kRejected);
  EXPECT_EQ(result.reason, "unknown bearer token (" + TokenFingerprint(kSecretToken) + ")");
  EXPECT_EQ(result.reason.find(kSecretToken), std::string::npos);
}

TEST_F(AuthenticatorTest, MalformedBearerIsRejectedOtherSchemesAreNoCredentials) {
  auto authn = Make();
  for (const char* value : {"Bearer", "Bearer ", "Bearer  token", "Bearer a b"}) {
    const HeaderList headers({{"Authorization", value}});
    EXPECT_EQ(authn->Authenticate({headers, nullptr}).outcome, AuthenticationOutcome::kRejected)
        << value;
  }
  const HeaderList basic({{"Authorization", "Basic YWxpY2U6cHc="}});
  EXPECT_EQ(authn->Authenticate({basic, nullptr}).outcome, AuthenticationOutcome::kNoCredentials);
  EXPECT_EQ(transport_.call_count(), 0u);
}

TEST_F(AuthenticatorTest, AnonymousOnlyWhenAllowedAndOnlyWithoutCredentials) {
  options_.anonymous = true;
  auto authn = Make();
  const HeaderList none;
  AuthenticationResult result = authn->Authenticate({none, nullptr});
  ASSERT_EQ(result.outcome, AuthenticationOutcome::kAuthenticated);
  EXPECT_EQ(result.method, AuthenticationMethod::kAnonymous);
  EXPECT_EQ(result.user.name, "system:anonymous");
  EXPECT_EQ(result.user.groups, (std::vector<std::string>{"system:unauthenticated"}));
  EXPECT_EQ(Attempts("anonymous", "authenticated"), 1);

  // A bad token is never downgraded to anonymous.
  transport_.Push(R"({"kind":"TokenReview","status":{"authenticated":false}})");
  const HeaderList bad({{"Authorization", "Bearer wrong-token"}});
  EXPECT_EQ(authn->Authenticate({bad, nullptr}).outcome, AuthenticationOutcome::kRejected);
}

TEST_F(AuthenticatorTest, AuthenticatedGroupIsNotDuplicated) {
  auto authn = Make();
  const ClientCertificate cert{{"client-ca"}, "erin", {"system:authenticated"}};
  const HeaderList none;
  EXPECT_EQ(authn->Authenticate({none, &cert}).user.groups,
            (std::vector<std::string>{"system:authenticated"}));
}

TEST_F(AuthenticatorTest, CreateChecksOptionsAndFiles) {
  AuthenticatorOptions options = options_;
  options.token_auth_file = dir_.File("missing.csv");
  absl::StatusOr<std::unique_ptr<Authenticator>> a =
      Authenticator::Create(options, clock_, &transport_);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(a.status().message().find("--token-auth-file"), absl::string_view::npos);

  options = options_;
  a = Authenticator::Create(options, clock_, nullptr);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);

  options.token_review_options.success_ttl = std::chrono::seconds(-1);
  a = Authenticator::Create(options, clock_, &transport_);
  EXPECT_EQ(a.status().message(), "--authentication-token-webhook-cache-ttl must not be negative");
}

}  // namespace
}  // namespace kubestat::kube
