#include "kubestat/scrapers/node_address.h"

#include <algorithm>
#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "kubestat/core/absl_view.h"

namespace kubestat::scrapers {
namespace {

constexpr std::array<absl::string_view, 5> kKnownTypes = {"Hostname", "InternalDNS", "InternalIP",
                                                          "ExternalDNS", "ExternalIP"};

bool IsKnownType(absl::string_view type) {
  return std::find(kKnownTypes.begin(), kKnownTypes.end(), type) != kKnownTypes.end();
}

}  // namespace

std::string ScrapeTarget::HostPort() const {
  if (host.find(':') != std::string::npos) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

absl::Status KubeletAddressOptions::Validate() const {
  if (preferred_address_types.empty()) {
    return absl::InvalidArgumentError("--kubelet-preferred-address-types: empty list");
  }
  for (size_t i = 0; i < preferred_address_types.size(); ++i) {
    const std::string& type = preferred_address_types[i];
    if (!IsKnownType(type)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--kubelet-preferred-address-types: unknown address type \"", type,
                       "\" (want ", absl::StrJoin(kKnownTypes, ", "), ")"));
    }
    if (std::find(preferred_address_types.begin(), preferred_address_types.begin() + i, type) !=
        preferred_address_types.begin() + i) {
      return absl::InvalidArgumentError(
          absl::StrCat("--kubelet-preferred-address-types: \"", type, "\" is listed twice"));
    }
  }
  if (port < 1 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--kubelet-port: ", port, " is not a port number (1..65535)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ParseAddressTypes(std::string_view csv) {
  std::vector<std::string> types;
  for (absl::string_view part : absl::StrSplit(AbslView(csv), ',')) {
    absl::string_view type = absl::StripAsciiWhitespace(part);
    if (!IsKnownType(type)) {
      return absl::InvalidArgumentError(absl::StrCat("unknown node address type \"", type,
                                                     "\" (want ", absl::StrJoin(kKnownTypes, ", "),
                                                     ")"));
    }
    types.emplace_back(type);
  }
  return types;
}

absl::StatusOr<ScrapeTarget> SelectKubeletTarget(const discovery::NodeInfo& node,
                                                 const KubeletAddressOptions& options) {
  ScrapeTarget target;
  target.node_name = node.name;
  target.port = options.port;
  if (options.use_node_status_port && node.kubelet_port > 0 && node.kubelet_port <= 65535) {
    target.port = node.kubelet_port;
  }
  for (const std::string& type : options.preferred_address_types) {
    for (const discovery::NodeAddress& address : node.addresses) {
      if (address.type == type && !address.address.empty()) {
        target.host = address.address;
        return target;
      }
    }
  }
  return absl::NotFoundError(absl::StrCat("node ", node.name, " has no address of types [",
                                          absl::StrJoin(options.preferred_address_types, ","),
                                          "]"));
}

}  // namespace kubestat::scrapers
