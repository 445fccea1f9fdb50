// The server's TLS state: the SSL_CTX built from TlsOptions, the client CA stores, the
// self-signed pair in a cert dir, the check for changed files, and reading a client's
// certificate after the handshake.
#ifndef KUBESTAT_HTTP_SRC_TLS_CONTEXT_H_
#define KUBESTAT_HTTP_SRC_TLS_CONTEXT_H_

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/http/server.h"
#include "kubestat/http/server_options.h"

namespace kubestat::http::internal {

// One loaded configuration. Immutable once built; a connection keeps the one it
// handshook with. Thread-safe.
class TlsServing {
 public:
  TlsServing() = default;
  ~TlsServing();
  TlsServing(const TlsServing&) = delete;
  TlsServing& operator=(const TlsServing&) = delete;

  boost::asio::ssl::context& context() const { return *context_; }

  // The client certificate `ssl` presented, checked against each client CA bundle;
  // nullptr when it presented none.
  std::unique_ptr<PeerCertificate> ReadPeer(SSL* ssl) const;

 private:
  friend class TlsContextSource;
  std::unique_ptr<boost::asio::ssl::context> context_;
  std::vector<std::pair<std::string, X509_STORE*>> client_stores_;  // owned
};

// Hands out the current TlsServing; with cert files, re-reads them when they change
// (checked at most once a second of `clock`, when Current() is called). Thread-safe.
class TlsContextSource {
 public:
  // Loads the pair from the files, or from cert_dir (creating a self-signed pair there
  // when none valid exists). Internal on failure, naming the file.
  static absl::StatusOr<std::unique_ptr<TlsContextSource>> Create(const TlsOptions& options,
                                                                  const Clock& clock);

  std::shared_ptr<const TlsServing> Current();

 private:
  struct FileId {
    bool exists = false;
    unsigned long dev = 0, ino = 0;
    long long size = 0, mtime_ns = 0;
    bool operator==(const FileId&) const = default;
  };
  TlsContextSource(const TlsOptions& options, const Clock& clock);
  std::vector<FileId> Identify() const;
  absl::StatusOr<std::shared_ptr<const TlsServing>> Build() const;

  const TlsOptions options_;
  const Clock& clock_;
  std::string cert_file_;
  std::string key_file_;
  bool watch_ = false;

  std::mutex mu_;
  std::shared_ptr<const TlsServing> current_;
  Timestamp last_check_;
  std::vector<FileId> current_ids_;
  std::vector<FileId> failed_ids_;
};

// Ensures <dir>/apiserver.crt and <dir>/apiserver.key hold a valid, unexpired pair for
// localhost, 127.0.0.1, ::1 and `hosts`, creating it (key 0600) otherwise. Returns the
// two paths.
absl::StatusOr<std::pair<std::string, std::string>> EnsureSelfSignedPair(
    const std::string& dir, const std::vector<std::string>& hosts);

}  // namespace kubestat::http::internal

#endif  // KUBESTAT_HTTP_SRC_TLS_CONTEXT_H_
