#include "kubestat/windows/series_key.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <unordered_set>
#include <vector>

namespace kubestat::windows {
namespace {

TEST(SeriesKeyTest, ANodesSeriesSortTogetherWithEachPodBeforeItsContainers) {
  std::vector<SeriesKey> keys = {
      SeriesKey::Container("n1", "a", "p", "c", Resource::kMemory),
      SeriesKey::Node("n2", Resource::kCpu),
      SeriesKey::Pod("n1", "a", "p", Resource::kCpu),
      SeriesKey::SystemContainer("n1", "kubelet", Resource::kCpu),
      SeriesKey::Pod("n1", "a", "q", Resource::kCpu),
      SeriesKey::Node("n1", Resource::kMemory),
      SeriesKey::Node("n1", Resource::kCpu),
  };
  std::sort(keys.begin(), keys.end());
  const std::vector<std::string> want = {
      "node/n1/cpu",
      "node/n1/memory",
      "syscontainer/n1/kubelet/cpu",
      "pod/n1/a/p/cpu",
      "container/n1/a/p/c/memory",
      "pod/n1/a/q/cpu",
      "node/n2/cpu",
  };
  std::vector<std::string> got;
  for (const SeriesKey& k : keys) got.push_back(k.ToString());
  EXPECT_EQ(got, want);
}

TEST(SeriesKeyTest, EqualityAndHashCoverEveryField) {
  const SeriesKey a = SeriesKey::Container("n", "ns", "p", "c", Resource::kCpu);
  SeriesKey b = a;
  EXPECT_EQ(a, b);
  EXPECT_EQ(SeriesKeyHash()(a), SeriesKeyHash()(b));
  b.resource = Resource::kMemory;
  EXPECT_NE(a, b);
  std::unordered_set<SeriesKey, SeriesKeyHash> set = {
      a, b, SeriesKey::Pod("n", "ns", "p", Resource::kCpu)};
  EXPECT_EQ(set.size(), 3u);
  // A system container and a pod container of the same name differ.
  EXPECT_NE(SeriesKey::SystemContainer("n", "c", Resource::kCpu),
            SeriesKey::Container("n", "", "", "c", Resource::kCpu));
}

}  // namespace
}  // namespace kubestat::windows
