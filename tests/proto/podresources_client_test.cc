// PodResourcesClient against a fake kubelet: a real gRPC server implementing the same
// v1.PodResourcesLister service on a unix socket in a temporary directory.
#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "kubestat/podresources/client.h"
#include "kubestat/testing/temp_dir.h"
#include "podresources/v1/api.grpc.pb.h"

namespace kubestat::podresources {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Serves canned responses, or a canned error, or stalls until the call is cancelled.
class FakeKubelet final : public v1::PodResourcesLister::Service {
 public:
  v1::ListPodResourcesResponse list_response;
  v1::AllocatableResourcesResponse allocatable_response;
  grpc::Status error = grpc::Status::OK;  // returned instead of a response when not OK
  bool stall = false;                     // hold every call until the client gives up
  std::atomic<int> calls{0};

  grpc::Status List(grpc::ServerContext* context, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override {
    if (grpc::Status held = Hold(context); !held.ok()) return held;
    *response = list_response;
    return grpc::Status::OK;
  }

  grpc::Status GetAllocatableResources(grpc::ServerContext* context,
                                       const v1::AllocatableResourcesRequest*,
                                       v1::AllocatableResourcesResponse* response) override {
    if (grpc::Status held = Hold(context); !held.ok()) return held;
    *response = allocatable_response;
    return grpc::Status::OK;
  }

  // The pod of list_response with the asked name and namespace; as the kubelet, a plain
  // error (UNKNOWN) for another.
  grpc::Status Get(grpc::ServerContext* context, const v1::GetPodResourcesRequest* request,
                   v1::GetPodResourcesResponse* response) override {
    if (grpc::Status held = Hold(context); !held.ok()) return held;
    for (const v1::PodResources& pod : list_response.pod_resources()) {
      if (pod.name() == request->pod_name() && pod.namespace_() == request->pod_namespace()) {
        *response->mutable_pod_resources() = pod;
        return grpc::Status::OK;
      }
    }
    return grpc::Status(grpc::StatusCode::UNKNOWN, "pod " + request->pod_name() + " in namespace " +
                                                       request->pod_namespace() + " not found");
  }

  // Lets stalled calls finish (the fixture calls it before shutting the server down).
  void Release() {
    if (!released_.HasBeenNotified()) released_.Notify();
  }

 private:
  grpc::Status Hold(grpc::ServerContext* context) {
    calls.fetch_add(1);
    if (stall) {
      // Polls for the client's cancellation; the test's assertion is on the status only.
      while (!context->IsCancelled() &&
             !released_.WaitForNotificationWithTimeout(absl::Milliseconds(5))) {
      }
      return grpc::Status(grpc::StatusCode::CANCELLED, "stalled call released");
    }
    return error;
  }

  absl::Notification released_;
};

class PodResourcesClientTest : public ::testing::Test {
 protected:
  void TearDown() override {
    fake_.Release();
    if (server_) server_->Shutdown();
  }

  void StartFakeKubelet() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials());
    builder.SetMaxSendMessageSize(64 * 1024 * 1024);
    builder.RegisterService(&fake_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr) << "cannot listen on " << socket_path_;
  }

  std::unique_ptr<PodResourcesClient> NewClient(ClientOptions options = {}) {
    if (options.socket_path == kDefaultSocketPath) options.socket_path = socket_path_;
    absl::StatusOr<std::unique_ptr<PodResourcesClient>> client =
        PodResourcesClient::Create(options);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }

  testing::TempDir dir_{"kubestat-podres"};
  std::string socket_path_ = dir_.File("kubelet.sock");
  FakeKubelet fake_;
  std::unique_ptr<grpc::Server> server_;
};

void AddNuma(v1::TopologyInfo* topology, int64_t id) { topology->add_nodes()->set_id(id); }

