// kubestat-rest-fake-server: the REST front end over a synthetic cluster, for load tests
// (bench/scripts/rest_load.sh). Prints the base URL on stdout, then serves until SIGINT or SIGTERM.
#include <prometheus/registry.h>

#include <iostream>
#include <optional>
#include <string>

#include "kubestat/aggregator/frontends/rest_server.h"
#include "kubestat/core/clock.h"
#include "kubestat/core/flags.h"
#include "kubestat/core/program.h"
#include "kubestat/testing/aggregator/rest_test_access.h"
#include "kubestat/testing/aggregator/synthetic_metrics_source.h"

int main(int argc, char** argv) {
  std::string address = "127.0.0.1";
  int64_t port = 0;
  int64_t nodes = 1000;
  int64_t pods_per_node = 30;
  kubestat::FlagSet flags("kubestat-rest-fake-server",
                          "serves the REST API over a synthetic cluster, for load tests");
  flags.AddString("address", &address, "address to listen on");
  flags.AddInt64("port", &port, "port to listen on; 0 picks a free one");
  flags.AddInt64("nodes", &nodes, "number of nodes (and namespaces)");
  flags.AddInt64("pods-per-node", &pods_per_node, "pods per node (and per namespace)");
  const int64_t verbosity = 0;
  if (std::optional<int> exit =
          kubestat::StartProgram("kubestat-rest-fake-server", flags, argc, argv, verbosity)) {
    return *exit;
  }
  if (nodes < 1 || pods_per_node < 0) {
    std::cerr << "--nodes must be >= 1 and --pods-per-node >= 0\n";
    return 2;
  }

  // Before cpprestsdk starts its threads, so only Wait() sees the stop signals.
  kubestat::TerminationSignals signals;

  std::cerr << "building " << nodes << " nodes x " << pods_per_node << " pods...\n";
  const kubestat::aggregator::bench::SyntheticMetricsSource source(
      static_cast<int>(nodes), static_cast<int>(pods_per_node), static_cast<int>(nodes));
  prometheus::Registry registry;
  // Plain HTTP, everyone allowed: this measures routing and rendering, not TLS or access.
  kubestat::aggregator::RestServerOptions options =
      kubestat::aggregator::rest_testing::PlainOptions();
  options.secure.address = address;
  options.secure.port = static_cast<int>(port);
  kubestat::aggregator::rest_testing::AllowEveryone access(kubestat::RealClock::Get());
  kubestat::aggregator::RestServer server(options, source, registry, kubestat::RealClock::Get(),
                                          kubestat::aggregator::LivenessCheck{}, access.Control());
  if (absl::Status started = server.Start(); !started.ok()) {
    std::cerr << started.message() << "\n";
    return 1;
  }
  std::cout << server.BaseUrl() << std::endl;
  signals.Wait();
  server.Stop();
  return 0;
}
