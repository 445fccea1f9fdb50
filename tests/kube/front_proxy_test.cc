#include "kubestat/kube/front_proxy.h"

#include <gtest/gtest.h>

#include <string>

namespace kubestat::kube {
namespace {

FrontProxyOptions Enabled() {
  FrontProxyOptions options;
  options.enabled = true;
  options.allowed_names = {"front-proxy-client"};
  return options;
}

ClientCertificate ProxyCert(std::string cn = "front-proxy-client") {
  return ClientCertificate{{std::string(kRequestHeaderCaBundle)}, std::move(cn), {}};
}

HeaderList ProxiedHeaders() {
  return HeaderList({{"X-Remote-User", "alice"},
                     {"x-remote-group", "team-a"},
                     {"X-Remote-Group", "system:monitoring"},
                     {"X-Remote-Extra-Scopes", "view"},
                     {"X-Remote-Extra-Scopes", "edit"},
                     {"X-Remote-Extra-Acme.com%2Fproject", "p1"},
                     {"Authorization", "Bearer ignored"}});
}

TEST(FrontProxyTest, BelievesHeadersFromTheAllowedProxy) {
  const HeaderList headers = ProxiedHeaders();
  const ClientCertificate cert = ProxyCert();
  FrontProxyResult result = AuthenticateFrontProxy(Enabled(), {headers, &cert});
  ASSERT_EQ(result.outcome, FrontProxyOutcome::kAuthenticated);
  UserInfo expected;
  expected.name = "alice";
  expected.groups = {"team-a", "system:monitoring"};
  expected.extra = {{"scopes", {"view", "edit"}}, {"acme.com/project", {"p1"}}};
  EXPECT_EQ(result.user, expected);
}

TEST(FrontProxyTest, IgnoresForgedHeadersWithoutACertificate) {
  const HeaderList headers = ProxiedHeaders();
  EXPECT_EQ(AuthenticateFrontProxy(Enabled(), {headers, nullptr}).outcome,
            FrontProxyOutcome::kNotApplicable);
}

TEST(FrontProxyTest, IgnoresHeadersWhenTheCertificateIsFromAnotherCa) {
  const HeaderList headers = ProxiedHeaders();
  // A user certificate with the proxy's name, signed by the client CA only.
  const ClientCertificate cert{{std::string(kClientCaBundle)}, "front-proxy-client", {}};
  EXPECT_EQ(AuthenticateFrontProxy(Enabled(), {headers, &cert}).outcome,
            FrontProxyOutcome::kNotApplicable);
}

TEST(FrontProxyTest, IgnoresHeadersWhenTheNameIsNotAllowed) {
  const HeaderList headers = ProxiedHeaders();
  const ClientCertificate cert = ProxyCert("some-other-client");
  EXPECT_EQ(AuthenticateFrontProxy(Enabled(), {headers, &cert}).outcome,
            FrontProxyOutcome::kNotApplicable);
  // With no allowed names, any certificate of the request-header CA qualifies.
  FrontProxyOptions any_name = Enabled();
  any_name.allowed_names.clear();
  EXPECT_EQ(AuthenticateFrontProxy(any_name, {headers, &cert}).outcome,
            FrontProxyOutcome::kAuthenticated);
}

TEST(FrontProxyTest, DisabledIgnoresEverything) {
  const HeaderList headers = ProxiedHeaders();
  const ClientCertificate cert = ProxyCert();
  FrontProxyOptions options = Enabled();
  options.enabled = false;
  EXPECT_EQ(AuthenticateFrontProxy(options, {headers, &cert}).outcome,
            FrontProxyOutcome::kNotApplicable);
}

TEST(FrontProxyTest, NoUsernameHeaderHasNoOpinion) {
  const HeaderList headers({{"X-Remote-Group", "team-a"}, {"X-Remote-User", ""}});
  const ClientCertificate cert = ProxyCert();
  EXPECT_EQ(AuthenticateFrontProxy(Enabled(), {headers, &cert}).outcome,
            FrontProxyOutcome::kNotApplicable);
}

TEST(FrontProxyTest, FirstNonEmptyUsernameHeaderAndCustomHeaders) {
  FrontProxyOptions options = Enabled();
  options.username_headers = {"X-User-A", "X-User-B"};
  options.uid_headers = {"X-Uid"};
  options.group_headers = {"X-Groups"};
  options.extra_headers_prefixes = {"X-Extra-"};
  const HeaderList headers({{"X-User-A", ""},
                            {"x-user-b", "bob"},
                            {"X-Uid", "1001"},
                            {"X-Groups", "g1,g2"},
                            {"X-Remote-Group", "not-mine"},
                            {"x-extra-Key%zz", "v"}});
  const ClientCertificate cert = ProxyCert();
  FrontProxyResult result = AuthenticateFrontProxy(options, {headers, &cert});
  ASSERT_EQ(result.outcome, FrontProxyOutcome::kAuthenticated);
  UserInfo expected;
  expected.name = "bob";
  expected.uid = "1001";
  expected.groups = {"g1,g2"};  // not split, as upstream
  expected.extra = {{"key%zz", {"v"}}};
  EXPECT_EQ(result.user, expected);
}

TEST(FrontProxyTest, ValidateNamesTheFlag) {
  FrontProxyOptions options = Enabled();
  EXPECT_TRUE(options.Validate().ok());
  options.username_headers.clear();
  EXPECT_EQ(options.Validate().message(),
            "--requestheader-username-headers must name at least one header");
  options = Enabled();
  options.group_headers = {""};
  EXPECT_EQ(options.Validate().code(), absl::StatusCode::kInvalidArgument);
  options.enabled = false;
  EXPECT_TRUE(options.Validate().ok());
}

}  // namespace
}  // namespace kubestat::kube
