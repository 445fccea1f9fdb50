// AggregatorOptions: everything kubestat-aggregator is told on its command line, as one
// struct with the defaults a production cluster wants.
//
// RegisterFlags binds every field to its flag (spelled as metrics-server and the Kubernetes
// components spell theirs; `--help` prints each with its default). Validate() runs once at
// start, after parsing: it checks every field and every relation between fields and returns
// InvalidArgument whose message starts with the flag to fix ("--kubelet-timeout: must be
// shorter than --metric-resolution (10s >= 10s)"). The derived accessors (Windows()) may be
// used only after Validate() succeeded.
//
// Plain value type; thread-compatible.
#ifndef KUBESTAT_AGGREGATOR_OPTIONS_H_
#define KUBESTAT_AGGREGATOR_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/aggregator/frontends/rest_server.h"
#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/aggregator/query/recommender.h"
#include "kubestat/core/clock.h"
#include "kubestat/kube/serving_options.h"
#include "kubestat/scrapers/kubelet_client.h"
#include "kubestat/scrapers/node_address.h"
#include "kubestat/scrapers/scheduler.h"
#include "kubestat/storage/store.h"

namespace kubestat {
class FlagSet;
}  // namespace kubestat

namespace kubestat::aggregator {

struct AggregatorOptions {
  // kubeconfig file for the kube API; empty: the in-cluster service account. Default: ""
  std::string kubeconfig;
  // Context of `kubeconfig`; empty: its current-context. Default: ""
  std::string kubeconfig_context;
  // A fixed node list "name=host[:port],..." instead of the kube API (no pods). Default: ""
  std::string static_nodes;
  // Node address types to scrape kubelets at, in order of preference.
  // Default: Hostname,InternalDNS,InternalIP,ExternalDNS,ExternalIP
  std::vector<std::string> preferred_address_types = {"Hostname", "InternalDNS", "InternalIP",
                                                      "ExternalDNS", "ExternalIP"};
  // Kubelet port. Default: 10250
  int64_t kubelet_port = 10250;
  // Use the port in the node's status.daemonEndpoints.kubeletEndpoint. Default: false
  bool kubelet_use_node_status_port = false;
  // What to scrape: "summary" (/stats/summary) or "resource" (/metrics/resource).
  // Default: "summary"
  std::string kubelet_endpoint = "summary";
  // "https", or "http" for tests and demos. Default: "https"
  std::string kubelet_scheme = "https";
  // CA file for the kubelets' serving certificates; empty: the system roots. Default: ""
  std::string kubelet_ca;
  // INSECURE: do not verify the kubelets' serving certificates. Default: false
  bool kubelet_insecure_tls = false;
  // Bearer token file for kubelets, re-read when it changes. Default: ""
  std::string kubelet_token_file;
  // Client certificate and key files presented to kubelets. Default: ""
  std::string kubelet_client_certificate;
  std::string kubelet_client_key;
  // Deadline of one kubelet request; below metric_resolution. Default: 5s
  Duration kubelet_timeout = std::chrono::seconds(5);
  // Largest kubelet response accepted. Default: 33554432
  int64_t kubelet_max_response_bytes = 32 << 20;
  // Time between scrape rounds. Default: 10s
  Duration metric_resolution = std::chrono::seconds(10);
  // While a round scrapes, its nodes' new samples are published (query snapshot, gRPC
  // watchers) at most this often, and no more often than keeps publishing under a tenth of
  // a core; 0 publishes only when a round completes. Default: 500ms
  Duration publish_interval = std::chrono::milliseconds(500);
  // Kubelet scrapes running at once. Default: 32
  int64_t max_concurrent_scrapes = 32;
  // Fraction of the resolution over which a round's scrapes are spread. Default: 0.5
  double scrape_stagger = 0.5;
  // A scrape holding a reading stamped more than max_sample_age before the time it was made
  // (a time of 0, a stale cache) or more than max_sample_ahead after it (a node clock far
  // ahead) fails with reason bad_timestamp and nothing of it is stored. Default: 10m, 10m
  Duration max_sample_age = std::chrono::minutes(10);
  Duration max_sample_ahead = std::chrono::minutes(10);
  // /readyz fails once the kube API has left discovery unanswered this long. Default: 1m
  Duration kube_api_unready_after = std::chrono::minutes(1);
  // /readyz fails after this many scrape rounds in a row without one node scraped.
  // Default: 3
  int64_t scrape_unready_rounds = 3;
  // metrics.k8s.io leaves out a node or pod whose newest sample is older than this, as
  // metrics-server drops what its last scrapes did not refresh (metrics/v1alpha1 keeps them,
  // each window with its endtime); 0: three metric resolutions. Default: 0
  Duration metrics_max_age = Duration::zero();
  // HTTPS serving, authentication and authorization (--secure-port 8443, --tls-*,
  // --client-ca-file, --requestheader-*, --token-auth-file, --authentication-kubeconfig,
  // --authorization-*, gzip; see kube/serving_options.h for each default).
  kube::SecureServingOptions serving;
  // Append every decoded node scrape to this file as a JSON line. Default: ""
  std::string scrape_dump;
  // Log verbosity. Default: 0
  int64_t verbosity = 0;
  // RocksDB directory (required). Default: ""
  std::string storage_dir;
  // How long samples and rollups are kept; at least the longest window. Default: 26h
  Duration retention = std::chrono::hours(26);
  // Right-sizing: how far back recommendations read usage; the store keeps each container's
  // hourly usage histograms as long (--recommendation-history). Default: 192h (8 days)
  Duration recommendation_history = std::chrono::hours(192);
  // The recommender's cache of merged closed history, MiB; 0 turns it off
  // (--recommendation-cache-mib). Default: 192
  int64_t recommendation_cache_mib = 192;
  // The statistics of the recommendations (--recommend-cpu-percentile, --recommend-cpu-margin,
  // --recommend-memory-margin; see limits/recommend.h). Default: 95, 0.15, 0.15
  limits::RecommendOptions recommend;
  // fsync every write batch. Default: false
  bool storage_fsync = false;
  // Store writes pause while the volume has less free space than this (a quantity: 256Mi,
  // 1Gi), at most a tenth of the volume, and resume when there is room; they wait in memory
  // meanwhile (storage_backlog). "0": never paused. Default: 256Mi
  std::string storage_min_free = "256Mi";
  // Memory for the store writes that wait while the disk cannot take them (a quantity).
  // "0": none, a write that cannot be made fails the node's scrape. Default: 256Mi
  std::string storage_backlog = "256Mi";
  // Stop the process (exit code 1, the damage named) on a store that is damaged, instead of
  // what happens by default: a store whose reads fail with DataLoss at start is salvaged
  // (storage::Store::Salvage: what can be read is kept and served, the unreadable ranges
  // named in the log and counted, the damaged files kept in <dir>/quarantine-<time>/), one
  // that cannot be opened at all is moved there and started empty, and series whose
  // dictionary entries cannot be restored are named, counted and left out. Default: false
  bool storage_strict = false;
  // RocksDB block cache, MiB. Default: 64
  int64_t storage_cache_mib = 64;
  // Statistical windows kept for every series. Default: 10s,1m,1h,1d
  std::vector<std::string> windows = {"10s", "1m", "1h", "1d"};
  // Address and port of the gRPC server; port 0 turns it off. Its callers authenticate with
  // a bearer token (as the REST API checks tokens) and need list/watch on nodes and pods.
  // Default: 127.0.0.1:8081
  std::string grpc_address = "127.0.0.1";
  int64_t grpc_port = 8081;
  // Serving certificate and key of the gRPC server; without them it serves plain text, which
  // only a loopback grpc_address allows (its client is a sidecar in the same pod).
  // Default: "", ""
  std::string grpc_tls_cert_file;
  std::string grpc_tls_private_key_file;