// Three pods as a kubelet with the static CPU manager, device plugins, the memory manager,
// DRA and pod-level resources would report them.
v1::ListPodResourcesResponse ThreePods() {
  v1::ListPodResourcesResponse response;

  v1::PodResources* db = response.add_pod_resources();
  db->set_name("db-0");
  db->set_namespace_("shop");
  v1::ContainerResources* postgres = db->add_containers();
  postgres->set_name("postgres");
  for (int64_t cpu : {2, 3, 10, 11}) postgres->add_cpu_ids(cpu);
  v1::ContainerDevices* gpu = postgres->add_devices();
  gpu->set_resource_name("nvidia.com/gpu");
  gpu->add_device_ids("GPU-0f1e");
  gpu->add_device_ids("GPU-77aa");
  AddNuma(gpu->mutable_topology(), 0);
  v1::ContainerMemory* memory = postgres->add_memory();
  memory->set_memory_type("memory");
  memory->set_size(uint64_t{2} << 30);
  AddNuma(memory->mutable_topology(), 0);
  AddNuma(memory->mutable_topology(), 1);
  v1::ContainerMemory* huge = postgres->add_memory();
  huge->set_memory_type("hugepages-2Mi");
  huge->set_size(uint64_t{512} << 20);
  AddNuma(huge->mutable_topology(), 1);
  v1::ContainerResources* exporter = db->add_containers();
  exporter->set_name("exporter");

  v1::PodResources* trainer = response.add_pod_resources();
  trainer->set_name("trainer-7");
  trainer->set_namespace_("ml");
  trainer->add_cpu_ids(4);
  trainer->add_cpu_ids(5);
  v1::ContainerMemory* pod_memory = trainer->add_memory();
  pod_memory->set_memory_type("memory");
  pod_memory->set_size(uint64_t{1} << 30);
  AddNuma(pod_memory->mutable_topology(), 1);
  v1::ContainerResources* worker = trainer->add_containers();
  worker->set_name("worker");
  v1::DynamicResource* claim = worker->add_dynamic_resources();
  claim->set_claim_name("gpu-claim");
  claim->set_claim_namespace("ml");
  v1::ClaimResource* shared = claim->add_claim_resources();
  shared->add_cdi_devices()->set_name("vendor.com/gpu=gpudevice1");
  shared->set_driver_name("gpu.vendor.com");
  shared->set_pool_name("node-a");
  shared->set_device_name("gpu-1");
  shared->set_share_id("7d5c");
  v1::ClaimResource* whole = claim->add_claim_resources();
  whole->add_cdi_devices()->set_name("vendor.com/gpu=gpudevice2");
  whole->add_cdi_devices()->set_name("vendor.com/gpu=gpudevice2-mig");
  whole->set_driver_name("gpu.vendor.com");
  whole->set_pool_name("node-a");
  whole->set_device_name("gpu-2");

  v1::PodResources* web = response.add_pod_resources();
  web->set_name("web-1");
  web->set_namespace_("shop");
  web->add_containers()->set_name("app");
  return response;
}

