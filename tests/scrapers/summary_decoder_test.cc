#include "kubestat/scrapers/summary_decoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kubestat/core/time.h"
#include "kubestat/testing/fixtures.h"

namespace kubestat::scrapers {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

Timestamp T(std::string_view rfc3339) {
  absl::StatusOr<Timestamp> t = ParseRfc3339(rfc3339);
  EXPECT_TRUE(t.ok()) << rfc3339;
  return t.ok() ? *t : Timestamp{};
}

NodeScrape DecodeFixture(const std::string& name) {
  const std::string json = kubestat::testing::ReadFixture("summary/" + name);
  absl::StatusOr<NodeScrape> scrape = DecodeSummary(json);
  EXPECT_TRUE(scrape.ok()) << name << ": " << scrape.status();
  return scrape.ok() ? *std::move(scrape) : NodeScrape{};
}

// Every captured summary payload.
constexpr const char* kEveryFixture[] = {
    "nri-kubernetes_k8s-v1.16.15_minikube-docker_stats-summary.json",
    "nri-kubernetes_k8s-v1.22.17_containerd_stats-summary.json",
    "nri-kubernetes_k8s-v1.35.0_containerd_stats-summary.json",
    "nri-kubernetes_minikube_kubelet_stats_summary_payload.json",
    "metrics-server_types_test_kind-v1.17.0.json",
    "metrics-server_types_test_edgecases_missing-fields.json",
    "telegraf_kubernetes_test_responseStatsSummery.json"};

std::vector<std::string> Names(const std::vector<ContainerScrape>& containers) {
  std::vector<std::string> names;
  for (const ContainerScrape& c : containers) names.push_back(c.name);
  return names;
}

// ---- Captured payloads ---------------------------------------------------------------------

TEST(SummaryDecoderFixtureTest, Kubelet116MinikubeDockerDecodesNodePodsAndContainers) {
  KUBESTAT_REQUIRE_FIXTURES();
  const NodeScrape scrape =
      DecodeFixture("nri-kubernetes_k8s-v1.16.15_minikube-docker_stats-summary.json");
  EXPECT_EQ(scrape.format, ScrapeFormat::kSummary);
  EXPECT_EQ(scrape.node_name, "minikube");
  EXPECT_EQ(scrape.pods.size(), 15u);
  EXPECT_EQ(scrape.ContainerCount(), 15u);
  EXPECT_THAT(Names(scrape.system_containers), ElementsAre("kubelet", "runtime", "pods"));
  EXPECT_EQ(scrape.start_time, T("2021-12-15T13:42:30Z"));
  ASSERT_TRUE(scrape.cpu.has_value());
  EXPECT_EQ(scrape.cpu->time, T("2021-12-15T13:51:05Z"));
  EXPECT_EQ(scrape.cpu->usage_nano_cores, 418300610u);
  EXPECT_EQ(scrape.cpu->usage_core_nanoseconds, 216639857637u);
  ASSERT_TRUE(scrape.memory.has_value());
  EXPECT_EQ(scrape.memory->working_set_bytes, 1446182912u);
  EXPECT_FALSE(scrape.swap.has_value());

  const PodScrape* pod = scrape.FindPod("scraper", "e2e-scraper-69dbfb44ff-l7c8h");
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(pod->uid, "1b97bdd4-629f-4367-ac24-9a70e2995b9f");
  EXPECT_EQ(pod->start_time, T("2021-12-15T13:47:17Z"));
  ASSERT_TRUE(pod->cpu.has_value());
  EXPECT_EQ(pod->cpu->time, T("2021-12-15T13:51:00Z"));
  EXPECT_EQ(pod->cpu->usage_nano_cores, 27195208u);
  EXPECT_EQ(pod->cpu->usage_core_nanoseconds, 1278317514u);
  ASSERT_TRUE(pod->memory.has_value());
  EXPECT_EQ(pod->memory->working_set_bytes, 8052736u);
  const ContainerScrape* container = FindContainer(pod->containers, "e2e-scraper");
  ASSERT_NE(container, nullptr);
  EXPECT_EQ(container->start_time, T("2021-12-15T13:47:17Z"));
  ASSERT_TRUE(container->cpu.has_value());
  EXPECT_EQ(container->cpu->time, T("2021-12-15T13:51:08Z"));
  EXPECT_EQ(container->cpu->usage_nano_cores, 22419765u);
  EXPECT_EQ(container->cpu->usage_core_nanoseconds, 1278582937u);
  ASSERT_TRUE(container->memory.has_value());
  EXPECT_EQ(container->memory->working_set_bytes, 7569408u);
  EXPECT_TRUE(scrape.issues.empty()) << scrape.issues.Summary();
}

TEST(SummaryDecoderFixtureTest, ZeroNanoCoresIsZeroNotMissing) {
  KUBESTAT_REQUIRE_FIXTURES();
  const NodeScrape scrape =
      DecodeFixture("nri-kubernetes_k8s-v1.16.15_minikube-docker_stats-summary.json");
  const PodScrape* pod = scrape.FindPod("scraper", "e2e-ds-8zz8h");
  ASSERT_NE(pod, nullptr);
  const ContainerScrape* busybox = FindContainer(pod->containers, "busybox");
  ASSERT_NE(busybox, nullptr);
  ASSERT_TRUE(busybox->cpu.has_value());
  EXPECT_EQ(busybox->cpu->usage_nano_cores, 0u);
  EXPECT_EQ(busybox->cpu->usage_core_nanoseconds, 18098430u);
  ASSERT_TRUE(busybox->memory.has_value());
  EXPECT_EQ(busybox->memory->working_set_bytes, 557056u);
}

TEST(SummaryDecoderFixtureTest, Kubelet122ContainerdWithProcessStatsDecodes) {
  KUBESTAT_REQUIRE_FIXTURES();
  const NodeScrape scrape =
      DecodeFixture("nri-kubernetes_k8s-v1.22.17_containerd_stats-summary.json");
  EXPECT_EQ(scrape.node_name, "datagen-1-22");
  EXPECT_EQ(scrape.pods.size(), 17u);
  EXPECT_EQ(scrape.ContainerCount(), 17u);
  EXPECT_THAT(Names(scrape.system_containers), ElementsAre("kubelet", "pods"));
  ASSERT_TRUE(scrape.cpu.has_value());
  EXPECT_EQ(scrape.cpu->usage_core_nanoseconds, 242567655000u);
  EXPECT_EQ(scrape.cpu->usage_nano_cores, 893887390u);
  ASSERT_TRUE(scrape.memory.has_value());
  EXPECT_EQ(scrape.memory->working_set_bytes, 900640768u);

  const PodScrape* pod = scrape.FindPod("kube-system", "kube-apiserver-datagen-1-22");
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(pod->uid, "d898288e1e5a4db2215bacb26d731eda");
  ASSERT_TRUE(pod->cpu.has_value());
  EXPECT_EQ(pod->cpu->usage_core_nanoseconds, 72430791000u);
  const ContainerScrape* container = FindContainer(pod->containers, "kube-apiserver");
  ASSERT_NE(container, nullptr);
  EXPECT_EQ(container->start_time, T("2023-05-31T02:41:49Z"));
  ASSERT_TRUE(container->cpu.has_value());
  EXPECT_EQ(container->cpu->time, T("2023-05-31T02:50:25Z"));
  EXPECT_EQ(container->cpu->usage_nano_cores, 101657504u);
  EXPECT_EQ(container->cpu->usage_core_nanoseconds, 71767220000u);
  ASSERT_TRUE(container->memory.has_value());
  EXPECT_EQ(container->memory->working_set_bytes, 241549312u);
  EXPECT_TRUE(scrape.issues.empty()) << scrape.issues.Summary();
}

TEST(SummaryDecoderFixtureTest, Kubelet135NewestShapeWithPsiIoAndSwapDecodes) {
  KUBESTAT_REQUIRE_FIXTURES();
  const NodeScrape scrape =
      DecodeFixture("nri-kubernetes_k8s-v1.35.0_containerd_stats-summary.json");
  EXPECT_EQ(scrape.node_name, "datagen-1-35");
  EXPECT_EQ(scrape.pods.size(), 17u);
  EXPECT_EQ(scrape.ContainerCount(), 17u);
  EXPECT_THAT(Names(scrape.system_containers), ElementsAre("kubelet", "pods"));
  EXPECT_EQ(scrape.start_time, T("2026-06-26T09:18:15Z"));
  ASSERT_TRUE(scrape.cpu.has_value());
  EXPECT_EQ(scrape.cpu->time, T("2026-06-26T10:14:35Z"));
  EXPECT_EQ(scrape.cpu->usage_nano_cores, 573081903u);
  EXPECT_EQ(scrape.cpu->usage_core_nanoseconds, 62148052000u);
  ASSERT_TRUE(scrape.memory.has_value());
  EXPECT_EQ(scrape.memory->working_set_bytes, 917110784u);
  ASSERT_TRUE(scrape.swap.has_value());
  EXPECT_EQ(scrape.swap->time, T("2026-06-26T10:14:35Z"));
  EXPECT_EQ(scrape.swap->usage_bytes, 0u);

  // cpu blocks here carry psi {full, some} with avg values written both as 0 and 0.01: the
  // values kubestat reads next to them must be unaffected.
  const PodScrape* pod = scrape.FindPod("kube-system", "kube-scheduler-datagen-1-35");
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(pod->uid, "07bd11a0a13dfe5450a17a39eb8e32d2");
  EXPECT_EQ(pod->start_time, T("2026-06-26T10:12:10Z"));
  ASSERT_TRUE(pod->cpu.has_value());
  EXPECT_EQ(pod->cpu->time, T("2026-06-26T10:14:36Z"));
  EXPECT_EQ(pod->cpu->usage_nano_cores, 3678291u);
  EXPECT_EQ(pod->cpu->usage_core_nanoseconds, 1052887000u);
  ASSERT_TRUE(pod->memory.has_value());
  EXPECT_EQ(pod->memory->working_set_bytes, 24023040u);
  const ContainerScrape* container = FindContainer(pod->containers, "kube-scheduler");
  ASSERT_NE(container, nullptr);
  ASSERT_TRUE(container->cpu.has_value());
  EXPECT_EQ(container->cpu->time, T("2026-06-26T10:14:29Z"));
  EXPECT_EQ(container->cpu->usage_nano_cores, 3705818u);
  EXPECT_EQ(container->cpu->usage_core_nanoseconds, 1022152000u);
  ASSERT_TRUE(container->memory.has_value());
  EXPECT_EQ(container->memory->working_set_bytes, 23756800u);
  ASSERT_TRUE(container->swap.has_value());
  EXPECT_EQ(container->swap->usage_bytes, 0u);
  EXPECT_TRUE(scrape.issues.empty()) << scrape.issues.Summary();
}

TEST(SummaryDecoderFixtureTest, Minikube2018HasTwoContainerPodsAndNullUserDefinedMetrics) {
  KUBESTAT_REQUIRE_FIXTURES();
  const NodeScrape scrape =
      DecodeFixture("nri-kubernetes_minikube_kubelet_stats_summary_payload.json");
  EXPECT_EQ(scrape.node_name, "minikube");
  EXPECT_EQ(scrape.pods.size(), 8u);
  EXPECT_EQ(scrape.ContainerCount(), 12u);
  EXPECT_THAT(Names(scrape.system_containers), ElementsAre("kubelet", "runtime"));
  ASSERT_TRUE(scrape.cpu.has_value());
  EXPECT_EQ(scrape.cpu->usage_core_nanoseconds, 22332102208229u);
  EXPECT_EQ(scrape.cpu->usage_nano_cores, 228759290u);
  ASSERT_TRUE(scrape.memory.has_value());
  EXPECT_EQ(scrape.memory->working_set_bytes, 1305468928u);

  const PodScrape* pod = scrape.FindPod("kube-system", "kube-state-metrics-57f4659995-6n2qq");
  ASSERT_NE(pod, nullptr);
  EXPECT_THAT(Names(pod->containers), ElementsAre("kube-state-metrics", "addon-resizer"));
  ASSERT_TRUE(pod->memory.has_value());
  EXPECT_EQ(pod->memory->working_set_bytes, 53444608u);
  const ContainerScrape* resizer = FindContainer(pod->containers, "addon-resizer");
  ASSERT_NE(resizer, nullptr);
  EXPECT_EQ(resizer->start_time, T("2018-03-01T14:30:30Z"));
  ASSERT_TRUE(resizer->cpu.has_value());
  EXPECT_EQ(resizer->cpu->time, T("2018-03-02T13:42:51Z"));
  EXPECT_EQ(resizer->cpu->usage_nano_cores, 131742u);
  EXPECT_EQ(resizer->cpu->usage_core_nanoseconds, 15478530064u);
  ASSERT_TRUE(resizer->memory.has_value());
  EXPECT_EQ(resizer->memory->working_set_bytes, 6270976u);
  EXPECT_TRUE(scrape.issues.empty()) << scrape.issues.Summary();
}

TEST(SummaryDecoderFixtureTest, KindCriStatsMemoryShapeDecodes) {
  KUBESTAT_REQUIRE_FIXTURES();
  const NodeScrape scrape = DecodeFixture("metrics-server_types_test_kind-v1.17.0.json");
  EXPECT_EQ(scrape.node_name, "e2e-v1.17.0-control-plane");
  ASSERT_EQ(scrape.pods.size(), 1u);
  const PodScrape& pod = scrape.pods[0];
  EXPECT_EQ(pod.name, "load-6cddbdb5c8-blk57");
  EXPECT_EQ(pod.namespace_name, "default");
  EXPECT_EQ(pod.uid, "96636a87-47f5-4970-a15e-6e7901925c90");
  ASSERT_TRUE(pod.cpu.has_value());
  EXPECT_EQ(pod.cpu->time, T("2020-04-16T20:25:24Z"));
  EXPECT_EQ(pod.cpu->usage_nano_cores, 123u);
  EXPECT_EQ(pod.cpu->usage_core_nanoseconds, 54096725u);
  ASSERT_TRUE(pod.memory.has_value());
  EXPECT_EQ(pod.memory->working_set_bytes, 2641920u);
  ASSERT_EQ(pod.containers.size(), 1u);
  const ContainerScrape& load = pod.containers[0];
  EXPECT_EQ(load.name, "load");
  EXPECT_EQ(load.start_time, T("2020-04-16T20:17:46Z"));
  ASSERT_TRUE(load.memory.has_value());
  EXPECT_EQ(load.memory->time, T("2020-04-16T20:25:30Z"));
  EXPECT_EQ(load.memory->working_set_bytes, 1449984u);
  const ContainerScrape* kubelet = FindContainer(scrape.system_containers, "kubelet");
  ASSERT_NE(kubelet, nullptr);
  EXPECT_EQ(kubelet->start_time, T("2020-04-16T20:05:46Z"));
  ASSERT_TRUE(kubelet->cpu.has_value());
  EXPECT_EQ(kubelet->cpu->usage_core_nanoseconds, 183912297212u);
  ASSERT_TRUE(kubelet->memory.has_value());
  EXPECT_EQ(kubelet->memory->working_set_bytes, 122638336u);
}

TEST(SummaryDecoderFixtureTest, EdgeCasesMissingFieldsAreNulloptAndZerosStayZero) {
  KUBESTAT_REQUIRE_FIXTURES();
  const NodeScrape scrape =
      DecodeFixture("metrics-server_types_test_edgecases_missing-fields.json");
  EXPECT_EQ(scrape.node_name, "e2e-v1.17.0-control-plane");
  ASSERT_EQ(scrape.pods.size(), 7u);
  EXPECT_EQ(scrape.ContainerCount(), 7u);
  EXPECT_TRUE(scrape.issues.empty()) << scrape.issues.Summary();

  auto container_of = [&scrape](std::string_view pod_name) -> const ContainerScrape* {
    const PodScrape* pod = scrape.FindPod("default", pod_name);
    if (pod == nullptr || pod->containers.size() != 1) return nullptr;
    return &pod->containers[0];
  };

  const ContainerScrape* all = container_of("all-fields");
  ASSERT_NE(all, nullptr);
  ASSERT_TRUE(all->cpu.has_value());
  EXPECT_EQ(all->cpu->usage_core_nanoseconds, 29328792u);
  EXPECT_EQ(all->cpu->usage_nano_cores, 29713960u);
  ASSERT_TRUE(all->memory.has_value());
  EXPECT_EQ(all->memory->working_set_bytes, 1449984u);
  // Pods other than "all-fields" have no pod-level cpu/memory and no uid.
  const PodScrape* zero_cpu_pod = scrape.FindPod("default", "zero usageCoreNanoSeconds");
  ASSERT_NE(zero_cpu_pod, nullptr);
  EXPECT_FALSE(zero_cpu_pod->cpu.has_value());
  EXPECT_FALSE(zero_cpu_pod->memory.has_value());
  EXPECT_EQ(zero_cpu_pod->uid, "");

  const ContainerScrape* zero_cpu = container_of("zero usageCoreNanoSeconds");
  ASSERT_NE(zero_cpu, nullptr);
  ASSERT_TRUE(zero_cpu->cpu.has_value());
  EXPECT_EQ(zero_cpu->cpu->usage_core_nanoseconds, 0u);

  const ContainerScrape* no_cpu_counter = container_of("no usageCoreNanoSeconds");
  ASSERT_NE(no_cpu_counter, nullptr);
  ASSERT_TRUE(no_cpu_counter->cpu.has_value());
  EXPECT_EQ(no_cpu_counter->cpu->usage_core_nanoseconds, std::nullopt);
  EXPECT_EQ(no_cpu_counter->cpu->usage_nano_cores, 29713960u);
  EXPECT_EQ(no_cpu_counter->cpu->time, T("2020-04-16T20:25:30Z"));

  const ContainerScrape* no_cpu = container_of("no CPU");
  ASSERT_NE(no_cpu, nullptr);
  EXPECT_FALSE(no_cpu->cpu.has_value());
  ASSERT_TRUE(no_cpu->memory.has_value());
  EXPECT_EQ(no_cpu->memory->working_set_bytes, 1449984u);

  const ContainerScrape* zero_memory = container_of("zero workingSetBytes");
  ASSERT_NE(zero_memory, nullptr);
  ASSERT_TRUE(zero_memory->memory.has_value());
  EXPECT_EQ(zero_memory->memory->working_set_bytes, 0u);

  const ContainerScrape* no_working_set = container_of("no workingSetBytes");
  ASSERT_NE(no_working_set, nullptr);
  ASSERT_TRUE(no_working_set->memory.has_value());
  EXPECT_EQ(no_working_set->memory->working_set_bytes, std::nullopt);
  EXPECT_EQ(no_working_set->memory->time, T("2020-04-16T20:25:30Z"));

  const ContainerScrape* no_memory = container_of("no memory");
  ASSERT_NE(no_memory, nullptr);
  EXPECT_FALSE(no_memory->memory.has_value());
  ASSERT_TRUE(no_memory->cpu.has_value());
  EXPECT_EQ(no_memory->cpu->usage_core_nanoseconds, 29328792u);
}

TEST(SummaryDecoderFixtureTest, TelegrafNullStartTimeAndContainerWithoutMemory) {
  KUBESTAT_REQUIRE_FIXTURES();
  const NodeScrape scrape = DecodeFixture("telegraf_kubernetes_test_responseStatsSummery.json");
  EXPECT_EQ(scrape.node_name, "node1");
  EXPECT_EQ(scrape.pods.size(), 2u);
  EXPECT_EQ(scrape.ContainerCount(), 2u);
  EXPECT_THAT(Names(scrape.system_containers), ElementsAre("kubelet", "bar"));
  ASSERT_TRUE(scrape.cpu.has_value());
  EXPECT_EQ(scrape.cpu->usage_core_nanoseconds, 774129887054161u);
  ASSERT_TRUE(scrape.memory.has_value());
  EXPECT_EQ(scrape.memory->working_set_bytes, 5081538560u);

  const PodScrape* foopod = scrape.FindPod("foons", "foopod");
  ASSERT_NE(foopod, nullptr);
  EXPECT_EQ(foopod->start_time, T("2016-09-26T18:45:42Z"));
  const ContainerScrape* foocontainer = FindContainer(foopod->containers, "foocontainer");
  ASSERT_NE(foocontainer, nullptr);
  ASSERT_TRUE(foocontainer->memory.has_value());
  EXPECT_EQ(foocontainer->memory->working_set_bytes, 30789632u);

  const PodScrape* stopped = scrape.FindPod("foons", "stopped-pod");
  ASSERT_NE(stopped, nullptr);
  EXPECT_EQ(stopped->uid, "da7c1865-d67d-4688-b679-c485ed44b2aa");
  EXPECT_EQ(stopped->start_time, std::nullopt);  // "startTime": null
  ASSERT_EQ(stopped->containers.size(), 1u);
  const ContainerScrape& container = stopped->containers[0];
  EXPECT_EQ(container.name, "stopped-container");
  EXPECT_EQ(container.start_time, T("2016-09-26T18:46:43Z"));
  EXPECT_FALSE(container.memory.has_value());
  ASSERT_TRUE(container.cpu.has_value());
  EXPECT_EQ(container.cpu->time, T("2016-09-27T16:57:32Z"));
  EXPECT_EQ(container.cpu->usage_core_nanoseconds, 56507553554u);
  EXPECT_TRUE(scrape.issues.empty()) << scrape.issues.Summary();
}

TEST(SummaryDecoderFixtureTest, InPlaceDecodingMatchesCopyingDecodingForEveryFixture) {
  KUBESTAT_REQUIRE_FIXTURES();
  for (const char* name : kEveryFixture) {
    std::string json = kubestat::testing::ReadFixture(std::string("summary/") + name);
    const std::string original = json;
    absl::StatusOr<NodeScrape> copied = DecodeSummary(json);
    absl::StatusOr<NodeScrape> in_place = DecodeSummaryInPlace(&json);
    ASSERT_TRUE(copied.ok()) << name << ": " << copied.status();
    ASSERT_TRUE(in_place.ok()) << name << ": " << in_place.status();
    EXPECT_EQ(*copied, *in_place) << name;
    EXPECT_EQ(json, original) << name;
    EXPECT_GE(json.capacity(), json.size() + kSummaryPadding) << name;
  }
}

TEST(SummaryDecoderFixtureTest, DecodingIntoAReusedScrapeGivesWhatANewOneGivesInEveryOrder) {
  KUBESTAT_REQUIRE_FIXTURES();
  std::vector<std::string> payloads;
  for (const char* name : kEveryFixture) {
    payloads.push_back(kubestat::testing::ReadFixture(std::string("summary/") + name));
  }
  // Issues, dropped and duplicate pods and containers, and a malformed payload between two.
  payloads.push_back(R"({"node": {"nodeName": "n"}, "pods": [
    {"containers": [{"name": "c"}]}, {"podRef": {"name": "p"}},
    {"podRef": {"name": "a", "namespace": "ns", "uid": "1"},
     "containers": [{"name": "c", "cpu": {"time": "2026-11-21T10:00:00Z", "usageCoreNanoSeconds": 1}},
                    {"name": "c"}, {"cpu": null}]},
    {"podRef": {"name": "a", "namespace": "ns", "uid": "3"}}, null]})");
  payloads.push_back(R"({"node": {"nodeName": "n", "cpu": {"time": "x"}}, "pods": [{"podRef": )");
  payloads.push_back(R"({"node": {"nodeName": "m", "systemContainers": null}, "pods": null})");
  // Every payload after every other, into the same scrape: equal to a new scrape's decode.
  for (size_t first = 0; first < payloads.size(); ++first) {
    for (size_t second = 0; second < payloads.size(); ++second) {
      NodeScrape reused;
      std::string a = payloads[first];
      std::string b = payloads[second];
      const absl::Status first_status = DecodeSummaryInPlace(&a, &reused);
      EXPECT_EQ(first_status.ok(), DecodeSummary(payloads[first]).ok()) << first;
      const absl::Status status = DecodeSummaryInPlace(&b, &reused);
      absl::StatusOr<NodeScrape> fresh = DecodeSummary(payloads[second]);
      ASSERT_EQ(status.ok(), fresh.ok()) << first << " then " << second << ": " << status;
      if (fresh.ok()) {
        EXPECT_EQ(reused, *fresh) << first << " then " << second;
      }
      EXPECT_EQ(b, payloads[second]);
    }
  }
}

