// Generated certificates for the fake kubelets: a self-signed CA and one serving
// certificate (EC P-256) whose subjectAltName lists every kubelet IP and "localhost".
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

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_TLS_H_
