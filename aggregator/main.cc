// kubestat-aggregator: discovers nodes and pods, scrapes every kubelet each resolution,
// stores every sample in RocksDB and keeps the statistical windows, and serves them over
// REST (metrics/v1alpha1, metrics.k8s.io) and gRPC (kubestat.v1.Aggregator), with its own
// metrics on /metrics. main runs the wired parts until SIGINT or SIGTERM (aggregator.h).
#include <malloc.h>

#include <memory>

#include "kubestat/aggregator/aggregator.h"
#include "kubestat/aggregator/options.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/program.h"

int main(int argc, char** argv) {
  using kubestat::ServerStart;
  using kubestat::aggregator::Aggregator;
  using kubestat::aggregator::AggregatorOptions;
  // glibc gives each thread that allocates its own arena (up to 8 per core); memory freed in
  // one stays there. With scrape workers, REST and gRPC threads all allocating, that held
  // several round-sized heaps at once; two arenas keep the process near what it uses.
  mallopt(M_ARENA_MAX, 2);
  return kubestat::RunServer<AggregatorOptions>(
      "kubestat-aggregator",
      "Scrapes every node's kubelet each resolution and serves kubestat's metrics.", argc, argv,
      [](const AggregatorOptions& options) {
        absl::StatusOr<std::unique_ptr<Aggregator>> created =
            Aggregator::Create(options, kubestat::RealClock::Get());
        if (!created.ok()) {
          // A store that cannot be opened (FailedPrecondition) fails at run time, not by flag.
          return ServerStart::Failed(
              created.status(),
              created.status().code() == absl::StatusCode::kFailedPrecondition ? 1 : 2);
        }
        std::shared_ptr<Aggregator> aggregator = *std::move(created);
        aggregator->Start();
        return ServerStart::Running([aggregator] {
          aggregator->Stop();
          return aggregator->StartupFailure();
        });
      });
}
