#include "kubestat/aggregator/options.h"

#include <algorithm>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "kubestat/apimachinery/quantity.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/flags.h"
#include "kubestat/core/time.h"

namespace kubestat::aggregator {
namespace {

// A component's InvalidArgument, prefixed with the flags that set it.
absl::Status Prefixed(std::string_view flags, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::InvalidArgumentError(std::string(flags) + ": " + std::string(status.message()));
}

}  // namespace

void AggregatorOptions::RegisterFlags(FlagSet& flags) {
  flags.AddString("kubeconfig", &kubeconfig,
                  "kubeconfig file for the kube API (it and the CA and certificate files it "
                  "names re-read when they change); empty: the in-cluster service account");
  flags.AddString("kubeconfig-context", &kubeconfig_context,
                  "context of --kubeconfig to use; empty: its current-context");
  flags.AddString("static-nodes", &static_nodes,
                  "fixed node list name=host[:port],... instead of the kube API (no pods)");
  flags.AddStringList("kubelet-preferred-address-types", &preferred_address_types,
                      "node address types to scrape kubelets at, in order of preference");
  flags.AddInt64("kubelet-port", &kubelet_port, "kubelet port");
  flags.AddBool("kubelet-use-node-status-port", &kubelet_use_node_status_port,
                "use the port in the node's status.daemonEndpoints.kubeletEndpoint");
  flags.AddString("kubelet-endpoint", &kubelet_endpoint,
                  "what to scrape: summary (/stats/summary) or resource (/metrics/resource)");
  flags.AddString("kubelet-scheme", &kubelet_scheme, "https, or http for tests and demos");
  flags.AddString("kubelet-certificate-authority", &kubelet_ca,
                  "CA file for the kubelets' serving certificates; empty: the system roots");
  flags.AddBool("kubelet-insecure-tls", &kubelet_insecure_tls,
                "INSECURE: do not verify the kubelets' serving certificates");
  flags.AddString("kubelet-token-file", &kubelet_token_file,
                  "bearer token file for kubelets, re-read when it changes (in a cluster without "
                  "--kubeconfig: the "
                  "in-cluster service account token, when present)");
  flags.AddString("kubelet-client-certificate", &kubelet_client_certificate,
                  "client certificate file presented to kubelets");
  flags.AddString("kubelet-client-key", &kubelet_client_key, "key of --kubelet-client-certificate");
  flags.AddDuration("kubelet-timeout", &kubelet_timeout,
                    "deadline for one kubelet request; must be below --metric-resolution");
  flags.AddInt64("kubelet-max-response-bytes", &kubelet_max_response_bytes,
                 "largest kubelet response accepted");
  flags.AddInt64("node-agent-port", &node_agent_port,
                 "port of kubestat-node-agent beside each kubelet (allocatable, exclusive cpus, "
                 "NUMA memory and devices from the podresources API); 0: agents are not scraped");
  flags.AddString("node-agent-certificate-authority", &node_agent_ca,
                  "CA file for the node agents' serving certificates; empty: the system roots");
  flags.AddBool("node-agent-insecure-tls", &node_agent_insecure_tls,
                "INSECURE: do not verify the node agents' serving certificates");
  flags.AddString("node-agent-token-file", &node_agent_token_file,
                  "bearer token file presented to the node agents, re-read when it changes; "
                  "empty: --kubelet-token-file's (in a cluster: the service account token)");
  flags.AddDuration("metric-resolution", &metric_resolution, "time between scrape rounds");
  flags.AddDuration("publish-interval", &publish_interval,
                    "while a round scrapes, publish its nodes' new samples at most this often "
                    "(and within a tenth of a core); 0: only when a round completes");
  flags.AddInt64("max-concurrent-scrapes", &max_concurrent_scrapes,
                 "kubelet scrapes running at once");
  flags.AddDouble("scrape-stagger", &scrape_stagger,
                  "fraction of the resolution over which the scrapes of a round are spread");
  flags.AddDuration("max-sample-age", &max_sample_age,
                    "a scrape holding a reading stamped more than this before the scrape (a time "
                    "of 0, a stale cache) fails with reason bad_timestamp and is not stored");
  flags.AddDuration("max-sample-ahead", &max_sample_ahead,
                    "a scrape holding a reading stamped more than this after the scrape (a node "
                    "clock far ahead) fails with reason bad_timestamp and is not stored");
  flags.AddDuration("kube-api-unready-after", &kube_api_unready_after,
                    "/readyz fails once the kube API has not answered discovery for this long");
  flags.AddInt64("scrape-unready-rounds", &scrape_unready_rounds,
                 "/readyz fails after this many scrape rounds in a row without one node scraped");
  flags.AddDuration("metrics-max-age", &metrics_max_age,
                    "metrics.k8s.io leaves out nodes and pods whose newest sample is older than "
                    "this (metrics/v1alpha1 keeps them); 0: three --metric-resolution");
  serving.RegisterFlags(flags);
  flags.AddString("grpc-address", &grpc_address,
                  "address of the gRPC server (kubestat.v1.Aggregator)");
  flags.AddInt64("grpc-port", &grpc_port, "port of the gRPC server; 0 turns it off");
  flags.AddString("grpc-tls-cert-file", &grpc_tls_cert_file,
                  "serving certificate of the gRPC server (PEM); empty: plain text, allowed only "
                  "on a loopback --grpc-address");
  flags.AddString("grpc-tls-private-key-file", &grpc_tls_private_key_file,
                  "key of --grpc-tls-cert-file");
  flags.AddString("storage-dir", &storage_dir,
                  "RocksDB directory holding a day of samples and rollups (required; a "
                  "PersistentVolume in a cluster)");
  flags.AddDuration("retention", &retention,
                    "how long samples and rollups are kept: a day plus a margin (at least the "
                    "longest window)");
  flags.AddDuration("recommendation-history", &recommendation_history,
                    "how far back recommendations read usage; each container's hourly usage "
                    "histograms are kept on disk as long");
  flags.AddInt64("recommendation-cache-mib", &recommendation_cache_mib,
                 "memory for the merged closed usage history of each workload container, so "
                 "that a repeated request reads only what changed (least recently used "
                 "evicted; 0: no cache; about 1 KB per container and resource), MiB");
  flags.AddDouble("recommend-cpu-percentile", &recommend.cpu_percentile,
                  "percentile of a container's cpu usage over the history that its recommended "
                  "cpu request covers, in (0, 100]");
  flags.AddDouble("recommend-cpu-margin", &recommend.cpu_margin,
                  "fraction added to the cpu statistics (request percentile, limit max)");
  flags.AddDouble("recommend-memory-margin", &recommend.memory_margin,
                  "fraction added to the memory peak (memory request and limit)");
  flags.AddBool("storage-fsync", &storage_fsync,
                "fsync every write batch (survives power loss); without it the write-ahead log "
                "still survives a killed process");
  flags.AddBool("storage-strict", &storage_strict,
                "stop the process on a damaged store instead of serving what can be read: by "
                "default a store that cannot be read whole is salvaged (what can be read is "
                "kept, the damaged files moved to <storage-dir>/quarantine-<time>/), also when "
                "the damage is read while running, and one that cannot be opened is moved "
                "there and started anew");
  flags.AddString("storage-min-free", &storage_min_free,
                  "store writes pause while the volume has less free space than this quantity "
                  "(256Mi, 1Gi), at most a tenth of the volume, and resume when there is room; "
                  "meanwhile they wait in memory (--storage-backlog) and the windows go on; "
                  "0: never paused");
  flags.AddString("storage-backlog", &storage_backlog,
                  "memory for the store writes that wait while the disk cannot take them (a "
                  "quantity: 256Mi, 1Gi); beyond it the oldest waiting scrapes are dropped and "
                  "counted, and the windows are rebuilt from what the store holds; 0: a write "
                  "that cannot be made is a failed scrape");
  flags.AddInt64("storage-cache-mib", &storage_cache_mib, "RocksDB block cache, MiB");
  flags.AddStringList("windows", &windows,
                      "statistical windows kept for every series (durations, e.g. 10s,1m,1h,1d)");
  flags.AddString("scrape-dump", &scrape_dump,
                  "append every decoded node scrape to this file as a JSON line");
  flags.AddInt64("v", &verbosity, "log verbosity");
}

absl::Status AggregatorOptions::Validate() const {
  if (absl::Status s = serving.Validate(); !s.ok()) return s;
  if (grpc_tls_cert_file.empty() != grpc_tls_private_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--grpc-tls-cert-file, --grpc-tls-private-key-file: give both or neither");
  }
  if (grpc_port > 0 && grpc_tls_cert_file.empty() && grpc_address != "localhost" &&
      grpc_address != "::1" && grpc_address.rfind("127.", 0) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--grpc-address: ", grpc_address,
                     " is not a loopback address, so the gRPC server needs --grpc-tls-cert-file"));
  }
  if (absl::Status s = RestOptions().Validate(); !s.ok()) {
    return Prefixed("--tls-*/--cert-dir/--listen-address", s);
  }
  if (grpc_port < 0 || grpc_port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("--grpc-port: ", grpc_port, " is not a port"));
  }
  if (kubelet_max_response_bytes <= 0) {
    return absl::InvalidArgumentError("--kubelet-max-response-bytes: must be positive");
  }
  if (absl::StatusOr<scrapers::KubeletEndpoint> e =
          scrapers::ParseKubeletEndpoint(kubelet_endpoint);
      !e.ok()) {
    return Prefixed("--kubelet-endpoint", e.status());
  }
  if (absl::Status s = AddressOptions().Validate(); !s.ok()) {
    return Prefixed("--kubelet-preferred-address-types/--kubelet-port", s);
  }
  if (absl::Status s = SchedulingOptions().sample_times.Validate(); !s.ok()) return s;
  if (absl::Status s = SchedulingOptions().Validate(); !s.ok()) {
    return Prefixed("--metric-resolution/--max-concurrent-scrapes/--scrape-stagger", s);
  }
  if (kubelet_timeout >= metric_resolution) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kubelet-timeout: must be shorter than --metric-resolution (",
        FormatDuration(kubelet_timeout), " >= ", FormatDuration(metric_resolution), ")"));
  }
  if (node_agent_port < 0 || node_agent_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--node-agent-port: ", node_agent_port, " is not a port (0: off)"));
  }
  if (node_agent_port == 0 &&
      (!node_agent_ca.empty() || node_agent_insecure_tls || !node_agent_token_file.empty())) {
    return absl::InvalidArgumentError(
        "--node-agent-certificate-authority/--node-agent-insecure-tls/--node-agent-token-file: "
        "need --node-agent-port");
  }
  if (node_agent_port > 0) {
    if (absl::Status s = NodeAgentClientOptions().Validate(); !s.ok()) {
      return Prefixed("--node-agent-*", s);
    }
  }
  if (publish_interval < Duration::zero()) {
    return absl::InvalidArgumentError("--publish-interval: must not be negative");
  }
  if (kube_api_unready_after <= Duration::zero()) {
    return absl::InvalidArgumentError("--kube-api-unready-after: must be positive");
  }
  if (scrape_unready_rounds < 1) {
    return absl::InvalidArgumentError("--scrape-unready-rounds: must be at least 1");
  }
  if (metrics_max_age < Duration::zero()) {
    return absl::InvalidArgumentError("--metrics-max-age: must not be negative");
  }
  if (storage_dir.empty()) {
    return absl::InvalidArgumentError("--storage-dir: required (where RocksDB keeps the day)");
  }
  if (absl::StatusOr<Quantity> q = Quantity::Parse(storage_min_free); !q.ok()) {
    return Prefixed("--storage-min-free", q.status());
  } else if (q->Sign() < 0 || !q->Value().ok()) {
    return absl::InvalidArgumentError(
        "--storage-min-free: must be a byte count from 0 up (256Mi, 1Gi, 0)");
  }
  if (absl::StatusOr<Quantity> q = Quantity::Parse(storage_backlog); !q.ok()) {
    return Prefixed("--storage-backlog", q.status());
  } else if (q->Sign() < 0 || !q->Value().ok()) {
    return absl::InvalidArgumentError(
        "--storage-backlog: must be a byte count from 0 up (256Mi, 1Gi, 0)");
  }
  if (recommendation_cache_mib < 0) {
    return absl::InvalidArgumentError("--recommendation-cache-mib: must be at least 0");
  }
  if (storage_cache_mib < 1) {
    return absl::InvalidArgumentError("--storage-cache-mib: must be at least 1");
  }
  std::vector<Duration> parsed;
  for (const std::string& w : windows) {
    absl::StatusOr<Duration> d = ParseDuration(w);
    if (!d.ok()) return Prefixed("--windows", d.status());
    parsed.push_back(*d);
  }
  IngestOptions ingest;
  ingest.engine.windows = std::move(parsed);
  std::sort(ingest.engine.windows.begin(), ingest.engine.windows.end());
  if (absl::Status s = ingest.Validate(); !s.ok()) return Prefixed("--windows", s);
  if (retention < ingest.engine.windows.back()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--retention: must be at least the longest window (",
                     FormatDuration(ingest.engine.windows.back()), ")"));
  }
  if (absl::Status s = RecommendationOptions().Validate(); !s.ok()) return s;
  return Prefixed("--storage-dir/--retention", StorageOptions().Validate());
}

