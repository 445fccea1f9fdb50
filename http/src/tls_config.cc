#include "kubestat/http/tls_config.h"

#include <array>

#include "kubestat/core/str_cat.h"

namespace kubestat::http {
namespace {

struct SuiteName {
  std::string_view iana;
  std::string_view openssl;
  bool tls13;
};

// Go's crypto/tls names; the CHACHA20 pairs appear under Go's alias and the IANA name.
constexpr std::array<SuiteName, 11> kAllowed = {{
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256", false},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256", false},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384", false},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384", false},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305", false},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305", false},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA-CHACHA20-POLY1305", false},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA-CHACHA20-POLY1305", false},
    {"TLS_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256", true},
    {"TLS_AES_256_GCM_SHA384", "TLS_AES_256_GCM_SHA384", true},
    {"TLS_CHACHA20_POLY1305_SHA256", "TLS_CHACHA20_POLY1305_SHA256", true},
}};

constexpr std::string_view kFlag = "--tls-cipher-suites";

bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

}  // namespace

absl::StatusOr<TlsVersion> ParseTlsMinVersion(std::string_view name) {
  if (name == "VersionTLS12") return TlsVersion::kTls12;
  if (name == "VersionTLS13") return TlsVersion::kTls13;
  if (name == "VersionTLS10" || name == "VersionTLS11") {
    return absl::InvalidArgumentError(
        StrCat("--tls-min-version: ", name, " is not allowed; use VersionTLS12 or VersionTLS13"));
  }
  return absl::InvalidArgumentError(StrCat("--tls-min-version: unknown version \"", name,
                                           "\"; use VersionTLS12 or VersionTLS13"));
}

std::vector<std::string> DefaultCipherSuites() {
  std::vector<std::string> names;
  for (size_t i = 0; i < 6; ++i) names.emplace_back(kAllowed[i].iana);
  return names;
}

absl::StatusOr<OpenSslCipherConfig> MapCipherSuites(const std::vector<std::string>& names,
                                                    TlsVersion min_version) {
  const std::vector<std::string> defaults = DefaultCipherSuites();
  const std::vector<std::string>& wanted = names.empty() ? defaults : names;
  std::vector<std::string_view> tls12;
  std::vector<std::string_view> tls13;
  for (const std::string& name : wanted) {
    const SuiteName* found = nullptr;
    for (const SuiteName& suite : kAllowed) {
      if (suite.iana == name) found = &suite;
    }
    if (found != nullptr) {
      (found->tls13 ? tls13 : tls12).push_back(found->openssl);
      continue;
    }
    // Say why a known-looking name is refused: these are the two properties we require.
    if (name.rfind("TLS_", 0) == 0 && Contains(name, "_WITH_")) {
      if (!Contains(name, "ECDHE_")) {
        return absl::InvalidArgumentError(
            StrCat(kFlag, ": ", name, " is not allowed: only ECDHE key exchange is"));
      }
      if (!Contains(name, "_GCM_") && !Contains(name, "CHACHA20_POLY1305")) {
        return absl::InvalidArgumentError(StrCat(
            kFlag, ": ", name, " is not allowed: only AEAD ciphers (GCM, ChaCha20-Poly1305) are"));
      }
    }
    return absl::InvalidArgumentError(StrCat(kFlag, ": unknown cipher suite \"", name, "\""));
  }
  if (tls12.empty() && min_version == TlsVersion::kTls12) {
    return absl::InvalidArgumentError(
        StrCat(kFlag, ": no TLS 1.2 suite listed while --tls-min-version allows TLS 1.2"));
  }
  OpenSslCipherConfig config;
  auto join = [](const std::vector<std::string_view>& parts) {
    std::string joined;
    for (std::string_view part : parts) joined += StrCat(joined.empty() ? "" : ":", part);
    return joined;
  };
  config.tls12_cipher_list = join(tls12);
  config.tls13_ciphersuites = join(tls13);
  return config;
}

}  // namespace kubestat::http
