#include "kubestat/aggregator/aggregator.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kubestat/aggregator/aggregator_health.h"
#include "kubestat/aggregator/cluster_listeners.h"
#include "kubestat/aggregator/frontends/grpc_service.h"
#include "kubestat/aggregator/frontends/rest_server.h"
#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/aggregator/query/aggregator_state.h"
#include "kubestat/aggregator/query/node_agent.h"
#include "kubestat/aggregator/query/snapshot_source.h"
#include "kubestat/aggregator/query/watch_hub.h"
#include "kubestat/aggregator/scrape_publisher.h"
#include "kubestat/aggregator/self_metrics.h"
#include "kubestat/core/absl_view.h"
#include "kubestat/core/file.h"
#include "kubestat/core/log.h"
#include "kubestat/core/time.h"
#include "kubestat/discovery/discovery.h"
#include "kubestat/kube/api_review_transport.h"
#include "kubestat/kube/delegated_access.h"
#include "kubestat/kube/kubeconfig.h"
#include "kubestat/kube/request_attributes.h"
#include "kubestat/kube/request_credentials.h"
#include "kubestat/scrapers/kubelet_client.h"
#include "kubestat/scrapers/node_address.h"
#include "kubestat/scrapers/scheduler.h"
#include "kubestat/storage/store.h"
#include "prometheus/registry.h"

namespace kubestat::aggregator {

namespace {

// The gRPC calls' access check: the bearer token in the call's metadata authenticated, and the
// call authorized as a list or watch of node or pod metrics (metrics.k8s.io).
GrpcAccessCheck GrpcAccess(kube::Authenticator* authenticator, kube::Authorizer* authorizer) {
  return [authenticator, authorizer](const grpc::ServerContext& context,
                                     const GrpcAccessRequest& call) -> grpc::Status {
    kube::HeaderList headers;
    const auto& metadata = context.client_metadata();
    for (auto it = metadata.find("authorization");
         it != metadata.end() && it->first == "authorization"; ++it) {
      headers.Add("Authorization", std::string(it->second.data(), it->second.size()));
    }
    const kube::AuthenticationResult identity =
        authenticator->Authenticate(kube::RequestCredentials{headers, nullptr});
    if (!identity.authenticated()) {
      KVLOG(1) << "gRPC " << context.peer() << ": unauthenticated ("
               << kube::AuthenticationOutcomeName(identity.outcome) << ": " << identity.reason
               << ")";
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "Unauthorized");
    }
    kube::RequestAttributes attributes;
    attributes.resource_request = true;
    attributes.verb = std::string(call.verb);
    attributes.api_group = "metrics.k8s.io";
    attributes.api_version = "v1beta1";
    attributes.resource = std::string(call.resource);
    attributes.namespace_name = std::string(call.namespace_name);
    attributes.path = absl::StrCat("/apis/metrics.k8s.io/v1beta1/",
                                   call.namespace_name.empty() ? "" : "namespaces/",
                                   AbslView(call.namespace_name),
                                   call.namespace_name.empty() ? "" : "/", AbslView(call.resource));
    const kube::AuthorizationResult decision = authorizer->Authorize(identity.user, attributes);
    if (!decision.allowed) {
      return grpc::Status(
          grpc::StatusCode::PERMISSION_DENIED,
          kube::ForbiddenError(identity.user, attributes, decision.reason).message());
    }
    return grpc::Status::OK;
  };
}

}  // namespace