// ---- Hand-written payloads ---------------------------------------------------------------

constexpr std::string_view kMinimal = R"({
  "node": {"nodeName": "n1", "startTime": "2026-11-21T09:00:00Z",
           "cpu": {"time": "2026-11-21T10:00:00Z", "usageNanoCores": 5, "usageCoreNanoSeconds": 7},
           "memory": {"time": "2026-11-21T10:00:00Z", "workingSetBytes": 9}},
  "pods": [
    {"podRef": {"name": "p", "namespace": "ns", "uid": "u"},
     "containers": [{"name": "c", "cpu": {"time": "2026-11-21T10:00:01.5Z",
                                          "usageCoreNanoSeconds": 11}}]}
  ]
})";

TEST(SummaryDecoderTest, DecodesAMinimalSummary) {
  absl::StatusOr<NodeScrape> scrape = DecodeSummary(kMinimal);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(scrape->node_name, "n1");
  ASSERT_EQ(scrape->pods.size(), 1u);
  ASSERT_EQ(scrape->pods[0].containers.size(), 1u);
  const ContainerScrape& c = scrape->pods[0].containers[0];
  ASSERT_TRUE(c.cpu.has_value());
  EXPECT_EQ(c.cpu->time, T("2026-11-21T10:00:01.5Z"));
  EXPECT_EQ(c.cpu->usage_core_nanoseconds, 11u);
  EXPECT_EQ(c.cpu->usage_nano_cores, std::nullopt);
  EXPECT_FALSE(c.memory.has_value());
  EXPECT_EQ(c.start_time, std::nullopt);
}

