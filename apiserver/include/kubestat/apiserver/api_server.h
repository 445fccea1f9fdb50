// ApiServer: kubestat-apiserver's HTTP API over an ObjectStore, on the shared HTTP server
// (HTTPS by default) behind the shared front door (kube/access_gate.h: authentication, then
// authorization of every request as kube-apiserver derives its attributes).
//
// Reads, in metrics/v1alpha1 (every window), metrics.k8s.io/v1 and v1beta1 (usage), the same
// stored objects in each:
//   GET /apis/{group}/{version}/nodes[/{name}]
//   GET /apis/{group}/{version}/pods, /namespaces/{ns}/pods[/{name}]
//   Lists take labelSelector, fieldSelector, pretty, limit and continue (metrics_api/query.h)
//   and carry metadata.resourceVersion; objects carry theirs.
//   resourceVersion on a GET or LIST, as kube-apiserver reads it (object_store.h ReadVersion):
//     - unset: the newest state (a consistent read; the watch cache waits for this server's
//       own writes);
//     - "0": any state the store holds, answered at once (the watch cache's, without waiting);
//     - N (resourceVersionMatch unset or NotOlderThan): a state at N or newer; one the store
//       has not reached is 504 Timeout "Too large resource version: N, current: M";
//     - N with resourceVersionMatch=Exact (lists): the state at exactly N where the store
//       keeps it (etcd, until compacted), else 410 Expired;
//     - a resourceVersion that is not a decimal number, a resourceVersionMatch other than
//       NotOlderThan or Exact, one without resourceVersion, Exact with "0", or any on a GET:
//       400 BadRequest naming the parameter.
//   ?watch=1 streams watch events (one JSON object per line, as kube-apiserver writes them):
//     - resourceVersion unset or "0": ADDED for every object that matches (the newest state,
//       or with "0" any state the store holds, at once), then the changes;
//       with sendInitialEvents=true the initial ADDED events end with a BOOKMARK annotated
//       "k8s.io/initial-events-end": "true" (the watch-list form the HPA tries first);
//     - resourceVersion=N: every change after revision N; one the store no longer remembers
//       is an ERROR event holding a 410 Expired Status, then the stream ends (the client
//       lists again), as kube-apiserver answers;
//     - allowWatchBookmarks=true: a BOOKMARK with the current revision at each sweep
//       (ApiServerOptions::bookmark_interval), so a quiet watch can resume near the head;
//     - timeoutSeconds ends the watch (at most max_watch_timeout; default watch_timeout).
//   In metrics.k8s.io, objects without usage (metrics_api::Servable) are left out.
//   Encodings (metrics_api/encoding.h): metrics.k8s.io objects and lists are answered in the
//   Kubernetes protobuf encoding (metrics_api/render_protobuf.h) to clients that prefer it, as
//   client-go and kubectl top do ("application/vnd.kubernetes.protobuf, */*"), else in JSON;
//   metrics/v1alpha1, watch streams, discovery and Status errors are JSON. A read whose Accept
//   admits nothing offered is 406 NotAcceptable. Object and collection answers carry
//   `Vary: Accept`.
// Writes, in metrics/v1alpha1 only (metrics.k8s.io is read-only), JSON bodies of at most
// max_body_bytes (413 beyond):
//   PUT    .../nodes/{name}, .../namespaces/{ns}/pods/{name}   create (201) or replace (200)
//   POST   .../nodes, .../namespaces/{ns}/pods                 create (201); 409 AlreadyExists
//   DELETE .../nodes/{name}, .../namespaces/{ns}/pods/{name}   200 Success Status; 404
//   POST   /apis/metrics/v1alpha1/writes                       a WriteBatch, applied in one
//                                                              step (metrics_api/write_batch.h)
//   A body that does not read as a valid object is 422 Invalid naming the field; a name or
//   namespace that differs from the URL's is 400.
// Discovery: /api, /apis, /apis/{group}, /apis/{group}/{version} (verbs get, list, watch, and
// create, update, delete in metrics/v1alpha1).
// Health (no credentials): /healthz 200; /livez and /readyz in kube-apiserver's form
// (http/health_checks.h, ?verbose for the reasons): livez checks ping, readyz ping and store,
// failing (503) while the object store does not answer (no etcd member reachable). /metrics: the
// registry's exposition (authorized as a non-resource URL).
//
// Sweeps: every sweep_interval a thread of the server expires objects not written within
// object_ttl (watchers see DELETED), ends watches past their timeout, drops the
// subscriptions of watches whose client went, sends bookmarks and updates the gauges.
// Sweep() does one at once, on the caller's clock reading (tests drive it with a fake clock).
//
// Self-metrics (besides the HTTP server's kubestat_http_* series, server="apiserver"):
//   kubestat_apiserver_objects{resource}                 objects stored, at the last sweep
//   kubestat_apiserver_writes_total{operation,code}      writes by operation (put, create,
//                                                        delete, batch, expire) and answer
//   kubestat_apiserver_watchers{resource}                open watches
//   kubestat_apiserver_watch_events_total{type}          events sent to watchers
//   kubestat_apiserver_watch_overflows_total             watches ended because their client
//                                                        left max_watch_queue_bytes unread
//   kubestat_apiserver_storage_duration_seconds{operation}  store calls (apply, get, list)
//
// Ownership: borrows the store, the registry, the clock and the access gate's parts, which
// must outlive the server. Thread-safety: Start and Stop from one thread; everything else
// from any.
#ifndef KUBESTAT_APISERVER_API_SERVER_H_
#define KUBESTAT_APISERVER_API_SERVER_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kubestat/apiserver/object_store.h"
#include "kubestat/core/clock.h"
#include "kubestat/http/server_options.h"
#include "kubestat/kube/access_gate.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kubestat::apiserver {

