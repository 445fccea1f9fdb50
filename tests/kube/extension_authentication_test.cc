// kube::ParseExtensionAuthentication: the ConfigMap kube-apiserver publishes, as it writes it
// (lists as JSON arrays inside the strings), and the versions that must not be applied.
#include "kubestat/kube/extension_authentication.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace kubestat::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kCa[] = "-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\\n";

std::string ConfigMap(const std::string& data) {
  return R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":)"
         R"("extension-apiserver-authentication","namespace":"kube-system",)"
         R"("resourceVersion":"4711"},"data":{)" +
         data + "}}";
}

TEST(ExtensionAuthenticationTest, ReadsWhatKubeApiserverPublishes) {
  const std::string json =
      ConfigMap(std::string(R"("client-ca-file":")") + kCa + R"(",)" +
                R"("requestheader-allowed-names":"[\"front-proxy-client\"]",)"
                R"("requestheader-client-ca-file":")" +
                kCa +
                R"(",)"
                R"("requestheader-extra-headers-prefix":"[\"X-Remote-Extra-\"]",)"
                R"("requestheader-group-headers":"[\"X-Remote-Group\"]",)"
                R"("requestheader-uid-headers":"[\"X-Remote-Uid\"]",)"
                R"("requestheader-username-headers":"[\"X-Remote-User\"]")");
  absl::StatusOr<ExtensionAuthentication> trust = ParseExtensionAuthentication(json);
  ASSERT_TRUE(trust.ok()) << trust.status();
  EXPECT_EQ(trust->resource_version, "4711");
  EXPECT_THAT(trust->client_ca_pem, HasSubstr("-----BEGIN CERTIFICATE-----\nMIIB\n"));
  EXPECT_EQ(trust->requestheader_client_ca_pem, trust->client_ca_pem);
  EXPECT_THAT(trust->allowed_names, ElementsAre("front-proxy-client"));
  EXPECT_THAT(trust->username_headers, ElementsAre("X-Remote-User"));
  EXPECT_THAT(trust->uid_headers, ElementsAre("X-Remote-Uid"));
  EXPECT_THAT(trust->group_headers, ElementsAre("X-Remote-Group"));
  EXPECT_THAT(trust->extra_headers_prefixes, ElementsAre("X-Remote-Extra-"));
  const FrontProxyOptions proxy = trust->FrontProxy();
  EXPECT_TRUE(proxy.enabled);
  EXPECT_EQ(proxy.ca_bundle, kRequestHeaderCaBundle);
  EXPECT_THAT(proxy.allowed_names, ElementsAre("front-proxy-client"));
  EXPECT_TRUE(proxy.Validate().ok());
}

TEST(ExtensionAuthenticationTest, AbsentKeysAreEmptyAndAnEmptyListIsAny) {
  absl::StatusOr<ExtensionAuthentication> trust = ParseExtensionAuthentication(
      ConfigMap(R"("requestheader-allowed-names":"","requestheader-username-headers":"[]")"));
  ASSERT_TRUE(trust.ok()) << trust.status();
  EXPECT_TRUE(trust->client_ca_pem.empty());
  EXPECT_TRUE(trust->requestheader_client_ca_pem.empty());
  EXPECT_TRUE(trust->allowed_names.empty());
  EXPECT_TRUE(trust->username_headers.empty());
  // No username header: a front proxy described so could name nobody.
  EXPECT_FALSE(trust->FrontProxy().Validate().ok());
  absl::StatusOr<ExtensionAuthentication> no_data =
      ParseExtensionAuthentication(R"({"kind":"ConfigMap","metadata":{"resourceVersion":"9"}})");
  ASSERT_TRUE(no_data.ok()) << no_data.status();
  EXPECT_EQ(no_data->resource_version, "9");
}

TEST(ExtensionAuthenticationTest, VersionsThatDoNotReadAreRefusedNamingTheKey) {
  for (const auto& [json, key] : std::vector<std::pair<std::string, std::string>>{
           {"not json", "not a JSON object"},
           {"[]", "not a JSON object"},
           {R"({"kind":"Secret"})", "kind is Secret"},
           {R"({"kind":"ConfigMap","data":[]})", "data is not an object"},
           {ConfigMap(R"("requestheader-group-headers":7)"), "requestheader-group-headers"},
           {ConfigMap(R"("requestheader-allowed-names":"front-proxy-client")"),
            "requestheader-allowed-names is not a JSON array of strings"},
           {ConfigMap(R"("requestheader-username-headers":"[1]")"),
            "requestheader-username-headers is not a JSON array of strings"},
           {ConfigMap(R"("requestheader-client-ca-file":"not a certificate")"),
            "requestheader-client-ca-file holds no PEM certificate"},
           {ConfigMap(R"("client-ca-file":"")"), "client-ca-file holds no PEM certificate"},
       }) {
    absl::StatusOr<ExtensionAuthentication> trust = ParseExtensionAuthentication(json);
    ASSERT_FALSE(trust.ok()) << json;
    EXPECT_EQ(trust.status().code(), absl::StatusCode::kInvalidArgument) << json;
    EXPECT_THAT(trust.status().message(), HasSubstr(key)) << json;
    EXPECT_THAT(trust.status().message(),
                HasSubstr("ConfigMap kube-system/extension-apiserver-authentication"));
  }
}

TEST(ExtensionAuthenticationTest, SameTrustIgnoresTheResourceVersionOnly) {
  ExtensionAuthentication a;
  a.requestheader_client_ca_pem = kCa;
  a.username_headers = {"X-Remote-User"};
  a.resource_version = "1";
  ExtensionAuthentication b = a;
  b.resource_version = "2";
  EXPECT_TRUE(a.SameTrust(b));
  b.allowed_names = {"front-proxy-client"};
  EXPECT_FALSE(a.SameTrust(b));
  b = a;
  b.client_ca_pem = kCa;
  EXPECT_FALSE(a.SameTrust(b));
}

}  // namespace
}  // namespace kubestat::kube