TEST(SummaryDecoderTest, FieldOrderDoesNotMatter) {
  constexpr std::string_view kReordered = R"({
    "pods": [{"containers": [{"memory": {"workingSetBytes": 3, "time": "2026-11-21T10:00:00Z"},
                              "name": "c"}],
              "podRef": {"uid": "u", "namespace": "ns", "name": "p"}}],
    "node": {"memory": {"workingSetBytes": 9, "time": "2026-11-21T10:00:00Z"}, "nodeName": "n1"}
  })";
  absl::StatusOr<NodeScrape> scrape = DecodeSummary(kReordered);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(scrape->node_name, "n1");
  ASSERT_EQ(scrape->pods.size(), 1u);
  EXPECT_EQ(scrape->pods[0].name, "p");
  EXPECT_EQ(scrape->pods[0].namespace_name, "ns");
  ASSERT_EQ(scrape->pods[0].containers.size(), 1u);
  ASSERT_TRUE(scrape->pods[0].containers[0].memory.has_value());
  EXPECT_EQ(scrape->pods[0].containers[0].memory->working_set_bytes, 3u);
}

// Each list is sized once from the payload's array: a pod's containers and the node's pods
// are read into vectors that never grow past what they hold, and an array of many objects
// that are all dropped reserves no more than a kubelet's number of pods.
TEST(SummaryDecoderTest, ListsAreSizedOnceFromThePayload) {
  std::string pods;
  for (int p = 0; p < 5; ++p) {
    if (p > 0) pods += ",";
    std::string containers;
    for (int c = 0; c < 3; ++c) {
      if (c > 0) containers += ",";
      containers +=
          absl::StrCat(R"({"name": "c)", c,
                       R"(", "memory": {"workingSetBytes": 3, "time": "2026-11-21T10:00:00Z"}})");
    }
    pods += absl::StrCat(R"({"podRef": {"namespace": "ns", "name": "p)", p,
                         R"("}, "containers": [)", containers, "]}");
  }
  absl::StatusOr<NodeScrape> scrape =
      DecodeSummary(absl::StrCat(R"({"node": {"nodeName": "n1"}, "pods": [)", pods, "]}"));
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  ASSERT_EQ(scrape->pods.size(), 5u);
  EXPECT_EQ(scrape->pods.capacity(), 5u);
  for (const PodScrape& pod : scrape->pods) {
    ASSERT_EQ(pod.containers.size(), 3u);
    EXPECT_EQ(pod.containers.capacity(), 3u) << pod.name;
  }

  std::string empties = "{}";
  for (int i = 1; i < 5000; ++i) empties += ",{}";
  absl::StatusOr<NodeScrape> dropped =
      DecodeSummary(absl::StrCat(R"({"node": {"nodeName": "n1"}, "pods": [)", empties, "]}"));
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_TRUE(dropped->pods.empty());
  EXPECT_LE(dropped->pods.capacity(), 512u);
}

