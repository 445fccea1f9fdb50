// kubestat-aggregator: discovers nodes and pods, scrapes every kubelet each resolution,
// stores every sample in RocksDB and keeps the statistical windows, and serves them over
// REST (metrics/v1alpha1, metrics.k8s.io/v1beta1) and gRPC (kubestat.v1.Aggregator), with
// its own metrics on /metrics.
#include <grpcpp/grpcpp.h>
#include <malloc.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kubestat/aggregator/aggregator_state.h"
#include "kubestat/aggregator/grpc_service.h"
#include "kubestat/aggregator/ingest.h"
#include "kubestat/aggregator/rest_server.h"
#include "kubestat/aggregator/snapshot_source.h"
#include "kubestat/aggregator/watch_hub.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/flags.h"
#include "kubestat/core/json_writer.h"
#include "kubestat/core/log.h"
#include "kubestat/core/time.h"
#include "kubestat/scrapers/discovery.h"
#include "kubestat/scrapers/kubeconfig.h"
#include "kubestat/scrapers/kubelet_client.h"
#include "kubestat/scrapers/node_address.h"
#include "kubestat/scrapers/scheduler.h"
#include "kubestat/storage/store.h"

namespace kubestat {
namespace {

using scrapers::ContainerScrape;
using scrapers::CpuSample;
using scrapers::MemorySample;
using scrapers::NodeScrape;
using scrapers::ScrapeTarget;

struct AggregatorFlags {
  std::string kubeconfig;
  std::string kubeconfig_context;
  std::string static_nodes;
  std::vector<std::string> preferred_address_types = {"Hostname", "InternalDNS", "InternalIP",
                                                      "ExternalDNS", "ExternalIP"};
  int64_t kubelet_port = 10250;
  bool kubelet_use_node_status_port = false;
  std::string kubelet_endpoint = "summary";
  std::string kubelet_scheme = "https";
  std::string kubelet_ca;
  bool kubelet_insecure_tls = false;
  std::string kubelet_token_file;
  std::string kubelet_client_certificate;
  std::string kubelet_client_key;
  Duration kubelet_timeout = std::chrono::seconds(5);
  int64_t kubelet_max_response_bytes = 32 << 20;
  Duration metric_resolution = std::chrono::seconds(10);
  int64_t max_concurrent_scrapes = 32;
  double scrape_stagger = 0.5;
  std::string listen_address = "0.0.0.0";
  int64_t port = 8080;
  bool gzip_responses = true;
  int64_t gzip_min_bytes = int64_t{128} * 1024;
  std::string scrape_dump;
  int64_t verbosity = 0;
  std::string storage_dir;
  Duration retention = std::chrono::hours(26);
  bool storage_fsync = false;
  int64_t storage_cache_mib = 64;
  std::vector<std::string> windows = {"10s", "1m", "1h", "1d"};
  std::string grpc_address = "127.0.0.1";
  int64_t grpc_port = 8081;
};

void RegisterFlags(FlagSet& flags, AggregatorFlags& f) {
  flags.AddString("kubeconfig", &f.kubeconfig,
                  "kubeconfig file for the kube API; empty: the in-cluster service account");
  flags.AddString("kubeconfig-context", &f.kubeconfig_context,
                  "context of --kubeconfig to use; empty: its current-context");
  flags.AddString("static-nodes", &f.static_nodes,
                  "fixed node list name=host[:port],... instead of the kube API (no pods)");
  flags.AddStringList("kubelet-preferred-address-types", &f.preferred_address_types,
                      "node address types to scrape kubelets at, in order of preference");
  flags.AddInt64("kubelet-port", &f.kubelet_port, "kubelet port");
  flags.AddBool("kubelet-use-node-status-port", &f.kubelet_use_node_status_port,
                "use the port in the node's status.daemonEndpoints.kubeletEndpoint");
  flags.AddString("kubelet-endpoint", &f.kubelet_endpoint,
                  "what to scrape: summary (/stats/summary) or resource (/metrics/resource)");
  flags.AddString("kubelet-scheme", &f.kubelet_scheme, "https, or http for tests and demos");
  flags.AddString("kubelet-certificate-authority", &f.kubelet_ca,
                  "CA file for the kubelets' serving certificates; empty: the system roots");
  flags.AddBool("kubelet-insecure-tls", &f.kubelet_insecure_tls,
                "INSECURE: do not verify the kubelets' serving certificates");
  flags.AddString("kubelet-token-file", &f.kubelet_token_file,
                  "bearer token file for kubelets, re-read when it changes (in a cluster without "
                  "--kubeconfig: the "
                  "in-cluster service account token, when present)");
  flags.AddString("kubelet-client-certificate", &f.kubelet_client_certificate,
                  "client certificate file presented to kubelets");
  flags.AddString("kubelet-client-key", &f.kubelet_client_key,
                  "key of --kubelet-client-certificate");
  flags.AddDuration("kubelet-timeout", &f.kubelet_timeout,
                    "deadline for one kubelet request; must be below --metric-resolution");
  flags.AddInt64("kubelet-max-response-bytes", &f.kubelet_max_response_bytes,
                 "largest kubelet response accepted");
  flags.AddDuration("metric-resolution", &f.metric_resolution, "time between scrape rounds");
  flags.AddInt64("max-concurrent-scrapes", &f.max_concurrent_scrapes,
                 "kubelet scrapes running at once");
  flags.AddDouble("scrape-stagger", &f.scrape_stagger,
                  "fraction of the resolution over which the scrapes of a round are spread");
  flags.AddString("listen-address", &f.listen_address,
                  "address of the HTTP server (REST APIs, /metrics, /healthz, /livez, /readyz)");
  flags.AddInt64("port", &f.port, "port of the HTTP server");
  flags.AddBool("gzip-responses", &f.gzip_responses,
                "gzip-compress HTTP answers for clients that accept it (Accept-Encoding)");
  flags.AddInt64("gzip-min-bytes", &f.gzip_min_bytes,
                 "smallest HTTP answer body that --gzip-responses compresses");
  flags.AddString("grpc-address", &f.grpc_address,
                  "address of the gRPC server (kubestat.v1.Aggregator)");
  flags.AddInt64("grpc-port", &f.grpc_port, "port of the gRPC server; 0 turns it off");
  flags.AddString("storage-dir", &f.storage_dir,
                  "RocksDB directory holding a day of samples and rollups (required; a "
                  "PersistentVolume in a cluster)");
  flags.AddDuration("retention", &f.retention,
                    "how long samples and rollups are kept: a day plus a margin (at least the "
                    "longest window)");
  flags.AddBool("storage-fsync", &f.storage_fsync,
                "fsync every write batch (survives power loss); without it the write-ahead log "
                "still survives a killed process");
  flags.AddInt64("storage-cache-mib", &f.storage_cache_mib, "RocksDB block cache, MiB");
  flags.AddStringList("windows", &f.windows,
                      "statistical windows kept for every series (durations, e.g. 10s,1m,1h,1d)");
  flags.AddString("scrape-dump", &f.scrape_dump,
                  "append every decoded node scrape to this file as a JSON line");
  flags.AddInt64("v", &f.verbosity, "log verbosity");
}

void WriteCpu(JsonWriter& w, const std::optional<CpuSample>& cpu) {
  if (!cpu) return;
  w.Key("cpu").BeginObject().Member("time", FormatRfc3339Nano(cpu->time));
  if (cpu->usage_core_nanoseconds) w.Key("usageCoreNanoSeconds").Uint(*cpu->usage_core_nanoseconds);
  if (cpu->usage_nano_cores) w.Key("usageNanoCores").Uint(*cpu->usage_nano_cores);
  w.EndObject();
}

void WriteMemory(JsonWriter& w, const std::optional<MemorySample>& memory) {
  if (!memory) return;
  w.Key("memory").BeginObject().Member("time", FormatRfc3339Nano(memory->time));
  if (memory->working_set_bytes) w.Key("workingSetBytes").Uint(*memory->working_set_bytes);
  w.EndObject();
}

void WriteContainer(JsonWriter& w, const ContainerScrape& c) {
  w.BeginObject().Member("name", c.name);
  if (c.start_time) w.Member("startTime", FormatRfc3339Nano(*c.start_time));
  WriteCpu(w, c.cpu);
  WriteMemory(w, c.memory);
  w.EndObject();
}

// One JSON line describing a decoded scrape.
std::string DumpLine(const ScrapeTarget& target, const NodeScrape& s, Timestamp received) {
  JsonWriter w;
  w.BeginObject().Member("node", s.node_name).Member("target", target.HostPort());
  w.Member("received", FormatRfc3339Nano(received));
  w.Member("format", s.format == scrapers::ScrapeFormat::kSummary ? "summary" : "resource");
  if (s.start_time) w.Member("startTime", FormatRfc3339Nano(*s.start_time));
  WriteCpu(w, s.cpu);
  WriteMemory(w, s.memory);
  w.Key("systemContainers").BeginArray();
  for (const ContainerScrape& c : s.system_containers) WriteContainer(w, c);
  w.EndArray();
  w.Key("pods").BeginArray();
  for (const scrapers::PodScrape& pod : s.pods) {
    w.BeginObject().Member("namespace", pod.namespace_name).Member("name", pod.name);
    if (!pod.uid.empty()) w.Member("uid", pod.uid);
    if (pod.start_time) w.Member("startTime", FormatRfc3339Nano(*pod.start_time));
    WriteCpu(w, pod.cpu);
    WriteMemory(w, pod.memory);
    w.Key("containers").BeginArray();
    for (const ContainerScrape& c : pod.containers) WriteContainer(w, c);
    w.EndArray().EndObject();
  }
  w.EndArray();
  w.Key("decodeIssues").Uint(s.issues.Total());
  w.EndObject();
  return w.Take();
}

// Copies the ingest pipeline's and the store's counters into the registry (they keep
// plain counters; the registry wants increments).
class StoreMetrics {
 public:
  explicit StoreMetrics(prometheus::Registry& registry)
      : scrapes_(Counter(registry, "kubestat_ingested_scrapes_total",
                         "Node scrapes whose samples were stored and added to the windows")),
        rejected_(Counter(registry, "kubestat_ingest_rejected_scrapes_total",
                          "Node scrapes refused by the ingest pipeline (no node, no time, not "
                          "newer than the previous scrape of the node)")),
        store_errors_(Counter(registry, "kubestat_ingest_store_errors_total",
                              "Failed store reads or writes during ingest")),
        samples_(Counter(registry, "kubestat_ingested_samples_total", "Samples stored")),
        series_created_(Counter(registry, "kubestat_series_created_total", "Series created")),
        series_retired_(
            Counter(registry, "kubestat_series_retired_total", "Series of objects that left")),
        counter_resets_(Counter(registry, "kubestat_cpu_segment_restarts_total",
                                "Cumulative cpu counters that went backwards or restarted")),
        batches_(Counter(registry, "kubestat_store_batches_total", "RocksDB write batches")),
        batch_errors_(
            Counter(registry, "kubestat_store_batch_errors_total", "Failed RocksDB write batches")),
        written_bytes_(
            Counter(registry, "kubestat_store_written_bytes_total", "Bytes of write batches")),
        write_seconds_(Counter(registry, "kubestat_store_write_seconds_total",
                               "Time spent writing batches; divide by "
                               "kubestat_store_batches_total for the mean write latency")),
        read_errors_(Counter(registry, "kubestat_store_read_errors_total",
                             "Failed reads and undecodable records")),
        size_bytes_(Gauge(registry, "kubestat_store_size_bytes", "Bytes of the RocksDB directory")),
        max_write_seconds_(
            Gauge(registry, "kubestat_store_max_write_seconds", "Slowest write batch since start")),
        series_(Gauge(registry, "kubestat_series", "Series held in the windows")),
        window_bytes_(
            Gauge(registry, "kubestat_window_memory_bytes",
                  "Memory held by the windows and the ingest pipeline (recounted once a minute)")),
        rebuild_seconds_(Gauge(registry, "kubestat_rebuild_duration_seconds",
                               "Duration of the rebuild of the windows from the store at start")),
        rebuilt_series_(
            Gauge(registry, "kubestat_rebuilt_series", "Series restored from the store at start")),
        snapshot_seconds_(Gauge(registry, "kubestat_query_snapshot_refresh_seconds",
                                "Time the last publish of the query snapshot took (assembling "
                                "the nodes read after their scrapes; at start, reading all)")),
        snapshot_objects_(prometheus::BuildGauge()
                              .Name("kubestat_query_snapshot_objects")
                              .Help("Objects in the query snapshot, by kind")
                              .Register(registry)),
        snapshot_nodes_(snapshot_objects_.Add({{"kind", "node"}})),
        snapshot_pods_(snapshot_objects_.Add({{"kind", "pod"}})) {}

