// kubestat-sim: a simulated Kubernetes cluster (fake kube-apiserver + fake kubelets).
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "kubestat/core/clock.h"
#include "kubestat/sim/flags.h"
#include "kubestat/sim/simulator.h"

namespace {

int WaitForSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

}  // namespace

int main(int argc, char** argv) {
  // Block the shutdown signals in every thread; the main thread waits for them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  std::vector<std::string> args(argv + 1, argv + argc);
  absl::StatusOr<kubestat::sim::SimulatorFlags> flags = kubestat::sim::ParseSimulatorFlags(args);
  if (!flags.ok()) {
    std::cerr << "kubestat-sim: " << flags.status().message() << "\n";
    return 2;
  }
  if (flags->help) {
    std::cout << kubestat::sim::SimulatorHelpText();
    return 0;
  }
  kubestat::sim::Simulator sim(flags->options, kubestat::RealClock::Get());
  if (absl::Status s = sim.Start(); !s.ok()) {
    std::cerr << "kubestat-sim: " << s.message() << "\n";
    return 1;
  }
  const int nodes = sim.model().node_count();
  if (!sim.apiserver_url().empty()) std::cout << "apiserver " << sim.apiserver_url() << "\n";
  if (!flags->options.hollow_apiserver.empty()) {
    std::cout << "hollow-apiserver " << flags->options.hollow_apiserver << "\n";
  }
  std::cout << "kubelets " << nodes << " from " << sim.kubelet_url(0) << " to "
            << sim.kubelet_url(nodes - 1) << "\n";
  // Each node's kubelet, as the node objects give it (ports differ with
  // --kubelet-address-mode=ports and --kubelet-port=0).
  for (int i = 0; i < nodes; ++i) {
    std::cout << "kubelet " << sim.model().node(i).name << " " << sim.kubelet_url(i) << "\n";
  }
  if (!sim.kubeconfig_path().empty()) std::cout << "kubeconfig " << sim.kubeconfig_path() << "\n";
  if (!sim.ca_path().empty()) std::cout << "ca " << sim.ca_path() << "\n";
  if (!sim.apiserver_ca_path().empty()) {
    std::cout << "apiserver-ca " << sim.apiserver_ca_path() << "\n";
  }
  // A script gives this file to the metrics backend as its --requestheader-client-ca-file.
  if (!sim.front_proxy_ca_path().empty()) {
    std::cout << "front-proxy-ca " << sim.front_proxy_ca_path() << "\n";
  }
  if (!flags->options.users_file.empty()) {
    std::cout << "users-file " << flags->options.users_file << "\n";
  }
  if (!flags->options.kubeconfig_dir.empty()) {
    std::cout << "kubeconfig-dir " << flags->options.kubeconfig_dir << "\n";
  }
  if (!flags->options.podresources_dir.empty()) {
    std::cout << "podresources " << sim.podresources_socket(0) << " to "
              << sim.podresources_socket(nodes - 1) << "\n";
  }
  std::cout << "READY" << std::endl;
  const int sig = WaitForSignal();
  std::cout << "kubestat-sim: signal " << sig << ", shutting down" << std::endl;
  sim.Stop();
  return 0;
}
