#include "kubestat/sim/flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kubestat/sim/simulator.h"

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

TEST(SimulatorFlagsTest, ParsesTheAuthenticationAndProxyFlags) {
  absl::StatusOr<SimulatorFlags> f = ParseSimulatorFlags(
      {"--users-file=/etc/users.yaml", "--kubeconfig-user", "alice", "--kubeconfig-dir=/tmp/kc",
       "--metrics-backend=https://127.0.0.1:8443", "--metrics-backend-ca-file=/tmp/ca.crt",
       "--no-authorize-proxied-requests", "--apiserver-tls"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->options.users_file, "/etc/users.yaml");
  EXPECT_EQ(f->options.kubeconfig_user, "alice");
  EXPECT_EQ(f->options.kubeconfig_dir, "/tmp/kc");
  EXPECT_EQ(f->options.metrics_backend, "https://127.0.0.1:8443");
  EXPECT_EQ(f->options.metrics_backend_ca_file, "/tmp/ca.crt");
  EXPECT_FALSE(f->options.metrics_backend_insecure_skip_tls_verify);
  EXPECT_FALSE(f->options.authorize_proxied_requests);
  EXPECT_TRUE(f->options.apiserver_tls);

  absl::StatusOr<SimulatorFlags> d = ParseSimulatorFlags({});
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->options.authorize_proxied_requests);
  EXPECT_TRUE(d->options.users_file.empty());
  EXPECT_FALSE(d->options.apiserver_tls);
}

TEST(SimulatorFlagsTest, ErrorsNameTheFlag) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--nodes=x"},
                                             {"--nodes=-3"},
                                             {"--faults=node-0001=explode"},
                                             {"--kubelet-address-mode=mars"},
                                             {"--bogus=1"},
                                             {"--tls=maybe"},
                                             {"--tick=soon"},
                                             {"--cluster-start=yesterday"},
                                             {"--workload-mix=steady:x"},
                                             {"--apiserver-port=70000"},
                                             {"--metrics-backend=ftp://x"},
                                             {"--metrics-backend-ca-file=/x"},
                                             {"--kubeconfig-user=alice"},
                                             {"--kubeconfig-dir=/tmp/x"},
                                             {"--pod-lifetime=1m"},
                                             {"--podresources-faults=node-0001=explode"},
                                             {"--podresources-faults=node-0001=absent"},
                                             {"--podresources-slow-delay=0s"},
                                             {"--podresources-dir=/" + std::string(100, 'd')}}) {
    absl::StatusOr<SimulatorFlags> f = ParseSimulatorFlags(args);
    ASSERT_FALSE(f.ok()) << args[0];
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << args[0];
    const std::string flag = args[0].substr(0, args[0].find('='));
    if (flag != "--pod-lifetime") {
      EXPECT_NE(std::string(f.status().message()).find(flag), std::string::npos)
          << f.status().message();
    }
  }
  absl::StatusOr<SimulatorFlags> both =
      ParseSimulatorFlags({"--metrics-backend=https://h:1", "--metrics-backend-ca-file=/x",
                           "--metrics-backend-insecure-skip-tls-verify"});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(std::string(both.status().message()).find("exclude each other"), std::string::npos);
  EXPECT_FALSE(ParseSimulatorFlags({"stray"}).ok());
  EXPECT_FALSE(ParseSimulatorFlags({"--nodes"}).ok());
}