std::vector<Duration> AggregatorOptions::Windows() const {
  std::vector<Duration> result;
  for (const std::string& w : windows) result.push_back(*ParseDuration(w));
  std::sort(result.begin(), result.end());
  return result;
}

scrapers::KubeletAddressOptions AggregatorOptions::AddressOptions() const {
  scrapers::KubeletAddressOptions options;
  options.preferred_address_types = preferred_address_types;
  options.port = static_cast<int>(kubelet_port);
  options.use_node_status_port = kubelet_use_node_status_port;
  return options;
}

scrapers::KubeletClientOptions AggregatorOptions::ClientOptions() const {
  scrapers::KubeletClientOptions options;
  options.endpoint = *scrapers::ParseKubeletEndpoint(kubelet_endpoint);
  options.scheme = kubelet_scheme;
  options.ca_file = kubelet_ca;
  options.insecure_skip_tls_verify = kubelet_insecure_tls;
  options.token_file = kubelet_token_file;
  options.client_cert_file = kubelet_client_certificate;
  options.client_key_file = kubelet_client_key;
  options.timeout = kubelet_timeout;
  options.max_response_bytes = static_cast<size_t>(kubelet_max_response_bytes);
  return options;
}

scrapers::KubeletClientOptions AggregatorOptions::NodeAgentClientOptions() const {
  scrapers::KubeletClientOptions options;
  options.scheme = "https";
  options.ca_file = node_agent_ca;
  options.insecure_skip_tls_verify = node_agent_insecure_tls;
  options.token_file = node_agent_token_file.empty() ? kubelet_token_file : node_agent_token_file;
  options.timeout = kubelet_timeout;
  options.max_response_bytes = static_cast<size_t>(kubelet_max_response_bytes);
  return options;
}

