// The options of kubestat-apiserver, each bound to its flag (RegisterFlags), with the
// defaults a production cluster wants, and one Validate() naming the bad flag.
#ifndef KUBESTAT_APISERVER_OPTIONS_H_
#define KUBESTAT_APISERVER_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/apiserver/api_server.h"
#include "kubestat/apiserver/etcd_store.h"
#include "kubestat/apiserver/memory_store.h"
#include "kubestat/apiserver/watch_cache.h"
#include "kubestat/core/clock.h"
#include "kubestat/kube/serving_options.h"

namespace kubestat {
class FlagSet;
}  // namespace kubestat

namespace kubestat::apiserver {

struct Options {
  Options();

  // HTTPS serving, authentication and authorization (kube/serving_options.h); the port
  // defaults to 8445.
  kube::SecureServingOptions serving;
  // An object not written for this long is removed; watchers see DELETED. Default: 5m
  Duration object_ttl = std::chrono::minutes(5);
  // Store events kept so that watches resume from a recent resourceVersion (older ones get
  // 410 Expired and list again). Default: 100000
  int64_t watch_history = 100000;
  // A watch's length when the client does not ask (timeoutSeconds), and the longest one it
  // may ask for. Default: 30m, 1h
  Duration watch_timeout = std::chrono::minutes(30);
  Duration max_watch_timeout = std::chrono::hours(1);
  // Bytes of events a watcher may leave unread before its watch is ended. Default: 16777216
  int64_t max_watch_queue_bytes = int64_t{16} << 20;
  // etcd v3 client URLs (http:// or https://, comma-separated): objects live in etcd, shared
  // by every replica; empty: in this process's memory. Default: none
  std::vector<std::string> etcd_servers;
  // The key prefix of the objects in etcd. Default: /registry/kubestat/
  std::string etcd_prefix = "/registry/kubestat/";
  // PEM files for https etcd URLs: the CA of the members' certificates, and this server's
  // client certificate and key. Default: none
  std::string etcd_cafile;
  std::string etcd_certfile;
  std::string etcd_keyfile;
  // How often etcd's history is compacted (to the revision of one interval before); 0: never
  // (another client compacts). Default: 5m
  Duration etcd_compaction_interval = std::chrono::minutes(5);
  // With etcd: serve lists, gets and watches from memory, fed by one etcd watch per kind
  // (watch_cache.h; --watch-history events kept per kind), instead of reading etcd for each
  // list and opening an etcd watch for each watcher. Default: true
  bool watch_cache = true;
  // Log verbosity. Default: 0
  int64_t verbosity = 0;

  void RegisterFlags(FlagSet& flags);
  [[nodiscard]] absl::Status Validate() const;

  ApiServerOptions ApiOptions() const;
  MemoryStoreOptions StoreOptions() const;
  // The watch cache's options (with etcd and --watch-cache).
  WatchCacheOptions CacheOptions() const;
  // The etcd store's options (objects expire by lease after object_ttl).
  EtcdStoreOptions EtcdOptions() const;
};

}  // namespace kubestat::apiserver

#endif  // KUBESTAT_APISERVER_OPTIONS_H_
