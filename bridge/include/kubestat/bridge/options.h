// BridgeOptions: everything kubestat-bridge is told on its command line, as one struct with
// the defaults a sidecar beside kubestat-aggregator wants.
//
// RegisterFlags binds every field to its flag (`--help` prints each with its default).
// Validate() runs once at start, after parsing, and returns InvalidArgument whose message
// starts with the flag to fix ("--push-mode: unknown push mode \"post\" (bulk or put)").
// The derived accessors may be used only after Validate() succeeded.
//
// Plain value type; thread-compatible.
#ifndef KUBESTAT_BRIDGE_OPTIONS_H_
#define KUBESTAT_BRIDGE_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "kubestat/bridge/pusher.h"
#include "kubestat/bridge/watch_client.h"
#include "kubestat/core/clock.h"
#include "kubestat/http/server_options.h"
#include "kubestat/kube/serving_options.h"

namespace kubestat {
class FlagSet;
}  // namespace kubestat

namespace kubestat::bridge {

struct BridgeOptions {
  BridgeOptions();

  // host:port of kubestat-aggregator's gRPC server. Default: "127.0.0.1:8081"
  std::string aggregator_address = "127.0.0.1:8081";
  // Bearer token file for the aggregator's Watch, re-read when it changes. Default: ""
  std::string aggregator_token_file;
  // CA of the aggregator's gRPC serving certificate; empty: plain text, allowed only to a
  // loopback --aggregator-address. Default: ""
  std::string aggregator_ca_file;
  // Base URL of the metrics API server ("https://kubestat-apiserver:443"); may be left empty
  // when --apiserver-kubeconfig names the server. Default: ""
  std::string apiserver_url;
  // CA of the metrics API server's serving certificate; empty: the system's roots.
  // Default: ""
  std::string apiserver_ca_file;
  // Bearer token file for the metrics API server, re-read when it changes. Default: ""
  std::string apiserver_token_file;
  // kubeconfig naming the metrics API server and the credentials for it (instead of the
  // three flags above; --apiserver-url, when given, overrides its server). Default: ""
  std::string apiserver_kubeconfig;
  // Deadline of one request to the metrics API server. Default: 10s
  Duration apiserver_timeout = std::chrono::seconds(10);
  // "bulk" (POST /apis/metrics/v1alpha1/writes) or "put" (one PUT or DELETE per object,
  // for any Kubernetes-style server). Default: "bulk"
  std::string push_mode = "bulk";
  // Most objects per push batch. Default: 500
  int64_t max_batch_objects = 500;
  // Most bytes of objects per bulk body (the server takes at most 3 MiB). Default: 1048576
  int64_t max_batch_bytes = int64_t{1} << 20;
  // Requests to the metrics API server in flight at once (one per worker). Default: 4
  int64_t max_in_flight = 4;
  // First and largest ceiling of the jittered retry delay (pushes, resync lists, and
  // reconnecting to the aggregator). Default: 500ms, 30s
  Duration retry_base = std::chrono::milliseconds(500);
  Duration retry_max = std::chrono::seconds(30);
  // /readyz fails once no Watch stream of the aggregator has read an event for this long
  // (the aggregator is down or refusing the bridge). Default: 1m
  Duration aggregator_unready_after = std::chrono::minutes(1);
  // HTTPS serving of /metrics (authenticated and authorized as a non-resource URL) and of
  // /healthz, /livez, /readyz (open), with the flags every kubestat server takes
  // (kube/serving_options.h); the port defaults to 8444.
  kube::SecureServingOptions serving;
  // Log verbosity. Default: 0
  int64_t verbosity = 0;

  // Binds every field above to its flag.
  void RegisterFlags(FlagSet& flags);
  // Checks every field; InvalidArgument naming the flag.
  [[nodiscard]] absl::Status Validate() const;

  // The components' options as these flags set them (after a successful Validate()).
  PusherOptions PushingOptions() const;
  WatchClientOptions WatchOptions() const;
  http::ServerOptions ServingOptions() const;
};

}  // namespace kubestat::bridge

#endif  // KUBESTAT_BRIDGE_OPTIONS_H_
