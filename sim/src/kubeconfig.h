// Kubeconfig files for the fake kube-apiserver, as kubectl and client-go read them.
#ifndef KUBESTAT_SIM_SRC_KUBECONFIG_H_
#define KUBESTAT_SIM_SRC_KUBECONFIG_H_

#include <string>

#include "absl/status/status.h"

namespace kubestat::sim {

struct KubeconfigContent {
  std::string server;  // "http://127.0.0.1:PORT"
  std::string user;    // the kubeconfig's user (and context) entry name
  std::string token;   // bearer token
  // PEM of the CA that signed the server's certificate (certificate-authority-data); empty
  // for plain HTTP.
  std::string ca_pem;
};

// The kubeconfig YAML: one cluster "kubestat-sim", one user, one context (current).
std::string RenderKubeconfig(const KubeconfigContent& content);

// Writes RenderKubeconfig(content) to `path` with mode 0600 (the file holds a token).
[[nodiscard]] absl::Status WriteKubeconfig(const std::string& path,
                                           const KubeconfigContent& content);

}  // namespace kubestat::sim

#endif  // KUBESTAT_SIM_SRC_KUBECONFIG_H_