  void ObserveSnapshot(Duration refresh, const aggregator::SnapshotStats& stats) {
    snapshot_seconds_.Set(std::chrono::duration<double>(refresh).count());
    snapshot_nodes_.Set(static_cast<double>(stats.nodes));
    snapshot_pods_.Set(static_cast<double>(stats.pods));
  }

  void Update(const aggregator::IngestStats& ingest, const storage::StoreStats& store,
              uint64_t disk_bytes, std::optional<size_t> memory_bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    Advance(scrapes_, ingest.scrapes, last_.scrapes);
    Advance(rejected_, ingest.scrapes_rejected, last_.scrapes_rejected);
    Advance(store_errors_, ingest.store_errors, last_.store_errors);
    Advance(samples_, ingest.samples, last_.samples);
    Advance(series_created_, ingest.series_created, last_.series_created);
    Advance(series_retired_, ingest.series_retired, last_.series_retired);
    Advance(counter_resets_, ingest.counter_resets, last_.counter_resets);
    Advance(batches_, store.batches, last_store_.batches);
    Advance(batch_errors_, store.batch_errors, last_store_.batch_errors);
    Advance(written_bytes_, store.bytes_written, last_store_.bytes_written);
    Advance(read_errors_, store.read_errors, last_store_.read_errors);
    if (store.write_nanos > last_store_.write_nanos) {
      write_seconds_.Increment(static_cast<double>(store.write_nanos - last_store_.write_nanos) /
                               1e9);
      last_store_.write_nanos = store.write_nanos;
    }
    size_bytes_.Set(static_cast<double>(disk_bytes));
    max_write_seconds_.Set(static_cast<double>(store.max_write_nanos) / 1e9);
    series_.Set(static_cast<double>(ingest.series_created - ingest.series_retired));
    if (memory_bytes) window_bytes_.Set(static_cast<double>(*memory_bytes));
    rebuild_seconds_.Set(ingest.rebuild_seconds);
    rebuilt_series_.Set(static_cast<double>(ingest.rebuilt_series));
  }

