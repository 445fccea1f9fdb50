// KubeApiTlsFiles: a kubeconfig rewritten with a new CA (inline or in a file it names), a
// replaced client certificate, a rewrite that does not parse (the old material kept, the
// error logged once, the next good rewrite taken), a cluster's ca.crt replaced, and a
// config without files (nothing watched).
#include "kubestat/kube/kube_api_tls.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "absl/strings/escaping.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::kube {
namespace {

using testing::TempDir;

std::string Pem(const std::string& what) {
  return "-----BEGIN CERTIFICATE-----\n" + what + "\n-----END CERTIFICATE-----\n";
}

// A kubeconfig whose cluster has `ca` (inline with `inline_ca`, else as the file ca.pem
// beside it) and whose user presents the files client.pem and client.key.
std::string Kubeconfig(const std::string& ca_field) {
  return R"(apiVersion: v1
kind: Config
current-context: c
clusters:
- name: k
  cluster:
    server: https://127.0.0.1:6443
    )" + ca_field +
         R"(
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user:
    client-certificate: client.pem
    client-key: client.key
)";
}

std::string InlineCa(const std::string& pem) {
  return "certificate-authority-data: " + absl::Base64Escape(pem);
}

class KubeApiTlsFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.Write("client.pem", Pem("CLIENT-1"));
    dir_.Write("client.key", "-----BEGIN PRIVATE KEY-----\nKEY-1\n-----END PRIVATE KEY-----\n");
  }
  KubeApiConfig Load() {
    absl::StatusOr<KubeApiConfig> config = LoadKubeconfig(dir_.File("kubeconfig"));
    EXPECT_TRUE(config.ok()) << config.status();
    return config.ok() ? *config : KubeApiConfig{};
  }
  TempDir dir_;
};

TEST_F(KubeApiTlsFilesTest, AKubeconfigRewrittenWithANewInlineCaIsReadAgain) {
  dir_.Write("kubeconfig", Kubeconfig(InlineCa(Pem("CA-1"))));
  const KubeApiConfig config = Load();
  EXPECT_THAT(config.tls_files,
              ::testing::ElementsAre(dir_.File("kubeconfig"), dir_.File("client.pem"),
                                     dir_.File("client.key")));
  KubeApiTlsFiles files(config);
  ASSERT_TRUE(files.watching());
  absl::StatusOr<http::ClientTls> tls = files.Get();
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_EQ(tls->ca_pem, Pem("CA-1"));
  EXPECT_EQ(tls->client_cert_pem, Pem("CLIENT-1"));
  EXPECT_EQ(files.reloads(), 0u);

  dir_.Write("kubeconfig", Kubeconfig(InlineCa(Pem("CA-2"))));
  tls = files.Get();
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_EQ(tls->ca_pem, Pem("CA-2"));
  EXPECT_EQ(files.reloads(), 1u);
  // Unchanged files: the same material, nothing read.
  EXPECT_EQ(files.Get()->ca_pem, Pem("CA-2"));
  EXPECT_EQ(files.reloads(), 1u);
}

TEST_F(KubeApiTlsFilesTest, ACaFileAndAClientCertificateReplacedOnDiskAreReadAgain) {
  dir_.Write("ca.pem", Pem("CA-FILE-1"));
  dir_.Write("kubeconfig", Kubeconfig("certificate-authority: ca.pem"));
  KubeApiTlsFiles files(Load());
  EXPECT_EQ(files.Get()->ca_pem, Pem("CA-FILE-1"));
  dir_.Write("ca.pem", Pem("CA-FILE-2"));
  EXPECT_EQ(files.Get()->ca_pem, Pem("CA-FILE-2"));
  dir_.Write("client.pem", Pem("CLIENT-2"));
  absl::StatusOr<http::ClientTls> tls = files.Get();
  ASSERT_TRUE(tls.ok());
  EXPECT_EQ(tls->client_cert_pem, Pem("CLIENT-2"));
  EXPECT_EQ(tls->ca_pem, Pem("CA-FILE-2"));
  EXPECT_EQ(files.reloads(), 2u);
}

TEST_F(KubeApiTlsFilesTest, ARewriteThatDoesNotParseKeepsTheMaterialUntilTheNextGoodOne) {
  dir_.Write("kubeconfig", Kubeconfig(InlineCa(Pem("CA-1"))));
  KubeApiTlsFiles files(Load());
  dir_.Write("kubeconfig", "clusters: [unclosed");
  EXPECT_EQ(files.Get()->ca_pem, Pem("CA-1"));
  EXPECT_EQ(files.reload_errors(), 1u);
  // Not read again until a file changes.
  EXPECT_EQ(files.Get()->ca_pem, Pem("CA-1"));
  EXPECT_EQ(files.reload_errors(), 1u);
  dir_.Write("kubeconfig", Kubeconfig("certificate-authority-data: not-base64!"));
  EXPECT_EQ(files.Get()->ca_pem, Pem("CA-1"));
  EXPECT_EQ(files.reload_errors(), 2u);
  dir_.Write("kubeconfig", Kubeconfig(InlineCa(Pem("CA-3"))));
  EXPECT_EQ(files.Get()->ca_pem, Pem("CA-3"));
  EXPECT_EQ(files.reloads(), 1u);
}

TEST_F(KubeApiTlsFilesTest, AClustersCaCrtReplacedIsReadAgain) {
  dir_.Write("token", "t0ken\n");
  dir_.Write("ca.crt", Pem("CLUSTER-CA-1"));
  ::setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
  absl::StatusOr<KubeApiConfig> config = InClusterConfig(dir_.path().string());
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->tls_files, ::testing::ElementsAre(dir_.File("ca.crt")));
  // The environment is read again by a reload.
  ::setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
  KubeApiTlsFiles files(*config);
  dir_.Write("ca.crt", Pem("CLUSTER-CA-2"));
  EXPECT_EQ(files.Get()->ca_pem, Pem("CLUSTER-CA-2"));
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
}

TEST_F(KubeApiTlsFilesTest, AConfigWithoutFilesIsNotWatched) {
  KubeApiConfig config;
  config.server = "https://127.0.0.1:6443";
  config.ca_pem = Pem("SPELLED-OUT");
  KubeApiTlsFiles files(config);
  EXPECT_FALSE(files.watching());
  EXPECT_EQ(files.Get()->ca_pem, Pem("SPELLED-OUT"));
  http::ClientOptions options;
  options.base_url = config.server;
  WatchTlsFiles(config, &options);
  EXPECT_FALSE(options.tls_source);

  dir_.Write("kubeconfig", Kubeconfig(InlineCa(Pem("CA-1"))));
  const KubeApiConfig loaded = Load();
  WatchTlsFiles(loaded, &options);
  EXPECT_TRUE(options.tls_source);
  http::ClientOptions plain;
  plain.base_url = "http://127.0.0.1:8080";
  WatchTlsFiles(loaded, &plain);
  EXPECT_FALSE(plain.tls_source);
}

}  // namespace
}  // namespace kubestat::kube
