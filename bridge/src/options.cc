#include "kubestat/bridge/options.h"

#include <algorithm>
#include <string>

#include "kubestat/core/absl_view.h"
#include "kubestat/core/flags.h"
#include "kubestat/core/str_cat.h"

namespace kubestat::bridge {
namespace {

absl::Status Flagged(std::string_view flag, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::InvalidArgumentError(StrCat(flag, ": ", StdView(status.message())));
}

// A component's "field_name: reason" as "--field-name: reason", where each field of the
// component's options is set by the flag of the same name.
absl::Status AsFlag(const absl::Status& status) {
  std::string message(StdView(status.message()));
  const size_t colon = message.find(':');
  std::replace(message.begin(), message.begin() + static_cast<std::ptrdiff_t>(colon), '_', '-');
  return absl::InvalidArgumentError("--" + message);
}

}  // namespace

BridgeOptions::BridgeOptions() {
  serving.secure_port = 8444;
  // The bridge serves its health and metrics only, never through the aggregation layer: no
  // front proxy's trust to look up.
  serving.authentication_skip_lookup = true;
}

void BridgeOptions::RegisterFlags(FlagSet& flags) {
  flags.AddString("aggregator-address", &aggregator_address,
                  "host:port of kubestat-aggregator's gRPC server (kubestat.v1.Aggregator)");
  flags.AddString("aggregator-token-file", &aggregator_token_file,
                  "bearer token file for the aggregator's Watch, re-read when it changes");
  flags.AddString("aggregator-ca-file", &aggregator_ca_file,
                  "CA of the aggregator's gRPC serving certificate; empty: plain text, only to a "
                  "loopback --aggregator-address");
  flags.AddString("apiserver-url", &apiserver_url,
                  "base URL of the metrics API server (https://host:port); may be empty with "
                  "--apiserver-kubeconfig");
  flags.AddString("apiserver-ca-file", &apiserver_ca_file,
                  "CA of the metrics API server's serving certificate; empty: the system roots");
  flags.AddString("apiserver-token-file", &apiserver_token_file,
                  "bearer token file for the metrics API server, re-read when it changes");
  flags.AddString("apiserver-kubeconfig", &apiserver_kubeconfig,
                  "kubeconfig naming the metrics API server and its credentials (instead of "
                  "--apiserver-ca-file and --apiserver-token-file)");
  flags.AddDuration("apiserver-timeout", &apiserver_timeout,
                    "deadline of one request to the metrics API server");
  flags.AddString("push-mode", &push_mode,
                  "bulk (POST /apis/metrics/v1alpha1/writes) or put (a PUT or DELETE per object, "
                  "for any Kubernetes-style server)");
  flags.AddInt64("max-batch-objects", &max_batch_objects, "most objects per push batch");
  flags.AddInt64("max-batch-bytes", &max_batch_bytes,
                 "most bytes of objects per bulk body (the server takes at most 3 MiB)");
  flags.AddInt64("max-in-flight", &max_in_flight,
                 "requests to the metrics API server in flight at once");
  flags.AddDuration("retry-base", &retry_base,
                    "first ceiling of the jittered retry delay (doubles per failure)");
  flags.AddDuration("retry-max", &retry_max, "largest ceiling of the jittered retry delay");
  flags.AddDuration("aggregator-unready-after", &aggregator_unready_after,
                    "/readyz fails once no watch stream of the aggregator has read an event for "
                    "this long");
  serving.RegisterFlags(flags);
  flags.AddInt64("v", &verbosity, "log verbosity");
}

absl::Status BridgeOptions::Validate() const {
  if (aggregator_unready_after <= Duration::zero()) {
    return absl::InvalidArgumentError("--aggregator-unready-after: must be positive");
  }
  if (apiserver_url.empty() && apiserver_kubeconfig.empty()) {
    return absl::InvalidArgumentError(
        "--apiserver-url: required (or --apiserver-kubeconfig naming the server)");
  }
  if (!apiserver_kubeconfig.empty() &&
      (!apiserver_ca_file.empty() || !apiserver_token_file.empty())) {
    return absl::InvalidArgumentError(
        "--apiserver-kubeconfig: give it or --apiserver-ca-file/--apiserver-token-file, not "
        "both");
  }
  if (!apiserver_url.empty() && apiserver_url.rfind("https://", 0) != 0 &&
      apiserver_url.rfind("http://", 0) != 0) {
    return absl::InvalidArgumentError(
        StrCat("--apiserver-url: ", apiserver_url, " is not an http(s) URL"));
  }
  if (apiserver_timeout <= Duration::zero()) {
    return absl::InvalidArgumentError("--apiserver-timeout: must be positive");
  }
  if (absl::StatusOr<PushMode> mode = ParsePushMode(push_mode); !mode.ok()) {
    return Flagged("--push-mode", mode.status());
  }
  // A body stays under the server's 3 MiB with room for the envelope and the commas.
  if (max_batch_bytes < 1024 || max_batch_bytes > (int64_t{5} << 19)) {
    return absl::InvalidArgumentError(
        "--max-batch-bytes: must be between 1024 and 2621440 (the server takes 3 MiB)");
  }
  if (max_batch_objects < 1) {
    return absl::InvalidArgumentError("--max-batch-objects: must be at least 1");
  }
  if (absl::Status s = PushingOptions().Validate(); !s.ok()) return AsFlag(s);
  if (absl::Status s = WatchOptions().Validate(); !s.ok()) {
    return Flagged("--aggregator-address/--aggregator-ca-file", s);
  }
  if (absl::Status s = serving.Validate(); !s.ok()) return s;
  return Flagged("--listen-address/--cert-dir", ServingOptions().Validate());
}

PusherOptions BridgeOptions::PushingOptions() const {
  PusherOptions options;
  options.mode = ParsePushMode(push_mode).value_or(PushMode::kBulk);
  options.max_batch_objects = static_cast<size_t>(max_batch_objects);
  options.max_batch_bytes = static_cast<size_t>(max_batch_bytes);
  options.max_in_flight = static_cast<int>(std::clamp<int64_t>(max_in_flight, 0, 1000));
  options.retry_base = retry_base;
  options.retry_max = retry_max;
  return options;
}

WatchClientOptions BridgeOptions::WatchOptions() const {
  WatchClientOptions options;
  options.address = aggregator_address;
  options.ca_file = aggregator_ca_file;
  options.token_file = aggregator_token_file;
  options.reconnect_base = retry_base;
  options.reconnect_max = retry_max;
  options.retry_base = retry_base;
  options.retry_max = retry_max;
  return options;
}

http::ServerOptions BridgeOptions::ServingOptions() const {
  http::ServerOptions options = serving.SecureServer("bridge");
  // Nothing the bridge serves takes a body.
  options.allowed_methods = {"GET", "HEAD"};
  options.limits.max_body_bytes = 0;
  options.limits.max_connections = 64;
  options.io_threads = 1;
  options.worker_threads = 1;
  return options;
}

}  // namespace kubestat::bridge
