// kubestat-aggregator: discovers nodes and pods, scrapes every kubelet each resolution,
// stores every sample in RocksDB and keeps the statistical windows, and serves them over
// REST (metrics/v1alpha1, metrics.k8s.io) and gRPC (kubestat.v1.Aggregator), with its own
// metrics on /metrics. main parses the options and runs the wired parts until SIGINT or
// SIGTERM (aggregator.h).
#include <malloc.h>
#include <pthread.h>
#include <signal.h>

#include <iostream>

#include "kubestat/aggregator/aggregator.h"
#include "kubestat/aggregator/options.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/flags.h"
#include "kubestat/core/log.h"

namespace {

int Fail(const absl::Status& status, int code = 2) {
  std::cerr << "kubestat-aggregator: " << status.message() << "\n";
  return code;
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
  absl::StatusOr<kubestat::ParsedFlags> parsed = flags.Parse(argc, argv);
  if (!parsed.ok()) return Fail(parsed.status());
  if (parsed->help_requested) {
    std::cout << flags.Usage();
    return 0;
  }
  if (!parsed->positional.empty()) {
    return Fail(
        absl::InvalidArgumentError("unexpected argument \"" + parsed->positional[0] + "\""));
  }
  kubestat::LogOptions log_options;
  log_options.verbosity = static_cast<int>(options.verbosity);
  if (absl::Status s = log_options.Validate(); !s.ok()) return Fail(s);
  kubestat::ConfigureLogging(log_options);
  if (absl::Status s = options.Validate(); !s.ok()) return Fail(s);

  // SIGINT/SIGTERM are taken by sigwait below; every thread started from here inherits the
  // mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::unique_ptr<Aggregator>> aggregator =
      Aggregator::Create(options, kubestat::RealClock::Get());
  if (!aggregator.ok()) {
    return Fail(aggregator.status(),
                aggregator.status().code() == absl::StatusCode::kFailedPrecondition ? 1 : 2);
  }
  (*aggregator)->Start();
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  KLOG(INFO) << "received signal " << signal_number << ", shutting down";
  (*aggregator)->Stop();
  KLOG(INFO) << "stopped";
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
