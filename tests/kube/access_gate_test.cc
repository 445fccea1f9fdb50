// The front door on its own: always-allowed paths, 401 without identity, 400 for a path
// that cannot be read, 403 from the authorizer, and what passes carries user and attributes.
#include "kubestat/kube/access_gate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>

#include "kubestat/core/clock.h"
#include "kubestat/kube/access_rules.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::kube {
namespace {

using ::testing::HasSubstr;

class AccessGateTest : public ::testing::Test {
 protected:
  AccessGateTest() {
    const std::string tokens = dir_.File("tokens.csv");
    std::ofstream(tokens) << "alice-token,alice,1,shop-team\n";
    AuthenticatorOptions authn;
    authn.token_auth_file = tokens;
    authenticator_ = *Authenticator::Create(authn, clock_, nullptr);
    absl::StatusOr<AccessRules> rules = AccessRules::Parse(R"(rules:
- groups: [shop-team]
  verbs: [get, list]
  apiGroups: [metrics.k8s.io]
  resources: [pods]
  namespaces: [shop]
)",
                                                           "rules.yaml");
    EXPECT_TRUE(rules.ok()) << rules.status();
    authorizer_ = *Authorizer::Create(AuthorizerOptions{}, *std::move(rules), clock_, nullptr);
  }

  AccessDecision Check(std::string_view path, std::string_view query = "",
                       std::string_view token = "") {
    http::Request request;
    request.method = "GET";
    request.path = path;
    request.query = query;
    const std::string bearer = "Bearer " + std::string(token);
    if (!token.empty()) request.headers.push_back({"Authorization", bearer});
    return gate_.Check(request);
  }

  kubestat::testing::TempDir dir_;
  FakeClock clock_;
  std::unique_ptr<Authenticator> authenticator_;
  std::unique_ptr<Authorizer> authorizer_;
  AccessGate gate_{"test", {"/healthz", "/debug/*"}, nullptr, nullptr};
  AccessGate Gate() {
    return AccessGate("test", {"/healthz", "/debug/*"}, authenticator_.get(), authorizer_.get());
  }
};

TEST_F(AccessGateTest, AlwaysAllowedPathsPassWithoutCredentials) {
  gate_ = Gate();
  EXPECT_TRUE(Check("/healthz").always_allowed);
  EXPECT_TRUE(Check("/debug/pprof").always_allowed);
  EXPECT_FALSE(Check("/healthz/x").always_allowed);
  EXPECT_FALSE(Check("/debugger").always_allowed);
}

TEST_F(AccessGateTest, NoIdentityIs401AndAnUnreadablePathIs400) {
  gate_ = Gate();
  AccessDecision none = Check("/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods");
  ASSERT_TRUE(none.refusal);
  EXPECT_EQ(none.refusal->code, 401);
  AccessDecision wrong = Check("/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods", "", "nope");
  ASSERT_TRUE(wrong.refusal);
  EXPECT_EQ(wrong.refusal->code, 401);
  AccessDecision bad = Check("/apis/metrics.k8s.io/v1beta1/namespaces/%zz/pods", "", "alice-token");
  ASSERT_TRUE(bad.refusal);
  EXPECT_EQ(bad.refusal->code, 400);
}

TEST_F(AccessGateTest, TheAuthorizerDecidesAndWhatPassesCarriesWhoAndWhat) {
  gate_ = Gate();
  AccessDecision shop =
      Check("/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods", "", "alice-token");
  ASSERT_FALSE(shop.refusal);
  EXPECT_FALSE(shop.always_allowed);
  EXPECT_EQ(shop.user.name, "alice");
  EXPECT_EQ(shop.attributes.verb, "list");
  EXPECT_EQ(shop.attributes.namespace_name, "shop");
  AccessDecision nodes = Check("/apis/metrics.k8s.io/v1beta1/nodes", "", "alice-token");
  ASSERT_TRUE(nodes.refusal);
  EXPECT_EQ(nodes.refusal->code, 403);
  EXPECT_THAT(nodes.refusal->body, HasSubstr(R"(User \"alice\" cannot list resource \"nodes\")"));
}

TEST_F(AccessGateTest, ValidateNeedsBothPartsAndRootedPaths) {
  EXPECT_EQ(gate_.Validate().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Gate().Validate().ok());
  EXPECT_EQ(ValidateAlwaysAllowPaths({"/ok", "healthz"}, "x").message(),
            "x: \"healthz\" does not start with '/'");
}

}  // namespace
}  // namespace kubestat::kube
