// kubestat-apiserver: the secondary metrics API server. Holds the newest NodeMetrics and
// PodMetrics that writers (kubestat-bridge) push, and serves them in metrics/v1alpha1 and
// metrics.k8s.io with watches (api_server.h), behind HTTPS, authentication and
// authorization. main parses the options and serves until SIGINT or SIGTERM.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "kubestat/apiserver/api_server.h"
#include "kubestat/apiserver/etcd_store.h"
#include "kubestat/apiserver/memory_store.h"
#include "kubestat/apiserver/options.h"
#include "kubestat/apiserver/watch_cache.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/flags.h"
#include "kubestat/core/log.h"
#include "kubestat/core/program.h"
#include "kubestat/kube/delegated_access.h"
#include "prometheus/registry.h"

namespace {

constexpr std::string_view kProgram = "kubestat-apiserver";

int Fail(const absl::Status& status, int code = 2) {
  return kubestat::FailProgram(kProgram, status, code);
}

int Run(int argc, char** argv) {
  kubestat::apiserver::Options options;
  kubestat::FlagSet flags("kubestat-apiserver",
                          "Serves the newest node and pod metrics that writers push, with "
                          "watches, as a Kubernetes metrics API server.");
  options.RegisterFlags(flags);
  if (std::optional<int> exit =
          kubestat::StartProgram(kProgram, flags, argc, argv, options.verbosity)) {
    return *exit;
  }
  if (absl::Status s = options.Validate(); !s.ok()) return Fail(s);
  kubestat::TerminationSignals signals;  // before any thread starts

  const kubestat::Clock& clock = kubestat::RealClock::Get();
  prometheus::Registry registry;
  absl::StatusOr<std::unique_ptr<kubestat::kube::DelegatedAccess>> access =
      kubestat::kube::DelegatedAccess::Create(options.serving, clock, &registry);
  if (!access.ok()) return Fail(access.status());
  // The store the API serves from: in memory, or etcd (behind the watch cache unless
  // --watch-cache=false). Declared in the order built; the cache goes before etcd.
  std::unique_ptr<kubestat::apiserver::ObjectStore> backing;
  std::unique_ptr<kubestat::apiserver::ObjectStore> cache;
  std::string where = "in memory";
  if (options.etcd_servers.empty()) {
    backing = std::make_unique<kubestat::apiserver::MemoryStore>(options.StoreOptions(), clock);
  } else {
    absl::StatusOr<std::unique_ptr<kubestat::apiserver::EtcdStore>> etcd =
        kubestat::apiserver::EtcdStore::Create(options.EtcdOptions(), clock);
    if (!etcd.ok()) return Fail(etcd.status());
    backing = *std::move(etcd);
    where = "in etcd under " + options.etcd_prefix;
    if (options.watch_cache) {
      cache = std::make_unique<kubestat::apiserver::WatchCache>(*backing, options.CacheOptions(),
                                                                clock, &registry);
      where += ", served through the watch cache";
    }
  }
  kubestat::apiserver::ObjectStore& store = cache != nullptr ? *cache : *backing;
  kubestat::apiserver::ApiServer server(options.ApiOptions(), store, registry, clock,
                                        (*access)->Gate("apiserver"));
  if (absl::Status s = server.Start(); !s.ok()) {
    return Fail(
        absl::Status(s.code(), "--listen-address/--secure-port: " + std::string(s.message())), 1);
  }
  KLOG(INFO) << "kubestat-apiserver serving on " << server.BaseUrl() << " (objects " << where
             << ")";
  signals.Wait();
  server.Stop();
  KLOG(INFO) << "stopped";
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
