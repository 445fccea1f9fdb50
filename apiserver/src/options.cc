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
                 "lists and watches again)");
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

}  // namespace kubestat::apiserver
