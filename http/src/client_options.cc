#include <cpprest/base_uri.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "client_tls.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/http/client.h"

namespace kubestat::http {
namespace {

bool HasControlBytes(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7f;
  });
}

absl::Status CheckBaseUrl(const std::string& base_url, bool* https) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("ClientOptions.base_url \"", base_url, "\": ", AbslView(why)));
  };
  if (base_url.empty()) return absl::InvalidArgumentError("ClientOptions.base_url is required");
  if (HasControlBytes(base_url) || base_url.find(' ') != std::string::npos) {
    return bad("holds spaces or control bytes");
  }
  if (!web::uri::validate(base_url)) return bad("not a URL");
  const web::uri uri(base_url);
  if (uri.scheme() != "https" && uri.scheme() != "http") {
    return bad("the scheme must be https or http");
  }
  if (uri.host().empty()) return bad("no host");
  if (!uri.query().empty() || !uri.fragment().empty()) return bad("a query or fragment");
  if (base_url.back() == '/') return bad("a trailing slash");
  *https = uri.scheme() == "https";
  return absl::OkStatus();
}

}  // namespace

absl::Status ClientOptions::Validate() const {
  bool https = false;
  if (absl::Status s = CheckBaseUrl(base_url, &https); !s.ok()) return s;
  if (!https && (!ca_pem.empty() || !client_cert_pem.empty() || !client_key_pem.empty())) {
    return absl::InvalidArgumentError(
        "ClientOptions.ca_pem, client_cert_pem and client_key_pem need an https base_url");
  }
  if (!https && tls_source) {
    return absl::InvalidArgumentError("ClientOptions.tls_source needs an https base_url");
  }
  if (absl::Status s = internal::CheckClientTls({ca_pem, client_cert_pem, client_key_pem});
      !s.ok()) {
    return s;
  }
  if (!bearer_token.empty() && bearer_token_source) {
    return absl::InvalidArgumentError(
        "ClientOptions.bearer_token and bearer_token_source: set at most one");
  }
  if (HasControlBytes(bearer_token)) {
    return absl::InvalidArgumentError(
        "ClientOptions.bearer_token holds bytes a header cannot carry");
  }
  if (timeout <= Duration::zero() || timeout > std::chrono::hours(24)) {
    return absl::InvalidArgumentError("ClientOptions.timeout must be positive and at most 24h");
  }
  if (max_response_bytes == 0) {
    return absl::InvalidArgumentError("ClientOptions.max_response_bytes must be positive");
  }
  if (HasControlBytes(user_agent)) {
    return absl::InvalidArgumentError("ClientOptions.user_agent holds control bytes");
  }
  return absl::OkStatus();
}

}  // namespace kubestat::http
