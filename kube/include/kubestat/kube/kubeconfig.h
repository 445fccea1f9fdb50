// Where the kube API is and how to authenticate to it: from a kubeconfig file, from the
// in-cluster service account, or spelled out.
//
// LoadKubeconfig reads the YAML kubeconfig format (clusters, users, contexts,
// current-context): cluster `server`, `certificate-authority` (file) or
// `certificate-authority-data` (base64 PEM), `insecure-skip-tls-verify`; user `token`,
// `tokenFile`, `client-certificate`/`client-key` (files) or `client-certificate-data`/
// `client-key-data` (base64 PEM). Relative file paths are relative to the kubeconfig's
// folder, as kubectl resolves them. Files named there are read when the config is loaded;
// the token file is re-read on change (bearer_token.h), and so are the kubeconfig and its
// CA and certificate files for a client that asks (kube_api_tls.h). exec and
// auth-provider plugins are not supported (InvalidArgument naming them).
//
// InClusterConfig follows client-go's rest.InClusterConfig: KUBERNETES_SERVICE_HOST and
// KUBERNETES_SERVICE_PORT, the token file and ca.crt in the service-account folder.
//
// Errors are InvalidArgument/NotFound with a message naming the file and the field.
// Pure functions apart from reading the files; thread-safe.
#ifndef KUBESTAT_KUBE_KUBECONFIG_H_
#define KUBESTAT_KUBE_KUBECONFIG_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kubestat::kube {

struct KubeApiConfig {
  // "https://10.0.0.1:443" (no trailing slash).
  std::string server;
  // Trusted CAs as PEM text; empty: the system's roots.
  std::string ca_pem;
  bool insecure_skip_tls_verify = false;
  // A static bearer token, or a file to read it from (re-read on change); at most one set.
  std::string token;
  std::string token_file;
  // Client certificate and key, PEM text; both or neither.
  std::string client_cert_pem;
  std::string client_key_pem;
  // The context's default namespace, when the kubeconfig names one.
  std::string namespace_name;
  // Where the TLS material came from, so that it can be read again when it changes
  // (KubeApiTlsFiles): the kubeconfig file and the context it was read with, or the
  // service-account folder in a cluster; and every file it was read from (the kubeconfig
  // itself, the CA, client certificate and key files it names; ca.crt in a cluster). All
  // empty for a config spelled out in code or parsed from text.
  std::string kubeconfig_path;
  std::string kubeconfig_context;
  std::string service_account_dir;
  std::vector<std::string> tls_files;
};

// Loads `path`, using `context` (empty: current-context).
[[nodiscard]] absl::StatusOr<KubeApiConfig> LoadKubeconfig(const std::string& path,
                                                           std::string_view context = "");

// Parses kubeconfig YAML text; `base_dir` resolves relative file paths.
[[nodiscard]] absl::StatusOr<KubeApiConfig> ParseKubeconfig(std::string_view yaml,
                                                            const std::string& base_dir,
                                                            std::string_view context = "");

// The in-cluster config. `service_account_dir` defaults to the standard mount point; the
// host and port come from the environment. NotFound when not running in a cluster.
[[nodiscard]] absl::StatusOr<KubeApiConfig> InClusterConfig(
    const std::string& service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_KUBECONFIG_H_
