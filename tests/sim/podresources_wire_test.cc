// The simulator's hand-written podresources v1 messages (podresources_wire.h) against the
// facts of ../shared/fixtures/podresources-v1-wire.md, read in place: every field the sim
// writes has the number and wire type the fixture gives its message, and the bytes decode
// with the kubelet-compatible generated classes into the values the sim meant, byte for byte
// what a proto3 encoder writes.
#include "kubestat/sim/podresources_wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kubestat/sim/model.h"
#include "kubestat/sim/topology.h"
#include "kubestat/testing/fixtures.h"
#include "kubestat/testing/podresources_wire_facts.h"
#include "podresources/v1/api.pb.h"

namespace kubestat::sim {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing::WireFacts;
using testing::WireFieldFact;

ClusterModel Model() {
  ClusterModelOptions o;
  o.seed = 5;
  o.nodes = 3;
  o.pods_per_node = 30;
  o.node_topology = true;
  absl::StatusOr<ClusterModel> m = ClusterModel::Create(o);
  EXPECT_TRUE(m.ok()) << m.status();
  return *std::move(m);
}

// The pods of node 0 at the model's start, with their assignments: what List answers.
std::vector<PodResourcesEntry> Pods(const ClusterModel& model) {
  const NodeAssignments given = AssignmentsOf(model, 0);
  std::vector<PodResourcesEntry> pods;
  for (int slot = 0; slot < model.pods_per_node(); ++slot) {
    const PodInfo pod = model.PodOfGeneration(0, slot, 0);
    PodResourcesEntry entry{pod.name, pod.namespace_name, {}};
    for (size_t c = 0; c < pod.containers.size(); ++c) {
      entry.containers.emplace_back(pod.containers[c].name, given[slot][c]);
    }
    pods.push_back(std::move(entry));
  }
  return pods;
}

bool ReadVarint(std::string_view bytes, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 70 && *pos < bytes.size(); shift += 7) {
    const auto b = static_cast<uint8_t>(bytes[(*pos)++]);
    *v |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// Walks `bytes` as message `message` of the fixture: every field must be one the fixture
// lists for it, written with the wire type a proto3 encoder uses for its type; messages are
// walked in turn. Counts the fields seen by "Message.field".
void Walk(const WireFacts& facts, const std::string& message, std::string_view bytes,
          std::map<std::string, int>* seen) {
  ASSERT_TRUE(facts.contains(message)) << "the fixture has no message " << message;
  size_t pos = 0;
  while (pos < bytes.size()) {
    uint64_t tag;
    ASSERT_TRUE(ReadVarint(bytes, &pos, &tag)) << message;
    const int number = static_cast<int>(tag >> 3);
    const int wire_type = static_cast<int>(tag & 7);
    std::optional<WireFieldFact> fact = testing::FindField(facts, message, number);
    ASSERT_TRUE(fact.has_value()) << message << " has no field " << number << " in the fixture";
    EXPECT_EQ(wire_type, fact->WireType()) << message << "." << fact->name;
    ++(*seen)[message + "." + fact->name];
    if (wire_type == 0) {
      uint64_t ignored;
      ASSERT_TRUE(ReadVarint(bytes, &pos, &ignored));
      continue;
    }
    ASSERT_EQ(wire_type, 2);
    uint64_t length;
    ASSERT_TRUE(ReadVarint(bytes, &pos, &length));
    ASSERT_LE(length, bytes.size() - pos);
    const std::string_view payload = bytes.substr(pos, static_cast<size_t>(length));
    pos += static_cast<size_t>(length);
    if (fact->IsMessage()) Walk(facts, fact->type, payload, seen);
  }
}

TEST(PodResourcesWireTest, EveryFieldTheSimWritesHasTheFixturesNumberAndWireType) {
  KUBESTAT_REQUIRE_FIXTURES();
  const WireFacts facts = testing::ParseWireFacts(testing::ReadFixture("podresources-v1-wire.md"));
  ASSERT_GE(facts.size(), 14u) << "the fixture's messages were not read";
  const ClusterModel model = Model();
  std::map<std::string, int> seen;
  Walk(facts, "AllocatableResourcesResponse", EncodeAllocatableResponse(TopologyOf(model, 0)),
       &seen);
  const std::vector<PodResourcesEntry> pods = Pods(model);
  Walk(facts, "ListPodResourcesResponse", EncodeListResponse(pods), &seen);
  Walk(facts, "GetPodResourcesResponse", EncodeGetResponse(pods[0]), &seen);
  // Everything the simulator reports was written (and so checked) at least once.
  for (const char* field : {"AllocatableResourcesResponse.devices",
                            "AllocatableResourcesResponse.cpu_ids",
                            "AllocatableResourcesResponse.memory",
                            "ListPodResourcesResponse.pod_resources",
                            "GetPodResourcesResponse.pod_resources",
                            "PodResources.name",
                            "PodResources.namespace",
                            "PodResources.containers",
                            "ContainerResources.name",
                            "ContainerResources.devices",
                            "ContainerResources.cpu_ids",
                            "ContainerResources.memory",
                            "ContainerMemory.memory_type",
                            "ContainerMemory.size",
                            "ContainerMemory.topology",
                            "ContainerDevices.resource_name",
                            "ContainerDevices.device_ids",
                            "ContainerDevices.topology",
                            "TopologyInfo.nodes",
                            "NUMANode.ID"}) {
    EXPECT_GT(seen[field], 0) << field << " was never written";
  }
}

TEST(PodResourcesWireTest, TheFixtureIsReadAsWritten) {
  KUBESTAT_REQUIRE_FIXTURES();
  const WireFacts facts = testing::ParseWireFacts(testing::ReadFixture("podresources-v1-wire.md"));
  std::optional<WireFieldFact> cpu_ids =
      testing::FindField(facts, "AllocatableResourcesResponse", 2);
  ASSERT_TRUE(cpu_ids.has_value());
  EXPECT_EQ(cpu_ids->name, "cpu_ids");
  EXPECT_EQ(cpu_ids->type, "int64");
  EXPECT_TRUE(cpu_ids->repeated);
  std::optional<WireFieldFact> share = testing::FindField(facts, "ClaimResource", 5);
  ASSERT_TRUE(share.has_value());
  EXPECT_TRUE(share->optional);
  EXPECT_EQ(share->type, "string");
  EXPECT_TRUE(facts.at("AllocatableResourcesRequest").empty());
  // DynamicResource's tombstoned field 1 is not a field.
  EXPECT_FALSE(testing::FindField(facts, "DynamicResource", 1).has_value());
  EXPECT_TRUE(testing::FindField(facts, "DynamicResource", 2).has_value());
}

TEST(PodResourcesWireTest, AllocatableDecodesWithTheKubeletsMessageByteForByte) {
  const ClusterModel model = Model();
  const NodeTopology topology = TopologyOf(model, 1);
  const std::string bytes = EncodeAllocatableResponse(topology);
  v1::AllocatableResourcesResponse decoded;
  ASSERT_TRUE(decoded.ParseFromString(bytes));
  EXPECT_THAT(decoded.cpu_ids(), ElementsAreArray(topology.allocatable_cpus));
  ASSERT_EQ(decoded.memory_size(), 2);
  EXPECT_EQ(decoded.memory(0).memory_type(), "memory");
  EXPECT_EQ(decoded.memory(0).size(), topology.memory[0].size_bytes);
  EXPECT_EQ(decoded.memory(0).topology().nodes(0).id(), 0);
  EXPECT_EQ(decoded.memory(1).topology().nodes(0).id(), 1);
  ASSERT_EQ(decoded.devices_size(), 2);
  EXPECT_EQ(decoded.devices(0).resource_name(), "nvidia.com/gpu");
  EXPECT_THAT(decoded.devices(1).device_ids(), ElementsAreArray(topology.devices[1].device_ids));
  EXPECT_EQ(decoded.devices(1).topology().nodes(0).id(), 1);
  // What a proto3 encoder writes for the same message (NUMA node 0 as an empty NUMANode).
  EXPECT_EQ(decoded.SerializeAsString(), bytes);
}

TEST(PodResourcesWireTest, ListDecodesWithTheKubeletsMessageByteForByte) {
  const ClusterModel model = Model();
  const std::vector<PodResourcesEntry> pods = Pods(model);
  const std::string bytes = EncodeListResponse(pods);
  v1::ListPodResourcesResponse decoded;
  ASSERT_TRUE(decoded.ParseFromString(bytes));
  ASSERT_EQ(decoded.pod_resources_size(), static_cast<int>(pods.size()));
  int pinned = 0;
  for (size_t p = 0; p < pods.size(); ++p) {
    const v1::PodResources& pod = decoded.pod_resources(static_cast<int>(p));
    EXPECT_EQ(pod.name(), pods[p].name);
    EXPECT_EQ(pod.namespace_(), pods[p].namespace_name);
    ASSERT_EQ(pod.containers_size(), static_cast<int>(pods[p].containers.size()));
    for (size_t c = 0; c < pods[p].containers.size(); ++c) {
      const v1::ContainerResources& container = pod.containers(static_cast<int>(c));
      const ContainerAssignment& want = pods[p].containers[c].second;
      EXPECT_EQ(container.name(), pods[p].containers[c].first);
      EXPECT_THAT(container.cpu_ids(), ElementsAreArray(want.cpu_ids));
      ASSERT_EQ(container.memory_size(), static_cast<int>(want.memory.size()));
      for (size_t m = 0; m < want.memory.size(); ++m) {
        EXPECT_EQ(container.memory(static_cast<int>(m)).size(), want.memory[m].size_bytes);
      }
      ASSERT_EQ(container.devices_size(), static_cast<int>(want.devices.size()));
      if (!want.cpu_ids.empty()) ++pinned;
    }
  }
  EXPECT_GT(pinned, 0) << "node 0 has no pinned container to check";
  EXPECT_EQ(decoded.SerializeAsString(), bytes);
}

TEST(PodResourcesWireTest, GetRequestDecodesAndSkipsUnknownFields) {
  v1::GetPodResourcesRequest request;
  request.set_pod_name("web-1");
  request.set_pod_namespace("shop");
  absl::StatusOr<GetPodRequest> got = DecodeGetRequest(request.SerializeAsString());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->pod_name, "web-1");
  EXPECT_EQ(got->pod_namespace, "shop");

  // Field 7 (varint), field 9 (fixed64), field 10 (fixed32) before the name: skipped.
  std::string with_unknown = {0x38, 0x05, 0x49, 0, 0, 0, 0, 0, 0, 0, 0, 0x55, 0, 0, 0, 0};
  with_unknown += request.SerializeAsString();
  got = DecodeGetRequest(with_unknown);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->pod_name, "web-1");
  EXPECT_TRUE(DecodeGetRequest("").ok());
}

TEST(PodResourcesWireTest, MalformedGetRequestsAreRefused) {
  for (const std::string& bytes : {std::string("\x0a\x05we", 4),  // length past the end
                                   std::string("\x08", 1),        // varint missing
                                   std::string("\x08\x01", 2),    // name as a varint
                                   std::string("\x0b", 1),        // wire type 3
                                   std::string("\x02\x00", 2),    // field number 0
                                   std::string(11, '\xff')}) {    // endless varint
    absl::StatusOr<GetPodRequest> got = DecodeGetRequest(bytes);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(got.status().message(), HasSubstr("GetPodResourcesRequest"));
  }
}

}  // namespace
}  // namespace kubestat::sim
