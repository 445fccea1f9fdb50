// kubestat-aggregator: discovers nodes, scrapes every kubelet each resolution and exposes
// its own metrics. Storage, windows and the query APIs are added on top of this loop.
#define _TURN_OFF_PLATFORM_STRING
#include <cpprest/http_listener.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

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
  std::string scrape_dump;
  int64_t verbosity = 0;
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
                  "address of the HTTP server (/metrics, /healthz)");
  flags.AddInt64("port", &f.port, "port of the HTTP server");
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

// Logs each round and failure, and appends scrapes to the dump file.
class AggregatorSink final : public scrapers::ScrapeSink {
 public:
  AggregatorSink(const std::string& dump_path, const Clock& clock) : clock_(clock) {
    if (!dump_path.empty()) dump_.open(dump_path, std::ios::app);
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
    if (dump_.is_open()) {
      std::string line = DumpLine(target, *result, clock_.Now());
      std::lock_guard<std::mutex> lock(mu_);
      dump_ << line << '\n';
      dump_.flush();
    }
  }

  void OnRoundComplete(const scrapers::RoundSummary& r) override {
    std::ostringstream failures;
    for (const auto& [reason, count] : r.failures_by_reason)
      failures << ' ' << reason << '=' << count;
    KLOG(INFO) << "round " << r.round << ": " << r.succeeded << "/" << r.targets << " nodes ok, "
               << r.pods << " pods, " << r.containers << " containers, " << r.failed << " failed"
               << (r.failed > 0 ? " (" + failures.str().substr(1) + ")" : "") << ", " << r.skipped
               << " skipped, took " << std::chrono::duration<double>(r.duration).count() << "s";
  }

 private:
  const Clock& clock_;
  std::mutex mu_;
  std::ofstream dump_;
};

int Fail(const absl::Status& status) {
  std::cerr << "kubestat-aggregator: " << status.message() << "\n";
  return 2;
}

int Run(int argc, char** argv) {
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
  AggregatorSink sink(f.scrape_dump, clock);
  if (!sink.dump_ok())
    return Fail(absl::InvalidArgumentError("--scrape-dump: cannot open " + f.scrape_dump));

  // SIGINT/SIGTERM are taken by sigwait below; every thread started from here inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto registry = std::make_shared<prometheus::Registry>();
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

  const std::string url = "http://" + f.listen_address + ":" + std::to_string(f.port);
  web::http::experimental::listener::http_listener listener(url);
  listener.support(web::http::methods::GET, [&](web::http::http_request request) {
    const std::string path = request.relative_uri().path();
    if (path == "/metrics") {
      web::http::http_response response(web::http::status_codes::OK);
      response.set_body(prometheus::TextSerializer().Serialize(registry->Collect()),
                        "text/plain; version=0.0.4; charset=utf-8");
      request.reply(response);
    } else if (path == "/healthz" || path == "/livez") {
      request.reply(web::http::status_codes::OK, std::string("ok"), "text/plain");
    } else if (path == "/readyz") {
      bool ready = discovery->synced();
      request.reply(
          ready ? web::http::status_codes::OK : web::http::status_codes::ServiceUnavailable,
          std::string(ready ? "ok" : "discovery not synced"), "text/plain");
    } else {
      request.reply(web::http::status_codes::NotFound, std::string("not found"), "text/plain");
    }
  });
  try {
    listener.open().wait();
  } catch (const std::exception& e) {
    return Fail(absl::UnavailableError("--listen-address/--port: cannot listen on " + url + ": " +
                                       e.what()));
  }
  KLOG(INFO) << "serving /metrics, /healthz and /readyz on " << url;

  discovery->Start();
  if (!discovery->WaitForSync(std::chrono::seconds(30))) {
    KLOG(WARNING) << "discovery has not synced after 30s; scraping what is known so far";
  }
  KLOG(INFO) << "discovered " << discovery->node_count() << " nodes and " << discovery->pod_count()
             << " pods; scraping every " << FormatDuration(f.metric_resolution);
  scheduler.Start();

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  KLOG(INFO) << "received signal " << signal_number << ", shutting down";
  scheduler.Stop();
  discovery->Stop();
  try {
    listener.close().wait();
  } catch (const std::exception& e) {
    KLOG(WARNING) << "closing the HTTP server: " << e.what();
  }
  KLOG(INFO) << "stopped";
  return 0;
}

}  // namespace
}  // namespace kubestat

int main(int argc, char** argv) { return kubestat::Run(argc, argv); }