// Declared in the order they are built; destroyed in reverse.
struct Aggregator::Parts {
  AggregatorOptions options;
  Clock* clock = nullptr;
  scrapers::KubeletAddressOptions address_options;
  std::unique_ptr<discovery::Discovery> discovery;
  std::unique_ptr<scrapers::KubeletClient> client;
  std::unique_ptr<storage::Store> store;
  std::unique_ptr<Ingestor> ingestor;
  std::shared_ptr<prometheus::Registry> registry;
  std::unique_ptr<StoreSelfMetrics> store_metrics;
  std::unique_ptr<RecommenderSelfMetrics> recommender_metrics;
  std::unique_ptr<DiscoverySelfMetrics> discovery_metrics;
  std::unique_ptr<DiscoveryLabels> labels;
  std::unique_ptr<DiscoveryWorkloads> workloads;
  std::unique_ptr<Recommender> recommender;
  // With --node-agent-port: the agents' answers, the client that reads them.
  std::unique_ptr<NodeResourcesStore> node_resources;
  std::unique_ptr<scrapers::KubeletClient> agent_client;
  std::unique_ptr<AggregatorState> live_state;
  std::unique_ptr<SnapshotSource> snapshot;
  std::unique_ptr<WatchHub> hub;
  std::unique_ptr<AggregatorHealth> health;
  std::unique_ptr<ScrapePublisher> publisher;
  std::unique_ptr<DeletionListener> deletions;
  std::unique_ptr<scrapers::KubeletScraper> scraper;
  std::unique_ptr<NodeAgentScraper> agent_scraper;  // with --node-agent-port
  std::mutex unresolved_mu;
  std::map<std::string, std::string> unresolved;  // node → why it has no address (logged once)
  std::unique_ptr<scrapers::ScrapeScheduler> scheduler;
  std::unique_ptr<kube::DelegatedAccess> access;
  std::unique_ptr<RestServer> rest;
  std::unique_ptr<AggregatorService> grpc_service;
  std::unique_ptr<grpc::Server> grpc_server;
  std::atomic<bool> stopping{false};
  std::thread starter;
  bool stopped = false;

