// The simulator's podresources sockets through a real gRPC client (kubestat's podresources
// client, as the node agent uses it): List, GetAllocatableResources and Get agree with the
// pods the node's kubelet reports, and each fault (absent, no-allocatable, no-get, slow) and
// a restart look to the client as they would with a real kubelet.
// cpprestsdk would otherwise define a U() macro that breaks GoogleTest.
#define _TURN_OFF_PLATFORM_STRING
#include <cpprest/http_client.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "kubestat/core/clock.h"
#include "kubestat/podresources/client.h"
#include "kubestat/sim/simulator.h"
#include "kubestat/sim/topology.h"
#include "kubestat/testing/temp_dir.h"

namespace kubestat::sim {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// 2026-11-21T10:00:00Z
const Timestamp kT0 = Timestamp(std::chrono::seconds(1795255200));

class PodResourcesSocketTest : public ::testing::Test {
 protected:
  void Start(std::map<std::string, PodResourcesFault> faults = {}) {
    SimulatorOptions o;
    o.model.nodes = 3;
    o.model.pods_per_node = 30;
    o.kubelet_address_mode = KubeletAddressMode::kPorts;
    o.kubelet_port = 0;
    o.tick_interval = Duration::zero();
    o.podresources_dir = dir_.path().string();
    o.podresources_faults = std::move(faults);
    o.podresources_slow_delay = std::chrono::seconds(2);
    sim_ = std::make_unique<Simulator>(o, clock_);
    absl::Status started = sim_->Start();
    ASSERT_TRUE(started.ok()) << started;
  }

  std::unique_ptr<podresources::PodResourcesClient> Client(
      int node, absl::Duration timeout = absl::Seconds(10)) {
    podresources::ClientOptions options;
    options.socket_path = sim_->podresources_socket(node);
    options.call_timeout = timeout;
    auto client = podresources::PodResourcesClient::Create(options);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }

  FakeClock clock_{kT0};
  testing::TempDir dir_{"kubestat-podres"};
  std::unique_ptr<Simulator> sim_;
};

TEST_F(PodResourcesSocketTest, ListHasEveryPodTheKubeletRunsWithItsAssignments) {
  Start();
  auto client = Client(1);
  absl::StatusOr<std::vector<podresources::PodResources>> pods = client->List();
  ASSERT_TRUE(pods.ok()) << pods.status();
  const ClusterModel& model = sim_->model();
  ASSERT_EQ(pods->size(), 30u);
  const NodeAssignments given = AssignmentsOf(model, 1);
  int pinned = 0;
  for (int slot = 0; slot < 30; ++slot) {
    const PodInfo pod = model.Pod(1, slot, kT0);
    const podresources::PodResources& got = (*pods)[static_cast<size_t>(slot)];
    EXPECT_EQ(got.name, pod.name);
    EXPECT_EQ(got.namespace_name, pod.namespace_name);
    ASSERT_EQ(got.containers.size(), pod.containers.size());
    for (size_t c = 0; c < pod.containers.size(); ++c) {
      EXPECT_EQ(got.containers[c].name, pod.containers[c].name);
      EXPECT_THAT(got.containers[c].cpu_ids, ElementsAreArray(given[slot][c].cpu_ids));
      if (!got.containers[c].cpu_ids.empty()) ++pinned;
    }
  }
  EXPECT_GT(pinned, 0);

  // Pods churn (a 4h mean lifetime): ten hours on, List names the pods running then, and
  // each slot's replacement has what its predecessor had.
  clock_.Advance(std::chrono::hours(10));
  pods = client->List();
  ASSERT_TRUE(pods.ok()) << pods.status();
  int renamed = 0;
  for (int slot = 0; slot < 30; ++slot) {
    const PodInfo pod = model.Pod(1, slot, clock_.Now());
    const podresources::PodResources& got = (*pods)[static_cast<size_t>(slot)];
    EXPECT_EQ(got.name, pod.name);
    if (pod.name != model.Pod(1, slot, kT0).name) ++renamed;
    for (size_t c = 0; c < pod.containers.size(); ++c) {
      EXPECT_THAT(got.containers[c].cpu_ids, ElementsAreArray(given[slot][c].cpu_ids));
    }
  }
  EXPECT_GT(renamed, 0);
}

TEST_F(PodResourcesSocketTest, AllocatableIsTheNodesTopology) {
  Start();
  absl::StatusOr<podresources::AllocatableResources> got = Client(2)->GetAllocatableResources();
  ASSERT_TRUE(got.ok()) << got.status();
  const NodeTopology topology = TopologyOf(sim_->model(), 2);
  EXPECT_THAT(got->cpu_ids, ElementsAreArray(topology.allocatable_cpus));
  ASSERT_EQ(got->memory.size(), 2u);
  EXPECT_EQ(got->memory[0].size_bytes + got->memory[1].size_bytes,
            static_cast<uint64_t>(sim_->model().node(2).memory_allocatable_bytes));
  ASSERT_EQ(got->devices.size(), 2u);
  EXPECT_EQ(got->devices[0].resource_name, "nvidia.com/gpu");
  EXPECT_EQ(got->devices[0].device_ids.size() + got->devices[1].device_ids.size(), 4u);
}

TEST_F(PodResourcesSocketTest, GetAnswersOnePodAndTheKubeletsErrorForAnUnknownOne) {
  Start();
  auto client = Client(0);
  const PodInfo pod = sim_->model().Pod(0, 3, kT0);
  absl::StatusOr<podresources::PodResources> got = client->Get(pod.namespace_name, pod.name);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->name, pod.name);
  EXPECT_EQ(got->containers.size(), pod.containers.size());
  absl::StatusOr<podresources::PodResources> missing = client->Get("shop", "no-such-pod");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  EXPECT_THAT(missing.status().message(), HasSubstr("pod no-such-pod in namespace shop not found"));
}