TEST(SummaryDecoderTest, FloatWhereIntegerExpectedIsRounded) {
  constexpr std::string_view kFloats = R"({"node": {"nodeName": "n",
    "cpu": {"time": "2026-11-21T10:00:00Z", "usageNanoCores": 1.5e3, "usageCoreNanoSeconds": 12.6},
    "memory": {"time": "2026-11-21T10:00:00Z", "workingSetBytes": 4096.0}}})";
  absl::StatusOr<NodeScrape> scrape = DecodeSummary(kFloats);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  ASSERT_TRUE(scrape->cpu.has_value());
  EXPECT_EQ(scrape->cpu->usage_nano_cores, 1500u);
  EXPECT_EQ(scrape->cpu->usage_core_nanoseconds, 13u);
  ASSERT_TRUE(scrape->memory.has_value());
  EXPECT_EQ(scrape->memory->working_set_bytes, 4096u);
  EXPECT_TRUE(scrape->issues.empty());
}

TEST(SummaryDecoderTest, IgnoredBlocksMayHoldAnyShape) {
  constexpr std::string_view kOdd = R"({"node": {"nodeName": "n",
    "network": [1, {"x": null}], "fs": "weird", "psi": {"some": {"avg10": 0}},
    "userDefinedMetrics": null, "accelerators": [[]], "unknownNumber": 1e999},
    "pods": [{"podRef": {"name": "p", "namespace": "ns"}, "volume": [{"name": "v"}],
              "ephemeral-storage": {"usedBytes": -5}, "process_stats": {"process_count": 3}}]})";
  absl::StatusOr<NodeScrape> scrape = DecodeSummary(kOdd);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(scrape->pods.size(), 1u);
  EXPECT_TRUE(scrape->issues.empty()) << scrape->issues.Summary();
}

