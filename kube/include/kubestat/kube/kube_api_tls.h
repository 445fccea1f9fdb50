// The TLS material of a kube API config, read again when its files change: a kube API
// server that comes back with a new CA (a restarted or re-keyed control plane), a rotated
// client certificate, or a cluster's ca.crt replaced are trusted and presented from the
// next connection on, as rotated tokens already are (bearer_token.h).
//
//   auto tls = std::make_shared<KubeApiTlsFiles>(config);
//   if (tls->watching()) options.tls_source = [tls] { return tls->Get(); };
//
// Get() stats every file the config's TLS material was read from (KubeApiConfig::
// tls_files: the kubeconfig itself and the CA, client certificate and key files it names,
// or the service account's ca.crt) on each call, which the http client makes before each
// new connection; when one's modification time, size or inode changed, the config is
// loaded again from its kubeconfig and context (or its service-account folder) and the
// new material returned. A reload that fails (a file missing or half written, YAML or
// base64 that does not parse) keeps the material in use and says so in the log, once per
// distinct error; the next change of a file tries again. Material that reads but does not
// load (a key that does not match its certificate) fails each new connection with the http
// client's error until the files are mended. The server URL, the user and the token are not taken
// from a reload: only the TLS material changes. Thread-safe.
#ifndef KUBESTAT_KUBE_KUBE_API_TLS_H_
#define KUBESTAT_KUBE_KUBE_API_TLS_H_

#include <cstdint>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kubestat/http/client.h"
#include "kubestat/kube/kubeconfig.h"

namespace kubestat::kube {

class BearerTokenFile;

class KubeApiTlsFiles {
 public:
  explicit KubeApiTlsFiles(const KubeApiConfig& config);

  // Whether the config names files to watch (else Get() always returns its material).
  bool watching() const { return !files_.empty(); }
  // The current material (see the file comment). Never an error: a failed reload keeps
  // the previous material.
  [[nodiscard]] absl::StatusOr<http::ClientTls> Get();
  // Reloads that changed the material, and reloads that failed.
  uint64_t reloads() const;
  uint64_t reload_errors() const;

 private:
  struct Stamp {
    uint64_t inode = 0;
    int64_t size = -1;
    timespec mtime{};
    bool operator==(const Stamp& o) const {
      return inode == o.inode && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
             mtime.tv_nsec == o.mtime.tv_nsec;
    }
  };
  static Stamp StampOf(const std::string& path);
  std::vector<Stamp> StampAll() const;

  const std::string kubeconfig_path_;
  const std::string kubeconfig_context_;
  const std::string service_account_dir_;
  const std::string server_;
  mutable std::mutex mu_;
  std::vector<std::string> files_;
  std::vector<Stamp> stamps_;
  http::ClientTls material_;
  std::string last_error_;
  uint64_t reloads_ = 0;
  uint64_t reload_errors_ = 0;
};

// Sets options->tls_source to a KubeApiTlsFiles of `config` when the config names files to
// watch and options->base_url is https; else leaves the options as they are.
void WatchTlsFiles(const KubeApiConfig& config, http::ClientOptions* options);

// The http::ClientOptions that reach the API server of `config`: its server URL (trailing
// slashes dropped: requests carry their own), its CA or insecure_skip_tls_verify, its client
// certificate and key (re-read on change, WatchTlsFiles) and its token or token file
// (re-read on change, bearer_token.h; the file's reader is stored in *token_file when
// given). Timeouts and caps stay the caller's. InvalidArgument when both token and
// token_file are set.
[[nodiscard]] absl::StatusOr<http::ClientOptions> KubeApiClientOptions(
    const KubeApiConfig& config, std::shared_ptr<BearerTokenFile>* token_file = nullptr);

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_KUBE_API_TLS_H_
