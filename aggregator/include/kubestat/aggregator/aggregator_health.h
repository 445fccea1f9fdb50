// AggregatorHealth: what the aggregator's /readyz says of its peers (http/health_checks.h
// answers it), beyond the RestHandler's own startup check:
//   store-writes  fails while the store rejects writes: the newest node write failed (a
//                 write rejected by the store, not a scrape the ingest refused); passes again
//                 at the next write the store takes
//   kube-api      fails once the kube API has failed to answer discovery for longer than
//                 kube_api_unreachable_limit (discovery::KubeApiContact)
//   scrapes       fails after failed_rounds_limit scrape rounds in a row with targets and no
//                 node scraped; passes again at the first round that scrapes a node
// None of these is a /livez check: a restart brings no peer back. And a condition, which
// never fails /readyz (the windows are served from memory whatever the disk does):
//   store-durability  with ?verbose, why writes wait in memory instead of on disk
//                     (storage::Store::DegradedReason), while they do
//
// Ownership: borrows the discovery, which must outlive it (and the HealthChecks it is added
// to must not outlive it).
// Thread-safety: every method from any thread.
#ifndef KUBESTAT_AGGREGATOR_AGGREGATOR_HEALTH_H_
#define KUBESTAT_AGGREGATOR_AGGREGATOR_HEALTH_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "kubestat/core/clock.h"
#include "kubestat/discovery/discovery.h"
#include "kubestat/http/health_checks.h"
#include "kubestat/scrapers/scheduler.h"
#include "kubestat/storage/store.h"

namespace kubestat::aggregator {

struct AggregatorHealthOptions {
  // How long the kube API may leave discovery unanswered before /readyz fails
  // (--kube-api-unready-after). Default: 1m
  Duration kube_api_unready_after = std::chrono::minutes(1);
  // Scrape rounds in a row without one node scraped that make /readyz fail
  // (--scrape-unready-rounds). Default: 3
  int scrape_unready_rounds = 3;
};

class AggregatorHealth {
 public:
  // `store` may be null (no store-durability condition).
  AggregatorHealth(AggregatorHealthOptions options, const discovery::Discovery& discovery,
                   const storage::Store* store = nullptr);

  // The outcome of ingesting one node's scrape (Ingestor::Ingest's status).
  void RecordIngest(const absl::Status& status);
  void RecordRound(const scrapers::RoundSummary& round);

  // Adds store-writes, kube-api and scrapes to the readyz checks of `checks`, and the
  // store-durability condition.
  void AddChecks(http::HealthChecks& checks);

  // Whether `status` (from Ingestor::Ingest) is the store refusing a write rather than the
  // ingest refusing the scrape (InvalidArgument, FailedPrecondition).
  static bool IsStoreFailure(const absl::Status& status);

 private:
  std::optional<std::string> StoreWrites() const;
  std::optional<std::string> KubeApi(Timestamp now) const;
  std::optional<std::string> Scrapes() const;

  const AggregatorHealthOptions options_;
  const discovery::Discovery& discovery_;
  const storage::Store* store_;
  mutable std::mutex mu_;
  std::string store_error_;           // the newest write's failure; "" when it was taken
  uint64_t store_failed_writes_ = 0;  // failed writes since the last one taken
  int rounds_without_scrape_ = 0;     // rounds in a row with targets and no node scraped
  size_t last_round_targets_ = 0;
  std::string last_round_failures_;  // "timeout=3, connect=2" of the newest round
};

}  // namespace kubestat::aggregator

#endif  // KUBESTAT_AGGREGATOR_AGGREGATOR_HEALTH_H_