TEST(SummaryDecoderTest, NegativeValueDropsOnlyThatValue) {
  constexpr std::string_view kNegative = R"({"node": {"nodeName": "n"}, "pods": [
    {"podRef": {"name": "p", "namespace": "ns"}, "containers": [
      {"name": "bad", "cpu": {"time": "2026-11-21T10:00:00Z", "usageNanoCores": 4,
                              "usageCoreNanoSeconds": -1}},
      {"name": "good", "cpu": {"time": "2026-11-21T10:00:00Z", "usageCoreNanoSeconds": 8}}]}]})";
  absl::StatusOr<NodeScrape> scrape = DecodeSummary(kNegative);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  ASSERT_EQ(scrape->pods.size(), 1u);
  const ContainerScrape* bad = FindContainer(scrape->pods[0].containers, "bad");
  ASSERT_NE(bad, nullptr);
  ASSERT_TRUE(bad->cpu.has_value());
  EXPECT_EQ(bad->cpu->usage_core_nanoseconds, std::nullopt);
  EXPECT_EQ(bad->cpu->usage_nano_cores, 4u);
  const ContainerScrape* good = FindContainer(scrape->pods[0].containers, "good");
  ASSERT_NE(good, nullptr);
  EXPECT_EQ(good->cpu->usage_core_nanoseconds, 8u);
  EXPECT_EQ(scrape->issues.Count(DecodeIssueKind::kAbsurdValue), 1u);
  ASSERT_EQ(scrape->issues.messages().size(), 1u);
  EXPECT_THAT(scrape->issues.messages()[0],
              HasSubstr("pods[0].containers[0].cpu.usageCoreNanoSeconds"));
}

