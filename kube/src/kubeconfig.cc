#include "kubestat/kube/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/file.h"

namespace kubestat::kube {
namespace {

std::string Resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute() || base_dir.empty()) return path;
  return (std::filesystem::path(base_dir) / path).string();
}

// A scalar field of `node` as a string; "" when absent.
std::string Scalar(const YAML::Node& node, const char* key) {
  const YAML::Node value = node[key];
  if (!value || !value.IsScalar()) return "";
  return value.as<std::string>();
}

// Finds the entry named `name` in a list like `clusters: [{name: x, cluster: {...}}]` and
// returns its `field` map.
absl::StatusOr<YAML::Node> Named(const YAML::Node& root, const char* list, const char* field,
                                 const std::string& name) {
  const YAML::Node entries = root[list];
  if (entries && entries.IsSequence()) {
    for (const YAML::Node& entry : entries) {
      if (entry.IsMap() && Scalar(entry, "name") == name) {
        YAML::Node value = entry[field];
        if (!value || value.IsNull()) return YAML::Node(YAML::NodeType::Map);
        if (!value.IsMap()) {
          return absl::InvalidArgumentError(absl::StrCat("kubeconfig: ", list, " entry \"", name,
                                                         "\": ", field, " is not a map"));
        }
        return value;
      }
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("kubeconfig: no entry named \"", name, "\" in ", list));
}

// PEM from `<key>-data` (base64) or from the file `<key>` (then added to `files`).
absl::StatusOr<std::string> Pem(const YAML::Node& node, const std::string& key,
                                const std::string& base_dir, std::vector<std::string>* files) {
  const std::string data = Scalar(node, (key + "-data").c_str());
  if (!data.empty()) {
    std::string decoded;
    if (!absl::Base64Unescape(data, &decoded)) {
      return absl::InvalidArgumentError(absl::StrCat("kubeconfig: ", key, "-data is not base64"));
    }
    return decoded;
  }
  const std::string file = Scalar(node, key.c_str());
  if (file.empty()) return std::string();
  files->push_back(Resolve(base_dir, file));
  return ReadFile(files->back(), StdView(absl::StrCat("kubeconfig ", key)));
}

}  // namespace

absl::StatusOr<KubeApiConfig> ParseKubeconfig(std::string_view yaml, const std::string& base_dir,
                                              std::string_view context) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig: not valid YAML: ", e.what()));
  }
  if (!root.IsMap()) return absl::InvalidArgumentError("kubeconfig: the document is not a map");
  try {
    std::string context_name(context);
    if (context_name.empty()) context_name = Scalar(root, "current-context");
    if (context_name.empty()) {
      return absl::InvalidArgumentError("kubeconfig: no current-context and no context given");
    }
    absl::StatusOr<YAML::Node> ctx = Named(root, "contexts", "context", context_name);
    if (!ctx.ok()) return ctx.status();
    const std::string cluster_name = Scalar(*ctx, "cluster");
    const std::string user_name = Scalar(*ctx, "user");
    absl::StatusOr<YAML::Node> cluster = Named(root, "clusters", "cluster", cluster_name);
    if (!cluster.ok()) return cluster.status();

    KubeApiConfig config;
    config.namespace_name = Scalar(*ctx, "namespace");
    config.server = std::string(absl::StripSuffix(Scalar(*cluster, "server"), "/"));
    if (config.server.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("kubeconfig: cluster \"", cluster_name, "\" has no server"));
    }
    if (!absl::StartsWith(config.server, "https://") &&
        !absl::StartsWith(config.server, "http://")) {
      return absl::InvalidArgumentError(
          absl::StrCat("kubeconfig: server \"", config.server, "\" is not an http(s) URL"));
    }
    const YAML::Node insecure = (*cluster)["insecure-skip-tls-verify"];
    config.insecure_skip_tls_verify = insecure && insecure.IsScalar() && insecure.as<bool>();
    absl::StatusOr<std::string> ca =
        Pem(*cluster, "certificate-authority", base_dir, &config.tls_files);
    if (!ca.ok()) return ca.status();
    config.ca_pem = *std::move(ca);

    if (!user_name.empty()) {
      absl::StatusOr<YAML::Node> user = Named(root, "users", "user", user_name);
      if (!user.ok()) return user.status();
      if ((*user)["exec"] || (*user)["auth-provider"]) {
        return absl::InvalidArgumentError(
            absl::StrCat("kubeconfig: user \"", user_name,
                         "\" uses exec/auth-provider, which is not supported"));
      }
      config.token = Scalar(*user, "token");
      const std::string token_file = Scalar(*user, "tokenFile");
      if (config.token.empty() && !token_file.empty())
        config.token_file = Resolve(base_dir, token_file);
      absl::StatusOr<std::string> cert =
          Pem(*user, "client-certificate", base_dir, &config.tls_files);
      if (!cert.ok()) return cert.status();
      absl::StatusOr<std::string> key = Pem(*user, "client-key", base_dir, &config.tls_files);
      if (!key.ok()) return key.status();
      if (cert->empty() != key->empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("kubeconfig: user \"", user_name,
                         "\" has a client certificate without a key or the reverse"));
      }
      config.client_cert_pem = *std::move(cert);
      config.client_key_pem = *std::move(key);
    }
    return config;
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig: ", e.what()));
  }
}

absl::StatusOr<KubeApiConfig> LoadKubeconfig(const std::string& path, std::string_view context) {
  absl::StatusOr<std::string> text = ReadFile(path, "--kubeconfig");
  if (!text.ok()) return text.status();
  absl::StatusOr<KubeApiConfig> config =
      ParseKubeconfig(*text, std::filesystem::path(path).parent_path().string(), context);
  if (!config.ok()) return config;
  config->kubeconfig_path = path;
  config->kubeconfig_context = std::string(context);
  config->tls_files.insert(config->tls_files.begin(), path);
  return config;
}

absl::StatusOr<KubeApiConfig> InClusterConfig(const std::string& service_account_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') {
    return absl::NotFoundError(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not "
        "set (give --kubeconfig or --static-nodes)");
  }
  KubeApiConfig config;
  std::string host_text(host);
  if (host_text.find(':') != std::string::npos) host_text = absl::StrCat("[", host_text, "]");
  config.server = absl::StrCat("https://", host_text, ":", port);
  config.token_file = service_account_dir + "/token";
  if (!std::filesystem::exists(config.token_file)) {
    return absl::NotFoundError(absl::StrCat("in-cluster token ", config.token_file, " is missing"));
  }
  absl::StatusOr<std::string> ca = ReadFile(service_account_dir + "/ca.crt", "in-cluster CA");
  if (!ca.ok()) return ca.status();
  config.ca_pem = *std::move(ca);
  config.service_account_dir = service_account_dir;
  config.tls_files.push_back(service_account_dir + "/ca.crt");
  return config;
}

}  // namespace kubestat::kube
