#include "kubestat/apiserver/options.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kubestat/core/flags.h"
#include "kubestat/core/time.h"

namespace kubestat::apiserver {

Options::Options() { serving.secure_port = 8445; }

void Options::RegisterFlags(FlagSet& flags) {
  serving.RegisterFlags(flags);
  flags.AddDuration("object-ttl", &object_ttl,
                    "an object not written for this long is removed (watchers see DELETED)");
  flags.AddInt64("watch-history", &watch_history,
                 "store events kept so watches resume from a recent resourceVersion");
  flags.AddDuration("watch-timeout", &watch_timeout,
                    "length of a watch whose client does not ask for one (timeoutSeconds)");
  flags.AddDuration("max-watch-timeout", &max_watch_timeout, "longest watch a client may ask for");
  flags.AddInt64("max-watch-queue-bytes", &max_watch_queue_bytes,
                 "bytes of events a watcher may leave unread before its watch is ended (it "
                 "lists and watches again); a watch's initial events come on top");
  flags.AddStringList("etcd-servers", &etcd_servers,
                      "etcd v3 client URLs (http:// or https://), comma-separated; objects are "
                      "kept in etcd and shared by every replica (empty: in memory)");
  flags.AddString("etcd-prefix", &etcd_prefix, "the etcd key prefix of the objects");
  flags.AddString("etcd-cafile", &etcd_cafile, "PEM CA bundle that signed the etcd members");
  flags.AddString("etcd-certfile", &etcd_certfile, "PEM client certificate for etcd");
  flags.AddString("etcd-keyfile", &etcd_keyfile, "PEM private key of --etcd-certfile");
  flags.AddDuration("etcd-compaction-interval", &etcd_compaction_interval,
                    "how often etcd's history is compacted, keeping one interval; 0 disables");
  flags.AddBool("watch-cache", &watch_cache,
                "with etcd: serve lists, gets and watches from memory fed by one etcd watch per "
                "kind (false: every list reads etcd and every watcher has its own etcd watch)");
  flags.AddInt64("v", &verbosity, "log verbosity");
}

absl::Status Options::Validate() const {
  if (absl::Status s = serving.Validate(); !s.ok()) return s;
  if (max_watch_queue_bytes < 1) {
    return absl::InvalidArgumentError("--max-watch-queue-bytes: must be positive");
  }
  if (watch_history < 0) {
    return absl::InvalidArgumentError("--watch-history: must not be negative");
  }
  if (!etcd_servers.empty()) {
    if (absl::Status s = EtcdOptions().Validate(); !s.ok()) return s;
  } else if (!etcd_cafile.empty() || !etcd_certfile.empty() || !etcd_keyfile.empty()) {
    return absl::InvalidArgumentError(
        "--etcd-cafile/--etcd-certfile/--etcd-keyfile: need --etcd-servers");
  }
  absl::Status api = ApiOptions().Validate();
  if (!api.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--object-ttl/--watch-timeout/--max-watch-timeout: ", api.message()));
  }
  return absl::OkStatus();
}

ApiServerOptions Options::ApiOptions() const {
  ApiServerOptions options;
  options.server = serving.SecureServer("apiserver");
  options.server.limits.max_body_bytes = ApiServerOptions::SecureDefaults().limits.max_body_bytes;
  options.always_allow_paths = serving.authorization_always_allow_paths;
  options.object_ttl = object_ttl;
  options.watch_timeout = watch_timeout;
  options.max_watch_timeout = max_watch_timeout;
  options.max_watch_queue_bytes = static_cast<size_t>(std::max<int64_t>(max_watch_queue_bytes, 1));
  return options;
}

MemoryStoreOptions Options::StoreOptions() const {
  MemoryStoreOptions options;
  options.history_events = static_cast<size_t>(watch_history);
  return options;
}

WatchCacheOptions Options::CacheOptions() const {
  WatchCacheOptions options;
  options.history_events = static_cast<size_t>(watch_history);
  return options;
}

EtcdStoreOptions Options::EtcdOptions() const {
  EtcdStoreOptions options;
  options.endpoints = etcd_servers;
  options.prefix = etcd_prefix;
  options.ca_file = etcd_cafile;
  options.cert_file = etcd_certfile;
  options.key_file = etcd_keyfile;
  options.object_ttl = object_ttl;
  options.compaction_interval = etcd_compaction_interval;
  return options;
}

}  // namespace kubestat::apiserver