  // The kubelets to scrape this round: every discovered node with a usable address.
  std::vector<scrapers::ScrapeTarget> Targets() {
    discovery_metrics->Update(discovery->stats());
    std::vector<scrapers::ScrapeTarget> result;
    for (const discovery::NodeInfo& node : discovery->Nodes()) {
      absl::StatusOr<scrapers::ScrapeTarget> target =
          scrapers::SelectKubeletTarget(node, address_options);
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
  }

  std::mutex failure_mu;
  absl::Status startup_failure;  // guarded by failure_mu

  // Logs each range a salvage lost, naming its nodes (the store logs what it kept).
  static void ReportSalvage(const storage::Store& store, const storage::SalvageReport& report) {
    absl::StatusOr<storage::Dictionary> dict = store.LoadDictionary();
    std::map<storage::NodeId, std::string> names;
    if (dict.ok()) {
      for (const storage::NodeEntry& node : dict->nodes) names.emplace(node.id, node.name);
    }
    for (const storage::LostRange& lost : report.lost) {
      std::string nodes;
      for (storage::NodeId id : lost.nodes) {
        auto name = names.find(id);
        absl::StrAppend(&nodes, nodes.empty() ? "" : ", ",
                        name == names.end() ? absl::StrCat("node ", id) : name->second);
      }
      KLOG(WARNING) << "store: lost in the salvage: " << lost.what
                    << (nodes.empty() ? "" : absl::StrCat(" (", nodes, ")"));
    }
  }

  // Records why the start failed and stops the process (main exits with it).
  void FailStartUp(absl::Status failure) {
    {
      std::lock_guard<std::mutex> lock(failure_mu);
      startup_failure = std::move(failure);
    }
    kill(getpid(), SIGTERM);
  }

  // Starts discovery and rebuilds the windows from the store meanwhile (at thousands of
  // nodes each takes seconds, and neither needs the other), then publishes the first
  // snapshot and starts the scrape rounds.
  void StartUp() {
    if (stopping.load()) return;
    discovery->Start();
    KLOG(INFO) << "rebuilding the windows from " << options.storage_dir;
    absl::Status rebuilt = ingestor->Rebuild();
    // Damage read while restoring a node (DataLoss) or some of its series.
    const uint64_t damaged_reads = ingestor->Stats().rebuild_damaged_reads;
    const bool damaged = absl::IsDataLoss(rebuilt) || (rebuilt.ok() && damaged_reads > 0);
    if (damaged && !options.storage_strict) {
      KLOG(ERROR) << "rebuild from " << options.storage_dir << " read damage: "
                  << (rebuilt.ok()
                          ? absl::StrCat(damaged_reads, " series' samples could not be read")
                          : std::string(rebuilt.message()))
                  << "; salvaging the store (--storage-strict stops instead)";
      absl::StatusOr<storage::SalvageReport> salvaged = store->Salvage();
      if (!salvaged.ok() && rebuilt.ok()) {
        // What could be restored is served; the damaged series stay out.
        KLOG(ERROR) << "the salvage of " << options.storage_dir << " failed: " << salvaged.status()
                    << "; serving what the rebuild restored";
      } else if (!salvaged.ok()) {
        rebuilt = absl::DataLossError(
            absl::StrCat(rebuilt.message(), "; the salvage failed: ", salvaged.status().message()));
      } else {
        ReportSalvage(*store, *salvaged);
        rebuilt = ingestor->Rebuild();
      }
    }
    if (absl::Status s = rebuilt; !s.ok()) {
      KLOG(ERROR) << "rebuild from " << options.storage_dir << " failed: " << s
                  << "; stopping (move the directory aside to start empty)";
      FailStartUp(absl::DataLossError(absl::StrCat(
          "the store in --storage-dir=", options.storage_dir, " cannot be read: ", s.message())));
      return;
    }
    const IngestStats stats = ingestor->Stats();
    KLOG(INFO) << "rebuilt " << stats.rebuilt_series << " series in " << stats.rebuild_seconds
               << "s (" << stats.rebuild_errors << " could not be restored)";
    if (stats.rebuild_errors > 0) {
      const std::vector<std::string> lost = ingestor->UnrestoredSeries();
      for (const std::string& series : lost) KLOG(WARNING) << "not restored: " << series;
      if (lost.size() < stats.rebuild_errors) {
        KLOG(WARNING) << "not restored: " << stats.rebuild_errors - lost.size()
                      << " more, not named";
      }
      if (options.storage_strict) {
        FailStartUp(absl::DataLossError(absl::StrCat(
            "the store in --storage-dir=", options.storage_dir,
            " is damaged: ", stats.rebuild_errors,
            " series could not be restored (named above); start without --storage-strict to "
            "serve what could be, or move the directory aside to start empty")));
        return;
      }
      KLOG(WARNING) << "serving what could be restored; " << stats.rebuild_errors
                    << " series could not be (--storage-strict stops instead)";
    }
    store_metrics->Update(stats, store->Stats(), store->DiskBytes(),
                          CountMemory(*ingestor, *store, *clock));
    // What discovery saw deleted during the rebuild leaves the windows now.
    deletions->Rebuilt();
    if (stopping.load()) return;
    if (!discovery->WaitForSync(std::chrono::seconds(30))) {
      KLOG(WARNING) << "discovery has not synced after 30s; scraping what is known so far";
    }
    KLOG(INFO) << "discovered " << discovery->node_count() << " nodes and "
               << discovery->pod_count() << " pods; scraping every "
               << FormatDuration(options.metric_resolution);
    // /readyz turns 200 once this snapshot is served; the first round starts after it.
    publisher->PublishAtStart(clock->Now());
    if (stopping.load()) return;
    scheduler->Start();
  }

  // Discovery: a static list, a kubeconfig, or the in-cluster service account (whose token
  // the kubelets then also take: `client_options`).
  absl::Status MakeDiscovery(scrapers::KubeletClientOptions& client_options) {
    if (!options.static_nodes.empty()) {
      absl::StatusOr<std::vector<discovery::NodeInfo>> nodes =
          discovery::ParseStaticNodes(options.static_nodes);
      if (!nodes.ok()) return nodes.status();
      // The port written in --static-nodes is the node's own kubelet port.
      address_options.use_node_status_port = true;
      discovery = std::make_unique<discovery::StaticDiscovery>(*std::move(nodes));
    } else {
      absl::StatusOr<kube::KubeApiConfig> api =
          options.kubeconfig.empty()
              ? kube::InClusterConfig()
              : kube::LoadKubeconfig(options.kubeconfig, options.kubeconfig_context);
      if (!api.ok()) return api.status();
      if (options.kubeconfig.empty() && client_options.token_file.empty()) {
        client_options.token_file = api->token_file;  // in cluster, kubelets accept the same token
      }
      absl::StatusOr<std::unique_ptr<discovery::KubeApiDiscovery>> kube =
          discovery::KubeApiDiscovery::Create(*std::move(api), discovery::KubeApiDiscoveryOptions(),
                                              *clock);
      if (!kube.ok()) return kube.status();
      discovery = *std::move(kube);
    }
    return absl::OkStatus();
  }

  // The kubelets' client and, with --node-agent-port, the node agents'.
  absl::Status MakeClients(const scrapers::KubeletClientOptions& client_options) {
    absl::StatusOr<std::unique_ptr<scrapers::KubeletClient>> made =
        scrapers::KubeletClient::Create(client_options);
    if (!made.ok()) return made.status();
    client = *std::move(made);
    if (options.node_agent_port > 0) {
      scrapers::KubeletClientOptions agent_options = options.NodeAgentClientOptions();
      // The aggregator's identity, as the kubelets get it (in cluster: the service account).
      if (agent_options.token_file.empty()) agent_options.token_file = client_options.token_file;
      absl::StatusOr<std::unique_ptr<scrapers::KubeletClient>> agents =
          scrapers::KubeletClient::Create(agent_options, *clock);
      if (!agents.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--node-agent-*: ", agents.status().message()));
      }
      agent_client = *std::move(agents);
      node_resources = std::make_unique<NodeResourcesStore>();
    }
    return absl::OkStatus();
  }

  // The store, salvaged or moved aside when damaged unless --storage-strict.
  absl::Status OpenStore() {
    storage::StoreOptions store_options = options.StorageOptions();
    // Damage read while running is salvaged as at start (with --storage-strict, it waits for
    // the next start, which stops on it).
    store_options.salvage_when_damaged = !options.storage_strict;
    store_options.on_salvage = &Parts::ReportSalvage;
    absl::StatusOr<std::unique_ptr<storage::Store>> opened = storage::Store::Open(store_options);
    if (absl::IsDataLoss(opened.status()) && !options.storage_strict) {
      // A database RocksDB cannot open (a damaged MANIFEST, a missing table file): kept for
      // inspection, and an empty one serves meanwhile.
      KLOG(ERROR) << "cannot open the store in --storage-dir=" << options.storage_dir << ": "
                  << opened.status() << "; moving it aside (--storage-strict stops instead)";
      absl::StatusOr<std::string> aside = storage::Store::MoveAside(options.StorageOptions());
      if (aside.ok()) {
        KLOG(WARNING) << "the damaged store is in " << *aside
                      << " (delete it once inspected); starting with an empty store";
        opened = storage::Store::Open(store_options);
      } else {
        KLOG(ERROR) << "cannot move the damaged store aside: " << aside.status();
      }
    }
    if (!opened.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot open the store in --storage-dir=", options.storage_dir, ": ",
          opened.status().ToString(),
          "\n(move the directory aside or fix its permissions; kubestat will not start on a "
          "database it cannot read)"));
    }
    store = *std::move(opened);
    return absl::OkStatus();
  }

  // Ingest, recommendations, the query side (live state, snapshot, watch hub, publisher),
  // health and the deletions discovery reports.
  absl::Status MakeIngestAndQuery() {
    const IngestOptions ingest_options = options.IngestionOptions();
    workloads = std::make_unique<DiscoveryWorkloads>(discovery.get());
    absl::StatusOr<std::unique_ptr<Ingestor>> made =
        Ingestor::Create(ingest_options, store.get(), clock, workloads.get());
    if (!made.ok()) return made.status();
    ingestor = *std::move(made);

    registry = std::make_shared<prometheus::Registry>();
    store_metrics = std::make_unique<StoreSelfMetrics>(*registry);
    labels = std::make_unique<DiscoveryLabels>(discovery.get());
    recommender = std::make_unique<Recommender>(options.RecommendationOptions(), *ingestor, *store,
                                                *workloads, *clock);
    recommender_metrics = std::make_unique<RecommenderSelfMetrics>(*registry);
    discovery_metrics = std::make_unique<DiscoverySelfMetrics>(*registry);
    discovery_metrics->Update(discovery->stats());
    recommender->SetCacheObserver(
        [metrics = recommender_metrics.get()](const RecommenderCacheStats& stats) {
          metrics->Update(stats);
        });
    // Queries read a snapshot of the live state, published after every round and, paced, while
    // a round scrapes.
    live_state =
        std::make_unique<AggregatorState>(ingestor.get(), labels.get(), node_resources.get());
    snapshot = std::make_unique<SnapshotSource>(live_state.get());
    hub = std::make_unique<WatchHub>(snapshot.get());
    publisher = std::make_unique<ScrapePublisher>(options.scrape_dump, *clock, *ingestor, *store,
                                                  *store_metrics, *snapshot, *hub,
                                                  PublishPacer(options.publish_interval, 0.1));
    AggregatorHealthOptions health_options;
    health_options.kube_api_unready_after = options.kube_api_unready_after;
    health_options.scrape_unready_rounds = static_cast<int>(options.scrape_unready_rounds);
    health = std::make_unique<AggregatorHealth>(health_options, *discovery, store.get());
    publisher->SetHealth(health.get());
    if (!publisher->dump_ok()) {
      return absl::InvalidArgumentError("--scrape-dump: cannot open " + options.scrape_dump);
    }
    deletions =
        std::make_unique<DeletionListener>(ingestor.get(), snapshot.get(), node_resources.get());
    discovery->AddListener(deletions.get());
    return absl::OkStatus();
  }

  // The scraper (with the node agents after each kubelet) and the scheduler of rounds.
  void MakeScraping() {
    scraper = std::make_unique<scrapers::KubeletScraper>(*client, *clock);
    scrapers::NodeScraper* node_scraper = scraper.get();
    if (agent_client != nullptr) {
      // Each node's agent is scraped in the node's task, after its kubelet.
      agent_scraper = std::make_unique<NodeAgentScraper>(*scraper, *agent_client,
                                                         static_cast<int>(options.node_agent_port),
                                                         *node_resources, *clock, *registry);
      node_scraper = agent_scraper.get();
      KLOG(INFO) << "scraping the node agents on port " << options.node_agent_port
                 << " beside the kubelets";
    }
    scheduler = std::make_unique<scrapers::ScrapeScheduler>(
        options.SchedulingOptions(), [this] { return Targets(); }, *node_scraper, *publisher,
        *clock, *registry);
  }

  // Who may read what (delegated reviews go to the API server each kubeconfig names), then
  // REST, /metrics and health on --secure-port (and --port).
  absl::Status StartRest() {
    absl::StatusOr<std::unique_ptr<kube::DelegatedAccess>> delegated =
        kube::DelegatedAccess::Create(options.serving, *clock, registry.get());
    if (!delegated.ok()) return delegated.status();
    access = *std::move(delegated);
    ScrapePublisher* sink = publisher.get();
    LivenessCheck liveness{[sink] { return sink->last_round_start(); }, options.metric_resolution};
    rest = std::make_unique<RestServer>(
        options.RestOptions(), *snapshot, *registry, *clock, std::move(liveness),
        AccessControl{access->authenticator(), access->authorizer()});
    health->AddChecks(rest->health());
    rest->SetRecommender(recommender.get());
    if (absl::Status s = rest->Start(); !s.ok()) {
      return absl::UnavailableError("--listen-address/--secure-port/--port: " +
                                    std::string(s.message()));
    }
    KLOG(INFO) << "serving REST, /metrics, /healthz, /livez and /readyz on " << rest->BaseUrl()
               << (rest->insecure_port() > 0 ? " and " + rest->InsecureBaseUrl() : "");
    RestServer* server = rest.get();
    publisher->SetPublishedHook([server] {
      // Health changes are logged and counted as they happen, not only when probed.
      server->health().Observe();
      const RestHandler::Prepared prepared = server->Prepare();
      KVLOG(1) << "prepared for the new snapshot: node items " << prepared.node_items
               << ", node list gzip " << prepared.nodes_gzip << ", pod list gzip "
               << prepared.pods_gzip;
    });
    return absl::OkStatus();
  }

  // gRPC on --grpc-port.
  absl::Status StartGrpc() {
    AggregatorServiceOptions grpc_options;
    grpc_options.windows = ingestor->engine_options().windows;
    // gRPC callers present a bearer token in the call's metadata; what they read is authorized
    // as a list or watch of node or pod metrics.
    grpc_options.access_check = GrpcAccess(access->authenticator(), access->authorizer());
    grpc_service = std::make_unique<AggregatorService>(snapshot.get(), hub.get(), registry.get(),
                                                       grpc_options, clock);
    if (options.grpc_port > 0) {
      grpc::ServerBuilder builder;
      int selected_port = 0;
      const std::string grpc_target = absl::StrCat(options.grpc_address, ":", options.grpc_port);
      std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
      if (!options.grpc_tls_cert_file.empty()) {
        absl::StatusOr<std::string> cert = ReadFile(options.grpc_tls_cert_file);
        absl::StatusOr<std::string> key = ReadFile(options.grpc_tls_private_key_file);
        if (!cert.ok() || !key.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("--grpc-tls-cert-file/--grpc-tls-private-key-file: ",
                           (cert.ok() ? key.status() : cert.status()).message()));
        }
        grpc::SslServerCredentialsOptions ssl;
        ssl.pem_key_cert_pairs.push_back({*key, *cert});
        credentials = grpc::SslServerCredentials(ssl);
      }
      builder.AddListeningPort(grpc_target, credentials, &selected_port);
      builder.RegisterService(grpc_service.get());
      grpc_server = builder.BuildAndStart();
      if (!grpc_server || selected_port == 0) {
        return absl::UnavailableError("--grpc-address/--grpc-port: cannot listen on " +
                                      grpc_target);
      }
      KLOG(INFO) << "serving gRPC kubestat.v1.Aggregator on " << grpc_target;
    }
    return absl::OkStatus();
  }
};