scrapers::SchedulerOptions AggregatorOptions::SchedulingOptions() const {
  scrapers::SchedulerOptions options;
  options.resolution = metric_resolution;
  options.max_concurrent_scrapes = static_cast<int>(max_concurrent_scrapes);
  options.stagger = scrape_stagger;
  options.sample_times.max_age = max_sample_age;
  options.sample_times.max_ahead = max_sample_ahead;
  return options;
}

aggregator::IngestOptions AggregatorOptions::IngestionOptions() const {
  aggregator::IngestOptions options;
  options.engine.windows = Windows();
  return options;
}

storage::StoreOptions AggregatorOptions::StorageOptions() const {
  storage::StoreOptions options;
  options.dir = storage_dir;
  options.retention = retention;
  options.history_retention = recommendation_history;
  options.sync = storage_fsync;
  if (absl::StatusOr<Quantity> q = Quantity::Parse(storage_min_free); q.ok() && q->Value().ok()) {
    options.min_free_bytes = static_cast<uint64_t>(std::max<int64_t>(0, *q->Value()));
  }
  if (absl::StatusOr<Quantity> q = Quantity::Parse(storage_backlog); q.ok() && q->Value().ok()) {
    options.backlog_bytes = static_cast<uint64_t>(std::max<int64_t>(0, *q->Value()));
  }
  options.block_cache_bytes = static_cast<size_t>(storage_cache_mib) << 20;
  return options;
}

RecommenderOptions AggregatorOptions::RecommendationOptions() const {
  RecommenderOptions options;
  options.recommend = recommend;
  options.history = recommendation_history;
  options.cache_bytes = static_cast<size_t>(std::max<int64_t>(0, recommendation_cache_mib)) << 20;
  return options;
}

RestServerOptions AggregatorOptions::RestOptions() const {
  RestServerOptions options;
  options.secure = serving.SecureServer("secure");
  options.metrics_max_age =
      metrics_max_age > Duration::zero() ? metrics_max_age : metric_resolution * 3;
  // Every metrics request is a GET; nothing needs a large body.
  options.secure.limits.max_body_bytes = RestServerOptions::SecureDefaults().limits.max_body_bytes;
  options.insecure = serving.PlainServer();
  if (options.insecure) {
    options.insecure->limits.max_body_bytes = options.secure.limits.max_body_bytes;
  }
  options.always_allow_paths = serving.authorization_always_allow_paths;
  return options;
}

}  // namespace kubestat::aggregator