TEST_F(PodResourcesClientTest, ListReturnsEveryPodContainerAndResourceTheKubeletSent) {
  fake_.list_response = ThreePods();
  StartFakeKubelet();
  std::unique_ptr<PodResourcesClient> client = NewClient();
  ASSERT_NE(client, nullptr);

  absl::StatusOr<std::vector<PodResources>> pods = client->List();
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 3u);

  const PodResources& db = (*pods)[0];
  EXPECT_EQ(db.name, "db-0");
  EXPECT_EQ(db.namespace_name, "shop");
  EXPECT_THAT(db.cpu_ids, IsEmpty());
  ASSERT_EQ(db.containers.size(), 2u);
  const ContainerResources& postgres = db.containers[0];
  EXPECT_EQ(postgres.name, "postgres");
  EXPECT_THAT(postgres.cpu_ids, ElementsAre(2, 3, 10, 11));
  ASSERT_EQ(postgres.devices.size(), 1u);
  EXPECT_EQ(postgres.devices[0].resource_name, "nvidia.com/gpu");
  EXPECT_THAT(postgres.devices[0].device_ids, ElementsAre("GPU-0f1e", "GPU-77aa"));
  EXPECT_THAT(postgres.devices[0].numa_nodes, ElementsAre(0));
  ASSERT_EQ(postgres.memory.size(), 2u);
  EXPECT_EQ(postgres.memory[0].memory_type, "memory");
  EXPECT_EQ(postgres.memory[0].size_bytes, uint64_t{2147483648});
  EXPECT_THAT(postgres.memory[0].numa_nodes, ElementsAre(0, 1));
  EXPECT_EQ(postgres.memory[1].memory_type, "hugepages-2Mi");
  EXPECT_EQ(postgres.memory[1].size_bytes, uint64_t{536870912});
  EXPECT_THAT(postgres.memory[1].numa_nodes, ElementsAre(1));
  EXPECT_THAT(postgres.dynamic_resources, IsEmpty());
  EXPECT_EQ(db.containers[1], ContainerResources{.name = "exporter"});

  const PodResources& trainer = (*pods)[1];
  EXPECT_EQ(trainer.name, "trainer-7");
  EXPECT_EQ(trainer.namespace_name, "ml");
  EXPECT_THAT(trainer.cpu_ids, ElementsAre(4, 5));
  EXPECT_EQ(trainer.memory,
            (std::vector<MemoryBlock>{
                {.memory_type = "memory", .size_bytes = 1073741824, .numa_nodes = {1}}}));
  ASSERT_EQ(trainer.containers.size(), 1u);
  ASSERT_EQ(trainer.containers[0].dynamic_resources.size(), 1u);
  const DynamicResource& claim = trainer.containers[0].dynamic_resources[0];
  EXPECT_EQ(claim.claim_name, "gpu-claim");
  EXPECT_EQ(claim.claim_namespace, "ml");
  ASSERT_EQ(claim.claim_resources.size(), 2u);
  EXPECT_EQ(claim.claim_resources[0], (ClaimResource{.cdi_devices = {"vendor.com/gpu=gpudevice1"},
                                                     .driver_name = "gpu.vendor.com",
                                                     .pool_name = "node-a",
                                                     .device_name = "gpu-1",
                                                     .share_id = "7d5c"}));
  EXPECT_THAT(claim.claim_resources[1].cdi_devices,
              ElementsAre("vendor.com/gpu=gpudevice2", "vendor.com/gpu=gpudevice2-mig"));
  EXPECT_EQ(claim.claim_resources[1].device_name, "gpu-2");
  EXPECT_FALSE(claim.claim_resources[1].share_id.has_value());

  EXPECT_EQ((*pods)[2], (PodResources{.name = "web-1",
                                      .namespace_name = "shop",
                                      .containers = {ContainerResources{.name = "app"}}}));
  EXPECT_EQ(client->stats().calls, 1u);
  EXPECT_EQ(client->stats().failures, 0u);
}

