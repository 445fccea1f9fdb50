// Wire compatibility of proto/podresources/v1/api.proto with the kubelet's PodResources v1
// API: bytes written by hand from the protobuf encoding rules (tag = field << 3 | wire type;
// varint = 0, length-delimited = 2) must parse to the expected values, and known messages
// must serialize to exactly the bytes a kubelet would send.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "kubestat/podresources/client.h"
#include "kubestat/testing/fixtures.h"
#include "kubestat/testing/podresources_wire_facts.h"
#include "podresources/v1/api.grpc.pb.h"
#include "podresources/v1/api.pb.h"

namespace kubestat::podresources {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Bytes(std::initializer_list<uint8_t> bytes) {
  return std::string(bytes.begin(), bytes.end());
}

// A length-delimited field: tag, one-byte length, payload (payloads here stay under 128).
std::string Field(uint8_t tag, const std::string& payload) {
  EXPECT_LT(payload.size(), 128u);
  return std::string(1, static_cast<char>(tag)) +
         std::string(1, static_cast<char>(payload.size())) + payload;
}

TEST(PodResourcesWireTest, PackedContainerCpuIdsParse) {
  // name (1, LEN) "app"; cpu_ids (3, LEN) packed varints 1, 2, 300 (300 = 0xac 0x02).
  const std::string bytes = Bytes({0x0a, 0x03, 'a', 'p', 'p', 0x1a, 0x04, 0x01, 0x02, 0xac, 0x02});
  v1::ContainerResources container;
  ASSERT_TRUE(container.ParseFromString(bytes));
  EXPECT_EQ(container.name(), "app");
  EXPECT_THAT(container.cpu_ids(), ElementsAre(1, 2, 300));
}

TEST(PodResourcesWireTest, UnpackedContainerCpuIdsParse) {
  // cpu_ids (3, VARINT) once per element: tag 0x18.
  const std::string bytes =
      Bytes({0x0a, 0x03, 'a', 'p', 'p', 0x18, 0x01, 0x18, 0x02, 0x18, 0xac, 0x02});
  v1::ContainerResources container;
  ASSERT_TRUE(container.ParseFromString(bytes));
  EXPECT_THAT(container.cpu_ids(), ElementsAre(1, 2, 300));
}

TEST(PodResourcesWireTest, PackedAndUnpackedCpuIdsInOneMessageAppend) {
  const std::string bytes = Bytes({0x1a, 0x02, 0x07, 0x08, 0x18, 0x09, 0x1a, 0x01, 0x0a});
  v1::ContainerResources container;
  ASSERT_TRUE(container.ParseFromString(bytes));
  EXPECT_THAT(container.cpu_ids(), ElementsAre(7, 8, 9, 10));
}

TEST(PodResourcesWireTest, AllocatableCpuIdsParsePackedAndUnpacked) {
  // AllocatableResourcesResponse.cpu_ids is field 2: packed tag 0x12, unpacked tag 0x10.
  v1::AllocatableResourcesResponse packed;
  ASSERT_TRUE(packed.ParseFromString(Bytes({0x12, 0x03, 0x00, 0x01, 0x3f})));
  EXPECT_THAT(packed.cpu_ids(), ElementsAre(0, 1, 63));
  v1::AllocatableResourcesResponse unpacked;
  ASSERT_TRUE(unpacked.ParseFromString(Bytes({0x10, 0x00, 0x10, 0x01, 0x10, 0x3f})));
  EXPECT_THAT(unpacked.cpu_ids(), ElementsAre(0, 1, 63));
}

TEST(PodResourcesWireTest, PodLevelCpuIdsAndMemoryParse) {
  // PodResources: name (1) "p", namespace (2) "n", cpu_ids (4) packed [4, 5] then unpacked
  // [6] (tag 0x20), memory (5) { memory_type (1) "memory", size (2) 1 GiB,
  // topology (3) { nodes (1) { ID (1) 1 } } }.
  const std::string memory = Field(0x0a, "memory") +
                             Bytes({0x10, 0x80, 0x80, 0x80, 0x80, 0x04}) +  // 2^30 as a varint
                             Field(0x1a, Field(0x0a, Bytes({0x08, 0x01})));
  const std::string bytes = Field(0x0a, "p") + Field(0x12, "n") +
                            Bytes({0x22, 0x02, 0x04, 0x05, 0x20, 0x06}) + Field(0x2a, memory);
  v1::PodResources pod;
  ASSERT_TRUE(pod.ParseFromString(bytes));
  EXPECT_EQ(pod.name(), "p");
  EXPECT_EQ(pod.namespace_(), "n");
  EXPECT_THAT(pod.cpu_ids(), ElementsAre(4, 5, 6));
  ASSERT_EQ(pod.memory_size(), 1);
  EXPECT_EQ(pod.memory(0).memory_type(), "memory");
  EXPECT_EQ(pod.memory(0).size(), uint64_t{1} << 30);
  ASSERT_EQ(pod.memory(0).topology().nodes_size(), 1);
  EXPECT_EQ(pod.memory(0).topology().nodes(0).id(), 1);
}

TEST(PodResourcesWireTest, FullListResponseDecodesToPlainValues) {
  // ListPodResourcesResponse { pod_resources (1) { name "db", namespace "shop",
  //   containers (3) { name "pg", devices (2) { resource_name "x/gpu", device_ids "g0",
  //   device_ids "g1", topology { nodes { ID 1 } } }, cpu_ids (3) [2, 3],
  //   memory (4) { memory_type "hugepages-1Gi", size 2^33 } } } }
  const std::string devices = Field(0x0a, "x/gpu") + Field(0x12, "g0") + Field(0x12, "g1") +
                              Field(0x1a, Field(0x0a, Bytes({0x08, 0x01})));
  const std::string memory =
      Field(0x0a, "hugepages-1Gi") + Bytes({0x10, 0x80, 0x80, 0x80, 0x80, 0x20});  // 2^33
  const std::string container = Field(0x0a, "pg") + Field(0x12, devices) +
                                Bytes({0x1a, 0x02, 0x02, 0x03}) + Field(0x22, memory);
  const std::string pod = Field(0x0a, "db") + Field(0x12, "shop") + Field(0x1a, container);
  const std::string bytes = Field(0x0a, pod);

  absl::StatusOr<std::vector<PodResources>> pods = DecodeListResponse(bytes);
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 1u);
  EXPECT_EQ((*pods)[0].name, "db");
  EXPECT_EQ((*pods)[0].namespace_name, "shop");
  ASSERT_EQ((*pods)[0].containers.size(), 1u);
  const ContainerResources& pg = (*pods)[0].containers[0];
  EXPECT_EQ(pg.name, "pg");
  EXPECT_THAT(pg.cpu_ids, ElementsAre(2, 3));
  ASSERT_EQ(pg.devices.size(), 1u);
  EXPECT_EQ(pg.devices[0].resource_name, "x/gpu");
  EXPECT_THAT(pg.devices[0].device_ids, ElementsAre("g0", "g1"));
  EXPECT_THAT(pg.devices[0].numa_nodes, ElementsAre(1));
  ASSERT_EQ(pg.memory.size(), 1u);
  EXPECT_EQ(pg.memory[0].memory_type, "hugepages-1Gi");
  EXPECT_EQ(pg.memory[0].size_bytes, uint64_t{8589934592});
  EXPECT_TRUE(pg.memory[0].numa_nodes.empty());
}

