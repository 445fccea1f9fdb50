#include "sim_url.h"

#include "kubestat/core/str_cat.h"

namespace kubestat::sim {

absl::StatusOr<ParsedUrl> ParseUrl(std::string_view url, std::string_view flag) {
  ParsedUrl out;
  std::string_view rest;
  if (url.substr(0, 8) == "https://") {
    out.tls = true;
    rest = url.substr(8);
  } else if (url.substr(0, 7) == "http://") {
    rest = url.substr(7);
  } else {
    return absl::InvalidArgumentError(StrCat(flag, " must start with http:// or https://"));
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) out.base_path = std::string(rest.substr(slash));
  while (!out.base_path.empty() && out.base_path.back() == '/') out.base_path.pop_back();
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return absl::InvalidArgumentError(StrCat(flag, ": unbalanced [ in the host"));
    }
    out.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') {
        return absl::InvalidArgumentError(StrCat(flag, ": bad host:port"));
      }
      port = authority.substr(close + 2);
    }
  } else {
    const size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (out.host.empty()) return absl::InvalidArgumentError(StrCat(flag, ": no host"));
  out.port = port.empty() ? (out.tls ? "443" : "80") : std::string(port);
  for (char c : out.port) {
    if (c < '0' || c > '9') return absl::InvalidArgumentError(StrCat(flag, ": bad port"));
  }
  return out;
}

}  // namespace kubestat::sim