TEST_F(PodResourcesSocketTest, OlderKubeletsLackMethods) {
  Start(
      {{"node-0001", PodResourcesFault::kNoAllocatable}, {"node-0002", PodResourcesFault::kNoGet}});
  auto old = Client(1);
  EXPECT_TRUE(old->List().ok());
  absl::StatusOr<podresources::AllocatableResources> allocatable = old->GetAllocatableResources();
  EXPECT_EQ(allocatable.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(
      allocatable.status().message(),
      HasSubstr("unknown method GetAllocatableResources for service v1.PodResourcesLister"));
  EXPECT_EQ(old->Get("shop", "x").status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(old->stats().unimplemented, 2u);

  auto newer = Client(2);
  EXPECT_TRUE(newer->GetAllocatableResources().ok());
  EXPECT_EQ(newer->Get("shop", "x").status().code(), absl::StatusCode::kUnimplemented);
}

TEST_F(PodResourcesSocketTest, AbsentSocketComesBackAsANewSocket) {
  Start({{"node-0000", PodResourcesFault::kAbsent}});
  const std::string path = sim_->podresources_socket(0);
  struct stat st {};
  EXPECT_NE(::stat(path.c_str(), &st), 0) << path << " exists";
  auto client = Client(0);
  EXPECT_EQ(client->List().status().code(), absl::StatusCode::kUnavailable);

  sim_->podresources_faults().Set("node-0000", PodResourcesFault::kNone);
  ASSERT_TRUE(sim_->ApplyPodResourcesFault(0).ok());
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_TRUE(client->List().ok());

  // A restart replaces the socket file (made anew: the file system may hand out the same
  // inode again, never with the same change time), and the same client reaches it.
  const struct stat before = st;
  ASSERT_TRUE(sim_->RestartPodResources(0).ok());
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(st.st_ino != before.st_ino || st.st_ctim.tv_sec != before.st_ctim.tv_sec ||
              st.st_ctim.tv_nsec != before.st_ctim.tv_nsec);
  absl::StatusOr<std::vector<podresources::PodResources>> pods;
  for (int attempt = 0; attempt < 50 && !pods.ok(); ++attempt) pods = client->List();
  EXPECT_TRUE(pods.ok()) << pods.status();
}

TEST_F(PodResourcesSocketTest, SlowNodeHoldsItsAnswers) {
  Start({{"node-0002", PodResourcesFault::kSlow}});
  // The fault holds answers for 2s of the clock's monotonic time: the fake clock does not
  // move, so the client's deadline ends the call.
  auto client = Client(2, absl::Milliseconds(300));
  absl::StatusOr<std::vector<podresources::PodResources>> pods = client->List();
  EXPECT_EQ(pods.status().code(), absl::StatusCode::kDeadlineExceeded) << pods.status();
  EXPECT_TRUE(Client(1, absl::Milliseconds(300))->List().ok());
  // Once the clock passes the delay, a held answer is sent.
  auto patient = Client(2, absl::Seconds(20));
  std::thread advance([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    clock_.Advance(std::chrono::seconds(3));
  });
  pods = patient->List();
  advance.join();
  EXPECT_TRUE(pods.ok()) << pods.status();
}

TEST_F(PodResourcesSocketTest, ControlApiSetsFaultsAndRestartsSockets) {
  Start();
  using web::http::methods;
  web::http::client::http_client api(sim_->apiserver_url());
  auto put =
      api.request(methods::PUT, "/sim/v1/podresources-faults/node-0001", "no-allocatable").get();
  ASSERT_EQ(put.status_code(), 200);
  EXPECT_EQ(sim_->podresources_faults().Get("node-0001"), PodResourcesFault::kNoAllocatable);
  EXPECT_EQ(Client(1)->GetAllocatableResources().status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(api.request(methods::PUT, "/sim/v1/podresources-faults/node-0001", "explode")
                .get()
                .status_code(),
            400);
  EXPECT_EQ(api.request(methods::PUT, "/sim/v1/podresources-faults/node-9999", "slow")
                .get()
                .status_code(),
            404);
  const std::string listed =
      api.request(methods::GET, "/sim/v1/podresources-faults").get().extract_utf8string(true).get();
  EXPECT_EQ(listed, "{\"node-0001\":\"no-allocatable\"}");

  // absent removes the socket; a restart of a served node makes a new one.
  ASSERT_EQ(api.request(methods::PUT, "/sim/v1/podresources-faults/node-0002", "absent")
                .get()
                .status_code(),
            200);
  struct stat st {};
  EXPECT_NE(::stat(sim_->podresources_socket(2).c_str(), &st), 0);
  ASSERT_EQ(::stat(sim_->podresources_socket(0).c_str(), &st), 0);
  const struct stat before = st;
  ASSERT_EQ(
      api.request(methods::POST, "/sim/v1/podresources/node-0000/restart").get().status_code(),
      200);
  ASSERT_EQ(::stat(sim_->podresources_socket(0).c_str(), &st), 0);
  EXPECT_TRUE(st.st_ino != before.st_ino || st.st_ctim.tv_nsec != before.st_ctim.tv_nsec ||
              st.st_ctim.tv_sec != before.st_ctim.tv_sec);
}

TEST(PodResourcesControlTest, WithoutSocketsTheControlApiIsNotFound) {
  FakeClock clock(kT0);
  SimulatorOptions o;
  o.model.nodes = 1;
  o.model.pods_per_node = 2;
  o.kubelet_address_mode = KubeletAddressMode::kPorts;
  o.kubelet_port = 0;
  o.tick_interval = Duration::zero();
  Simulator sim(o, clock);
  ASSERT_TRUE(sim.Start().ok());
  EXPECT_EQ(sim.podresources_socket(0), "");
  web::http::client::http_client api(sim.apiserver_url());
  EXPECT_EQ(api.request(web::http::methods::GET, "/sim/v1/podresources-faults").get().status_code(),
            404);
  // The model is as before: no Guaranteed pods, no GPUs.
  EXPECT_EQ(sim.model().node(0).gpus, 0);
}

}  // namespace
}  // namespace kubestat::sim
