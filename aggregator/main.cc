// kubestat-aggregator: discovers nodes and pods, scrapes every kubelet each resolution,
// stores every sample in RocksDB and keeps the statistical windows, and serves them over
// REST (metrics/v1alpha1, metrics.k8s.io) and gRPC (kubestat.v1.Aggregator), with its own
// metrics on /metrics. main parses the options and runs the wired parts until SIGINT or
// SIGTERM (aggregator.h).
#include <malloc.h>

#include <optional>
#include <string_view>

#include "kubestat/aggregator/aggregator.h"
#include "kubestat/aggregator/options.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/flags.h"
#include "kubestat/core/log.h"
#include "kubestat/core/program.h"

namespace {

constexpr std::string_view kProgram = "kubestat-aggregator";

int Fail(const absl::Status& status, int code = 2) {
  return kubestat::FailProgram(kProgram, status, code);
}

int Run(int argc, char** argv) {
  using kubestat::aggregator::Aggregator;
  // glibc gives each thread that allocates its own arena (up to 8 per core); memory freed in
  // one stays there. With scrape workers, REST and gRPC threads all allocating, that held
  // several round-sized heaps at once; two arenas keep the process near what it uses.
  mallopt(M_ARENA_MAX, 2);
  kubestat::aggregator::AggregatorOptions options;
  kubestat::FlagSet flags("kubestat-aggregator",
                          "Scrapes every node's kubelet each resolution and serves kubestat's "
                          "metrics.");
  options.RegisterFlags(flags);
  if (std::optional<int> exit =
          kubestat::StartProgram(kProgram, flags, argc, argv, options.verbosity)) {
    return *exit;
  }
  if (absl::Status s = options.Validate(); !s.ok()) return Fail(s);
  kubestat::TerminationSignals signals;  // before any thread starts

  absl::StatusOr<std::unique_ptr<Aggregator>> aggregator =
      Aggregator::Create(options, kubestat::RealClock::Get());
  if (!aggregator.ok()) {
    return Fail(aggregator.status(),
                aggregator.status().code() == absl::StatusCode::kFailedPrecondition ? 1 : 2);
  }
  (*aggregator)->Start();
  signals.Wait();
  (*aggregator)->Stop();
  if (absl::Status failure = (*aggregator)->StartupFailure(); !failure.ok()) {
    return Fail(failure, 1);
  }
  KLOG(INFO) << "stopped";
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