struct ApiServerOptions {
  // The listener: address, port, TLS (on by default), limits (a 3 MiB body), compression,
  // the optional health listener. Default: SecureDefaults()
  http::ServerOptions server = SecureDefaults();
  // Paths answered without credentials. Default: /healthz, /livez, /readyz
  std::vector<std::string> always_allow_paths = {"/healthz", "/livez", "/readyz"};
  // An object not written for this long is removed (watchers see DELETED). Default: 5m
  Duration object_ttl = std::chrono::minutes(5);
  // How often the sweeper runs (expiry, watch timeouts, bookmarks). Default: 1s
  Duration sweep_interval = std::chrono::seconds(1);
  // How often a watch that asked for bookmarks gets one. Default: 1m (as kube-apiserver)
  Duration bookmark_interval = std::chrono::minutes(1);
  // A watch's length when the client does not ask (timeoutSeconds). Default: 30m
  Duration watch_timeout = std::chrono::minutes(30);
  // The longest watch a client may ask for. Default: 1h
  Duration max_watch_timeout = std::chrono::hours(1);
  // Bytes of events a watch's client may leave unread; beyond them the watch is ended (the
  // client lists and watches again) rather than buffered without bound. The initial events
  // of a watch without a resourceVersion (the whole state) come on top, until the client
  // has once read down to this. Default: 16777216
  size_t max_watch_queue_bytes = size_t{16} << 20;

  // InvalidArgument naming the field.
  [[nodiscard]] absl::Status Validate() const;
  // http::ServerOptions with metrics_name "apiserver" and a 3 MiB body limit.
  static http::ServerOptions SecureDefaults();
};

class ApiServer {
 public:
  ApiServer(ApiServerOptions options, ObjectStore& store, prometheus::Registry& registry,
            const Clock& clock, kube::AccessGate gate);
  ~ApiServer();  // Stop()s.
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Validates the options and the gate, starts the listener and the sweeper. InvalidArgument
  // for bad options, Unavailable when the port cannot be bound, Internal for TLS material.
  [[nodiscard]] absl::Status Start();
  // Ends every watch, stops the sweeper and the listener. Idempotent.
  void Stop();

  // One sweep now (see the file comment).
  void Sweep();

  // Open watches.
  size_t watchers() const;
  int port() const;
  std::string BaseUrl() const;
  std::string HealthBaseUrl() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kubestat::apiserver

#endif  // KUBESTAT_APISERVER_API_SERVER_H_
