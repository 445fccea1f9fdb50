// Aggregator: kubestat-aggregator's parts, wired. Discovery (a static node list, a
// kubeconfig or the in-cluster service account), the kubelet client and the scrape
// scheduler, the RocksDB store and the ingest pipeline, the query snapshot and the watch
// hub, the REST front end (with /metrics and health) and the gRPC server.
//
// Create() validates nothing itself (options must have passed Validate()) and builds every
// part; it opens the store and binds the servers, so errors that depend on the machine (an
// unreadable store, a port in use) come back from it: Unavailable for listeners,
// FailedPrecondition for the store, the component's own Status otherwise. Start() returns
// at once: on a thread of its own the windows are rebuilt from the store (/readyz is 503
// until then), discovery starts and waits for its first sync, and the scheduler starts. If
// the rebuild reads damage, the store is salvaged and rebuilt from again (unless
// options.storage_strict); if that fails too, or with storage_strict on the first damage,
// the process is sent SIGTERM and StartupFailure() says why.
// Stop() stops everything in reverse order; the destructor Stop()s.
//
// Thread-safety: Create, Start and Stop from one thread (main's).
#ifndef KUBESTAT_AGGREGATOR_AGGREGATOR_H_
#define KUBESTAT_AGGREGATOR_AGGREGATOR_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubestat/aggregator/options.h"
#include "kubestat/core/clock.h"

namespace kubestat::aggregator {

class Aggregator {
 public:
  // `clock` must outlive the aggregator.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Aggregator>> Create(
      const AggregatorOptions& options, Clock& clock);
  ~Aggregator();
  Aggregator(const Aggregator&) = delete;
  Aggregator& operator=(const Aggregator&) = delete;

  void Start();
  void Stop();  // Idempotent.

  // Where the REST front end listens ("http://127.0.0.1:8080").
  std::string RestUrl() const;
  // Why the start failed (DataLoss naming --storage-dir); OK while it has not.
  absl::Status StartupFailure() const;

 private:
  struct Parts;
  explicit Aggregator(std::unique_ptr<Parts> parts);
  std::unique_ptr<Parts> parts_;
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_AGGREGATOR_H_
