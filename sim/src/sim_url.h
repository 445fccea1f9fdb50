// The URLs the simulator calls (its metrics backend, the API server hollow nodes register
// in): scheme, host, port and base path. Pure functions; thread-safe.
#ifndef KUBESTAT_SIM_SRC_SIM_URL_H_
#define KUBESTAT_SIM_SRC_SIM_URL_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kubestat::sim {

struct ParsedUrl {
  bool tls = false;
  std::string host;  // without brackets
  std::string port;
  std::string base_path;  // "" or "/prefix" (no trailing slash)
};

// Reads http(s)://host[:port][/base]; InvalidArgument naming `flag` otherwise.
[[nodiscard]] absl::StatusOr<ParsedUrl> ParseUrl(std::string_view url, std::string_view flag);

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_SIM_URL_H_
