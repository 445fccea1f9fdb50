// kubestat-apiserver: the secondary metrics API server. Holds the newest NodeMetrics and
// PodMetrics that writers (kubestat-bridge) push, and serves them in metrics/v1alpha1 and
// metrics.k8s.io with watches (api_server.h), behind HTTPS, authentication and
// authorization. main wires the store and the server and serves until SIGINT or SIGTERM.
#include <memory>
#include <string>
#include <utility>

#include "kubestat/apiserver/api_server.h"
#include "kubestat/apiserver/etcd_store.h"
#include "kubestat/apiserver/memory_store.h"
#include "kubestat/apiserver/options.h"
#include "kubestat/apiserver/watch_cache.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/log.h"
#include "kubestat/core/program.h"
#include "kubestat/kube/delegated_access.h"
#include "prometheus/registry.h"

namespace {

using kubestat::ServerStart;
using kubestat::apiserver::Options;

// The parts of a running server, in the order built (and destroyed in reverse: the server,
// then the cache, then the store it reads).
struct Serving {
  prometheus::Registry registry;
  std::unique_ptr<kubestat::kube::DelegatedAccess> access;
  std::unique_ptr<kubestat::apiserver::ObjectStore> backing;
  std::unique_ptr<kubestat::apiserver::ObjectStore> cache;
  std::unique_ptr<kubestat::apiserver::ApiServer> server;
};

ServerStart Start(const Options& options) {
  const kubestat::Clock& clock = kubestat::RealClock::Get();
  auto serving = std::make_shared<Serving>();
  absl::StatusOr<std::unique_ptr<kubestat::kube::DelegatedAccess>> access =
      kubestat::kube::DelegatedAccess::Create(options.serving, clock, &serving->registry);
  if (!access.ok()) return ServerStart::Failed(access.status(), 2);
  serving->access = *std::move(access);
  // The store the API serves from: in memory, or etcd (behind the watch cache unless
  // --watch-cache=false).
  std::string where = "in memory";
  if (options.etcd_servers.empty()) {
    serving->backing =
        std::make_unique<kubestat::apiserver::MemoryStore>(options.StoreOptions(), clock);
  } else {
    absl::StatusOr<std::unique_ptr<kubestat::apiserver::EtcdStore>> etcd =
        kubestat::apiserver::EtcdStore::Create(options.EtcdOptions(), clock, &serving->registry);
    if (!etcd.ok()) return ServerStart::Failed(etcd.status(), 2);
    serving->backing = *std::move(etcd);
    where = "in etcd under " + options.etcd_prefix;
    if (options.watch_cache) {
      serving->cache = std::make_unique<kubestat::apiserver::WatchCache>(
          *serving->backing, options.CacheOptions(), clock, &serving->registry);
      where += ", served through the watch cache";
    }
  }
  kubestat::apiserver::ObjectStore& store =
      serving->cache != nullptr ? *serving->cache : *serving->backing;
  serving->server = std::make_unique<kubestat::apiserver::ApiServer>(
      options.ApiOptions(), store, serving->registry, clock, serving->access->Gate("apiserver"));
  if (absl::Status s = serving->server->Start(); !s.ok()) {
    return ServerStart::Failed(
        absl::Status(s.code(), "--listen-address/--secure-port: " + std::string(s.message())), 1);
  }
  KLOG(INFO) << "kubestat-apiserver serving on " << serving->server->BaseUrl() << " (objects "
             << where << ")";
  return ServerStart::Running([serving] {
    serving->server->Stop();
    return absl::OkStatus();
  });
}

}  // namespace

int main(int argc, char** argv) {
  return kubestat::RunServer<Options>(
      "kubestat-apiserver",
      "Serves the newest node and pod metrics that writers push, with watches, as a Kubernetes "
      "metrics API server.",
      argc, argv, Start);
}
