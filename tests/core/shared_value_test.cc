#include "kubestat/core/shared_value.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace kubestat {
namespace {

TEST(SharedLabelsTest, CopiesShareOneBlockAndReadLikeTheMap) {
  const SharedLabels labels = {{"app", "web"}, {"tier", "front"}};
  const SharedLabels copy = labels;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_TRUE(copy.SharesWith(labels));
  EXPECT_EQ(&copy.get(), &labels.get());
  EXPECT_EQ(copy.size(), 2u);
  EXPECT_EQ(copy.at("app"), "web");
  EXPECT_EQ(copy.count("tier"), 1u);
  EXPECT_EQ(copy.find("zone"), copy.end());
  std::map<std::string, std::string> read(copy.begin(), copy.end());
  EXPECT_EQ(read, (std::map<std::string, std::string>{{"app", "web"}, {"tier", "front"}}));
}

TEST(SharedLabelsTest, WithMakesANewBlockAndLeavesTheOldOne) {
  const SharedLabels labels = {{"app", "web"}};
  const SharedLabels zoned = labels.With("zone", "b");
  EXPECT_FALSE(zoned.SharesWith(labels));
  EXPECT_EQ(labels.size(), 1u);
  EXPECT_EQ(zoned.size(), 2u);
  EXPECT_EQ(zoned.at("zone"), "b");
  EXPECT_EQ(labels.With("app", "api").at("app"), "api");
  EXPECT_EQ(labels.at("app"), "web");
}

TEST(SharedLabelsTest, EqualByValueAndEmptyWithoutABlock) {
  const SharedLabels a = {{"app", "web"}};
  const SharedLabels b = std::map<std::string, std::string>{{"app", "web"}};
  EXPECT_FALSE(a.SharesWith(b));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, SharedLabels({{"app", "api"}}));
  const SharedLabels none = std::map<std::string, std::string>{};
  EXPECT_TRUE(none.empty());
  EXPECT_TRUE(none.SharesWith(SharedLabels{}));
  EXPECT_EQ(none.size(), 0u);
  EXPECT_FALSE(a.empty());
}

TEST(SharedVectorTest, CopiesShareOneBlockAndReadLikeTheVector) {
  const SharedVector<int> list = {3, 1, 2};
  const SharedVector<int> copy = list;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_TRUE(copy.SharesWith(list));
  ASSERT_EQ(copy.size(), 3u);
  EXPECT_EQ(copy[1], 1);
  EXPECT_EQ(std::vector<int>(copy.begin(), copy.end()), (std::vector<int>{3, 1, 2}));
  const std::vector<int>& as_vector = copy;
  EXPECT_EQ(as_vector.size(), 3u);
  EXPECT_TRUE(SharedVector<int>(std::vector<int>{}).empty());
}

}  // namespace
}  // namespace kubestat