 private:
  static prometheus::Counter& Counter(prometheus::Registry& r, const std::string& name,
                                      const std::string& help) {
    return prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
  }
  static prometheus::Gauge& Gauge(prometheus::Registry& r, const std::string& name,
                                  const std::string& help) {
    return prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
  }
  static void Advance(prometheus::Counter& counter, uint64_t now, uint64_t& last) {
    if (now > last) counter.Increment(static_cast<double>(now - last));
    last = std::max(last, now);
  }

  std::mutex mu_;
  aggregator::IngestStats last_;
  storage::StoreStats last_store_;
  prometheus::Counter& scrapes_;
  prometheus::Counter& rejected_;
  prometheus::Counter& store_errors_;
  prometheus::Counter& samples_;
  prometheus::Counter& series_created_;
  prometheus::Counter& series_retired_;
  prometheus::Counter& counter_resets_;
  prometheus::Counter& batches_;
  prometheus::Counter& batch_errors_;
  prometheus::Counter& written_bytes_;
  prometheus::Counter& write_seconds_;
  prometheus::Counter& read_errors_;
  prometheus::Gauge& size_bytes_;
  prometheus::Gauge& max_write_seconds_;
  prometheus::Gauge& series_;
  prometheus::Gauge& window_bytes_;
  prometheus::Gauge& rebuild_seconds_;
  prometheus::Gauge& rebuilt_series_;
  prometheus::Gauge& snapshot_seconds_;
  prometheus::Family<prometheus::Gauge>& snapshot_objects_;
  prometheus::Gauge& snapshot_nodes_;
  prometheus::Gauge& snapshot_pods_;
};

// Labels for the query APIs, from discovery.
class DiscoveryLabels final : public aggregator::LabelProvider {
 public:
  explicit DiscoveryLabels(const scrapers::Discovery* discovery) : discovery_(discovery) {}
  bool HasSynced() const override { return discovery_->synced(); }
  std::optional<aggregator::Labels> NodeLabels(std::string_view name) const override {
    std::optional<scrapers::NodeInfo> node = discovery_->Node(name);
    if (!node) return std::nullopt;
    return aggregator::Labels(node->labels.begin(), node->labels.end());
  }
  std::optional<aggregator::PodLabels> PodInfo(std::string_view namespace_name,
                                               std::string_view name) const override {
    std::optional<scrapers::PodInfo> pod = discovery_->Pod(namespace_name, name);
    if (!pod) return std::nullopt;
    return aggregator::PodLabels{aggregator::Labels(pod->labels.begin(), pod->labels.end()),
                                 pod->node_name};
  }

