#include "kubestat/bridge/list_page.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kubestat::bridge {
namespace {

using metrics_api::Resource;
using ::testing::ElementsAre;

TEST(ListPageTest, KeysAndTheContinueTokenOfAPage) {
  std::vector<ObjectKey> keys;
  std::string token = "stale";
  ASSERT_TRUE(ReadListPage(R"({"kind":"PodMetricsList","metadata":{"continue":"abc"},"items":[)"
                           R"({"metadata":{"name":"web-1","namespace":"shop"}},)"
                           R"({"metadata":{"name":"db-0","namespace":"data"}}]})",
                           Resource::kPods, &keys, &token)
                  .ok());
  EXPECT_THAT(keys, ElementsAre(ObjectKey{Resource::kPods, "shop", "web-1"},
                                ObjectKey{Resource::kPods, "data", "db-0"}));
  EXPECT_EQ(token, "abc");
  ASSERT_TRUE(
      ReadListPage(R"({"metadata":{},"items":null})", Resource::kNodes, &keys, &token).ok());
  EXPECT_EQ(keys.size(), 2u);  // appended to, nothing added
  EXPECT_EQ(token, "");
}

TEST(ListPageTest, WhatIsNotAListIsRefused) {
  std::vector<ObjectKey> keys;
  std::string token;
  EXPECT_EQ(ReadListPage("{", Resource::kNodes, &keys, &token).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadListPage(R"({"items":{}})", Resource::kNodes, &keys, &token).message(),
            "items: not an array");
  EXPECT_EQ(
      ReadListPage(R"({"items":[{"metadata":{}}]})", Resource::kNodes, &keys, &token).message(),
      "items[].metadata.name: missing");
  EXPECT_EQ(ReadListPage(R"({"items":[{"metadata":{"name":"p"}}]})", Resource::kPods, &keys, &token)
                .message(),
            "items[].metadata.namespace: missing");
  EXPECT_EQ(ReadListPage(R"({"items":[{"metadata":{"name":"p","namespace":""}}]})", Resource::kPods,
                         &keys, &token)
                .message(),
            "items[].metadata.namespace: missing");
  EXPECT_TRUE(keys.empty());
}

}  // namespace
}  // namespace kubestat::bridge