  // ---- Node agents (kubestat-node-agent: allocatable and exclusive assignments) ----
  // Port of the node agent beside each kubelet, at the kubelet's node address; it is
  // scraped in the node's scrape task, after the kubelet, with --kubelet-timeout as its
  // deadline. 0: no agent is scraped. Default: 0
  int64_t node_agent_port = 0;
  // CA file for the agents' serving certificates; empty: the system roots. Default: ""
  std::string node_agent_ca;
  // INSECURE: do not verify the agents' serving certificates. Default: false
  bool node_agent_insecure_tls = false;
  // Bearer token file presented to the agents (the aggregator's service account), re-read
  // when it changes; empty: --kubelet-token-file's, and in a cluster without --kubeconfig
  // the service account token. Default: ""
  std::string node_agent_token_file;

  // Binds every field above to its flag.
  void RegisterFlags(FlagSet& flags);
  // Checks every field; InvalidArgument naming the flag.
  [[nodiscard]] absl::Status Validate() const;
  // `windows` parsed and sorted (after a successful Validate()).
  std::vector<Duration> Windows() const;

  // The components' options as these flags set them (after a successful Validate()).
  scrapers::KubeletAddressOptions AddressOptions() const;
  scrapers::KubeletClientOptions ClientOptions() const;
  // The agents' client: https, --node-agent-*, the kubelet timeout and response cap.
  scrapers::KubeletClientOptions NodeAgentClientOptions() const;
  scrapers::SchedulerOptions SchedulingOptions() const;
  aggregator::IngestOptions IngestionOptions() const;
  storage::StoreOptions StorageOptions() const;
  RecommenderOptions RecommendationOptions() const;
  RestServerOptions RestOptions() const;
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_OPTIONS_H_
