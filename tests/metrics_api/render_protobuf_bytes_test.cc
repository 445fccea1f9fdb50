// The protobuf answers of render_protobuf.h against libprotobuf's serialization of the same
// messages (support/render_protobuf_reference.h), byte for byte, over seeded random nodes and
// pods: every function of the header, objects that are and are not servable, labels absent,
// few and many (empty values, long keys, non-ASCII text, in and out of insertion order),
// several containers, resource versions and continue tokens empty, short and long (lengths
// on both sides of 127, where a length takes a second byte), zero, negative and fractional
// times, negative windows (ten-byte varints), values clamped at INT64_MAX, and lists whose
// length takes fewer or more bytes than the renderer's estimate.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kubestat/core/time.h"
#include "kubestat/metrics_api/render_protobuf.h"
#include "kubestat/testing/render_protobuf_reference.h"

namespace kubestat::metrics_api {
namespace {

using kubestat::testing::ReferenceNodeListProtobuf;
using kubestat::testing::ReferenceNodeProtobuf;
using kubestat::testing::ReferencePodListProtobuf;
using kubestat::testing::ReferencePodProtobuf;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

// Equal bytes; otherwise where they first differ, in hex around that offset.
::testing::AssertionResult SameBytes(const std::string& actual, const std::string& expected) {
  if (actual == expected) return ::testing::AssertionSuccess();
  const size_t at = static_cast<size_t>(
      std::mismatch(actual.begin(), actual.end(), expected.begin(), expected.end()).first -
      actual.begin());
  auto hex = [at](const std::string& bytes) {
    std::string out;
    const size_t from = at < 8 ? 0 : at - 8;
    for (size_t i = from; i < std::min(bytes.size(), at + 16); ++i) {
      static constexpr char kDigits[] = "0123456789abcdef";
      const auto byte = static_cast<unsigned char>(bytes[i]);
      if (i == at) out += '[';
      out += kDigits[byte >> 4];
      out += kDigits[byte & 15];
      if (i == at) out += ']';
      out += ' ';
    }
    return out;
  };
  return ::testing::AssertionFailure()
         << "sizes " << actual.size() << " and " << expected.size() << ", first difference at "
         << at << "\n  written:     " << hex(actual) << "\n  libprotobuf: " << hex(expected);
}

::testing::AssertionResult SameBytes(const std::optional<std::string>& actual,
                                     const std::optional<std::string>& expected) {
  if (actual.has_value() != expected.has_value()) {
    return ::testing::AssertionFailure()
           << (actual ? "rendered" : "not rendered") << ", libprotobuf's "
           << (expected ? "rendered" : "not rendered");
  }
  return actual ? SameBytes(*actual, *expected) : ::testing::AssertionSuccess();
}

// Seeded random objects, shaped to reach every branch of the encoding.
class RandomObjects {
 public:
  explicit RandomObjects(uint64_t seed) : rng_(seed) {}

  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }
  bool OneIn(size_t n) { return Below(n) == 0; }

  // Up to `max` bytes of name-like text, now and then with non-ASCII (UTF-8) characters.
  std::string Text(size_t max) {
    static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789-._/ABCXYZ";
    static constexpr const char* kWide[] = {"\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9f\x99\x82"};
    std::string text;
    const size_t length = Below(max + 1);
    while (text.size() < length) {
      if (OneIn(20)) {
        text += kWide[Below(3)];
      } else {
        text += kChars[Below(sizeof(kChars) - 1)];
      }
    }
    return text;
  }

  // Short, empty or long (over 127 bytes: a two-byte length).
  std::string Field(size_t usual) {
    switch (Below(4)) {
      case 0:
        return "";
      case 1:
        return Text(300);
      default:
        return Text(usual);
    }
  }

  Labels MakeLabels() {
    Labels labels;
    size_t count = 0;
    switch (Below(4)) {
      case 0:
        break;
      case 1:
        count = 1;
        break;
      case 2:
        count = 2 + Below(4);
        break;
      default:
        count = 10 + Below(40);
        break;
    }
    for (size_t i = 0; i < count; ++i) {
      std::string key = OneIn(10) ? "" : Text(OneIn(8) ? 200 : 40);
      labels[std::move(key)] = OneIn(3) ? "" : Text(OneIn(8) ? 300 : 40);
    }
    return labels;
  }