TEST(SimulatorFlagsTest, HelpListsEveryFlagWithItsDefault) {
  const std::string help = SimulatorHelpText();
  for (const char* flag : {"--seed int64",
                           "--nodes int64",
                           "--pods-per-node int64",
                           "--containers-per-pod int64",
                           "--tenant-namespaces int64",
                           "--workload-mix string",
                           "--pod-lifetime duration",
                           "--restart-fraction double",
                           "--cluster-start string",
                           "--apiserver-address string",
                           "--apiserver-port int64",
                           "--apiserver-tls bool",
                           "--kubelet-address-mode string",
                           "--kubelet-port int64",
                           "--tls bool",
                           "--tls-dir string",
                           "--kubelet-token string",
                           "--faults string",
                           "--metrics-backend string",
                           "--metrics-backend-ca-file string",
                           "--metrics-backend-insecure-skip-tls-verify bool",
                           "--authorize-proxied-requests bool",
                           "--default-limit-ranges bool",
                           "--users-file string",
                           "--kubeconfig-out string",
                           "--kubeconfig-user string",
                           "--kubeconfig-dir string",
                           "--tick duration",
                           "--watch-history int64",
                           "--podresources-dir string",
                           "--podresources-faults string",
                           "--podresources-slow-delay duration",
                           "--hollow-apiserver string",
                           "--hollow-ca-file string",
                           "--hollow-client-cert-file string",
                           "--hollow-client-key-file string",
                           "--hollow-token-file string",
                           "--hollow-lease-renew-interval duration",
                           "--help"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
  // Every flag's entry states its default.
  size_t flags = 0;
  size_t defaults = 0;
  for (size_t at = help.find("\n  --"); at != std::string::npos; at = help.find("\n  --", at + 1)) {
    ++flags;
  }
  for (size_t at = help.find("(default "); at != std::string::npos;
       at = help.find("(default ", at + 1)) {
    ++defaults;
  }
  EXPECT_EQ(flags, 38u);
  EXPECT_EQ(defaults, flags);
  for (const char* shown :
       {"(default 50)", "(default 30)", "(default \"steady:4,diurnal:3,spiky:2,leaky:1\")",
        "(default 4h)", "(default 0.05)", "(default \"2026-01-01T00:00:00Z\")",
        "(default \"loopback\")", "(default 10250)", "(default 1s)", "(default 10000)",
        "(default true)"}) {
    EXPECT_NE(help.find(shown), std::string::npos) << shown;
  }
  absl::StatusOr<SimulatorFlags> f = ParseSimulatorFlags({"--nodes=x", "--help"});
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->help);
}

TEST(SimulatorFlagsTest, ParsesTheHollowNodeFlagsAndRefusesWhatFakesAnApiServer) {
  absl::StatusOr<SimulatorFlags> f = ParseSimulatorFlags(
      {"--hollow-apiserver=https://127.0.0.1:6443", "--hollow-ca-file=ca.crt",
       "--hollow-client-cert-file=admin.crt", "--hollow-client-key-file=admin.key",
       "--hollow-token-file=token", "--hollow-lease-renew-interval=2s"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->options.hollow_apiserver, "https://127.0.0.1:6443");
  EXPECT_EQ(f->options.hollow_ca_file, "ca.crt");
  EXPECT_EQ(f->options.hollow_client_cert_file, "admin.crt");
  EXPECT_EQ(f->options.hollow_client_key_file, "admin.key");
  EXPECT_EQ(f->options.hollow_token_file, "token");
  EXPECT_EQ(f->options.hollow_lease_renew_interval, std::chrono::seconds(2));
  EXPECT_TRUE(f->options.Validate().ok());
  SimulatorOptions plain = f->options;
  plain.hollow_apiserver = "http://127.0.0.1:8080";
  EXPECT_EQ(plain.Validate().code(), absl::StatusCode::kInvalidArgument);
  SimulatorOptions with_users = f->options;
  with_users.users_file = "users.yaml";
  EXPECT_NE(std::string(with_users.Validate().message()).find("fakes no API server"),
            std::string::npos);
  SimulatorOptions never = f->options;
  never.hollow_lease_renew_interval = Duration::zero();
  EXPECT_FALSE(never.Validate().ok());
}

TEST(SimulatorFlagsTest, ParsesThePodResourcesFlags) {
  absl::StatusOr<SimulatorFlags> f = ParseSimulatorFlags(
      {"--podresources-dir=/run/sim", "--podresources-faults=node-0001=absent,node-0002=no-get",
       "--podresources-slow-delay=3s"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->options.podresources_dir, "/run/sim");
  EXPECT_EQ(f->options.podresources_faults.at("node-0001"), PodResourcesFault::kAbsent);
  EXPECT_EQ(f->options.podresources_faults.at("node-0002"), PodResourcesFault::kNoGet);
  EXPECT_EQ(f->options.podresources_slow_delay, std::chrono::seconds(3));
  // Off by default.
  absl::StatusOr<SimulatorFlags> defaults = ParseSimulatorFlags({});
  ASSERT_TRUE(defaults.ok());
  EXPECT_TRUE(defaults->options.podresources_dir.empty());
  EXPECT_FALSE(defaults->options.model.node_topology);
}

TEST(FaultsTest, ParsesAndRejectsPodResourcesFaultNames) {
  EXPECT_EQ(*ParsePodResourcesFault(" no-allocatable\n"), PodResourcesFault::kNoAllocatable);
  EXPECT_EQ(*ParsePodResourcesFault("slow"), PodResourcesFault::kSlow);
  EXPECT_EQ(PodResourcesFaultName(PodResourcesFault::kNoGet), "no-get");
  EXPECT_FALSE(ParsePodResourcesFault("timeout").ok());
  EXPECT_FALSE(ParsePodResourcesFaultList("node-0001").ok());
  PodResourcesFaultTable table;
  table.Set("node-0001", PodResourcesFault::kAbsent);
  EXPECT_EQ(table.Get("node-0001"), PodResourcesFault::kAbsent);
  table.Set("node-0001", PodResourcesFault::kNone);
  EXPECT_TRUE(table.All().empty());
}

TEST(FaultsTest, ParsesAndRejectsFaultNames) {
  EXPECT_EQ(*ParseFault(" slowdrip\n"), Fault::kSlowdrip);
  EXPECT_EQ(*ParseFault("zero-timestamp"), Fault::kZeroTimestamp);
  EXPECT_EQ(FaultName(Fault::kZeroTimestamp), "zero-timestamp");
  EXPECT_EQ(ParseFaultList("node-0001=zero-timestamp")->at("node-0001"), Fault::kZeroTimestamp);
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