absl::StatusOr<std::unique_ptr<Aggregator>> Aggregator::Create(const AggregatorOptions& options,
                                                               Clock& clock) {
  auto p = std::make_unique<Parts>();
  p->options = options;
  p->clock = &clock;
  p->address_options = options.AddressOptions();
  scrapers::KubeletClientOptions client_options = options.ClientOptions();
  if (absl::Status s = p->MakeDiscovery(client_options); !s.ok()) return s;
  if (absl::Status s = p->MakeClients(client_options); !s.ok()) return s;
  if (absl::Status s = p->OpenStore(); !s.ok()) return s;
  if (absl::Status s = p->MakeIngestAndQuery(); !s.ok()) return s;
  p->MakeScraping();
  if (absl::Status s = p->StartRest(); !s.ok()) return s;
  if (absl::Status s = p->StartGrpc(); !s.ok()) return s;
  return std::unique_ptr<Aggregator>(new Aggregator(std::move(p)));
}

Aggregator::Aggregator(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

Aggregator::~Aggregator() { Stop(); }

void Aggregator::Start() {
  Parts* p = parts_.get();
  p->starter = std::thread([p] { p->StartUp(); });
}

void Aggregator::Stop() {
  Parts& p = *parts_;
  if (p.stopped) return;
  p.stopped = true;
  p.stopping.store(true);
  if (p.starter.joinable()) p.starter.join();
  p.scheduler->Stop();
  p.discovery->Stop();
  p.grpc_service->Shutdown();
  if (p.grpc_server) {
    p.grpc_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }
  // No hook call outlives the REST server.
  p.publisher->SetPublishedHook(nullptr);
  p.rest->Stop();
}

std::string Aggregator::RestUrl() const { return parts_->rest->BaseUrl(); }

absl::Status Aggregator::StartupFailure() const {
  std::lock_guard<std::mutex> lock(parts_->failure_mu);
  return parts_->startup_failure;
}

}  // namespace kubestat::aggregator