TEST(SummaryDecoderTest, HugeNumbersAreRejectedPerValue) {
  constexpr std::string_view kHuge = R"({"node": {"nodeName": "n",
    "cpu": {"time": "2026-11-21T10:00:00Z",
            "usageCoreNanoSeconds": 18446744073709551615, "usageNanoCores": 1e300},
    "memory": {"time": "2026-11-21T10:00:00Z",
               "workingSetBytes": 123456789012345678901234567890}}})";
  absl::StatusOr<NodeScrape> scrape = DecodeSummary(kHuge);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  ASSERT_TRUE(scrape->cpu.has_value());
  EXPECT_EQ(scrape->cpu->usage_core_nanoseconds, std::nullopt);
  EXPECT_EQ(scrape->cpu->usage_nano_cores, std::nullopt);
  ASSERT_TRUE(scrape->memory.has_value());
  EXPECT_EQ(scrape->memory->working_set_bytes, std::nullopt);
  EXPECT_EQ(scrape->issues.Count(DecodeIssueKind::kAbsurdValue), 3u);
}

TEST(SummaryDecoderTest, LargestAcceptedValueIsTwoToTheSixtyThree) {
  constexpr std::string_view kEdge = R"({"node": {"nodeName": "n",
    "cpu": {"time": "2026-11-21T10:00:00Z", "usageCoreNanoSeconds": 9223372036854775808,
            "usageNanoCores": 9223372036854775809}}})";
  absl::StatusOr<NodeScrape> scrape = DecodeSummary(kEdge);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  ASSERT_TRUE(scrape->cpu.has_value());
  EXPECT_EQ(scrape->cpu->usage_core_nanoseconds, uint64_t{1} << 63);
  EXPECT_EQ(scrape->cpu->usage_nano_cores, std::nullopt);
  EXPECT_EQ(scrape->issues.Count(DecodeIssueKind::kAbsurdValue), 1u);
}

