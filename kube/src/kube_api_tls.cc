#include "kubestat/kube/kube_api_tls.h"

#include <sys/stat.h>

#include <memory>
#include <utility>

#include "kubestat/core/log.h"
#include "kubestat/kube/bearer_token.h"

namespace kubestat::kube {

KubeApiTlsFiles::KubeApiTlsFiles(const KubeApiConfig& config)
    : kubeconfig_path_(config.kubeconfig_path),
      kubeconfig_context_(config.kubeconfig_context),
      service_account_dir_(config.service_account_dir),
      server_(config.server),
      material_{config.ca_pem, config.client_cert_pem, config.client_key_pem} {
  if (!kubeconfig_path_.empty() || !service_account_dir_.empty()) files_ = config.tls_files;
  stamps_ = StampAll();
}

KubeApiTlsFiles::Stamp KubeApiTlsFiles::StampOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Stamp{};  // gone: a change once it is back
  return Stamp{static_cast<uint64_t>(st.st_ino), static_cast<int64_t>(st.st_size), st.st_mtim};
}

std::vector<KubeApiTlsFiles::Stamp> KubeApiTlsFiles::StampAll() const {
  std::vector<Stamp> stamps;
  stamps.reserve(files_.size());
  for (const std::string& file : files_) stamps.push_back(StampOf(file));
  return stamps;
}

absl::StatusOr<http::ClientTls> KubeApiTlsFiles::Get() {
  std::lock_guard lock(mu_);
  if (files_.empty()) return material_;
  std::vector<Stamp> now = StampAll();
  if (now == stamps_) return material_;
  absl::StatusOr<KubeApiConfig> config = !kubeconfig_path_.empty()
                                             ? LoadKubeconfig(kubeconfig_path_, kubeconfig_context_)
                                             : InClusterConfig(service_account_dir_);
  if (!config.ok()) {
    ++reload_errors_;
    const std::string error(config.status().message());
    if (error != last_error_) {
      KLOG(WARNING) << "kube API " << server_ << ": the changed TLS files could not be read ("
                    << error << "); the previous CA and certificate stay in use";
      last_error_ = error;
    }
    stamps_ = std::move(now);  // tried again on the next change of a file
    return material_;
  }
  last_error_.clear();
  // The files named may have changed too (a kubeconfig now pointing at another CA file).
  files_ = config->tls_files;
  stamps_ = StampAll();
  http::ClientTls material{config->ca_pem, config->client_cert_pem, config->client_key_pem};
  if (material != material_) {
    ++reloads_;
    KLOG(INFO) << "kube API " << server_
               << ": the CA or client certificate changed on disk; new connections use it";
    material_ = std::move(material);
  }
  return material_;
}

uint64_t KubeApiTlsFiles::reloads() const {
  std::lock_guard lock(mu_);
  return reloads_;
}

uint64_t KubeApiTlsFiles::reload_errors() const {
  std::lock_guard lock(mu_);
  return reload_errors_;
}

void WatchTlsFiles(const KubeApiConfig& config, http::ClientOptions* options) {
  if (!options->base_url.starts_with("https://")) return;
  auto files = std::make_shared<KubeApiTlsFiles>(config);
  if (!files->watching()) return;
  options->tls_source = [files] { return files->Get(); };
}

absl::StatusOr<http::ClientOptions> KubeApiClientOptions(
    const KubeApiConfig& config, std::shared_ptr<BearerTokenFile>* token_file) {
  if (!config.token.empty() && !config.token_file.empty()) {
    return absl::InvalidArgumentError("kube API config: set at most one of token and token_file");
  }
  http::ClientOptions options;
  options.base_url = config.server;
  // kubectl accepts a server URL with a trailing slash; requests carry their own.
  while (options.base_url.size() > 1 && options.base_url.back() == '/') options.base_url.pop_back();
  options.ca_pem = config.ca_pem;
  options.insecure_skip_tls_verify = config.insecure_skip_tls_verify;
  options.client_cert_pem = config.client_cert_pem;
  options.client_key_pem = config.client_key_pem;
  options.bearer_token = config.token;
  if (!config.token_file.empty()) {
    auto file = std::make_shared<BearerTokenFile>(config.token_file);
    options.bearer_token_source = [file] { return file->Get(); };
    if (token_file != nullptr) *token_file = std::move(file);
  }
  WatchTlsFiles(config, &options);
  return options;
}

}  // namespace kubestat::kube
