// Generated certificates (EC P-256, valid for ten years):
//  - for the fake kubelets: a self-signed CA and one serving certificate whose
//    subjectAltName lists every kubelet IP and "localhost";
//  - for the fake kube-apiserver (with apiserver_tls): its own CA and serving certificate;
//  - for the aggregation proxy: a front-proxy CA ("front-proxy-ca") and the client
//    certificate the proxy presents to metrics backends (CN "front-proxy-client", no
//    organization, extended key usage clientAuth), as kubeadm lays them out.
#ifndef KUBESTAT_SIM_SRC_TLS_H_
#define KUBESTAT_SIM_SRC_TLS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kubestat::sim {

struct TlsFiles {
  std::string ca_cert;      // PEM
  std::string server_cert;  // PEM, the serving certificate followed by the CA
  std::string server_key;   // PEM
};

// Writes ca.crt, kubelet.crt and kubelet.key into `dir` (created if missing).
[[nodiscard]] absl::StatusOr<TlsFiles> GenerateTls(const std::string& dir,
                                                   const std::vector<std::string>& ips);

// Writes apiserver-ca.crt, apiserver.crt and apiserver.key (SANs: `dns` names and `ips`).
[[nodiscard]] absl::StatusOr<TlsFiles> GenerateApiserverTls(const std::string& dir,
                                                            const std::vector<std::string>& dns,
                                                            const std::vector<std::string>& ips);

struct FrontProxyFiles {
  std::string ca_cert;      // PEM: <dir>/front-proxy-ca.crt
  std::string client_cert;  // PEM: <dir>/front-proxy-client.crt
  std::string client_key;   // PEM, mode 0600: <dir>/front-proxy-client.key
};

// Writes the front-proxy CA and client certificate into `dir` (created if missing).
[[nodiscard]] absl::StatusOr<FrontProxyFiles> GenerateFrontProxy(const std::string& dir);

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_TLS_H_
