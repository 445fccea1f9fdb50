#include "kubestat/sim/flags.h"

#include <gtest/gtest.h>

namespace kubestat::sim {
namespace {

TEST(SimulatorFlagsTest, DefaultsAreFiftyNodesOfThirtyPods) {
  absl::StatusOr<SimulatorFlags> f = ParseSimulatorFlags({});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->options.model.nodes, 50);
  EXPECT_EQ(f->options.model.pods_per_node, 30);
  EXPECT_EQ(f->options.model.containers_per_pod, 2);
  EXPECT_EQ(f->options.kubelet_port, 10250);
  EXPECT_EQ(f->options.apiserver_port, 0);
  EXPECT_FALSE(f->options.tls);
  EXPECT_FALSE(f->help);
}

TEST(SimulatorFlagsTest, ParsesEveryForm) {
  absl::StatusOr<SimulatorFlags> f = ParseSimulatorFlags(
      {"--nodes=3", "--pods-per-node", "7", "--tls", "--kubelet-address-mode=ports",
       "--kubelet-port=0", "--faults=node-0001=timeout,node-0002=http500", "--pod-lifetime=0",
       "--workload-mix=steady:1,leaky:2", "--seed=99", "--tick=250ms"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->options.model.nodes, 3);
  EXPECT_EQ(f->options.model.pods_per_node, 7);
  EXPECT_EQ(f->options.model.seed, 99u);
  EXPECT_TRUE(f->options.tls);
  EXPECT_EQ(f->options.kubelet_address_mode, KubeletAddressMode::kPorts);
  EXPECT_EQ(f->options.faults.at("node-0001"), Fault::kTimeout);
  EXPECT_EQ(f->options.faults.at("node-0002"), Fault::kHttp500);
  EXPECT_EQ(f->options.model.mean_pod_lifetime, Duration::zero());
  EXPECT_EQ(f->options.model.leaky_weight, 2);
  EXPECT_EQ(f->options.model.diurnal_weight, 0);
  EXPECT_EQ(f->options.tick_interval, std::chrono::milliseconds(250));
}

TEST(SimulatorFlagsTest, ErrorsNameTheFlag) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--nodes=x"},
                                             {"--faults=node-0001=explode"},
                                             {"--kubelet-address-mode=mars"},
                                             {"--bogus=1"},
                                             {"--pod-lifetime=1m"}}) {
    absl::StatusOr<SimulatorFlags> f = ParseSimulatorFlags(args);
    ASSERT_FALSE(f.ok()) << args[0];
    const std::string flag = args[0].substr(0, args[0].find('='));
    if (flag != "--pod-lifetime") {
      EXPECT_NE(std::string(f.status().message()).find(flag), std::string::npos)
          << f.status().message();
    }
  }
}

TEST(SimulatorFlagsTest, HelpListsEveryFlagWithItsDefault) {
  const std::string help = SimulatorHelpText();
  for (const char* flag : {"--seed",
                           "--nodes",
                           "--pods-per-node",
                           "--containers-per-pod",
                           "--workload-mix",
                           "--pod-lifetime",
                           "--restart-fraction",
                           "--cluster-start",
                           "--apiserver-address",
                           "--apiserver-port",
                           "--kubelet-address-mode",
                           "--kubelet-port",
                           "--tls",
                           "--tls-dir",
                           "--kubelet-token",
                           "--faults",
                           "--metrics-backend",
                           "--kubeconfig-out",
                           "--tick",
                           "--watch-history",
                           "--help"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
  EXPECT_NE(help.find("(default: \"50\")"), std::string::npos);
  absl::StatusOr<SimulatorFlags> f = ParseSimulatorFlags({"--help"});
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->help);
}

TEST(FaultsTest, ParsesAndRejectsFaultNames) {
  EXPECT_EQ(*ParseFault(" slowdrip\n"), Fault::kSlowdrip);
  EXPECT_FALSE(ParseFault("boom").ok());
  EXPECT_FALSE(ParseFaultList("node-0001").ok());
  FaultTable table;
  table.Set("node-0001", Fault::kGarbage);
  EXPECT_EQ(table.Get("node-0001"), Fault::kGarbage);
  table.Set("node-0001", Fault::kNone);
  EXPECT_TRUE(table.All().empty());
}

}  // namespace
}  // namespace kubestat::sim