TEST(SummaryDecoderTest, WrongTypesAreCountedAndDropped) {
  constexpr std::string_view kWrong = R"({"node": {"nodeName": "n",
    "cpu": {"time": "2026-11-21T10:00:00Z", "usageCoreNanoSeconds": "12"},
    "memory": [1, 2], "startTime": 5, "systemContainers": {"name": "kubelet"}},
    "pods": [{"podRef": {"name": "p", "namespace": "ns"}, "containers": [{"name": 3}]}]})";
  absl::StatusOr<NodeScrape> scrape = DecodeSummary(kWrong);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  ASSERT_TRUE(scrape->cpu.has_value());
  EXPECT_EQ(scrape->cpu->usage_core_nanoseconds, std::nullopt);
  EXPECT_FALSE(scrape->memory.has_value());
  EXPECT_EQ(scrape->start_time, std::nullopt);
  EXPECT_THAT(scrape->system_containers, IsEmpty());
  ASSERT_EQ(scrape->pods.size(), 1u);
  EXPECT_THAT(scrape->pods[0].containers, IsEmpty());  // its name was not a string
  EXPECT_EQ(scrape->issues.Count(DecodeIssueKind::kWrongType), 5u);
  EXPECT_EQ(scrape->issues.Count(DecodeIssueKind::kMissingField), 1u);
}

TEST(SummaryDecoderTest, BadTimeDropsTheBlock) {
  constexpr std::string_view kBadTime = R"({"node": {"nodeName": "n",
    "startTime": "yesterday",
    "cpu": {"time": "2026-13-45T10:00:00Z", "usageCoreNanoSeconds": 12},
    "memory": {"workingSetBytes": 3}}})";
  absl::StatusOr<NodeScrape> scrape = DecodeSummary(kBadTime);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(scrape->start_time, std::nullopt);
  EXPECT_FALSE(scrape->cpu.has_value());
  EXPECT_FALSE(scrape->memory.has_value());
  EXPECT_EQ(scrape->issues.Count(DecodeIssueKind::kBadTimestamp), 2u);
  EXPECT_EQ(scrape->issues.Count(DecodeIssueKind::kMissingField), 1u);
}

TEST(SummaryDecoderTest, PodWithoutReferenceIsDroppedAndCounted) {
  constexpr std::string_view kNoRef = R"({"node": {"nodeName": "n"}, "pods": [
    {"containers": []}, {"podRef": {"name": "p"}},
    {"podRef": {"name": "ok", "namespace": "ns"}}, null]})";
  absl::StatusOr<NodeScrape> scrape = DecodeSummary(kNoRef);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  ASSERT_EQ(scrape->pods.size(), 1u);
  EXPECT_EQ(scrape->pods[0].name, "ok");
  EXPECT_EQ(scrape->issues.Count(DecodeIssueKind::kMissingField), 2u);
}

TEST(SummaryDecoderTest, DuplicatePodsAndContainersKeepTheFirst) {
  constexpr std::string_view kDup = R"({"node": {"nodeName": "n"}, "pods": [
    {"podRef": {"name": "a", "namespace": "ns", "uid": "1"},
     "containers": [{"name": "c", "cpu": {"time": "2026-11-21T10:00:00Z", "usageCoreNanoSeconds": 1}},
                    {"name": "c", "cpu": {"time": "2026-11-21T10:00:00Z", "usageCoreNanoSeconds": 2}}]},
    {"podRef": {"name": "b", "namespace": "ns", "uid": "2"}},
    {"podRef": {"name": "a", "namespace": "ns", "uid": "3"}}]})";
  absl::StatusOr<NodeScrape> scrape = DecodeSummary(kDup);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  ASSERT_EQ(scrape->pods.size(), 2u);
  EXPECT_EQ(scrape->pods[0].uid, "1");
  EXPECT_EQ(scrape->pods[1].uid, "2");
  ASSERT_EQ(scrape->pods[0].containers.size(), 1u);
  EXPECT_EQ(scrape->pods[0].containers[0].cpu->usage_core_nanoseconds, 1u);
  EXPECT_EQ(scrape->issues.Count(DecodeIssueKind::kDuplicate), 2u);
}

TEST(SummaryDecoderTest, EscapedStringsAreUnescaped) {
  constexpr std::string_view kEscaped = R"({"node": {"nodeName": "n\u0031"}, "pods": [
    {"podRef": {"name": "p\"q", "namespace": "n\\s"}}]})";
  absl::StatusOr<NodeScrape> scrape = DecodeSummary(kEscaped);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(scrape->node_name, "n1");
  ASSERT_EQ(scrape->pods.size(), 1u);
  EXPECT_EQ(scrape->pods[0].name, "p\"q");
  EXPECT_EQ(scrape->pods[0].namespace_name, "n\\s");
}

