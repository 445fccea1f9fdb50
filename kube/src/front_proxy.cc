#include "kubestat/kube/front_proxy.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/str_cat.h"
#include "kubestat/core/url.h"
#include "kubestat/kube/request_attributes.h"

namespace kubestat::kube {
namespace {

char LowerChar(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool StartsWithIgnoreCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (LowerChar(text[i]) != LowerChar(prefix[i])) return false;
  }
  return true;
}

// Whether the connection's certificate makes its identity headers believable.
bool Qualifies(const FrontProxyOptions& options, const ClientCertificate* cert) {
  if (cert == nullptr || !cert->VerifiedBy(options.ca_bundle)) return false;
  if (options.allowed_names.empty()) return true;
  return std::find(options.allowed_names.begin(), options.allowed_names.end(), cert->common_name) !=
         options.allowed_names.end();
}

std::optional<std::string> FirstNonEmpty(const RequestHeaders& headers,
                                         const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    std::optional<std::string_view> value = headers.First(name);
    if (value && !value->empty()) return std::string(*value);
  }
  return std::nullopt;
}

}  // namespace

absl::Status FrontProxyOptions::Validate() const {
  if (!enabled) return absl::OkStatus();
  if (ca_bundle.empty()) {
    return absl::InvalidArgumentError("--requestheader-client-ca-file: CA bundle name is empty");
  }
  if (username_headers.empty()) {
    return absl::InvalidArgumentError(
        "--requestheader-username-headers must name at least one header");
  }
  for (const auto* list :
       {&username_headers, &uid_headers, &group_headers, &extra_headers_prefixes}) {
    for (const std::string& name : *list) {
      if (name.empty()) {
        return absl::InvalidArgumentError(
            "--requestheader-* header names and prefixes must not be empty");
      }
    }
  }
  return absl::OkStatus();
}

FrontProxyResult AuthenticateFrontProxy(const FrontProxyOptions& options,
                                        const RequestCredentials& credentials) {
  FrontProxyResult result;
  if (!options.enabled || !Qualifies(options, credentials.client_certificate)) return result;
  const RequestHeaders& headers = credentials.headers;
  std::optional<std::string> name = FirstNonEmpty(headers, options.username_headers);
  if (!name) return result;

  result.outcome = FrontProxyOutcome::kAuthenticated;
  result.user.name = std::move(*name);
  result.user.uid = FirstNonEmpty(headers, options.uid_headers).value_or("");
  for (const std::string& header : options.group_headers) {
    for (std::string_view value : headers.All(header)) result.user.groups.emplace_back(value);
  }
  if (!options.extra_headers_prefixes.empty()) {
    headers.ForEach([&](std::string_view header, std::string_view value) {
      for (const std::string& prefix : options.extra_headers_prefixes) {
        if (!StartsWithIgnoreCase(header, prefix)) continue;
        std::string key(header.substr(prefix.size()));
        for (char& c : key) c = LowerChar(c);
        // Keys are percent-escaped by the proxy (kube's unescapeExtraKey); a key that does
        // not decode is kept as sent.
        absl::StatusOr<std::string> decoded = PercentDecode(key, false);
        if (decoded.ok()) key = std::move(*decoded);
        if (key.empty()) return;
        result.user.extra[key].emplace_back(value);
        return;
      }
    });
  }
  return result;
}

}  // namespace kubestat::kube
