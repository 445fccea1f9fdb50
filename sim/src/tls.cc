#include "tls.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "kubestat/http/tls_certificates.h"

namespace kubestat::sim {
namespace {

using http::CertificateSpec;
using http::IssueCertificate;
using http::IssuedCertificate;

// The simulator's certificates: valid from a day ago (clock skew) for ten years.
CertificateSpec Spec(const char* org, const char* cn, long serial, bool ca) {
  CertificateSpec spec;
  if (org != nullptr) spec.organizations = {org};
  spec.common_name = cn;
  spec.serial = serial;
  spec.ca = ca;
  spec.not_before = std::chrono::hours(-24);
  spec.not_after = std::chrono::hours(24 * 365 * 10);
  return spec;
}

// Writes `text` to `path`, readable by its owner alone when it holds a key.
absl::Status WritePem(const std::string& path, const std::string& text, bool key) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return absl::InternalError(absl::StrCat("cannot write ", path));
  if (key) {
    std::filesystem::permissions(
        path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::Status MakeDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot create --tls-dir ", dir, ": ", ec.message()));
  }
  return absl::OkStatus();
}

// A CA and a serving certificate it signed, for `dns` names and `ips`, written to
// dir/<ca_file>, dir/<cert_file> (leaf then CA) and dir/<key_file>.
absl::StatusOr<TlsFiles> GenerateServing(const std::string& dir, const char* ca_cn,
                                         const char* leaf_cn, const std::vector<std::string>& dns,
                                         const std::vector<std::string>& ips, const char* ca_file,
                                         const char* cert_file, const char* key_file) {
  if (absl::Status s = MakeDir(dir); !s.ok()) return s;
  absl::StatusOr<IssuedCertificate> ca = IssueCertificate(Spec("kubestat-sim", ca_cn, 1, true));
  if (!ca.ok()) return ca.status();
  CertificateSpec spec = Spec("kubestat-sim", leaf_cn, 2, false);
  spec.extended_key_usage = "serverAuth";
  for (const std::string& name : dns) spec.subject_alt_names.push_back("DNS:" + name);
  for (const std::string& ip : ips) spec.subject_alt_names.push_back("IP:" + ip);
  absl::StatusOr<IssuedCertificate> server = IssueCertificate(spec, &*ca);
  if (!server.ok()) return server.status();
  TlsFiles files{dir + "/" + ca_file, dir + "/" + cert_file, dir + "/" + key_file};
  absl::Status s = WritePem(files.ca_cert, ca->cert_pem, false);
  s.Update(WritePem(files.server_cert, server->cert_pem + ca->cert_pem, false));
  s.Update(WritePem(files.server_key, server->key_pem, true));
  if (!s.ok()) return s;
  return files;
}

}  // namespace

absl::StatusOr<TlsFiles> GenerateTls(const std::string& dir, const std::vector<std::string>& ips) {
  return GenerateServing(dir, "kubestat-sim-ca", "kubestat-sim-kubelet", {"localhost"}, ips,
                         "ca.crt", "kubelet.crt", "kubelet.key");
}

absl::StatusOr<TlsFiles> GenerateApiserverTls(const std::string& dir,
                                              const std::vector<std::string>& dns,
                                              const std::vector<std::string>& ips) {
  return GenerateServing(dir, "kubestat-sim-apiserver-ca", "kube-apiserver", dns, ips,
                         "apiserver-ca.crt", "apiserver.crt", "apiserver.key");
}

absl::StatusOr<FrontProxyFiles> GenerateFrontProxy(const std::string& dir) {
  if (absl::Status s = MakeDir(dir); !s.ok()) return s;
  absl::StatusOr<IssuedCertificate> ca = IssueCertificate(Spec(nullptr, "front-proxy-ca", 1, true));
  if (!ca.ok()) return ca.status();
  CertificateSpec spec = Spec(nullptr, "front-proxy-client", 2, false);
  spec.extended_key_usage = "clientAuth";
  absl::StatusOr<IssuedCertificate> client = IssueCertificate(spec, &*ca);
  if (!client.ok()) return client.status();
  FrontProxyFiles files{dir + "/front-proxy-ca.crt", dir + "/front-proxy-client.crt",
                        dir + "/front-proxy-client.key"};
  absl::Status s = WritePem(files.ca_cert, ca->cert_pem, false);
  s.Update(WritePem(files.client_cert, client->cert_pem, false));
  s.Update(WritePem(files.client_key, client->key_pem, true));
  if (!s.ok()) return s;
  return files;
}

}  // namespace kubestat::sim
