// PodResourcesPoller against the simulator's podresources sockets: what a healthy kubelet,
// an older one, a missing socket, a slow kubelet and a restarted one look like in the
// document and the counters. No fault ends the process or the loop.
#include "kubestat/agent/poller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "kubestat/sim/simulator.h"
#include "kubestat/sim/topology.h"
#include "kubestat/testing/poll.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::agent {
namespace {

using sim::PodResourcesFault;
using ::testing::HasSubstr;

// 2026-11-21T10:00:00Z
const Timestamp kT0 = Timestamp(std::chrono::seconds(1795255200));

class PollerTest : public ::testing::Test {
 protected:
  void StartSim(std::map<std::string, PodResourcesFault> faults = {}) {
    sim::SimulatorOptions o;
    o.model.nodes = 3;
    o.model.pods_per_node = 30;
    o.kubelet_address_mode = sim::KubeletAddressMode::kPorts;
    o.kubelet_port = 0;
    o.tick_interval = Duration::zero();
    o.podresources_dir = dir_.path().string();
    o.podresources_faults = std::move(faults);
    sim_ = std::make_unique<sim::Simulator>(o, clock_);
    absl::Status started = sim_->Start();
    ASSERT_TRUE(started.ok()) << started;
  }

  std::unique_ptr<PodResourcesPoller> Poller(int node, Duration timeout = std::chrono::seconds(2)) {
    PollerOptions options;
    options.node_name = sim_->model().node(node).name;
    options.client.socket_path = sim_->podresources_socket(node);
    options.client.call_timeout = absl::FromChrono(timeout);
    EXPECT_TRUE(options.Validate().ok()) << options.Validate();
    return std::make_unique<PodResourcesPoller>(options, clock_, registry_);
  }

  // The value of `series` (labels as the exposition orders them), or -1 when absent.
  double Metric(const std::string& series) {
    const std::string text = prometheus::TextSerializer().Serialize(registry_.Collect());
    const size_t at = text.find("\n" + series + " ");
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + series.size() + 2));
  }

  FakeClock clock_{kT0};
  testing::TempDir dir_{"kubestat-agent"};
  prometheus::Registry registry_;
  std::unique_ptr<sim::Simulator> sim_;
};

TEST_F(PollerTest, BeforeTheFirstPollEveryMethodIsPending) {
  StartSim();
  auto poller = Poller(0);
  auto doc = poller->Latest();
  EXPECT_EQ(doc->node_name, "node-0000");
  EXPECT_EQ(doc->socket, sim_->podresources_socket(0));
  EXPECT_EQ(doc->list.code, "Pending");
  EXPECT_FALSE(doc->pods.has_value());
  EXPECT_FALSE(poller->LastPollStart().has_value());
}

TEST_F(PollerTest, HealthyKubeletGivesPodsAllocatableAndGet) {
  StartSim();
  auto poller = Poller(1);
  poller->PollOnce();
  auto doc = poller->Latest();
  EXPECT_TRUE(doc->list.ok()) << doc->list.message;
  EXPECT_TRUE(doc->allocatable_call.ok()) << doc->allocatable_call.message;
  EXPECT_TRUE(doc->get.ok()) << doc->get.message;
  EXPECT_EQ(doc->time, kT0);
  EXPECT_EQ(doc->list.last_success, kT0);
  ASSERT_TRUE(doc->pods.has_value());
  ASSERT_EQ(doc->pods->size(), 30u);
  const sim::NodeAssignments given = sim::AssignmentsOf(sim_->model(), 1);
  int pinned = 0;
  for (size_t slot = 0; slot < 30; ++slot) {
    const metrics_api::PodAssignment& pod = (*doc->pods)[slot];
    EXPECT_EQ(pod.name, sim_->model().Pod(1, static_cast<int>(slot), kT0).name);
    for (size_t c = 0; c < pod.containers.size(); ++c) {
      EXPECT_EQ(pod.containers[c].exclusive.cpu_ids, given[slot][c].cpu_ids);
      if (!pod.containers[c].exclusive.cpu_ids.empty()) ++pinned;
    }
  }
  EXPECT_GT(pinned, 0);
  ASSERT_TRUE(doc->allocatable.has_value());
  EXPECT_EQ(doc->allocatable->cpu_ids, sim::TopologyOf(sim_->model(), 1).allocatable_cpus);
  EXPECT_EQ(doc->allocatable->DeviceCounts().at("nvidia.com/gpu"), 4);
  EXPECT_EQ(Metric("kubestat_node_agent_calls_total{code=\"OK\",method=\"List\"}"), 1);
  EXPECT_EQ(Metric("kubestat_node_agent_pods"), 30);
  EXPECT_EQ(Metric("kubestat_node_agent_polls_total"), 1);
}

TEST_F(PollerTest, OlderKubeletWithoutGetAllocatableResourcesIsReportedAsSuch) {
  StartSim({{"node-0002", PodResourcesFault::kNoAllocatable}});
  auto poller = Poller(2);
  poller->PollOnce();
  poller->PollOnce();
  auto doc = poller->Latest();
  EXPECT_TRUE(doc->list.ok());
  ASSERT_TRUE(doc->pods.has_value());
  EXPECT_EQ(doc->allocatable_call.code, "Unimplemented");
  EXPECT_THAT(doc->allocatable_call.message,
              HasSubstr("does not implement GetAllocatableResources"));
  EXPECT_FALSE(doc->allocatable_call.last_success.has_value());
  EXPECT_FALSE(doc->allocatable.has_value());
  EXPECT_EQ(doc->get.code, "Unimplemented");
  EXPECT_EQ(Metric("kubestat_node_agent_calls_total{code=\"Unimplemented\",method="
                   "\"GetAllocatableResources\"}"),
            2);
}

