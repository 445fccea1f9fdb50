#include "kubestat/metrics_api/proto.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kubestat/testing/metrics_objects.h"

namespace kubestat::metrics_api {
namespace {

using kubestat::testing::BaseTime;
using kubestat::testing::DefaultWindows;
using kubestat::testing::MakeNode;
using kubestat::testing::MakePod;
using ::testing::HasSubstr;

TEST(ProtoTest, ObjectsSurviveTheRoundTrip) {
  const NodeMetrics node = MakeNode("node-1", {{"zone", "a"}}, BaseTime(), 500);
  absl::StatusOr<NodeMetrics> back = FromProto(ToProto(node));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, node);
  const PodMetrics pod = MakePod("shop", "web-1", "node-1", {{"app", "web"}}, BaseTime(), 70, 3);
  absl::StatusOr<PodMetrics> pod_back = FromProto(ToProto(pod));
  ASSERT_TRUE(pod_back.ok()) << pod_back.status();
  EXPECT_EQ(*pod_back, pod);
}

TEST(ProtoTest, TopologySurvivesTheRoundTrip) {
  NodeMetrics node = MakeNode("node-1", {}, BaseTime(), 500);
  node.allocatable =
      ResourceSet{{1, 2, 3},
                  {{"memory", uint64_t{8} << 30, {0}}, {"hugepages-2Mi", 1 << 30, {}}},
                  {{"nvidia.com/gpu", {"GPU-a", "GPU-b"}, {0, 1}}}};
  node.pod_resources = PodResourcesStatus{"AllocatableUnsupported", "older kubelet",
                                          BaseTime() + std::chrono::milliseconds(5)};
  absl::StatusOr<NodeMetrics> back = FromProto(ToProto(node));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, node);
  PodMetrics pod = MakePod("shop", "db-0", "node-1", {}, BaseTime(), 70, 2);
  pod.containers[0].exclusive = ResourceSet{{2, 3}, {{"memory", 1 << 30, {0}}}, {}};
  pod.exclusive = ResourceSet{{4}, {}, {}};
  const v1::PodMetrics proto = ToProto(pod);
  EXPECT_TRUE(proto.containers(0).has_exclusive());
  EXPECT_FALSE(proto.containers(1).has_exclusive());  // the shared pool: nothing sent
  absl::StatusOr<PodMetrics> pod_back = FromProto(proto);
  ASSERT_TRUE(pod_back.ok()) << pod_back.status();
  EXPECT_EQ(*pod_back, pod);
  // Without a node agent nothing of it is sent.
  EXPECT_FALSE(ToProto(MakeNode("n", {}, BaseTime(), 1)).has_allocatable());
  EXPECT_FALSE(ToProto(MakeNode("n", {}, BaseTime(), 1)).has_pod_resources());
}

TEST(ProtoTest, WindowsCarryNamesUnitsAndTheLargerCount) {
  NodeMetrics node = MakeNode("n", {}, BaseTime(), 100);
  node.machine.memory[0].count = 9;
  node.machine.memory[0].endtime = BaseTime() + std::chrono::seconds(3);
  const v1::NodeMetrics proto = ToProto(node);
  ASSERT_EQ(proto.machine_size(), static_cast<int>(DefaultWindows().size()));
  const v1::Window& first = proto.machine(0);
  EXPECT_EQ(first.name(), "10s");
  EXPECT_EQ(first.duration().seconds(), 10);
  EXPECT_EQ(first.sample_count(), 9);
  EXPECT_EQ(FromProtoTimestamp(first.endtime()), BaseTime() + std::chrono::seconds(3));
  EXPECT_EQ(first.cpu_nanocores().mean(), 100);
  EXPECT_EQ(first.memory_bytes().mean(), 100000);
  EXPECT_EQ(first.memory_bytes().sample_count(), 9);
  EXPECT_EQ(proto.machine(3).name(), "1d");
}

TEST(ProtoTest, AResourceWithoutStatisticsStaysUnset) {
  NodeMetrics node = MakeNode("n", {}, BaseTime(), 100);
  node.machine.cpu.clear();
  const v1::NodeMetrics proto = ToProto(node);
  EXPECT_FALSE(proto.machine(0).has_cpu_nanocores());
  absl::StatusOr<NodeMetrics> back = FromProto(proto);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->machine.cpu.empty());
  EXPECT_EQ(back->machine.memory, node.machine.memory);
}

TEST(ProtoTest, NegativeValuesAreRefusedNamingTheField) {
  v1::PodMetrics pod = ToProto(MakePod("ns", "p", "n", {}, BaseTime(), 10));
  pod.mutable_containers(0)->mutable_windows(1)->mutable_memory_bytes()->set_p95(-1);
  absl::StatusOr<PodMetrics> back = FromProto(pod);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().message(),
            "containers[c0].windows[\"1m\"].memory_bytes: must not be negative");
}

TEST(ProtoTest, TimestampsBeforeTheEpochKeepNanosPositive) {
  const Timestamp t = Timestamp(std::chrono::nanoseconds(-1'500'000'000));
  const google::protobuf::Timestamp proto = ToProtoTimestamp(t);
  EXPECT_EQ(proto.seconds(), -2);
  EXPECT_EQ(proto.nanos(), 500'000'000);
  EXPECT_EQ(FromProtoTimestamp(proto), t);
  EXPECT_EQ(FromProtoDuration(ToProtoDuration(std::chrono::milliseconds(-2500))),
            std::chrono::milliseconds(-2500));
}

TEST(ProtoTest, WindowFilterKeepsTheNamedWindowsOnly) {
  absl::StatusOr<WindowFilter> filter = WindowFilter::Create({"1m", "1d"}, DefaultWindows());
  ASSERT_TRUE(filter.ok());
  v1::PodMetrics pod = ToProto(MakePod("ns", "p", "n", {}, BaseTime(), 10));
  filter->Apply(&pod);
  ASSERT_EQ(pod.windows_size(), 2);
  EXPECT_EQ(pod.windows(0).name(), "1m");
  EXPECT_EQ(pod.windows(1).name(), "1d");
  EXPECT_EQ(pod.containers(0).windows_size(), 2);
  absl::StatusOr<WindowFilter> bad = WindowFilter::Create({"5m"}, DefaultWindows());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("unknown window \"5m\" (windows: 10s, 1m, 1h, 1d)"));
}

}  // namespace
}  // namespace kubestat::metrics_api