TEST(PodResourcesWireTest, RemovedDynamicResourceClassNameIsSkipped) {
  // A kubelet 1.27-1.30 still sends class_name as field 1 of DynamicResource.
  const std::string claim_resource = Field(0x0a, Field(0x0a, "v.com/gpu=d0"));  // cdi_devices
  const std::string dynamic = Field(0x0a, "gpu-class") + Field(0x12, "claim-a") +
                              Field(0x1a, "ml") + Field(0x22, claim_resource);
  v1::DynamicResource parsed;
  ASSERT_TRUE(parsed.ParseFromString(dynamic));
  EXPECT_EQ(parsed.claim_name(), "claim-a");
  EXPECT_EQ(parsed.claim_namespace(), "ml");
  ASSERT_EQ(parsed.claim_resources_size(), 1);
  EXPECT_EQ(parsed.claim_resources(0).cdi_devices(0).name(), "v.com/gpu=d0");

  // The same through the plain decoder: container (3) { name "c", dynamic_resources (5) }.
  const std::string container = Field(0x0a, "c") + Field(0x2a, dynamic);
  absl::StatusOr<std::vector<PodResources>> pods =
      DecodeListResponse(Field(0x0a, Field(0x1a, container)));
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ((*pods)[0].containers[0].dynamic_resources.size(), 1u);
  const DynamicResource& resource = (*pods)[0].containers[0].dynamic_resources[0];
  EXPECT_EQ(resource.claim_name, "claim-a");
  EXPECT_THAT(resource.claim_resources[0].cdi_devices, ElementsAre("v.com/gpu=d0"));
}

