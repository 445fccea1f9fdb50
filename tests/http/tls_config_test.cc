#include "kubestat/http/tls_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kubestat::http {
namespace {

using ::testing::HasSubstr;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

TEST(TlsConfigTest, MinVersionIsSpelledAsKubernetesSpellsIt) {
  EXPECT_EQ(*ParseTlsMinVersion("VersionTLS12"), TlsVersion::kTls12);
  EXPECT_EQ(*ParseTlsMinVersion("VersionTLS13"), TlsVersion::kTls13);
  for (const char* refused : {"VersionTLS10", "VersionTLS11", "TLS1.2", ""}) {
    absl::StatusOr<TlsVersion> version = ParseTlsMinVersion(refused);
    EXPECT_EQ(version.status().code(), absl::StatusCode::kInvalidArgument) << refused;
    EXPECT_THAT(Message(version.status()), HasSubstr("--tls-min-version"));
  }
}

TEST(TlsConfigTest, DefaultsAreTheSixEcdheAeadSuites) {
  absl::StatusOr<OpenSslCipherConfig> config = MapCipherSuites({}, TlsVersion::kTls12);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->tls12_cipher_list,
            "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
            "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
            "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305");
  EXPECT_EQ(config->tls13_ciphersuites, "");
  EXPECT_EQ(DefaultCipherSuites().size(), 6u);
}

TEST(TlsConfigTest, GoNamesMapToOpenSslNames) {
  absl::StatusOr<OpenSslCipherConfig> config =
      MapCipherSuites({"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "TLS_AES_256_GCM_SHA384",
                       "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
                      TlsVersion::kTls12);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->tls12_cipher_list, "ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES256-GCM-SHA384");
  EXPECT_EQ(config->tls13_ciphersuites, "TLS_AES_256_GCM_SHA384");
}

TEST(TlsConfigTest, NonEcdheNonAeadAndUnknownSuitesAreRefusedNamingTheFlag) {
  struct Case {
    const char* name;
    const char* why;
  };
  for (const Case& c : {Case{"TLS_RSA_WITH_AES_128_GCM_SHA256", "only ECDHE"},
                        Case{"TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", "only ECDHE"},
                        Case{"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "only AEAD"},
                        Case{"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "only AEAD"},
                        Case{"TLS_ECDHE_RSA_WITH_RC4_128_SHA", "only AEAD"},
                        Case{"ECDHE-RSA-AES128-GCM-SHA256", "unknown"}}) {
    absl::StatusOr<OpenSslCipherConfig> config = MapCipherSuites({c.name}, TlsVersion::kTls12);
    ASSERT_FALSE(config.ok()) << c.name;
    EXPECT_THAT(Message(config.status()), HasSubstr("--tls-cipher-suites"));
    EXPECT_THAT(Message(config.status()), HasSubstr(c.name));
    EXPECT_THAT(Message(config.status()), HasSubstr(c.why));
  }
}

TEST(TlsConfigTest, OnlyTls13SuitesNeedTls13AsTheMinimum) {
  EXPECT_FALSE(MapCipherSuites({"TLS_AES_128_GCM_SHA256"}, TlsVersion::kTls12).ok());
  EXPECT_TRUE(MapCipherSuites({"TLS_AES_128_GCM_SHA256"}, TlsVersion::kTls13).ok());
}

}  // namespace
}  // namespace kubestat::http
