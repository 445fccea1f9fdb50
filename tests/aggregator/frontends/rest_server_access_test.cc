// The aggregator's front door over real HTTPS: who is believed (tokens, client
// certificates, front-proxy headers only from the proxy's certificate) and who may read
// what (node metrics, pod metrics and recommendations per namespace granted apart).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
// After gtest: cpprest defines a macro U that gtest uses as a template parameter name.
#include <cpprest/http_client.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <string>

#include "kubestat/aggregator/frontends/rest_server.h"
#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/aggregator/query/recommender.h"
#include "kubestat/core/clock.h"
#include "kubestat/storage/store.h"
#include "kubestat/testing/aggregator/ready_ingestor.h"
#include "kubestat/testing/aggregator/standard_cluster_source.h"
#include "kubestat/testing/temp_dir.h"
#include "kubestat/testing/test_pki.h"

namespace kubestat::aggregator {
namespace {

using rest_testing::EndTime;
using rest_testing::FakeMetricsSource;
using rest_testing::FillStandardCluster;
using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr char kV1beta1[] = "/apis/metrics.k8s.io/v1beta1";
constexpr char kV1alpha1[] = "/apis/metrics/v1alpha1";

constexpr char kRules[] = R"(rules:
- users: [alice]
  verbs: [get, list]
  apiGroups: [metrics.k8s.io, metrics]
  resources: [pods]
  namespaces: [shop]
- users: [carol]
  verbs: [get, list]
  apiGroups: [metrics]
  resources: [recommendations]
  namespaces: [shop]
- users: [admin]
  verbs: ['*']
  apiGroups: ['*']
  resources: ['*']
- users: [admin]
  verbs: [get]
  nonResourceURLs: ['*']
- groups: [system:monitoring]
  verbs: [get]
  nonResourceURLs: [/metrics]
- groups: [system:authenticated]
  verbs: [get]
  nonResourceURLs: [/api, /apis, /apis/*]
)";

struct Reply {
  int code = 0;
  std::string body;
};

// What a client presents: a bearer token, a client certificate, extra headers.
struct Credentials {
  std::string token;
  const kubestat::testing::TestCertificate* certificate = nullptr;
  std::map<std::string, std::string> headers;
};
Credentials Token(std::string token, std::map<std::string, std::string> headers = {}) {
  return Credentials{std::move(token), nullptr, std::move(headers)};
}
Credentials Certificate(const kubestat::testing::TestCertificate* certificate,
                        std::map<std::string, std::string> headers = {}) {
  return Credentials{"", certificate, std::move(headers)};
}
Credentials Headers(std::map<std::string, std::string> headers) {
  return Credentials{"", nullptr, std::move(headers)};
}

// Discovery knows one pod, shop/web-1 (a Deployment's), and no LimitRange.
class OnePodWorkloads final : public WorkloadSource {
 public:
  std::vector<discovery::PodInfo> Pods(std::string_view namespace_name) const override {
    if (!namespace_name.empty() && namespace_name != "shop") return {};
    discovery::PodInfo pod;
    pod.name = "web-1";
    pod.namespace_name = "shop";
    pod.owner_kind = "StatefulSet";
    pod.owner_name = "web";
    pod.containers = {{"app", {}, {}}};
    return {pod};
  }
  std::optional<limits::Workload> WorkloadOfPod(std::string_view, std::string_view) const override {
    return limits::Workload{"StatefulSet", "web"};
  }
  std::vector<limits::LimitRange> LimitRanges(std::string_view) const override { return {}; }
};

class RestServerAccessTest : public ::testing::Test {
 protected:
  RestServerAccessTest()
      : clock_(EndTime() + seconds(20)),
        client_ca_("kubestat-test-client-ca"),
        proxy_ca_("kubestat-test-front-proxy-ca"),
        proxy_(proxy_ca_.IssueClient("front-proxy-client", {})),
        stranger_proxy_(proxy_ca_.IssueClient("someone-else", {})),
        bob_(client_ca_.IssueClient("bob", {"system:monitoring"})),
        unknown_ca_("kubestat-test-unknown-ca"),
        mallory_(unknown_ca_.IssueClient("admin", {"system:masters"})) {}

  void SetUp() override {
    FillStandardCluster(source_);
    RestServerOptions options;
    options.secure.address = "127.0.0.1";
    options.secure.port = 0;
    options.secure.tls.cert_dir = dir_.File("certs");
    options.secure.tls.client_cas = {
        {std::string(kube::kClientCaBundle), dir_.Write("client-ca.crt", client_ca_.ca_pem())},
        {std::string(kube::kRequestHeaderCaBundle),
         dir_.Write("front-proxy-ca.crt", proxy_ca_.ca_pem())}};
    kube::AuthenticatorOptions authn;
    authn.client_certificates = true;
    authn.front_proxy.enabled = true;
    authn.front_proxy.allowed_names = {"front-proxy-client"};
    authn.token_auth_file =
        dir_.Write("tokens.csv",
                   "alice-token,alice,1\nadmin-token,admin,2\nprom-token,prometheus,3,"
                   "\"system:monitoring\"\ncarol-token,carol,4\n");
    absl::StatusOr<std::unique_ptr<kube::Authenticator>> authenticator =
        kube::Authenticator::Create(authn, clock_, nullptr, &registry_);
    ASSERT_TRUE(authenticator.ok()) << authenticator.status();
    authenticator_ = *std::move(authenticator);
    kube::AuthorizerOptions authz;
    authz.rules_file = dir_.Write("rules.yaml", kRules);
    absl::StatusOr<std::unique_ptr<kube::Authorizer>> authorizer =
        kube::Authorizer::Create(authz, clock_, nullptr, &registry_);
    ASSERT_TRUE(authorizer.ok()) << authorizer.status();
    authorizer_ = *std::move(authorizer);
    server_ = std::make_unique<RestServer>(options, source_, registry_, clock_, LivenessCheck{},
                                           AccessControl{authenticator_.get(), authorizer_.get()});
    // Recommendations from an empty store for the pod web-1 of shop (declared values).
    absl::StatusOr<testing::ReadyIngestor> ready =
        testing::OpenReadyIngestor(dir_.File("db"), &clock_);
    ASSERT_TRUE(ready.ok()) << ready.status();
    store_ = std::move(ready->store);
    ingestor_ = std::move(ready->ingestor);
    recommender_ = std::make_unique<Recommender>(RecommenderOptions{}, *ingestor_, *store_,
                                                 workloads_, clock_);
    server_->SetRecommender(recommender_.get());
    ASSERT_TRUE(server_->Start().ok());
  }

  Reply Get(const std::string& path, const Credentials& credentials = {}) {
    web::http::client::http_client_config config;
    config.set_validate_certificates(false);  // the self-signed serving pair of this test
    const kubestat::testing::TestCertificate* certificate = credentials.certificate;
    config.set_ssl_context_callback([certificate](boost::asio::ssl::context& context) {
      if (certificate == nullptr) return;
      context.use_certificate_chain(
          boost::asio::buffer(certificate->cert_pem.data(), certificate->cert_pem.size()));
      context.use_private_key(
          boost::asio::buffer(certificate->key_pem.data(), certificate->key_pem.size()),
          boost::asio::ssl::context::pem);
    });
    web::http::client::http_client client(server_->BaseUrl(), config);
    web::http::http_request request("GET");
    request.set_request_uri(path);
    if (!credentials.token.empty()) {
      request.headers().add("Authorization", "Bearer " + credentials.token);
    }
    for (const auto& [name, value] : credentials.headers) request.headers().add(name, value);
    web::http::http_response response = client.request(request).get();
    return {response.status_code(), response.extract_utf8string(true).get()};
  }

  FakeClock clock_;
  FakeMetricsSource source_;
  prometheus::Registry registry_;
  kubestat::testing::TempDir dir_;
  kubestat::testing::TestPki client_ca_;
  kubestat::testing::TestPki proxy_ca_;
  kubestat::testing::TestCertificate proxy_;
  kubestat::testing::TestCertificate stranger_proxy_;
  kubestat::testing::TestCertificate bob_;
  kubestat::testing::TestPki unknown_ca_;
  kubestat::testing::TestCertificate mallory_;
  std::unique_ptr<kube::Authenticator> authenticator_;
  std::unique_ptr<kube::Authorizer> authorizer_;
  OnePodWorkloads workloads_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<Ingestor> ingestor_;
  std::unique_ptr<Recommender> recommender_;
  std::unique_ptr<RestServer> server_;
};

TEST_F(RestServerAccessTest, ServesHttpsByDefault) {
  EXPECT_EQ(server_->BaseUrl().rfind("https://127.0.0.1:", 0), 0u) << server_->BaseUrl();
}

TEST_F(RestServerAccessTest, ProbesNeedNoCredentialsButMetricsDo) {
  EXPECT_EQ(Get("/healthz").code, 200);
  EXPECT_EQ(Get("/readyz").code, 200);
  const Reply nodes = Get(std::string(kV1beta1) + "/nodes");
  EXPECT_EQ(nodes.code, 401);
  EXPECT_THAT(nodes.body, HasSubstr("\"reason\":\"Unauthorized\""));
  EXPECT_EQ(Get("/metrics").code, 401);
  EXPECT_EQ(Get(std::string(kV1beta1) + "/nodes", Token("not-a-token")).code, 401);
}

TEST_F(RestServerAccessTest, PodMetricsOfOneNamespaceAreGrantedApartFromNodes) {
  const Credentials alice = Token("alice-token");
  EXPECT_EQ(Get(std::string(kV1beta1) + "/namespaces/shop/pods", alice).code, 200);
  EXPECT_EQ(Get(std::string(kV1alpha1) + "/namespaces/shop/pods/web-1", alice).code, 200);
  const Reply nodes = Get(std::string(kV1beta1) + "/nodes", alice);
  EXPECT_EQ(nodes.code, 403);
  EXPECT_THAT(nodes.body, HasSubstr("\"reason\":\"Forbidden\""));
  EXPECT_THAT(nodes.body, HasSubstr("User \\\"alice\\\" cannot list resource \\\"nodes\\\""));
  EXPECT_EQ(Get(std::string(kV1beta1) + "/namespaces/kube-system/pods", alice).code, 403);
  EXPECT_EQ(Get(std::string(kV1beta1) + "/pods", alice).code, 403);
  EXPECT_EQ(Get("/metrics", alice).code, 403);
  EXPECT_EQ(Get("/apis", alice).code, 200);
  EXPECT_EQ(Get(std::string(kV1beta1) + "/nodes", Token("admin-token")).code, 200);
}

// Recommendations (group metrics) are a resource of their own: pod metrics access does
// not imply them, and access to them does not imply pod metrics.
TEST_F(RestServerAccessTest, RecommendationsAreGrantedApartFromPodMetrics) {
  const std::string list = std::string(kV1alpha1) + "/namespaces/shop/recommendations";
  const std::string one = list + "/statefulset.web.app";
  const Credentials alice = Token("alice-token");  // pods of shop, not recommendations
  EXPECT_EQ(Get(std::string(kV1alpha1) + "/namespaces/shop/pods", alice).code, 200);
  for (const std::string& path : {list, one}) {
    const Reply refused = Get(path, alice);
    EXPECT_EQ(refused.code, 403) << path;
    EXPECT_THAT(refused.body, HasSubstr("\"kind\":\"Status\""));
    EXPECT_THAT(refused.body, HasSubstr("\"reason\":\"Forbidden\""));
    EXPECT_THAT(refused.body, HasSubstr("resource \\\"recommendations\\\""));
  }

  const Credentials carol = Token("carol-token");  // recommendations of shop, not pods
  const Reply listed = Get(list, carol);
  EXPECT_EQ(listed.code, 200) << listed.body;
  EXPECT_THAT(listed.body, HasSubstr("\"kind\":\"RecommendationList\""));
  EXPECT_THAT(listed.body, HasSubstr("statefulset.web.app"));
  EXPECT_EQ(Get(one, carol).code, 200);
  for (const std::string& path :
       {std::string(kV1alpha1) + "/namespaces/shop/pods",
        std::string(kV1beta1) + "/namespaces/shop/pods",
        std::string(kV1alpha1) + "/recommendations",
        std::string(kV1alpha1) + "/namespaces/kube-system/recommendations"}) {
    const Reply refused = Get(path, carol);
    EXPECT_EQ(refused.code, 403) << path;
    EXPECT_THAT(refused.body, HasSubstr("\"reason\":\"Forbidden\"")) << path;
  }
  EXPECT_EQ(Get(std::string(kV1alpha1) + "/recommendations", Token("admin-token")).code, 200);
}

TEST_F(RestServerAccessTest, ForgedFrontProxyHeadersAreNotBelieved) {
  // No certificate: the header is ignored, and nothing else identifies the request.
  EXPECT_EQ(Get(std::string(kV1beta1) + "/nodes", Headers({{"X-Remote-User", "admin"}})).code, 401);
  // A token's user stays the token's user whatever the headers say.
  EXPECT_EQ(
      Get(std::string(kV1beta1) + "/nodes", Token("alice-token", {{"X-Remote-User", "admin"}}))
          .code,
      403);
  // A certificate from the proxy CA with a name not allowed is not a proxy.
  EXPECT_EQ(Get(std::string(kV1beta1) + "/nodes",
                Certificate(&stranger_proxy_, {{"X-Remote-User", "admin"}}))
                .code,
            401);
  // A certificate no configured CA signed identifies nobody, whatever its CN.
  EXPECT_EQ(
      Get(std::string(kV1beta1) + "/nodes", Certificate(&mallory_, {{"X-Remote-User", "admin"}}))
          .code,
      401);
}

TEST_F(RestServerAccessTest, TheFrontProxyNamesTheUserItAuthenticated) {
  const Credentials as_alice =
      Certificate(&proxy_, {{"X-Remote-User", "alice"}, {"X-Remote-Group", "dev"}});
  EXPECT_EQ(Get(std::string(kV1beta1) + "/namespaces/shop/pods", as_alice).code, 200);
  EXPECT_EQ(Get(std::string(kV1beta1) + "/nodes", as_alice).code, 403);
  const Credentials as_admin = Certificate(&proxy_, {{"X-Remote-User", "admin"}});
  EXPECT_EQ(Get(std::string(kV1beta1) + "/nodes", as_admin).code, 200);
}

TEST_F(RestServerAccessTest, ClientCertificatesNameUserAndGroups) {
  // bob is in system:monitoring by his certificate's O: /metrics, not node metrics.
  EXPECT_EQ(Get("/metrics", Certificate(&bob_)).code, 200);
  EXPECT_EQ(Get(std::string(kV1beta1) + "/nodes", Certificate(&bob_)).code, 403);
  // So is a Prometheus with its own token.
  const Reply scrape = Get("/metrics", Token("prom-token"));
  EXPECT_EQ(scrape.code, 200);
  EXPECT_THAT(scrape.body, HasSubstr("kubestat_authentication_attempts_total"));
}

TEST_F(RestServerAccessTest, AWatchOfMetricsIsRefusedSoClientsFallBackToAList) {
  const Reply watch = Get(std::string(kV1beta1) +
                              "/namespaces/shop/pods?watch=1&sendInitialEvents=true&"
                              "resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
                          Token("admin-token"));
  EXPECT_EQ(watch.code, 405);
  EXPECT_THAT(watch.body, HasSubstr("\"reason\":\"MethodNotAllowed\""));
}

}  // namespace
}  // namespace kubestat::aggregator