  uint64_t Value() {
    switch (Below(8)) {
      case 0:
        return 0;
      case 1:
        return Below(1000);
      case 2:
        return (1 + Below(4096)) * 1'000'000;  // whole millicores: "123m"
      case 3:
        return (1 + Below(4096)) << (10 * (1 + Below(4)));  // whole Ki, Mi, Gi, Ti
      case 4:
        return static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + Below(3);  // clamped
      case 5:
        return std::numeric_limits<uint64_t>::max();  // clamped
      default:
        return rng_() % 100'000'000'000ULL;
    }
  }

  Timestamp Time() {
    switch (Below(7)) {
      case 0:
        return kZeroTime;
      case 1:
        return Timestamp(nanoseconds(0));
      case 2:
        return Timestamp(milliseconds(-1500));  // before the epoch, not whole
      case 3:
        return Timestamp(nanoseconds(-static_cast<int64_t>(rng_() % 4'000'000'000'000'000'000ULL)));
      case 4:
        return Timestamp::max();
      default:  // around 2026, not whole seconds
        return Timestamp(seconds(1795255210 + Below(100000)) + nanoseconds(Below(1'000'000'000)));
    }
  }

  Duration Window() {
    switch (Below(5)) {
      case 0:
        return Duration(0);
      case 1:
        return seconds(-5);  // negative: ten bytes on the wire
      case 2:
        return Duration(static_cast<int64_t>(rng_() >> 1));
      default:
        return seconds(10);
    }
  }

  StatisticsList Series() {
    StatisticsList series;
    const size_t windows = 1 + Below(3);
    for (size_t i = 0; i < windows; ++i) {
      Statistics s;
      s.window = Window();
      s.endtime = Time();
      s.count = Below(100);
      s.mean = Value();
      s.min = Value();
      s.max = Value();
      series.push_back(s);
    }
    return series;
  }

  // Now and then without cpu or memory: not servable by metrics.k8s.io.
  ResourceWindows Windows() {
    ResourceWindows windows{Series(), Series()};
    if (OneIn(25)) windows.cpu.clear();
    if (OneIn(25)) windows.memory.clear();
    return windows;
  }

  NodeMetrics Node() {
    NodeMetrics node;
    node.name = Field(40);
    node.labels = MakeLabels();
    node.resource_version = Version();
    node.machine = Windows();
    node.system_containers.push_back(ContainerMetrics{"kubelet", Windows()});
    return node;
  }

  PodMetrics Pod() {
    PodMetrics pod;
    pod.namespace_name = Field(20);
    pod.name = Field(50);
    pod.node_name = Text(20);
    pod.labels = MakeLabels();
    pod.resource_version = Version();
    pod.pod = Windows();
    const size_t containers = OneIn(30) ? 0 : 1 + Below(OneIn(4) ? 12 : 3);
    for (size_t i = 0; i < containers; ++i) {
      pod.containers.push_back(ContainerMetrics{Field(20), Windows()});
    }
    return pod;
  }

  // A resource version: digits as servers write them, or any opaque text.
  std::string Version() { return OneIn(2) ? std::to_string(rng_()) : Field(12); }

  RenderContext Context() {
    return RenderContext{OneIn(2) ? GroupVersion::kV1beta1 : GroupVersion::kV1, Time(), 0};
  }

  // A page of `objects` as Select gives it (servable ones only, maybe limited), with a
  // resource version and a continue token as a versioned server sets them.
  template <typename Objects>
  Page MakePage(const Objects& objects, GroupVersion gv) {
    ListQuery query;
    if (OneIn(2)) query.limit = Below(objects.size() + 2);
    Page page = Select(query, gv, objects);
    page.resource_version = Version();
    if (OneIn(2)) page.continue_token = Field(60);
    return page;
  }

 private:
  std::mt19937_64 rng_;
};

template <typename T>
std::vector<std::shared_ptr<const T>> Shared(const std::vector<T>& objects) {
  std::vector<std::shared_ptr<const T>> shared;
  shared.reserve(objects.size());
  for (const T& object : objects) shared.push_back(std::make_shared<const T>(object));
  return shared;
}

TEST(RenderProtobufBytesTest, RandomObjectsAreLibprotobufsBytes) {
  RandomObjects random(20261121);
  for (int i = 0; i < 3000; ++i) {
    const NodeMetrics node = random.Node();
    const PodMetrics pod = random.Pod();
    const RenderContext ctx = random.Context();
    ASSERT_TRUE(SameBytes(RenderNodeProtobuf(node, ctx), ReferenceNodeProtobuf(node, ctx)))
        << "node " << i;
    ASSERT_TRUE(SameBytes(RenderPodProtobuf(pod, ctx), ReferencePodProtobuf(pod, ctx)))
        << "pod " << i;
  }
}

// Every list function: pages given (values and shared views) and queries selected.
TEST(RenderProtobufBytesTest, RandomListsAreLibprotobufsBytes) {
  RandomObjects random(42);
  for (int round = 0; round < 60; ++round) {
    const size_t n = random.OneIn(6) ? random.Below(3) : random.Below(150);
    std::vector<NodeMetrics> nodes;
    std::vector<PodMetrics> pods;
    for (size_t i = 0; i < n; ++i) {
      nodes.push_back(random.Node());
      pods.push_back(random.Pod());
    }
    const RenderContext ctx = random.Context();

    const auto shared_nodes = Shared(nodes);
    const Page node_page = random.MakePage(SharedNodes(shared_nodes), ctx.gv);
    ASSERT_TRUE(SameBytes(RenderNodeListProtobuf(SharedNodes(shared_nodes), node_page, ctx),
                          ReferenceNodeListProtobuf(SharedNodes(shared_nodes), node_page, ctx)))
        << "round " << round;
    const auto shared_pods = Shared(pods);
    const Page pod_page = random.MakePage(SharedPods(metrics_api::RefsTo(shared_pods)), ctx.gv);
    ASSERT_TRUE(SameBytes(
        RenderPodListProtobuf(SharedPods(metrics_api::RefsTo(shared_pods)), pod_page, ctx),
        ReferencePodListProtobuf(SharedPods(metrics_api::RefsTo(shared_pods)), pod_page, ctx)))
        << "round " << round;

    ListQuery query;
    query.limit = random.OneIn(2) ? 0 : random.Below(n + 2);
    const std::span<const NodeMetrics> node_span(nodes);
    const std::span<const PodMetrics> pod_span(pods);
    const std::string node_reference =
        ReferenceNodeListProtobuf(node_span, Select(query, ctx.gv, node_span), ctx);
    EXPECT_TRUE(SameBytes(RenderNodeListProtobuf(node_span, query, ctx), node_reference));
    EXPECT_TRUE(
        SameBytes(RenderNodeListProtobuf(SharedNodes(shared_nodes), query, ctx), node_reference));
    const std::string pod_reference =
        ReferencePodListProtobuf(pod_span, Select(query, ctx.gv, pod_span), ctx);
    EXPECT_TRUE(SameBytes(RenderPodListProtobuf(pod_span, query, ctx), pod_reference));
    EXPECT_TRUE(
        SameBytes(RenderPodListProtobuf(SharedPods(metrics_api::RefsTo(shared_pods)), query, ctx),
                  pod_reference));
  }
}

// A list's length is written into room sized from an estimate of its items: lists of small
// items need fewer length bytes than estimated, lists of large items more.
TEST(RenderProtobufBytesTest, ListLengthsAboveAndBelowTheEstimateAreLibprotobufsBytes) {
  const RenderContext ctx{GroupVersion::kV1beta1, Timestamp(seconds(1795255230)), 0};
  auto pod = [](std::string name, Labels labels) {
    PodMetrics p;
    p.namespace_name = "n";
    p.name = std::move(name);
    p.labels = std::move(labels);
    Statistics s;
    s.window = seconds(10);
    s.endtime = Timestamp(seconds(1795255210));
    s.mean = 1;
    p.containers.push_back(ContainerMetrics{"c", ResourceWindows{{s}, {s}}});
    return p;
  };
  Labels many;
  for (int i = 0; i < 20; ++i) many["label-" + std::to_string(i)] = std::string(60, 'v');
  for (size_t count : {1, 2, 30, 100, 1000, 10000}) {
    for (const Labels& labels : {Labels{}, many}) {
      std::vector<PodMetrics> pods;
      for (size_t i = 0; i < count; ++i) pods.push_back(pod("p" + std::to_string(i), labels));
      const std::span<const PodMetrics> span(pods);
      const ListQuery all;
      EXPECT_TRUE(SameBytes(RenderPodListProtobuf(span, all, ctx),
                            ReferencePodListProtobuf(span, Select(all, ctx.gv, span), ctx)))
          << count << " pods with " << labels.size() << " labels";
    }
  }
}

}  // namespace
}  // namespace kubestat::metrics_api