TEST(SummaryDecoderTest, MissingNodeNameIsInvalidArgument) {
  for (std::string_view json :
       {R"({"node": {}, "pods": []})", R"({"pods": []})", R"({"node": {"nodeName": ""}})",
        R"({"node": {"nodeName": 7}})", R"({"node": {"nodeName": null}})"}) {
    absl::StatusOr<NodeScrape> scrape = DecodeSummary(json);
    ASSERT_FALSE(scrape.ok()) << json;
    EXPECT_EQ(scrape.status().code(), absl::StatusCode::kInvalidArgument) << json;
    EXPECT_THAT(std::string(scrape.status().message()), ::testing::ContainsRegex("node")) << json;
  }
}

TEST(SummaryDecoderTest, MalformedJsonIsInvalidArgument) {
  const std::string full(kMinimal);
  std::vector<std::string> inputs = {
      "",
      "   ",
      "null",
      "[]",
      "42",
      "\"node\"",
      R"({"node": {"nodeName": "n"},})",
      R"({"node": {"nodeName": "n"})",
      R"({"node": {"nodeName": "n})",
      R"({"node" {"nodeName": "n"}})",
      R"({"node": "n1"})",
      R"({"node": {"nodeName": "n"}}{})",
      R"({"node": {"nodeName": "n"}} x)",
      R"({"node": {"nodeName": "n"}}])",
      R"({"node": {"nodeName": "n", "cpu": {"time": "2026-11-21T10:00:00Z", "usageNanoCores": }}})",
  };
  // Every truncation of a valid payload.
  for (size_t cut = 0; cut + 1 < full.size(); cut += 7) inputs.push_back(full.substr(0, cut));
  for (const std::string& input : inputs) {
    absl::StatusOr<NodeScrape> scrape = DecodeSummary(input);
    EXPECT_FALSE(scrape.ok()) << "accepted: " << input;
    if (!scrape.ok()) {
      EXPECT_EQ(scrape.status().code(), absl::StatusCode::kInvalidArgument) << input;
    }
  }
}

TEST(SummaryDecoderTest, NullBlocksAndListsAreAbsent) {
  constexpr std::string_view kNulls = R"({"node": {"nodeName": "n", "cpu": null, "memory": null,
    "systemContainers": null, "startTime": null}, "pods": null})";
  absl::StatusOr<NodeScrape> scrape = DecodeSummary(kNulls);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_FALSE(scrape->cpu.has_value());
  EXPECT_FALSE(scrape->memory.has_value());
  EXPECT_EQ(scrape->start_time, std::nullopt);
  EXPECT_THAT(scrape->pods, IsEmpty());
  EXPECT_TRUE(scrape->issues.empty());
}

TEST(SummaryDecoderTest, InPlaceWithoutSpareCapacityReservesAndKeepsContent) {
  std::string json(kMinimal);
  json.shrink_to_fit();
  const std::string original = json;
  absl::StatusOr<NodeScrape> scrape = DecodeSummaryInPlace(&json);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(scrape->node_name, "n1");
  EXPECT_EQ(json, original);
  EXPECT_GE(json.capacity(), json.size() + kSummaryPadding);
}

TEST(SummaryDecoderTest, DecodingIntoAReusedScrapeKeepsItsStrings) {
  // Names longer than a short string's inline room, so each has storage of its own.
  auto payload = [](std::string_view suffix) {
    std::string pods;
    for (int i = 0; i < 3; ++i) {
      if (i > 0) pods += ",";
      const std::string n = std::to_string(i);
      pods += R"({"podRef": {"name": "a-pod-with-a-long-name-)" + n + std::string(suffix) +
              R"(", "namespace": "a-namespace-of-some-length", "uid": ")" + n +
              R"(-0000-0000-0000-000000000000"},)" +
              R"( "containers": [{"name": "a-container-with-a-long-name"}]})";
    }
    return absl::StrCat(R"({"node": {"nodeName": "a-node-with-a-long-name"}, "pods": [)", pods,
                        "]}");
  };
  std::string first = payload("x");
  NodeScrape scrape;
  ASSERT_TRUE(DecodeSummaryInPlace(&first, &scrape).ok());
  ASSERT_EQ(scrape.pods.size(), 3u);
  std::set<const char*> storage;
  for (const PodScrape& pod : scrape.pods) {
    storage.insert({pod.name.data(), pod.namespace_name.data(), pod.uid.data(),
                    pod.containers[0].name.data()});
  }
  storage.insert(scrape.node_name.data());
  std::string second = payload("y");
  ASSERT_TRUE(DecodeSummaryInPlace(&second, &scrape).ok());
  ASSERT_EQ(scrape.pods.size(), 3u);
  EXPECT_EQ(scrape.pods[2].name, "a-pod-with-a-long-name-2y");
  // Every string of the second decode lives in storage the first one's strings held.
  EXPECT_TRUE(storage.contains(scrape.node_name.data()));
  for (const PodScrape& pod : scrape.pods) {
    EXPECT_TRUE(storage.contains(pod.name.data())) << pod.name;
    EXPECT_TRUE(storage.contains(pod.namespace_name.data())) << pod.name;
    EXPECT_TRUE(storage.contains(pod.uid.data())) << pod.name;
    EXPECT_TRUE(storage.contains(pod.containers[0].name.data())) << pod.name;
  }
}

}  // namespace
}  // namespace kubestat::scrapers