 private:
  const scrapers::Discovery* discovery_;
};

// A pod or node deleted in the kube API leaves the query results at once.
class DeletionListener final : public scrapers::ClusterListener {
 public:
  DeletionListener(aggregator::Ingestor* ingestor, aggregator::SnapshotSource* snapshot)
      : ingestor_(ingestor), snapshot_(snapshot) {}
  void OnNodeChange(scrapers::ChangeType type, const scrapers::NodeInfo& node) override {
    if (type != scrapers::ChangeType::kDeleted || !ingestor_->ready()) return;
    if (absl::StatusOr<bool> s = ingestor_->DeleteNode(node.name); !s.ok()) {
      KLOG(WARNING) << "removing deleted node " << node.name << ": " << s.status();
    }
    snapshot_->RemoveNode(node.name);
  }
  void OnPodChange(scrapers::ChangeType type, const scrapers::PodInfo& pod) override {
    if (type != scrapers::ChangeType::kDeleted || !ingestor_->ready()) return;
    if (absl::StatusOr<bool> s = ingestor_->DeletePod(pod.namespace_name, pod.name); !s.ok()) {
      KLOG(WARNING) << "removing deleted pod " << pod.Key() << ": " << s.status();
    }
    snapshot_->RemovePod(pod.namespace_name, pod.name);
  }

 private:
  aggregator::Ingestor* ingestor_;
  aggregator::SnapshotSource* snapshot_;
};

// Ingests every scrape, logs each round and failure, appends scrapes to the dump file, and
// keeps the query snapshot, the self-metrics and gRPC watchers up to date. That work runs on
// one thread of its own ("publisher"): after each node's scrape it re-reads that node's query
// views, so the cost of reading the windows is spread over the round, and when a round
// completes it refreshes the self-metrics, publishes the snapshot and tells the watch hub.
// One thread, rather than the scrape workers, so that queries compete with one busy thread
// at most, and so that the views and protos are allocated and freed in one malloc arena.
class AggregatorSink final : public scrapers::ScrapeSink {
 public:
  AggregatorSink(const std::string& dump_path, const Clock& clock, aggregator::Ingestor& ingestor,
                 storage::Store& store, StoreMetrics& metrics, aggregator::SnapshotSource& snapshot,
                 aggregator::WatchHub& hub)
      : clock_(clock),
        ingestor_(ingestor),
        store_(store),
        metrics_(metrics),
        snapshot_(snapshot),
        hub_(hub) {
    if (!dump_path.empty()) dump_.open(dump_path, std::ios::app);
    publisher_ = std::thread([this] { PublishLoop(); });
  }
  ~AggregatorSink() override {
    {
      std::lock_guard<std::mutex> lock(publish_mu_);
      stop_publishing_ = true;
    }
    publish_cv_.notify_all();
    publisher_.join();
  }
  AggregatorSink(const AggregatorSink&) = delete;
  AggregatorSink& operator=(const AggregatorSink&) = delete;
  Timestamp last_round_start() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_round_start_;
  }
  bool dump_ok() const { return !dump_.is_open() || dump_.good(); }

