// Choosing the address and port a node's kubelet is scraped at, as metrics-server does.
//
// The address is the first entry of the node's status.addresses whose type comes first in
// the preference order (`--kubelet-preferred-address-types`, default
// Hostname,InternalDNS,InternalIP,ExternalDNS,ExternalIP); within one type the node's own
// order is kept. The port is `--kubelet-port` (default 10250), or, with
// `--kubelet-use-node-status-port`, status.daemonEndpoints.kubeletEndpoint.Port when the
// node reports one (non-zero). Pure functions; thread-safe.
#ifndef KUBESTAT_SCRAPERS_NODE_ADDRESS_H_
#define KUBESTAT_SCRAPERS_NODE_ADDRESS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/discovery/cluster_objects.h"

namespace kubestat::scrapers {

// Where one node's kubelet is scraped.
struct ScrapeTarget {
  std::string node_name;
  // A host name, an IPv4 address or an IPv6 address (without brackets).
  std::string host;
  int port = 10250;

  // "host:port", with brackets around an IPv6 address.
  std::string HostPort() const;

  friend bool operator==(const ScrapeTarget&, const ScrapeTarget&) = default;
};

struct KubeletAddressOptions {
  // Address types in order of preference. Default:
  // Hostname,InternalDNS,InternalIP,ExternalDNS,ExternalIP
  std::vector<std::string> preferred_address_types = {"Hostname", "InternalDNS", "InternalIP",
                                                      "ExternalDNS", "ExternalIP"};
  // The kubelet port. Default: 10250
  int port = 10250;
  // Use the node's status.daemonEndpoints.kubeletEndpoint.Port when it is set. Default: false
  bool use_node_status_port = false;

  // InvalidArgument naming the flag: an unknown or repeated address type, an empty list, or
  // a port outside 1..65535.
  [[nodiscard]] absl::Status Validate() const;
};

// Parses "InternalIP,Hostname" into its types (whitespace around names is ignored).
// InvalidArgument for an unknown or empty type.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ParseAddressTypes(std::string_view csv);

// The target for `node`. NotFound ("node n1 has no address of types [InternalIP]") when no
// address matches the preferences.
[[nodiscard]] absl::StatusOr<ScrapeTarget> SelectKubeletTarget(
    const discovery::NodeInfo& node, const KubeletAddressOptions& options);

}  // namespace kubestat::scrapers

#endif  // KUBESTAT_SCRAPERS_NODE_ADDRESS_H_
