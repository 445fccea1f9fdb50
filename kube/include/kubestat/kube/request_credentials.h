// What the transport knows about a request's credentials: its headers and the client
// certificate the TLS layer verified.
//
// RequestHeaders is a read-only view of the headers; names compare case-insensitively
// (ASCII), values are as received. HeaderList is a simple owning implementation.
// ClientCertificate describes a certificate whose chain the TLS layer verified: against
// which configured CA bundles it verified (by name, e.g. kClientCaBundle,
// kRequestHeaderCaBundle), and its subject's CN and O values. A certificate that verified
// against no bundle is described with an empty `verified_by`.
// Values; thread-compatible (a const view may be read from many threads if the
// implementation allows).
#ifndef KUBESTAT_KUBE_REQUEST_CREDENTIALS_H_
#define KUBESTAT_KUBE_REQUEST_CREDENTIALS_H_

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kubestat::kube {

// Names of the CA bundles a client certificate can verify against.
// --client-ca-file: certificates that identify users (CN user, O groups).
inline constexpr std::string_view kClientCaBundle = "client-ca";
// --requestheader-client-ca-file: certificates of front proxies whose identity headers are
// believed.
inline constexpr std::string_view kRequestHeaderCaBundle = "requestheader-client-ca";

class RequestHeaders {
 public:
  virtual ~RequestHeaders() = default;
  // The first value of header `name` (any case); nullopt when absent.
  virtual std::optional<std::string_view> First(std::string_view name) const = 0;
  // Every value of header `name` (any case), in order received; empty when absent.
  virtual std::vector<std::string_view> All(std::string_view name) const = 0;
  // Calls `visit(name, value)` for every header line in order received.
  virtual void ForEach(
      const std::function<void(std::string_view name, std::string_view value)>& visit) const = 0;
};

// Headers held as (name, value) pairs in order.
class HeaderList final : public RequestHeaders {
 public:
  HeaderList() = default;
  explicit HeaderList(std::vector<std::pair<std::string, std::string>> headers)
      : headers_(std::move(headers)) {}
  HeaderList(std::initializer_list<std::pair<std::string, std::string>> headers)
      : headers_(headers) {}
  void Add(std::string name, std::string value) {
    headers_.emplace_back(std::move(name), std::move(value));
  }

  std::optional<std::string_view> First(std::string_view name) const override;
  std::vector<std::string_view> All(std::string_view name) const override;
  void ForEach(const std::function<void(std::string_view, std::string_view)>& visit) const override;

 private:
  std::vector<std::pair<std::string, std::string>> headers_;
};

struct ClientCertificate {
  // Names of the CA bundles the chain verified against; empty when it verified against none.
  std::vector<std::string> verified_by;
  std::string common_name;
  std::vector<std::string> organizations;

  bool VerifiedBy(std::string_view bundle) const;
};

// The credentials of one request. `headers` must outlive the struct; `client_certificate`
// is null when the peer sent none.
struct RequestCredentials {
  const RequestHeaders& headers;
  const ClientCertificate* client_certificate = nullptr;
};

}  // namespace kubestat::kube

#endif  // KUBESTAT_KUBE_REQUEST_CREDENTIALS_H_
