// Test helpers for the scrapers' network tests: a free loopback port, a throwaway CA with
// serving certificates generated through the OpenSSL API, and temp files.
#ifndef KUBESTAT_TESTS_SCRAPERS_LOOPBACK_PKI_H_
#define KUBESTAT_TESTS_SCRAPERS_LOOPBACK_PKI_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

namespace kubestat::scrapers::testing {

// A port nothing listens on right now (bound to port 0 and released).
inline int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("bind failed");
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Polls `done` until it is true or `deadline_ms` passes (readiness of real threads and
// sockets, not the passing of time).
inline bool PollUntil(const std::function<bool()>& done, int deadline_ms = 10000) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(deadline_ms);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("kubestat-scrapers-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string Write(const std::string& name, const std::string& contents) const {
    std::string file = (path_ / name).string();
    std::ofstream(file, std::ios::binary | std::ios::trunc) << contents;
    return file;
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// A CA and certificates it signs, as PEM text.
class TestPki {
 public:
  explicit TestPki(const std::string& ca_name = "kubestat-test-ca") {
    ca_key_ = EVP_EC_gen("P-256");
    ca_cert_ = X509_new();
    Fill(ca_cert_, ca_name, ca_key_, /*serial=*/1);
    X509_set_issuer_name(ca_cert_, X509_get_subject_name(ca_cert_));
    AddExtension(ca_cert_, ca_cert_, NID_basic_constraints, "critical,CA:TRUE");
    AddExtension(ca_cert_, ca_cert_, NID_key_usage, "critical,keyCertSign,cRLSign");
    X509_sign(ca_cert_, ca_key_, EVP_sha256());
    ca_pem_ = CertPem(ca_cert_);
  }
  ~TestPki() {
    X509_free(ca_cert_);
    EVP_PKEY_free(ca_key_);
  }
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  const std::string& ca_pem() const { return ca_pem_; }

  // A certificate for `san` (e.g. "IP:127.0.0.1") and its key, signed by this CA.
  std::pair<std::string, std::string> Issue(const std::string& common_name, const std::string& san,
                                            bool client = false) {
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* cert = X509_new();
    Fill(cert, common_name, key, ++serial_);
    X509_set_issuer_name(cert, X509_get_subject_name(ca_cert_));
    AddExtension(cert, ca_cert_, NID_basic_constraints, "critical,CA:FALSE");
    AddExtension(cert, ca_cert_, NID_ext_key_usage, client ? "clientAuth" : "serverAuth");
    if (!san.empty()) AddExtension(cert, ca_cert_, NID_subject_alt_name, san.c_str());
    X509_sign(cert, ca_key_, EVP_sha256());
    std::pair<std::string, std::string> result{CertPem(cert), KeyPem(key)};
    X509_free(cert);
    EVP_PKEY_free(key);
    return result;
  }

 private:
  static void Fill(X509* cert, const std::string& common_name, EVP_PKEY* key, long serial) {
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                               0);
  }
  static void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  static std::string CertPem(X509* cert) {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(bio, cert);
    return Drain(bio);
  }
  static std::string KeyPem(EVP_PKEY* key) {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
    return Drain(bio);
  }
  static std::string Drain(BIO* bio) {
    char* data = nullptr;
    long size = BIO_get_mem_data(bio, &data);
    std::string text(data, static_cast<size_t>(size));
    BIO_free(bio);
    return text;
  }

  EVP_PKEY* ca_key_ = nullptr;
  X509* ca_cert_ = nullptr;
  std::string ca_pem_;
  long serial_ = 1;
};

}  // namespace kubestat::scrapers::testing

#endif  // KUBESTAT_TESTS_SCRAPERS_LOOPBACK_PKI_H_