  void OnScrape(const ScrapeTarget& target, absl::StatusOr<NodeScrape> result) override {
    if (!result.ok()) {
      KVLOG(1) << "scrape " << target.node_name << " (" << target.HostPort()
               << ") failed: " << result.status();
      return;
    }
    if (!result->issues.empty()) {
      KVLOG(1) << "scrape " << target.node_name << ": " << result->issues.Total()
               << " values rejected: " << result->issues.Summary();
    }
    if (absl::Status s = ingestor_.Ingest(*result); !s.ok()) {
      KLOG(WARNING) << "ingest " << target.node_name << ": " << s;
    }
    // The publisher reads this node's views soon, so the round's end only assembles them (a
    // failed ingest may still have changed some series).
    RequestNodeRead(result->node_name);
    if (dump_.is_open()) {
      std::string line = DumpLine(target, *result, clock_.Now());
      std::lock_guard<std::mutex> lock(mu_);
      dump_ << line << '\n';
      dump_.flush();
    }
  }

  // /livez reads this: a round that is still running (a node timing out holds it until the
  // kubelet timeout) counts from its start, not from the start of the last one to finish.
  void OnRoundStart(uint64_t round, Timestamp start) override {
    (void)round;
    std::lock_guard<std::mutex> lock(mu_);
    last_round_start_ = std::max(last_round_start_, start);
  }

  void OnRoundComplete(const scrapers::RoundSummary& r) override {
    std::ostringstream failures;
    for (const auto& [reason, count] : r.failures_by_reason)
      failures << ' ' << reason << '=' << count;
    KLOG(INFO) << "round " << r.round << ": " << r.succeeded << "/" << r.targets << " nodes ok, "
               << r.pods << " pods, " << r.containers << " containers, " << r.failed << " failed"
               << (r.failed > 0 ? " (" + failures.str().substr(1) + ")" : "") << ", " << r.skipped
               << " skipped, took " << std::chrono::duration<double>(r.duration).count() << "s";
    RequestPublish(r.start + r.duration, /*reread_all=*/false);
  }

  // Asks the publisher thread to refresh the self-metrics, publish the query snapshot and
  // update the watch hub as of `tick`; with `reread_all`, the snapshot re-reads every node
  // first (at start) instead of assembling the nodes read after their scrapes. A request
  // made while the previous one is still being carried out is merged into the next: the
  // publisher reads the latest state anyway.
  void RequestPublish(Timestamp tick, bool reread_all) {
    {
      std::lock_guard<std::mutex> lock(publish_mu_);
      pending_tick_ = tick;
      pending_reread_all_ = pending_reread_all_ || reread_all;
    }
    publish_cv_.notify_all();
  }

  // Runs `hook` on the publisher thread after each publish (the REST front end prepares the
  // answers clients asked for lately there, off the request path). Waits for a running call
  // of the previous hook, so once SetPublishedHook(nullptr) returns, no hook runs any more.
  void SetPublishedHook(std::function<void()> hook) {
    std::lock_guard<std::mutex> lock(hook_mu_);
    published_hook_ = std::move(hook);
  }

  // Asks the publisher thread to re-read one node's query views (after its scrape).
  void RequestNodeRead(const std::string& node) {
    {
      std::lock_guard<std::mutex> lock(publish_mu_);
      if (!nodes_to_read_set_.insert(node).second) return;
      nodes_to_read_.push_back(node);
    }
    publish_cv_.notify_all();
  }

 private:
  const Clock& clock_;
  aggregator::Ingestor& ingestor_;
  storage::Store& store_;
  StoreMetrics& metrics_;
  aggregator::SnapshotSource& snapshot_;
  aggregator::WatchHub& hub_;
  void PublishLoop() {
    std::unique_lock<std::mutex> lock(publish_mu_);
    while (true) {
      publish_cv_.wait(lock, [this] {
        return stop_publishing_ || pending_tick_.has_value() || !nodes_to_read_.empty();
      });
      if (stop_publishing_) return;
      if (!nodes_to_read_.empty()) {
        // The nodes scraped so far first: a publish then includes every node of its round.
        std::vector<std::string> nodes;
        nodes.swap(nodes_to_read_);
        nodes_to_read_set_.clear();
        lock.unlock();
        for (const std::string& node : nodes) {
          snapshot_.RefreshNode(node);
          ReleaseRetired(release_per_read_);
        }
        lock.lock();
        continue;
      }
      const Timestamp tick = *pending_tick_;
      const bool reread_all = std::exchange(pending_reread_all_, false);
      pending_tick_.reset();
      lock.unlock();
      // The memory accounting is a pass over every series: once a minute is enough, after
      // the first round's.
      std::optional<size_t> memory_bytes;
      if (const Timestamp now = clock_.Now();
          publishes_ < 2 || now - last_memory_count_ >= kMemoryCountEvery) {
        memory_bytes = ingestor_.MemoryBytes();
        last_memory_count_ = now;
      }
      ++publishes_;
      metrics_.Update(ingestor_.Stats(), store_.Stats(), store_.DiskBytes(), memory_bytes);
      const Timestamp refresh_start = clock_.Now();
      if (reread_all) {
        snapshot_.Refresh();
      } else {
        snapshot_.Publish();
      }
      metrics_.ObserveSnapshot(clock_.Now() - refresh_start, snapshot_.Stats());
      // What the watch hub let go of is freed over the next round, between node reads,
      // rather than all at once here (a round's worth of views).
      ReleaseRetired(retired_.size() - next_retired_);
      retired_ = hub_.OnRound(tick);
      next_retired_ = 0;
      release_per_read_ = retired_.size() / std::max<size_t>(1, snapshot_.Stats().nodes) + 1;
      {
        // After the watch hub, so watchers hear of the round first.
        std::lock_guard<std::mutex> hook_lock(hook_mu_);
        if (published_hook_) published_hook_();
      }
      lock.lock();
    }
  }

