// A real store in a directory and an Ingestor on it, rebuilt from that (empty) store and so
// ready: what the tests of the parts above the ingestor start from.
#ifndef KUBESTAT_TESTING_AGGREGATOR_READY_INGESTOR_H_
#define KUBESTAT_TESTING_AGGREGATOR_READY_INGESTOR_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "kubestat/aggregator/ingest/ingest.h"
#include "kubestat/core/clock.h"
#include "kubestat/storage/store.h"

namespace kubestat::aggregator::testing {

struct ReadyIngestor {
  std::unique_ptr<storage::Store> store;
  std::unique_ptr<Ingestor> ingestor;  // on `store`
};

// Opens (creating) the store in `db_dir` and an Ingestor with `options` on it, rebuilt.
inline absl::StatusOr<ReadyIngestor> OpenReadyIngestor(const std::string& db_dir, Clock* clock,
                                                       const IngestOptions& options = {}) {
  storage::StoreOptions store_options;
  store_options.dir = db_dir;
  absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(store_options);
  if (!store.ok()) return store.status();
  ReadyIngestor ready;
  ready.store = *std::move(store);
  absl::StatusOr<std::unique_ptr<Ingestor>> ingestor =
      Ingestor::Create(options, ready.store.get(), clock);
  if (!ingestor.ok()) return ingestor.status();
  ready.ingestor = *std::move(ingestor);
  if (absl::Status s = ready.ingestor->Rebuild(); !s.ok()) return s;
  return ready;
}

}  // namespace kubestat::aggregator::testing

#endif  // KUBESTAT_TESTING_AGGREGATOR_READY_INGESTOR_H_