TEST(PodResourcesWireTest, ClaimResourceFieldsAndShareIdPresence) {
  // driver_name (2) "d", pool_name (3) "p", device_name (4) "g", share_id (5) "" (present).
  v1::ClaimResource with_empty_share;
  ASSERT_TRUE(with_empty_share.ParseFromString(Field(0x12, "d") + Field(0x1a, "p") +
                                               Field(0x22, "g") + Bytes({0x2a, 0x00})));
  EXPECT_EQ(with_empty_share.driver_name(), "d");
  EXPECT_EQ(with_empty_share.pool_name(), "p");
  EXPECT_EQ(with_empty_share.device_name(), "g");
  EXPECT_TRUE(with_empty_share.has_share_id());
  EXPECT_EQ(with_empty_share.share_id(), "");

  v1::ClaimResource without_share;
  ASSERT_TRUE(without_share.ParseFromString(Field(0x12, "d")));
  EXPECT_FALSE(without_share.has_share_id());
}

TEST(PodResourcesWireTest, GetRequestAndResponseFieldNumbers) {
  v1::GetPodResourcesRequest request;
  ASSERT_TRUE(request.ParseFromString(Field(0x0a, "web-1") + Field(0x12, "shop")));
  EXPECT_EQ(request.pod_name(), "web-1");
  EXPECT_EQ(request.pod_namespace(), "shop");
  v1::GetPodResourcesResponse response;
  ASSERT_TRUE(response.ParseFromString(Field(0x0a, Field(0x0a, "web-1"))));
  EXPECT_EQ(response.pod_resources().name(), "web-1");
}

TEST(PodResourcesWireTest, SerializationGivesTheKubeletsBytes) {
  v1::PodResources pod;
  pod.set_name("p");
  pod.set_namespace_("n");
  pod.add_cpu_ids(4);
  pod.add_cpu_ids(5);
  EXPECT_EQ(pod.SerializeAsString(),
            Bytes({0x0a, 0x01, 'p', 0x12, 0x01, 'n', 0x22, 0x02, 0x04, 0x05}));

  v1::ContainerMemory memory;
  memory.set_memory_type("memory");
  memory.set_size(1024);
  memory.mutable_topology()->add_nodes()->set_id(1);
  EXPECT_EQ(memory.SerializeAsString(), Bytes({0x0a, 0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x10, 0x80,
                                               0x08, 0x1a, 0x04, 0x0a, 0x02, 0x08, 0x01}));

  v1::ContainerResources container;
  container.set_name("c");
  container.add_cpu_ids(300);
  container.add_dynamic_resources()->set_claim_name("x");
  EXPECT_EQ(container.SerializeAsString(),
            Bytes({0x0a, 0x01, 'c', 0x1a, 0x02, 0xac, 0x02, 0x2a, 0x03, 0x12, 0x01, 'x'}));

  v1::AllocatableResourcesResponse allocatable;
  allocatable.add_cpu_ids(0);
  allocatable.add_cpu_ids(1);
  allocatable.add_memory()->set_size(1);
  EXPECT_EQ(allocatable.SerializeAsString(),
            Bytes({0x12, 0x02, 0x00, 0x01, 0x1a, 0x02, 0x10, 0x01}));

  v1::ClaimResource claim;
  claim.set_driver_name("d");
  claim.set_share_id("");
  EXPECT_EQ(claim.SerializeAsString(), Bytes({0x12, 0x01, 'd', 0x2a, 0x00}));
}

