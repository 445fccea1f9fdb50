#include "kubestat/scrapers/kubelet_client.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "fetch_status.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/file.h"
#include "kubestat/http/client.h"
#include "kubestat/scrapers/fetch_error.h"
#include "kubestat/scrapers/resource_metrics_decoder.h"
#include "kubestat/scrapers/summary_decoder.h"

namespace kubestat::scrapers {

struct KubeletClient::Impl {
  explicit Impl(const Clock& clock) : clock(clock) {}

  // The http::Client for `target`'s host and port, made on first use.
  absl::StatusOr<std::shared_ptr<http::Client>> ClientFor(const ScrapeTarget& target,
                                                          const std::string& scheme) {
    http::ClientOptions client_options = base;
    client_options.base_url = absl::StrCat(scheme, "://", target.HostPort());
    std::lock_guard<std::mutex> lock(mu);
    std::shared_ptr<http::Client>& client = clients[client_options.base_url];
    if (client == nullptr) {
      absl::StatusOr<std::unique_ptr<http::Client>> made =
          http::Client::Create(std::move(client_options), clock);
      if (!made.ok()) return made.status();
      client = *std::move(made);
    }
    return client;
  }

  const Clock& clock;
  // Every field but base_url, shared by the per-kubelet clients.
  http::ClientOptions base;
  std::mutex mu;
  std::map<std::string, std::shared_ptr<http::Client>> clients;
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

KubeletClient::KubeletClient(KubeletClientOptions options, std::unique_ptr<Impl> impl)
    : options_(std::move(options)), impl_(std::move(impl)) {}

KubeletClient::~KubeletClient() = default;

absl::StatusOr<std::unique_ptr<KubeletClient>> KubeletClient::Create(KubeletClientOptions options) {
  return Create(std::move(options), RealClock::Get());
}

absl::StatusOr<std::unique_ptr<KubeletClient>> KubeletClient::Create(KubeletClientOptions options,
                                                                     const Clock& clock) {
  if (absl::Status status = options.Validate(); !status.ok()) return status;
  auto impl = std::make_unique<Impl>(clock);
  http::ClientOptions& base = impl->base;
  base.timeout = options.timeout;
  base.max_response_bytes = options.max_response_bytes;
  // TLS material only means something over https (the client refuses it with http).
  if (options.scheme == "https") {
    base.insecure_skip_tls_verify = options.insecure_skip_tls_verify;
    if (!options.ca_file.empty()) {
      absl::StatusOr<std::string> pem =
          ReadFile(options.ca_file, "--kubelet-certificate-authority");
      if (!pem.ok()) return absl::InvalidArgumentError(pem.status().message());
      base.ca_pem = *std::move(pem);
    }
    if (!options.client_cert_file.empty()) {
      absl::StatusOr<std::string> cert =
          ReadFile(options.client_cert_file, "--kubelet-client-certificate");
      if (!cert.ok()) return absl::InvalidArgumentError(cert.status().message());
      absl::StatusOr<std::string> key = ReadFile(options.client_key_file, "--kubelet-client-key");
      if (!key.ok()) return absl::InvalidArgumentError(key.status().message());
      base.client_cert_pem = *std::move(cert);
      base.client_key_pem = *std::move(key);
    }
  }
  if (!options.token_file.empty()) {
    auto token = std::make_shared<kube::BearerTokenFile>(options.token_file);
    base.bearer_token_source = [token] { return token->Get(); };
  }
  // Checks the TLS material and limits once, with a stand-in host.
  http::ClientOptions check = base;
  check.base_url = absl::StrCat(options.scheme, "://127.0.0.1");
  if (absl::Status status = check.Validate(); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("kubelet client: ", status.message()));
  }
  return std::unique_ptr<KubeletClient>(new KubeletClient(std::move(options), std::move(impl)));
}

std::string KubeletClient::PathAndQuery() const {
  return options_.endpoint == KubeletEndpoint::kSummary ? "/stats/summary?only_cpu_and_memory=true"
                                                        : "/metrics/resource";
}

absl::StatusOr<KubeletResponse> KubeletClient::Fetch(const ScrapeTarget& target,
                                                     std::string* body_buffer) {
  return FetchPath(target, PathAndQuery(),
                   options_.endpoint == KubeletEndpoint::kSummary ? "application/json"
                                                                  : "text/plain;version=0.0.4",
                   body_buffer);
}

absl::StatusOr<KubeletResponse> KubeletClient::FetchPath(const ScrapeTarget& target,
                                                         const std::string& path_and_query,
                                                         std::string_view accept,
                                                         std::string* body_buffer) {
  // Emptied whatever the outcome (kubelet_client.h, Fetch).
  if (body_buffer != nullptr) body_buffer->clear();
  absl::StatusOr<std::shared_ptr<http::Client>> client = impl_->ClientFor(target, options_.scheme);
  if (!client.ok()) {
    return WithFailureReason(
        absl::InvalidArgumentError(
            absl::StrCat("kubelet address ", target.HostPort(), ": ", client.status().message())),
        "connect");
  }
  http::ClientRequest request;
  request.path_and_query = path_and_query;
  request.headers.emplace_back("Accept", std::string(accept));
  request.body_spare_capacity = kSummaryPadding;
  request.body_buffer = body_buffer;
  absl::StatusOr<http::ClientResponse> response = (*client)->Do(request);
  if (!response.ok()) return internal::FromClientError(response.status());
  if (response->code < 200 || response->code > 299) {
    absl::Status status = internal::FromHttpCode(response->code, response->body);
    if (body_buffer != nullptr) {
      *body_buffer = std::move(response->body);
      body_buffer->clear();
    }
    return status;
  }
  return KubeletResponse{std::move(response->body), std::move(response->content_type)};
}

namespace {

// The calling thread's body storage (kubelet_client.h, KubeletScraper).
std::string& ThreadBodyStorage() {
  thread_local std::string storage;
  return storage;
}

// The calling thread's scrape given back by Recycle, whose storage the next summary is
// decoded into.
NodeScrape& ThreadKeptScrape() {
  thread_local NodeScrape scrape;
  return scrape;
}

// Fetches `target` into *storage and decodes the body (a summary into *kept's storage); the
// body storage is back in *storage, empty, when this returns.
absl::StatusOr<NodeScrape> FetchAndDecode(KubeletClient& client, const Clock& clock,
                                          const ScrapeTarget& target, std::string* storage,
                                          NodeScrape* kept) {
  absl::StatusOr<KubeletResponse> response = client.Fetch(target, storage);
  if (!response.ok()) return response.status();  // the storage came back with the error
  absl::StatusOr<NodeScrape> scrape;
  if (client.options().endpoint == KubeletEndpoint::kSummary) {
    NodeScrape decoded = std::move(*kept);
    if (absl::Status status = DecodeSummaryInPlace(&response->body, &decoded); status.ok()) {
      scrape = std::move(decoded);
    } else {
      scrape = status;
      *kept = std::move(decoded);  // its storage serves the next body all the same
    }
  } else {
    scrape = DecodeResourceMetrics(response->body, target.node_name, clock.Now());
  }
  // The scrape holds copies of what it read: the storage is free for the next body.
  *storage = std::move(response->body);
  storage->clear();
  if (!scrape.ok()) return WithFailureReason(scrape.status(), "decode");
  return scrape;
}

}  // namespace

KubeletScraper::KeptBody KubeletScraper::KeptBodyOfThisThread() {
  const std::string& storage = ThreadBodyStorage();
  return {storage.data(), storage.capacity()};
}

size_t KubeletScraper::KeptScrapePodsOfThisThread() { return ThreadKeptScrape().pods.capacity(); }

absl::StatusOr<NodeScrape> KubeletScraper::Scrape(const ScrapeTarget& target) {
  std::string& storage = ThreadBodyStorage();
  absl::StatusOr<NodeScrape> scrape =
      FetchAndDecode(client_, clock_, target, &storage, &ThreadKeptScrape());
  if (storage.capacity() > kMaxKeptBodyBytes) std::string().swap(storage);
  return scrape;
}

void KubeletScraper::Recycle(NodeScrape&& scrape) {
  if (scrape.pods.capacity() > kMaxKeptPods) return;  // freed here
  ThreadKeptScrape() = std::move(scrape);
}

}  // namespace kubestat::scrapers