TEST_F(PodResourcesClientTest, GetAllocatableResourcesReturnsCpusDevicesAndMemory) {
  v1::AllocatableResourcesResponse& allocatable = fake_.allocatable_response;
  for (int64_t cpu = 2; cpu < 16; ++cpu) allocatable.add_cpu_ids(cpu);
  v1::ContainerDevices* gpus = allocatable.add_devices();
  gpus->set_resource_name("nvidia.com/gpu");
  gpus->add_device_ids("GPU-0f1e");
  AddNuma(gpus->mutable_topology(), 0);
  v1::ContainerDevices* nics = allocatable.add_devices();
  nics->set_resource_name("intel.com/sriov");
  nics->add_device_ids("0000:3b:02.0");
  nics->add_device_ids("0000:3b:02.1");
  AddNuma(nics->mutable_topology(), 1);
  for (int64_t numa : {0, 1}) {
    v1::ContainerMemory* memory = allocatable.add_memory();
    memory->set_memory_type("memory");
    memory->set_size(uint64_t{63} << 30);
    AddNuma(memory->mutable_topology(), numa);
  }
  StartFakeKubelet();
  std::unique_ptr<PodResourcesClient> client = NewClient();
  ASSERT_NE(client, nullptr);

  absl::StatusOr<AllocatableResources> got = client->GetAllocatableResources();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(got->cpu_ids, ElementsAre(2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  EXPECT_EQ(got->devices,
            (std::vector<Devices>{
                {.resource_name = "nvidia.com/gpu", .device_ids = {"GPU-0f1e"}, .numa_nodes = {0}},
                {.resource_name = "intel.com/sriov",
                 .device_ids = {"0000:3b:02.0", "0000:3b:02.1"},
                 .numa_nodes = {1}}}));
  EXPECT_EQ(got->memory,
            (std::vector<MemoryBlock>{
                {.memory_type = "memory", .size_bytes = 67645734912, .numa_nodes = {0}},
                {.memory_type = "memory", .size_bytes = 67645734912, .numa_nodes = {1}}}));
}

TEST_F(PodResourcesClientTest, EmptyNodeListsNoPods) {
  StartFakeKubelet();
  std::unique_ptr<PodResourcesClient> client = NewClient();
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::vector<PodResources>> pods = client->List();
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_THAT(*pods, IsEmpty());
}

// A List response of about 6 MiB: over gRPC's 4 MiB default, under the client's 16 MiB.
v1::ListPodResourcesResponse LargeResponse() {
  v1::ListPodResourcesResponse response;
  const std::string device_id(100, 'd');
  for (int pod = 0; pod < 600; ++pod) {
    v1::PodResources* p = response.add_pod_resources();
    p->set_name("pod-" + std::to_string(pod));
    p->set_namespace_("load");
    v1::ContainerDevices* devices = p->add_containers()->add_devices();
    devices->set_resource_name("example.com/vf");
    for (int d = 0; d < 100; ++d) devices->add_device_ids(device_id);
  }
  return response;
}

TEST_F(PodResourcesClientTest, ListAcceptsResponsesLargerThanGrpcDefaultLimit) {
  fake_.list_response = LargeResponse();
  ASSERT_GT(fake_.list_response.ByteSizeLong(), size_t{4} << 20);
  StartFakeKubelet();
  std::unique_ptr<PodResourcesClient> client = NewClient();
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::vector<PodResources>> pods = client->List();
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 600u);
  EXPECT_EQ(pods->back().name, "pod-599");
  EXPECT_EQ(pods->back().containers[0].devices[0].device_ids.size(), 100u);
}

TEST_F(PodResourcesClientTest, ResponseOverReceiveLimitNamesTheOption) {
  fake_.list_response = LargeResponse();
  StartFakeKubelet();
  std::unique_ptr<PodResourcesClient> client = NewClient({.max_receive_message_bytes = 1 << 20});
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::vector<PodResources>> pods = client->List();
  EXPECT_EQ(pods.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(pods.status().message(), HasSubstr("max_receive_message_bytes 1048576"));
  EXPECT_EQ(client->stats().rate_limited, 0u);
}

TEST_F(PodResourcesClientTest, MissingSocketIsUnavailableNamingThePath) {
  std::unique_ptr<PodResourcesClient> client = NewClient();
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::vector<PodResources>> pods = client->List();
  EXPECT_EQ(pods.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(pods.status().message(), HasSubstr(socket_path_));
  absl::StatusOr<AllocatableResources> allocatable = client->GetAllocatableResources();
  EXPECT_EQ(allocatable.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(allocatable.status().message(), HasSubstr(socket_path_));
  EXPECT_EQ(client->stats().calls, 2u);
  EXPECT_EQ(client->stats().unavailable, 2u);
  EXPECT_EQ(client->stats().failures, 2u);
}

TEST_F(PodResourcesClientTest, StaleSocketWithoutListenerIsUnavailableNamingThePath) {
  // A socket file left behind by a kubelet that exited: bound, nobody accepting.
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket_path_.c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0)
      << std::strerror(errno);
  ::close(fd);

  std::unique_ptr<PodResourcesClient> client = NewClient();
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::vector<PodResources>> pods = client->List();
  EXPECT_EQ(pods.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(pods.status().message(), HasSubstr(socket_path_));
  EXPECT_EQ(client->stats().unavailable, 1u);
}

TEST_F(PodResourcesClientTest, PathThatIsNotASocketIsUnavailable) {
  std::filesystem::create_directory(socket_path_);
  std::unique_ptr<PodResourcesClient> client = NewClient();
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::vector<PodResources>> pods = client->List();
  EXPECT_EQ(pods.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(pods.status().message(), HasSubstr("not a unix socket"));
}

TEST_F(PodResourcesClientTest, ConnectsWhenTheKubeletStartsAfterTheClient) {
  std::unique_ptr<PodResourcesClient> client = NewClient();
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->List().status().code(), absl::StatusCode::kUnavailable);

  fake_.list_response = ThreePods();
  StartFakeKubelet();
  absl::StatusOr<std::vector<PodResources>> pods = client->List();
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_EQ(pods->size(), 3u);
}

TEST_F(PodResourcesClientTest, RateLimitedCallIsResourceExhaustedAndSaysSo) {
  fake_.error = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "rejected by rate limit");
  StartFakeKubelet();
  std::unique_ptr<PodResourcesClient> client = NewClient();
  ASSERT_NE(client, nullptr);

  absl::StatusOr<std::vector<PodResources>> pods = client->List();
  EXPECT_EQ(pods.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(pods.status().message(), HasSubstr("rejected by rate limit"));
  EXPECT_THAT(pods.status().message(), HasSubstr(socket_path_));
  absl::StatusOr<AllocatableResources> allocatable = client->GetAllocatableResources();
  EXPECT_EQ(allocatable.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(client->stats().rate_limited, 2u);
  EXPECT_EQ(client->stats().failures, 2u);
}

TEST_F(PodResourcesClientTest, StalledKubeletGivesDeadlineExceeded) {
  fake_.stall = true;
  StartFakeKubelet();
  std::unique_ptr<PodResourcesClient> client = NewClient({.call_timeout = absl::Milliseconds(200)});
  ASSERT_NE(client, nullptr);

  absl::StatusOr<std::vector<PodResources>> pods = client->List();
  EXPECT_EQ(pods.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(pods.status().message(), HasSubstr("call_timeout 200ms"));
  EXPECT_THAT(pods.status().message(), HasSubstr(socket_path_));
  EXPECT_EQ(fake_.calls.load(), 1);
  EXPECT_EQ(client->stats().deadline_exceeded, 1u);
}

TEST_F(PodResourcesClientTest, OtherServerErrorsKeepTheirCode) {
  // A kubelet older than 1.21 has no GetAllocatableResources.
  fake_.error = grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "unknown method");
  StartFakeKubelet();
  std::unique_ptr<PodResourcesClient> client = NewClient();
  ASSERT_NE(client, nullptr);
  absl::StatusOr<AllocatableResources> allocatable = client->GetAllocatableResources();
  EXPECT_EQ(allocatable.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(allocatable.status().message(), HasSubstr("GetAllocatableResources"));
  EXPECT_EQ(client->stats().failures, 1u);
  EXPECT_EQ(client->stats().unimplemented, 1u);
}

TEST_F(PodResourcesClientTest, GetReturnsOnePodAndNotFoundForAnother) {
  fake_.list_response = ThreePods();
  StartFakeKubelet();
  std::unique_ptr<PodResourcesClient> client = NewClient();
  ASSERT_NE(client, nullptr);
  absl::StatusOr<PodResources> db = client->Get("shop", "db-0");
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(db->name, "db-0");
  ASSERT_EQ(db->containers.size(), 2u);
  EXPECT_THAT(db->containers[0].cpu_ids, ElementsAre(2, 3, 10, 11));
  absl::StatusOr<PodResources> missing = client->Get("shop", "db-9");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("pod db-9 in namespace shop not found"));
  EXPECT_EQ(client->stats().calls, 2u);
  EXPECT_EQ(client->stats().unimplemented, 0u);
}

TEST_F(PodResourcesClientTest, MethodSwitchedOffByAFeatureGateIsUnimplemented) {
  // A kubelet 1.21-1.22 with KubeletPodResourcesGetAllocatable off answers a plain error.
  fake_.error =
      grpc::Status(grpc::StatusCode::UNKNOWN, "PodResources API GetAllocatableResources disabled");
  StartFakeKubelet();
  std::unique_ptr<PodResourcesClient> client = NewClient();
  ASSERT_NE(client, nullptr);
  absl::StatusOr<AllocatableResources> allocatable = client->GetAllocatableResources();
  EXPECT_EQ(allocatable.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(allocatable.status().message(), HasSubstr("feature gate"));
  EXPECT_EQ(client->stats().unimplemented, 1u);
}

TEST_F(PodResourcesClientTest, ConcurrentCallsFromSeveralThreadsAllSucceed) {
  fake_.list_response = ThreePods();
  StartFakeKubelet();
  std::unique_ptr<PodResourcesClient> client = NewClient();
  ASSERT_NE(client, nullptr);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        absl::StatusOr<std::vector<PodResources>> pods = client->List();
        if (pods.ok() && pods->size() == 3) ok.fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), 40);
  EXPECT_EQ(client->stats().calls, 40u);
}

TEST_F(PodResourcesClientTest, KubeletMethodPathsReachTheService) {
  // What a kubelet routes on: the HTTP/2 :path, independent of any generated stub.
  fake_.list_response = ThreePods();
  StartFakeKubelet();
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel("unix:" + socket_path_, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  grpc::Slice no_bytes("");  // an empty ListPodResourcesRequest is zero bytes
  grpc::ByteBuffer request(&no_bytes, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/v1.PodResourcesLister/List", grpc::StubOptions(), &request, &response,
                 [&done](const grpc::Status& status) { done.set_value(status); });
  grpc::Status status = done.get_future().get();
  ASSERT_TRUE(status.ok()) << status.error_message();

  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  absl::StatusOr<std::vector<PodResources>> pods = DecodeListResponse(bytes);
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 3u);
  EXPECT_EQ((*pods)[1].name, "trainer-7");
}

TEST(ClientOptionsTest, DefaultsAreValidAndPointAtTheKubeletSocket) {
  ClientOptions options;
  EXPECT_TRUE(options.Validate().ok());
  EXPECT_EQ(options.socket_path, "/var/lib/kubelet/pod-resources/kubelet.sock");
  EXPECT_EQ(options.call_timeout, absl::Seconds(10));
  EXPECT_EQ(options.max_receive_message_bytes, 16 * 1024 * 1024);
}

TEST(ClientOptionsTest, InvalidOptionsNameTheField) {
  struct Case {
    ClientOptions options;
    std::string field;
  };
  std::vector<Case> cases = {
      {{.socket_path = ""}, "socket_path"},
      {{.socket_path = "/" + std::string(200, 's')}, "socket_path"},
      {{.call_timeout = absl::ZeroDuration()}, "call_timeout"},
      {{.call_timeout = -absl::Seconds(1)}, "call_timeout"},
      {{.call_timeout = absl::InfiniteDuration()}, "call_timeout"},
      {{.max_receive_message_bytes = 100}, "max_receive_message_bytes"},
  };
  for (const Case& c : cases) {
    absl::Status status = c.options.Validate();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_THAT(status.message(), HasSubstr(c.field));
    absl::StatusOr<std::unique_ptr<PodResourcesClient>> client =
        PodResourcesClient::Create(c.options);
    EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument) << c.field;
  }
}

}  // namespace
}  // namespace kubestat::podresources