TEST(PodResourcesWireTest, ServiceAndMethodNamesMatchTheKubelet) {
  EXPECT_STREQ(v1::PodResourcesLister::service_full_name(), "v1.PodResourcesLister");
  const google::protobuf::ServiceDescriptor* service =
      v1::ListPodResourcesRequest::descriptor()->file()->FindServiceByName("PodResourcesLister");
  ASSERT_NE(service, nullptr);
  EXPECT_EQ(service->file()->package(), "v1");
  ASSERT_EQ(service->method_count(), 3);
  std::vector<std::string> paths;
  paths.reserve(service->method_count());
  for (int i = 0; i < service->method_count(); ++i) {
    paths.push_back("/" + service->full_name() + "/" + service->method(i)->name());
  }
  EXPECT_THAT(paths, ElementsAre("/v1.PodResourcesLister/List",
                                 "/v1.PodResourcesLister/GetAllocatableResources",
                                 "/v1.PodResourcesLister/Get"));
  EXPECT_EQ(v1::NUMANode::descriptor()->FindFieldByNumber(1)->json_name(), "ID");
  EXPECT_EQ(v1::ContainerResources::descriptor()->FindFieldByNumber(3)->json_name(), "cpuIds");
}

// proto/podresources/v1/api.proto against the fixture, read in place: every message and
// field it states, with the same number, name, type and cardinality, and nothing more.
TEST(PodResourcesWireTest, ProtoMatchesTheFixturesFieldForField) {
  KUBESTAT_REQUIRE_FIXTURES();
  const testing::WireFacts facts =
      testing::ParseWireFacts(testing::ReadFixture("podresources-v1-wire.md"));
  ASSERT_GE(facts.size(), 14u) << "the fixture's messages were not read";
  const google::protobuf::FileDescriptor* file = v1::ListPodResourcesRequest::descriptor()->file();
  for (const auto& [message, fields] : facts) {
    const google::protobuf::Descriptor* d = file->FindMessageTypeByName(message);
    ASSERT_NE(d, nullptr) << "api.proto has no message " << message;
    EXPECT_EQ(d->field_count(), static_cast<int>(fields.size())) << message;
    for (const testing::WireFieldFact& fact : fields) {
      const google::protobuf::FieldDescriptor* f = d->FindFieldByNumber(fact.number);
      ASSERT_NE(f, nullptr) << message << " has no field " << fact.number;
      EXPECT_EQ(f->name(), fact.name) << message << "." << fact.number;
      EXPECT_EQ(f->is_repeated(), fact.repeated) << message << "." << fact.name;
      EXPECT_EQ(f->has_optional_keyword(), fact.optional) << message << "." << fact.name;
      if (fact.IsMessage()) {
        ASSERT_NE(f->message_type(), nullptr) << message << "." << fact.name;
        EXPECT_EQ(f->message_type()->name(), fact.type) << message << "." << fact.name;
      } else {
        EXPECT_EQ(std::string(f->type_name()), fact.type) << message << "." << fact.name;
      }
    }
  }
  // The service's methods, as the fixture's table names them.
  EXPECT_NE(file->FindServiceByName("PodResourcesLister")->FindMethodByName("Get"), nullptr);
}

TEST(PodResourcesWireTest, DecodersRejectMalformedBytes) {
  // A length prefix running past the end, and a varint that never terminates.
  for (const std::string& bytes :
       {Bytes({0x0a, 0x05, 'a'}),
        Bytes({0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})}) {
    absl::StatusOr<std::vector<PodResources>> pods = DecodeListResponse(bytes);
    EXPECT_EQ(pods.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(pods.status().message(), HasSubstr("ListPodResourcesResponse"));
    absl::StatusOr<AllocatableResources> allocatable = DecodeAllocatableResponse(bytes);
    EXPECT_EQ(allocatable.status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(DecodeListResponse("").ok());
}

}  // namespace
}  // namespace kubestat::podresources
