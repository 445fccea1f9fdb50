// The kubelet client: fetches one node's /stats/summary or /metrics/resource over HTTPS and
// hands the bytes to the matching decoder.
//
// KubeletClient only moves bytes: it builds the URL from a ScrapeTarget (node_address.h),
// verifies the kubelet's certificate against `ca_file` (or the system roots; or not at all
// with `insecure_skip_tls_verify`), sends `Authorization: Bearer <token>` read from
// `token_file` (re-read when the file changes, see bearer_token.h), enforces one deadline
// over the whole exchange (`timeout`) and a cap on the body (`max_response_bytes`, enforced
// while reading: reading stops past the cap). Every failure is a Status carrying a reason
// (fetch_error.h): timeout, connect, tls, read, http_<code>, too_large, auth.
// KubeletScraper adds decoding (summary_decoder.h / resource_metrics_decoder.h; reason
// "decode") and is the NodeScraper the scheduler uses.
//
// Deadlines are measured on the clock given to Create (http/client.h, Deadline).
//
// Thread-safety: Fetch and Scrape may be called concurrently from any threads. One
// http::Client (with its keep-alive connections) is kept per kubelet host:port.
#ifndef KUBESTAT_SCRAPERS_KUBELET_CLIENT_H_
#define KUBESTAT_SCRAPERS_KUBELET_CLIENT_H_

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/core/clock.h"
#include "kubestat/kube/bearer_token.h"
#include "kubestat/scrapers/node_address.h"
#include "kubestat/scrapers/node_scrape.h"
#include "kubestat/scrapers/node_scraper.h"

namespace kubestat::scrapers {

// Which kubelet endpoint to scrape.
enum class KubeletEndpoint {
  kSummary,          // GET /stats/summary?only_cpu_and_memory=true
  kResourceMetrics,  // GET /metrics/resource
};

// "summary" or "resource"; InvalidArgument otherwise.
[[nodiscard]] absl::StatusOr<KubeletEndpoint> ParseKubeletEndpoint(std::string_view name);

struct KubeletClientOptions {
  // The endpoint scraped (--kubelet-endpoint=summary|resource). Default: summary
  KubeletEndpoint endpoint = KubeletEndpoint::kSummary;
  // "https" or "http" (plain HTTP only for tests and demos). Default: https
  std::string scheme = "https";
  // PEM file of the CA that signed the kubelets' serving certificates; empty: the system's
  // trusted roots (--kubelet-certificate-authority). Default: ""
  std::string ca_file;
  // Skip verification of the kubelets' certificates (--kubelet-insecure-tls). Default: false
  bool insecure_skip_tls_verify = false;
  // File holding the bearer token sent to kubelets; empty: none. Default: ""
  std::string token_file;
  // PEM client certificate and key presented to kubelets; empty: none. Default: ""
  std::string client_cert_file;
  std::string client_key_file;
  // Deadline for one whole request (connect, headers and body). Default: 5s
  Duration timeout = std::chrono::seconds(5);
  // Largest body accepted; larger ones fail with reason too_large. Default: 32 MiB
  size_t max_response_bytes = 32u << 20;

  // InvalidArgument naming the flag for a bad value (unknown scheme, timeout <= 0, cap 0,
  // unreadable CA or client certificate files).
  [[nodiscard]] absl::Status Validate() const;
};

// A fetched kubelet body.
struct KubeletResponse {
  std::string body;  // capacity leaves room for the summary decoder's padding
  std::string content_type;
};

class KubeletClient {
 public:
  // Reads the CA and client certificate files. InvalidArgument when options are invalid or
  // the TLS material does not load. Deadlines run on `clock`, which must outlive the client.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<KubeletClient>> Create(
      KubeletClientOptions options, const Clock& clock);
  // As above, with deadlines on RealClock::Get().
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<KubeletClient>> Create(
      KubeletClientOptions options);
  ~KubeletClient();

  // GETs the configured endpoint of `target`. `body_buffer`, when not null, is storage the
  // body is read into (http::ClientRequest::body_buffer): on success KubeletResponse::body
  // carries it and *body_buffer is left empty; on any failure *body_buffer gets it back,
  // empty (its capacity possibly grown, up to about max_response_bytes). A buffer serves
  // one call at a time.
  [[nodiscard]] absl::StatusOr<KubeletResponse> Fetch(const ScrapeTarget& target,
                                                      std::string* body_buffer = nullptr);
  // GETs `path_and_query` of `target` (another server beside the kubelet, such as the node
  // agent), asking for `accept`, with the same TLS, token, deadline, cap and failure
  // reasons; `body_buffer` as for Fetch.
  [[nodiscard]] absl::StatusOr<KubeletResponse> FetchPath(const ScrapeTarget& target,
                                                          const std::string& path_and_query,
                                                          std::string_view accept,
                                                          std::string* body_buffer = nullptr);

  // The path and query for the configured endpoint.
  std::string PathAndQuery() const;
  const KubeletClientOptions& options() const { return options_; }

 private:
  struct Impl;
  KubeletClient(KubeletClientOptions options, std::unique_ptr<Impl> impl);

  const KubeletClientOptions options_;
  std::unique_ptr<Impl> impl_;
};

// Fetches with a KubeletClient and decodes the body into a NodeScrape. For
// /metrics/resource, which carries no node name, the target's node name and the clock's
// time when the body arrived are used.
//
// Body storage: each thread that scrapes keeps the storage of its last body (one per thread,
// shared by every KubeletScraper) and reads its next body into it, so a scrape worker
// allocates no body buffer once its storage fits the bodies it reads. Storage whose capacity
// is above kMaxKeptBodyBytes after a scrape is freed rather than kept, so one huge answer
// does not pin its memory for the thread's lifetime: a thread keeps at most that much (the
// scheduler's 32 workers, its default, at most 128 MiB; in practice the largest body each
// read, a few hundred KiB).
class KubeletScraper final : public NodeScraper {
 public:
  // The most body storage (capacity, in bytes) a thread keeps between scrapes: 4 MiB, over
  // ten times a large kubelet body (100-300 KiB).
  static constexpr size_t kMaxKeptBodyBytes = size_t{4} << 20;

  // The largest scrape (room for pods) a thread keeps between scrapes: over twice the 110
  // pods a kubelet runs by default.
  static constexpr size_t kMaxKeptPods = 256;

  KubeletScraper(KubeletClient& client, const Clock& clock) : client_(client), clock_(clock) {}
  [[nodiscard]] absl::StatusOr<NodeScrape> Scrape(const ScrapeTarget& target) override;
  // Keeps `scrape` for the calling thread's next summary to be decoded into (its pods,
  // containers and strings are reused), unless it has room for over kMaxKeptPods pods.
  void Recycle(NodeScrape&& scrape) override;

  // Room for pods in the scrape the calling thread keeps, for tests (0 when it keeps none).
  static size_t KeptScrapePodsOfThisThread();

  // The body storage the calling thread keeps for its next scrape, for tests: where it
  // starts and its capacity (that of an empty std::string when it keeps none).
  struct KeptBody {
    const char* data = nullptr;
    size_t capacity = 0;
  };
  static KeptBody KeptBodyOfThisThread();

 private:
  KubeletClient& client_;
  const Clock& clock_;
};

}  // namespace kubestat::scrapers

#endif  // KUBESTAT_SCRAPERS_KUBELET_CLIENT_H_