TEST_F(PollerTest, MissingSocketIsUnavailableNamingThePathThenAppears) {
  StartSim({{"node-0000", PodResourcesFault::kAbsent}});
  auto poller = Poller(0);
  poller->PollOnce();
  auto doc = poller->Latest();
  EXPECT_EQ(doc->list.code, "Unavailable");
  EXPECT_THAT(doc->list.message, HasSubstr(sim_->podresources_socket(0)));
  EXPECT_EQ(doc->allocatable_call.code, "Unavailable");
  EXPECT_EQ(doc->get.code, "Pending");  // no pod to ask for
  EXPECT_FALSE(doc->pods.has_value());

  sim_->podresources_faults().Set("node-0000", PodResourcesFault::kNone);
  ASSERT_TRUE(sim_->ApplyPodResourcesFault(0).ok());
  poller->PollOnce();
  EXPECT_TRUE(poller->Latest()->list.ok()) << poller->Latest()->list.message;
  EXPECT_EQ(Metric("kubestat_node_agent_socket_changes_total{change=\"appeared\"}"), 1);
}

TEST_F(PollerTest, KubeletThatWentAwayKeepsWhatWasKnownAndSaysSo) {
  StartSim();
  auto poller = Poller(1);
  poller->PollOnce();
  clock_.Advance(std::chrono::seconds(10));
  sim_->podresources_faults().Set("node-0001", PodResourcesFault::kAbsent);
  ASSERT_TRUE(sim_->ApplyPodResourcesFault(1).ok());
  poller->PollOnce();
  auto doc = poller->Latest();
  EXPECT_EQ(doc->list.code, "Unavailable");
  EXPECT_EQ(doc->list.last_success, kT0);  // what the pods are from
  ASSERT_TRUE(doc->pods.has_value());
  EXPECT_EQ(doc->pods->size(), 30u);
  EXPECT_EQ(Metric("kubestat_node_agent_socket_changes_total{change=\"removed\"}"), 1);
}

TEST_F(PollerTest, RestartedKubeletsNewSocketIsFollowed) {
  StartSim();
  auto poller = Poller(0);
  poller->PollOnce();
  ASSERT_TRUE(sim_->RestartPodResources(0).ok());
  poller->PollOnce();
  auto doc = poller->Latest();
  EXPECT_TRUE(doc->list.ok()) << doc->list.message;
  EXPECT_TRUE(doc->allocatable_call.ok()) << doc->allocatable_call.message;
  EXPECT_EQ(Metric("kubestat_node_agent_socket_changes_total{change=\"replaced\"}"), 1);
}

TEST_F(PollerTest, SlowKubeletTimesOutEachCall) {
  StartSim({{"node-0002", PodResourcesFault::kSlow}});
  // The sim holds answers for 10s of its (fake, still) clock: every call meets its deadline.
  auto poller = Poller(2, std::chrono::milliseconds(200));
  poller->PollOnce();
  auto doc = poller->Latest();
  EXPECT_EQ(doc->list.code, "DeadlineExceeded");
  EXPECT_EQ(doc->allocatable_call.code, "DeadlineExceeded");
  EXPECT_EQ(Metric("kubestat_node_agent_calls_total{code=\"DeadlineExceeded\",method=\"List\"}"),
            1);
}

TEST_F(PollerTest, LoopPollsEveryResolutionOfTheClock) {
  StartSim();
  PollerOptions options;
  options.node_name = "node-0000";
  options.client.socket_path = sim_->podresources_socket(0);
  options.client.call_timeout = absl::Seconds(1);
  options.resolution = std::chrono::seconds(10);
  PodResourcesPoller poller(options, clock_, registry_);
  poller.Start();
  // The first poll has ended (advancing the clock during it would skip the next one).
  ASSERT_TRUE(testing::PollUntil([&] { return poller.Latest()->time.has_value(); },
                                 std::chrono::seconds(10)));
  EXPECT_EQ(Metric("kubestat_node_agent_polls_total"), 1);
  clock_.Advance(std::chrono::seconds(10));
  ASSERT_TRUE(testing::PollUntil([&] { return Metric("kubestat_node_agent_polls_total") == 2; },
                                 std::chrono::seconds(10)));
  poller.Stop();
  EXPECT_TRUE(poller.Latest()->list.ok());
}

TEST(PollerOptionsTest, ValidationNamesTheField) {
  PollerOptions options;
  EXPECT_THAT(options.Validate().message(), HasSubstr("node_name"));
  options.node_name = "n";
  options.client.call_timeout = absl::Seconds(4);
  EXPECT_THAT(options.Validate().message(), HasSubstr("call_timeout"));
  options.client.call_timeout = absl::Seconds(3);
  EXPECT_TRUE(options.Validate().ok()) << options.Validate();
}

}  // namespace
}  // namespace kubestat::agent