  void ReleaseRetired(size_t count) {
    for (; count > 0 && next_retired_ < retired_.size(); --count) retired_[next_retired_++].reset();
  }

  mutable std::mutex mu_;
  Timestamp last_round_start_ = kZeroTime;
  std::ofstream dump_;
  std::mutex publish_mu_;
  std::condition_variable publish_cv_;
  std::optional<Timestamp> pending_tick_;
  bool pending_reread_all_ = false;
  std::mutex hook_mu_;  // held while published_hook_ runs or changes
  std::function<void()> published_hook_;
  // Publisher thread only.
  static constexpr Duration kMemoryCountEvery = std::chrono::minutes(1);
  uint64_t publishes_ = 0;
  Timestamp last_memory_count_ = kZeroTime;
  std::vector<std::shared_ptr<const void>> retired_;  // from the watch hub's last round
  size_t next_retired_ = 0;                           // retired_[0, next_retired_) are freed
  size_t release_per_read_ = 1;
  std::vector<std::string> nodes_to_read_;  // in scrape order
  std::unordered_set<std::string> nodes_to_read_set_;
  bool stop_publishing_ = false;
  std::thread publisher_;  // last: started once every member above exists
};

int Fail(const absl::Status& status) {
  std::cerr << "kubestat-aggregator: " << status.message() << "\n";
  return 2;
}

int Run(int argc, char** argv) {
  // glibc gives each thread that allocates its own arena (up to 8 per core); memory freed in
  // one stays there. With scrape workers, REST and gRPC threads all allocating, that held
  // several round-sized heaps at once; two arenas keep the process near what it uses.
  mallopt(M_ARENA_MAX, 2);
  AggregatorFlags f;
  FlagSet flags("kubestat-aggregator",
                "Scrapes every node's kubelet each resolution and serves kubestat's metrics.");
  RegisterFlags(flags, f);
  absl::StatusOr<ParsedFlags> parsed = flags.Parse(argc, argv);
  if (!parsed.ok()) return Fail(parsed.status());
  if (parsed->help_requested) {
    std::cout << flags.Usage();
    return 0;
  }
  if (!parsed->positional.empty()) {
    return Fail(
        absl::InvalidArgumentError("unexpected argument \"" + parsed->positional[0] + "\""));
  }
  LogOptions log_options;
  log_options.verbosity = static_cast<int>(f.verbosity);
  if (absl::Status s = log_options.Validate(); !s.ok()) return Fail(s);
  ConfigureLogging(log_options);

  scrapers::KubeletAddressOptions address_options;
  address_options.preferred_address_types = f.preferred_address_types;
  address_options.port = static_cast<int>(f.kubelet_port);
  address_options.use_node_status_port = f.kubelet_use_node_status_port;
  if (absl::Status s = address_options.Validate(); !s.ok()) return Fail(s);

  scrapers::KubeletClientOptions client_options;
  absl::StatusOr<scrapers::KubeletEndpoint> endpoint =
      scrapers::ParseKubeletEndpoint(f.kubelet_endpoint);
  if (!endpoint.ok())
    return Fail(absl::InvalidArgumentError("--kubelet-endpoint: " +
                                           std::string(endpoint.status().message())));
  client_options.endpoint = *endpoint;
  client_options.scheme = f.kubelet_scheme;
  client_options.ca_file = f.kubelet_ca;
  client_options.insecure_skip_tls_verify = f.kubelet_insecure_tls;
  client_options.token_file = f.kubelet_token_file;
  client_options.client_cert_file = f.kubelet_client_certificate;
  client_options.client_key_file = f.kubelet_client_key;
  client_options.timeout = f.kubelet_timeout;
  if (f.kubelet_max_response_bytes <= 0) {
    return Fail(absl::InvalidArgumentError("--kubelet-max-response-bytes: must be positive"));
  }
  client_options.max_response_bytes = static_cast<size_t>(f.kubelet_max_response_bytes);

  scrapers::SchedulerOptions scheduler_options;
  scheduler_options.resolution = f.metric_resolution;
  scheduler_options.max_concurrent_scrapes = static_cast<int>(f.max_concurrent_scrapes);
  scheduler_options.stagger = f.scrape_stagger;
  if (absl::Status s = scheduler_options.Validate(); !s.ok()) return Fail(s);
  if (f.kubelet_timeout >= f.metric_resolution) {
    return Fail(absl::InvalidArgumentError(
        "--kubelet-timeout: must be shorter than --metric-resolution (" +
        FormatDuration(f.kubelet_timeout) + " >= " + FormatDuration(f.metric_resolution) + ")"));
  }
  if (f.port < 1 || f.port > 65535) {
    return Fail(absl::InvalidArgumentError("--port: " + std::to_string(f.port) + " is not a port"));
  }
  if (f.gzip_min_bytes < 0) {
    return Fail(absl::InvalidArgumentError("--gzip-min-bytes: must not be negative"));
  }

  // Discovery: a static list, a kubeconfig, or the in-cluster service account.
  const Clock& clock = RealClock::Get();
  std::unique_ptr<scrapers::Discovery> discovery;
  if (!f.static_nodes.empty()) {
    absl::StatusOr<std::vector<scrapers::NodeInfo>> nodes =
        scrapers::ParseStaticNodes(f.static_nodes);
    if (!nodes.ok()) return Fail(nodes.status());
    // The port written in --static-nodes is the node's own kubelet port.
    address_options.use_node_status_port = true;
    discovery = std::make_unique<scrapers::StaticDiscovery>(*std::move(nodes));
  } else {
    absl::StatusOr<scrapers::KubeApiConfig> api =
        f.kubeconfig.empty() ? scrapers::InClusterConfig()
                             : scrapers::LoadKubeconfig(f.kubeconfig, f.kubeconfig_context);
    if (!api.ok()) return Fail(api.status());
    if (f.kubeconfig.empty() && client_options.token_file.empty()) {
      client_options.token_file = api->token_file;  // in cluster, kubelets accept the same token
    }
    absl::StatusOr<std::unique_ptr<scrapers::KubeApiDiscovery>> kube =
        scrapers::KubeApiDiscovery::Create(*std::move(api), scrapers::KubeApiDiscoveryOptions(),
                                           clock);
    if (!kube.ok()) return Fail(kube.status());
    discovery = *std::move(kube);
  }
  absl::StatusOr<std::unique_ptr<scrapers::KubeletClient>> client =
      scrapers::KubeletClient::Create(client_options);
  if (!client.ok()) return Fail(client.status());
  // Storage and windows.
  if (f.storage_dir.empty()) {
    return Fail(
        absl::InvalidArgumentError("--storage-dir: required (where RocksDB keeps the day)"));
  }
  aggregator::IngestOptions ingest_options;
  ingest_options.engine.windows.clear();
  for (const std::string& w : f.windows) {
    absl::StatusOr<Duration> d = ParseDuration(w);
    if (!d.ok())
      return Fail(absl::InvalidArgumentError("--windows: " + std::string(d.status().message())));
    ingest_options.engine.windows.push_back(*d);
  }
  std::sort(ingest_options.engine.windows.begin(), ingest_options.engine.windows.end());
  if (absl::Status s = ingest_options.Validate(); !s.ok()) {
    return Fail(absl::InvalidArgumentError("--windows: " + std::string(s.message())));
  }
  if (f.retention < ingest_options.engine.windows.back()) {
    return Fail(absl::InvalidArgumentError("--retention: must be at least the longest window (" +
                                           FormatDuration(ingest_options.engine.windows.back()) +
                                           ")"));
  }
  if (f.storage_cache_mib < 1) {
    return Fail(absl::InvalidArgumentError("--storage-cache-mib: must be at least 1"));
  }
  if (f.grpc_port < 0 || f.grpc_port > 65535) {
    return Fail(absl::InvalidArgumentError("--grpc-port: " + std::to_string(f.grpc_port) +
                                           " is not a port"));
  }
  storage::StoreOptions store_options;
  store_options.dir = f.storage_dir;
  store_options.retention = f.retention;
  store_options.sync = f.storage_fsync;
  store_options.block_cache_bytes = static_cast<size_t>(f.storage_cache_mib) << 20;
  if (absl::Status s = store_options.Validate(); !s.ok()) return Fail(s);
  absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(store_options);
  if (!store.ok()) {
    std::cerr << "kubestat-aggregator: cannot open the store in --storage-dir=" << f.storage_dir
              << ": " << store.status()
              << "\n(move the directory aside or fix its permissions; kubestat will not start on a "
                 "database it cannot read)\n";
    return 1;
  }
  Clock& mutable_clock = RealClock::Get();
  absl::StatusOr<std::unique_ptr<aggregator::Ingestor>> ingestor =
      aggregator::Ingestor::Create(ingest_options, store->get(), &mutable_clock);
  if (!ingestor.ok()) return Fail(ingestor.status());

  auto registry = std::make_shared<prometheus::Registry>();
  StoreMetrics store_metrics(*registry);
  DiscoveryLabels labels(discovery.get());
  // Queries read a snapshot of the live state taken after every round.
  aggregator::AggregatorState live_state(ingestor->get(), &labels);
  aggregator::SnapshotSource state(&live_state);
  aggregator::WatchHub hub(&state);
  AggregatorSink sink(f.scrape_dump, clock, **ingestor, **store, store_metrics, state, hub);
  if (!sink.dump_ok())
    return Fail(absl::InvalidArgumentError("--scrape-dump: cannot open " + f.scrape_dump));
  DeletionListener deletions(ingestor->get(), &state);
  discovery->AddListener(&deletions);

  // SIGINT/SIGTERM are taken by sigwait below; every thread started from here inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  scrapers::KubeletScraper scraper(**client, clock);
  std::mutex unresolved_mu;
  std::map<std::string, std::string> unresolved;  // node → why it has no address (logged once)
  scrapers::TargetSource targets = [&]() {
    std::vector<ScrapeTarget> result;
    for (const scrapers::NodeInfo& node : discovery->Nodes()) {
      absl::StatusOr<ScrapeTarget> target = scrapers::SelectKubeletTarget(node, address_options);
      if (target.ok()) {
        result.push_back(*std::move(target));
        continue;
      }
      std::lock_guard<std::mutex> lock(unresolved_mu);
      std::string why(target.status().message());
      if (unresolved[node.name] != why) KLOG(WARNING) << "not scraping: " << why;
      unresolved[node.name] = why;
    }
    return result;
  };
  scrapers::ScrapeScheduler scheduler(scheduler_options, targets, scraper, sink, clock, *registry);

  // REST, /metrics and health on --port.
  aggregator::RestServerOptions rest_options;
  rest_options.address = f.listen_address;
  rest_options.port = static_cast<int>(f.port);
  rest_options.compression.enabled = f.gzip_responses;
  rest_options.compression.min_bytes = static_cast<size_t>(f.gzip_min_bytes);
  aggregator::LivenessCheck liveness{[&sink] { return sink.last_round_start(); },
                                     f.metric_resolution};
  aggregator::RestServer rest(rest_options, state, *registry, clock, liveness);
  if (absl::Status s = rest.Start(); !s.ok()) {
    return Fail(absl::UnavailableError("--listen-address/--port: " + std::string(s.message())));
  }
  KLOG(INFO) << "serving REST, /metrics, /healthz, /livez and /readyz on " << rest.BaseUrl();
  sink.SetPublishedHook([&rest] {
    const aggregator::RestHandler::Prepared prepared = rest.Prepare();
    KVLOG(1) << "prepared for the new snapshot: node items " << prepared.node_items
             << ", node list gzip " << prepared.nodes_gzip << ", pod list gzip "
             << prepared.pods_gzip;
  });
  // Declared after `rest`, so destroyed before it: no hook call outlives the server.
  struct PublishedHookReset {
    AggregatorSink& sink;
    ~PublishedHookReset() { sink.SetPublishedHook(nullptr); }
  } published_hook_reset{sink};

  // gRPC on --grpc-port.
  aggregator::AggregatorServiceOptions grpc_options;
  grpc_options.windows = ingest_options.engine.windows;
  aggregator::AggregatorService grpc_service(&state, &hub, registry.get(), grpc_options, &clock);
  std::unique_ptr<grpc::Server> grpc_server;
  if (f.grpc_port > 0) {
    grpc::ServerBuilder builder;
    int selected_port = 0;
    const std::string grpc_target = f.grpc_address + ":" + std::to_string(f.grpc_port);
    builder.AddListeningPort(grpc_target, grpc::InsecureServerCredentials(), &selected_port);
    builder.RegisterService(&grpc_service);
    grpc_server = builder.BuildAndStart();
    if (!grpc_server || selected_port == 0) {
      rest.Stop();
      return Fail(
          absl::UnavailableError("--grpc-address/--grpc-port: cannot listen on " + grpc_target));
    }
    KLOG(INFO) << "serving gRPC kubestat.v1.Aggregator on " << grpc_target;
  }

  // Rebuild the windows from the store (readyz says not ready until done), then scrape.
  std::atomic<bool> stopping{false};
  std::thread starter([&] {
    KLOG(INFO) << "rebuilding the windows from " << f.storage_dir;
    if (absl::Status s = (*ingestor)->Rebuild(); !s.ok()) {
      KLOG(ERROR) << "rebuild from " << f.storage_dir << " failed: " << s
                  << "; stopping (move the directory aside to start empty)";
      kill(getpid(), SIGTERM);
      return;
    }
    const aggregator::IngestStats stats = (*ingestor)->Stats();
    KLOG(INFO) << "rebuilt " << stats.rebuilt_series << " series in " << stats.rebuild_seconds
               << "s (" << stats.rebuild_errors << " could not be restored)";
    store_metrics.Update(stats, (*store)->Stats(), (*store)->DiskBytes(),
                         (*ingestor)->MemoryBytes());
    if (stopping.load()) return;
    discovery->Start();
    if (!discovery->WaitForSync(std::chrono::seconds(30))) {
      KLOG(WARNING) << "discovery has not synced after 30s; scraping what is known so far";
    }
    KLOG(INFO) << "discovered " << discovery->node_count() << " nodes and "
               << discovery->pod_count() << " pods; scraping every "
               << FormatDuration(f.metric_resolution);
    sink.RequestPublish(clock.Now(),
                        /*reread_all=*/true);  // /readyz turns 200 once this snapshot is taken
    if (stopping.load()) return;
    scheduler.Start();
  });

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  KLOG(INFO) << "received signal " << signal_number << ", shutting down";
  stopping.store(true);
  starter.join();
  scheduler.Stop();
  discovery->Stop();
  grpc_service.Shutdown();
  if (grpc_server)
    grpc_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  rest.Stop();
  KLOG(INFO) << "stopped";
  return 0;
}

}  // namespace
}  // namespace kubestat

int main(int argc, char** argv) { return kubestat::Run(argc, argv); }
