#include "kubestat/scrapers/kubelet_client.h"

#include <cpprest/http_client.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "http_fetch.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/file.h"
#include "kubestat/scrapers/fetch_error.h"
#include "kubestat/scrapers/resource_metrics_decoder.h"
#include "kubestat/scrapers/summary_decoder.h"

namespace kubestat::scrapers {

struct KubeletClient::Impl {
  internal::TlsMaterial tls;
  std::unique_ptr<kube::BearerTokenFile> token;
  std::mutex mu;
  std::map<std::string, std::shared_ptr<web::http::client::http_client>> clients;
};

absl::StatusOr<KubeletEndpoint> ParseKubeletEndpoint(std::string_view name) {
  if (name == "summary") return KubeletEndpoint::kSummary;
  if (name == "resource") return KubeletEndpoint::kResourceMetrics;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown kubelet endpoint \"", AbslView(name), "\" (want summary or resource)"));
}

absl::Status KubeletClientOptions::Validate() const {
  if (scheme != "https" && scheme != "http") {
    return absl::InvalidArgumentError(
        absl::StrCat("--kubelet-scheme: \"", scheme, "\" is neither https nor http"));
  }
  if (timeout <= Duration::zero()) {
    return absl::InvalidArgumentError("--kubelet-timeout: must be positive");
  }
  if (max_response_bytes == 0) {
    return absl::InvalidArgumentError("--kubelet-max-response-bytes: must be positive");
  }
  if (client_cert_file.empty() != client_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--kubelet-client-certificate and --kubelet-client-key must be given together");
  }
  return absl::OkStatus();
}

KubeletClient::KubeletClient(KubeletClientOptions options)
    : options_(std::move(options)), impl_(std::make_unique<Impl>()) {}

KubeletClient::~KubeletClient() = default;

absl::StatusOr<std::unique_ptr<KubeletClient>> KubeletClient::Create(KubeletClientOptions options) {
  if (absl::Status status = options.Validate(); !status.ok()) return status;
  std::unique_ptr<KubeletClient> client(new KubeletClient(std::move(options)));
  const KubeletClientOptions& o = client->options_;
  internal::TlsMaterial& tls = client->impl_->tls;
  tls.insecure_skip_verify = o.insecure_skip_tls_verify;
  if (!o.ca_file.empty()) {
    absl::StatusOr<std::string> pem = ReadFile(o.ca_file, "--kubelet-certificate-authority");
    if (!pem.ok()) return absl::InvalidArgumentError(pem.status().message());
    tls.ca_pem = *std::move(pem);
  }
  if (!o.client_cert_file.empty()) {
    absl::StatusOr<std::string> cert = ReadFile(o.client_cert_file, "--kubelet-client-certificate");
    if (!cert.ok()) return absl::InvalidArgumentError(cert.status().message());
    absl::StatusOr<std::string> key = ReadFile(o.client_key_file, "--kubelet-client-key");
    if (!key.ok()) return absl::InvalidArgumentError(key.status().message());
    tls.client_cert_pem = *std::move(cert);
    tls.client_key_pem = *std::move(key);
  }
  if (absl::Status status = internal::ValidateTlsMaterial(tls, "kubelet TLS"); !status.ok()) {
    return status;
  }
  if (!o.token_file.empty()) {
    client->impl_->token = std::make_unique<kube::BearerTokenFile>(o.token_file);
  }
  return client;
}

std::string KubeletClient::PathAndQuery() const {
  return options_.endpoint == KubeletEndpoint::kSummary ? "/stats/summary?only_cpu_and_memory=true"
                                                        : "/metrics/resource";
}

std::shared_ptr<web::http::client::http_client> KubeletClient::ClientFor(
    const ScrapeTarget& target) {
  std::string base = absl::StrCat(options_.scheme, "://", target.HostPort());
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto& client = impl_->clients[base];
  if (!client) {
    client = std::make_shared<web::http::client::http_client>(
        base, internal::MakeClientConfig(impl_->tls, options_.timeout));
  }
  return client;
}

absl::StatusOr<KubeletResponse> KubeletClient::Fetch(const ScrapeTarget& target) {
  std::vector<std::pair<std::string, std::string>> headers;
  headers.emplace_back("Accept", options_.endpoint == KubeletEndpoint::kSummary
                                     ? "application/json"
                                     : "text/plain;version=0.0.4");
  if (impl_->token != nullptr) {
    absl::StatusOr<std::string> token = impl_->token->Get();
    if (!token.ok()) return WithFailureReason(token.status(), "auth");
    headers.emplace_back("Authorization", absl::StrCat("Bearer ", *token));
  }
  std::shared_ptr<web::http::client::http_client> client;
  try {
    client = ClientFor(target);
  } catch (const std::exception& e) {
    return WithFailureReason(absl::InvalidArgumentError(absl::StrCat(
                                 "kubelet address ", target.HostPort(), ": ", e.what())),
                             "connect");
  }
  absl::StatusOr<internal::FetchResult> result =
      internal::Fetch(*client, PathAndQuery(), headers, options_.timeout,
                      options_.max_response_bytes, kSummaryPadding);
  if (!result.ok()) return result.status();
  return KubeletResponse{std::move(result->body), std::move(result->content_type)};
}

absl::StatusOr<NodeScrape> KubeletScraper::Scrape(const ScrapeTarget& target) {
  absl::StatusOr<KubeletResponse> response = client_.Fetch(target);
  if (!response.ok()) return response.status();
  absl::StatusOr<NodeScrape> scrape =
      client_.options().endpoint == KubeletEndpoint::kSummary
          ? DecodeSummaryInPlace(&response->body)
          : DecodeResourceMetrics(response->body, target.node_name, clock_.Now());
  if (!scrape.ok()) return WithFailureReason(scrape.status(), "decode");
  return scrape;
}

}  // namespace kubestat::scrapers
