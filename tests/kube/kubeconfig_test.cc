#include "kubestat/kube/kubeconfig.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "absl/strings/escaping.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::kube {
namespace {

using testing::TempDir;

constexpr char kCaPem[] = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
constexpr char kCertPem[] = "-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n";
constexpr char kKeyPem[] = "-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n";

std::string B64(const std::string& s) { return absl::Base64Escape(s); }

TEST(KubeconfigTest, ReadsServerCaDataTokenAndNamespaceOfTheCurrentContext) {
  std::string yaml = R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: dev
  cluster: {server: "https://dev.example:6443"}
- name: prod
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: )" +
                     B64(kCaPem) + R"(
contexts:
- name: dev
  context: {cluster: dev, user: dev-user}
- name: prod
  context: {cluster: prod, user: admin, namespace: shop}
users:
- name: dev-user
  user: {token: dev-token}
- name: admin
  user:
    token: s3cret
)";
  absl::StatusOr<KubeApiConfig> config = ParseKubeconfig(yaml, "/nowhere");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.0.0.1:6443");
  EXPECT_EQ(config->ca_pem, kCaPem);
  EXPECT_EQ(config->token, "s3cret");
  EXPECT_TRUE(config->token_file.empty());
  EXPECT_EQ(config->namespace_name, "shop");
  EXPECT_FALSE(config->insecure_skip_tls_verify);

  absl::StatusOr<KubeApiConfig> dev = ParseKubeconfig(yaml, "/nowhere", "dev");
  ASSERT_TRUE(dev.ok()) << dev.status();
  EXPECT_EQ(dev->server, "https://dev.example:6443");
  EXPECT_EQ(dev->token, "dev-token");
  EXPECT_TRUE(dev->ca_pem.empty());
}

TEST(KubeconfigTest, ResolvesCaTokenAndClientCertificateFilesRelativeToTheKubeconfig) {
  TempDir dir;
  dir.Write("ca.crt", kCaPem);
  dir.Write("client.crt", kCertPem);
  dir.Write("client.key", kKeyPem);
  dir.Write("token", "file-token");
  std::string path = dir.Write("config", R"(
current-context: c
clusters:
- name: k
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority: ca.crt
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user:
    tokenFile: token
    client-certificate: client.crt
    client-key: client.key
)");
  absl::StatusOr<KubeApiConfig> config = LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->ca_pem, kCaPem);
  EXPECT_EQ(config->token_file, dir.File("token"));
  EXPECT_TRUE(config->token.empty());
  EXPECT_EQ(config->client_cert_pem, kCertPem);
  EXPECT_EQ(config->client_key_pem, kKeyPem);
}

TEST(KubeconfigTest, ReadsClientCertificateDataAndInsecureFlag) {
  std::string yaml = R"(
current-context: c
clusters:
- name: k
  cluster: {server: "http://127.0.0.1:8001", insecure-skip-tls-verify: true}
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user:
    client-certificate-data: )" +
                     B64(kCertPem) + R"(
    client-key-data: )" +
                     B64(kKeyPem) + "\n";
  absl::StatusOr<KubeApiConfig> config = ParseKubeconfig(yaml, "");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "http://127.0.0.1:8001");
  EXPECT_TRUE(config->insecure_skip_tls_verify);
  EXPECT_EQ(config->client_cert_pem, kCertPem);
  EXPECT_EQ(config->client_key_pem, kKeyPem);
}

TEST(KubeconfigTest, ClearErrorsForBrokenConfigs) {
  auto error = [](const std::string& yaml, std::string_view context = "") {
    absl::StatusOr<KubeApiConfig> config = ParseKubeconfig(yaml, "/nowhere", context);
    EXPECT_FALSE(config.ok());
    return std::string(config.status().message());
  };
  EXPECT_NE(error("{{{").find("not valid YAML"), std::string::npos);
  EXPECT_NE(error("clusters: []").find("no current-context"), std::string::npos);
  EXPECT_NE(error("current-context: missing\ncontexts: []").find("no entry named \"missing\""),
            std::string::npos);
  const std::string base = R"(
current-context: c
clusters:
- name: k
  cluster: {server: "https://a:1", certificate-authority: missing-ca.crt}
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user:
    exec: {command: aws}
)";
  EXPECT_NE(error(base).find("missing-ca.crt"), std::string::npos);
  std::string exec = base;
  exec.replace(exec.find(", certificate-authority: missing-ca.crt"),
               std::string(", certificate-authority: missing-ca.crt").size(), "");
  EXPECT_NE(error(exec).find("exec"), std::string::npos);
  EXPECT_NE(error("current-context: c\nclusters: [{name: k, cluster: {server: ftp://x}}]\n"
                  "contexts: [{name: c, context: {cluster: k}}]")
                .find("not an http(s) URL"),
            std::string::npos);
  EXPECT_NE(error("current-context: c\nclusters: [{name: k, cluster: {server: 'https://x'}}]\n"
                  "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                  "users: [{name: u, user: {client-certificate-data: " +
                  B64(kCertPem) + "}}]")
                .find("without a key"),
            std::string::npos);
  EXPECT_FALSE(LoadKubeconfig("/nonexistent/kubeconfig").ok());
}

TEST(KubeconfigTest, InClusterConfigUsesServiceAccountFilesAndEnvironment) {
  TempDir dir;
  dir.Write("token", "sa-token");
  dir.Write("ca.crt", kCaPem);
  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  absl::StatusOr<KubeApiConfig> config = InClusterConfig(dir.path());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->token_file, dir.File("token"));
  EXPECT_EQ(config->ca_pem, kCaPem);
  ::setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  EXPECT_EQ(InClusterConfig(dir.path())->server, "https://[fd00::1]:443");
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  absl::StatusOr<KubeApiConfig> outside = InClusterConfig(dir.path());
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.status().code(), absl::StatusCode::kNotFound);
  ::unsetenv("KUBERNETES_SERVICE_PORT");
}

}  // namespace
}  // namespace kubestat::kube
